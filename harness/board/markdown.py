"""The markdown leaderboard, written from the board's sections (:mod:`harness.board.sections`)
through the Jinja2 template ``templates/leaderboard.md.j2``.

One table per suite and question set, one row per retriever configuration with its top-k, the
95% bootstrap interval in parentheses and the best tier in bold, a link to the result it came
from, published rows marked, then metrics besides accuracy, every parameter, each part's numbers,
the seen/unseen comparison and the suite's plots; a folded block per published table at the end.

Every text that comes from a result file, a name or a published table (retriever and suite
names, parameters, part names, titles, notes, citations) is written through
:func:`~harness.results.report.markdown_text`, and every link through
:func:`~harness.results.report.markdown_link` (http(s) or relative addresses only): no input adds
HTML, a link, a table row or a column. The template's environment does this for every value it
writes (its ``finalize``); the tables (:mod:`tabulate`) are built here of cells escaped the same
way, and only they, links and code spans are marked :class:`Markdown` (written as they are).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from tabulate import tabulate

from harness.api import PublishedTable
from harness.analysis.published import printed_digits
from harness.board.sections import (
    BoardCell,
    LiteratureSection,
    PublishedEntry,
    Row,
    Section,
    reranker_parameters,
    sections,
    literature,
    seen_sets,
    summarize_parameters,
)
from harness.results.labels import part_title, trained_parts, training_variant
from harness.results.report import format_parameters, link_target, markdown_link, markdown_text, one_line
from harness.results.schema import Result

class Markdown(str):
    """Markdown the renderer made itself (a table, a link, a code span): the template writes it as
    it is; any other value it writes goes through :func:`markdown_text`."""


def _escape(value: object) -> str:
    return value if isinstance(value, Markdown) else markdown_text(value)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.board", "templates"), autoescape=False, finalize=_escape,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters["fmt"] = format
    return env


def _cell(text: object) -> str:
    """Text from a file or a name, safe in a table cell, a heading or a summary: :func:`markdown_text`."""
    return markdown_text(text)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def _link(result: Result, relative_to: Path) -> str:
    if result.path is None:
        return ""
    target = Path(os.path.relpath(result.path, relative_to)).as_posix()
    return markdown_link(Path(target).name, target)


def _code(text: str) -> str:
    """``text`` as a markdown code span (a fence longer than any run of backticks in it), on one line."""
    text = one_line(text)
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _superseded(superseded: Sequence[tuple[Result, Result]]) -> list[tuple[str, str, int, list[str]]]:
    """For the note under a section whose configurations several result files hold: each file a
    row shows, when it was recorded, how many older files it was preferred to and when those were
    recorded (``harness leaderboard`` names those files on stderr)."""
    older: dict[int, tuple[Result, list[Result]]] = {}
    for old, new in superseded:
        older.setdefault(id(new), (new, []))[1].append(old)
    return [
        (new.path.name if new.path is not None else new.label, new.created, len(olds),
         [r.created for r in sorted(olds, key=lambda r: (r.created, str(r.path or "")))])
        for new, olds in sorted(older.values(), key=lambda item: str(item[0].path or item[0].label))
    ]


def _value_cell(cell: BoardCell) -> str:
    if cell.value is None:
        return "–"
    if cell.std is not None:
        return f"{100 * cell.value:.2f} ± {100 * cell.std:.2f}"
    value = f"**{100 * cell.value:.2f}**" if cell.tier else f"{100 * cell.value:.2f}"
    return f"{value} ({100 * cell.low:.1f}–{100 * cell.high:.1f})"


def render(
    results: Sequence[Result],
    *,
    output_dir: Path,
    results_dir: Path,
    published: Sequence[PublishedTable] = (),
    plots: Mapping[str, Sequence[str]] | None = None,
    board: Sequence[Section] | None = None,
    html: str | None = None,
    pages: Mapping[str, str] | None = None,
) -> str:
    """The leaderboard markdown; ``output_dir`` is where it will live (for relative links).

    One section per suite and question set: results of one suite name made on different
    questions (their questions fingerprints differ) are never ranked in one table; each set gets
    its own section, and a note names them. Columns are the cutoffs the results report; metrics
    besides accuracy follow in their own table. ``published`` tables add marked rows to the
    sections of their suites; ``plots`` maps a suite to image paths (relative to ``output_dir``)
    shown under its section. ``board``: the sections of ``results`` and ``published`` when
    already computed (:func:`sections`); ``html``: the address of the HTML board's index
    (relative to ``output_dir``), linked under the first paragraph; ``pages``: each suite's HTML
    page (relative to ``output_dir``): a section with one links to it for every parameter and each
    part's numbers instead of folding those tables into the markdown.
    """
    if board is None:
        board = sections(results, published)
    results_label = Path(os.path.relpath(results_dir, output_dir)).as_posix()
    return _environment().get_template("leaderboard.md.j2").render(
        results=Markdown(_code(results_label)),
        html=None if html is None else Markdown(markdown_link(html, html)),
        sections=[_section_view(section, output_dir, plots or {}, (pages or {}).get(section.suite)) for section in board],
        published=[_published_view(table) for table in sorted(published, key=lambda t: t.name)],
        literature=[_literature_view(section) for section in literature(published, board)],
    )


def _literature_view(section: LiteratureSection) -> dict[str, Any]:
    """A real suite's published rows as a table: system, domain, top-k as printed, source (with
    its version) and table."""
    body = []
    for e in section.entries:
        source = markdown_link(e.citation, e.url) + (f" ({_cell(e.version)})" if e.version else "")
        system = f"*published:* {_cell(e.system)}"
        body.append([system, e.domain] + [e.printed.get(k, "–") for k in section.ks] + [source, _cell(e.table)])
    headers = ["system", "domain"] + [f"top-{k}" for k in section.ks] + ["source", "table"]
    return {"suite": section.suite, "results": section.results, "count": len(section.entries), "table": _table(body, headers)}


def _section_view(section: Section, output_dir: Path, plots: Mapping[str, Sequence[str]], page: str | None) -> dict[str, Any]:
    """What the template writes of one section: heading, description, the table of rows and
    published rows, the notes, the folded tables and the suite's plots. With the suite's HTML
    ``page``, every parameter and each part's numbers are left to it (a line links to it)."""
    ks, parts = list(section.ks), list(section.parts)
    several = len(section.question_sets) > 1
    table = []
    for row in section.rows:
        name = row.label + (f" ({row.seeds} seeds)" if row.seeds > 1 else "")
        links = ", ".join(_link(r, output_dir) for r in row.results)
        table.append([_cell(name), _cell(row.parameters)] + [_value_cell(cell) for cell in row.cells] + [row.domain, links])
    table += [[*row[:-1], "–", row[-1]] for row in _published_rows(section.published, ks)]
    headers = ["retriever", "parameters"] + [f"top-{k}" for k in ks] + ["domain", "result"]
    rows = [Row(list(row.results)) for row in section.rows]
    images = []
    for image in plots.get(section.suite, ()) if not several else ():
        target = link_target(image)
        if target is not None:
            images.append((Path(image).stem, Markdown(target)))
    return {
        "suite": section.suite, "synthetic": section.synthetic, "question_set": _short(section.question_set),
        "others": [_short(q) for q in section.question_sets if q != section.question_set] if several else [],
        "questions": section.questions, "parts": len(parts), "corpus": section.corpus, "match": section.match,
        "table": _table(table, headers),
        "superseded": _superseded(section.superseded),
        "identical": [list(group) for group in section.identical],
        "variants": list(section.variants),
        "metrics": _metrics_table(rows, ks),
        "parameters": _parameters_table(rows) if page is None else None,
        "seen": _seen_tables(rows, parts, ks) if len(parts) > 1 else [],
        "by_part": _parts_table(rows, parts, section.order[0]) if len(parts) > 1 and page is None else None,
        "page": None if page is None else Markdown(markdown_link(page, page)),
        "images": images,
    }


def _published_view(table: PublishedTable) -> dict[str, Any]:
    """A published table as printed, with its source: the template folds it into a block.
    ``retriever``: the harness configuration ``harness reproduce`` compares with the row."""
    ks = sorted({k for row in table.rows for k in row.values})
    body = [
        [_cell(row.system), _cell(row.suite + (f" {row.part}" if row.part else ""))]
        + [f"{row.values[k]:.{printed_digits(table, row)}f}" if k in row.values else "–" for k in ks]
        + [_cell(row.retriever or "") + "".join(f" {_cell(f'{key}={value}')}" for key, value in row.options.items()), _cell(row.note)]
        for row in table.rows
    ]
    source = markdown_link(table.citation, table.url)
    if table.version:
        source += f" ({_cell(table.version)})"
    return {
        "name": table.name, "title": table.title, "source": Markdown(source), "note": table.note, "kind": table.kind,
        "allowance": table.allowance, "allowance_reason": table.allowance_reason,
        "table": _table(body, ["system", "suite"] + [f"top-{k}" for k in ks] + ["retriever", "note"]),
    }


def _published_rows(entries: Sequence[PublishedEntry], ks: Sequence[int]) -> list[list[str]]:
    return [
        [f"*published:* {_cell(e.system)}", markdown_link(e.citation, e.url)]
        + [e.printed.get(k, "–") for k in ks]
        + [_cell(e.table)]
        for e in entries
    ]


def _short(fingerprint: str) -> str:
    return fingerprint.removeprefix("sha256:")[:12]


def _table(rows: list[list[str]], headers: list[str]) -> Markdown:
    """A GitHub markdown table of cells already escaped."""
    return Markdown(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


def _metrics_table(rows: list[Row], ks: Sequence[int]) -> Markdown | None:
    """Metrics besides accuracy (as recorded in the result files), macro-averaged over parts
    (over seeds, their mean)."""
    metrics = sorted({m for row in rows for r in row.results for m in r.record.metrics if m != "accuracy"})
    if not metrics:
        return None
    columns = [(m, k) for m in metrics for k in ks]

    def value(row: Row, m: str, k: int) -> str:
        found = [r.record.metrics[m].macro.get(str(k)) for r in row.results if m in r.record.metrics]
        if len(found) != row.seeds or any(v is None for v in found):
            return "–"
        return _fmt(sum(found) / len(found))

    table = [
        [_cell(row.retriever), _cell(summarize_parameters(row.parameters))] + [value(row, m, k) for m, k in columns]
        for row in rows
    ]
    return _table(table, ["retriever", "parameters"] + [_cell(f"{m}@{k}") for m, k in columns])


def _parameters_table(rows: list[Row]) -> Markdown:
    """Every parameter of each row, in full (nested retrievers' as dotted keys)."""
    table = [[_cell(row.retriever), _cell(format_parameters(row.parameters) + reranker_parameters(row.first))] for row in rows]
    return _table(table, ["retriever", "parameters"])


def _parts_table(rows: list[Row], parts: list[str], k: int) -> dict[str, Any]:
    """Top-k per part (rows) and retriever configuration (columns), at the first ordering cutoff."""
    per_part = [row.accuracy(k) for row in rows]
    table = []
    for part in parts:
        table.append([_cell(part_title(part))] + [_fmt(acc[0].get(part)) if acc else "–" for acc in per_part])
    headers = [f"part (top-{k})"] + [
        _cell(f"{row.retriever} {row.config_key()}" if _ambiguous(rows, row) else row.retriever) for row in rows
    ]
    return {"k": k, "table": _table(table, headers)}


def _seen_tables(rows: list[Row], parts: list[str], ks: Sequence[int]) -> list[dict[str, Any]]:
    """Where some rows were trained on some of the suite's parts (their training data's
    categories, e.g. EntityQuestions relations), every row's top-k macro-averaged over those
    parts and over the others, one table per set of seen parts: the seen/unseen comparison of
    Sciavolino et al. (dense retrievers fall on patterns unseen in training; BM25 does not)."""
    names = set(parts)
    out = []
    for seen in seen_sets(rows, parts):
        unseen = [p for p in parts if p not in seen]
        table = []
        for row in rows:
            own = trained_parts(row.parameters) & names
            cells = []
            for k in ks:
                accuracy = row.accuracy(k)
                if accuracy is None:
                    cells += ["–", "–"]
                    continue
                per_part = accuracy[0]
                for group in (sorted(seen), unseen):
                    cells.append(_fmt(sum(per_part[p] for p in group) / len(group)))
            trained = "these parts" if own == seen else ("other parts" if own else "–")
            table.append([_cell(row.retriever), _cell(training_variant(row.parameters) or ""), trained] + cells)
        headers = ["retriever", "variant", "trained on"] + [f"{side} top-{k}" for k in ks for side in ("seen", "unseen")]
        out.append({"count": len(seen), "parts": [part_title(p) for p in sorted(seen)], "others": len(unseen), "table": _table(table, headers)})
    return out


def _ambiguous(rows: list[Row], row: Row) -> bool:
    return sum(1 for r in rows if r.retriever == row.retriever) > 1

"""The HTML board: the board's sections (:func:`harness.board.sections.sections`) as static pages
that need no network to view, written from Jinja2 templates (``templates/``) with autoescaping on.

:func:`render_html` gives ``index.html`` and one page per suite (:func:`page_names`). The index
lists each suite and question set (questions, rows, the best top-20, a link to its page), then one
table of every suite's rows (each top-k with its interval, the configuration linking to its row on
its suite's page; published rows stay on the suite pages) that sorts and filters like a suite's
table, with a suite filter besides. A suite's page shows, per question set, a table of its rows:
each top-k value (percent, macro average over parts) with its 95% bootstrap interval in brackets (a
row over seeds: mean ± standard deviation), the cells of the best row and of every row not
significantly different from it (exact McNemar against the best, Holm over the section, alpha 0.05)
in bold with the class ``tier-best``, published rows marked ``published`` with their source, and,
when some row has them, a re-rank ceiling (the first stage's top-N at the re-ranking depth N) and a
cost column. Columns sort by a click on their header (numbers by value, each ``td``'s
``data-sort``; a second click reverses), a text box and select boxes filter the rows (retriever,
variant, re-ranker, and training seed: the seeds a row's checkpoints were trained with,
:func:`~harness.results.labels.training_seeds`; a row over several seeds matches each of
them), and each row opens into its per-part top-k (and seen/unseen part averages where some rows
were trained on some parts), a re-ranked row's questions won and lost against its first stage,
every parameter and its result files. The suite's plots follow as inline SVG.

Pages are self-contained: the style sheet and script (``assets/board.css``, ``assets/board.js``)
are inline and a Content-Security-Policy forbids loading anything. Every value a template writes
is escaped (:func:`_escape`: :func:`html.escape` of the text on one line, attributes
double-quoted); only the assets, the sanitized SVG plots and the script data are marked safe. Data
for the script is JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so no text can end the
script element; links are http(s) or relative only (:func:`~harness.results.report.link_target`).
The same sections and plots give the same bytes: no dates, sorted choices, ids from positions.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from harness.analysis.ceiling import question_list
from harness.analysis.stats import format_p
from harness.board.cells import IDS_IN_HTML, cost_details, cost_sort, cost_summary, pct
from harness.board.sections import RESAMPLES, BoardCell, BoardRow, LiteratureSection, PublishedEntry, Section
from harness.results.labels import part_title
from harness.results.report import link_target, one_line

INDEX = "index.html"
#: The page of the real suites' published rows (:func:`harness.board.sections.literature`).
LITERATURE = "literature.html"
#: What a cell of the ``tier-best`` class means.
TIER_NOTE = "best or not significantly different from the best: exact McNemar, Holm, α=0.05"
SYNTHETIC_NOTE = "generated data; these numbers are not comparable with any published benchmark"
#: Longest suite slug before a digest replaces its tail.
_SLUG_MAX = 60
#: Values of the filter boxes: ``=VALUE`` a value, ``!`` none, ``~published`` a published row.
_NONE, _PUBLISHED, _OTHER = "!", "~published", "~"


def _escape(value: object) -> Markup:
    """How a template writes a value: text on one line (:func:`one_line`), escaped for HTML text
    and double-quoted attributes (:func:`html.escape`); markup the page made itself (a macro's
    output, an asset, the script data) as it is."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(one_line(value), quote=True))


def _asset(name: str) -> Markup:
    """A file of ``assets/`` (the style sheet or the script), written into every page as it is."""
    return Markup((files("harness.board") / "assets" / name).read_bytes().decode("utf-8"))


def _part_value(cell: BoardCell, parts: Sequence[str]) -> str:
    """Top-k macro-averaged over ``parts`` (one part: its value), or ``–``."""
    if cell.value is None or not parts or any(p not in cell.parts for p in parts):
        return "–"
    return pct(sum(cell.parts[p] for p in parts) / len(parts))


def _href(url: object) -> str | None:
    """``url`` for an ``href`` attribute when it is http(s) or relative (:func:`link_target`); the
    template escapes it."""
    target = link_target(url) if url else None
    return None if target is None else html.unescape(target)


def _short(fingerprint: str) -> str:
    return fingerprint.removeprefix("sha256:")[:12]


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.board", "templates"),
        autoescape=True, finalize=_escape, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters.update(
        pct=pct, fmt=format, short=_short, part_title=part_title, href=_href, part_value=_part_value, format_p=format_p,
        cost_summary=cost_summary, cost_details=cost_details, cost_sort=cost_sort,
        question_list=lambda questions, parts: question_list(questions, parts=parts, shown=IDS_IN_HTML),
    )
    env.globals.update(
        css=_asset("board.css"), js=_asset("board.js"), index=INDEX, tier_note=TIER_NOTE,
        synthetic_note=SYNTHETIC_NOTE, resamples=RESAMPLES, ids_in_html=IDS_IN_HTML,
    )
    return env


def render_html(
    sections: Sequence[Section], *, output_dir: Path, plots: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    literature: Sequence[LiteratureSection] = (),
) -> dict[str, str]:
    """File name -> page: :data:`INDEX` and one page per suite (:func:`page_names`), sorted by
    name. ``output_dir`` is where the pages will live (links to result files are relative to it);
    ``plots`` maps a suite to its plots as ``(stem, SVG text)``, drawn under a suite with one
    question set; ``literature``: the real suites' published rows, on their own page
    (:data:`LITERATURE`, linked from the index) when there are any."""
    names = page_names([s.suite for s in sections])
    by_suite: dict[str, list[Section]] = {}
    for section in sections:
        by_suite.setdefault(section.suite, []).append(section)
    pages = {INDEX: _index_page(sections, names, literature=bool(literature))}
    for suite, group in by_suite.items():
        pages[names[suite]] = _suite_page(suite, group, output_dir, (plots or {}).get(suite, ()))
    if literature:
        pages[LITERATURE] = _literature_page(literature)
    return dict(sorted(pages.items()))


def _literature_page(literature: Sequence[LiteratureSection]) -> str:
    """Each real suite's published rows in a table that sorts and filters (by text and domain)."""
    views = []
    for section in literature:
        data = [{"text": one_line(" ".join(["published", e.system, e.citation, e.table, e.version, e.note])),
                 "domain": _choice(e.domain)} for e in section.entries]
        selects = [("domain", "in-domain or zero-shot", [e.domain for e in section.entries], ())]
        columns = [("system", "text")] + [(f"top-{k}", "number") for k in section.ks] + [("source", "text"), ("table", "text")]
        views.append({"section": section, "selects": _select_options(selects), "columns": columns,
                      "data": Markup(script_json({"rows": data}))})
    return _environment().get_template("literature.html.j2").render(title="The literature", script=True, views=views)


def page_names(suites: Sequence[str]) -> dict[str, str]:
    """Each suite's page: ``SLUG.html``, the name's letters, digits, ``-`` and ``_`` (other runs as
    ``_``); a slug that is empty, too long, ``index`` or shared by another suite (ignoring case)
    gets the first 8 hex digits of the name's SHA-256 as well (``literature`` too: :data:`LITERATURE`)."""
    slugs = {suite: re.sub(r"[^A-Za-z0-9_-]+", "_", suite).strip("_") for suite in sorted(set(suites))}
    taken: dict[str, int] = {}
    for slug in slugs.values():
        taken[slug.lower()] = taken.get(slug.lower(), 0) + 1
    names: dict[str, str] = {}
    for suite, slug in slugs.items():
        digest = hashlib.sha256(suite.encode("utf-8")).hexdigest()
        if not slug or len(slug) > _SLUG_MAX or slug.lower() in ("index", "literature") or taken[slug.lower()] > 1:
            slug = f"{slug[:_SLUG_MAX]}-{digest[:8]}".lstrip("-")
        if f"{slug.lower()}.html" in {name.lower() for name in names.values()}:
            slug = f"{slug}-{digest[8:24]}"
        names[suite] = f"{slug}.html"
    return names


def script_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element: ``<``, ``>``, ``&``, U+2028 and
    U+2029 as ``\\uXXXX`` escapes (valid JSON, read back unchanged)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for char in "&<>\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


@dataclass(frozen=True)
class _Best:
    k: int
    value: float
    row: BoardRow


def _best(section: Section) -> _Best | None:
    """The best row at top-20 (else at the section's first ordering cutoff), with its value."""
    k = 20 if 20 in section.ks else section.order[0]
    column = section.ks.index(k)
    scored = [(row.cells[column].value, -i, row) for i, row in enumerate(section.rows) if row.cells[column].value is not None]
    if not scored:
        return None
    value, _, row = max(scored, key=lambda item: item[:2])
    return _Best(k, value, row)


def _positions(sections: Sequence[Section], names: Mapping[str, str]) -> list[tuple[Section, str]]:
    """Each section with its anchor on its suite's page (``PAGE#sN`` when the suite has several)."""
    out = []
    seen: dict[str, int] = {}
    for section in sections:
        position = seen[section.suite] = seen.get(section.suite, -1) + 1
        out.append((section, f"{names[section.suite]}#s{position}"))
    return out


def _index_page(sections: Sequence[Section], names: Mapping[str, str], *, literature: bool = False) -> str:
    """The index; its table of every suite's rows has configuration (a link to its row on its
    suite's page), suite, retriever, variant, re-ranker, seeds and each cutoff any suite reports
    (``–`` where a suite does not), sortable and filterable like a suite's table, with a suite filter."""
    positions = _positions(sections, names)
    entries = [
        {"section": section, "anchor": anchor if len(section.question_sets) > 1 else names[section.suite], "best": _best(section)}
        for section, anchor in positions
    ]
    ks = sorted({k for section in sections for k in section.ks})
    rows = [
        {"section": section, "row": row, "anchor": f"{anchor}-r{i}", "by_k": {cell.k: cell for cell in row.cells}}
        for section, anchor in positions for i, row in enumerate(section.rows)
    ]
    data = [
        {**(entry := _row_data(item["row"])), "text": one_line(f"{item['section'].suite} {entry['text']}"),
         "suite": _choice(item["section"].suite)}
        for item in rows
    ]
    columns = [("configuration", "text"), ("suite", "text"), ("retriever", "text"), ("variant", "text"),
               ("re-ranker", "text"), ("seeds", "number")] + [(f"top-{k}", "number") for k in ks]
    selects = [("suite", "suite", [item["section"].suite for item in rows], ())] + _row_selects([item["row"] for item in rows])
    return _environment().get_template("index.html.j2").render(
        title="Leaderboard", script=bool(entries), entries=entries, rows=rows, ks=ks, columns=columns, literature=literature,
        selects=_select_options(selects), data=Markup(script_json({"rows": data})),
    )


def _suite_page(suite: str, group: Sequence[Section], output_dir: Path, plots: Sequence[tuple[str, str]]) -> str:
    return _environment().get_template("suite.html.j2").render(
        title=f"{suite}: leaderboard", script=True, suite=suite, synthetic=any(s.synthetic for s in group),
        views=[_section_view(section, output_dir) for section in group],
        plots=[(stem, Markup(_svg(text))) for stem, text in plots] if len(group) == 1 else [],
    )


_XML_PROLOGUE = re.compile(r"<\?xml.*?\?>|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>|<!--.*?-->", re.DOTALL | re.IGNORECASE)
_SCRIPT_ELEMENT = re.compile(r"<script\b[^>]*?/>|<script\b.*?</script\s*>|<script\b.*", re.DOTALL | re.IGNORECASE)
_METADATA = re.compile(r"<metadata\b.*?</metadata\s*>", re.DOTALL | re.IGNORECASE)


def _svg(text: str) -> str:
    """A drawn SVG file as inline markup: without its XML declaration, DOCTYPE, comments,
    metadata and any ``<script>`` element, from its ``<svg`` on."""
    text = _SCRIPT_ELEMENT.sub("", _METADATA.sub("", _XML_PROLOGUE.sub("", text)))
    start = text.find("<svg")
    return text[start:].strip() if start >= 0 else ""


def _columns(section: Section) -> list[tuple[str, str]]:
    """(header, kind) of the rows table: kind ``text`` or ``number`` sorts, ``""`` does not."""
    columns = [("configuration", "text"), ("retriever", "text"), ("variant", "text"), ("re-ranker", "text"), ("seeds", "number")]
    columns += [(f"top-{k}", "number") for k in section.ks]
    if any(row.ceiling is not None for row in section.rows):
        columns.append(("re-rank ceiling", "number"))
    if any(row.cost is not None for row in section.rows):
        columns.append(("cost", "number"))
    return columns + [("", "")]


@dataclass(frozen=True)
class _Seen:
    """One set of parts some rows were trained on: the seen parts, the others, and how a row relates to them."""

    parts: tuple[str, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]
    seen: frozenset[str]
    names: frozenset[str]

    def trained(self, row: BoardRow) -> str:
        own = row.trained_on & self.names
        return "trained on these parts" if own == self.seen else ("trained on other parts" if own else "not trained on any part")


def _section_view(section: Section, output_dir: Path) -> dict[str, Any]:
    """What a suite page's template needs of one section besides the section itself."""
    names = frozenset(section.parts)
    seen = []
    for parts in section.seen:
        seen_parts = tuple(sorted(parts))
        unseen = tuple(p for p in section.parts if p not in parts)
        groups = ((f"seen ({len(seen_parts)} parts)", seen_parts), (f"unseen ({len(unseen)} parts)", unseen))
        seen.append(_Seen(seen_parts, groups, parts, names))
    columns = _columns(section)
    published = [(_PUBLISHED, "published rows")] if section.published else []
    data = {"rows": [_row_data(row) for row in section.rows] + [_published_data(e) for e in section.published]}
    superseded = [
        (new.path.name if new.path else new.label, new.created, old.path.name if old.path else old.label, old.created)
        for old, new in sorted(section.superseded, key=lambda pair: (str(pair[1].path or ""), str(pair[0].path or "")))
    ]
    return {
        "section": section, "columns": columns, "seen": seen, "superseded": superseded,
        "ceiling": any(name == "re-rank ceiling" for name, _ in columns), "cost": any(name == "cost" for name, _ in columns),
        "over_seeds": any(r.seeds > 1 for r in section.rows),
        "selects": _select_options(_row_selects(section.rows, published)),
        "files": [_result_links(row, output_dir) for row in section.rows],
        "data": Markup(script_json(data)),
    }


def _result_links(row: BoardRow, output_dir: Path) -> list[tuple[str, str | None]]:
    """A row's result files: each name with its address relative to the pages."""
    return [
        (Path(r.path).name, _href(Path(os.path.relpath(r.path, output_dir)).as_posix()))
        for r in row.results if r.path is not None
    ]


def _choice(value: str | None) -> str:
    return _NONE if not value else f"={value}"


def _row_data(row: BoardRow) -> dict[str, Any]:
    """What the filters read of a row: its text, and each box's value (``seed``: a list, one
    entry per training seed; a row over several matches each)."""
    text = " ".join([row.label, row.retriever, row.variant or "", row.reranker or "", row.all_parameters, *row.training_data])
    return {
        "text": one_line(text), "retriever": _choice(row.retriever), "variant": _choice(row.variant),
        "reranker": _choice(row.reranker), "seed": [_choice(str(seed)) for seed in row.training_seeds] or [_NONE],
        "domain": _choice(row.domain),
    }


def _published_data(entry: PublishedEntry) -> dict[str, Any]:
    text = " ".join(["published", entry.system, entry.citation, entry.table, entry.note])
    return {"text": one_line(text), "retriever": _PUBLISHED, "variant": _OTHER, "reranker": _OTHER, "seed": [_OTHER],
            "domain": _OTHER}


#: A filter box: its row field, label, each row's value(s) (None: none) and extra options.
_Select = tuple[str, str, Sequence[Any], Sequence[tuple[str, str]]]


def _row_selects(rows: Sequence[BoardRow], published: Sequence[tuple[str, str]] = ()) -> list[_Select]:
    """The boxes of a rows table: retriever, variant, re-ranker and training seed."""
    return [
        ("retriever", "retriever", [r.retriever for r in rows], published),
        ("variant", "variant", [r.variant for r in rows], ()),
        ("reranker", "re-ranker", [r.reranker for r in rows], ()),
        ("seed", "training seed", [[str(seed) for seed in r.training_seeds] or None for r in rows], ()),
        ("domain", "in-domain or zero-shot", [r.domain for r in rows], ()),
    ]


def _select_options(selects: Sequence[_Select]) -> list[dict[str, Any]]:
    """Each box's options: ``all``, each value present (sorted), ``none`` when some row has none,
    then the extra options."""
    out = []
    for field, label, values, extra in selects:
        flat = [v for value in values if value for v in (value if isinstance(value, list) else [value])]
        if field == "seed":
            present = sorted(set(flat), key=lambda v: (int(v), v))
        else:
            present = sorted(set(flat), key=lambda v: (v.lower(), v))
        options = [("", "all")] + [(f"={v}", v) for v in present]
        if any(not v for v in values):
            options.append((_NONE, "none"))
        out.append({"field": field, "label": label, "options": options + list(extra)})
    return out


#: The record of the pages a folder holds, written with them: only pages it lists are ever removed.
MANIFEST = "pages.json"


def _page_file(name: object) -> bool:
    """A name :func:`render_html` gives: a plain ``.html`` file name in the folder itself."""
    return isinstance(name, str) and name.endswith(".html") and not name.startswith(".") and "/" not in name and "\\" not in name


def _recorded_pages(directory: Path) -> list[str] | None:
    """The pages :data:`MANIFEST` lists, or None when it is missing or not a manifest."""
    try:
        record = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    pages = record.get("pages") if isinstance(record, dict) else None
    return [name for name in pages if _page_file(name)] if isinstance(pages, list) else None


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def sync_html_dir(pages: Mapping[str, str], directory: Path, *, check: bool) -> list[str]:
    """Make ``directory`` hold ``pages`` (file name -> text) and :data:`MANIFEST`, or with
    ``check`` write nothing and return what differs (empty when up to date).

    Pages are written atomically, only when their text changed; a page an earlier run wrote (its
    manifest lists it) that is no longer wanted is removed; other files are left alone (the folder
    may be shared)."""
    from harness.util.atomic import write_text_atomic

    recorded = _recorded_pages(directory)
    manifest = json.dumps({"pages": sorted(pages)}, indent=1) + "\n"
    if not check:
        for name, text in sorted(pages.items()):
            if _read(directory / name) != text:
                write_text_atomic(directory / name, text)
        for name in recorded or ():
            if name not in pages:
                (directory / name).unlink(missing_ok=True)
        if _read(directory / MANIFEST) != manifest:
            write_text_atomic(directory / MANIFEST, manifest)
        return []
    problems = []
    if recorded is None:
        problems.append(f"{directory / MANIFEST} is missing or unreadable")
    elif set(recorded) != set(pages):
        problems.append(f"{directory / MANIFEST} lists other pages: {', '.join(sorted(set(recorded) ^ set(pages)))}")
    for name, text in sorted(pages.items()):
        current = _read(directory / name)
        if current is None:
            problems.append(f"{directory / name} is missing or unreadable")
        elif current != text:
            problems.append(f"{directory / name} differs from what the results give")
    for name in sorted(set(recorded or ()) - set(pages)):
        if (directory / name).exists():
            problems.append(f"{directory / name} is no longer wanted")
    return problems

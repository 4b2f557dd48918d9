"""The HTML board: the leaderboard's sections (:func:`harness.results.leaderboard.sections`) as
static pages that need no network to view.

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

Pages are self-contained: CSS and script are inline and a Content-Security-Policy forbids loading
anything. Every text from a result file, a name, a parameter, a part, a question id or a published
table is written through :func:`_e` (:func:`html.escape`, attributes double-quoted); data for the
script is JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so no text can end the script
element; links are http(s) or relative only (:func:`~harness.results.report.link_target`). The same
sections and plots give the same bytes: no dates, sorted choices, ids from positions. The inline
style sheet, script and policy are :mod:`harness.results.html_assets`; the cost and re-rank
ceiling cells :mod:`harness.results.html_cells`.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.results.html_assets import CSP, CSS, NOSCRIPT, SCRIPT
from harness.results.html_cells import ceiling_table, ceiling_td, cost_details, cost_td
from harness.results.html_cells import e as _e
from harness.results.html_cells import pct as _pct
from harness.results.leaderboard import RESAMPLES, BoardCell, BoardRow, PublishedEntry, Section
from harness.results.report import link_target, one_line

INDEX = "index.html"
#: What a cell of the ``tier-best`` class means.
TIER_NOTE = "best or not significantly different from the best: exact McNemar, Holm, α=0.05"
SYNTHETIC_NOTE = "generated data; these numbers are not comparable with any published benchmark"
#: Longest suite slug before a digest replaces its tail.
_SLUG_MAX = 60
#: Values of the filter boxes: ``=VALUE`` a value, ``!`` none, ``~published`` a published row.
_NONE, _PUBLISHED, _OTHER = "!", "~published", "~"
def render_html(
    sections: Sequence[Section], *, output_dir: Path, plots: Mapping[str, Sequence[tuple[str, str]]] | None = None
) -> dict[str, str]:
    """File name -> page: :data:`INDEX` and one page per suite (:func:`page_names`), sorted by
    name. ``output_dir`` is where the pages will live (links to result files are relative to it);
    ``plots`` maps a suite to its plots as ``(stem, SVG text)``, drawn under a suite with one
    question set."""
    names = page_names([s.suite for s in sections])
    by_suite: dict[str, list[Section]] = {}
    for section in sections:
        by_suite.setdefault(section.suite, []).append(section)
    pages = {INDEX: _index_page(sections, names)}
    for suite, group in by_suite.items():
        pages[names[suite]] = _suite_page(suite, group, output_dir, (plots or {}).get(suite, ()))
    return dict(sorted(pages.items()))


def page_names(suites: Sequence[str]) -> dict[str, str]:
    """Each suite's page: ``SLUG.html``, the name's letters, digits, ``-`` and ``_`` (other runs as
    ``_``); a slug that is empty, too long, ``index`` or shared by another suite (ignoring case)
    gets the first 8 hex digits of the name's SHA-256 as well."""
    slugs = {suite: re.sub(r"[^A-Za-z0-9_-]+", "_", suite).strip("_") for suite in sorted(set(suites))}
    taken: dict[str, int] = {}
    for slug in slugs.values():
        taken[slug.lower()] = taken.get(slug.lower(), 0) + 1
    names: dict[str, str] = {}
    for suite, slug in slugs.items():
        digest = hashlib.sha256(suite.encode("utf-8")).hexdigest()
        if not slug or len(slug) > _SLUG_MAX or slug.lower() == "index" or taken[slug.lower()] > 1:
            slug = f"{slug[:_SLUG_MAX]}-{digest[:8]}".lstrip("-")
        if f"{slug.lower()}.html" in {name.lower() for name in names.values()}:
            slug = f"{slug}-{digest[8:24]}"
        names[suite] = f"{slug}.html"
    return names


def _href(url: object) -> str | None:
    """``url`` for an ``href`` attribute when it is http(s) or relative (:func:`link_target`)."""
    target = link_target(url)
    return None if target is None else html.escape(html.unescape(target), quote=True)


def _link(text: object, url: object) -> str:
    href = _href(url) if url else None
    return f'<a href="{href}">{_e(text)}</a>' if href is not None else _e(text)


def script_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element: ``<``, ``>``, ``&``, U+2028 and
    U+2029 as ``\\uXXXX`` escapes (valid JSON, read back unchanged)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for char in "&<>\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def _document(title: str, body: str, *, script: bool) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n{NOSCRIPT if script else ''}\n</head>\n<body>\n"
        + body
        + (f"<script>{SCRIPT}</script>\n" if script else "")
        + "</body>\n</html>\n"
    )


def _best(section: Section) -> tuple[int, float, BoardRow] | None:
    """The best row at top-20 (else at the section's first ordering cutoff), with its value."""
    k = 20 if 20 in section.ks else section.order[0]
    column = section.ks.index(k)
    scored = [(row.cells[column].value, -i, row) for i, row in enumerate(section.rows) if row.cells[column].value is not None]
    if not scored:
        return None
    value, _, row = max(scored, key=lambda item: item[:2])
    return k, value, row


def _index_page(sections: Sequence[Section], names: Mapping[str, str]) -> str:
    lines = []
    seen: dict[str, int] = {}
    for section in sections:
        position = seen[section.suite] = seen.get(section.suite, -1) + 1
        anchor = names[section.suite] + (f"#s{position}" if len(section.question_sets) > 1 else "")
        best = _best(section)
        shown = "–"
        if best is not None:
            k, value, row = best
            prefix = "" if k == 20 else f"top-{k}: "
            shown = f'{prefix}{_pct(value)} <span class="params">{_e(row.label)}</span>'
        published = f" (+{len(section.published)} published)" if section.published else ""
        lines.append(
            f'<tr><td><a href="{_e(anchor)}">{_e(section.suite)}</a>{_suite_note(section)}</td>'
            f'<td class="num">{section.questions}</td><td class="num">{len(section.rows)}{published}</td><td>{shown}</td></tr>'
        )
    body = (
        "<header><h1>Leaderboard</h1></header>\n<main>\n"
        '<p class="legend">Generated by <code>harness leaderboard</code> from result files; do not edit by hand. '
        "Top-k retrieval accuracy in percent (for suites with several parts, the unweighted mean over parts). "
        f"Suites marked SYNTHETIC are {SYNTHETIC_NOTE}. Each suite's page sorts, filters and opens rows into their parts.</p>\n"
    )
    if not lines:
        body += "<p>No results yet: run <code>harness run --retriever bm25 --suite demo</code>.</p>\n"
    else:
        body += (
            '<table class="index"><thead><tr><th>suite</th><th class="num">questions</th><th class="num">rows</th>'
            "<th>best top-20</th></tr></thead>\n<tbody>\n" + "\n".join(lines) + "\n</tbody></table>\n"
            + _all_rows(sections, names)
        )
    return _document("Leaderboard", body + "</main>\n", script=bool(lines))


def _suite_note(section: Section) -> str:
    """After a suite's name: its question set when the suite has several, and the SYNTHETIC mark."""
    questions = f" (question set {_e(_short(section.question_set))})" if len(section.question_sets) > 1 else ""
    mark = ' <span class="synthetic-mark">SYNTHETIC</span>' if section.synthetic else ""
    return questions + mark


def _all_rows(sections: Sequence[Section], names: Mapping[str, str]) -> str:
    """The index's table of every suite's rows: configuration (a link to its row on its suite's
    page), suite, retriever, variant, re-ranker, seeds and each cutoff any suite reports (``–``
    where a suite does not), sortable and filterable like a suite's table, with a suite filter."""
    ks = sorted({k for section in sections for k in section.ks})
    columns = [("configuration", "text"), ("suite", "text"), ("retriever", "text"), ("variant", "text"),
               ("re-ranker", "text"), ("seeds", "number")] + [(f"top-{k}", "number") for k in ks]
    bodies: list[str] = []
    data: list[dict[str, Any]] = []
    rows: list[BoardRow] = []
    suites: list[str] = []
    seen: dict[str, int] = {}
    for section in sections:
        position = seen[section.suite] = seen.get(section.suite, -1) + 1
        for i, row in enumerate(section.rows):
            anchor = f"{names[section.suite]}#s{position}-r{i}"
            by_k = {cell.k: cell for cell in row.cells}
            cells = [
                f'<td data-sort="{_e(row.label)}"><a class="label" href="{_e(anchor)}">{_e(row.label)}</a>'
                f'<div class="params">{_e(row.parameters)}</div></td>',
                f'<td data-sort="{_e(section.suite)}">{_e(section.suite)}{_suite_note(section)}</td>',
                _text_td(row.retriever), _text_td(row.variant), _text_td(row.reranker), _seeds_td(row),
            ]
            cells += [_value_td(by_k[k], tier=False) if k in by_k else '<td class="num" data-sort="">–</td>' for k in ks]
            bodies.append(f'<tbody class="entry" data-row="{len(bodies)}"><tr>{"".join(cells)}</tr></tbody>')
            entry = _row_data(row)
            data.append({**entry, "text": one_line(f"{section.suite} {entry['text']}"), "suite": _choice(section.suite)})
            rows.append(row)
            suites.append(section.suite)
    head = "".join(_header_cell(name, kind) for name, kind in columns)
    selects = [("suite", "suite", suites, ())] + _row_selects(rows)
    return (
        '<section class="board" id="all" aria-labelledby="all-h">\n<h2 id="all-h">All rows</h2>\n'
        "<p class=\"legend\">Every suite's rows in one table: top-k accuracy in percent with its 95% bootstrap "
        "interval (a row over seeds: mean ± standard deviation); – where a suite does not report that cutoff. "
        "A configuration links to its row on its suite's page, which marks the best tier, shows published rows "
        "and opens each row into its parts. Click a column header to sort; the boxes filter by suite, retriever, "
        "variant, re-ranker and training seed.</p>\n"
        + _filter_bar(selects, len(bodies))
        + f'<div class="table-wrap"><table class="rows">\n<thead><tr>{head}</tr></thead>\n'
        + "\n".join(bodies)
        + f'\n</table></div>\n<script type="application/json" class="board-data">{script_json({"rows": data})}</script>\n'
        "</section>\n"
    )


def _short(fingerprint: str) -> str:
    return fingerprint.removeprefix("sha256:")[:12]


def _suite_page(suite: str, group: Sequence[Section], output_dir: Path, plots: Sequence[tuple[str, str]]) -> str:
    synthetic = any(s.synthetic for s in group)
    banner = f'<p class="synthetic-banner" role="note"><strong>SYNTHETIC</strong>: {SYNTHETIC_NOTE}.</p>\n' if synthetic else ""
    body = [
        f'<header><p><a href="{INDEX}">All suites</a></p>\n<h1>{_e(suite)}</h1>\n{banner}</header>\n<main>\n'
    ]
    for n, section in enumerate(group):
        body.append(_section_html(section, f"s{n}", output_dir))
    if plots and len(group) == 1:
        figures = [
            f'<figure class="plot" id="plot-{i}">{_svg(text)}<figcaption>{_e(stem)}</figcaption></figure>\n'
            for i, (stem, text) in enumerate(plots)
        ]
        body.append('<section class="plots"><h2>Plots</h2>\n' + "".join(figures) + "</section>\n")
    return _document(f"{suite}: leaderboard", "".join(body) + "</main>\n", script=True)


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


def _section_html(section: Section, sid: str, output_dir: Path) -> str:
    several = len(section.question_sets) > 1
    heading = f"Question set {_short(section.question_set)}" if several else "Results"
    detail = f"{section.questions} questions"
    if len(section.parts) > 1:
        detail += f" in {len(section.parts)} parts, macro-averaged"
    detail += f"; {section.corpus}; {section.match} matching."
    columns = _columns(section)
    head = "".join(_header_cell(name, kind) for name, kind in columns)
    bodies = [_row_html(row, section, sid, i, columns, output_dir) for i, row in enumerate(section.rows)]
    bodies += [_published_html(entry, section, len(section.rows) + j, columns) for j, entry in enumerate(section.published)]
    data = {"rows": [_row_data(row) for row in section.rows] + [_published_data(e) for e in section.published]}
    return (
        f'<section class="board" id="{sid}" aria-labelledby="{sid}-h">\n<h2 id="{sid}-h">{_e(heading)}</h2>\n'
        f'<p class="detail">{_e(detail)}</p>\n{_legend(section)}{_superseded(section)}{_filters(section, len(bodies))}'
        f'<div class="table-wrap"><table class="rows">\n<thead><tr>{head}</tr></thead>\n'
        + "\n".join(bodies)
        + f'\n</table></div>\n<script type="application/json" class="board-data">{script_json(data)}</script>\n</section>\n'
    )


def _header_cell(name: str, kind: str) -> str:
    """A column header: a sort button for a sortable column (``data-type`` says how it sorts)."""
    if not kind:
        return "<th></th>"
    align = ' class="num"' if kind == "number" else ""
    return f'<th{align} data-type="{kind}" aria-sort="none"><button type="button" class="sort">{_e(name)}</button></th>'


def _legend(section: Section) -> str:
    seeds = " A row over several seeds shows mean ± standard deviation." if any(r.seeds > 1 for r in section.rows) else ""
    published = " Rows marked published are numbers printed in papers, with their source." if section.published else ""
    return (
        '<p class="legend">Top-k accuracy in percent; in brackets its 95% bootstrap confidence interval (questions '
        f'resampled within each part, {RESAMPLES:,} resamples, fixed seed).{seeds} <span class="tier-best" title="{_e(TIER_NOTE)}">'
        f"Bold</span>: {_e(TIER_NOTE)} (per cutoff, tests over the section).{published} Click a column header to sort, "
        "“parts” to open a row.</p>\n"
    )


def _superseded(section: Section) -> str:
    if not section.superseded:
        return ""
    items = [
        f"{_e(new.path.name if new.path else new.label)} ({_e(new.data['created'])}) over "
        f"{_e(old.path.name if old.path else old.label)} ({_e(old.data['created'])})"
        for old, new in sorted(section.superseded, key=lambda pair: (str(pair[1].path or ""), str(pair[0].path or "")))
    ]
    return (
        '<p class="note">One row per configuration: where several result files hold one, the newest by its '
        f"recorded time is shown: {'; '.join(items)}.</p>\n"
    )


def _choice(value: str | None) -> str:
    return _NONE if not value else f"={value}"


def _row_data(row: BoardRow) -> dict[str, Any]:
    """What the filters read of a row: its text, and each box's value (``seed``: a list, one
    entry per training seed; a row over several matches each)."""
    text = " ".join([row.label, row.retriever, row.variant or "", row.reranker or "", row.all_parameters, *row.training_data])
    return {
        "text": one_line(text), "retriever": _choice(row.retriever), "variant": _choice(row.variant),
        "reranker": _choice(row.reranker), "seed": [_choice(str(seed)) for seed in row.training_seeds] or [_NONE],
    }


def _published_data(entry: PublishedEntry) -> dict[str, Any]:
    text = " ".join(["published", entry.system, entry.citation, entry.table, entry.note])
    return {"text": one_line(text), "retriever": _PUBLISHED, "variant": _OTHER, "reranker": _OTHER, "seed": [_OTHER]}


#: A filter box: its row field, label, each row's value(s) (None: none) and extra options.
_Select = tuple[str, str, Sequence[Any], Sequence[tuple[str, str]]]


def _row_selects(rows: Sequence[BoardRow], published: Sequence[tuple[str, str]] = ()) -> list[_Select]:
    """The boxes of a rows table: retriever, variant, re-ranker and training seed."""
    return [
        ("retriever", "retriever", [r.retriever for r in rows], published),
        ("variant", "variant", [r.variant for r in rows], ()),
        ("reranker", "re-ranker", [r.reranker for r in rows], ()),
        ("seed", "training seed", [[str(seed) for seed in r.training_seeds] or None for r in rows], ()),
    ]


def _filter_bar(selects: Sequence[_Select], count: int) -> str:
    """The text box, one select box per ``selects`` entry (``all``, each value present, ``none``
    when some row has none, then the extra options) and the count of rows shown."""
    def select(field: str, label: str, values: Sequence[Any], extra: Sequence[tuple[str, str]]) -> str:
        flat = [v for value in values if value for v in (value if isinstance(value, list) else [value])]
        if field == "seed":
            present = sorted(set(flat), key=lambda v: (int(v), v))
        else:
            present = sorted(set(flat), key=lambda v: (v.lower(), v))
        options = [("", "all")] + [(f"={v}", v) for v in present]
        if any(not v for v in values):
            options.append((_NONE, "none"))
        options += list(extra)
        inner = "".join(f'<option value="{_e(value)}">{_e(text)}</option>' for value, text in options)
        return f'<label>{_e(label)} <select data-field="{_e(field)}">{inner}</select></label>'

    return (
        '<div class="filters" role="search"><label>Filter <input type="search" class="filter-text" '
        'placeholder="name, parameter, source…" aria-label="filter rows"></label>'
        + "".join(select(*entry) for entry in selects)
        + f'<span class="shown" aria-live="polite">{count} of {count} rows shown</span></div>\n'
    )


def _filters(section: Section, count: int) -> str:
    published = [(_PUBLISHED, "published rows")] if section.published else []
    return _filter_bar(_row_selects(section.rows, published), count)


def _seeds_td(row: BoardRow) -> str:
    """The seeds cell: how many results the row is over, and the seeds its checkpoints were
    trained with (:attr:`BoardRow.training_seeds`) when it was trained."""
    seeds = row.training_seeds
    extra = ""
    if seeds:
        extra = (f'<small class="seed-values">training seed{"s" if len(seeds) > 1 else ""} '
                 f'{_e(", ".join(str(seed) for seed in seeds))}</small>')
    return f'<td class="num" data-sort="{row.seeds}">{row.seeds}{extra}</td>'


def _value_td(cell: BoardCell, *, tier: bool = True) -> str:
    """A top-k cell: the value, then its interval (or ± the standard deviation over seeds); bold
    with the class ``tier-best`` when the row is in the best tier at ``k`` (and ``tier``: the
    index, whose table mixes suites, leaves the tiers to the suite pages)."""
    if cell.value is None:
        return '<td class="num" data-sort="">–</td>'
    if cell.std is not None:
        extra = f'<small class="sd" title="mean ± standard deviation over seeds">± {_pct(cell.std)}</small>'
    else:
        extra = f'<small class="ci" title="95% bootstrap interval">[{100 * cell.low:.1f}–{100 * cell.high:.1f}]</small>'
    sort = f"{100 * cell.value:.6f}"
    if cell.tier and tier:
        return (
            f'<td class="num tier-best" data-sort="{sort}" title="top-{cell.k}: {_e(TIER_NOTE)}">'
            f"<strong>{_pct(cell.value)}</strong>{extra}</td>"
        )
    return f'<td class="num" data-sort="{sort}">{_pct(cell.value)}{extra}</td>'


def _text_td(text: str | None, sort: str | None = None) -> str:
    if not text:
        return '<td data-sort="">–</td>'
    return f'<td data-sort="{_e(sort if sort is not None else text)}">{_e(text)}</td>'


def _row_html(row: BoardRow, section: Section, sid: str, i: int, columns: list[tuple[str, str]], output_dir: Path) -> str:
    """A row's ``tbody`` (id ``SID-rI``, which the index links to) with its hidden details row."""
    drill_id = f"{sid}-d{i}"
    cells = [
        f'<td data-sort="{_e(row.label)}"><span class="label">{_e(row.label)}</span>'
        f'<div class="params">{_e(row.parameters)}</div></td>',
        _text_td(row.retriever), _text_td(row.variant), _text_td(row.reranker), _seeds_td(row),
    ]
    cells += [_value_td(cell) for cell in row.cells]
    names = [name for name, _ in columns]
    if "re-rank ceiling" in names:
        cells.append(ceiling_td(row))
    if "cost" in names:
        cells.append(cost_td(row.cost))
    cells.append(
        f'<td><button type="button" class="expand" aria-expanded="false" aria-controls="{drill_id}">parts</button></td>'
    )
    return (
        f'<tbody class="entry" data-row="{i}" id="{sid}-r{i}"><tr>{"".join(cells)}</tr>\n'
        f'<tr class="drill" id="{drill_id}" hidden><td colspan="{len(columns)}">{_drill(row, section, output_dir)}</td></tr></tbody>'
    )


def _published_html(entry: PublishedEntry, section: Section, i: int, columns: list[tuple[str, str]]) -> str:
    note = f'<div class="params">{_e(entry.note)}</div>' if entry.note else ""
    cells = [
        f'<td data-sort="{_e(entry.system)}"><span class="published-mark">published</span> '
        f'<span class="label">{_e(entry.system)}</span>{note}</td>',
        f'<td data-sort="">{_link(entry.citation, entry.url)}<div class="params">{_e(entry.table)}</div></td>',
        _text_td(None), _text_td(None), '<td class="num" data-sort="">–</td>',
    ]
    for k in section.ks:
        if k in entry.values:
            cells.append(f'<td class="num" data-sort="{entry.values[k]:.6f}">{_e(entry.printed[k])}</td>')
        else:
            cells.append('<td class="num" data-sort="">–</td>')
    cells += ['<td class="num" data-sort="">–</td>' for name, _ in columns if name in ("re-rank ceiling", "cost")]
    cells.append("<td></td>")
    return f'<tbody class="entry published" data-row="{i}"><tr>{"".join(cells)}</tr></tbody>'


def _drill(row: BoardRow, section: Section, output_dir: Path) -> str:
    """A row's details: top-k per part, seen/unseen averages, parameters, training data, cost and
    result files."""
    head = "".join(f'<th class="num">top-{k}</th>' for k in section.ks)
    lines = [
        f'<tr><th>{_e(part)}</th><td class="num">{section.part_questions.get(part, "")}</td>'
        + "".join(f'<td class="num">{_part_value(cell, [part])}</td>' for cell in row.cells)
        + "</tr>"
        for part in section.parts
    ]
    parts = (
        f'<table class="parts"><caption>Top-k by part</caption><thead><tr><th>part</th><th class="num">questions</th>{head}'
        f"</tr></thead><tbody>{''.join(lines)}</tbody></table>"
    )
    facts = [("configuration", _e(row.config)), ("parameters", _e(row.all_parameters or "none"))]
    if row.training_data:
        facts.append(("training data", _e(", ".join(row.training_data))))
    if row.cost is not None:
        facts.append(("cost", _e(cost_details(row.cost)) + (" (first seed's run)" if row.seeds > 1 else "")))
    files = [_result_link(result.path, output_dir) for result in row.results if result.path is not None]
    if files:
        facts.append(("result" + ("s" if len(files) > 1 else ""), ", ".join(files)))
    listing = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return f'<div class="drill-body">{parts}{_seen_html(row, section)}{ceiling_table(row)}<dl class="facts">{listing}</dl></div>'


def _part_value(cell: BoardCell, parts: Sequence[str]) -> str:
    """Top-k macro-averaged over ``parts`` (one part: its value), or ``–``."""
    if cell.value is None or not parts or any(p not in cell.parts for p in parts):
        return "–"
    return _pct(sum(cell.parts[p] for p in parts) / len(parts))


def _seen_html(row: BoardRow, section: Section) -> str:
    """Where some rows were trained on some of the suite's parts: this row's top-k over those
    parts and over the others (the markdown's seen/unseen tables)."""
    names = set(section.parts)
    out = []
    for seen in section.seen:
        seen_parts = sorted(seen)
        unseen = [p for p in section.parts if p not in seen]
        own = row.trained_on & names
        trained = "trained on these parts" if own == seen else ("trained on other parts" if own else "not trained on any part")
        head = "".join(f'<th class="num">top-{k}</th>' for k in section.ks)
        lines = "".join(
            f"<tr><th>{label}</th>" + "".join(f'<td class="num">{_part_value(cell, group)}</td>' for cell in row.cells) + "</tr>"
            for label, group in ((f"seen ({len(seen_parts)} parts)", seen_parts), (f"unseen ({len(unseen)} parts)", unseen))
        )
        out.append(
            f'<table class="parts"><caption>Seen and unseen parts ({_e(", ".join(seen_parts))}): {trained}</caption>'
            f"<thead><tr><th>parts</th>{head}</tr></thead><tbody>{lines}</tbody></table>"
        )
    return "".join(out)


def _result_link(path: Path, output_dir: Path) -> str:
    target = Path(os.path.relpath(path, output_dir)).as_posix()
    return _link(Path(path).name, target)



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

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
:func:`~harness.results.leaderboard.training_seeds`; a row over several seeds matches each of
them), and each row opens into its per-part top-k (and seen/unseen part averages where some rows
were trained on some parts), a re-ranked row's questions won and lost against its first stage,
every parameter and its result files. The suite's plots follow as inline SVG.

Pages are self-contained: CSS and script are inline and a Content-Security-Policy forbids loading
anything. Every text from a result file, a name, a parameter, a part, a question id or a published
table is written through :func:`_e` (:func:`html.escape`, attributes double-quoted); data for the
script is JSON with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, so no text can end the script
element; links are http(s) or relative only (:func:`~harness.results.report.link_target`). The same
sections and plots give the same bytes: no dates, sorted choices, ids from positions.
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

from harness.analysis.ceiling import Ceiling, question_list
from harness.analysis.stats import format_p
from harness.results.leaderboard import RESAMPLES, BoardCell, BoardRow, PublishedEntry, Section
from harness.results.report import link_target, one_line

INDEX = "index.html"
#: What a cell of the ``tier-best`` class means.
TIER_NOTE = "best or not significantly different from the best: exact McNemar, Holm, α=0.05"
SYNTHETIC_NOTE = "generated data; these numbers are not comparable with any published benchmark"
#: Longest suite slug before a digest replaces its tail.
_SLUG_MAX = 60
#: Nothing is loaded from anywhere: inline styles, scripts and SVG only.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
#: Values of the filter boxes: ``=VALUE`` a value, ``!`` none, ``~published`` a published row.
_NONE, _PUBLISHED, _OTHER = "!", "~published", "~"
#: How many ids of each list of questions won or lost a row's details show before "… and N more".
IDS_IN_HTML = 50

_CSS = """
:root { --muted: #57606a; --line: #d0d7de; --tier: #fff1b8; --warn: #a00000; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5rem; color: #1f2328; }
h1 { font-size: 1.6rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.2rem; margin: 1.6rem 0 .4rem; }
a { color: #0969da; }
.synthetic-banner { background: var(--warn); color: #fff; padding: .5rem .8rem; border-radius: 4px; max-width: 70rem; }
.synthetic-mark { background: var(--warn); color: #fff; font-size: .75em; font-weight: 600; padding: 0 .35em; border-radius: 3px; }
.published-mark { background: #ddf4ff; color: #0550ae; font-size: .75em; font-weight: 600; padding: 0 .35em; border-radius: 3px; }
.detail, .legend, .note { color: var(--muted); max-width: 70rem; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; margin: .8rem 0; }
.filters input { min-width: 16rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; }
table.rows th, table.rows td, table.index th, table.index td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
table.rows thead th { position: sticky; top: 0; background: #fff; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.cost { white-space: normal; min-width: 10rem; max-width: 15rem; }
th button.sort { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit; }
th[aria-sort="descending"] button.sort::after { content: " \\25BC"; }
th[aria-sort="ascending"] button.sort::after { content: " \\25B2"; }
.ci, .sd, .ceiling-depth, .seed-values { display: block; color: var(--muted); font-size: .8em; }
.tier-best { background: var(--tier); font-weight: 700; }
td.tier-best .ci { font-weight: 400; }
.params { color: var(--muted); font-size: .8em; max-width: 34rem; overflow-wrap: anywhere; }
tbody.published td { background: #f6f8fa; }
tr.drill > td { background: #fbfbfc; padding: .6rem 1rem; }
table.parts th, table.parts td { padding: .1rem .6rem; border-bottom: 1px solid #eaeef2; }
table.parts caption { text-align: left; font-weight: 600; padding: .3rem 0; }
ul.questions { margin: .2rem 0 .6rem; padding-left: 1.2rem; max-width: 70rem; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; max-width: 70rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
figure.plot { margin: 1rem 0; }
figure.plot svg { max-width: 100%; height: auto; }
[hidden] { display: none !important; }
"""

_NOSCRIPT = "<noscript><style>tr.drill[hidden] { display: table-row !important; } .filters, button.expand { display: none; }</style></noscript>"

_SCRIPT = """
(function () {
  "use strict";
  function sortKey(body, column, numeric) {
    var cell = body.rows[0].cells[column];
    var value = cell ? cell.getAttribute("data-sort") : "";
    if (value === null) { value = cell.textContent; }
    if (value === "") { return null; }
    return numeric ? parseFloat(value) : value.toLowerCase();
  }
  function order(body) { return Number(body.getAttribute("data-row")); }
  function setUp(section) {
    var table = section.querySelector("table.rows");
    var data = JSON.parse(section.querySelector("script.board-data").textContent);
    var entries = Array.prototype.slice.call(table.tBodies);
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, column) {
      var button = th.querySelector("button.sort");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "number";
        var current = th.getAttribute("aria-sort");
        var direction = current === "descending" ? "ascending" : current === "ascending" ? "descending"
          : (numeric ? "descending" : "ascending");
        headers.forEach(function (other) { if (other.hasAttribute("aria-sort")) { other.setAttribute("aria-sort", "none"); } });
        th.setAttribute("aria-sort", direction);
        var sign = direction === "ascending" ? 1 : -1;
        entries.slice().sort(function (a, b) {
          var x = sortKey(a, column, numeric), y = sortKey(b, column, numeric);
          if (x === y) { return order(a) - order(b); }
          if (x === null) { return 1; }
          if (y === null) { return -1; }
          return (x < y ? -1 : 1) * sign;
        }).forEach(function (body) { table.appendChild(body); });
      });
    });
    var text = section.querySelector("input.filter-text");
    var selects = Array.prototype.slice.call(section.querySelectorAll("select[data-field]"));
    var shown = section.querySelector(".shown");
    function apply() {
      var query = text.value.trim().toLowerCase();
      var count = 0;
      entries.forEach(function (body) {
        var row = data.rows[order(body)];
        var ok = (!query || row.text.toLowerCase().indexOf(query) !== -1) && selects.every(function (select) {
          var value = row[select.getAttribute("data-field")];
          return select.value === "" || (Array.isArray(value) ? value.indexOf(select.value) !== -1 : value === select.value);
        });
        body.hidden = !ok;
        if (ok) { count += 1; }
      });
      shown.textContent = count + " of " + entries.length + " rows shown";
    }
    text.addEventListener("input", apply);
    selects.forEach(function (select) { select.addEventListener("change", apply); });
    table.addEventListener("click", function (event) {
      var button = event.target.closest("button.expand");
      if (!button) { return; }
      var open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", open ? "true" : "false");
      document.getElementById(button.getAttribute("aria-controls")).hidden = !open;
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("section.board"), setUp);
})();
"""


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


def _e(text: object) -> str:
    """``text`` on one line (:func:`one_line`), escaped for HTML text and double-quoted attributes."""
    return html.escape(one_line(text), quote=True)


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
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n{_NOSCRIPT if script else ''}\n</head>\n<body>\n"
        + body
        + (f"<script>{_SCRIPT}</script>\n" if script else "")
        + "</body>\n</html>\n"
    )


def _pct(value: float) -> str:
    return f"{100 * value:.2f}"


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
        cells.append(_ceiling_td(row))
    if "cost" in names:
        cells.append(_cost_td(row.cost))
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


def _ceiling_td(row: BoardRow) -> str:
    """The ceiling cell of a re-ranked row: the share of questions whose first-stage top N held an
    answer, and N; its title gives the wins and losses at the deepest cutoff."""
    c = row.ceiling
    if c is None:
        return '<td class="num" data-sort="">–</td>'
    deepest = c.at[-1] if c.at else None
    title = (f"share of questions the first stage answered within the {c.depth} hits re-ranked: the best any "
             "re-ranking of them can reach")
    if deepest is not None:
        title += f"; at top-{deepest.k}: {deepest.wins} won, {deepest.losses} lost against the first stage"
    return (
        f'<td class="num" data-sort="{100 * c.ceiling:.6f}" title="{_e(title)}">ceiling {100 * c.ceiling:.1f}'
        f'<small class="ceiling-depth">(first stage top-{c.depth})</small></td>'
    )


def _ceiling_table(row: BoardRow) -> str:
    """A re-ranked row's details against its first stage: per cutoff the first stage's and the
    re-ranked top-k, the questions won and lost, and the exact McNemar p-value."""
    c = row.ceiling
    if c is None:
        return ""
    lines = "".join(
        f'<tr><th>top-{a.k}</th><td class="num">{_pct(a.first_stage)}</td><td class="num">{_pct(a.reranked)}</td>'
        f'<td class="num">{100 * (a.reranked - a.first_stage):+.2f}</td><td class="num">{a.wins} / {a.losses}</td>'
        f'<td class="num">{_e(format_p(a.p_value))}</td></tr>'
        for a in c.at
    )
    return (
        f'<table class="parts"><caption>Re-ranking against its ceiling: {_pct(c.ceiling)}% of questions had an answer in '
        f"the first stage's top {c.depth}{' (first seed)' if row.seeds > 1 else ''}</caption><thead><tr><th>cutoff</th>"
        '<th class="num">first stage</th><th class="num">re-ranked</th><th class="num">change</th>'
        '<th class="num">wins / losses</th><th class="num">p (exact McNemar)</th></tr></thead>'
        f"<tbody>{lines}</tbody></table>{_won_lost(c)}"
    )


def _won_lost(c: Ceiling) -> str:
    """The questions a re-ranking won and lost at each cutoff with any (won at k: answered within k
    after re-ranking and not by the first stage; lost: the other way round), the first
    :data:`IDS_IN_HTML` ids of each (:func:`~harness.analysis.ceiling.question_list`)."""
    def listed(what: str, questions: Sequence[tuple[str, str]]) -> str:
        if not questions:
            return f"{what} 0"
        return f"{what} {len(questions)}: " + _e(question_list(questions, parts=len(c.parts), shown=IDS_IN_HTML))

    items = "".join(
        f"<li>top-{a.k}: {listed('won', a.won)}; {listed('lost', a.lost)}</li>" for a in c.at if a.won or a.lost
    )
    if not items:
        return ""
    named = "part/id" if len(c.parts) != 1 else "id"
    return (
        f'<p class="note">Questions won (answered within k only after re-ranking) and lost (only before), by {named}; '
        f"the first {IDS_IN_HTML} of each (<code>harness compare --json</code> lists every one):</p>"
        f'<ul class="questions">{items}</ul>'
    )


def _size(count: int) -> str:
    """A byte count in decimal units: ``812 B``, ``1.2 GB``."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"


def cost_summary(cost: Mapping[str, Any]) -> str:
    """The compact cost cell: ``cpu ×1 · 0.00 GPU-h · host 1.2 GB · 3,610 q/s`` (fields a record
    lacks are left out)."""
    items: list[str] = []
    if cost.get("device_kind"):
        items.append(f"{cost['device_kind']} ×{cost['device_count']}" if cost.get("device_count") is not None else cost["device_kind"])
    if cost.get("gpu_hours") is not None:
        items.append(f"{cost['gpu_hours']:.2f} GPU-h")
    if cost.get("peak_host_bytes") is not None:
        items.append(f"host {_size(cost['peak_host_bytes'])}")
    if cost.get("peak_gpu_bytes") is not None:
        items.append(f"GPU {_size(cost['peak_gpu_bytes'])}")
    if cost.get("search_queries_per_s") is not None:
        items.append(f"{cost['search_queries_per_s']:,.0f} q/s")
    return " · ".join(items)


def cost_details(cost: Mapping[str, Any]) -> str:
    """Every field of a cost record in words, for a row's details."""
    items = [cost_summary(cost)]
    for key, label in (("index_bytes", "index"), ("embedding_bytes", "embeddings")):
        if cost.get(key) is not None:
            items.append(f"{label} {_size(cost[key])}")
    if cost.get("encode_passages_per_s") is not None:
        items.append(f"{cost['encode_passages_per_s']:,.0f} passages/s encoded")
    if cost.get("seconds") is not None:
        items.append(f"{cost['seconds']:,.1f} s in all")
    return " · ".join(item for item in items if item)


def _cost_td(cost: Mapping[str, Any] | None) -> str:
    if cost is None:
        return '<td class="num" data-sort="">–</td>'
    key = cost.get("gpu_hours") if cost.get("gpu_hours") is not None else cost.get("seconds")
    sort = "" if key is None else f"{float(key):.6f}"
    return f'<td class="num cost" data-sort="{sort}" title="{_e(cost_details(cost))}">{_e(cost_summary(cost))}</td>'


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
    return f'<div class="drill-body">{parts}{_seen_html(row, section)}{_ceiling_table(row)}<dl class="facts">{listing}</dl></div>'


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

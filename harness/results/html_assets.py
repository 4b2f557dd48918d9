"""The HTML board's inline assets: its Content-Security-Policy (nothing is loaded from anywhere),
style sheet and script (sorting, filtering and opening rows; data from ``data-*`` attributes and
JSON that :func:`harness.results.html.script_json` escaped). :mod:`harness.results.html` puts them
into every page."""

#: Nothing is loaded from anywhere: inline styles, scripts and SVG only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

CSS = """
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

NOSCRIPT = "<noscript><style>tr.drill[hidden] { display: table-row !important; } .filters, button.expand { display: none; }</style></noscript>"

SCRIPT = """
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

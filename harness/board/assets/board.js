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

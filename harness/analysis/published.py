"""Published numbers as data: reading a table's TOML file, and checking results against them.

A published table is one TOML file (plugins register the records, :mod:`harness.api.published`)::

    name = "karpukhin2020-table2"        # unique: [a-z0-9-]+, the file is NAME.toml
    title = "DPR, Table 2: top-20 / top-100 retrieval accuracy on the test sets"
    citation = "Karpukhin et al. 2020, ..., Table 2"
    version = "arXiv 2004.04906v3 (30 Sep 2020)"  # which version of the source is copied
    kind = "paper"                       # "paper" (printed numbers) or "reproduction"
    digits = 1                           # decimals the values are printed with
    allowance = { points = 1.0, reason = "..." }  # paper tables: expected reproduction gap
    url = "https://..."                  # optional
    note = "..."                         # optional
    scope = { index_file = "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz" }  # optional

    [[rows]]
    system = "BM25"                      # as the paper names it
    suite = "nq"                         # a harness suite name, or a descriptive one
    values = { 20 = 59.1, 100 = 73.7 }   # k -> top-k accuracy in percent, as printed
    part = "P19"                         # optional: one part of the suite
    retriever = "bm25"                   # optional: the harness configuration that reproduces it
    options = { checkpoint = "nq-t0-3b" }  # optional: parameters a result must have to be compared
    digits = 2                           # optional: this row's printed decimals, if not the table's
    note = "..."                         # optional

TOML floats do not keep trailing zeros (81.60 reads as 81.6), so the printed precision is the
``digits`` key, not the value's spelling; every value must fit it (43.77 in a ``digits = 1`` table
is an error). ``kind`` (default ``"paper"``), ``digits`` (default: the most decimals a row's values
show), ``allowance`` (default 0 points; only for paper tables, and a non-zero one needs its
reason) and ``version`` (default empty) are optional for the reader; the built-in tables set all
of them.

``harness reproduce --check`` compares every result with each published row of its suite and
retriever name whose ``options`` the result's retriever parameters all have (its part's number
for a row with a ``part``, else the macro average), at every cutoff both have, in percentage
points (:func:`allowed_difference`):

- ``kind = "reproduction"`` (pyserini's reproductions, the harness's own earlier results):
  ``|ours - published| <= 0.02`` points, pyserini's two-click check
  (``math.isclose(score, expected, abs_tol=2e-2)`` on percentages, ``pyserini/2cr/odqa.py``);
- ``kind = "paper"``: ``|ours - published| <= 0.5 * 10**-digits + allowance``: half a unit of the
  last printed digit (81.6 allows 0.05, 80.89 allows 0.005) plus the table's allowance.

``--tolerance POINTS`` replaces both rules with one bound for every row.

``scope`` says what the table's numbers are for where a result records it: parameter = value
pairs (strings, numbers, booleans) that a result's retriever parameters must not contradict. A
result is compared with the table's rows only if every scope parameter it records, at any depth
of its parameters (a hybrid's sparse side counts), has the scope's value (:func:`in_scope`); a
result that records none of them (a dense retriever: it uses no such index) is compared as before.
The BM25 retriever records the prebuilt Lucene index it searched (``index_file``, its pyserini
file name), so pyserini's figures for the 2021 index and for the Lucene 10 rebuild (pyserini
2.1.0 on) are each checked against results of their own index only.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from typing import Any

import msgspec

from harness.api import MAX_K, PublishedRow, PublishedTable
from harness.data.specs import Problems, SpecRecord, decode
from harness.errors import InputFileError
from harness.results.schema import Result

#: The largest |ours - published| in percentage points for a ``kind = "reproduction"`` table:
#: pyserini's two-click reproduction check, ``math.isclose(score, expected, abs_tol=2e-2)`` on
#: scores in percent (``pyserini/2cr/odqa.py``).
REPRODUCTION_TOLERANCE = 0.02
#: The kinds of table, each with its rule (:func:`allowed_difference`).
KINDS = ("paper", "reproduction")
#: Most decimals a ``digits`` key may declare.
MAX_DIGITS = 6
#: Slack on comparisons in points: percentages computed from counts are not exact in binary.
_EPSILON = 1e-9

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")

#: A parameter's value in ``options`` and ``scope``.
Scalar = str | int | float | bool


def _scalars(what: str) -> Any:
    """The message about a table of parameters (``options``, ``scope``) that holds something other
    than a string, number or boolean: it names the first such parameter."""
    def message(value: Any) -> str:
        if not isinstance(value, dict):
            return f"'{what}' must be a table of parameter = value"
        bad = next((k for k, v in value.items() if not isinstance(v, (str, int, float))), "?")
        return f"{'option' if what == 'options' else 'scope parameter'} {bad!r} must be a string, number or boolean"

    return message


class _Allowance(SpecRecord, kw_only=True):
    points: float
    reason: str


class _Row(SpecRecord, kw_only=True):
    """One ``[[rows]]`` table of a published table file."""

    MESSAGES = {
        "values": "must be a non-empty table of cutoff = percent",
        "options": _scalars("options"),
        "digits": f"must be a whole number of decimals from 0 to {MAX_DIGITS}",
    }

    system: str = ""
    suite: str = ""
    values: dict[str, float] = msgspec.field(default_factory=dict)
    part: str | None = None
    retriever: str | None = None
    note: str = ""
    options: dict[str, Scalar] = msgspec.field(default_factory=dict)
    digits: int | None = None


class _Table(SpecRecord, kw_only=True):
    """A published table file (the keys above)."""

    MESSAGES = {
        "allowance": "must be a table { points = NUMBER, reason = \"...\" }",
        "scope": _scalars("scope"),
        "digits": f"must be a whole number of decimals from 0 to {MAX_DIGITS}",
        "rows": "must be a non-empty array of tables ([[rows]])",
    }

    name: str = ""
    title: str = ""
    citation: str = ""
    url: str = ""
    note: str = ""
    rows: list[dict[str, Any]] = msgspec.field(default_factory=list)
    kind: str = "paper"
    digits: int | None = None
    allowance: _Allowance | None = None
    version: str = ""
    scope: dict[str, Scalar] = msgspec.field(default_factory=dict)


def _decimals(value: float) -> int:
    """Decimals of ``value``'s shortest spelling: 81.6 -> 1, 43.77 -> 2, 75.0 -> 0."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        return MAX_DIGITS
    digits = text.split(".")[1].rstrip("0") if "." in text else ""
    return len(digits)


def _digits_ok(value: int | None) -> bool:
    return value is None or 0 <= value <= MAX_DIGITS


def read_published_table(path: str | Path) -> PublishedTable:
    """Read and validate one published table (decoded into typed records, :mod:`harness.data.specs`);
    every problem of the file is in one :class:`InputFileError` naming it (a row's problems
    start ``rows[N]: ``)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(path, f"invalid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise InputFileError(path, "TOML nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise InputFileError(path, f"invalid TOML: {' '.join(str(exc).split()).split(';')[0]}") from None
    problems = Problems(path)
    table = decode(data, _Table, problems)
    if table is None:
        problems.raise_any()
    for key in ("name", "title", "citation"):
        if getattr(table, key) is not None and not getattr(table, key).strip():
            problems.add(f"{key!r} must be a non-empty string")
    name = table.name
    if name and not _NAME.fullmatch(name):
        problems.add(f"'name' must be lowercase letters, digits and dashes, got {name!r}")
    elif name and name != path.stem:
        problems.add(f"'name' is {name!r} but the file is named {path.name}")
    kind = table.kind
    if kind is not None and kind not in KINDS:
        problems.add(f"'kind' must be one of {', '.join(repr(k) for k in KINDS)}, got {kind!r}")
    if not _digits_ok(table.digits):
        problems.add(f"'digits' must be a whole number of decimals from 0 to {MAX_DIGITS}, got {table.digits!r}")
    table_digits = table.digits if _digits_ok(table.digits) else None
    allowance, reason = 0.0, ""
    if table.allowance is not None:
        if kind in KINDS and kind != "paper":
            problems.add(f"'allowance' applies to kind = \"paper\" tables only; a {kind} table is compared within "
                         f"{REPRODUCTION_TOLERANCE:g} points")
        points = table.allowance.points
        if points is not None and (not math.isfinite(points) or not 0 <= points <= 100):
            problems.add(f"'allowance.points' must be a number of points from 0 to 100, got {points!r}")
        if table.allowance.reason is not None and not table.allowance.reason.strip():
            problems.add("'allowance.reason' must be a non-empty string")
        allowance, reason = float(points or 0.0), table.allowance.reason or ""
    if table.rows is not None and not table.rows:
        problems.add("'rows' must be a non-empty array of tables ([[rows]])")
    rows: list[PublishedRow] = []
    seen: set[tuple] = set()
    for i, raw in enumerate(table.rows or ()):
        where = f"rows[{i}]: "
        if not isinstance(raw, dict):
            problems.add(f"{where}each row must be a table")
            continue
        row = decode(raw, _Row, problems, where=where)
        record = _row(row, i, table_digits, problems)
        if record is None:
            continue
        key = (record.system, record.suite, record.part, tuple(record.options.items()))
        if key in seen:
            problems.add(f"{where}a second row of system {record.system!r} on {record.suite}"
                         + (f" part {record.part}" if record.part else ""))
        seen.add(key)
        rows.append(record)
    problems.raise_any()
    return PublishedTable(
        name=name, title=table.title, citation=table.citation, rows=tuple(rows),
        url=table.url, note=table.note,
        kind=kind, digits=table_digits, allowance=allowance, allowance_reason=reason,
        version=table.version, scope=tuple(sorted(table.scope.items())), source=str(path),
    )


def _row(row: _Row, i: int, table_digits: int | None, problems: Problems) -> PublishedRow | None:
    """The :class:`PublishedRow` of decoded row ``row`` (number ``i``), its own checks added to
    ``problems``; None when it has any."""
    where = f"rows[{i}]: "
    before = len(problems.items)
    for key in ("system", "suite"):
        if getattr(row, key) is not None and not getattr(row, key).strip():
            problems.add(f"{where}{key!r} must be a non-empty string")
    if not _digits_ok(row.digits):
        problems.add(f"{where}'digits' must be a whole number of decimals from 0 to {MAX_DIGITS}, got {row.digits!r}")
    row_digits = row.digits if _digits_ok(row.digits) else None
    digits = row_digits if row_digits is not None else table_digits
    if row.values is not None and not row.values:
        problems.add(f"{where}'values' must be a non-empty table of cutoff = percent")
    parsed: dict[int, float] = {}
    for k, v in (row.values or {}).items():
        if not (k.isascii() and k.isdigit()) or not 1 <= int(k) <= MAX_K:
            problems.add(f"{where}cutoff {k!r} must be a whole number from 1 to {MAX_K}")
            continue
        if not math.isfinite(v) or not 0 <= v <= 100:
            problems.add(f"{where}top-{k} must be a percentage from 0 to 100, got {v!r}")
        elif digits is not None and _decimals(v) > digits:
            problems.add(f"{where}top-{k} = {v!r} has more decimals than 'digits' = {digits}")
        parsed[int(k)] = float(v)
    if row.part is not None and not row.part.strip():
        problems.add(f"{where}'part' must be a non-empty string")
    if row.retriever is not None and not row.retriever.strip():
        problems.add(f"{where}'retriever' must be a non-empty string")
    if row.options and row.retriever is None:
        problems.add(f"{where}'options' needs a 'retriever' to apply to")
    if len(problems.items) > before or None in (row.system, row.suite, row.values, row.options):
        return None
    return PublishedRow(
        system=row.system, suite=row.suite, values=dict(sorted(parsed.items())), part=row.part,
        retriever=row.retriever, note=row.note or "", options=dict(sorted(row.options.items())), digits=row_digits,
    )


def printed_digits(table: PublishedTable, row: PublishedRow) -> int:
    """Decimals ``row``'s values are printed with: the row's ``digits``, else the table's, else
    the most any of its values shows."""
    if row.digits is not None:
        return row.digits
    if table.digits is not None:
        return table.digits
    return max(_decimals(v) for v in row.values.values())


def allowed_difference(table: PublishedTable, row: PublishedRow) -> float:
    """The largest |ours - published| in percentage points that still reproduces ``row``.

    A reproduction table: :data:`REPRODUCTION_TOLERANCE` (0.02). A paper table: half a unit of
    the last printed digit plus the table's allowance (81.6 with allowance 1.0: 0.05 + 1.0).
    """
    if table.kind == "reproduction":
        return REPRODUCTION_TOLERANCE
    return 5 / 10 ** (printed_digits(table, row) + 1) + table.allowance


def rule(table: PublishedTable, row: PublishedRow) -> str:
    """The comparison rule in words, for listings."""
    if table.kind == "reproduction":
        return f"reproduction: ±{REPRODUCTION_TOLERANCE:g}"
    half = 5 / 10 ** (printed_digits(table, row) + 1)
    return f"paper: ±{half:g}" + (f" + {table.allowance:g}" if table.allowance else "")


@dataclass(frozen=True)
class Check:
    """One comparison of a result with a published number, in percentage points."""

    table: PublishedTable
    row: PublishedRow
    result: Result
    k: int
    published: float  # percent, as printed
    ours: float  # percent
    #: The table the result reproduces instead of this row, when the two give the same result
    #: numbers at this cutoff that no count of questions meets together (:func:`contradicts`):
    #: the result is held to the one it reproduces, and this row is shown beside it, not a drift.
    instead: PublishedTable | None = None

    @property
    def difference(self) -> float:
        return self.ours - self.published

    @property
    def allowed(self) -> float:
        """The table's rule for this row (:func:`allowed_difference`), in points."""
        return allowed_difference(self.table, self.row)

    def within(self, tolerance: float | None = None) -> bool:
        """``|ours - published|`` within ``tolerance`` points, or within the table's rule when None;
        a row the result is not held to (``instead``: it reproduces a contradicting table) is no drift."""
        if self.instead is not None:
            return True
        bound = self.allowed if tolerance is None else tolerance
        return abs(self.difference) <= bound + _EPSILON


def achievable(result: Result, part: str | None, bounds: Sequence[tuple[float, float]]) -> bool:
    """Whether some accuracy ``result``'s questions can give lies within every ``(published,
    allowed)`` bound, in points: a whole count of hits out of the part's questions (of the suite's
    one part for a whole-suite row); a macro average over several parts is taken as any value."""
    low = max(published - allowed for published, allowed in bounds) - _EPSILON
    high = min(published + allowed for published, allowed in bounds) + _EPSILON
    if low > high:
        return False
    ranks = result.ranks
    if part is None and len(ranks) != 1:
        return True
    questions = len(ranks[part] if part is not None else next(iter(ranks.values())))
    if questions == 0:
        return low <= 0.0 <= high
    hits = max(0, math.ceil(low * questions / 100))
    return hits <= questions and 100 * hits / questions <= high


def contradicts(a: Check, b: Check) -> bool:
    """Whether checks ``a`` and ``b`` (one result, one cutoff) hold the result to numbers that no
    accuracy it can give meets together (:func:`achievable`): two reports of the same experiment
    that disagree by more than their rules allow, such as pyserini's 2CR page and its experiments
    page for BM25 on NQ top-100 (78.23 and 78.25 within 0.02 each, 3,610 questions)."""
    return not achievable(a.result, a.row.part, [(a.published, a.allowed), (b.published, b.allowed)])


def _choose(done: list[Check]) -> list[Check]:
    """Each check of a result at a cutoff whose row contradicts another table's row that the result
    reproduces, marked as not held (``instead``): one configuration is held to one of two
    contradicting tables, the one it reproduces, never to both."""
    groups: dict[tuple, list[int]] = {}
    for index, check in enumerate(done):
        groups.setdefault((id(check.result), check.k, check.row.suite, check.row.part), []).append(index)
    chosen = list(done)
    for indexes in groups.values():
        if len(indexes) < 2:
            continue
        passing = [done[i] for i in indexes if done[i].within()]
        for i in indexes:
            check = done[i]
            if check.within():
                continue
            other = next((p for p in passing if p.table.name != check.table.name and contradicts(check, p)), None)
            if other is not None:
                chosen[i] = dataclasses.replace(check, instead=other.table)
    return chosen


def rows_for_suite(tables: Sequence[PublishedTable], suite: str) -> list[tuple[PublishedTable, PublishedRow]]:
    """Every published row of ``suite`` (whole-suite rows, not parts), table by table."""
    return [(t, r) for t in tables for r in t.rows if r.suite == suite and r.part is None]


def has_options(result: Result, options: Mapping[str, object]) -> bool:
    """Whether the result's retriever parameters include every one of ``options``, equal (a
    boolean equals only a boolean)."""
    parameters = result.parameters
    return all(
        key in parameters and isinstance(parameters[key], bool) == isinstance(value, bool) and parameters[key] == value
        for key, value in options.items()
    )


def _recorded(parameters: object, key: str) -> list[object]:
    """Every value of ``key`` at any depth of a result's retriever parameters."""
    found: list[object] = []
    if isinstance(parameters, Mapping):
        for name, value in parameters.items():
            if name == key:
                found.append(value)
            found.extend(_recorded(value, key))
    elif isinstance(parameters, (list, tuple)):
        for value in parameters:
            found.extend(_recorded(value, key))
    return found


def in_scope(table: PublishedTable, result: Result) -> bool:
    """Whether ``result`` may be compared with ``table``: every scope parameter it records (at any
    depth of its retriever parameters) has the table's value (see the module notes)."""
    for key, value in table.scope:
        for recorded in _recorded(result.parameters, key):
            if isinstance(recorded, bool) != isinstance(value, bool) or recorded != value:
                return False
    return True


def checks(tables: Sequence[PublishedTable], results: Sequence[Result]) -> tuple[list[Check], list[tuple[PublishedTable, PublishedRow]]]:
    """Every comparison the results allow, and the reproducible rows no result covers.

    A result is compared with a row of its suite whose ``retriever`` is the result's label and
    whose ``options`` its retriever parameters all have, in the table's ``scope`` (:func:`in_scope`).
    Where two tables' rows for one result and cutoff contradict each other (:func:`contradicts`)
    and the result reproduces one, it is held to that one: the other's check carries ``instead``.
    """
    done: list[Check] = []
    missing: list[tuple[PublishedTable, PublishedRow]] = []
    for table in tables:
        for row in table.rows:
            if row.retriever is None:
                continue
            matched = [
                r for r in results
                if r.suite == row.suite and r.label == row.retriever and has_options(r, row.options) and in_scope(table, r)
            ]
            covered = False
            for result in matched:
                for k, value in row.values.items():
                    accuracy = result.accuracy(k)
                    if accuracy is None:
                        continue
                    parts, macro = accuracy
                    if row.part is not None:
                        if row.part not in parts:
                            continue
                        ours = parts[row.part]
                    else:
                        ours = macro
                    done.append(Check(table, row, result, k, value, 100 * ours))
                    covered = True
            if not covered:
                missing.append((table, row))
    return _choose(done), missing


def format_checks(done: Sequence[Check], missing: Sequence[tuple[PublishedTable, PublishedRow]], tolerance: float | None = None) -> str:
    """The comparisons made (each with its allowed difference and OK or DRIFT) and the
    reproducible rows no result covers. ``tolerance`` (points) replaces every table's rule."""
    from tabulate import tabulate

    lines: list[str] = []
    if done:
        table = [
            [c.table.name, c.row.system, c.row.suite + (f" {c.row.part}" if c.row.part else ""), c.result.label,
             f"top-{c.k}", f"{c.published:g}", f"{c.ours:.2f}", f"{c.difference:+.2f}",
             rule(c.table, c.row) if tolerance is None else f"--tolerance: ±{tolerance:g}",
             _verdict(c, tolerance), c.result.path.name if c.result.path else ""]
            for c in done
        ]
        headers = ["published", "system", "suite", "retriever", "cutoff", "published %", "ours %", "difference", "allowed (points)", "", "result"]
        lines.append(f"{len(done)} comparisons of results with published numbers:")
        lines.append(tabulate(table, headers=headers, tablefmt="github", disable_numparse=True))
    else:
        lines.append("No result has a published number to compare with.")
    if missing:
        lines.append("")
        lines.append(f"{len(missing)} published rows a harness retriever should reproduce have no result yet:")
        for table, row in missing:
            where = row.suite + (f" (part {row.part})" if row.part else "")
            options = "".join(f" -o {key}={_option(value)}" for key, value in row.options.items())
            lines.append(f"  {table.name}: {row.system} on {where}: harness run --retriever {row.retriever} --suite {row.suite}{options}")
    return "\n".join(lines) + "\n"


def _verdict(check: Check, tolerance: float | None) -> str:
    if check.instead is not None:
        return f"not held: reproduces {check.instead.name}, which this table contradicts"
    return "OK" if check.within(tolerance) else "DRIFT"


def _option(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)

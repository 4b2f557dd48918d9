"""Published numbers as data: reading a table's TOML file, and checking results against them.

A published table is one TOML file (plugins register the records, :mod:`harness.api.published`)::

    name = "karpukhin2020-table2"        # unique: [a-z0-9-]+, the file is NAME.toml
    title = "DPR, Table 2: top-20 / top-100 retrieval accuracy on the test sets"
    citation = "Karpukhin et al. 2020, ..., Table 2"
    url = "https://..."                  # optional
    note = "..."                         # optional

    [[rows]]
    system = "BM25"                      # as the paper names it
    suite = "nq"                         # a harness suite name, or a descriptive one
    values = { 20 = 59.1, 100 = 73.7 }   # k -> top-k accuracy in percent, as printed
    part = "P19"                         # optional: one part of the suite
    retriever = "bm25"                   # optional: the harness configuration that reproduces it
    note = "..."                         # optional

``harness reproduce --check`` compares every result with each published row of its suite and
retriever name (its part's number for a row with a ``part``, else the macro average), at every
cutoff both have: ``|ours - published| <= tolerance`` (fractions, as pyserini's two-click
reproductions compare: 0.02 = two points).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.api import MAX_K, PublishedRow, PublishedTable
from harness.errors import InputFileError
from harness.results.schema import Result

#: Default tolerance of ``harness reproduce --check``, on fractions (0.02 = 2 points).
TOLERANCE = 0.02

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
_TABLE_KEYS = {"name", "title", "citation", "url", "note", "rows"}
_ROW_KEYS = {"system", "suite", "values", "part", "retriever", "note"}


def read_published_table(path: str | Path) -> PublishedTable:
    """Read and validate one published table; any problem is one :class:`InputFileError`."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(path, f"invalid TOML: {exc}") from None

    def fail(problem: str, row: int | None = None):
        where = f"rows[{row}]: " if row is not None else ""
        raise InputFileError(path, where + problem)

    def text(table: dict, key: str, row: int | None = None, *, required: bool = True) -> str:
        value = table.get(key, None if required else "")
        if not isinstance(value, str) or (required and not value.strip()):
            fail(f"{key!r} must be a non-empty string" if required else f"{key!r} must be a string", row)
        return value

    extra = sorted(set(data) - _TABLE_KEYS)
    if extra:
        fail(f"unknown key {extra[0]!r}")
    name = text(data, "name")
    if not _NAME.fullmatch(name):
        fail(f"'name' must be lowercase letters, digits and dashes, got {name!r}")
    if name != path.stem:
        fail(f"'name' is {name!r} but the file is named {path.name}")
    rows_data = data.get("rows")
    if not isinstance(rows_data, list) or not rows_data:
        fail("'rows' must be a non-empty array of tables ([[rows]])")
    rows: list[PublishedRow] = []
    seen: set[tuple[str, str, str | None]] = set()
    for i, row in enumerate(rows_data):
        if not isinstance(row, dict):
            fail("each row must be a table", i)
        extra = sorted(set(row) - _ROW_KEYS)
        if extra:
            fail(f"unknown key {extra[0]!r}", i)
        values = row.get("values")
        if not isinstance(values, dict) or not values:
            fail("'values' must be a non-empty table of cutoff = percent", i)
        parsed: dict[int, float] = {}
        for k, v in values.items():
            if not (k.isascii() and k.isdigit()) or not 1 <= int(k) <= MAX_K:
                fail(f"cutoff {k!r} must be a whole number from 1 to {MAX_K}", i)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 100:
                fail(f"top-{k} must be a percentage from 0 to 100, got {v!r}", i)
            parsed[int(k)] = float(v)
        part = row.get("part")
        if part is not None and (not isinstance(part, str) or not part.strip()):
            fail("'part' must be a non-empty string", i)
        retriever = row.get("retriever")
        if retriever is not None and (not isinstance(retriever, str) or not retriever.strip()):
            fail("'retriever' must be a non-empty string", i)
        record = PublishedRow(
            system=text(row, "system", i), suite=text(row, "suite", i), values=dict(sorted(parsed.items())),
            part=part, retriever=retriever, note=text(row, "note", i, required=False),
        )
        key = (record.system, record.suite, record.part)
        if key in seen:
            fail(f"a second row of system {record.system!r} on {record.suite}" + (f" part {part}" if part else ""), i)
        seen.add(key)
        rows.append(record)
    return PublishedTable(
        name=name, title=text(data, "title"), citation=text(data, "citation"), rows=tuple(rows),
        url=text(data, "url", required=False), note=text(data, "note", required=False), source=str(path),
    )


@dataclass(frozen=True)
class Check:
    """One comparison of a result with a published number (fractions)."""

    table: PublishedTable
    row: PublishedRow
    result: Result
    k: int
    published: float
    ours: float

    @property
    def difference(self) -> float:
        return self.ours - self.published

    def within(self, tolerance: float) -> bool:
        return abs(self.difference) <= tolerance + 1e-12


def rows_for_suite(tables: Sequence[PublishedTable], suite: str) -> list[tuple[PublishedTable, PublishedRow]]:
    """Every published row of ``suite`` (whole-suite rows, not parts), table by table."""
    return [(t, r) for t in tables for r in t.rows if r.suite == suite and r.part is None]


def checks(tables: Sequence[PublishedTable], results: Sequence[Result]) -> tuple[list[Check], list[tuple[PublishedTable, PublishedRow]]]:
    """Every comparison the results allow, and the reproducible rows no result covers."""
    done: list[Check] = []
    missing: list[tuple[PublishedTable, PublishedRow]] = []
    for table in tables:
        for row in table.rows:
            if row.retriever is None:
                continue
            matched = [r for r in results if r.suite == row.suite and r.label == row.retriever]
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
                    done.append(Check(table, row, result, k, value / 100, ours))
                    covered = True
            if not covered:
                missing.append((table, row))
    return done, missing


def format_checks(done: Sequence[Check], missing: Sequence[tuple[PublishedTable, PublishedRow]], tolerance: float) -> str:
    """The comparisons made (each with OK or DRIFT) and the reproducible rows no result covers."""
    from tabulate import tabulate

    lines: list[str] = []
    if done:
        table = [
            [c.table.name, c.row.system, c.row.suite + (f" {c.row.part}" if c.row.part else ""), c.result.retriever,
             f"top-{c.k}", f"{100 * c.published:.2f}", f"{100 * c.ours:.2f}", f"{100 * c.difference:+.2f}",
             "OK" if c.within(tolerance) else "DRIFT", c.result.path.name if c.result.path else ""]
            for c in done
        ]
        headers = ["published", "system", "suite", "retriever", "cutoff", "published %", "ours %", "difference", f"within {100 * tolerance:g} pts", "result"]
        lines.append(f"{len(done)} comparisons of results with published numbers:")
        lines.append(tabulate(table, headers=headers, tablefmt="github", disable_numparse=True))
    else:
        lines.append("No result has a published number to compare with.")
    if missing:
        lines.append("")
        lines.append(f"{len(missing)} published rows a harness retriever should reproduce have no result yet:")
        for table, row in missing:
            where = row.suite + (f" (part {row.part})" if row.part else "")
            lines.append(f"  {table.name}: {row.system} on {where}: harness run --retriever {row.retriever} --suite {row.suite}")
    return "\n".join(lines) + "\n"

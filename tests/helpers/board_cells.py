"""Shared test helpers (the board tests read cells from rendered tables)."""

from __future__ import annotations

import re


def _plain(cell: str) -> str:
    """A value cell without its bold marks and confidence interval: ``**63.39** (60.6–66.2)`` -> ``63.39``."""
    return re.sub(r" \(\d+\.\d–\d+\.\d\)$", "", re.sub(r"^\*\*(.*)\*\*", r"\1", cell))


def cells(markdown: str, *, details: bool = False, raw: bool = False) -> list[list[str]]:
    """The data rows of every markdown table (outside <details> blocks unless ``details``), as
    stripped cells (header and rule lines dropped); value cells without bold and interval unless
    ``raw``."""
    rows, lines, folded = [], markdown.splitlines(), False
    for i, line in enumerate(lines):
        folded = (folded or line.startswith("<details>")) and not line.startswith("</details>")
        if (folded and not details) or not line.startswith("|") or set(line) <= set("|-: "):
            continue
        if i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: ") and lines[i + 1].startswith("|"):
            continue  # a header row
        # GitHub markdown: a pipe escaped as \| is text inside a cell, not a column break
        row = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().removeprefix("|").removesuffix("|"))]
        rows.append(row if raw else [_plain(c) for c in row])
    return rows


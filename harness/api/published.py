"""Published numbers: a paper's table of top-k accuracy, cell by cell, with its source.

Plugins register :class:`PublishedTable` records (``register_published``); the leaderboard shows
their rows beside the harness's own results and ``harness reproduce --check`` compares each result
with the published number it is meant to reproduce (rows with a ``retriever``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class PublishedRow:
    """One system on one suite (or one part of it): top-k accuracy in percent, as printed.

    ``retriever`` names the harness configuration meant to reproduce the row (a retriever name as
    the leaderboard shows it, e.g. ``bm25`` or ``hybrid:bm25+dpr-multi``); rows without one are
    shown beside results but never checked.
    """

    system: str
    suite: str
    values: Mapping[int, float]
    part: str | None = None
    retriever: str | None = None
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class PublishedTable:
    """A published table: ``name`` (unique, e.g. ``karpukhin2020-table2``), a title, the citation
    every row is shown with, and the rows."""

    name: str
    title: str
    citation: str
    rows: tuple[PublishedRow, ...]
    url: str = ""
    note: str = ""
    source: str = field(default="", compare=False)  # where the record was read from, for messages

    @property
    def description(self) -> str:
        return f"{self.title} ({len(self.rows)} rows)"

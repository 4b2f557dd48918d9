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
    shown beside results but never checked. ``options`` are retriever parameters a result must
    have to be compared with the row (e.g. ``{"checkpoint": "nq-t0-3b"}`` where one retriever
    loads several published checkpoints); empty: any parameters. ``digits`` is the number of
    decimals the row's values are printed with, where it differs from its table's.
    """

    system: str
    suite: str
    values: Mapping[int, float]
    part: str | None = None
    retriever: str | None = None
    note: str = ""
    options: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    digits: int | None = None


@dataclass(frozen=True, kw_only=True)
class PublishedTable:
    """A published table: ``name`` (unique, e.g. ``karpukhin2020-table2``), a title, the citation
    every row is shown with, and the rows.

    ``kind`` says how ``harness reproduce --check`` compares results with it (the rules are
    :func:`harness.analysis.published.allowed_difference`):

    - ``"paper"``: numbers printed in a paper, thesis, slides or README: a result may differ by
      half a unit of the last printed digit (``digits`` decimals; 81.6 allows 0.05) plus
      ``allowance`` points, which ``allowance_reason`` justifies in one line;
    - ``"reproduction"``: a reproduction's own figures (pyserini's, or the harness's earlier
      results): at most 0.02 points, pyserini's two-click reproduction check.

    ``digits`` None: the most decimals any of a row's values shows. ``version`` names the
    version of the source the numbers are copied from (arXiv version, repository commit and
    date, thesis PDF, ...).
    """

    name: str
    title: str
    citation: str
    rows: tuple[PublishedRow, ...]
    url: str = ""
    note: str = ""
    kind: str = "paper"
    digits: int | None = None
    allowance: float = 0.0
    allowance_reason: str = ""
    version: str = ""
    #: ``(parameter, value)`` pairs a result's retriever must not contradict to be compared with
    #: this table (:func:`harness.analysis.published.in_scope`), e.g. the BM25 index its numbers are for.
    scope: tuple[tuple[str, str | int | float | bool], ...] = ()
    source: str = field(default="", compare=False)  # where the record was read from, for messages

    @property
    def description(self) -> str:
        return f"{self.title} ({len(self.rows)} rows)"

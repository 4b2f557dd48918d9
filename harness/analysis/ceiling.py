"""Re-ranking against its ceiling: what a re-ranker did with what its first stage gave it.

A re-ranker re-orders the first stage's top N passages (``reranker.depth``), so its top-k can
never hold an answer the first stage's top N did not hold. A re-ranked result keeps the first
stage's first-hit ranks (``first_stage_ranks``, 0-based, ``null`` for no answer within the depth
retrieved), and from them:

- **ceiling**: the share of questions whose first-stage top N holds an answer (first-stage rank
  < N), macro-averaged over parts like every accuracy; the re-ranked top-k is at most the
  ceiling for every k, and equals it at k = N;
- **first stage top-k**: the accuracy before re-ranking;
- **wins / losses at k**: questions answered within k after re-ranking and not before (wins), or
  before and not after (losses), with the exact McNemar test of the two
  (:func:`harness.analysis.stats.mcnemar_exact`): a re-ranking that "made it worse" shows which
  questions it lost, and whether the change is more than chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis import stats
from harness.results.schema import Result


@dataclass(frozen=True)
class AtK:
    """At one cutoff: first-stage and re-ranked accuracy (fractions), wins, losses and the exact
    McNemar p-value of re-ranked against first stage."""

    k: int
    first_stage: float
    reranked: float
    wins: int
    losses: int
    p_value: float


@dataclass(frozen=True)
class Ceiling:
    """A re-ranked result against its first stage: the depth N it re-ranked, the ceiling (the
    share of questions with an answer in the first stage's top N, macro over parts), the
    questions that count (``n``) and each cutoff's :class:`AtK`."""

    label: str
    depth: int
    ceiling: float
    n: int
    at: tuple[AtK, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label, "depth": self.depth, "ceiling": self.ceiling, "questions": self.n,
            "at": {str(a.k): {"first_stage": a.first_stage, "reranked": a.reranked, "wins": a.wins,
                              "losses": a.losses, "p": a.p_value} for a in self.at},
        }


def _ranks(by_part: Mapping[str, Mapping[str, int | None]]) -> list[list[int | None]]:
    return [list(questions.values()) for questions in by_part.values()]


def ceiling_of(result: Result, ks: Sequence[int] | None = None, label: str | None = None) -> Ceiling | None:
    """The :class:`Ceiling` of a re-ranked ``result`` at cutoffs ``ks`` (default: the result's);
    None for a result without a re-ranker or without ``first_stage_ranks`` (written before they
    were recorded)."""
    reranker, first = result.reranker, result.data.get("first_stage_ranks")
    if not reranker or not isinstance(first, Mapping):
        return None
    depth = int(reranker["depth"])
    before, after = _ranks(first), _ranks(result.ranks)
    ceiling = stats.macro_mean([stats.hits(part, depth) for part in before])
    at = []
    for k in ks or result.data["k"]:
        a_hits = [stats.hits(part, k) for part in after]
        b_hits = [stats.hits(part, k) for part in before]
        test = stats.mcnemar_exact(np.concatenate(a_hits), np.concatenate(b_hits))
        at.append(AtK(k=int(k), first_stage=stats.macro_mean(b_hits), reranked=stats.macro_mean(a_hits),
                      wins=int(test.b), losses=int(test.c), p_value=float(test.p_value)))
    return Ceiling(label=label or result.label, depth=depth, ceiling=ceiling, n=sum(len(p) for p in after), at=tuple(at))


def format_ceiling(ceilings: Sequence[Ceiling]) -> str:
    """The re-ranked systems against their ceilings, one table: per cutoff the first stage's and
    the re-ranked top-k (points) and wins / losses with the exact McNemar p-value."""
    from tabulate import tabulate

    from harness.analysis.stats import format_p
    from harness.results.report import markdown_text

    rows = []
    for c in ceilings:
        for a in c.at:
            rows.append([markdown_text(c.label), f"top-{c.depth}: {100 * c.ceiling:.2f}", f"top-{a.k}",
                         f"{100 * a.first_stage:.2f}", f"{100 * a.reranked:.2f}", f"{100 * (a.reranked - a.first_stage):+.2f}",
                         f"{a.wins} / {a.losses}", format_p(a.p_value)])
    table = tabulate(rows, headers=["re-ranked system", "ceiling (first stage)", "cutoff", "first stage", "re-ranked",
                                    "change", "wins / losses", "p"], tablefmt="github", disable_numparse=True)
    return ("Re-ranking against its ceiling: the ceiling is the share of questions with an answer in the first "
            "stage's top N (no re-ranking of those N passages can do better); wins / losses are questions answered "
            "within k only after / only before re-ranking, p an exact McNemar test of the two.\n\n" + table + "\n")

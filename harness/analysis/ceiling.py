"""Re-ranking against its ceiling: what a re-ranker did with what its first stage gave it.

A re-ranker re-orders the first stage's top N passages (``reranker.depth``), so its top-k can
never hold an answer the first stage's top N did not hold. A re-ranked result keeps the first
stage's first-hit ranks (``first_stage_ranks``, 0-based, ``null`` for no answer within the depth
retrieved), and from them:

- **ceiling**: the share of questions whose first-stage top N holds an answer (first-stage rank
  < N), macro-averaged over parts like every accuracy; the re-ranked top-k is at most the
  ceiling for every k, and equals it at k = N;
- **first stage top-k**: the accuracy before re-ranking;
- **wins / losses at k**: a question is *won* at k when the re-ranked top-k holds an answer
  (re-ranked rank < k) and the first stage's top-k does not (first-stage rank ``null`` or >= k),
  and *lost* at k the other way round; both are counted and listed by part and question id (in
  the result's order of parts and questions), with the exact McNemar test of the two counts
  (:func:`harness.analysis.stats.mcnemar_exact`): a re-ranking that "made it worse" shows which
  questions it lost, and whether the change is more than chance.

``harness compare`` prints the counts and the first :data:`IDS_SHOWN` ids of each list
(:func:`format_ceiling`); ``--json`` (:meth:`Ceiling.to_json`) carries every id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis import stats
from harness.results.schema import Result

#: How many question ids of each won or lost list the text output shows before "… and N more".
IDS_SHOWN = 10

#: A question: its part and its id within the part.
Question = tuple[str, str]


@dataclass(frozen=True)
class AtK:
    """At one cutoff: first-stage and re-ranked accuracy (fractions), the questions won and lost
    (``won``, ``lost``: ``(part, question id)`` in the result's order; ``wins`` and ``losses`` their
    counts) and the exact McNemar p-value of re-ranked against first stage."""

    k: int
    first_stage: float
    reranked: float
    wins: int
    losses: int
    p_value: float
    won: tuple[Question, ...] = ()
    lost: tuple[Question, ...] = ()


@dataclass(frozen=True)
class Ceiling:
    """A re-ranked result against its first stage: the depth N it re-ranked, the ceiling (the
    share of questions with an answer in the first stage's top N, macro over parts), the
    questions that count (``n``), each cutoff's :class:`AtK` and the result's parts."""

    label: str
    depth: int
    ceiling: float
    n: int
    at: tuple[AtK, ...]
    parts: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ceiling as JSON; each cutoff's ``won`` and ``lost`` map a part to its question ids
        (parts without any are left out)."""
        return {
            "label": self.label, "depth": self.depth, "ceiling": self.ceiling, "questions": self.n,
            "at": {str(a.k): {"first_stage": a.first_stage, "reranked": a.reranked, "wins": a.wins,
                              "losses": a.losses, "p": a.p_value, "won": _by_part(a.won), "lost": _by_part(a.lost)}
                   for a in self.at},
        }


def _by_part(questions: Sequence[Question]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part, question in questions:
        out.setdefault(part, []).append(question)
    return out


def _hit(rank: int | None, k: int) -> bool:
    return rank is not None and rank < k


def ceiling_of(result: Result, ks: Sequence[int] | None = None, label: str | None = None) -> Ceiling | None:
    """The :class:`Ceiling` of a re-ranked ``result`` at cutoffs ``ks`` (default: the result's);
    None for a result without a re-ranker or without ``first_stage_ranks`` (written before they
    were recorded)."""
    reranker, first = result.reranker, result.data.get("first_stage_ranks")
    if not reranker or not isinstance(first, Mapping):
        return None
    depth = int(reranker["depth"])
    # questions paired by part and id, in the re-ranked result's order (the schema checked that
    # first_stage_ranks holds the same questions in the same order)
    questions = [(part, question) for part, by_id in result.ranks.items() for question in by_id]
    after = [result.ranks[p][q] for p, q in questions]
    before = [first[p][q] for p, q in questions]
    sizes = [len(by_id) for by_id in result.ranks.values()]

    def per_part(ranks: list[int | None], k: int) -> list[np.ndarray]:
        bounds = np.cumsum([0] + sizes)
        return [stats.hits(ranks[lo:hi], k) for lo, hi in zip(bounds[:-1], bounds[1:])]

    ceiling = stats.macro_mean(per_part(before, depth))
    at = []
    for k in ks or result.ks:
        a_hits, b_hits = per_part(after, k), per_part(before, k)
        test = stats.mcnemar_exact(np.concatenate(a_hits), np.concatenate(b_hits))
        won = tuple(q for q, a, b in zip(questions, after, before) if _hit(a, k) and not _hit(b, k))
        lost = tuple(q for q, a, b in zip(questions, after, before) if _hit(b, k) and not _hit(a, k))
        at.append(AtK(k=int(k), first_stage=stats.macro_mean(b_hits), reranked=stats.macro_mean(a_hits),
                      wins=len(won), losses=len(lost), p_value=float(test.p_value), won=won, lost=lost))
    return Ceiling(label=label or result.label, depth=depth, ceiling=ceiling, n=len(questions), at=tuple(at),
                   parts=tuple(result.ranks))


def question_list(questions: Sequence[Question], *, parts: int, shown: int = IDS_SHOWN) -> str:
    """The first ``shown`` of ``questions`` as ``PART/ID`` (just ``ID`` when ``parts`` is 1),
    comma-separated, then ``… and N more`` for the rest; raw text, for the caller to escape."""
    names = [question if parts == 1 else f"{part}/{question}" for part, question in questions[:shown]]
    more = len(questions) - len(names)
    return ", ".join(names) + (f" … and {more} more" if more > 0 else "")


def format_ceiling(ceilings: Sequence[Ceiling]) -> str:
    """The re-ranked systems against their ceilings, one table: per cutoff the first stage's and
    the re-ranked top-k (points) and wins / losses with the exact McNemar p-value; then, per system
    and cutoff with any, the questions won and lost (:func:`question_list`: the first
    :data:`IDS_SHOWN` ids of each, named ``PART/ID`` when the result has several parts). Names and
    ids are markdown text (:func:`~harness.results.report.markdown_text`)."""
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
    lists = []
    for c in ceilings:
        for a in c.at:
            if not (a.won or a.lost):
                continue
            sides = [f"{what} {len(qs)}" + (f" ({markdown_text(question_list(qs, parts=len(c.parts)))})" if qs else "")
                     for what, qs in (("won", a.won), ("lost", a.lost))]
            lists.append(f"- {markdown_text(c.label)}, top-{a.k}: {'; '.join(sides)}")
    text = ("Re-ranking against its ceiling: the ceiling is the share of questions with an answer in the first "
            "stage's top N (no re-ranking of those N passages can do better); wins / losses are questions answered "
            "within k only after / only before re-ranking, p an exact McNemar test of the two.\n\n" + table + "\n")
    if lists:
        text += (f"\nQuestions won and lost at each cutoff (ids, as part/id where a result has several parts; "
                 f"the first {IDS_SHOWN} of each, every one in --json):\n\n" + "\n".join(lists) + "\n")
    return text

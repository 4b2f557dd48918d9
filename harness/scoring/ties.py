"""Ties at the cutoffs: where equal scores, not the retriever, decide whether a question counts.

A ranking is a list of hits best first; hits of equal score form a *tie group*, positions
``[a, b)``. A tie group *straddles* cutoff ``k`` when ``a < k < b``: which of its members are in the
top ``k`` is the ranking's tie order, which no score justifies. It *decides* the question's top-k
hit when some tie order gives a hit and another does not:

- no passage above the group holds an answer (the first-hit rank ``r >= a``),
- the group holds one (``r < b``), and
- the group holds at least ``k - a`` passages without one (they can fill the ``k - a`` places).

:func:`tie_report` counts, at each cutoff, the questions whose ranking has a tie straddling it
(``tied``) and those whose top-k hit it decides (``decided``): the top-k accuracy moves by at most
``decided / n`` with the tie order. Only the hits a ranking holds are seen: a tie that runs past its
last hit is counted over the hits there (the deepest cutoff never straddles).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.api import MatchMode, Question


def tie_group(scores: Sequence[float], k: int) -> tuple[int, int] | None:
    """The tie group ``[a, b)`` straddling cutoff ``k`` (``scores`` best first), or None."""
    if not 0 < k < len(scores) or scores[k - 1] != scores[k]:
        return None
    a, b = k - 1, k + 1
    while a > 0 and scores[a - 1] == scores[k]:
        a -= 1
    while b < len(scores) and scores[b] == scores[k]:
        b += 1
    return a, b


def decided_by_tie(
    passage_ids: Sequence[str],
    scores: Sequence[float],
    first_hit: int | None,
    k: int,
    has_answer,
) -> bool | None:
    """Whether the top-``k`` hit depends on the tie order (None: no tie straddles ``k``);
    ``has_answer(passage_id)`` is the DPR answer test, asked only of the tie group's members."""
    group = tie_group(scores, k)
    if group is None:
        return None
    a, b = group
    if first_hit is None or not a <= first_hit < b:
        return False
    without = sum(1 for pid in passage_ids[a:b] if not has_answer(pid))
    return without >= k - a


def tie_report(
    questions: Sequence[Question],
    rankings: Sequence[Sequence[Any]],
    first_hits: Sequence[int | None],
    passage_text,
    *,
    mode: MatchMode,
    ks: Sequence[int],
) -> dict[str, dict[str, int]]:
    """``{"tied": {k: n}, "decided": {k: n}}`` over ``questions`` (see the module notes);
    ``rankings`` hold :class:`~harness.api.Hit` records, ``first_hits`` their first-hit ranks."""
    from harness.scoring.matching import AnswerMatcher, prepare

    tied = {str(k): 0 for k in ks}
    decided = {str(k): 0 for k in ks}
    prepared: dict[str, str] = {}

    for question, ranking, first in zip(questions, rankings, first_hits):
        scores = [hit.score for hit in ranking]
        if len(set(scores)) == len(scores):
            continue
        ids = [hit.passage_id for hit in ranking]
        matcher = AnswerMatcher(question.answers, mode=mode)

        def has_answer(pid: str) -> bool:
            if pid not in prepared:
                prepared[pid] = prepare(passage_text(pid), mode)
            return matcher.matches_prepared(prepared[pid])

        for k in ks:
            verdict = decided_by_tie(ids, scores, first, k, has_answer)
            if verdict is None:
                continue
            tied[str(k)] += 1
            decided[str(k)] += int(verdict)
    return {"tied": tied, "decided": decided}


def describe_ties(report: Mapping[str, Mapping[str, int]], questions: int) -> str | None:
    """One line on the cutoffs where ties decide questions, or None when they decide none."""
    decided = {k: n for k, n in report.get("decided", {}).items() if n}
    if not decided:
        return None
    where = ", ".join(f"top-{k}: {n} of {questions}" for k, n in decided.items())
    return (f"equal scores decide whether a question counts ({where}); their order is the retriever's, "
            "so the top-k accuracy there depends on tie order by up to that share (the result's 'ties' field)")

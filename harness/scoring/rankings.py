"""What every ranking must be before it is scored, whoever produced it (a retriever, a run file).

A ranking is valid when it holds at most ``depth`` hits, each a non-empty passage id that appears
once, with finite real scores that never increase down the list (ties allowed), and, when a corpus
is given, every passage id, not only those above the first hit, is one of its passages. A broken
ranking is a one-line :class:`~harness.errors.HarnessError` naming its source, the question and
the position, never a silently wrong number (a reversed ranking scores near zero; a NaN score
sorts anywhere).
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from collections.abc import Callable, Sequence

from harness.errors import HarnessError


def check_ranking(
    hits: Sequence[tuple[str, float]],
    *,
    question: str,
    source: str,
    depth: int | None = None,
    known: Callable[[str], bool] | None = None,
) -> None:
    """Raise :class:`HarnessError` unless ``hits`` (``(passage id, score)`` best first) is a valid
    ranking; ``source`` names who produced it (``retriever 'bm25'``, ``run.trec``)."""

    def fail(problem: str) -> None:
        raise HarnessError(f"{source}: question {question!r}: {problem}")

    if depth is not None and len(hits) > depth:
        fail(f"{len(hits)} hits where at most {depth} were asked for")
    seen: dict[str, int] = {}
    previous = math.inf
    for position, (passage_id, score) in enumerate(hits):
        if not isinstance(passage_id, str) or not passage_id:
            fail(f"hit {position} has passage id {passage_id!r}, not a non-empty string")
        if passage_id in seen:
            fail(f"passage {passage_id!r} is ranked twice (at {seen[passage_id]} and {position})")
        seen[passage_id] = position
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
            fail(f"hit {position} (passage {passage_id!r}) has score {score!r}, not a finite number")
        if score > previous:
            fail(
                f"scores are not in descending order: hit {position} (passage {passage_id!r}) scores "
                f"{score!r} after {previous!r}"
            )
        previous = score
        if known is not None and not known(passage_id):
            fail(f"hit {position} names passage {passage_id!r}, which is not in the corpus")


def check_columns(
    passage_ids: Sequence[str],
    scores: Sequence[float],
    *,
    question: str,
    source: str,
    depth: int | None = None,
) -> None:
    """:func:`check_ranking` for a ranking held as two aligned lists (ids, float scores): the
    common valid case is checked with a few whole-list passes, and any failure is worded by
    :func:`check_ranking` itself."""
    ok = (
        len(passage_ids) == len(scores)
        and (depth is None or len(passage_ids) <= depth)
        and all(type(pid) is str and pid for pid in passage_ids)
        and len(set(passage_ids)) == len(passage_ids)
        and all(type(score) is float for score in scores)
        and all(map(math.isfinite, scores))
        and all(map(operator.ge, scores, itertools.islice(scores, 1, None)))
    )
    if not ok:
        if len(passage_ids) != len(scores):
            raise ValueError(f"{len(passage_ids)} passage ids but {len(scores)} scores")
        check_ranking(list(zip(passage_ids, scores)), question=question, source=source, depth=depth)


def corpus_has(corpus) -> Callable[[str], bool]:
    """``passage_id in corpus`` through the :class:`~harness.api.Corpus` protocol's ``get``; each
    passage found is remembered, so rankings that share passages look each one up once."""
    present: set[str] = set()

    def has(passage_id: str) -> bool:
        if passage_id in present:
            return True
        try:
            corpus.get(passage_id)
        except KeyError:
            return False
        present.add(passage_id)
        return True

    return has

"""Re-ranking a first stage's rankings: what ``harness run --rerank`` and ``harness score --rerank``
do between retrieval and scoring.

>>> from harness.scoring.rerank import rerank_rankings
>>> reranked = rerank_rankings(loaded.value, queries, ids, rankings, 100, context,   # doctest: +SKIP
...                            name="upr", passage=corpus.get)

Each question's top ``depth`` hits become :class:`~harness.api.Candidate` records (hit and
passage) handed to the re-ranker in batches. Its answer is checked: one ranking per question,
each holding every candidate exactly once as a :class:`~harness.api.Hit` with a finite score; a
broken answer is a one-line :class:`~harness.errors.HarnessError` naming the re-ranker and the
question. The candidates are then sorted by the new score, higher first, ties kept in first-stage
order (a stable sort), so the result never depends on the order a re-ranker returns its hits in.

The first stage's hits below ``depth`` follow in their first-stage order, with scores moved below
the lowest re-ranked score (``lowest - 1``, ``lowest - 2``, ...) so that every ranking stays in
descending score order: top-k for k above ``depth`` still counts exactly the first stage's top-k
set, as in pyserini's and UPR's evaluations.

The result file records the chain as ``retriever`` (the first stage) plus ``reranker``
(:func:`reranker_record`): the depth asked for and, when no question had that many first-stage
hits, the most any question actually had re-ranked (:func:`most_reranked`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any

from harness.api import Candidate, Hit, Passage, Reranker, RunContext
from harness.errors import HarnessError
from harness.util.progress import progress

__all__ = ["RERANK_BATCH", "check_depth", "default_depth", "most_reranked", "rerank_rankings", "reranker_record"]

#: Questions handed to a re-ranker per ``rerank`` call (progress is reported between batches).
RERANK_BATCH = 16


def check_depth(depth: object, *, flag: str = "--rerank-depth") -> int:
    """``depth`` as a positive integer no deeper than harness retrieves; else a one-line error."""
    from harness.api import MAX_K

    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise HarnessError(f"{flag} must be a positive integer, got {depth!r}")
    if depth > MAX_K:
        raise HarnessError(f"{flag}: {depth} is deeper than harness retrieves (at most {MAX_K})")
    return depth


def default_depth(spec: object) -> int:
    """A re-ranker spec's own depth, or :data:`~harness.api.DEFAULT_RERANK_DEPTH`."""
    from harness.api import DEFAULT_RERANK_DEPTH

    depth = getattr(spec, "depth", None)
    return DEFAULT_RERANK_DEPTH if depth is None else depth


def reranker_record(
    name: str, plugin: str, parameters: Mapping[str, Any], depth: int, reranked: int | None = None
) -> dict[str, Any]:
    """The result file's ``reranker`` block: which re-ranker, from which plugin, with what
    parameters, over how many of the first stage's hits (``depth``, as asked) and, when no
    question had that many, ``reranked``: the most hits any question actually had re-ranked
    (:func:`most_reranked`; absent when it is ``depth``)."""
    record = {"name": name, "plugin": plugin, "parameters": dict(parameters), "depth": depth}
    if reranked is not None and reranked < depth:
        record["reranked"] = reranked
    return record


def most_reranked(rankings: Iterable[Sized], depth: int) -> int:
    """The most first-stage hits :func:`rerank_rankings` re-ranks for any question of
    ``rankings`` at ``depth``: ``min(depth, hits)`` varies by question; this is its largest (0
    when no question has a hit)."""
    return max((min(depth, len(ranking)) for ranking in rankings), default=0)


def _checked(
    source: str, question: str, candidates: Sequence[Candidate], returned: object
) -> list[tuple[float, int]]:
    """``(score, first-stage position)`` per candidate, in first-stage order, from a re-ranker's
    answer for one question; anything but every candidate once with a finite score is an error."""

    def fail(problem: str) -> None:
        raise HarnessError(f"{source}: question {question!r}: {problem}")

    if not isinstance(returned, Sequence) or isinstance(returned, (str, bytes)):
        fail(f"returned a {type(returned).__name__}, not a list of harness.api.Hit")
    position = {c.passage_id: i for i, c in enumerate(candidates)}
    scores: list[float | None] = [None] * len(candidates)
    for n, hit in enumerate(returned):
        if not isinstance(hit, Hit):
            fail(f"hit {n} is a {type(hit).__name__}, not a harness.api.Hit")
        where = position.get(hit.passage_id)
        if where is None:
            fail(f"returned passage {hit.passage_id!r}, which is not among its {len(candidates)} candidates")
        if scores[where] is not None:
            fail(f"returned passage {hit.passage_id!r} twice")
        score = hit.score
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
            fail(f"passage {hit.passage_id!r} has score {score!r}, not a finite number")
        scores[where] = float(score)
    if len(returned) != len(candidates):
        missing = next(c.passage_id for c, s in zip(candidates, scores) if s is None)
        fail(f"returned {len(returned)} hits for {len(candidates)} candidates (first left out: {missing!r})")
    return [(s, i) for i, s in enumerate(scores)]  # type: ignore[misc]


def _reordered(candidates: Sequence[Candidate], scored: list[tuple[float, int]], tail: Sequence[Hit]) -> list[Hit]:
    order = sorted(scored, key=lambda item: -item[0])  # stable: ties stay in first-stage order
    hits = [Hit(passage_id=candidates[i].passage_id, score=score) for score, i in order]
    lowest = order[-1][0] if order else 0.0
    hits.extend(Hit(passage_id=h.passage_id, score=lowest - (j + 1)) for j, h in enumerate(tail))
    return hits


def rerank_rankings(
    reranker: Reranker,
    queries: Sequence[str],
    question_ids: Sequence[str],
    rankings: Sequence[Sequence[Hit]],
    depth: int,
    context: RunContext,
    *,
    name: str = "?",
    passage: Callable[[str], Passage],
) -> list[list[Hit]]:
    """Re-rank each question's top ``depth`` hits with ``reranker`` (named ``name`` in errors);
    ``passage(id)`` gives a hit's passage (``corpus.get``, or a run's carried text) and raises
    ``KeyError`` for an unknown id. Returns the new rankings, aligned with ``rankings``."""
    if not (len(queries) == len(question_ids) == len(rankings)):
        raise ValueError("queries, question_ids and rankings must be aligned")
    check_depth(depth)
    source = f"re-ranker {name!r}"

    def candidate(hit: Hit, question: str) -> Candidate:
        try:
            return Candidate(hit=hit, passage=passage(hit.passage_id))
        except KeyError:
            raise HarnessError(
                f"question {question!r}: passage {hit.passage_id!r} of the first stage has no text to re-rank"
            ) from None

    out: list[list[Hit]] = []
    with progress(total=len(queries), desc="rerank", unit="q", enabled=context.progress) as bar:
        for start in range(0, len(queries), RERANK_BATCH):
            stop = start + RERANK_BATCH
            ids = question_ids[start:stop]
            batch = [
                [candidate(hit, qid) for hit in list(ranking)[:depth]]
                for qid, ranking in zip(ids, rankings[start:stop])
            ]
            returned = reranker.rerank(list(queries[start:stop]), batch, context)
            if not isinstance(returned, Sequence) or len(returned) != len(batch):
                got = len(returned) if isinstance(returned, Sequence) else type(returned).__name__
                raise HarnessError(f"{source} returned {got} rankings for {len(batch)} questions")
            for qid, candidates, answer, ranking in zip(ids, batch, returned, rankings[start:stop]):
                scored = _checked(source, qid, candidates, answer)
                out.append(_reordered(candidates, scored, list(ranking)[depth:]))
            bar.update(len(batch))
    return out

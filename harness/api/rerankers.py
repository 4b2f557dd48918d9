"""Re-rankers: a second stage that scores a first stage's top-n again, the :class:`Reranker`
protocol and the :class:`RerankerSpec` plugins register.

A re-ranker receives, for each question, the first stage's top hits with their passages
(:class:`Candidate`, best first) and returns one ranking per question holding **every** candidate
exactly once with its new score (in any order). The harness checks that (same count of rankings,
only candidates, none twice or left out, finite scores) and sorts each ranking by the new score,
ties broken by first-stage order (:mod:`harness.scoring.rerank`); a broken answer is a one-line error
naming the re-ranker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.api.corpus import Passage
from harness.api.models import MetaDeclaration
from harness.api.options import Options
from harness.api.retrievers import Hit, Ranking, RunContext

#: How many of the first stage's hits are re-ranked unless ``--rerank-depth`` says otherwise.
DEFAULT_RERANK_DEPTH = 100


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One first-stage hit handed to a re-ranker, with its passage (id, title and text)."""

    hit: Hit
    passage: Passage

    @property
    def passage_id(self) -> str:
        return self.hit.passage_id


@runtime_checkable
class Reranker(Protocol):
    """A loaded re-ranker."""

    def parameters(self) -> Mapping[str, Any]:
        """Every setting that changes the scores (recorded in the result file and leaderboard)."""
        ...

    def rerank(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], context: RunContext
    ) -> list[Ranking]:
        """For each question, a :class:`Hit` per candidate with the re-ranker's score (higher is
        better); ``context.cache_dir`` may hold score caches."""
        ...


@dataclass(frozen=True, kw_only=True)
class RerankerSpec:
    """A re-ranker a plugin offers. ``load(**options)`` returns a :class:`Reranker`.

    ``options`` documents the keyword options ``load`` accepts, with their defaults or
    :class:`~harness.api.Option` declarations (checked before ``load``); users set them
    with ``harness run --rerank NAME -R key=value`` (``-o`` stays the first stage's). ``depth`` is
    how many first-stage hits it re-ranks unless ``--rerank-depth`` says otherwise (``None``:
    :data:`DEFAULT_RERANK_DEPTH`). ``meta``: the model's metadata, as :class:`~harness.api.RetrieverSpec`'s.
    """

    name: str
    description: str
    load: Callable[..., Reranker]
    options: Mapping[str, Any] = field(default_factory=dict)
    depth: int | None = None
    meta: MetaDeclaration = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", Options(self.options))

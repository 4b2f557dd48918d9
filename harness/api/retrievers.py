"""Retrievers: hits and rankings, the :class:`Retriever` protocol, what a run hands it
(:class:`RunContext`), and the :class:`RetrieverSpec` plugins register."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from harness.api.corpus import Corpus
from harness.api.models import MetaDeclaration
from harness.api.options import Options


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One retrieved passage: its id and the retriever's score."""

    passage_id: str
    score: float


#: A retriever's output: for each query, its hits best first.
Ranking = Sequence[Hit]

#: The deepest cutoff, and so the most hits per query, anyone may ask a retriever for.
MAX_K = 10_000


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """What the harness hands a retriever besides its input."""

    #: A directory the retriever may keep indexes in; reused across runs.
    cache_dir: Path
    #: How many threads the retriever may use.
    threads: int = 1
    #: Whether to show progress bars.
    progress: bool = True
    #: The suite being evaluated, when there is one (some retrievers default settings per suite).
    suite: str | None = None


@runtime_checkable
class Retriever(Protocol):
    """A loaded retriever. The harness calls ``index`` once per corpus, then ``search``."""

    def parameters(self) -> Mapping[str, Any]:
        """Every setting that changes the ranking (recorded in the result file and leaderboard)."""
        ...

    def index(self, corpus: Corpus, context: RunContext) -> None:
        """Build or reuse whatever the retriever needs to search ``corpus``."""
        ...

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[Ranking]:
        """For each query, the top ``k`` hits, best first."""
        ...


@runtime_checkable
class PartAwareRetriever(Retriever, Protocol):
    """A retriever that searches each question knowing its part of the suite (e.g. one question
    encoder per EntityQuestions relation). The harness calls ``search_parts`` instead of
    ``search`` when the retriever has it; ``parts[i]`` names the part of ``queries[i]``."""

    def search_parts(self, queries: Sequence[str], parts: Sequence[str], k: int, context: RunContext) -> list[Ranking]:
        ...


@runtime_checkable
class BatchesSearches(Retriever, Protocol):
    """A retriever that says how many questions it wants per ``search`` call. The harness reads
    ``search_batch`` before each call (after ``index``) and hands over that many questions, or
    :data:`harness.scoring.retrieval.SEARCH_BATCH` when it is ``None``. A search whose cost is one
    pass over a large store whatever the number of questions (an exact scan of a memory-mapped
    index) answers every question of a suite in as few passes as its memory allows."""

    @property
    def search_batch(self) -> int | None:
        ...


@runtime_checkable
class ReportsCompute(Protocol):
    """A retriever or re-ranker that says how it computed: ``compute()`` returns a JSON object of
    facts that do not change the ranking but decide what a number cost and how it was rounded
    (device kind and count, precision of encoding, search and scores, index bytes). The harness
    calls it after the run and records it in the result's ``compute`` block, beside the world
    size; it is not part of the configuration's identity."""

    def compute(self) -> Mapping[str, Any]:
        ...


@dataclass(frozen=True, kw_only=True)
class RetrieverSpec:
    """A retriever a plugin offers. ``load(**options)`` returns a :class:`Retriever`.

    ``options`` documents the keyword options ``load`` accepts, with their defaults or
    :class:`~harness.api.Option` declarations (type, bounds; checked and converted before ``load``
    is called); users set them with ``harness run --retriever NAME -o key=value``. The spec keeps
    them as an :class:`~harness.api.Options` (still a mapping of name -> default).

    A spec with an ``argument`` is used as ``NAME:ARGUMENT`` (e.g. ``hybrid:bm25+dpr-multi``); its
    ``load`` then receives the text after the colon as ``argument=`` besides the options, and
    ``argument`` says what that text is.

    ``meta``: the configuration's model metadata (:class:`~harness.api.ModelMeta`: size, license,
    reference, the training sets it saw), or a function of its options (a result's recorded
    parameters) returning one; None when the plugin declares none (everything unknown).
    """

    name: str
    description: str
    load: Callable[..., Retriever]
    options: Mapping[str, Any] = field(default_factory=dict)
    argument: str | None = None
    meta: MetaDeclaration = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", Options(self.options))

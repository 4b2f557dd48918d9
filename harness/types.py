"""The records every part of the harness exchanges, and the protocols plugins implement.

Records are frozen, keyword-only dataclasses. Specs (:class:`RetrieverSpec`, :class:`SuiteSpec`,
:class:`MetricSpec`) are cheap metadata: constructing one must not import torch, pyserini or
anything heavy, and must not read data. Heavy work happens in a spec's ``load``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

#: How "contains an answer" is decided; declared by a suite, never chosen by the user.
MatchMode = Literal["string", "regex"]
MATCH_MODES: tuple[str, ...] = ("string", "regex")

#: The k values reported when neither the suite nor the user says otherwise.
DEFAULT_K: tuple[int, ...] = (1, 5, 20, 100)


@dataclass(frozen=True, kw_only=True, slots=True)
class Question:
    """One question with its gold answers (strings, or regexes in ``regex`` mode)."""

    id: str
    text: str
    answers: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Passage:
    """One retrieval unit of a corpus: DPR's ``id``, ``title`` and ``text``."""

    id: str
    title: str
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One retrieved passage: its id and the retriever's score."""

    passage_id: str
    score: float


#: A retriever's output: for each query, its hits best first.
Ranking = Sequence[Hit]


@runtime_checkable
class Corpus(Protocol):
    """A passage collection that retrievers index and the scorer reads passage text from.

    Implementations may keep passages in memory or on disk; ``fingerprint`` must change whenever
    any passage's id, title or text changes (caches are keyed by it).
    """

    name: str

    @property
    def fingerprint(self) -> str: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Passage]: ...

    def get(self, passage_id: str) -> Passage:
        """The passage with this id; raises ``KeyError`` when there is none."""
        ...


class InMemoryCorpus:
    """A :class:`Corpus` held in a dict; for generated and small corpora."""

    def __init__(self, name: str, passages: Iterable[Passage]):
        self.name = name
        self._passages: dict[str, Passage] = {}
        for passage in passages:
            if passage.id in self._passages:
                raise ValueError(f"corpus {name!r}: duplicate passage id {passage.id!r}")
            self._passages[passage.id] = passage
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            from harness.fingerprint import corpus_fingerprint  # imports this module

            self._fingerprint = corpus_fingerprint(self._passages.values())
        return self._fingerprint

    def __len__(self) -> int:
        return len(self._passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self._passages.values())

    def get(self, passage_id: str) -> Passage:
        return self._passages[passage_id]


@dataclass(frozen=True, kw_only=True)
class Part:
    """A named subset of a suite's questions, scored on its own (e.g. one EntityQuestions relation)."""

    name: str
    questions: tuple[Question, ...]


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A loaded benchmark: question parts, the corpus they are answered from, and the matching rule.

    With several parts the suite's headline number is the unweighted mean over parts (the macro
    average EntityQuestions reports); with one part it is that part's number.
    """

    name: str
    parts: tuple[Part, ...]
    corpus: Corpus
    match: MatchMode = "string"
    default_k: tuple[int, ...] = DEFAULT_K
    synthetic: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if self.match not in MATCH_MODES:
            raise ValueError(f"suite {self.name!r}: match must be one of {MATCH_MODES}, got {self.match!r}")
        if not self.parts:
            raise ValueError(f"suite {self.name!r} has no parts")
        names = [p.name for p in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"suite {self.name!r}: duplicate part names")
        ids = [q.id for p in self.parts for q in p.questions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"suite {self.name!r}: question ids are not unique across parts")

    @property
    def questions(self) -> tuple[Question, ...]:
        """All questions, part by part."""
        return tuple(q for part in self.parts for q in part.questions)

    @property
    def questions_fingerprint(self) -> str:
        """sha256 over every part's name and its questions' ids, texts and answers."""
        digest = hashlib.sha256()
        for part in self.parts:
            record = [part.name, [[q.id, q.text, list(q.answers)] for q in part.questions]]
            digest.update(json.dumps(record, ensure_ascii=False).encode("utf-8"))
        return "sha256:" + digest.hexdigest()


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


@dataclass(frozen=True, kw_only=True)
class RetrieverSpec:
    """A retriever a plugin offers. ``load(**options)`` returns a :class:`Retriever`.

    ``options`` documents the keyword options ``load`` accepts, with their defaults; users set them
    with ``harness run --retriever NAME -o key=value``.

    A spec with an ``argument`` is used as ``NAME:ARGUMENT`` (e.g. ``hybrid:bm25+dpr-multi``); its
    ``load`` then receives the text after the colon as ``argument=`` besides the options, and
    ``argument`` says what that text is.
    """

    name: str
    description: str
    load: Callable[..., Retriever]
    options: Mapping[str, Any] = field(default_factory=dict)
    argument: str | None = None


@dataclass(frozen=True, kw_only=True)
class SuiteSpec:
    """A suite a plugin offers. ``load()`` returns a :class:`Suite` (this may read or generate data)."""

    name: str
    description: str
    load: Callable[[], Suite]
    match: MatchMode = "string"
    synthetic: bool = False


#: First-hit rank of each question: 0-based position of the first answer-bearing passage, or None.
FirstHitRanks = Sequence[int | None]


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """A metric computed from first-hit ranks at a cutoff k: ``compute(ranks, k) -> float`` in [0, 1]."""

    name: str
    description: str
    compute: Callable[[FirstHitRanks, int], float]
    #: Short column label; ``{k}`` is replaced by the cutoff, e.g. ``"top-{k}"``.
    label: str = "{name}@{k}"

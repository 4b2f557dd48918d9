"""Suites: questions, parts, the loaded :class:`Suite` and the :class:`SuiteSpec` plugins register."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.api.corpus import Corpus

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
class SuiteSpec:
    """A suite a plugin offers. ``load()`` returns a :class:`Suite` (this may read or generate data)."""

    name: str
    description: str
    load: Callable[[], Suite]
    match: MatchMode = "string"
    synthetic: bool = False

"""Suites: questions, parts, the loaded :class:`Suite` and the :class:`SuiteSpec` plugins register."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from harness.api.corpus import Corpus, InMemoryCorpus, Passage

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

    @classmethod
    def from_lists(
        cls,
        questions: Sequence[str],
        answers: Sequence[Sequence[str] | str],
        passages: Sequence[str | tuple[str, str] | Mapping[str, str] | Passage],
        *,
        name: str = "my-suite",
        question_ids: Sequence[str] | None = None,
        passage_ids: Sequence[str] | None = None,
        parts: Sequence[str] | None = None,
        match: MatchMode = "string",
        default_k: Sequence[int] = DEFAULT_K,
        synthetic: bool = False,
        description: str = "",
    ) -> Suite:
        """A suite from plain Python lists, no spec files: ``questions[i]`` is answered by any of
        ``answers[i]`` (a list of texts, or one text), from a corpus of ``passages``.

        A passage is its text, a ``(title, text)`` pair, a mapping with ``text`` (and ``title``,
        ``id``) or a :class:`~harness.api.Passage`; its id is ``passage_ids[i]``, else its own, else
        ``p1``, ``p2``, ... in order. Questions are ``q1``, ``q2``, ... unless ``question_ids``
        says otherwise; ``parts[i]`` puts question ``i`` in a part of that name (default: one part,
        ``all``). Anything malformed is a ``ValueError`` naming the list and the position.

        >>> suite = Suite.from_lists(["Who wrote Hamlet?"], [["Shakespeare"]],
        ...                          [("Hamlet", "Hamlet is a tragedy by William Shakespeare.")])
        >>> suite.questions[0], len(suite.corpus)
        (Question(id='q1', text='Who wrote Hamlet?', answers=('Shakespeare',)), 1)
        """
        questions = _as_list(questions, "questions")
        answers = _as_list(answers, "answers")
        passages = _as_list(passages, "passages")
        if len(answers) != len(questions):
            raise ValueError(f"{len(questions)} questions but {len(answers)} answer lists")
        if not questions:
            raise ValueError("no questions")
        if not passages:
            raise ValueError("no passages")
        q_ids = [f"q{i + 1}" for i in range(len(questions))] if question_ids is None else _texts(question_ids, "question_ids", len(questions))
        part_of = ["all"] * len(questions) if parts is None else _texts(parts, "parts", len(questions))
        given_ids = None if passage_ids is None else _texts(passage_ids, "passage_ids", len(passages))

        records: list[Question] = []
        for i, (text, gold) in enumerate(zip(questions, answers)):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"questions[{i}] must be non-empty text, got {text!r}")
            gold = (gold,) if isinstance(gold, str) else gold
            if not isinstance(gold, (list, tuple)) or not gold:
                raise ValueError(f"answers[{i}] must be a text or a non-empty list of texts, got {gold!r}")
            for j, answer in enumerate(gold):
                if not isinstance(answer, str) or not answer.strip():
                    raise ValueError(f"answers[{i}][{j}] must be non-empty text, got {answer!r}")
            records.append(Question(id=q_ids[i], text=text, answers=tuple(gold)))

        corpus: list[Passage] = []
        for i, item in enumerate(passages):
            own_id, title, text = None, "", item
            if isinstance(item, Passage):
                own_id, title, text = item.id, item.title, item.text
            elif isinstance(item, tuple) and len(item) == 2:
                title, text = item
            elif isinstance(item, Mapping):
                own_id, title, text = item.get("id"), item.get("title", ""), item.get("text")
            if not isinstance(text, str) or not isinstance(title, str):
                raise ValueError(f"passages[{i}] must be a text, a (title, text) pair, a mapping with 'text' or a "
                                 f"Passage, got {item!r}")
            pid = given_ids[i] if given_ids is not None else own_id if own_id is not None else f"p{i + 1}"
            if not isinstance(pid, str) or not pid:
                raise ValueError(f"passages[{i}]: the id must be non-empty text, got {pid!r}")
            corpus.append(Passage(id=pid, title=title, text=text))

        grouped: dict[str, list[Question]] = {}
        for part, question in zip(part_of, records):
            grouped.setdefault(part, []).append(question)
        return cls(
            name=name,
            parts=tuple(Part(name=part, questions=tuple(qs)) for part, qs in grouped.items()),
            corpus=InMemoryCorpus(f"{name}-corpus", corpus),
            match=match,
            default_k=tuple(default_k),
            synthetic=synthetic,
            description=description,
        )

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


def _as_list(values: object, what: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ValueError(f"{what} must be a list, got {type(values).__name__}")
    return list(values)


def _texts(values: object, what: str, count: int) -> list[str]:
    values = _as_list(values, what)
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} entries for {count}")
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{what}[{i}] must be non-empty text, got {value!r}")
    return values


@dataclass(frozen=True, kw_only=True)
class SuiteSpec:
    """A suite a plugin offers. ``load()`` returns a :class:`Suite` (this may read or generate data).

    ``train``: the names of the training sets that are this suite's own training split (a
    training set or suite name: ``biencoder-nq-train`` for ``nq``): a model trained on one of them
    is evaluated in-domain here, one trained on none zero-shot (:func:`harness.api.models.domain`);
    None when unknown, ``()`` when the suite has no training split."""

    name: str
    description: str
    load: Callable[[], Suite]
    match: MatchMode = "string"
    synthetic: bool = False
    train: tuple[str, ...] | None = None

"""Matching a run file's entries to the suite's questions, as the format's ``match`` says
(:data:`harness.api.runformats.RunMatch`; :class:`_Placer` picks the aligner): ``dpr-json`` list
members answer the suite's questions by position (member *i* is question *i*, and its
``question`` must equal the suite's), as DPR's own files do (:class:`_Aligner`). ``upr-json`` and
``rankify-json`` list members are matched by question TEXT, never by position
(:class:`_TextAligner`): each member's ``question`` must be a question of the suite (after the
references' only normalisation, ``’`` to ``'``; for Rankify also with the ``?`` its ``Question``
class appends), so a file in another order scores the same. A text the suite has several times
goes to its questions in suite order when their answers are the same, else to the one whose
answers equal the member's; a question matching no suite question, more members than the suite
has questions of that text, or a text whose answers single out none of its questions is an error.
While a per-part member is read (:data:`harness.runfiles.archives.PER_PART`) its entries are
matched by text against that part's questions only. Object members are matched by qid (suite
ids, or positions) and their question checked, as the one-piece readers do; items of a
``"record"`` format by id or question text (:class:`_RecordAligner`). Every problem is one
:class:`~harness.errors.InputFileError` naming the file and the entry's line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.api import Question, RunEntry, RunFormatSpec
from harness.errors import InputFileError

#: A run's entry (:data:`harness.runfiles.stream.Entry`: the same record).
Entry = RunEntry

_INDEX = re.compile(r"[0-9]+")


def _short(value: Any, limit: int = 60) -> str:
    """A value for a message, cut to ``limit`` characters (the stream engine's messages use it too)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Aligner:
    """Puts streamed entries on the suite's questions, with the one-piece readers' rules."""

    def __init__(self, questions: Sequence[Question], name: str, allow_index: bool):
        self.questions, self.name, self.allow_index = questions, name, allow_index
        self.positions = {q.id: i for i, q in enumerate(questions)}
        self.by: str | None = None  # "id" or "index" for object-shaped runs, fixed by the first entry
        self.seen: dict[int, tuple[str, int]] = {}  # suite position -> the qid and line of the entry that took it
        self.mismatched: list[str] = []

    def target(self, entry: Entry, positional: bool) -> int:
        n = len(self.questions)
        if positional:
            target = int(entry.qid)
            if target >= n:
                raise InputFileError(self.name, f"run has more than {n} questions, the suite has {n} (list runs are positional)", line=entry.line)
        else:
            as_id = entry.qid in self.positions
            as_index = self.allow_index and _INDEX.fullmatch(entry.qid) is not None and int(entry.qid) < n
            if self.by is None:
                self.by = "id" if as_id else "index" if as_index else None
            if self.by == "id" and as_id:
                target = self.positions[entry.qid]
            elif self.by == "index" and as_index:
                target = int(entry.qid)
            elif (as_id or as_index) and self.by is not None:
                raise InputFileError(self.name, f"qids mix suite question ids and positions ({entry.qid!r}); use one or the other", line=entry.line)
            else:
                how = f"nor a position 0..{n - 1} into its questions" if self.allow_index else "and positions are not used for multi-part suites"
                raise InputFileError(self.name, f"unknown question id {entry.qid!r}: not a question id of the suite, {how}", line=entry.line)
        question = self.questions[target]
        if target in self.seen:
            qid, line = self.seen[target]
            if qid == entry.qid:
                raise InputFileError(self.name, f"question {entry.qid!r} again (first on line {line})", line=entry.line)
            raise InputFileError(self.name, f"question {entry.qid!r} and {qid!r} are the same suite question {question.id!r}", line=entry.line)
        self.seen[target] = (entry.qid, entry.line)
        if entry.question is not None and entry.question.replace("\u2019", "'") != question.text.replace("\u2019", "'"):
            raise InputFileError(
                self.name,
                f"{entry.where}question {_short(entry.question)} does not match the suite's question {question.id!r} "
                f"{_short(question.text)} (is this run for another question set?)",
                line=entry.line,
            )
        if entry.answers is not None and (not isinstance(entry.answers, list) or tuple(entry.answers) != tuple(question.answers)):
            self.mismatched.append(question.id)
        return target

    def missing(self) -> tuple[str, ...]:
        return tuple(q.id for i, q in enumerate(self.questions) if i not in self.seen)


def _normalized(text: str) -> str:
    return text.replace("\u2019", "'")


class _TextAligner:
    """Puts list-shaped entries on the suite's questions by question text (see the module notes),
    among the questions at ``positions`` (all when None: one part's, for a per-part member)."""

    def __init__(self, questions: Sequence[Question], name: str, *, suffix: str = "", positions: Sequence[int] | None = None):
        self.questions, self.name, self.suffix = questions, name, suffix
        self.texts: dict[str, list[int]] = {}
        self.positions = range(len(questions)) if positions is None else positions
        for i in self.positions:
            self.texts.setdefault(_normalized(questions[i].text), []).append(i)
        self.seen: dict[int, int] = {}  # suite position -> the line of the entry that took it
        self.mismatched: list[str] = []

    def _fail(self, entry: Entry, problem: str) -> None:
        raise InputFileError(self.name, entry.where + problem, line=entry.line)

    def target(self, entry: Entry) -> int:
        if entry.question is None:
            self._fail(entry, "no 'question': entries of this format are matched to the suite by question text")
        text = _normalized(entry.question)
        key = text if text in self.texts else None
        if key is None and self.suffix and text.endswith(self.suffix) and text[: -len(self.suffix)] in self.texts:
            key = text[: -len(self.suffix)]  # the writing tool appends the suffix to a question without one
        if key is None:
            self._fail(entry, f"question {_short(entry.question)} is not a question of the suite (is this run for another question set?)")
        same = self.texts[key]
        free = [i for i in same if i not in self.seen]
        if not free:
            lines = ", ".join(str(self.seen[i]) for i in same)
            self._fail(entry, f"question {_short(entry.question)} again: the suite has it {len(same)} time(s), "
                              f"already matched by the entries on line(s) {lines}")
        if len({tuple(self.questions[i].answers) for i in free}) > 1:
            answers = tuple(entry.answers) if isinstance(entry.answers, list) else None
            chosen = [i for i in free if answers is not None and tuple(self.questions[i].answers) == answers]
            if not chosen:
                ids = ", ".join(repr(self.questions[i].id) for i in free)
                self._fail(entry, f"question {_short(entry.question)} matches {len(free)} suite questions ({ids}) with different "
                                  "answers, and the entry's answers single out none of them")
            free = chosen
        if len(free) > 1 and not entry.where.startswith("item ") and _INDEX.fullmatch(entry.qid or "") is not None:
            # a keyed file's own qid (its position in the question file) breaks a tie between
            # questions of the same text and answers, which score alike either way
            hinted = int(entry.qid)
            if hinted < len(self.positions) and self.positions[hinted] in free:
                free = [self.positions[hinted]]
        target = free[0]
        question = self.questions[target]
        self.seen[target] = entry.line
        if entry.answers is not None and (not isinstance(entry.answers, list) or tuple(entry.answers) != tuple(question.answers)):
            self.mismatched.append(question.id)
        return target

    def missing(self) -> tuple[str, ...]:
        return tuple(q.id for i, q in enumerate(self.questions) if i not in self.seen)


class _RecordAligner:
    """Puts the items of a ``"record"`` format on the suite's questions: by id when the first
    item's id is a suite question id, else by question text."""

    def __init__(self, questions: Sequence[Question], name: str, *, suffix: str = ""):
        self.questions, self.name, self.suffix = questions, name, suffix
        self.ids = {q.id: i for i, q in enumerate(questions)}
        self.texts: dict[str, list[int]] = {}
        for i, q in enumerate(questions):
            self.texts.setdefault(_normalized(q.text), []).append(i)
        self.used: dict[str, int] = {}  # text -> how many of its suite questions are taken
        self.by: str | None = None
        self.seen: dict[int, int] = {}  # suite position -> the line of the item that took it
        self.mismatched: list[str] = []

    def _fail(self, entry: Entry, problem: str):
        raise InputFileError(self.name, entry.where + problem, line=entry.line)

    def _same(self, text: str, question: Question) -> bool:
        mine, theirs = _normalized(text), _normalized(question.text)
        # the writing tool appends the suffix to a question without one (Rankify's "?")
        return mine == theirs or (bool(self.suffix) and mine == theirs + self.suffix)

    def target(self, entry: Entry) -> int:
        if self.by is None:
            self.by = "id" if entry.qid is not None and entry.qid in self.ids else "text"
        if self.by == "id":
            if entry.qid is None or entry.qid not in self.ids:
                self._fail(
                    entry,
                    f"unknown question id {entry.qid!r}: the first item's id is a question id of the suite, so every item's must be",
                )
            target = self.ids[entry.qid]
            question = self.questions[target]
            if entry.question is not None and not self._same(entry.question, question):
                self._fail(
                    entry,
                    f"question {_short(entry.question)} does not match the suite's question {question.id!r} "
                    f"{_short(question.text)} (is this run for another question set?)",
                )
        else:
            if entry.question is None:
                self._fail(entry, f"no 'question' to match, and its id {entry.qid!r} is not a question id of the suite")
            text = _normalized(entry.question)
            bare = text[: -len(self.suffix)] if self.suffix and text.endswith(self.suffix) else None
            key = text if text in self.texts else bare if bare is not None and bare in self.texts else None
            if key is None:
                self._fail(entry, f"question {_short(entry.question)} is not a question of the suite (is this run for another question set?)")
            taken = self.used.get(key, 0)
            if taken >= len(self.texts[key]):
                self._fail(entry, f"question {_short(entry.question)} appears more often than in the suite ({len(self.texts[key])} times)")
            self.used[key] = taken + 1
            target = self.texts[key][taken]
            question = self.questions[target]
        if target in self.seen:
            self._fail(entry, f"question {question.id!r} again (first on line {self.seen[target]})")
        self.seen[target] = entry.line
        answers = entry.answers
        if answers is not None and (not isinstance(answers, list) or tuple(answers) != tuple(question.answers)):
            self.mismatched.append(question.id)
        return target

    def missing(self) -> tuple[str, ...]:
        return tuple(q.id for i, q in enumerate(self.questions) if i not in self.seen)


class _Placer:
    """Where each entry of a run goes, by the format's ``match`` (:data:`harness.api.RunMatch`):
    keyed or positional entries by :class:`_Aligner`, list items of a ``"text"`` format by
    :class:`_TextAligner` (within one part's questions while a per-part member is read), items of
    a ``"record"`` format by :class:`_RecordAligner`."""

    def __init__(self, questions: Sequence[Question], name: str, spec: RunFormatSpec, allow_index: bool):
        self.questions, self.spec = questions, spec
        self.keyed = _Aligner(questions, name, allow_index)
        self.by_text = _TextAligner(questions, name, suffix=spec.question_suffix)
        self.records = _RecordAligner(questions, name, suffix=spec.question_suffix) if spec.match == "record" else None
        self.texts: list[_TextAligner] = []
        self.per_part = False

    def part(self, name: str, positions: Sequence[int]) -> None:
        """Entries from now on come from member ``name`` and answer the questions at ``positions``."""
        self.by_text = _TextAligner(self.questions, name, suffix=self.spec.question_suffix, positions=positions)
        self.keyed.name = name
        self.per_part = True

    def target(self, entry: Entry) -> int:
        if self.records is not None:
            return self.records.target(entry)
        positional = entry.where.startswith("item ") and self.spec.match in ("items", "text")
        if self.per_part or (positional and self.spec.match == "text"):
            if self.by_text not in self.texts:
                self.texts.append(self.by_text)
            return self.by_text.target(entry)
        return self.keyed.target(entry, positional=positional)

    def missing(self) -> tuple[str, ...]:
        taken = set(self.keyed.seen)
        for aligner in self.texts:
            taken.update(aligner.seen)
        if self.records is not None:
            taken.update(self.records.seen)
        return tuple(q.id for i, q in enumerate(self.questions) if i not in taken)

    def mismatched(self) -> tuple[str, ...]:
        records = tuple(self.records.mismatched) if self.records is not None else ()
        return tuple(self.keyed.mismatched) + tuple(q for a in self.texts for q in a.mismatched) + records

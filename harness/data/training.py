"""Training data: DPR's ``biencoder-*.json`` files, and making training examples by distant supervision.

File format (PROTOCOL section 4), read and written here::

    [{"question": str, "answers": [str, ...],
      "positive_ctxs": [{"title": str, "text": str, "passage_id": str, ...}, ...],
      "negative_ctxs": [...], "hard_negative_ctxs": [...], "label": str}, ...]

- :func:`read_training_examples` streams the array element by element
  (:func:`harness.util.jsonio.iter_array`; DPR's NQ training file is several GB and is never held
  whole), gzip-compressed or not (recognised by its first bytes, not its name), and also reads JSON
  lines holding the same objects. A passage's id is its ``passage_id``, else ``psg_id``, else
  ``id`` (numbers become their decimal text), else :func:`derived_passage_id` of its title and
  text; ``title`` may be missing (empty). ``label``, else ``relation``, becomes
  :attr:`TrainingExample.label`. Other fields (``score``, ``has_answer``, ...) are ignored.
  Examples without a positive passage are skipped, as DPR's loader does, and counted in
  :class:`ReadStats`; anything malformed is one :class:`InputFileError` naming file and line.
- :func:`write_training_examples` writes that format (``.jsonl`` names: JSON lines) streaming, into
  a temporary sibling renamed into place when complete, gzip-compressed when the name ends with
  ``.gz``.

Distant supervision (:func:`distant_supervision`) is the recipe of DPR (for the datasets without
gold passages) and EntityQuestions: per question, the positive is the best-ranked retrieved
passage whose *text* contains an answer (DPR's ``has_answer`` in the suite's match mode, the same
rule scoring uses), and the hard negatives are the best-ranked passages that contain no answer.

Negatives are *answer-aware* on title and text: a passage is never a negative when an answer occurs
in its text, in its title, or across the two (``title`` + newline + ``text``). DPR's own BM25
negatives only exclude passages whose text has an answer; a passage about the answer entity
(title "Paris", text "It is the capital of France") is then a negative for "capital of France?",
a false negative that teaches the encoders to push the right passage away (the problem reported
for mined negatives in FlagEmbedding #850). Such a passage is not a positive either: positives are
judged on the text alone, as scoring judges retrieved passages. Miners use the same rule
(:func:`hard_negatives`), and also never take a passage equal to one of the example's positives
(same id, or same text).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.api import Corpus, Hit, MatchMode, Passage, Question, Retriever, RunContext, Suite, TrainingExample
from harness.data.corpus_sources import not_utf8
from harness.errors import HarnessError, InputFileError
from harness.scoring.matching import AnswerMatcher, screen
from harness.scoring.retrieval import retrieve
from harness.util import jsonio
from harness.util.atomic import atomic_file, remove_stale

__all__ = [
    "ReadStats",
    "AnswerCheck",
    "derived_passage_id",
    "distant_supervision",
    "hard_negatives",
    "read_training_examples",
    "suite_training_examples",
    "write_training_examples",
]

_GZIP_MAGIC = b"\x1f\x8b"
#: Keys that may hold a passage's id, in the order they are looked at.
_ID_KEYS = ("passage_id", "psg_id", "id")
#: The three passage lists of a DPR record and the :class:`TrainingExample` field each fills.
_CTX_FIELDS = (("positive_ctxs", "positives"), ("negative_ctxs", "negatives"), ("hard_negative_ctxs", "hard_negatives"))


def derived_passage_id(title: str, text: str) -> str:
    """A stable id for a passage given without one: ``sha256:`` and the first 24 hex digits of the
    sha256 over the UTF-8 title and text, each preceded by its length (as the corpus fingerprint)."""
    digest = hashlib.sha256()
    for part in (title.encode("utf-8"), text.encode("utf-8")):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return "sha256:" + digest.hexdigest()[:24]


# ----------------------------------------------------------------------------------------- reading


@dataclass
class ReadStats:
    """What :func:`read_training_examples` saw: examples yielded and examples skipped for having no
    positive passage (DPR drops those too). Filled as the iterator is consumed."""

    examples: int = 0
    without_positives: int = 0


def _passage(value: Any, path: Path, line: int | None, where: str) -> Passage:
    if not isinstance(value, dict):
        raise InputFileError(path, f"{where}: each passage must be an object with \"text\", got {type(value).__name__}", line=line)
    text = value.get("text")
    if not isinstance(text, str):
        raise InputFileError(path, f'{where}: a passage needs "text" (a string)', line=line)
    title = value.get("title", "")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise InputFileError(path, f'{where}: "title" must be a string, got {type(title).__name__}', line=line)
    for key in _ID_KEYS:
        raw = value.get(key)
        if raw is None:
            continue
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise InputFileError(path, f'{where}: "{key}" must be a string or an integer, got {type(raw).__name__}', line=line)
        passage_id = str(raw)
        if not passage_id.strip():
            raise InputFileError(path, f'{where}: "{key}" is empty', line=line)
        return Passage(id=passage_id, title=title, text=text)
    return Passage(id=derived_passage_id(title, text), title=title, text=text)


def _shown(value: Any) -> str:
    """A value as an error shows it: its JSON text, cut to 40 characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _example(value: Any, path: Path, line: int | None) -> TrainingExample:
    if not isinstance(value, dict):
        raise InputFileError(path, f'each example must be an object with "question" and "answers", got {type(value).__name__}', line=line)
    question = value.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputFileError(path, '"question" must be a non-empty string', line=line)
    answers = value.get("answers", [])
    if not isinstance(answers, list):
        raise InputFileError(path, f'"answers" must be a list of strings, got {type(answers).__name__}', line=line)
    for i, answer in enumerate(answers):
        if not isinstance(answer, str):
            raise InputFileError(path, f'"answers" must be a list of strings; "answers"[{i}] is {type(answer).__name__} '
                                 f'{_shown(answer)}', line=line)
    lists: dict[str, tuple[Passage, ...]] = {}
    for key, field in _CTX_FIELDS:
        raw = value.get(key)
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise InputFileError(path, f'"{key}" must be a list of passages, got {type(raw).__name__}', line=line)
        lists[field] = tuple(_passage(item, path, line, f"{key}[{i}]") for i, item in enumerate(raw))
    label = value.get("label", value.get("relation"))
    if label is not None and not isinstance(label, str):
        raise InputFileError(path, f'"label" must be a string, got {type(label).__name__}', line=line)
    return TrainingExample(question=question, answers=tuple(answers), label=label, **lists)


def _open_binary(path: Path):
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read training file: {exc.strerror or exc}") from None
    magic = f.read(2)
    f.seek(0)
    return gzip.GzipFile(fileobj=f, mode="rb") if magic == _GZIP_MAGIC else f, f


def _elements(path: Path, binary) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for each element of the array or each JSON line."""
    text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
    head = text.read(1)
    while head and head in " \t\r\n\ufeff":
        head = text.read(1)
    if not head:
        raise InputFileError(path, "the file is empty (expected a JSON array or JSON lines of examples)")
    if head == "[":
        text.seek(0)
        yield from jsonio.iter_array(text, source=path, lines=True)
        return
    if head != "{":
        raise InputFileError(path, "expected a JSON array of examples (DPR's biencoder format) or JSON lines", line=1)
    text.seek(0)
    for number, line in enumerate(text, start=1):
        if number == 1:
            line = line.removeprefix("\ufeff")
        if line.strip():
            yield number, jsonio.loads(line, source=path, line=number)


def read_training_examples(path: str | os.PathLike, *, stats: ReadStats | None = None) -> Iterator[TrainingExample]:
    """The examples of DPR training file ``path`` (plain or gzip; a JSON array or JSON lines) in
    file order, read as the iterator is consumed. Examples without a positive are skipped (counted
    in ``stats``). Raises :class:`InputFileError` (one line: file, line, problem) on anything
    malformed, including a file that is not UTF-8 or a damaged gzip stream."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    opened, raw = _open_binary(path)
    with raw, opened:
        try:
            for line, value in _elements(path, opened):
                example = _example(value, path, line)
                if not example.positives:
                    stats.without_positives += 1
                    continue
                stats.examples += 1
                yield example
        except UnicodeDecodeError:
            raise not_utf8(path) from None
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise InputFileError(path, f"damaged gzip data ({exc or 'truncated'})") from None
        except OSError as exc:
            raise InputFileError(path, f"cannot read training file: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------------------- writing


def _ctx(passage: Passage) -> dict[str, str]:
    return {"title": passage.title, "text": passage.text, "passage_id": passage.id}


def _record(example: TrainingExample) -> dict[str, Any]:
    record: dict[str, Any] = {
        "question": example.question,
        "answers": list(example.answers),
        "positive_ctxs": [_ctx(p) for p in example.positives],
        "negative_ctxs": [_ctx(p) for p in example.negatives],
        "hard_negative_ctxs": [_ctx(p) for p in example.hard_negatives],
    }
    if example.label is not None:
        record["label"] = example.label
    return record


def write_training_examples(path: str | os.PathLike, examples: Iterable[TrainingExample]) -> int:
    """Write ``examples`` to ``path`` in DPR's format (JSON lines when the name ends with ``.jsonl``
    or ``.jsonl.gz``; gzip when it ends with ``.gz``), one element at a time, into a temporary
    sibling renamed into place at the end: ``path`` is complete or untouched, also when writing
    fails or is interrupted. Returns how many examples were written. An output that cannot be
    written (see :func:`harness.data.passages.check_output`; no space left) is one
    :class:`~harness.errors.HarnessError` line; errors of ``examples`` itself pass through as they are."""
    from harness.data.passages import check_output, write_error

    path = check_output(path)
    try:
        return _write_examples(path, _upstream(examples))
    except _UpstreamError as wrapped:
        raise wrapped.error from None
    except OSError as exc:
        raise write_error(path, exc) from None


class _UpstreamError(Exception):
    """An ``OSError`` raised while producing the examples to write, not while writing them."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def _upstream(examples: Iterable[TrainingExample]) -> Iterator[TrainingExample]:
    iterator = iter(examples)
    while True:
        try:
            example = next(iterator)
        except StopIteration:
            return
        except OSError as exc:
            raise _UpstreamError(exc) from exc
        yield example


def _write_examples(path: Path, examples: Iterable[TrainingExample]) -> int:
    gz = path.name.endswith(".gz")
    lines = path.name.removesuffix(".gz").endswith(".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path.parent, path.name)
    count = 0
    with atomic_file(path) as raw:
        stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if gz else raw
        out = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
        if not lines:
            out.write("[")
        for example in examples:
            if not isinstance(example, TrainingExample):
                raise TypeError(f"expected TrainingExample records, got {type(example).__name__}")
            record = json.dumps(_record(example), ensure_ascii=False)
            if lines:
                out.write(record + "\n")
            else:
                out.write(("\n" if count == 0 else ",\n") + record)
            count += 1
        if not lines:
            out.write("\n]\n" if count else "]\n")
        out.flush()
        out.detach()  # the file stays open: atomic_file flushes it to disk and renames it
        if gz:
            stream.close()  # writes the gzip trailer into the file
    return count


# ------------------------------------------------------------------------------- answer-aware rules


class AnswerCheck:
    """One question's answers prepared for testing many passages (DPR's ``has_answer``, ``match``
    mode): :meth:`in_text` is the positive rule, :meth:`anywhere` the negative rule."""

    __slots__ = ("_matcher",)

    def __init__(self, answers: Iterable[str], *, match: MatchMode = "string"):
        self._matcher = AnswerMatcher(list(answers), mode=match)

    def _has(self, text: str) -> bool:
        # the exact pre-filter scoring uses: most passages are rejected without tokenising them
        return self._matcher.may_match(screen(text)) and self._matcher.matches_text(text)

    def in_text(self, passage: Passage) -> bool:
        """Whether the passage's text contains an answer (what scoring checks)."""
        return self._has(passage.text)

    def anywhere(self, passage: Passage) -> bool:
        """Whether an answer occurs in the text, in the title, or across the two."""
        if self._has(passage.text):
            return True
        return bool(passage.title) and (self._has(passage.title) or self._has(f"{passage.title}\n{passage.text}"))


def _same_text(text: str) -> str:
    return " ".join(text.split())


def hard_negatives(
    candidates: Iterable[Passage],
    answers: Iterable[str] | AnswerCheck,
    *,
    match: MatchMode = "string",
    count: int,
    exclude: Iterable[Passage] = (),
) -> tuple[Passage, ...]:
    """The first ``count`` of ``candidates`` (best first) that contain no answer in title or text
    (:meth:`AnswerCheck.anywhere`) and are not one of ``exclude`` (an example's positives: same id
    or same text, whitespace aside). Each passage at most once."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    check = answers if isinstance(answers, AnswerCheck) else AnswerCheck(answers, match=match)
    excluded = list(exclude)
    ids = {p.id for p in excluded}
    texts = {_same_text(p.text) for p in excluded}
    out: list[Passage] = []
    if count == 0:
        return ()
    for passage in candidates:
        if passage.id in ids or _same_text(passage.text) in texts:
            continue
        ids.add(passage.id)
        if check.anywhere(passage):
            continue
        out.append(passage)
        if len(out) == count:
            break
    return tuple(out)


# ---------------------------------------------------------------------------------- distant supervision


def _passage_of(corpus: Corpus, hit: Hit | str) -> Passage:
    passage_id = hit.passage_id if isinstance(hit, Hit) else hit
    try:
        return corpus.get(passage_id)
    except KeyError:
        raise HarnessError(f"ranked passage {passage_id!r} is not in corpus {corpus.name!r}") from None


def distant_supervision(
    questions: Sequence[Question],
    rankings: Sequence[Sequence[Hit | str]],
    corpus: Corpus,
    *,
    match: MatchMode,
    negatives: int = 1,
    labels: Mapping[str, str] | None = None,
) -> tuple[list[TrainingExample], int]:
    """Training examples from retrieved ``rankings`` (aligned with ``questions``, best first; hits
    or passage ids of ``corpus``), DPR's and EntityQuestions' recipe (see the module notes).

    Per question: the positive is the best-ranked passage whose text contains an answer; the hard
    negatives are the ``negatives`` best-ranked passages with no answer in title or text. Questions
    whose ranking holds no positive are dropped; returns the examples (in question order, ``label``
    from ``labels`` by question id) and how many questions were dropped."""
    if len(rankings) != len(questions):
        raise ValueError(f"{len(rankings)} rankings for {len(questions)} questions")
    if negatives < 0:
        raise ValueError(f"negatives must be >= 0, got {negatives}")
    labels = labels or {}
    examples: list[TrainingExample] = []
    dropped = 0
    for question, ranking in zip(questions, rankings):
        passages = [_passage_of(corpus, hit) for hit in ranking]
        check = AnswerCheck(question.answers, match=match)
        positive = next((p for p in passages if check.in_text(p)), None)
        if positive is None:
            dropped += 1
            continue
        examples.append(
            TrainingExample(
                question=question.text,
                answers=tuple(question.answers),
                positives=(positive,),
                hard_negatives=hard_negatives(passages, check, count=negatives, exclude=(positive,)),
                label=labels.get(question.id),
            )
        )
    return examples, dropped


def suite_training_examples(
    suite: Suite,
    retriever: Retriever,
    *,
    name: str,
    context: RunContext,
    depth: int = 100,
    negatives: int = 1,
) -> tuple[list[TrainingExample], int]:
    """Distant supervision over a loaded suite with a loaded retriever: index the suite's corpus,
    retrieve ``depth`` passages per question (:func:`harness.scoring.retrieval.retrieve`, progress and
    checks included), and :func:`distant_supervision` in the suite's match mode. With several
    parts, each example's label is its part's name (the EntityQuestions relation)."""
    retriever.index(suite.corpus, context)
    rankings = retrieve(retriever, suite.questions, depth, context, name=name, corpus=suite.corpus)
    labels = {q.id: part.name for part in suite.parts for q in part.questions} if len(suite.parts) > 1 else None
    return distant_supervision(
        suite.questions, rankings, suite.corpus, match=suite.match, negatives=negatives, labels=labels
    )

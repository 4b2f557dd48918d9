"""Reading a run file into a :class:`~harness.runfiles.model.Run`: :func:`read_run`, and the
``whole`` strategy's readers (a plain file read at once: TREC, and DPR's and pyserini's JSON
memory-mapped and decoded in columns, :mod:`harness.runfiles.columns`). Each format is described
in its module of :mod:`harness.runfiles.formats`; :func:`harness.runfiles.strategy.reading_strategy`
says which engine reads a file.

Passage ids: DPR prefixes corpus ids with ``wiki:`` (``"wiki:123"``); readers of every format
remove that prefix, so ids are the corpus's bare ids (``"123"``). Integer ids become strings.

Matching a file's questions to a suite
--------------------------------------
- Formats matched by ``qid`` (``trec``, ``pyserini-json``, ``tevatron``, ``ranx``): if every qid
  of the file is a question id of the suite, qids are ids. Otherwise, where positions are allowed
  (single-part suites: the default for a plain question list), every qid must be a position
  ``0..n-1`` into the suite's questions, which is how pyserini numbers DPR topics. A file is read
  one way or the other, never a mix; any other qid is an error.
- ``dpr-json`` is positional; each item's ``question`` must equal the suite's question (after the
  references' only normalisation, ``’`` to ``'``), else an error names the first mismatch. A
  pyserini file's ``question``, when present, is checked the same way.
- ``upr-json`` and ``rankify-json`` lists are matched by question text, never by position (see
  :mod:`harness.runfiles.stream`); FlashRAG's and Rankify's saved items by id or question text.
- Suite questions absent from the file count as no hit; :attr:`Run.missing` lists them and
  scoring warns with their count (:class:`RunWarning`). Note that pyserini's evaluator divides
  by the number of questions *in the file*, so on a file that omits questions its numbers are
  higher than the harness's, which divides by the suite's size (as DPR does).
- A file's own ``answers`` are not used: the harness scores with the suite's answers. Questions
  whose file answers differ are listed in :attr:`Run.answer_mismatches` and scoring warns
  (pyserini's evaluator would use the file's answers).

Scoring (:func:`harness.runfiles.ranks.first_hit_ranks_for_run`)
----------------------------------------------------------------
``has_answer`` flags carried by a file are informational only: the harness always recomputes
(pyserini's evaluator trusts a context's ``has_answer`` when present; see
:func:`harness.runfiles.ranks.flag_disagreements` to find where a file's flags differ). The text
matched is the one the file carries, as its format's own evaluator takes it (DPR: the ctx's
``text``, never its title; pyserini: the second line of the stored ``title\\ntext``), otherwise
the passage's text in the suite's corpus. Matching itself is
:func:`harness.scoring.ranks.first_hit_ranks` (DPR's rule; in regex mode the ``regex`` module,
where pyserini's copy uses stdlib ``re``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputFileError
from harness.api import Question, Suite
from harness.runfiles.columns import ColumnarRankings, Columns, Decoded, read_columns
from harness.runfiles.model import WIKI_PREFIX, Run, RunHit, RunWarning

_INDEX = re.compile(r"[0-9]+")
#: Integers from this magnitude on are too large for a float.
_FLOAT_INT = 2**1024

# ---- reading --------------------------------------------------------------------------------


@dataclass
class Entry:
    """One question as a file gives it, before alignment."""

    qid: str
    hits: list[tuple[int, int, RunHit]] = field(default_factory=list)  # (rank, order, hit) for TREC
    line: int | None = None
    where: str = ""
    question: str | None = None
    answers: Any = None
    #: The whole ranking as the fast JSON path reads it (then ``hits`` is empty).
    columns: Columns | None = None


def _fast_entries(path: Path, shape: str) -> list[Entry] | None:
    decoded = read_columns(path, shape)
    if decoded is None:
        return None
    if not decoded:
        raise InputFileError(path, "no questions")
    return _decoded_entries(decoded, shape)


def _decoded_entries(decoded: Sequence[Decoded], shape: str, first: int = 0) -> list[Entry]:
    """Entries of records the fast path decoded; ``first`` is the position of the first record
    (DPR's qids are positions)."""
    if shape == "list":
        return [
            Entry(qid=str(first + i), where=f"item {first + i}: ", question=d.question, answers=d.answers, columns=d.columns)
            for i, d in enumerate(decoded)
        ]
    return [
        Entry(qid=d.qid, where=f"question {d.qid!r}: ", question=d.question, answers=d.answers, columns=d.columns)
        for d in decoded
    ]


def bare_id(value: Any, path: Path, where: str, line: int | None = None) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputFileError(path, f"{where}passage id must be a string or integer, got {type(value).__name__}", line=line)
    pid = str(value)
    if pid.startswith(WIKI_PREFIX):
        pid = pid[len(WIKI_PREFIX) :]
    if not pid:
        raise InputFileError(path, f"{where}empty passage id", line=line)
    return pid


def parse_score(value: Any, path: Path, where: str, line: int | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputFileError(path, f"{where}score must be a number, got {type(value).__name__}", line=line)
    try:
        score = float(value)
    except ValueError:
        raise InputFileError(path, f"{where}score must be a number, got {short(value)}", line=line) from None
    except OverflowError:
        raise InputFileError(path, f"{where}score {short(value)} is too large for a float", line=line) from None
    if math.isnan(score):
        raise InputFileError(path, f"{where}score is NaN", line=line)
    return score


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def open_text(path: Path) -> str:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputFileError(path, "not UTF-8 text") from None


def _load_json(path: Path) -> Any:
    """The parsed file: orjson when installed (several times faster on large runs), else, or where
    orjson refuses what the standard parser accepts (NaN, huge integers, lone surrogates), ``json``,
    whose errors are the ones reported."""
    try:
        import orjson
    except ImportError:
        orjson = None
    if orjson is not None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
        try:
            return orjson.loads(data[3:] if data.startswith(b"\xef\xbb\xbf") else data)
        except orjson.JSONDecodeError:
            pass
        del data
    text = open_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except ValueError:  # int() refuses a literal of over sys.get_int_max_str_digits() digits
        limit = sys.get_int_max_str_digits()
        found = re.search(rf"[0-9]{{{limit + 1},}}", text)
        line = text.count("\n", 0, found.start()) + 1 if found else None
        raise InputFileError(path, f"a JSON number has more than {limit:,} digits", line=line) from None
    except RecursionError:
        raise InputFileError(path, "JSON nested too deeply") from None


def _plain_hit(ctx: Any, id_key: str, pyserini_text: bool) -> RunHit | None:
    """The hit of a context of the common, valid shape (non-empty string id, number or numeric
    string score, string or absent text and title, boolean or absent flag), or None for the
    checked path to handle (which accepts more, and words the errors)."""
    if type(ctx) is not dict:
        return None
    pid = ctx.get(id_key)
    score = ctx.get("score")
    text = ctx.get("text")
    flag = ctx.get("has_answer")
    if type(pid) is str and pid.startswith(WIKI_PREFIX):
        pid = pid[len(WIKI_PREFIX) :]
    if (
        type(pid) is not str
        or not pid
        or (flag is not None and type(flag) is not bool)
        or (text is not None and type(text) is not str)
        or ("score" not in ctx)
    ):
        return None
    if type(score) is not float:
        if type(score) is int:
            if not -_FLOAT_INT < score < _FLOAT_INT:
                return None  # too large for a float: the checked path words it
            score = float(score)
        elif type(score) is str:
            try:
                score = float(score)
            except ValueError:
                return None
        else:
            return None
    if score != score:  # NaN
        return None
    if pyserini_text:
        if text is None:
            title = None
        else:
            title, sep, rest = text.partition("\n")
            if not sep:
                return None
            end = rest.find("\n")
            text = rest if end < 0 else rest[:end]
    else:
        title = ctx.get("title")
        if title is not None and type(title) is not str:
            return None
    return RunHit(passage_id=pid, score=score, title=title, text=text, has_answer=flag)


def _opt_str(ctx: Mapping, key: str, path: Path, where: str) -> str | None:
    value = ctx.get(key)
    if value is not None and not isinstance(value, str):
        raise InputFileError(path, f"{where}{key!r} must be a string, got {type(value).__name__}")
    return value


def _opt_flag(ctx: Mapping, path: Path, where: str) -> bool | None:
    value = ctx.get("has_answer")
    if value is not None and not isinstance(value, bool):
        raise InputFileError(path, f"{where}'has_answer' must be true or false, got {short(value)}")
    return value


def _contexts(record: Mapping, key: str, path: Path, where: str) -> list[Mapping]:
    if key not in record:
        raise InputFileError(path, f"{where}missing {key!r} (the list of retrieved passages)")
    contexts = record[key]
    if not isinstance(contexts, list):
        raise InputFileError(path, f"{where}{key!r} must be a list, got {type(contexts).__name__}")
    for i, ctx in enumerate(contexts):
        if not isinstance(ctx, dict):
            raise InputFileError(path, f"{where}{key}[{i}] must be an object, got {type(ctx).__name__}")
    return contexts


def _required(ctx: Mapping, key: str, path: Path, where: str) -> Any:
    if key not in ctx:
        raise InputFileError(path, f"{where}missing {key!r}")
    return ctx[key]


def read_dpr_json(path: Path) -> list[Entry]:
    fast = _fast_entries(path, "list")
    if fast is not None:
        return fast
    data = _load_json(path)
    if not isinstance(data, list):
        raise InputFileError(path, 'expected a JSON list of {"question", "answers", "ctxs"} objects (DPR results)')
    entries = []
    for index, record in enumerate(data):
        with _at_member(path, index):
            entries.append(_dpr_entry(path, index, record))
    if not entries:
        raise InputFileError(path, "no questions")
    return entries


def _dpr_entry(path: Path, index: int, record: Any) -> Entry:
    where = f"item {index}: "
    if not isinstance(record, dict):
        raise InputFileError(path, where + f"expected an object, got {type(record).__name__}")
    hits = []
    for i, ctx in enumerate(_contexts(record, "ctxs", path, where)):
        hit = _plain_hit(ctx, "id", False)
        if hit is not None:
            hits.append((i, i, hit))
            continue
        at = f"{where}ctxs[{i}]: "
        hits.append(
            (
                i,
                i,
                RunHit(
                    passage_id=bare_id(_required(ctx, "id", path, at), path, at),
                    score=parse_score(_required(ctx, "score", path, at), path, at),
                    title=_opt_str(ctx, "title", path, at),
                    text=_opt_str(ctx, "text", path, at),
                    has_answer=_opt_flag(ctx, path, at),
                ),
            )
        )
    return Entry(
        qid=str(index),
        hits=hits,
        where=where,
        question=_opt_str(record, "question", path, where),
        answers=record.get("answers"),
    )


def _split_pyserini_text(raw: str, path: Path, where: str) -> tuple[str, str]:
    # evaluate_dpr_retrieval.py: text = ctx['text'].split('\n')[1]  # [0] is title, [1] is text
    parts = raw.split("\n")
    if len(parts) < 2:
        raise InputFileError(
            path, f"{where}'text' has no newline: pyserini stores title + '\\n' + text and matches the second line"
        )
    return parts[0], parts[1]


def read_pyserini_json(path: Path) -> list[Entry]:
    fast = _fast_entries(path, "object")
    if fast is not None:
        return fast
    data = _load_json(path)
    if not isinstance(data, dict):
        raise InputFileError(path, 'expected a JSON object {qid: {"question", "answers", "contexts"}} (pyserini DPR run)')
    _check_unique_keys(path, len(data))
    entries = []
    for index, (qid, record) in enumerate(data.items()):
        with _at_member(path, index):
            entries.append(_pyserini_entry(path, qid, record))
    if not entries:
        raise InputFileError(path, "no questions")
    return entries


def _pyserini_entry(path: Path, qid: str, record: Any) -> Entry:
    where = f"question {qid!r}: "
    if not isinstance(record, dict):
        raise InputFileError(path, where + f"expected an object, got {type(record).__name__}")
    hits = []
    for i, ctx in enumerate(_contexts(record, "contexts", path, where)):
        hit = _plain_hit(ctx, "docid", True)
        if hit is not None:
            hits.append((i, i, hit))
            continue
        at = f"{where}contexts[{i}]: "
        raw = _opt_str(ctx, "text", path, at)
        title, text = _split_pyserini_text(raw, path, at) if raw is not None else (None, None)
        hits.append(
            (
                i,
                i,
                RunHit(
                    passage_id=bare_id(_required(ctx, "docid", path, at), path, at),
                    score=parse_score(_required(ctx, "score", path, at), path, at),
                    title=title,
                    text=text,
                    has_answer=_opt_flag(ctx, path, at),
                ),
            )
        )
    return Entry(
        qid=qid,
        hits=hits,
        where=where,
        question=_opt_str(record, "question", path, where),
        answers=record.get("answers"),
    )


def _check_unique_keys(path: Path, kept: int) -> None:
    """Refuse a JSON object run whose top level names a question twice (a parsed dict keeps only
    the last): when the file's count of ``"contexts"`` keys differs from the ``kept`` members,
    its keys are read again as a stream, and a key given twice is one line naming both lines, as
    the stream engine words it (:class:`harness.runfiles.align._Aligner`)."""
    from harness.runfiles.columns import count_keys, map_file
    from harness.runfiles.stream import JsonMembers

    view = map_file(path)
    if view is not None and count_keys(view, b'"contexts"', kept + 1) == kept:
        return
    first: dict[str, int] = {}
    try:
        with open(path, "rb") as body:
            for key, _value, line in JsonMembers(body, str(path)):
                if key in first:
                    raise InputFileError(path, f"question {key!r} again (first on line {first[key]})", line=line)
                first[key] = line
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _at_member(path: Path, index: int):
    """A problem found in the ``index``-th top-level member of a JSON file read whole names the
    line the member starts on (found by reading the file again as a stream, only then)."""
    try:
        yield
    except InputFileError as exc:
        if exc.line is not None:
            raise
        try:
            _file, line = MemberLines(path, {"": index})[""]
        except KeyError:
            raise exc from None
        raise InputFileError(exc.path, exc.problem, line=line) from None


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector: reading a large run creates millions of acyclic objects
    (freed by reference counting), and the collections their allocation triggers would each walk
    all of them, which costs more than parsing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _normalized_question(text: str) -> str:
    return text.replace("\u2019", "'")


def _targets(entries: list[Entry], questions: Sequence[Question], path: Path, positional: bool, allow_index: bool) -> list[int]:
    """The suite question each entry answers, by position (see the module notes); ``positional``:
    entry *i* answers question *i* (DPR's list)."""
    n = len(questions)
    if positional:
        if len(entries) > n:
            raise InputFileError(path, f"run has {len(entries)} questions but the suite has {n} (DPR results are positional)")
        targets = list(range(len(entries)))
    else:
        positions = {q.id: i for i, q in enumerate(questions)}
        if all(e.qid in positions for e in entries):
            targets = [positions[e.qid] for e in entries]
        else:
            is_index = [allow_index and _INDEX.fullmatch(e.qid) is not None and int(e.qid) < n for e in entries]
            if all(is_index):
                targets = [int(e.qid) for e in entries]
            else:
                bad = next((e for e, ok in zip(entries, is_index) if not ok and e.qid not in positions), None)
                if bad is None:  # every qid is an id or a position, but not all of one kind
                    as_id = next(e for e, ok in zip(entries, is_index) if not ok)
                    as_index = next(e for e in entries if e.qid not in positions)
                    raise InputFileError(
                        path,
                        f"qids mix suite question ids ({as_id.qid!r}) and positions ({as_index.qid!r}); use one or the other",
                        line=as_index.line,
                    )
                how = (
                    f"nor a position 0..{n - 1} into its questions"
                    if allow_index
                    else "and positions are not used for multi-part suites"
                )
                raise InputFileError(path, f"unknown question id {bad.qid!r}: not a question id of the suite, {how}", line=bad.line)
    return targets


def align(
    entries: list[Entry],
    questions: Sequence[Question],
    path: Path,
    name: str | None,
    allow_index: bool,
    *,
    shape: str | None = None,
    targets: list[int] | None = None,
) -> Run:
    """The run of ``entries`` (of format ``name``) on ``questions``; ``shape``: ``"list"`` (DPR's
    positional items), ``"object"`` (pyserini's members, texts ``title\\ntext``) or None (TREC)."""
    if targets is None:
        targets = _targets(entries, questions, path, shape == "list", allow_index)
    rankings: dict[str, tuple[RunHit, ...]] = {q.id: () for q in questions}
    seen: dict[int, Entry] = {}
    mismatched: list[str] = []
    columnar = False
    for entry, target in zip(entries, targets):
        question = questions[target]
        if target in seen:
            raise InputFileError(
                path, f"question {entry.qid!r} and {seen[target].qid!r} are the same suite question {question.id!r}", line=entry.line
            )
        seen[target] = entry
        if entry.question is not None and _normalized_question(entry.question) != _normalized_question(question.text):
            raise InputFileError(
                path,
                f"{entry.where or f'question {entry.qid!r}: '}question {short(entry.question)} does not match the suite's "
                f"question {question.id!r} {short(question.text)} (is this run for another question set?)",
                line=entry.line,
            )
        if entry.answers is not None and (
            not isinstance(entry.answers, list) or tuple(entry.answers) != tuple(question.answers)
        ):
            mismatched.append(question.id)
        if entry.columns is not None:
            rankings[question.id] = entry.columns
            columnar = True
        else:
            rankings[question.id] = tuple(hit for _rank, _order, hit in entry.hits)
    missing = tuple(q.id for i, q in enumerate(questions) if i not in seen)
    if columnar:
        rankings = ColumnarRankings(rankings, pyserini=shape == "object", hit_type=RunHit)
    if all(entry.line is not None for entry in entries):
        lines = {questions[target].id: (str(path), entry.line) for entry, target in zip(entries, targets)}
    else:  # a JSON file read whole: its members' lines are found when a problem is reported
        lines = MemberLines(path, {questions[target].id: index for index, target in enumerate(targets)})
    return Run(rankings=rankings, missing=missing, answer_mismatches=tuple(mismatched), format=name, source=str(path),
               lines=lines)


class MemberLines(Mapping):
    """``{suite question id: (file, line)}`` of a JSON run read whole (``index``: each question's
    position among the file's top-level members): the file is read again as a stream for the
    lines its members start on, once, when a line is first asked for (a problem is reported)."""

    def __init__(self, path: Path, index: dict[str, int]):
        self.path, self.index = path, index
        self._lines: list[int] | None = None

    def _starts(self) -> list[int]:
        if self._lines is None:
            from harness.runfiles.stream import JsonMembers

            self._lines = []
            try:
                with open(self.path, "rb") as body:
                    self._lines = [line for _key, _value, line in JsonMembers(body, str(self.path))]
            except (OSError, InputFileError):
                pass
        return self._lines

    def __getitem__(self, qid: str) -> tuple[str, int]:
        index = self.index[qid]
        starts = self._starts()
        if index >= len(starts):
            raise KeyError(qid)
        return str(self.path), starts[index]

    def __iter__(self):
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)


def read_run(
    path: str | Path,
    questions: Suite | Sequence[Question],
    *,
    format: str | None = None,
    allow_index: bool | None = None,
    compression: str | None = None,
    member: str | None = None,
    keep: int | None = None,
) -> Run:
    """Read a run file and align it with a suite's questions (see the module notes for the rules).

    ``format`` is a registered format's name or alias (``harness list run-formats``), or ``None``
    to detect it. ``allow_index`` says whether qids may be positions into the questions; by
    default yes, except for a :class:`Suite` with several parts. ``compression`` (``"gzip"``,
    ``"tar.gz"`` with ``member``; detected when None) and the formats without a ``whole`` reader
    are read by :func:`harness.runfiles.stream.read_streamed`, which keeps each question's top
    ``keep`` hits (all when None) and, given a :class:`Suite`, checks every passage it carries no
    text for against the suite's corpus as it reads (a whole file is checked when scored,
    :func:`harness.runfiles.ranks.score_run`, by the same rule). Every problem raises
    :class:`InputFileError` (one line); an unknown format name, :class:`~harness.errors.HarnessError`.
    """
    path = Path(path)
    parts = corpus = None
    if isinstance(questions, Suite):
        corpus = questions.corpus
        if allow_index is None:
            allow_index = len(questions.parts) == 1
        parts = [(p.name, len(p.questions)) for p in questions.parts]
        questions = questions.questions
    elif allow_index is None:
        allow_index = True
    questions = tuple(questions)
    if compression is None:
        from harness.runfiles.archives import detect_compression

        compression = detect_compression(path)
    from harness.runfiles.registered import detect_format, run_format
    from harness.runfiles.strategy import reading_strategy

    spec = run_format(format or detect_format(path, compression, member))
    with _gc_paused():
        if reading_strategy(spec, path, compression) == "whole":
            return spec.whole(path, questions, allow_index)
        from harness.runfiles.stream import read_streamed, source_name

        lines: dict[str, tuple[str, int]] = {}
        found, missing, mismatched = read_streamed(
            path, questions, spec, compression=compression, member=member, allow_index=allow_index, keep=keep, parts=parts,
            corpus=corpus, lines=lines,
        )
        rankings = {
            qid: tuple(RunHit(passage_id=p, score=s, title=t, text=x, has_answer=f) for p, s, t, x, f in hits)
            for qid, hits in found.items()
        }
    return Run(rankings=rankings, missing=missing, answer_mismatches=mismatched, format=spec.name,
               source=source_name(path, member), lines=lines)


def detect_format(path: str | Path, compression: str | None = None, member: str | None = None) -> str:
    """The registered format a run file is in (:func:`harness.runfiles.formats.detect_format`)."""
    from harness.runfiles.registered import detect_format as detect

    return detect(path, compression, member)


__all__ = ["WIKI_PREFIX", "Run", "RunHit", "RunWarning", "detect_format", "read_run"]

"""The stream engine: reading and scoring a run of any registered format one question at a time,
compressed or not.

Released runs are large: a top-1000 run with passage texts is gigabytes, and it comes gzip
compressed or inside a ``.tar.gz``. This engine decompresses while it reads
(:mod:`harness.runfiles.archives`: ``gzip``, or the one member of a tar archive that is asked
for, read in place: nothing is extracted) and takes the file's entries from its format's reader
(``RunFormatSpec.entries``; for DPR's JSON family :func:`iter_entries`, which decodes the
top-level JSON list or object one member at a time with the standard library's decoder over a
sliding buffer, laid out as the format's :class:`JsonLayout` says). What is kept is bounded by
one question's entry plus the read buffer (:data:`CHUNK`), not by the file:

- :func:`score_streamed` computes each question's first-hit rank as its entry is read (matching
  the texts the entry carries, or the suite corpus's where it carries none) and keeps only the
  rank and the ranking's length;
- :func:`read_streamed` builds the rankings of a :class:`~harness.runfiles.model.Run` of each
  question's top ``keep`` hits (with their texts), for re-ranking.

Entries are put on the suite's questions as the format's ``match`` says
(:data:`harness.api.runformats.RunMatch`; the rules, by position, qid or question text, are
:mod:`harness.runfiles.align`'s).

One member per part (``member = "{part}"``, :data:`PER_PART`): a ``.tar.gz`` that holds one
``.json`` file per suite part (UPR's EntityQuestions runs: one file per relation) is read in one
pass; each ``.json`` member belongs to the part whose name is a token of its file name (``P17``
in ``entity-questions/P17.test.json``, never in ``P170.json``; see
:mod:`harness.runfiles.archives`) and its entries (list members, or object members keyed by the
relation file's own qids) are matched by text against that part's questions only. A member
naming no part or two, or two members of one part, is an error; a part without a member counts
its questions as missing.

Every problem is one :class:`~harness.errors.InputFileError` naming the file (``ARCHIVE (member
NAME)`` for a tar member) and the line the offending member starts on.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import sys
import tarfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from harness.api import MatchMode, Question, RunEntry, RunFormatSpec, Suite
from harness.errors import HarnessError, InputFileError
from harness.runfiles.align import _Placer, _short
from harness.runfiles.archives import (
    COMPRESSIONS,
    PER_PART,
    detect_compression,
    iter_part_members,
    open_stream,
    part_of_member,
    source_name,
)

#: Bytes read (compressed) at a time; the buffer holds about this much plus one member.
CHUNK = 4 << 20
#: The longest top-level member (one question's entry) read, in characters: far above any
#: run's (a top-1000 DPR entry with its passages' texts is under 1 MB), so that a file that is
#: not what it claims (an unterminated string, no line breaks) is refused in bounded memory.
MAX_MEMBER = 64 << 20

_SPACE = re.compile(r"[ \t\n\r]*")
_WIKI = "wiki:"


class JsonMembers:
    """The members of a top-level JSON list (``(None, value, line)``) or object (``(key, value,
    line)``) read from a binary stream one at a time; ``line`` is where the member starts."""

    def __init__(self, body: IO[bytes], name: str, chunk: int = CHUNK):
        self.body, self.name, self.chunk = body, name, chunk
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buffer = ""
        self.pos = 0
        self.line = 1  # the line of buffer[0]
        self.eof = False
        self.json = json.JSONDecoder()
        self.kind: str | None = None

    def fail(self, problem: str, at: int | None = None) -> None:
        at = self.pos if at is None else at
        raise InputFileError(self.name, problem, line=self.line + self.buffer.count("\n", 0, at))

    def _more(self, want: int) -> bool:
        """Read at least ``want`` more characters unless the stream ends; False at the end."""
        if self.eof:
            return False
        if self.pos:
            self.line += self.buffer.count("\n", 0, self.pos)
            self.buffer = self.buffer[self.pos :]
            self.pos = 0
        got = 0
        while got < want and not self.eof:
            try:
                data = self.body.read(max(self.chunk, want - got))
            except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
                self.fail(f"cannot read the run (corrupt or truncated compressed data: {exc})", len(self.buffer))
            try:
                text = self.decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                self.fail("not UTF-8 text", len(self.buffer))
            if not data:
                self.eof = True
            self.buffer += text
            got += len(text)
        return True

    def _skip(self) -> str:
        """Skip white space; the next character ("" at the end of the stream)."""
        while True:
            self.pos = _SPACE.match(self.buffer, self.pos).end()
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more(self.chunk):
                return ""

    def _value(self) -> Any:
        want = self.chunk
        while True:
            try:
                value, end = self.json.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof or not _incomplete(exc, len(self.buffer)):
                    self.fail(f"invalid JSON: {exc.msg}", exc.pos)
            except ValueError:  # int() refuses a literal of over sys.get_int_max_str_digits() digits
                limit = sys.get_int_max_str_digits()
                found = re.compile(rf"[0-9]{{{limit + 1},}}").search(self.buffer, self.pos)
                self.fail(f"a JSON number has more than {limit:,} digits", found.start() if found else None)
            except RecursionError:
                self.fail("JSON nested too deeply")
            else:
                self.pos = end
                return value
            if len(self.buffer) - self.pos > MAX_MEMBER:
                self.fail(f"a top-level JSON value longer than {MAX_MEMBER:,} characters (is the file malformed?)")
            self._more(want)
            want *= 2

    def __iter__(self) -> Iterator[tuple[str | None, Any, int]]:
        first = self._skip()
        if first not in ("[", "{"):
            self.fail("empty run file" if not first else "expected a JSON list or object")
        self.kind = "list" if first == "[" else "object"
        close = "]" if first == "[" else "}"
        self.pos += 1
        count = 0
        while True:
            c = self._skip()
            if c == close:
                self.pos += 1
                break
            if count:
                if c != ",":
                    self.fail(f"invalid JSON: expected ',' or '{close}'" if c else "invalid JSON: the file ends inside the top-level value")
                self.pos += 1
                c = self._skip()
            if not c:
                self.fail("invalid JSON: the file ends inside the top-level value")
            key = None
            if close == "}":
                if c != '"':
                    self.fail("invalid JSON: expected a quoted key")
                key = self._value()
                if self._skip() != ":":
                    self.fail("invalid JSON: expected ':'")
                self.pos += 1
                self._skip()
            line = self.line + self.buffer.count("\n", 0, self.pos)
            yield key, self._value(), line
            count += 1
        if self._skip():
            self.fail("invalid JSON: extra data after the top-level value")


def _incomplete(exc: json.JSONDecodeError, end: int) -> bool:
    """Whether the decoder's error may come from the buffer ending at ``end`` inside the value
    (an unterminated string, or a token cut within the last :data:`_TAIL` characters), so that
    more of the stream is read; any other error is the file's, and is reported at once, without
    reading the rest of the file into the buffer."""
    return exc.msg.startswith("Unterminated string") or end - exc.pos <= _TAIL


#: The longest JSON token the decoder may report as an error when the buffer ends inside it
#: (``-Infinity`` is 9 characters; a ``\\uXXXX`` escape pair 12).
_TAIL = 16


#: One question of a run, checked (the record every format's reader yields).
Entry = RunEntry


@dataclass(frozen=True)
class JsonLayout:
    """How a run of DPR's JSON family is laid out (each format module declares its own).

    ``shape``: ``"list"`` (items answer questions by position or text), ``"object"`` (members
    keyed by qid) or None (either); ``expected``: what a file of another shape is told it should
    be; ``contexts``: the keys of a record's passage list, the first named when none is there;
    ``ids``: the keys of a passage's id in a list item (an object member, pyserini's shape, has
    ``docid``, or ``id`` where ``ids`` has it too); ``unscored``: a question whose passages all
    lack a score (or have null) keeps the list order. An object member's text is pyserini's
    ``title\\ntext``.
    """

    shape: str | None
    expected: str
    contexts: tuple[str, ...]
    ids: tuple[str, ...] = ("id",)
    unscored: bool = False


def iter_entries(body: IO[bytes], name: str, layout: JsonLayout, chunk: int = CHUNK) -> Iterator[Entry]:
    """The checked entries of a JSON run laid out as ``layout``, in file order."""
    members = JsonMembers(body, name, chunk)
    index = 0
    for key, record, line in members:
        shape = members.kind
        if layout.shape is not None and shape != layout.shape:
            raise InputFileError(name, layout.expected, line=1)
        if shape == "list":
            qid, where = str(index), f"item {index}: "
        else:
            qid, where = key, f"question {key!r}: "
        index += 1
        yield _entry(record, qid, where, line, name, layout, pyserini=shape == "object")


def _entry(record: Any, qid: str, where: str, line: int, name: str, layout: JsonLayout, *, pyserini: bool) -> Entry:
    def fail(problem: str) -> None:
        raise InputFileError(name, where + problem, line=line)

    if not isinstance(record, dict):
        fail(f"expected an object, got {type(record).__name__}")
    keys = layout.contexts
    key = next((k for k in keys if k in record), None)
    if key is None:
        fail(f"missing {keys[0]!r} (the list of retrieved passages)")
    contexts = record[key]
    if not isinstance(contexts, list):
        fail(f"{key!r} must be a list, got {type(contexts).__name__}")
    id_keys = ("docid", *(k for k in layout.ids if k != "docid")) if pyserini else layout.ids
    ids, scores, texts, titles, flags = [], [], [], [], []
    scored = None
    for i, ctx in enumerate(contexts):
        at = f"{key}[{i}]: "
        if not isinstance(ctx, dict):
            fail(f"{at}must be an object, got {type(ctx).__name__}")
        id_key = next((k for k in id_keys if k in ctx), None)
        if id_key is None:
            fail(f"{at}missing {id_keys[0]!r}")
        pid = ctx[id_key]
        if isinstance(pid, bool) or not isinstance(pid, (str, int)):
            fail(f"{at}passage id must be a string or integer, got {type(pid).__name__}")
        pid = str(pid)
        if pid.startswith(_WIKI):
            pid = pid[len(_WIKI) :]
        if not pid:
            fail(f"{at}empty passage id")
        has_score = "score" in ctx and not (layout.unscored and ctx["score"] is None)
        if scored is None:
            scored = has_score
        if has_score != scored:
            fail(f"{at}{'missing' if scored else 'unexpected'} 'score': give every passage of a question a score, or none")
        if has_score:
            value = ctx["score"]
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                fail(f"{at}score must be a number, got {type(value).__name__}")
            try:
                score = float(value)
            except ValueError:
                fail(f"{at}score must be a number, got {_short(value)}")
            except OverflowError:
                fail(f"{at}score {_short(value)} is too large for a float")
            if math.isnan(score):
                fail(f"{at}score is NaN")
        elif layout.unscored:
            score = float(-1 - i)
        else:
            fail(f"{at}missing 'score'")
        text = ctx.get("text")
        if text is not None and not isinstance(text, str):
            fail(f"{at}'text' must be a string, got {type(text).__name__}")
        flag = ctx.get("has_answer")
        if flag is not None and not isinstance(flag, bool):
            fail(f"{at}'has_answer' must be true or false, got {_short(flag)}")
        if pyserini:
            title = None
            if text is not None:
                parts = text.split("\n")
                if len(parts) < 2:
                    fail(f"{at}'text' has no newline: pyserini stores title + '\\n' + text and matches the second line")
                title, text = parts[0], parts[1]
        else:
            title = ctx.get("title")
            if title is not None and not isinstance(title, str):
                fail(f"{at}'title' must be a string, got {type(title).__name__}")
        ids.append(pid)
        scores.append(score)
        texts.append(text)
        titles.append(title)
        flags.append(flag)
    question = record.get("question")
    if question is not None and not isinstance(question, str):
        fail(f"'question' must be a string, got {type(question).__name__}")
    return Entry(qid=qid, question=question, answers=record.get("answers"), ids=ids, scores=scores, texts=texts,
                 titles=titles, flags=flags, line=line, where=where)


def _members(path: str | Path, spec: RunFormatSpec, compression: str | None, member: str | None, chunk: int,
             parts: Sequence[tuple[str, int]] | None, placer: _Placer) -> Iterator[Entry]:
    """The entries of the run, from one member or, for :data:`PER_PART`, from each part's member
    in turn (``parts``: each part's name and question count, in suite order)."""
    if compression is not None and not spec.compressed:
        raise InputFileError(path, f"a compressed {spec.name} run is not supported: decompress it first")
    if member != PER_PART:
        name = source_name(path, member)
        with open_stream(path, compression, member, only=True) as body:
            yield from spec.entries(body, name, chunk)
        return
    if compression != "tar.gz":
        raise InputFileError(path, f'member = "{PER_PART}" (one member per part) needs a .tar.gz archive')
    if spec.match != "text":
        raise InputFileError(path, f'member = "{PER_PART}" (one member per part) is for runs matched by question text, not {spec.name}')
    if not parts:
        raise InputFileError(path, f'member = "{PER_PART}" needs a suite with parts')
    starts, at = {}, 0
    for part_name, count in parts:
        starts[part_name] = range(at, at + count)
        at += count
    for member_name, part_name, body in iter_part_members(path, [n for n, _ in parts]):
        name = source_name(path, member_name)
        placer.part(name, starts[part_name])
        yield from spec.entries(body, name, chunk)


def _checked(entry: Entry, question: Question, name: str, has: Callable[[str], bool] | None = None,
             corpus: str | None = None) -> None:
    """Check an entry's ranking (:func:`harness.scoring.rankings.check_columns`) and, with ``has``
    (membership in the suite's corpus, named ``corpus``), that every passage it carries no text
    for is in the corpus, below its first hit too: the rule of every reading strategy
    (:func:`harness.runfiles.ranks.score_run`)."""
    from harness.scoring.rankings import check_columns

    try:
        check_columns(entry.ids, entry.scores, question=question.id, source=name)
    except HarnessError as exc:
        problem = str(exc).removeprefix(f"{name}: ")
        if entry.where == f"question {question.id!r}: ":  # said once
            problem = problem.removeprefix(entry.where)
        raise InputFileError(name, f"{entry.where}{problem}", line=entry.line) from None
    if has is not None:
        unknown = unknown_passage(entry.ids, entry.texts, has)
        if unknown is not None:
            raise InputFileError(name, f"{entry.where}{unknown_message(unknown, entry.ids[unknown], corpus)}", line=entry.line)


def unknown_passage(ids: Sequence[str], texts: Sequence[Any], has: Callable[[str], bool]) -> int | None:
    """The position of the first passage of a ranking that carries no text and is not in the
    corpus (``has``), or None."""
    for position, (passage_id, text) in enumerate(zip(ids, texts)):
        if text is None and not has(passage_id):
            return position
    return None


def unknown_message(position: int, passage_id: str, corpus: str | None) -> str:
    """The problem of a passage the corpus does not have, as every reader words it."""
    return (f"hit {position} names passage {passage_id!r}, which is not in corpus {corpus!r} "
            "(and the run carries no text for it)")


@dataclass(frozen=True)
class StreamScore:
    """What :func:`score_streamed` found: each suite question's first-hit rank, the deepest
    ranking's length, the suite questions the file lacks and those whose answers differ."""

    ranks: list[int | None]
    depth: int
    missing: tuple[str, ...]
    answer_mismatches: tuple[str, ...]


def _passages(suite: Suite | None, corpus_lookup: Callable[[str], str] | None):
    if corpus_lookup is not None:
        return corpus_lookup
    if suite is None:
        return None

    def lookup(passage_id: str) -> str:
        try:
            return suite.corpus.get(passage_id).text
        except KeyError:
            raise HarnessError(f"the run names passage {passage_id!r}, which is not in corpus {suite.corpus.name!r}") from None

    return lookup


def score_streamed(
    path: str | Path,
    suite: Suite,
    spec: RunFormatSpec,
    *,
    compression: str | None = None,
    member: str | None = None,
    allow_index: bool | None = None,
    chunk: int = CHUNK,
) -> StreamScore:
    """Read, align, check and score a run one question at a time (see the module notes). A
    passage the file carries no text for is matched on its text in the suite's corpus."""
    from harness.scoring.ranks import first_hit_ranks
    from harness.scoring.rankings import corpus_has

    questions = suite.questions
    placer = _Placer(questions, source_name(path, member), spec, len(suite.parts) == 1 if allow_index is None else allow_index)
    parts = [(p.name, len(p.questions)) for p in suite.parts]
    ranks: list[int | None] = [None] * len(questions)
    depth = 0
    corpus_text = _passages(suite, None)
    has = corpus_has(suite.corpus)
    mode: MatchMode = suite.match
    for entry in _members(path, spec, compression, member, chunk, parts, placer):
        target = placer.target(entry)
        question = questions[target]
        _checked(entry, question, placer.keyed.name, has, suite.corpus.name)
        texts = entry.texts

        def lookup(position: int, _texts=texts, _ids=entry.ids) -> str:
            text = _texts[position]
            return text if text is not None else corpus_text(_ids[position])

        (rank,) = first_hit_ranks([question], [range(len(entry.ids))], lookup, mode=mode)
        ranks[target] = rank
        depth = max(depth, len(entry.ids))
    return StreamScore(ranks=ranks, depth=depth, missing=placer.missing(), answer_mismatches=placer.mismatched())


def read_streamed(
    path: str | Path,
    questions: Sequence[Question],
    spec: RunFormatSpec,
    *,
    compression: str | None = None,
    member: str | None = None,
    allow_index: bool = True,
    keep: int | None = None,
    chunk: int = CHUNK,
    parts: Sequence[tuple[str, int]] | None = None,
    corpus=None,
    lines: dict[str, tuple[str, int]] | None = None,
):
    """The file's rankings ``{suite question id: [(id, score, title, text, has_answer), ...]}``
    (every suite question, empty where the file lacks it), each cut to its top ``keep`` hits (all
    when None) as it is read, so memory is bounded by ``keep`` and not by the file; with the
    missing questions and those whose answers differ
    (:func:`harness.runfiles.readers.read_run` makes a ``Run`` of them). ``parts`` (each part's
    name and question count, in order) is needed for ``member = PER_PART``. With ``corpus`` every
    passage an entry carries no text for must be in it (one line naming the file and the line of
    the entry); ``lines``, when given, receives each question's ``(source, line)``."""
    from harness.scoring.rankings import corpus_has

    has = corpus_has(corpus) if corpus is not None else None
    questions = tuple(questions)
    placer = _Placer(questions, source_name(path, member), spec, allow_index)
    rankings: dict[str, tuple] = {q.id: () for q in questions}
    for entry in _members(path, spec, compression, member, chunk, parts, placer):
        target = placer.target(entry)
        question = questions[target]
        _checked(entry, question, placer.keyed.name, has, corpus.name if corpus is not None else None)
        stop = len(entry.ids) if keep is None else min(keep, len(entry.ids))
        rankings[question.id] = list(
            zip(entry.ids[:stop], entry.scores[:stop], entry.titles[:stop], entry.texts[:stop], entry.flags[:stop])
        )
        if lines is not None:
            lines[question.id] = (placer.keyed.name, entry.line)
    return rankings, placer.missing(), placer.mismatched()


__all__ = [
    "CHUNK", "COMPRESSIONS", "PER_PART", "Entry", "JsonLayout", "JsonMembers", "StreamScore",
    "detect_compression", "iter_entries", "iter_part_members", "open_stream", "part_of_member", "read_streamed",
    "score_streamed", "source_name",
]

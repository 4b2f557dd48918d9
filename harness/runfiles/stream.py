"""The stream engine: reading and scoring a run of any registered format one question at a time,
compressed or not.

Released runs are large: a top-1000 run with passage texts is gigabytes, and it comes gzip
compressed or inside a ``.tar.gz``. This engine decompresses while it reads (``gzip``, or the one
member of a tar archive that is asked for, read in place: nothing is extracted) and takes the
file's entries from its format's reader (``RunFormatSpec.entries``; for DPR's JSON family
:func:`iter_entries`, which decodes the top-level JSON list or object one member at a time with
the standard library's decoder over a sliding buffer, laid out as the format's
:class:`JsonLayout` says). What is kept is bounded by one question's entry plus the read buffer
(:data:`CHUNK`), not by the file:

- :func:`score_streamed` computes each question's first-hit rank as its entry is read (matching
  the texts the entry carries, or the suite corpus's where it carries none) and keeps only the
  rank and the ranking's length;
- :func:`read_streamed` builds the rankings of a :class:`~harness.runfiles.model.Run` of each
  question's top ``keep`` hits (with their texts), for re-ranking.

Entries are put on the suite's questions as the format's ``match`` says
(:data:`harness.api.runformats.RunMatch`, :class:`_Placer`).

Matching a file's questions to the suite: ``dpr-json`` list members answer the suite's questions
by position (member *i* is question *i*, and its ``question`` must equal the suite's), as DPR's
own files do. ``upr-json`` and ``rankify-json`` list members are matched by question TEXT, never
by position (:class:`_TextAligner`): each member's ``question`` must be a question of the suite
(after the references' only normalisation, ``’`` to ``'``; for Rankify also with the ``?`` its
``Question`` class appends), so a file in another order scores the same. A text the suite has
several times goes to its questions in suite order when their answers are the same, else to the
one whose answers equal the member's; a question matching no suite question, more members than
the suite has questions of that text, or a text whose answers single out none of its questions is
an error. Object members are matched by qid (suite ids, or positions) and their question checked,
as the one-piece readers do.

One member per part (``member = "{part}"``, :data:`PER_PART`): a ``.tar.gz`` that holds one
``.json`` file per suite part (UPR's EntityQuestions runs: one file per relation) is read in one
pass; each ``.json`` member belongs to the part whose name is a token of its file name (``P17``
in ``entity-questions/P17.test.json``, never in ``P170.json``) and its entries (list members, or
object members keyed by the relation file's own qids) are matched by text against that part's
questions only. A member naming no part or two, or two members of one part, is an error;
a part without a member counts its questions as missing.

Every problem is one :class:`~harness.errors.InputFileError` naming the file (``ARCHIVE (member
NAME)`` for a tar member) and the line the offending member starts on.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from harness.api import MatchMode, Question, RunEntry, RunFormatSpec, Suite
from harness.errors import HarnessError, InputFileError

#: Bytes read (compressed) at a time; the buffer holds about this much plus one member.
CHUNK = 4 << 20
COMPRESSIONS = ("gzip", "tar.gz")
#: ``member`` value of a ``.tar.gz`` holding one ``.json`` file per suite part.
PER_PART = "{part}"

_SPACE = re.compile(r"[ \t\n\r]*")
_INDEX = re.compile(r"[0-9]+")
_WIKI = "wiki:"


def detect_compression(path: str | Path) -> str | None:
    """``"gzip"`` or ``"tar.gz"`` from the file's first bytes, or None for a plain file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
            if magic != b"\x1f\x8b":
                return None
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as inner:
                head = inner.read(512)
    except OSError as exc:
        if isinstance(exc, (gzip.BadGzipFile, EOFError)) or "gzip" in str(exc).lower():
            raise InputFileError(path, "not a valid gzip file") from None
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    except EOFError:
        raise InputFileError(path, "truncated gzip file") from None
    return "tar.gz" if len(head) >= 262 and head[257:262] == b"ustar" else "gzip"


def source_name(path: str | Path, member: str | None) -> str:
    """How messages name a run: the file, or ``ARCHIVE (member NAME)``."""
    return f"{path} (member {member})" if member else str(path)


@contextmanager
def open_stream(path: str | Path, compression: str | None, member: str | None = None) -> Iterator[IO[bytes]]:
    """The run's bytes, decompressed as they are read: the file itself, its gzip content, or the
    regular-file member ``member`` of a tar archive (the only ``.json`` member when None)."""
    path = Path(path)
    if compression not in (None, *COMPRESSIONS):
        raise ValueError(f"unknown compression {compression!r}; known: {', '.join(COMPRESSIONS)}")
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    try:
        if compression is None:
            yield raw
        elif compression == "gzip":
            with gzip.GzipFile(fileobj=raw) as body:
                yield body
        else:
            try:
                archive = tarfile.open(fileobj=raw, mode="r|gz")
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
            with archive:
                yield _tar_member(archive, path, None if member == PER_PART else member)
    finally:
        raw.close()


def part_of_member(member: str, parts: Sequence[str]) -> list[str]:
    """The parts whose name is a token of ``member``'s file name (``P17`` in ``x/P17.test.json``,
    not in ``P170.json``): letters and digits on neither side."""
    base = member.rsplit("/", 1)[-1]
    return [p for p in parts if re.search(rf"(?<![A-Za-z0-9]){re.escape(p)}(?![A-Za-z0-9])", base)]


def iter_part_members(path: str | Path, parts: Sequence[str]) -> Iterator[tuple[str, str, IO[bytes]]]:
    """``(member name, part, body)`` for each ``.json`` member of the ``.tar.gz`` at ``path``, in
    archive order, read in one pass (each body only until the next member is asked for)."""
    path = Path(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    seen: dict[str, str] = {}
    names: list[str] = []
    with raw:
        try:
            archive = tarfile.open(fileobj=raw, mode="r|gz")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
        with archive:
            members = iter(archive)
            while True:
                try:
                    info = next(members, None)
                except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                    raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
                if info is None:
                    break
                name = info.name.removeprefix("./")
                names.append(name)
                if not (info.isreg() and name.endswith(".json")):
                    continue
                found = part_of_member(name, parts)
                if len(found) != 1:
                    what = "names no part" if not found else f"names parts {', '.join(found)}"
                    raise InputFileError(
                        path, f"member {name!r} {what} of the suite (one .json member per part, named with the part: "
                        f"{', '.join(parts[:4])}{', ...' if len(parts) > 4 else ''})",
                    )
                part = found[0]
                if part in seen:
                    raise InputFileError(path, f"members {seen[part]!r} and {name!r} are both part {part}")
                seen[part] = name
                body = archive.extractfile(info)
                if body is None:  # a regular file always has a body
                    raise InputFileError(path, f"member {name!r} cannot be read")
                yield name, part, body
    if not seen:
        listed = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
        raise InputFileError(path, f"the archive has no .json member (members: {listed or 'none'})")


def _tar_member(archive: tarfile.TarFile, path: Path, member: str | None) -> IO[bytes]:
    seen = []
    try:
        for info in archive:
            name = info.name.removeprefix("./")
            seen.append(name)
            wanted = name == member if member else name.endswith(".json")
            if wanted:
                if not info.isreg():
                    raise InputFileError(path, f"member {name!r} is not a regular file")
                body = archive.extractfile(info)
                assert body is not None  # a regular file always has a body
                return body
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
    what = f"member {member!r}" if member else ".json member"
    listed = ", ".join(repr(n) for n in seen[:5]) + (", ..." if len(seen) > 5 else "")
    raise InputFileError(path, f"the archive has no {what} (members: {listed or 'none'})")


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
                if self.eof:
                    self.fail(f"invalid JSON: {exc.msg}", exc.pos)
                self._more(want)
                want *= 2
                continue
            except RecursionError:
                self.fail("JSON nested too deeply")
            self.pos = end
            return value

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


#: One question of a run, checked (the record every format's reader yields).
Entry = RunEntry


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


class _Aligner:
    """Puts streamed entries on the suite's questions, with the one-piece readers' rules."""

    def __init__(self, questions: Sequence[Question], name: str, allow_index: bool):
        self.questions, self.name, self.allow_index = questions, name, allow_index
        self.positions = {q.id: i for i, q in enumerate(questions)}
        self.by: str | None = None  # "id" or "index" for object-shaped runs, fixed by the first entry
        self.seen: dict[int, str] = {}
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
            raise InputFileError(self.name, f"question {entry.qid!r} and {self.seen[target]!r} are the same suite question {question.id!r}", line=entry.line)
        self.seen[target] = entry.qid
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


def _members(path: str | Path, spec: RunFormatSpec, compression: str | None, member: str | None, chunk: int,
             parts: Sequence[tuple[str, int]] | None, placer: _Placer) -> Iterator[Entry]:
    """The entries of the run, from one member or, for :data:`PER_PART`, from each part's member
    in turn (``parts``: each part's name and question count, in suite order)."""
    if compression is not None and not spec.compressed:
        raise InputFileError(path, f"a compressed {spec.name} run is not supported: decompress it first")
    if member != PER_PART:
        name = source_name(path, member)
        with open_stream(path, compression, member) as body:
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


def _checked(entry: Entry, question: Question, name: str) -> None:
    from harness.scoring.rankings import check_columns

    try:
        check_columns(entry.ids, entry.scores, question=question.id, source=name)
    except HarnessError as exc:
        raise InputFileError(name, f"{entry.where}{str(exc).split(': ', 1)[-1]}", line=entry.line) from None


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

    questions = suite.questions
    placer = _Placer(questions, source_name(path, member), spec, len(suite.parts) == 1 if allow_index is None else allow_index)
    parts = [(p.name, len(p.questions)) for p in suite.parts]
    ranks: list[int | None] = [None] * len(questions)
    depth = 0
    corpus_text = _passages(suite, None)
    mode: MatchMode = suite.match
    for entry in _members(path, spec, compression, member, chunk, parts, placer):
        target = placer.target(entry)
        question = questions[target]
        _checked(entry, question, placer.keyed.name)
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
):
    """The file's rankings ``{suite question id: [(id, score, title, text, has_answer), ...]}``
    (every suite question, empty where the file lacks it), each cut to its top ``keep`` hits (all
    when None) as it is read, so memory is bounded by ``keep`` and not by the file; with the
    missing questions and those whose answers differ
    (:func:`harness.runfiles.readers.read_run` makes a ``Run`` of them). ``parts`` (each part's
    name and question count, in order) is needed for ``member = PER_PART``."""
    questions = tuple(questions)
    placer = _Placer(questions, source_name(path, member), spec, allow_index)
    rankings: dict[str, tuple] = {q.id: () for q in questions}
    for entry in _members(path, spec, compression, member, chunk, parts, placer):
        target = placer.target(entry)
        question = questions[target]
        _checked(entry, question, placer.keyed.name)
        stop = len(entry.ids) if keep is None else min(keep, len(entry.ids))
        rankings[question.id] = list(
            zip(entry.ids[:stop], entry.scores[:stop], entry.titles[:stop], entry.texts[:stop], entry.flags[:stop])
        )
    return rankings, placer.missing(), placer.mismatched()


__all__ = [
    "CHUNK", "COMPRESSIONS", "PER_PART", "Entry", "JsonLayout", "JsonMembers", "StreamScore",
    "detect_compression", "iter_entries", "iter_part_members", "open_stream", "part_of_member", "read_streamed",
    "score_streamed", "source_name",
]

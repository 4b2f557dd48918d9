"""Shared pieces of the formats other tools write (:mod:`harness.runfiles.formats`: ``tevatron``,
``ranx``, ``flashrag``, ``rankify-dataset``, ``rankify-reranked``), read as a stream.

:func:`lines` gives a text run's lines one chunk at a time, :func:`item_entries` the entries of a
run of items (a JSON list, or JSON lines), and :func:`json_head` / :func:`item_keys` /
:func:`tab_columns` what the formats' ``sniff`` look at. What is kept is one question's entry
plus the read buffer, never the whole file. As everywhere in the harness, a ``has_answer`` flag a
file carries is never used for scoring, and passage ids lose DPR's ``wiki:`` prefix.

Matching a file's questions to the suite
----------------------------------------
- ``tevatron`` and ``ranx`` name questions by qid: suite question ids, or, where positions are
  allowed (single-part suites), positions ``0..n-1`` into the suite's questions (how Tevatron
  numbers DPR's NQ queries), one or the other, as for ``trec`` and ``pyserini-json``.
- ``flashrag`` and ``rankify-*`` items are matched by id when the first item's id (``id``;
  Rankify's ``query_id``) is a suite question id, and then every item's must be; otherwise by
  question text (FlashRAG's ids are the dataset's own, ``test_0``, ...): each item's question
  must be a question of the suite (after the references' only normalisation, ``’`` to ``'``),
  and a text the suite has several times is given to its questions in suite order. Matched by
  id, an item's question, where given, must equal the suite's.
- Suite questions absent from the file count as no hit (a warning gives their count), and a
  file's own answers are never used (questions whose file answers differ are warned about).
"""

from __future__ import annotations

import codecs
import io
import json
import math
import sys
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, NoReturn

from harness.errors import InputFileError
from harness.runfiles.stream import MAX_MEMBER, Entry, JsonMembers

#: ``locate(record, fail)``: an item's ``(id, answers, key of its docs, docs)``.
Locate = Callable[[dict, Callable[[str], NoReturn]], tuple[Any, Any, str, Any]]

_WIKI = "wiki:"
_SPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read(body: IO[bytes], name: str, size: int, line: int | None) -> bytes:
    try:
        return body.read(size)
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        raise InputFileError(name, f"cannot read the run (corrupt or truncated compressed data: {exc})", line=line) from None


def _bare(pid: Any) -> str | None:
    """The passage id as the harness names it, or None where it is not a string or integer."""
    if isinstance(pid, bool) or not isinstance(pid, (str, int)):
        return None
    pid = str(pid)
    return pid[len(_WIKI) :] if pid.startswith(_WIKI) else pid


def _number(value: Any) -> float | None:
    """A finite float from a JSON number or numeric string, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        score = float(value)
    except (ValueError, OverflowError):
        return None
    return score if math.isfinite(score) else None


class _Prefixed:
    """A binary stream whose first bytes were already read (``head``): what JsonMembers reads."""

    def __init__(self, head: bytes, body: IO[bytes]):
        self.head, self.body = head, body

    def read(self, size: int = -1) -> bytes:
        if self.head:
            data, self.head = (self.head, b"") if size is None or size < 0 else (self.head[:size], self.head[size:])
            return data
        return self.body.read(size)


def lines(body: IO[bytes], name: str, chunk: int, head: bytes = b"", limit: int = MAX_MEMBER,
          what: str = "") -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text stream, split on ``\\n`` only (a trailing ``\\r``
    removed), one chunk read at a time. A line longer than ``limit`` characters is an error
    (``what`` says what a line should be), so a file without line breaks is refused in bounded
    memory."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts: list[str] = []
    pending = 0  # characters held in parts
    line_no = 1
    data = head
    eof = False
    while not eof:
        if not data:
            data = _read(body, name, chunk, line_no)
            eof = not data
        try:
            text = decoder.decode(data, final=eof)
        except UnicodeDecodeError as exc:
            bad = line_no + data[: max(exc.start, 0)].count(b"\n")
            raise InputFileError(name, "not UTF-8 text", line=bad) from None
        data = b""
        start = 0
        while True:
            end = text.find("\n", start)
            if end < 0:
                break
            parts.append(text[start:end])
            line = "".join(parts)
            parts.clear()
            pending = 0
            if len(line) > limit:
                _too_long(name, line_no, limit, what)
            yield line_no, line[:-1] if line.endswith("\r") else line
            line_no += 1
            start = end + 1
        if start < len(text):
            parts.append(text[start:])
            pending += len(text) - start
            if pending > limit:
                _too_long(name, line_no, limit, what)
    if parts:
        line = "".join(parts)
        yield line_no, line[:-1] if line.endswith("\r") else line


def _too_long(name: str, line_no: int, limit: int, what: str) -> NoReturn:
    raise InputFileError(name, f"line longer than {limit:,} characters{f' ({what})' if what else ''}: is this the right file?",
                         line=line_no)


def _first_byte(body: IO[bytes], name: str, chunk: int) -> tuple[bytes, bytes]:
    """The first non-space byte of the stream (b"" when there is none) and the bytes read so far."""
    head = b""
    while True:
        data = _read(body, name, chunk, None)
        if not data:
            return b"", head
        head += data
        rest = head[len(_BOM) :] if head.startswith(_BOM) else head
        stripped = rest.lstrip(_SPACE)
        if stripped:
            return stripped[:1], head


# ---- the readers ------------------------------------------------------------------------------


def item_entries(
    body: IO[bytes], name: str, chunk: int, locate: Locate, *, ordered: bool = False, contents: bool = False
) -> Iterator[Entry]:
    """The entries of a run of items (FlashRAG's, Rankify's): a JSON list, or JSON lines (one
    object a line). ``locate(record, fail)`` gives an item's ``(id, answers, key, docs)`` (``fail``
    raises a one-line error about the item); each doc is ``{"id", "score"?, "title"?, "text"?,
    "has_answer"?}``. ``ordered``: the list order is the ranking and scores are not read;
    ``contents``: a doc without ``text`` has FlashRAG's ``contents`` (``"Title"\\ntext``)."""
    first, head = _first_byte(body, name, chunk)
    if not first:
        raise InputFileError(name, "empty run file")
    index = 0
    if first == b"[":
        members = JsonMembers(_Prefixed(head, body), name, chunk)
        for _key, record, line in members:
            yield _record_entry(record, index, line, name, locate, ordered, contents)
            index += 1
    elif first == b"{":
        try:
            import orjson
        except ImportError:  # the standard parser serves
            orjson = None
        for line_no, line in lines(body, name, chunk, head):
            if not line.strip():
                continue
            record = None
            if orjson is not None:
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    record = None  # the standard parser words the error (or accepts NaN, big numbers)
            if record is None:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputFileError(name, f"invalid JSON line: {exc.msg} (column {exc.colno})", line=line_no) from None
                except ValueError:  # int() refuses a literal of over sys.get_int_max_str_digits() digits
                    raise InputFileError(name, f"a JSON number has more than {sys.get_int_max_str_digits():,} digits",
                                         line=line_no) from None
                except RecursionError:
                    raise InputFileError(name, "JSON nested too deeply", line=line_no) from None
            yield _record_entry(record, index, line_no, name, locate, ordered, contents)
            index += 1
    else:
        raise InputFileError(name, "expected a JSON list of items or JSON lines (one item a line)", line=1)
    if not index:
        raise InputFileError(name, "no questions")


def _record_entry(record: Any, index: int, line: int, name: str, locate: Locate, ordered: bool, contents: bool) -> Entry:
    where = f"item {index}: "

    def fail(problem: str):
        raise InputFileError(name, where + problem, line=line)

    if not isinstance(record, dict):
        fail(f"expected an object, got {type(record).__name__}")
    qid_value, answers, key, docs = locate(record, fail)
    qid = None
    if qid_value is not None:
        if isinstance(qid_value, bool) or not isinstance(qid_value, (str, int)):
            fail(f"question id must be a string or integer, got {type(qid_value).__name__}")
        qid = str(qid_value)
    question = record.get("question")
    if question is not None and not isinstance(question, str):
        fail(f"'question' must be a string, got {type(question).__name__}")
    if not isinstance(docs, list):
        fail(f"{key!r} must be a list, got {type(docs).__name__}")
    ids, scores, texts, titles, flags = [], [], [], [], []
    scored = None
    for i, doc in enumerate(docs):
        at = f"{key}[{i}]: "
        if not isinstance(doc, dict):
            fail(f"{at}must be an object, got {type(doc).__name__}")
        if "id" not in doc:
            fail(f"{at}missing 'id' (the passage's id in the corpus)")
        pid = _bare(doc["id"])
        if pid is None:
            fail(f"{at}passage id must be a string or integer, got {type(doc['id']).__name__}")
        if not pid:
            fail(f"{at}empty passage id")
        value = doc.get("score")
        if ordered:
            score = float(-1 - i)
        else:
            has = value is not None
            if scored is None:
                scored = has
            if has != scored:
                fail(f"{at}{'missing' if scored else 'unexpected'} 'score': give every passage of a question a score, or none")
            if has:
                score = _number(value)
                if score is None:
                    fail(f"{at}score must be a finite number, got {_short(value)}")
            else:
                score = float(-1 - i)  # no scores: the list order is the ranking
        title, text = doc.get("title"), doc.get("text")
        for field_name, field_value in (("title", title), ("text", text)):
            if field_value is not None and not isinstance(field_value, str):
                fail(f"{at}{field_name!r} must be a string, got {type(field_value).__name__}")
        if contents and text is None:
            contents = doc.get("contents")
            if contents is not None and not isinstance(contents, str):
                fail(f"{at}'contents' must be a string, got {type(contents).__name__}")
            if contents is not None and "\n" in contents:
                first_line, _sep, text = contents.partition("\n")  # FlashRAG: "Title"\ntext
                if title is None:
                    title = first_line.strip('"')
        flag = doc.get("has_answer")  # carried for information only: never used for scoring
        if flag is not None and not isinstance(flag, bool):
            fail(f"{at}'has_answer' must be true or false, got {_short(flag)}")
        ids.append(pid)
        scores.append(score)
        texts.append(text)
        titles.append(title)
        flags.append(flag)
    return Entry(qid=qid, question=question, answers=answers, ids=ids, scores=scores, texts=texts, titles=titles,
                 flags=flags, line=line, where=where)


# ---- detection --------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonHead:
    """The beginning of a JSON run, for the formats' ``sniff``: whether it is a list, the first
    member (the first list item; an object's first key and value) and, for an object that is an
    item itself (JSON lines, or a single item), its keys (None otherwise)."""

    is_list: bool
    key: Any
    value: Any
    keys: frozenset | None


def json_head(head: str, reopen) -> JsonHead | None:
    """The :class:`JsonHead` of a run whose first characters (leading space removed) are ``head``,
    or None where it is not JSON or ends (or is invalid) before its first member does. The first
    member is looked for in ``head``; a plain file is read again (``reopen``) only when ``head``
    ends inside it (a compressed one, ``reopen=None``, is not decompressed a second time)."""
    if not head or head[0] not in "[{":
        return None
    try:
        return _json_head(io.BytesIO(head.encode("utf-8")), head[0])
    except InputFileError:
        pass
    if reopen is None:
        return None
    try:
        with reopen() as body:
            return _json_head(body, head[0])
    except InputFileError:
        return None


def _json_head(body: IO[bytes], first: str) -> JsonHead | None:
    members = iter(JsonMembers(body, "head"))
    try:
        key, value, _line = next(members)
    except StopIteration:
        return None
    if first == "[" or isinstance(value, dict):
        return JsonHead(first == "[", key, value, None)
    keys = {key}  # not {qid: ...}: the object is an item; gather its keys
    try:
        for key, _value, _line in members:
            keys.add(key)
    except InputFileError as exc:
        if "extra data after the top-level value" not in exc.problem:
            raise
    return JsonHead(False, None, None, frozenset(keys))


def item_keys(head: JsonHead | None) -> frozenset | None:
    """The keys of the run's first item (a list's first object, or a JSON-lines object), or None."""
    if head is None:
        return None
    if head.is_list:
        return frozenset(head.value) if isinstance(head.value, dict) else None
    return head.keys


def tab_columns(head: str, count: int) -> list[str] | None:
    """The first line's tab-separated columns when there are ``count`` non-empty ones."""
    if not head or head[0] in "[{":
        return None
    fields = head.split("\n", 1)[0].rstrip("\r").split("\t")
    return fields if len(fields) == count and all(f.strip() for f in fields) else None


def is_number(value: Any) -> bool:
    return _number(value) is not None


__all__ = ["JsonHead", "item_entries", "item_keys", "json_head", "lines", "tab_columns"]

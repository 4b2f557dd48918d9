"""The fast path for large JSON runs: typed decoding with msgspec, passage texts decoded when used.

A 3,610-question pyserini run with 100 stored passages each is about 290 MB, nine tenths of it
passage text, and building a dict, a string and a :class:`~harness.runfiles.readers.RunHit` for
each of its 361,000 contexts costs several times more than finding the first hits, which read
the text of a passage only up to each question's first hit. So :func:`read_columns` decodes a
DPR or pyserini JSON run with ``msgspec`` (typed, so the shape is checked while parsing) into
one :class:`Columns` per question: passage ids, scores and flags as plain lists, and each text
as the raw JSON string it is in the file (a :class:`msgspec.Raw` view of the memory-mapped
file), decoded only when used. :class:`ColumnarRankings` gives such a run the ordinary
``{question id: (RunHit, ...)}`` mapping (a question's hits are built when it is first looked
up), while scoring reads the columns directly (:mod:`harness.runfiles.ranks`).

Every context is still checked as the general reader checks it, up front: ids non-empty strings
or integers, scores numbers or numeric strings and not NaN, titles strings or null, flags
booleans or null, texts strings or null and, in a pyserini run, holding a newline (an escaped
``\\n`` found by a regular expression that steps over escape sequences; texts it cannot settle
are decoded). Where anything differs from that common shape, or msgspec refuses the file (NaN,
numbers out of range, lone surrogates, nesting too deep), :func:`read_columns` returns None and the general reader
(:mod:`harness.runfiles.readers`) reads the file and words any error. The two give the same run
(``tests/core/runfiles/test_runs_columns.py``).
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator, Mapping
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple

try:
    import msgspec
except ImportError:  # the general reader serves every file without it
    msgspec = None

_WIKI = "wiki:"


class Columns(NamedTuple):
    """One question's ranking as the fast path keeps it, best first."""

    ids: list[str]
    scores: list[float]
    #: Each passage's text as the raw JSON string of the file (a :class:`msgspec.Raw`), or None.
    texts: list[Any]
    #: DPR's separate titles (``dpr-json``); None for pyserini, whose title is the text's first line.
    titles: list[str | None] | None
    flags: list[bool | None]


def decode_text(raw: Any, pyserini: bool) -> tuple[str | None, str]:
    """``(title, text)`` of a raw JSON text: pyserini's stored ``title\\ntext`` split as its
    evaluator splits it (the text is the second line), or DPR's text as it is (title None)."""
    text = msgspec.json.decode(raw, type=str)
    if not pyserini:
        return None, text
    parts = text.split("\n")
    return parts[0], parts[1]


if msgspec is not None:
    _NULL_RAW = msgspec.Raw(b"null")

    class _PyseriniContext(msgspec.Struct):
        docid: str | int
        score: float | str
        text: msgspec.Raw = _NULL_RAW
        has_answer: bool | None = None

    class _PyseriniRecord(msgspec.Struct):
        contexts: list[_PyseriniContext]
        question: str | None = None
        answers: Any = None

    class _DprContext(msgspec.Struct):
        id: str | int
        score: float | str
        text: msgspec.Raw = _NULL_RAW
        title: str | None = None
        has_answer: bool | None = None

    class _DprRecord(msgspec.Struct):
        ctxs: list[_DprContext]
        question: str | None = None
        answers: Any = None

    _DECODERS = {
        "object": msgspec.json.Decoder(dict[str, _PyseriniRecord]),
        "list": msgspec.json.Decoder(list[_DprRecord]),
    }


class Decoded(NamedTuple):
    """One record of a JSON run read by the fast path."""

    qid: str
    columns: Columns
    question: str | None
    answers: Any


#: A raw JSON string holding an escaped newline: escape sequences are stepped over whole, so the
#: "\\n" found is one (not an escaped backslash followed by "n").
_HAS_NEWLINE = re.compile(rb'"[^"\\]*(?:\\[^n][^"\\]*)*\\n')
_STRING = re.compile(rb'"')


def _texts(texts: list, pyserini: bool) -> list | None:
    """The raw texts with JSON null as None, or None unless each is a string or null and (in a
    pyserini run) each string holds a newline."""
    if all(map((_HAS_NEWLINE if pyserini else _STRING).match, texts)):
        return texts
    out = []
    for raw in texts:
        if raw == _NULL_RAW:
            out.append(None)
        elif not _STRING.match(raw) or (pyserini and "\n" not in msgspec.json.decode(raw, type=str)):
            return None
        else:
            out.append(raw)
    return out


def _only(values: list, kind: type) -> bool:
    kinds = set(map(type, values))
    return not kinds or kinds == {kind}


def _columns(contexts: list, id_key: str, pyserini: bool) -> Columns | None:
    ids = [getattr(c, id_key) for c in contexts]
    if not _only(ids, str):
        ids = [str(pid) for pid in ids]  # msgspec let through strings and integers only
    if any(map(str.startswith, ids, repeat(_WIKI))):
        ids = [pid[len(_WIKI) :] if pid.startswith(_WIKI) else pid for pid in ids]
    if not all(ids):
        return None
    scores = [c.score for c in contexts]
    if not _only(scores, float):
        try:
            scores = [float(score) for score in scores]
        except ValueError:
            return None
        if any(score != score for score in scores):  # "NaN" as a string
            return None
    texts = _texts([c.text for c in contexts], pyserini)
    if texts is None:
        return None
    titles = None if pyserini else [c.title for c in contexts]
    return Columns(ids, scores, texts, titles, [c.has_answer for c in contexts])


def map_file(path: Path) -> memoryview | None:
    """The file's bytes, memory-mapped, without a UTF-8 byte order mark; None if it cannot be
    mapped."""
    try:
        with open(path, "rb") as f:
            view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if f.seek(0, 2) else b"")
    except (OSError, ValueError):
        return None
    return view[3:] if view[:3] == b"\xef\xbb\xbf" else view


def read_columns(path: Path, shape: str) -> list[Decoded] | None:
    """The records of a run of DPR's list (``shape="list"``: ``dpr-json``) or pyserini's object
    (``"object"``: ``pyserini-json``) in file order (DPR's qids are the item positions), or None
    where the general reader must read the file (see the module notes)."""
    if msgspec is None or shape not in _DECODERS:
        return None
    view = map_file(path)
    return None if view is None else decode_columns(view, shape)


def decode_columns(data: Any, shape: str) -> list[Decoded] | None:
    """:func:`read_columns` of JSON bytes."""
    if msgspec is None or shape not in _DECODERS:
        return None
    try:
        decoded = _DECODERS[shape].decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    pyserini = shape == "object"
    if pyserini and count_keys(data, b'"contexts"', len(decoded) + 1) != len(decoded):
        return None  # perhaps a qid given twice, which a dict keeps once: the general reader decides
    items = decoded.items() if pyserini else ((str(i), record) for i, record in enumerate(decoded))
    out = []
    for qid, record in items:
        columns = _columns(record.contexts if pyserini else record.ctxs, "docid" if pyserini else "id", pyserini)
        if columns is None:
            return None
        out.append(Decoded(qid, columns, record.question, record.answers))
    return out


def count_keys(data: Any, key: bytes, stop: int) -> int:
    """How many times the bytes ``key`` occur in ``data`` (bytes, or a memory-mapped file's
    view), counting up to ``stop``. A JSON object's key ``"contexts"`` occurs in a run once per
    record (a string's quotes are escaped, so no text holds it), so a pyserini run whose count
    differs from its decoded records may name a question twice."""
    if isinstance(data, (bytes, bytearray)):
        return data.count(key)
    source = data.obj if isinstance(data, memoryview) and hasattr(data.obj, "find") else bytes(data)
    offset = len(source) - len(data)  # a byte order mark cut from the view
    count, at = 0, offset
    while count < stop:
        at = source.find(key, at)
        if at < 0:
            break
        count += 1
        at += len(key)
    return count


class ColumnarRankings(Mapping):
    """``{question id: (RunHit, ...)}`` over :class:`Columns`, each question's hits built when it
    is first looked up (values that are already tuples of hits are kept as they are)."""

    def __init__(self, rankings: dict[str, Any], *, pyserini: bool, hit_type: type):
        self._rankings = rankings
        self._pyserini = pyserini
        self._hit = hit_type

    def __getitem__(self, qid: str):
        value = self._rankings[qid]
        if isinstance(value, Columns):
            value = self._rankings[qid] = self._build(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._rankings)

    def __len__(self) -> int:
        return len(self._rankings)

    def _build(self, columns: Columns) -> tuple:
        hits = []
        titles = columns.titles or [None] * len(columns.ids)
        for pid, score, raw, title, flag in zip(columns.ids, columns.scores, columns.texts, titles, columns.flags):
            text = None
            if raw is not None:
                split_title, text = decode_text(raw, self._pyserini)
                title = split_title if self._pyserini else title
            hits.append(self._hit(passage_id=pid, score=score, title=title, text=text, has_answer=flag))
        return tuple(hits)

    def columns(self, qid: str) -> Columns | None:
        """The question's columns, or None once its hits have been built (or for a missing question)."""
        value = self._rankings[qid]
        return value if isinstance(value, Columns) else None

    def matched_text(self, raw: Any) -> str:
        """The text scoring matches, from a raw text of the columns (:func:`decode_text`'s text)."""
        text = msgspec.json.decode(raw)  # a JSON string: checked when read
        if not self._pyserini:
            return text
        start = text.find("\n") + 1
        end = text.find("\n", start)
        return text[start:] if end < 0 else text[start:end]

    def lengths(self) -> list[int]:
        """Each question's number of hits, in order, without building any."""
        return [len(v.ids) if isinstance(v, Columns) else len(v) for v in self._rankings.values()]


__all__ = ["ColumnarRankings", "Columns", "Decoded", "count_keys", "decode_columns", "decode_text", "map_file", "read_columns"]

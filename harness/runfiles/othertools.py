"""Run files written by other tools: Tevatron, ranx, FlashRAG and Rankify, read as a stream.

Each reader is a generator (:func:`iter_other_entries`) that yields one question's checked
:class:`~harness.runfiles.stream.Entry` at a time, reading the file (plain, gzip, or a member of a
``.tar.gz``, :func:`harness.runfiles.stream.open_stream`) in chunks: JSON lines one line at a
time, a JSON list or object one member at a time (:class:`harness.runfiles.stream.JsonMembers`),
text runs one line at a time. What is kept is one question's entry plus the read buffer, never
the whole file. :func:`read_other` keeps each question's top ``keep`` hits as they are read (for
:func:`harness.runfiles.readers.read_run`, which makes a ``Run`` of them); :func:`score_other`
scores the entries one question at a time and keeps only the ranks.

As everywhere in the harness, a ``has_answer`` flag a file carries is never used for scoring:
each passage's text (the one the file carries, or the suite corpus's where it carries none) is
matched against the suite's answers by DPR's rule. Passage ids lose DPR's ``wiki:`` prefix, as
in :mod:`harness.runfiles.readers`.

Formats
-------
``tevatron``
    Tevatron's ranking file, ``qid<TAB>docid<TAB>score``, one line per hit, a question's lines
    together, best first. Written by ``write_ranking`` in ``src/tevatron/retriever/driver/search.py``
    of texttron/tevatron (``python -m tevatron.retriever.driver.search --save_text
    --save_ranking_to FILE``: ``f.write(f'{qid}\\t{idx}\\t{s}\\n')`` after sorting each question's
    hits by score, descending). Lines are split on white space, as Tevatron's own
    ``src/tevatron/utils/format/convert_result_to_trec.py`` splits them; each must have exactly
    3 columns and a numeric score. A question's ranking is its lines sorted by score, descending,
    ties keeping file order (for Tevatron's files that is the file order, which is the ranking
    ``convert_result_to_trec`` gives); a question's lines must be together (a qid that comes back
    after another question's lines is an error) and a passage listed twice for one question is
    an error. Its TREC output (``convert_result_to_trec``) is read by the ``trec`` format.

``ranx``
    ranx's JSON run, ``{qid: {docid: score}}``, as ``Run.save("run.json")`` writes it
    (``ranx/data_structures/run.py`` of AmenRa/ranx: ``save_json(self.to_dict(), path)``). A
    question's ranking is its documents by score, descending; ties (which ranx itself orders
    arbitrarily, ``np.argsort`` of the negated scores) are broken by document id in ascending
    string order, so the ranking does not depend on the order of the file's keys. Scores must be
    JSON numbers and finite. ranx's other outputs: TREC (``Run.save("run.trec")``) is the
    ``trec`` format; LZ4 (cbor2 in an LZ4 frame) and data frames are not read.

``flashrag``
    FlashRAG's saved dataset (``intermediate_data.json``): ``Dataset.save`` in
    ``flashrag/dataset/dataset.py`` of RUC-NLPIR/FlashRAG writes a JSON list of ``Item.to_dict()``,
    ``{"id", "question", "golden_answers", "output": {"retrieval_result": [doc, ...], ...}}``,
    where each doc is the corpus row the retriever returned (``flashrag/retriever/retriever.py``,
    ``load_docs``): ``{"id", "contents", ...}`` with ``contents`` = ``"Title"\\ntext``. JSON lines
    of such items, and ``retrieval_result`` at the top level of an item, are read too. A doc's
    ``id`` is its passage id; the text matched is ``contents`` after its first line (FlashRAG's
    own ``format_reference`` split; a doc's ``text`` key, where there is one, wins), or the suite
    corpus's text where ``contents`` has no newline. ``score`` (which FlashRAG keeps only in its
    retrieval cache) is optional: given for every doc of an item it must be numeric and
    descending, absent from every doc the list order is the ranking. Docs without ``id`` (what
    FlashRAG's BM25 returns from a pyserini index that stores contents) cannot be scored.

``rankify-dataset``
    Rankify's saved documents: ``Dataset.save_dataset`` / ``Dataset.save_documents`` in
    ``rankify/dataset/dataset.py`` of DataScienceUIBK/Rankify write, as a JSON list (``.json``)
    or JSON lines (``.jsonl``), ``{"question", "answers", "ctxs": [Context.to_dict(), ...]}``
    with ``Context.to_dict()`` = ``{"score", "has_answer", "id", "text"?, "title"?}`` (text and
    title only with ``save_text=True``); ``Document.to_dict()`` writes the same under
    ``"contexts"``. Contexts are best first; ids integers or strings; scores numbers (then
    descending) or null for every context of a question (then the list order is the ranking).
    Rankify's ``Question`` appends ``?`` to a question that lacks one, so a question matches the
    suite's question with or without that added ``?``. The released runs Rankify downloads (DPR's
    shape with ``query_id``) are the ``rankify-json`` format.

``rankify-reranked``
    The same files' re-ranked contexts, ``"reranked_ctxs"`` (``save_dataset(...,
    save_reranked=True)``): the list order is the ranking and scores are not used, since a
    listwise re-ranker reorders contexts and keeps their first-stage scores.

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
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from harness.api import MatchMode, Question, Suite
from harness.errors import InputFileError
from harness.runfiles.stream import (
    CHUNK,
    Entry,
    JsonMembers,
    StreamScore,
    _Aligner,
    _checked,
    _passages,
    open_stream,
    source_name,
)

#: The formats this module reads.
OTHER_FORMATS = ("tevatron", "ranx", "flashrag", "rankify-dataset", "rankify-reranked")
#: Formats whose questions are named by qid (the others are matched by id or question text).
_KEYED = ("tevatron", "ranx")

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


def _lines(body: IO[bytes], name: str, chunk: int, head: bytes = b"") -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text stream, split on ``\\n`` only (a trailing ``\\r``
    removed), one chunk read at a time."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts: list[str] = []
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
            yield line_no, line[:-1] if line.endswith("\r") else line
            line_no += 1
            start = end + 1
        if start < len(text):
            parts.append(text[start:])
    if parts:
        line = "".join(parts)
        yield line_no, line[:-1] if line.endswith("\r") else line


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


def iter_other_entries(body: IO[bytes], name: str, fmt: str, chunk: int = CHUNK) -> Iterator[Entry]:
    """The checked entries of a run in ``fmt`` (one of :data:`OTHER_FORMATS`), in file order, read
    from ``body`` a chunk at a time (see the module notes)."""
    if fmt == "tevatron":
        return _tevatron(body, name, chunk)
    if fmt == "ranx":
        return _ranx(body, name, chunk)
    if fmt in ("flashrag", "rankify-dataset", "rankify-reranked"):
        return _records(body, name, fmt, chunk)
    raise ValueError(f"unknown run format {fmt!r}; this module reads {', '.join(OTHER_FORMATS)}")


def _tevatron(body: IO[bytes], name: str, chunk: int) -> Iterator[Entry]:
    done: dict[str, int] = {}  # qid -> the line its lines start on
    qid: str | None = None
    first = 0
    hits: list[tuple[float, int, str]] = []
    lines_of: dict[str, int] = {}

    def entry() -> Entry:
        hits.sort(key=lambda h: -h[0])  # stable: ties keep file order
        ids = [pid for _score, _line, pid in hits]
        scores = [score for score, _line, _pid in hits]
        n = len(ids)
        return Entry(qid=qid, question=None, answers=None, ids=ids, scores=scores, texts=[None] * n,
                     titles=[None] * n, flags=[None] * n, line=first, where=f"question {qid!r}: ")

    for line_no, line in _lines(body, name, chunk):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise InputFileError(
                name, f"expected 3 tab-separated columns (qid, docid, score: Tevatron's ranking file), got {len(fields)}", line=line_no
            )
        q, docid, score_text = fields
        if q != qid:
            if qid is not None:
                yield entry()
            if q in done:
                raise InputFileError(
                    name, f"question {q!r} again: its lines (from line {done[q]}) must be together, as Tevatron writes them", line=line_no
                )
            qid, first = q, line_no
            done[q] = line_no
            hits, lines_of = [], {}
        score = _number(score_text)
        if score is None:
            raise InputFileError(name, f"score must be a finite number, got {_short(score_text)}", line=line_no)
        pid = _bare(docid)
        if not pid:
            raise InputFileError(name, "empty passage id", line=line_no)
        if pid in lines_of:
            raise InputFileError(name, f"passage {pid!r} listed twice for question {q!r} (first on line {lines_of[pid]})", line=line_no)
        lines_of[pid] = line_no
        hits.append((score, line_no, pid))
    if qid is None:
        raise InputFileError(name, "no run lines")
    yield entry()


def _ranx(body: IO[bytes], name: str, chunk: int) -> Iterator[Entry]:
    members = JsonMembers(body, name, chunk)
    count = 0
    for key, record, line in members:
        if members.kind != "object":
            raise InputFileError(name, "expected a JSON object {qid: {docid: score}} (ranx Run.save to .json)", line=1)
        where = f"question {key!r}: "
        if not isinstance(record, dict):
            raise InputFileError(name, f"{where}expected an object {{docid: score}}, got {type(record).__name__}", line=line)
        hits = []
        for docid, value in record.items():
            pid = _bare(docid)
            if not pid:
                raise InputFileError(name, f"{where}empty passage id", line=line)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputFileError(name, f"{where}document {docid!r}: score must be a number, got {_short(value)}", line=line)
            score = float(value)
            if not math.isfinite(score):
                raise InputFileError(name, f"{where}document {docid!r}: score is {value}", line=line)
            hits.append((score, pid))
        hits.sort(key=lambda h: (-h[0], h[1]))  # best first; ties by document id
        n = len(hits)
        count += 1
        yield Entry(qid=key, question=None, answers=None, ids=[p for _s, p in hits], scores=[s for s, _p in hits],
                    texts=[None] * n, titles=[None] * n, flags=[None] * n, line=line, where=where)
    if not count:
        raise InputFileError(name, "no questions")


def _records(body: IO[bytes], name: str, fmt: str, chunk: int) -> Iterator[Entry]:
    """FlashRAG's and Rankify's items: a JSON list, or JSON lines (one object a line)."""
    first, head = _first_byte(body, name, chunk)
    if not first:
        raise InputFileError(name, "empty run file")
    index = 0
    if first == b"[":
        members = JsonMembers(_Prefixed(head, body), name, chunk)
        for _key, record, line in members:
            yield _record_entry(record, index, line, name, fmt)
            index += 1
    elif first == b"{":
        try:
            import orjson
        except ImportError:  # the standard parser serves
            orjson = None
        for line_no, line in _lines(body, name, chunk, head):
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
                except RecursionError:
                    raise InputFileError(name, "JSON nested too deeply", line=line_no) from None
            yield _record_entry(record, index, line_no, name, fmt)
            index += 1
    else:
        raise InputFileError(name, "expected a JSON list of items or JSON lines (one item a line)", line=1)
    if not index:
        raise InputFileError(name, "no questions")


def _record_entry(record: Any, index: int, line: int, name: str, fmt: str) -> Entry:
    where = f"item {index}: "

    def fail(problem: str):
        raise InputFileError(name, where + problem, line=line)

    if not isinstance(record, dict):
        fail(f"expected an object, got {type(record).__name__}")
    if fmt == "flashrag":
        qid_value = record.get("id")
        answers = record.get("golden_answers")
        output = record.get("output")
        if isinstance(output, dict) and "retrieval_result" in output:
            key, docs = "output.retrieval_result", output["retrieval_result"]
        elif "retrieval_result" in record:
            key, docs = "retrieval_result", record["retrieval_result"]
        else:
            fail("missing 'retrieval_result' (FlashRAG's Dataset.save writes it in 'output')")
    else:
        qid_value = record.get("query_id", record.get("id"))
        answers = record.get("answers")
        keys = ("reranked_ctxs",) if fmt == "rankify-reranked" else ("ctxs", "contexts")
        key = next((k for k in keys if k in record), None)
        if key is None:
            if fmt == "rankify-reranked":
                fail("missing 'reranked_ctxs' (Rankify's save_dataset(..., save_reranked=True) writes it)")
            fail("missing 'ctxs' (or 'contexts'): the list of retrieved passages")
        docs = record[key]
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
    positional = fmt == "rankify-reranked"
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
        if positional:
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
        if fmt == "flashrag" and text is None:
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


# ---- alignment --------------------------------------------------------------------------------


def _normalized(text: str) -> str:
    return text.replace("\u2019", "'")


class _RecordAligner:
    """Puts FlashRAG's and Rankify's items on the suite's questions: by id, or by question text."""

    def __init__(self, questions: Sequence[Question], name: str, fmt: str):
        self.questions, self.name = questions, name
        self.rankify = fmt.startswith("rankify")
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
        # Rankify's Question.check_question appends "?" to a question without one.
        return mine == theirs or (self.rankify and mine == theirs + "?")

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
            key = text if text in self.texts else text[:-1] if self.rankify and text.endswith("?") and text[:-1] in self.texts else None
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


def _aligned(body: IO[bytes], name: str, questions: Sequence[Question], fmt: str, allow_index: bool, chunk: int):
    """The aligner and a generator of ``(suite position, checked entry)``."""
    if fmt in _KEYED:
        aligner: Any = _Aligner(questions, name, allow_index)

        def target(entry: Entry) -> int:
            return aligner.target(entry, positional=False)
    else:
        aligner = _RecordAligner(questions, name, fmt)
        target = aligner.target

    def entries() -> Iterator[tuple[int, Entry]]:
        for entry in iter_other_entries(body, name, fmt, chunk):
            position = target(entry)
            _checked(entry, questions[position], name)
            yield position, entry

    return aligner, entries()


def read_other(
    path: str | Path,
    questions: Sequence[Question],
    fmt: str,
    *,
    compression: str | None = None,
    member: str | None = None,
    allow_index: bool = True,
    keep: int | None = None,
    chunk: int = CHUNK,
):
    """The rankings of a run in ``fmt`` aligned with ``questions``, ``{suite question id: [(id,
    score, title, text, has_answer), ...]}`` (every suite question, empty where the file lacks
    it), each cut to its top ``keep`` hits (all when None) as it is read; with the missing
    questions and those whose answers differ, as :func:`harness.runfiles.stream.read_streamed`
    gives them (:func:`harness.runfiles.readers.read_run` makes a ``Run`` of them)."""
    name = source_name(path, member)
    questions = tuple(questions)
    rankings: dict[str, list] = {q.id: [] for q in questions}
    with open_stream(path, compression, member) as body:
        aligner, entries = _aligned(body, name, questions, fmt, allow_index, chunk)
        for position, entry in entries:
            stop = len(entry.ids) if keep is None else min(keep, len(entry.ids))
            rankings[questions[position].id] = list(
                zip(entry.ids[:stop], entry.scores[:stop], entry.titles[:stop], entry.texts[:stop], entry.flags[:stop])
            )
    return rankings, aligner.missing(), tuple(aligner.mismatched)


def score_other(
    path: str | Path,
    suite: Suite,
    fmt: str,
    *,
    compression: str | None = None,
    member: str | None = None,
    allow_index: bool | None = None,
    chunk: int = CHUNK,
) -> StreamScore:
    """Read, align, check and score a run in ``fmt`` one question at a time, keeping only each
    question's first-hit rank (as :func:`harness.runfiles.stream.score_streamed` does for JSON
    runs). A passage the file carries no text for is matched on its text in the suite's corpus."""
    from harness.scoring.ranks import first_hit_ranks

    name = source_name(path, member)
    questions = suite.questions
    allow = len(suite.parts) == 1 if allow_index is None else allow_index
    ranks: list[int | None] = [None] * len(questions)
    depth = 0
    corpus_text = _passages(suite, None)
    mode: MatchMode = suite.match
    with open_stream(path, compression, member) as body:
        aligner, entries = _aligned(body, name, questions, fmt, allow, chunk)
        for position, entry in entries:

            def lookup(i: int, _texts=entry.texts, _ids=entry.ids) -> str:
                text = _texts[i]
                return text if text is not None else corpus_text(_ids[i])

            (rank,) = first_hit_ranks([questions[position]], [range(len(entry.ids))], lookup, mode=mode)
            ranks[position] = rank
            depth = max(depth, len(entry.ids))
    return StreamScore(ranks=ranks, depth=depth, missing=aligner.missing(), answer_mismatches=tuple(aligner.mismatched))


# ---- detection --------------------------------------------------------------------------------

_FLASHRAG_KEYS = {"golden_answers", "retrieval_result", "output"}
_RANKIFY_KEYS = {"ctxs", "contexts", "reranked_ctxs"}


def _is_score(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def sniff_format(path: str | Path, head: str, compression: str | None = None, member: str | None = None) -> str | None:
    """One of :data:`OTHER_FORMATS` where the file's beginning is unmistakably one (``head`` is
    its first characters, leading space removed), else None (the formats of
    :mod:`harness.runfiles.readers` decide, and word any error):

    - text whose first line is 3 tab-separated columns with a numeric third: ``tevatron``;
    - a JSON object whose first member is ``{docid: number, ...}``: ``ranx``;
    - a JSON list or JSON lines whose first item has FlashRAG's keys (``golden_answers``,
      ``output``, ``retrieval_result``): ``flashrag``;
    - a JSON list whose first item has ``contexts`` or ``reranked_ctxs`` (not DPR's ``ctxs`` only),
      or whose first context starts with ``score`` (the key order of Rankify's
      ``Context.to_dict``; DPR's starts with ``id``), or JSON lines of such items:
      ``rankify-dataset``.
    """
    if not head:
        return None
    if head[0] not in "[{":
        first = head.split("\n", 1)[0].rstrip("\r")
        fields = first.split("\t")
        if len(fields) == 3 and all(f.strip() for f in fields) and _number(fields[2].strip()) is not None:
            return "tevatron"
        return None
    # The first member is looked for in the characters already read; only a plain file is opened
    # again when they end inside it (a compressed one is not decompressed a second time).
    try:
        return _sniff_json(io.BytesIO(head.encode("utf-8")), head[0])
    except InputFileError:
        pass
    if compression is not None:
        return None
    try:
        with open_stream(path, compression, member) as body:
            return _sniff_json(body, head[0])
    except InputFileError:
        return None


def _sniff_json(body: IO[bytes], first: str) -> str | None:
    """What :func:`sniff_format` says of a JSON stream; InputFileError where the stream ends (or
    is invalid) before that is settled."""
    members = iter(JsonMembers(body, "head"))
    try:
        key, value, _line = next(members)
    except StopIteration:
        return None
    if first == "[":
        return _sniff_item(value)
    if isinstance(value, dict):
        if not ({"contexts", "question", "answers"} & value.keys()) and all(_is_score(v) for v in value.values()):
            return "ranx"
        return None
    # Not {qid: ...}: the object is an item (JSON lines, or a single item); gather its keys.
    keys = {key}
    try:
        for key, _value, _line in members:
            keys.add(key)
    except InputFileError as exc:
        if "extra data after the top-level value" not in exc.problem:
            raise
    return _sniff_keys(keys)


def _sniff_keys(keys: set) -> str | None:
    if keys & _FLASHRAG_KEYS:
        return "flashrag"
    if keys & _RANKIFY_KEYS:
        return "rankify-dataset"
    return None


def _sniff_item(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    keys = set(item)
    if keys & _FLASHRAG_KEYS:
        return "flashrag"
    if "reranked_ctxs" in keys or ("contexts" in keys and "ctxs" not in keys):
        return "rankify-dataset"
    ctxs = item.get("ctxs")
    if isinstance(ctxs, list) and ctxs and isinstance(ctxs[0], dict) and next(iter(ctxs[0]), None) == "score":
        return "rankify-dataset"
    return None


__all__ = ["OTHER_FORMATS", "iter_other_entries", "read_other", "score_other", "sniff_format"]

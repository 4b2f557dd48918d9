"""``trec``: ``qid Q0 docid rank score tag``, whitespace separated, one passage a line.

A question's ranking is its lines sorted by the ``rank`` column (a stable sort: lines with equal
ranks keep file order); the second and sixth columns are not read. Each line must have exactly 6
columns, an integer rank and a numeric score; a passage listed twice for one question is an
error. Questions are named by qid (suite ids, or positions for single-part suites). Read whole
(a question's lines need not be together); a compressed TREC run is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from harness.api import RunEntry, RunFormatSpec
from harness.errors import InputFileError
from harness.runfiles.readers import Entry, RunHit, align, bare_id, open_text, parse_score, short


#: The longest line read, in characters (a run line is six short columns).
MAX_LINE = 1 << 16


def _parse(lines: Iterable[str], path: str | Path) -> list[Entry]:
    entries: dict[str, Entry] = {}
    seen: dict[tuple[str, str], int] = {}
    for line_no, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE:  # before splitting it into millions of fields
            raise InputFileError(path, f"line longer than {MAX_LINE:,} characters (a TREC run line is qid Q0 docid rank score tag): "
                                 "is this the right file?", line=line_no)
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise InputFileError(
                path, f"expected 6 whitespace-separated columns (qid Q0 docid rank score tag), got {len(fields)}", line=line_no
            )
        qid, _q0, docid, rank_text, score_text, _tag = fields
        try:
            rank = int(rank_text)
        except ValueError:
            problem = f"rank must be an integer, got {short(rank_text)}"
            if rank_text.lstrip("+-").isdigit():  # refused by int() for its length
                problem = f"rank has more than {sys.get_int_max_str_digits():,} digits"
            raise InputFileError(path, problem, line=line_no) from None
        score = parse_score(score_text, path, "", line_no)
        pid = bare_id(docid, path, "", line_no)
        if (qid, pid) in seen:
            raise InputFileError(
                path, f"passage {pid!r} listed twice for question {qid!r} (first on line {seen[qid, pid]})", line=line_no
            )
        seen[qid, pid] = line_no
        entry = entries.get(qid)
        if entry is None:
            entry = entries[qid] = Entry(qid=qid, line=line_no)
        entry.hits.append((rank, len(entry.hits), RunHit(passage_id=pid, score=score)))
    if not entries:
        raise InputFileError(path, "no run lines")
    for entry in entries.values():
        entry.hits.sort(key=lambda t: (t[0], t[1]))
    return list(entries.values())


def read_whole(path: Path, questions, allow_index: bool):
    entries = _parse(open_text(path).split("\n"), path)  # not splitlines(): \x0c etc. are not line ends
    return align(entries, questions, path, SPEC.name, allow_index)


def entries(body: IO[bytes], name: str, chunk: int) -> Iterator[RunEntry]:
    try:
        text = body.read().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(name, "not UTF-8 text") from None
    for entry in _parse(text.replace("\r\n", "\n").split("\n"), name):
        hits = [hit for _rank, _order, hit in entry.hits]
        n = len(hits)
        yield RunEntry(qid=entry.qid, question=None, answers=None, ids=[h.passage_id for h in hits],
                       scores=[h.score for h in hits], texts=[None] * n, titles=[None] * n, flags=[None] * n,
                       line=entry.line or 1, where=f"question {entry.qid!r}: ")


def sniff(head: str, reopen) -> bool:
    return head[0] not in "[{" and len(head.splitlines()[0].split()) == 6


SPEC = RunFormatSpec(
    name="trec",
    description="TREC run: qid Q0 docid rank score tag (trec_eval, pyserini, anserini, ranx .trec)",
    entries=entries,
    match="qid",
    sniff=sniff,
    sniff_order=900,
    compressed=False,
    whole=read_whole,
)

"""``tevatron``: Tevatron's ranking file, ``qid<TAB>docid<TAB>score``, one line per hit, a question's lines
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
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from harness.api import RunFormatSpec
from harness.errors import InputFileError
from harness.runfiles.othertools import _bare, _number, _short, is_number, lines, tab_columns
from harness.runfiles.stream import Entry


#: The longest line read, in characters (a ranking line is three short columns).
MAX_LINE = 1 << 16


def entries(body: IO[bytes], name: str, chunk: int) -> Iterator[Entry]:
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

    for line_no, line in lines(body, name, chunk, limit=MAX_LINE, what="a Tevatron ranking line is qid, docid and score"):
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


def sniff(head: str, reopen) -> bool:
    """Text whose first line is 3 tab-separated columns with a numeric third."""
    fields = tab_columns(head, 3)
    return fields is not None and is_number(fields[2].strip())


SPEC = RunFormatSpec(
    name="tevatron",
    description="Tevatron's ranking file: qid<TAB>docid<TAB>score, a question's lines together",
    entries=entries,
    match="qid",
    sniff=sniff,
    sniff_order=10,
    sniff_compressed=False,
    homepage="https://github.com/texttron/tevatron",
)

"""``ranx``: ranx's JSON run, ``{qid: {docid: score}}``, as ``Run.save("run.json")`` writes it
(``ranx/data_structures/run.py`` of AmenRa/ranx: ``save_json(self.to_dict(), path)``). A
question's ranking is its documents by score, descending; ties (which ranx itself orders
arbitrarily, ``np.argsort`` of the negated scores) are broken by document id in ascending
string order, so the ranking does not depend on the order of the file's keys. Scores must be
JSON numbers and finite. ranx's other outputs: TREC (``Run.save("run.trec")``) is the
``trec`` format; LZ4 (cbor2 in an LZ4 frame) and data frames are not read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import IO

from harness.api import RunFormatSpec
from harness.errors import InputFileError
from harness.runfiles.othertools import _bare, _short, json_head
from harness.runfiles.stream import Entry, JsonMembers


def entries(body: IO[bytes], name: str, chunk: int) -> Iterator[Entry]:
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
            try:
                score = float(value)
            except OverflowError:
                raise InputFileError(name, f"{where}document {docid!r}: score {_short(value)} is too large for a float", line=line) from None
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


def sniff(head: str, reopen) -> bool:
    """A JSON object whose first member is ``{docid: number, ...}``."""
    found = json_head(head, reopen)
    if found is None or found.is_list or not isinstance(found.value, dict):
        return False
    value = found.value
    return not ({"contexts", "question", "answers"} & value.keys()) and all(
        not isinstance(v, bool) and isinstance(v, (int, float)) for v in value.values()
    )


SPEC = RunFormatSpec(
    name="ranx",
    description="ranx's JSON run (Run.save to .json): {qid: {docid: score}}",
    entries=entries,
    match="qid",
    sniff=sniff,
    sniff_order=10,
    sniff_compressed=False,
    homepage="https://github.com/AmenRa/ranx",
)

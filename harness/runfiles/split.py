"""Scoring a large JSON run in two processes from the bytes up (``harness score`` on big files).

Reading a 290 MB run is as costly as scoring it, and one process can do only one at a time. So a
large DPR or pyserini JSON run that lays out its top-level members one per line (as ``json.dump``
with an indent, pyserini's converter and DPR's ``save_results`` write them) is cut in two between
two members, and each half is decoded (:func:`harness.runfiles.columns.decode_columns`), checked
and scored in its own process: this one and one forked child, which sends back only its
questions' ids, question texts and answers (for alignment, done here) and then their first-hit
ranks. The file's sha256 is computed meanwhile on a thread of this process.

A cut is found by searching, from the middle of the file, for a comma and a line break followed
by the first member's indentation and a member's first character. Raw line breaks occur in JSON
only between tokens, so a cut is never inside a string, and one at any depth but the top leaves
a half whose brackets do not balance, which fails to decode. Whenever anything is not the common
case (no cut, a half the fast path does not take, a question id in both halves, a ranking that
fails its checks, a text missing), :func:`score_json_split` returns None and the caller reads
and scores the file in one piece, which words any error exactly as for a small file. Errors of
alignment (unknown question ids, a question text that differs) are raised here, identical to the
one-piece reader's.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from harness.api import MatchMode, Question
from harness.errors import HarnessError
from harness.runfiles.columns import ColumnarRankings, Decoded, decode_columns, map_file
from harness.runfiles.model import Run, RunHit
from harness.runfiles.readers import _decoded_entries, _gc_paused, _targets, align
from harness.scoring.rankings import check_columns

#: Files smaller than this are read in one piece.
SPLIT_BYTES = 16 << 20

_OPEN = re.compile(rb"\s*([\[{])([ \t\r\n]*)")
_CLOSE = {b"[": b"]", b"{": b"}"}


class SplitScore(NamedTuple):
    """What :func:`score_json_split` found: the run's alignment (``rankings`` empty), each suite
    question's first-hit rank, the deepest ranking's length and the file's sha256."""

    run: Run
    ranks: list[int | None]
    depth: int
    sha256: str


def split_point(data: Any, shape: str, at: float = 0.5) -> tuple[int, int] | None:
    """``(end, start)`` such that ``data[:end]`` holds the first members (without the separating
    comma) and ``data[start:]`` the rest, cut at the first member boundary after the fraction
    ``at`` of the bytes; None where no cut is found."""
    opening = _OPEN.match(data)
    if opening is None or opening.group(1) != (b"[" if shape == "list" else b"{"):
        return None
    space = opening.group(2)
    if b"\n" not in space:
        return None
    indent = space[space.rindex(b"\n") + 1 :]
    first = b"{" if shape == "list" else b'"'
    cut = re.compile(rb",[ \t\r]*\n" + re.escape(indent) + re.escape(first))
    found = cut.search(data, int(len(data) * at))
    if found is None:
        return None
    return found.start(), found.end() - 1


def _half(data: Any, shape: str, cut: tuple[int, int], second: bool) -> list[Decoded] | None:
    opening = _OPEN.match(data).group(1)  # type: ignore[union-attr]
    if second:
        piece = b"".join((opening, data[cut[1] :]))
    else:
        piece = b"".join((data[: cut[0]], _CLOSE[opening]))
    decoded = decode_columns(piece, shape)
    return decoded or None


def _rank(
    decoded: Sequence[Decoded], targets: Sequence[int], questions: Sequence[Question], shape: str, mode: MatchMode, source: str
) -> tuple[dict[int, int | None], int] | None:
    """First-hit ranks of one half's questions by suite position, and its deepest ranking; None
    where the one-piece path must decide (a missing text, a ranking that fails its checks)."""
    from harness.runfiles.ranks import _first_hit_ranks_for_run

    rankings = {}
    chosen = []
    for record, target in zip(decoded, targets):
        question = questions[target]
        columns = record.columns
        if None in columns.texts:
            return None
        try:
            check_columns(columns.ids, columns.scores, question=question.id, source=source)
        except HarnessError:
            return None
        rankings[question.id] = columns
        chosen.append(question)
    run = Run(rankings=ColumnarRankings(rankings, pyserini=shape == "object", hit_type=RunHit), source=source)
    ranks = _first_hit_ranks_for_run(run, chosen, mode=mode, corpus=None, processes=1)
    depth = max((len(record.columns.ids) for record in decoded), default=0)
    return dict(zip(targets, ranks)), depth


def _digest(data: Any) -> str:
    digest = hashlib.sha256()
    for start in range(0, len(data), 1 << 24):
        digest.update(data[start : start + (1 << 24)])
    return digest.hexdigest()


def score_json_split(
    path: str | Path, questions: Sequence[Question], shape: str, *, mode: MatchMode, allow_index: bool,
    name: str | None = None,
) -> SplitScore | None:
    """Align, check and score a large ``dpr-json`` or ``pyserini-json`` run in two processes
    (see the module notes), or None where it must be read in one piece."""
    path = Path(path)
    if shape not in ("list", "object"):
        raise ValueError(f"shape must be 'list' or 'object', got {shape!r}")
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    if (os.cpu_count() or 1) < 2:
        return None
    data = map_file(path)
    if data is None or len(data) < SPLIT_BYTES:
        return None
    cut = split_point(data, shape)
    if cut is None:
        return None
    questions = tuple(questions)
    source = str(path)
    with _gc_paused():
        receive, send = multiprocessing.Pipe()
        pid = os.fork()
        if pid == 0:  # child: the second half; exits without cleanup
            code = 0
            try:
                receive.close()
                _second_half(send, data, shape, cut, questions, mode, source)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        send.close()
        # The whole file's digest (the mapping includes a byte order mark if there is one).
        whole = memoryview(data.obj) if data.obj is not None else data
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                digest = pool.submit(_digest, whole)
                found = _first_half(receive, data, shape, cut, questions, mode, source, path, allow_index, name)
                sha256 = digest.result()
        finally:
            receive.close()
            os.waitpid(pid, 0)
    if found is None:
        return None
    run, ranks, depth = found
    return SplitScore(run, ranks, depth, sha256)


def _second_half(conn, data, shape, cut, questions, mode, source) -> None:
    decoded = _half(data, shape, cut, second=True)
    conn.send(None if decoded is None else [(d.qid, d.question, d.answers) for d in decoded])
    if decoded is None:
        return
    targets = conn.recv()
    if targets is not None:
        conn.send(_rank(decoded, targets, questions, shape, mode, source))
    conn.close()


def _first_half(conn, data, shape, cut, questions, mode, source, path, allow_index, name):
    mine = _half(data, shape, cut, second=False)
    try:
        theirs = conn.recv()
    except EOFError:
        return None
    if mine is None or theirs is None:
        return None
    if shape == "object" and not {d.qid for d in mine}.isdisjoint(qid for qid, _q, _a in theirs):
        return None  # a qid in both halves: the one-piece reader keeps the last
    # Alignment reads only ids, questions and answers: entries without their rankings.
    meta = [(d.qid, d.question, d.answers) for d in mine] + theirs
    entries = _decoded_entries([Decoded(qid, None, question, answers) for qid, question, answers in meta], shape)  # type: ignore[arg-type]
    targets = _targets(entries, questions, path, shape == "list", allow_index)
    run = align(entries, questions, path, name, allow_index, shape=shape, targets=targets)
    conn.send(targets[len(mine) :])
    ours = _rank(mine, targets[: len(mine)], questions, shape, mode, source)
    try:
        other = conn.recv()
    except EOFError:
        return None
    if ours is None or other is None:
        return None
    ranks: list[int | None] = [None] * len(questions)
    for part in (ours[0], other[0]):
        for target, rank in part.items():
            ranks[target] = rank
    return run, ranks, max(ours[1], other[1])


__all__ = ["SPLIT_BYTES", "SplitScore", "score_json_split", "split_point"]

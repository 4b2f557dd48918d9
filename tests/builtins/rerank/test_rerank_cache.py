"""The re-ranking score cache shared by several processes: a rollback journal (never WAL, which
network file systems cannot share), concurrent writers and readers in separate processes losing no
row and never seeing a half-written batch, a locked file waited for and never taken for a damaged
one, and a file left in WAL mode switched back with its rows."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
import threading
import time

import pytest

from harness.errors import HarnessError

CONFIG = {"scorer": "test/1", "model": "m"}
PASSAGES_PER_QUESTION = 40


def _score(question: str, pid: str) -> float:
    """A deterministic float64 per pair, every bit used."""
    digest = hashlib.sha256(f"{question}\x00{pid}".encode()).digest()
    return -int.from_bytes(digest[:7], "little") / 2**40


def _rows(question: str) -> list[tuple[str, str, float]]:
    return [(f"p{i}", f"d{i}", _score(question, f"p{i}")) for i in range(PASSAGES_PER_QUESTION)]


def _questions(worker: int, workers: int, count: int) -> list[str]:
    """Each worker's questions: its own, and (every third) questions all workers write."""
    return [f"shared {n}" if n % 3 == 0 else f"w{worker} q{n}" for n in range(count)]


def _writer(directory: str, worker: int, workers: int, count: int, start, results) -> None:
    """Open the cache when every worker is ready, write ``count`` questions (one transaction each)
    while reading the others', and report what went wrong."""
    from harness_builtins.rerank.cache import ScoreCache

    problems: list[str] = []
    try:
        start.wait()
        cache = ScoreCache(directory, CONFIG)
        mine = _questions(worker, workers, count)
        others = [q for w in range(workers) if w != worker for q in _questions(w, workers, count)]
        keys = [(pid, digest) for pid, digest, _ in _rows("x")]
        for n, question in enumerate(mine):
            cache.put(question, _rows(question))
            for other in others[n::count][:3]:
                found = cache.get(other, keys)
                if len(found) not in (0, PASSAGES_PER_QUESTION):
                    problems.append(f"{other}: {len(found)} of {PASSAGES_PER_QUESTION} rows visible")
                expected = {(pid, digest): score for pid, digest, score in _rows(other)}
                if any(expected[key] != score for key, score in found.items()):
                    problems.append(f"{other}: a score differs")
        cache.close()
    except BaseException as exc:  # reported to the test, which fails on it
        problems.append(f"{type(exc).__name__}: {exc}")
    results.put((worker, problems))


def _dump(path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT question, passage_id, passage, score FROM scores ORDER BY 1, 2, 3").fetchall()


def test_the_cache_uses_a_rollback_journal_not_wal(tmp_path):
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(tmp_path, CONFIG)
    cache.put("q", _rows("q"))
    assert cache.journal_mode() == "delete"
    with sqlite3.connect(cache.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "delete"
    assert not cache.path.with_name(cache.path.name + "-wal").exists()
    assert not cache.path.with_name(cache.path.name + "-shm").exists()
    cache.close()


def test_a_cache_left_in_wal_mode_is_switched_back_with_its_rows(tmp_path):
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(tmp_path, CONFIG)
    cache.put("q", _rows("q"))
    cache.close()
    db = sqlite3.connect(cache.path)
    assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    db.close()
    again = ScoreCache(tmp_path, CONFIG)
    assert again.journal_mode() == "delete" and len(again) == PASSAGES_PER_QUESTION
    assert again.get("q", [(pid, d) for pid, d, _ in _rows("q")]) == {(pid, d): s for pid, d, s in _rows("q")}
    again.close()


def test_several_processes_share_one_cache_file(tmp_path):
    """Four processes open one new file at the same moment, then each writes its questions (a
    third of them written by all) while reading the others': no error, no lost row, no partial
    batch seen, and the file holds exactly what one process writing everything holds."""
    from harness_builtins.rerank.cache import ScoreCache

    workers, count = 4, 30
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(workers), ctx.Queue()
    shared = tmp_path / "shared"
    processes = [ctx.Process(target=_writer, args=(str(shared), w, workers, count, start, results)) for w in range(workers)]
    for process in processes:
        process.start()
    reports = dict(results.get(timeout=300) for _ in processes)
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert reports == {w: [] for w in range(workers)}
    assert not list(shared.glob("*.damaged")) and not list(shared.glob("*-wal"))

    single = ScoreCache(tmp_path / "single", CONFIG)
    for w in range(workers):
        for question in _questions(w, workers, count):
            single.put(question, _rows(question))
    single.close()
    (path,) = shared.glob("*.sqlite")
    questions = {q for w in range(workers) for q in _questions(w, workers, count)}
    assert len(_dump(path)) == len(questions) * PASSAGES_PER_QUESTION
    assert _dump(path) == _dump(single.path)
    reopened = ScoreCache(shared, CONFIG)  # still verified when opened
    assert len(reopened) == len(questions) * PASSAGES_PER_QUESTION
    reopened.close()


def _hold_lock(path, seconds: float, held: threading.Event) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    held.set()
    time.sleep(seconds)
    db.execute("ROLLBACK")
    db.close()


@pytest.fixture
def quick_locks(monkeypatch):
    from harness_builtins.rerank.cache import ScoreCache

    monkeypatch.setattr(ScoreCache, "busy_timeout", 0.05)
    monkeypatch.setattr(ScoreCache, "lock_wait", 30.0)
    return ScoreCache


def test_a_locked_cache_is_waited_for(tmp_path, quick_locks):
    cache = quick_locks(tmp_path, CONFIG)
    held = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(cache.path, 0.6, held))
    holder.start()
    held.wait()
    began = time.monotonic()
    cache.put("q", _rows("q"))  # waits past several busy timeouts, then writes
    assert time.monotonic() - began > 0.3
    holder.join()
    held.clear()
    holder = threading.Thread(target=_hold_lock, args=(cache.path, 0.6, held))
    holder.start()
    held.wait()
    reopened = quick_locks(tmp_path, CONFIG)  # opening waits too, and keeps the file
    holder.join()
    assert len(reopened) == PASSAGES_PER_QUESTION
    assert not list(tmp_path.glob("*.damaged"))
    cache.close()
    reopened.close()


def test_a_cache_locked_for_too_long_is_a_one_line_error_and_never_set_aside(tmp_path, quick_locks, monkeypatch):
    cache = quick_locks(tmp_path, CONFIG)
    cache.put("q", _rows("q"))
    monkeypatch.setattr(quick_locks, "lock_wait", 0.3)
    held = threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(cache.path, 1.5, held))
    holder.start()
    held.wait()
    try:
        with pytest.raises(HarnessError, match="could not write to it") as caught:
            cache.put("q2", _rows("q2"))
        assert "\n" not in str(caught.value)
        with pytest.raises(HarnessError, match="could not open it|could not check it"):
            quick_locks(tmp_path, CONFIG)
    finally:
        holder.join()
    assert not list(tmp_path.glob("*.damaged"))
    again = quick_locks(tmp_path, CONFIG)
    assert len(again) == PASSAGES_PER_QUESTION  # nothing lost, nothing half-written
    again.close()
    cache.close()

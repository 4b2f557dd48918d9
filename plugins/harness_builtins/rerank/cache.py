"""Re-ranking scores cached on disk, so a deeper or repeated re-ranking scores only what is new and
an interrupted run resumes.

One SQLite file per scoring configuration, ``CACHE_DIR/rerank/NAME/KEY.sqlite``, where ``KEY`` is
a digest of everything that changes a score (:func:`config_key`: the model's identity, the prompt
and target templates, max lengths, precision). Inside, one row per (question text, passage id,
passage digest) with the score as a float64, so a score comes back bit for bit; the passage digest
(sha256 of title and text) keeps a corpus whose passage ids were reused for other text from ever
reading another passage's score. A ``meta`` table repeats the full configuration and is checked
when the file is opened, with SQLite's ``quick_check`` of the whole file.

Several processes, on one machine or on several sharing the file over a network file system (NFS,
Lustre), may read and write one cache at once:

- the file uses a rollback journal (``journal_mode=DELETE``, ``synchronous=FULL``), never WAL,
  whose shared-memory index does not work across machines; a cache file left in WAL mode is
  switched back when opened;
- every write is one short transaction (``BEGIN IMMEDIATE``, one batched insert of a question's
  rows, ``COMMIT``), prepared before the lock is taken; a reader sees a batch whole or not at
  all, since SQLite's readers see only committed transactions;
- a lock held by another process is waited for (SQLite's busy timeout, then retries with a
  growing, jittered pause) for up to :attr:`ScoreCache.lock_wait` seconds, after which the
  failure is a one-line error; a locked file is never taken for a damaged one;
- rows are inserted with ``INSERT OR IGNORE``: a score, once stored, never changes, so whichever
  process scored a pair first, every later reader gets the same value;
- creating the tables and the ``meta`` rows is one transaction, so processes opening a new file
  at once agree on it.

SQLite relies on the file system's POSIX (``fcntl``) locks: on NFS they need a working lock
service (NFSv4, or ``lockd`` for NFSv3), on Lustre a mount with ``flock`` (``localflock`` locks
one node only). Without them no SQLite file is safe to share; keep the cache on local disk then
(``--cache-dir``).

Scores are committed after each question (the rollback journal makes every commit atomic, and a
process killed mid-transaction leaves a journal the next opener rolls back), so a run killed
half-way keeps what it scored. A file that is not a readable cache of this configuration
(damaged, truncated, another configuration under the same name, or an older layout, whose rows
carry no check) is set aside with a warning and rebuilt, never read.

Every row carries a check (:func:`row_check`): a digest of the configuration's key, the question,
the passage id, the passage digest and the score's exact bits. A row is used only when its score
is a finite float and its check matches; any other row (a score edited by hand or by another tool,
a row copied from a cache of another model or prompt, or one whose question or passage was
changed) is deleted and its pair scored again, with one warning per opened cache naming the file.
The check is not a secret: it catches edits that do not recompute it, not someone who does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import HarnessError, warn

#: Bump when the file layout changes; old files are then rebuilt.
FORMAT = "harness-rerank-scores/2"

#: SQLite result codes (primary, the low byte of an extended code) that mean another connection
#: holds a lock, and those that say nothing about the file's content (it is not set aside for them).
_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_NOT_DAMAGE_CODES = _BUSY_CODES | {3, 7, 8, 9, 10, 13, 14, 23}  # PERM, NOMEM, READONLY, INTERRUPT, IOERR, FULL, CANTOPEN, AUTH

T = TypeVar("T")


def config_key(config: Mapping[str, Any]) -> str:
    """A digest of a scoring configuration (a JSON-able mapping)."""
    blob = json.dumps(dict(config), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def passage_digest(title: str, text: str) -> str:
    """sha256 over a passage's title and text (each length-prefixed), 32 hex digits."""
    digest = hashlib.sha256()
    for part in (title, text):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:32]


def row_check(key: str, question: str, passage_id: str, passage: str, score: float) -> str:
    """The check stored with a row: sha256 over the configuration's key, the question, the passage
    id and digest (each length-prefixed) and the score's IEEE-754 bits, 32 hex digits."""
    digest = hashlib.sha256()
    for part in (key, question, passage_id, passage):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    digest.update(struct.pack("<d", score))
    return digest.hexdigest()[:32]


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_locked(exc: BaseException) -> bool:
    """Whether an SQLite error says another connection holds a lock (``database is locked``)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = _code(exc)
    if code is not None:
        return code in _BUSY_CODES
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _is_damage(exc: BaseException) -> bool:
    """Whether an error opening the file says its content is not a cache of this configuration."""
    if isinstance(exc, ValueError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = _code(exc)
    if code is None:
        return not is_locked(exc)
    return code not in _NOT_DAMAGE_CODES


def _rollback(db: sqlite3.Connection) -> None:
    """Roll back ``db``'s open transaction, if any (a failure to is left to the next attempt)."""
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass


class _NotDeleteMode(sqlite3.OperationalError):
    """The journal mode could not be switched (another connection holds the file in WAL mode)."""


class ScoreCache:
    """Scores of one configuration, by (question, passage id, passage digest)."""

    #: Seconds SQLite's busy handler waits for a lock before an attempt fails.
    busy_timeout = 30.0
    #: Seconds a read or write retries on a locked file, in all, before it is an error.
    lock_wait = 600.0

    def __init__(self, directory: str | os.PathLike, config: Mapping[str, Any]):
        self.config = json.loads(json.dumps(dict(config), sort_keys=True))
        self.key = config_key(self.config)
        self.path = Path(directory) / f"{self.key}.sqlite"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot create the score cache folder {self.path.parent}: {exc.strerror or exc}") from None
        self._db = self._open()
        #: Rows found bad (and dropped) since this cache was opened.
        self.dropped = 0

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except (sqlite3.DatabaseError, ValueError) as exc:
            if not _is_damage(exc):
                raise HarnessError(f"score cache {self.path}: {exc}") from None
            aside = self.path.with_name(self.path.name + ".damaged")
            warn(f"score cache {self.path} is unreadable ({exc}); moved to {aside.name} and rebuilt")
            try:
                os.replace(self.path, aside)
            except FileNotFoundError:
                pass  # another process set it aside first, and its journal with it
            else:
                # a journal left beside the damaged file would be played back into the new one
                for suffix in ("-journal", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
            try:
                return self._connect()
            except (sqlite3.DatabaseError, ValueError) as again:
                raise HarnessError(f"score cache {self.path}: cannot be rebuilt: {again}") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            self._retry(db, lambda: self._journal_mode(db), "open")
            db.execute("PRAGMA synchronous=FULL")
            self._retry(db, lambda: self._schema(db), "open")
            check = self._retry(db, lambda: db.execute("PRAGMA quick_check").fetchall(), "check")
            if not check or check[0][0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check[0][0] if check else 'no answer'}")
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _journal_mode(db: sqlite3.Connection) -> None:
        (mode,) = db.execute("PRAGMA journal_mode=DELETE").fetchone()
        if str(mode).lower() != "delete":
            raise _NotDeleteMode(f"the journal mode stays {mode!r} (another process has the file open in that mode)")

    def _schema(self, db: sqlite3.Connection) -> None:
        """Create the tables and the ``meta`` rows, or check them, in one write transaction."""
        expected = {"format": FORMAT, "config": json.dumps(self.config, sort_keys=True, ensure_ascii=False)}
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS scores (question TEXT NOT NULL, passage_id TEXT NOT NULL, "
                "passage TEXT NOT NULL, score REAL NOT NULL, row_check TEXT NOT NULL, "
                "PRIMARY KEY (question, passage_id, passage)) WITHOUT ROWID"
            )
            columns = [row[1] for row in db.execute("PRAGMA table_info(scores)").fetchall()]
            if columns != ["question", "passage_id", "passage", "score", "row_check"]:
                raise ValueError(f"its scores table has the columns {columns}, not those of {FORMAT}")
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                db.executemany("INSERT INTO meta VALUES (?, ?)", expected.items())
            elif meta != expected:
                raise ValueError("it holds scores of another configuration or format")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def _retry(self, db: sqlite3.Connection, attempt: Callable[[], T], what: str) -> T:
        """``attempt()``, again after a pause while it fails on a lock another connection holds
        (an open transaction is rolled back first), for up to :attr:`lock_wait` seconds."""
        deadline = time.monotonic() + self.lock_wait
        pause = 0.01
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not (is_locked(exc) or isinstance(exc, _NotDeleteMode)):
                    raise
                _rollback(db)
                if time.monotonic() >= deadline:
                    raise HarnessError(
                        f"score cache {self.path}: could not {what} it: {exc} for {self.lock_wait:g} s "
                        "(another process holds it; on a network file system, check that file locks work)"
                    ) from None
                time.sleep(pause * random.uniform(0.5, 1.5))
                pause = min(pause * 2, 1.0)

    def get(self, question: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """The cached scores among ``keys`` (``(passage id, passage digest)``) for ``question``; a
        row that fails its check is deleted (see the module notes) and left out, so it is scored
        again."""
        wanted = set(keys)
        query = "SELECT passage_id, passage, score, row_check FROM scores WHERE question = ?"
        rows = self._retry(self._db, lambda: self._db.execute(query, (question,)).fetchall(), "read")
        found, bad = {}, []
        for pid, passage, score, check in rows:
            if (pid, passage) not in wanted:
                continue
            problem = self._problem(question, pid, passage, score, check)
            if problem is None:
                found[pid, passage] = score
            else:
                bad.append((question, pid, passage, check, problem))
        if bad:
            self._drop(bad)
        return found

    def _problem(self, question: str, pid: str, passage: str, score: Any, check: Any) -> str | None:
        """Why a stored row cannot be used, or None."""
        if not isinstance(score, float):
            return f"its score {score!r} is not a number"
        if not math.isfinite(score):
            return f"its score {score!r} is not finite"
        if not isinstance(check, str) or check != row_check(self.key, question, pid, passage, score):
            return "its check does not match its question, passage and score (edited, or copied from another cache)"
        return None

    def _drop(self, bad: list[tuple[str, str, str, Any, str]]) -> None:
        """Delete rows that failed their check (only as they were read: a row written again
        meanwhile stays); the first of this cache is reported."""
        question, pid, _, _, problem = bad[0]
        if not self.dropped:
            warn(f"score cache {self.path}: the row of question {question[:80]!r}, passage {pid!r} is not used: {problem}; "
                 "such rows are deleted and scored again")
        self.dropped += len(bad)

        def write() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "DELETE FROM scores WHERE question = ? AND passage_id = ? AND passage = ? AND row_check IS ?",
                    [row[:4] for row in bad])
                self._db.execute("COMMIT")
            except BaseException:
                _rollback(self._db)
                raise

        self._retry(self._db, write, "write to")

    def put(self, question: str, scores: Iterable[tuple[str, str, float]]) -> None:
        """Store ``(passage id, passage digest, score)`` rows for ``question`` in one transaction
        (a pair already stored keeps its score), each with its :func:`row_check`. A score that is
        not a finite number is a ``ValueError``: it is never stored."""
        rows = []
        for pid, digest, score in scores:
            score = float(score)
            if not math.isfinite(score):
                raise ValueError(f"score cache: the score of passage {pid!r} is {score!r}, not a finite number")
            rows.append((question, pid, digest, score, row_check(self.key, question, pid, digest, score)))
        if not rows:
            return

        def write() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO scores VALUES (?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                _rollback(self._db)
                raise

        self._retry(self._db, write, "write to")

    def journal_mode(self) -> str:
        """The file's journal mode (``delete``)."""
        return str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower()

    def __len__(self) -> int:
        return self._retry(self._db, lambda: self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0], "read")

    def close(self) -> None:
        self._db.close()

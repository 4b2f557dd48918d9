"""Re-ranking scores cached on disk, so a deeper or repeated re-ranking scores only what is new and
an interrupted run resumes.

One SQLite file per scoring configuration, ``CACHE_DIR/rerank/NAME/KEY.sqlite``, where ``KEY`` is
a digest of everything that changes a score (:func:`config_key`: the model's identity, the prompt
and target templates, max lengths, precision). Inside, one row per (question text, passage id,
passage digest) with the score as a float64, so a score comes back bit for bit; the passage digest
(sha256 of title and text) keeps a corpus whose passage ids were reused for other text from ever
reading another passage's score. A ``meta`` table repeats the full configuration and is checked
when the file is opened.

Scores are committed after each question (SQLite's journal makes every commit atomic), so a run
killed half-way keeps what it scored. A file that is not a readable cache of this configuration
(damaged, truncated, another configuration under the same name) is set aside with a warning and
rebuilt, never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, warn

#: Bump when the file layout changes; old files are then rebuilt.
FORMAT = "harness-rerank-scores/1"


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


class ScoreCache:
    """Scores of one configuration, by (question, passage id, passage digest)."""

    def __init__(self, directory: str | os.PathLike, config: Mapping[str, Any]):
        self.config = json.loads(json.dumps(dict(config), sort_keys=True))
        self.key = config_key(self.config)
        self.path = Path(directory) / f"{self.key}.sqlite"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot create the score cache folder {self.path.parent}: {exc.strerror or exc}") from None
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except (sqlite3.DatabaseError, ValueError) as exc:
            aside = self.path.with_name(self.path.name + ".damaged")
            warn(f"score cache {self.path} is unreadable ({exc}); moved to {aside.name} and rebuilt")
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm", "-journal"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS scores (question TEXT NOT NULL, passage_id TEXT NOT NULL, "
                "passage TEXT NOT NULL, score REAL NOT NULL, PRIMARY KEY (question, passage_id, passage)) WITHOUT ROWID"
            )
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            expected = {"format": FORMAT, "config": json.dumps(self.config, sort_keys=True, ensure_ascii=False)}
            if not meta:
                db.executemany("INSERT INTO meta VALUES (?, ?)", expected.items())
            elif meta != expected:
                raise ValueError("it holds scores of another configuration or format")
            check = db.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check[0] if check else 'no answer'}")
        except BaseException:
            db.close()
            raise
        return db

    def get(self, question: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """The cached scores among ``keys`` (``(passage id, passage digest)``) for ``question``."""
        found: dict[tuple[str, str], float] = {}
        wanted = set(keys)
        rows = self._db.execute("SELECT passage_id, passage, score FROM scores WHERE question = ?", (question,))
        for passage_id, passage, score in rows:
            if (passage_id, passage) in wanted:
                found[passage_id, passage] = score
        return found

    def put(self, question: str, scores: Iterable[tuple[str, str, float]]) -> None:
        """Store ``(passage id, passage digest, score)`` rows for ``question`` in one transaction."""
        rows = [(question, pid, digest, float(score)) for pid, digest, score in scores]
        if not rows:
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]

    def close(self) -> None:
        self._db.close()

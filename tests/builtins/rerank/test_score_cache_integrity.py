"""The re-rankers' score cache: a row that fails its check (an edited score, a row copied from another
cache or another pair) is deleted, scored again and reported once; a non-finite score is never stored.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

# ------------------------------------------------------------------------------ the score cache


CONFIG = {"scorer": "test/1", "model": "m"}
KEYS = [("p1", "d1"), ("p2", "d2"), ("p3", "d3")]


def _filled(directory: Path, config=CONFIG):
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(directory, config)
    cache.put("q", [("p1", "d1", -1.25), ("p2", "d2", -2.5), ("p3", "d3", -3.75)])
    cache.close()
    return cache.path


@pytest.mark.parametrize("edit", [
    "UPDATE scores SET score = 9.0 WHERE passage_id = 'p2'",
    "UPDATE scores SET score = 'high' WHERE passage_id = 'p2'",
    "UPDATE scores SET score = 1e999 WHERE passage_id = 'p2'",
    # another pair's row relabelled as p2's
    "DELETE FROM scores WHERE question = 'q' AND passage_id = 'p2'; "
    "UPDATE scores SET passage_id = 'p2', passage = 'd2' WHERE question = 'q' AND passage_id = 'p1'",
    # another question's row of the same pair moved over
    "DELETE FROM scores WHERE question = 'q' AND passage_id = 'p2'; UPDATE scores SET question = 'q' WHERE question = 'other'",
], ids=["score", "text", "infinite", "other-pair", "other-question"])
def test_a_forged_score_row_is_deleted_scored_again_and_reported(tmp_path, capsys, edit):
    from harness_builtins.rerank.cache import ScoreCache

    path = _filled(tmp_path)
    other = ScoreCache(tmp_path, CONFIG)
    other.put("other", [("p2", "d2", 7.0)])  # same pair, another question: its row moved over by an edit
    other.close()
    with sqlite3.connect(path) as db:
        db.executescript(edit)
    cache = ScoreCache(tmp_path, CONFIG)
    found = cache.get("q", KEYS)
    assert ("p2", "d2") not in found and found[("p3", "d3")] == -3.75
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"score cache {path}" in err and "passage 'p2'" in err and "scored again" in err
    cache.put("q", [("p2", "d2", -2.5)])  # scored again: the new score is stored, not ignored
    assert cache.get("q", KEYS)[("p2", "d2")] == -2.5
    assert capsys.readouterr().err == ""
    cache.close()


def test_a_row_copied_from_another_models_cache_is_not_used(tmp_path, capsys):
    ours = _filled(tmp_path / "ours")
    theirs = _filled(tmp_path / "theirs", {**CONFIG, "model": "another"})
    with sqlite3.connect(theirs) as db:  # a row that is good in its own cache
        copied = db.execute("SELECT * FROM scores WHERE passage_id = 'p1'").fetchone()
    with sqlite3.connect(ours) as db:
        db.execute("DELETE FROM scores WHERE passage_id = 'p1'")
        db.execute("INSERT INTO scores VALUES (?, ?, ?, ?, ?)", copied)
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(tmp_path / "ours", CONFIG)
    assert ("p1", "d1") not in cache.get("q", KEYS) and cache.dropped == 1
    assert "copied from another cache" in capsys.readouterr().err
    cache.close()


def test_a_cache_without_row_checks_is_set_aside_and_a_non_finite_score_is_never_stored(tmp_path, capsys):
    from harness_builtins.rerank.cache import FORMAT, ScoreCache, config_key

    config = json.loads(json.dumps(CONFIG, sort_keys=True))
    old = tmp_path / f"{config_key(config)}.sqlite"
    with sqlite3.connect(old) as db:  # an older layout, even claiming the current format
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("format", FORMAT), ("config", json.dumps(config, sort_keys=True, ensure_ascii=False))])
        db.execute("CREATE TABLE scores (question TEXT NOT NULL, passage_id TEXT NOT NULL, passage TEXT NOT NULL, "
                   "score REAL NOT NULL, PRIMARY KEY (question, passage_id, passage)) WITHOUT ROWID")
        db.execute("INSERT INTO scores VALUES ('q', 'p1', 'd1', 100.0)")
    cache = ScoreCache(tmp_path, CONFIG)
    assert cache.get("q", KEYS) == {} and len(cache) == 0
    assert "moved to" in capsys.readouterr().err and old.with_name(old.name + ".damaged").exists()
    with pytest.raises(ValueError, match="not a finite number"):
        cache.put("q", [("p1", "d1", float("inf"))])
    assert len(cache) == 0
    cache.close()



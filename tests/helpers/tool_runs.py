"""Scoring other tools' run files through the CLI, and the tools' temporary home folder."""

from __future__ import annotations

import json

import pytest

from harness.cli.main import main
from harness.runfiles.ranks import score_run


def score_cli(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def scored_doc(capsys, tmp_path, run_file, *extra):
    out_dir = tmp_path / f"results-{run_file.name}-{len(extra)}"
    code, out, err = score_cli(capsys, "score", "-s", "demo", "--run", str(run_file), "--results-dir", str(out_dir),
                          "--name", "same", "--no-progress", *extra)
    assert code == 0, err
    (result,) = out_dir.glob("*.json")
    return json.loads(result.read_text())


def flat_ranks(suite, run):
    return {qid: rank for part in score_run(suite, run).values() for qid, rank in part.items()}


@pytest.fixture
def tool_home(tmp_path, monkeypatch):
    """A temporary home folder: importing rankify, or ranx (through ir_datasets), writes under ~."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RERANKING_CACHE_DIR", str(home / "rankify"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(home / "ir_datasets"))
    return home


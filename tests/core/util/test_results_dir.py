"""A user's runs go to a results folder of the user's; the committed leaderboard changes only when
asked to.

``harness run`` (and ``score``) write to ``$HARNESS_RESULTS_DIR``, else ``results/`` in the current
directory; ``harness leaderboard`` builds and checks the committed board from ``leaderboard/results``
whatever ``$HARNESS_RESULTS_DIR`` says. (The autouse fixture in conftest.py unsets
``HARNESS_RESULTS_DIR``; tests that use a default work in ``tmp_path``.)
"""

from __future__ import annotations

import json

import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.util.paths import LEADERBOARD_RESULTS, RESULTS_ENV, default_results_dir
from helpers.paths import REPO



def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_overlap(capsys, cache: Path, *extra: str) -> Path:
    """``harness run`` of the Java-free test retriever on demo; the path of the result it wrote."""
    code, out, err = cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--k", "1,5", "--no-progress",
                         "--cache-dir", str(cache), *extra)
    assert code == 0, err
    written = re.search(r"^result written to (.+)$", out, re.MULTILINE)
    assert written, out
    return Path(written.group(1))


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> contents)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_default_is_results_in_the_working_directory(monkeypatch, tmp_path):
    assert default_results_dir() == Path("results")
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "mine"))
    assert default_results_dir() == tmp_path / "mine"
    monkeypatch.setenv(RESULTS_ENV, "")  # empty: as if unset
    assert default_results_dir() == Path("results")
    assert LEADERBOARD_RESULTS == Path("leaderboard") / "results"


def test_a_run_writes_to_results_under_the_working_directory_not_the_leaderboard(
    capsys, tmp_path, monkeypatch, test_registries
):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path = run_overlap(capsys, tmp_path / "cache")
    assert path.parent == Path("results")
    assert [p.name for p in (work / "results").iterdir()] == [path.name]
    assert path.name.startswith("demo--test-overlap--") and path.suffix == ".json"
    assert not (work / "leaderboard").exists()
    assert sorted(p.name for p in work.iterdir()) == ["results"]


def test_harness_results_dir_still_redirects_a_run(capsys, tmp_path, monkeypatch, test_registries):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "elsewhere"))
    path = run_overlap(capsys, tmp_path / "cache")
    assert path.parent == tmp_path / "elsewhere" and path.is_file()
    assert list(work.iterdir()) == []  # neither results/ nor leaderboard/
    # --results-dir wins over the environment
    path = run_overlap(capsys, tmp_path / "cache", "--results-dir", str(tmp_path / "given"))
    assert path.parent == tmp_path / "given"


def test_the_leaderboard_reads_the_committed_results_and_user_runs_do_not_touch_it(
    capsys, tmp_path, monkeypatch, test_registries
):
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    # a tiny committed board, made as a maintainer would: a run written there on purpose
    committed = run_overlap(capsys, cache, "--results-dir", str(LEADERBOARD_RESULTS))
    assert committed.parent == LEADERBOARD_RESULTS
    code, out, err = cli(capsys, "leaderboard")
    assert code == 0, err
    assert (tmp_path / "leaderboard" / "README.md").is_file()
    assert cli(capsys, "leaderboard", "--check")[0] == 0
    board = files(tmp_path / "leaderboard")

    # the user's runs go to results/: another configuration, and the committed one run again
    mine = run_overlap(capsys, cache, "-o", "title_weight=3")
    again = run_overlap(capsys, cache)
    assert mine.parent == again.parent == Path("results") and again.name == committed.name
    assert files(tmp_path / "leaderboard") == board  # nothing of the committed board changed
    code, out, err = cli(capsys, "leaderboard", "--check")
    assert code == 0, err
    assert "up to date (1 result files" in out

    # $HARNESS_RESULTS_DIR names the user's results, not the committed board's
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    code, out, err = cli(capsys, "leaderboard", "--check")
    assert code == 0, err
    assert "up to date (1 result files" in out
    code, out, err = cli(capsys, "leaderboard")
    assert code == 0, err
    assert files(tmp_path / "leaderboard") == board

    # a board of the user's own results, elsewhere, when asked for
    code, out, err = cli(capsys, "leaderboard", "--results-dir", "results", "--output", "results/README.md")
    assert code == 0, err
    assert (tmp_path / "results" / "README.md").is_file()
    assert files(tmp_path / "leaderboard") == board

    # adding a run to the committed board is explicit, and then the check says so
    run_overlap(capsys, cache, "-o", "title_weight=3", "--results-dir", str(LEADERBOARD_RESULTS))
    code, out, err = cli(capsys, "leaderboard", "--check")
    assert code == 1 and "out of date" in err


@pytest.mark.parametrize("command", ["compare", "plot", "reproduce"])
def test_reading_commands_default_to_the_users_results(capsys, tmp_path, monkeypatch, test_registries, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "leaderboard" / "results").mkdir(parents=True)  # the committed folder is not read
    argv = {
        "compare": ["compare", "a", "b", "--suite", "demo"],
        "plot": ["plot", "topk", "--suite", "demo", "--output", str(tmp_path / "plots")],
        "reproduce": ["reproduce"],
    }[command]
    code, out, err = cli(capsys, *argv)
    if command == "plot":  # no results folder: nothing of the suite to draw
        assert code == 2 and "leaderboard" not in err, err
    else:
        assert code == 2 and "--results-dir results: no such folder" in err, err
    run_overlap(capsys, tmp_path / "cache")
    if command == "reproduce":
        code, out, err = cli(capsys, "reproduce")
        assert code == 0, err
        code, out, err = cli(capsys, "reproduce", "--results-dir", str(LEADERBOARD_RESULTS))
        assert code == 0 and "test-overlap" not in out, out


def test_help_names_the_defaults(capsys):
    code, out, _ = cli(capsys, "leaderboard", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "default: the committed board's leaderboard/results; $HARNESS_RESULTS_DIR does not change it" in flat
    assert "--results-dir leaderboard/results" in flat
    for command in ("run", "score", "compare", "plot", "reproduce"):
        code, out, _ = cli(capsys, command, "--help")
        assert code == 0
        flat = " ".join(out.split())
        assert "default: $HARNESS_RESULTS_DIR, else results/ in the current directory" in flat, command


def test_ci_checks_the_readme_command_against_the_committed_results(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "harness run --retriever bm25 --suite demo\n" in readme
    commands = [line.strip() for line in ci.splitlines() if line.strip().startswith("harness ")]
    assert "harness run --retriever bm25 --suite demo --no-progress" in commands
    assert "harness leaderboard --check" in commands
    assert "harness reproduce --check --allow-unpublished --results-dir leaderboard/results" in commands
    assert commands.index("harness run --retriever bm25 --suite demo --no-progress") < commands.index(
        "harness leaderboard --check"
    )
    # the fresh run is held against the committed file question by question: what it cost and when
    # it ran may differ, a rank may not
    import subprocess
    import sys

    check = ci.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    committed = next((REPO / "leaderboard" / "results").glob("demo--bm25--*.json"))
    data = json.loads(committed.read_text(encoding="utf-8"))
    fresh = tmp_path / committed.name
    fresh.write_text(json.dumps({**data, "created": "2030-01-01T00:00:00Z", "cost": {"seconds": 1}, "timings": {}}))
    done = subprocess.run([sys.executable, "-c", check, str(fresh), str(committed)], capture_output=True, text=True)
    assert done.returncode == 0 and "reproduces" in done.stdout, done.stderr
    part = next(iter(data["first_hit_ranks"]))
    question = next(iter(data["first_hit_ranks"][part]))
    moved = json.loads(json.dumps(data))
    moved["first_hit_ranks"][part][question] = 99 if data["first_hit_ranks"][part][question] != 99 else 98
    fresh.write_text(json.dumps(moved))
    done = subprocess.run([sys.executable, "-c", check, str(fresh), str(committed)], capture_output=True, text=True)
    assert done.returncode == 1 and "first_hit_ranks differ" in done.stderr
    assert "/results/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()

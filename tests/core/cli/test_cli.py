"""The command line: user errors are one line with exit 2, listing is instant, run writes a result."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cli.main import main
from helpers.paths import REPO



def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if not line.startswith("harness: warning:")]
    assert len(lines) == 1, err
    assert lines[0].startswith("harness: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["run", "--retriever", "bm52", "--suite", "demo"], ["unknown retriever 'bm52'", "did you mean 'bm25'?"]),
        (["run", "--retriever", "bm25", "--suite", "dmeo"], ["unknown suite 'dmeo'", "did you mean 'demo'"]),
        (["run", "-r", "bm25", "-s", "demo", "-m", "acuracy"], ["unknown metric 'acuracy'", "did you mean 'accuracy'?"]),
        (["run", "-r", "bm25", "-s", "demo", "--k", "0"], ["--k: '0' is not a positive integer"]),
        (["run", "-r", "bm25", "-s", "demo", "--k", "1,x"], ["--k: 'x' is not a positive integer"]),
        (["run", "-r", "bm25", "-s", "demo", "--k", "-5"], ["--k: '-5' is not a positive integer"]),
        (["run", "-r", "bm25", "-s", "demo", "--k", "1,,5"], ["--k: '' is not a positive integer"]),
        (["run", "-r", "bm25", "-s", "demo", "-o", "k3=1"], ["retriever 'bm25' has no option 'k3'", "b, k1"]),
        (["run", "-r", "bm25", "-s", "demo", "-o", "novalue"], ["--option: expected KEY=VALUE"]),
        (["list", "retreivers"], []),
    ],
)
def test_user_errors_are_one_line_with_exit_2(capsys, argv, fragments):
    code, out, err = run_cli(capsys, *argv)
    if argv[0] == "list":  # click's own usage error for a bad choice
        assert code == 2 and "Traceback" not in err and "retrievers" in err
        return
    assert_one_line_error(code, err, *fragments)


def test_unreadable_result_file_is_named(capsys, tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", str(tmp_path), "--output", str(tmp_path / "LB.md"))
    assert_one_line_error(code, err, "broken.json:1: invalid JSON")
    assert not (tmp_path / "LB.md").exists()


def test_list_prints_one_line_per_entry(capsys):
    code, out, err = run_cli(capsys, "list", "suites")
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("demo ") and "[synthetic]" in line for line in lines)
    code, out, _ = run_cli(capsys, "list", "metrics")
    assert [line.split()[0] for line in out.splitlines()][:2] == ["accuracy", "mrr"]


def test_plugins_lists_versions_and_hooks(capsys):
    code, out, err = run_cli(capsys, "plugins")
    assert code == 0
    bm25 = next(line for line in out.splitlines() if line.startswith("bm25 "))
    assert "odqa-harness 0.1.0" in bm25 and "register_retrievers" in bm25


@pytest.mark.parametrize("argv", [["list", "retrievers"], ["list", "suites"], ["--help"], ["run", "--help"]])
def test_listing_and_help_import_nothing_heavy(argv):
    code = (
        "import sys; from harness.cli.main import main; rc = main(%r); "
        "heavy = sorted(m for m in ('torch', 'pyserini', 'jnius', 'transformers', 'faiss', 'numpy', 'regex') "
        "if m in sys.modules); print('HEAVY', heavy); sys.exit(rc)" % (argv,)
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_run_prints_the_table_and_writes_one_result(capsys, tmp_path, test_registries):
    code, out, err = run_cli(
        capsys, "run", "-r", "test-overlap", "-s", "demo", "--k", "1,5,20", "--no-progress",
        "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"),
        "-o", "title_weight=2",
    )
    assert code == 0, err
    (path,) = (tmp_path / "results").glob("*.json")
    data = json.loads(path.read_text())
    assert data["retriever"] == {"name": "test-overlap", "plugin": "tests-fake", "parameters": {"title_weight": 2.0}}
    assert data["k"] == [1, 5, 20] and data["depth"] == 20
    assert len(data["first_hit_ranks"]) == 24
    assert set(data["timings"]) == {"load_suite", "load_retriever", "index", "search", "score"}
    assert data["suite"]["synthetic"] is True
    macro = data["metrics"]["accuracy"]["macro"]
    assert 0 <= macro["1"] <= macro["5"] <= macro["20"] <= 1
    assert "SYNTHETIC" in out and "macro average (24 parts)" in out
    assert "top-1" in out and "top-20" in out and "top-100" not in out
    assert f"result written to {path}" in out
    assert not list((tmp_path / "results").glob(".*"))  # no temporary files left


def test_leaderboard_check_detects_drift(capsys, tmp_path, test_registries):
    results, board = tmp_path / "results", tmp_path / "LB.md"
    run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--no-progress",
            "--results-dir", str(results), "--cache-dir", str(tmp_path / "c"))
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(board))
    assert code == 0 and board.exists()
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(board), "--check")[0] == 0
    board.write_text(board.read_text().replace("test-overlap", "tampered"))
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(board), "--check")
    assert code == 1 and "out of date" in err


def test_committed_leaderboard_matches_committed_results(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, err = run_cli(capsys, "leaderboard", "--check")
    assert code == 0, err

"""harness validate, harness submit and harness results pull from the command line: a temporary
board, a local bare git repository and a folder standing in for a Hugging Face snapshot."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.cli_errors import one_line_error, run_cli
from helpers.paths import REPO

BOARD = REPO / "leaderboard" / "results"
BM25 = BOARD / "demo--bm25--4566dfd2.json"
MINILM = BOARD / "demo--minilm--49567b6a.json"
TEMPLATE = REPO / ".github" / "PULL_REQUEST_TEMPLATE.md"
WORKFLOW = REPO / ".github" / "workflows" / "results.yml"


def doc_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def edited(path: Path) -> dict:
    """A committed result with one accuracy value edited."""
    doc = doc_of(path)
    doc["metrics"]["accuracy"]["macro"]["5"] += 0.05
    return doc


def test_validate_passes_the_committed_board(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    files = sorted(str(p.relative_to(REPO)) for p in BOARD.glob("*.json"))
    code, out, err = run_cli(capsys, "validate", *files)
    assert code == 0, out + err
    assert out.strip() == f"{len(files)} result files valid" and err == ""


def test_validate_prints_a_line_per_problem_and_exits_2(capsys, tmp_path):
    bad = write(tmp_path / "bad.json", edited(BM25))
    doc = doc_of(MINILM)
    doc["machine"] = {}
    worse = write(tmp_path / "worse.json", doc)
    code, out, err = run_cli(capsys, "validate", "--no-board", str(BM25), str(bad), str(worse))
    one_line_error(code, err, "2 of 3 result files have problems")
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{bad}: 'metrics.accuracy'.macro")
    assert [line.split(": ")[1].split(" ")[0] for line in lines[1:]] == ["'machine.platform'", "'machine.cpu_count'"]


def test_validate_of_a_missing_file_is_one_line(capsys, tmp_path):
    code, out, err = run_cli(capsys, "validate", str(tmp_path / "absent.json"))
    one_line_error(code, err, "1 of 1 result files have problems")
    assert out.startswith(f"{tmp_path / 'absent.json'}: cannot read result file")


# -- submit --------------------------------------------------------------------------------------------


@pytest.fixture
def board(tmp_path) -> Path:
    """A board holding one committed result (results/ inside it; README.md beside them)."""
    results = tmp_path / "board" / "results"
    results.mkdir(parents=True)
    shutil.copy(MINILM, results / MINILM.name)
    return results


def test_submit_adds_the_file_under_its_canonical_name_and_prints_the_pull_request(capsys, board, tmp_path):
    mine = tmp_path / "runs" / "my-bm25.json"
    write(mine, doc_of(BM25))
    code, out, err = run_cli(capsys, "submit", "--board", str(board), str(mine))
    assert code == 0, err
    assert (board / BM25.name).read_bytes() == mine.read_bytes()
    readme = board.parent / "README.md"
    assert readme.is_file() and (board.parent / "html" / "index.html").is_file() and (board.parent / "plots").is_dir()
    assert BM25.name in readme.read_text(encoding="utf-8") and MINILM.name in readme.read_text(encoding="utf-8")
    assert f"added {board / BM25.name}" in out
    assert f"git add {board / BM25.name} {readme}" in out
    # what was run, the command, and the disclosure checklist of the pull-request template
    assert "### bm25 on demo" in out and "top-20 83.83" in out
    assert "harness run --retriever bm25 --suite demo --k 1,5,20,100" in out
    checklist = [line for line in TEMPLATE.read_text(encoding="utf-8").splitlines() if line.startswith("- [ ]")]
    assert len(checklist) >= 4 and any("train or dev split" in line for line in checklist)
    for line in checklist:
        assert line in out.splitlines()
    # the board it wrote is what its results give
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", str(board), "--output", str(readme), "--check")
    assert code == 0, err


def test_submit_copies_nothing_when_a_file_has_a_problem(capsys, board, tmp_path):
    good = write(tmp_path / "good.json", doc_of(BM25))
    bad = write(tmp_path / "bad.json", edited(BM25))
    before = sorted(p.name for p in board.iterdir())
    code, out, err = run_cli(capsys, "submit", "--board", str(board), str(good), str(bad))
    assert code == 2
    assert f"{bad}: 'metrics.accuracy'.macro" in err and "nothing submitted" in err
    assert sorted(p.name for p in board.iterdir()) == before and not (board.parent / "README.md").exists()
    assert good.is_file()


def test_submit_refuses_drifted_numbers_of_a_configuration_on_the_board(capsys, board, tmp_path):
    doc = doc_of(MINILM)
    qid = next(q for q, r in doc["first_hit_ranks"]["P17"].items() if r is None or r > 0)
    doc["first_hit_ranks"]["P17"][qid] = 0
    from harness.results.build import compute_metrics

    doc["metrics"] = compute_metrics(doc["first_hit_ranks"], doc["k"], list(doc["metrics"]))
    drifted = write(tmp_path / "drifted.json", doc)
    code, out, err = run_cli(capsys, "submit", "--board", str(board), str(drifted))
    assert code == 2
    assert f"the board's {board / MINILM.name} holds this configuration with other numbers" in err
    assert (board / MINILM.name).read_bytes() == MINILM.read_bytes()


def test_submit_twice_says_it_is_already_there(capsys, board):
    code, out, err = run_cli(capsys, "submit", "--board", str(board), str(MINILM))
    assert code == 0, err
    assert f"{board / MINILM.name} is already on the board" in out


MARKUP = '<img src=x onerror=alert(1)>[x](javascript:alert(1))|**b**<script>alert(2)</script>'


def test_markup_in_every_text_field_reaches_the_board_escaped(capsys, board, tmp_path):
    doc = doc_of(BM25)
    doc["retriever"]["name"] = MARKUP
    doc["retriever"]["plugin"] = MARKUP
    doc["versions"]["plugins"][MARKUP] = {"distribution": MARKUP, "version": MARKUP}
    doc["retriever"]["parameters"] = {MARKUP: MARKUP, "model": MARKUP}
    doc["suite"]["description"] = MARKUP
    doc["suite"]["corpus"]["name"] = MARKUP
    doc["machine"]["platform"] = MARKUP
    doc["machine"]["accelerators"] = [{"name": MARKUP, "count": 1}]
    doc["versions"]["packages"][MARKUP] = MARKUP
    submitted = write(tmp_path / "markup.json", doc)
    code, out, err = run_cli(capsys, "submit", "--board", str(board), str(submitted))
    assert code == 0, err
    readme = (board.parent / "README.md").read_text(encoding="utf-8")
    pages = [p.read_text(encoding="utf-8") for p in (board.parent / "html").glob("*.html")]
    prose = re.sub(r"(?ms)^```\n.*?^```$", "", out)  # the command stays as typed, in a code block
    assert prose != out and prose.count("```") == 0
    for text in [readme, *pages, prose]:
        assert "<img" not in text and "<script>alert" not in text
    for text in [readme, prose]:  # markdown: a link only where its ] is not escaped
        assert re.search(r"(?<!\\)\]\(javascript:", text) is None
    for page in pages:
        assert re.search(r"(?:href|src)\s*=\s*[\"']?\s*javascript:", page, re.I) is None
    assert "[x\\](javascript:alert(1))" in readme
    assert any(html.escape(MARKUP, quote=True) in page for page in pages)


# -- results pull ------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main",
                    *args], cwd=cwd, check=True, capture_output=True)


def _results_tree(root: Path) -> Path:
    """A results repository's files: two valid results (one under a name of its own), one with an
    edited metric, and a JSON file that is no result."""
    write(root / "results" / BM25.name, doc_of(BM25))
    write(root / "results" / "theirs-minilm.json", doc_of(MINILM))
    write(root / "results" / "edited.json", edited(BM25))
    write(root / "package.json", {"name": "not a result"})
    return root


def _check_pulled(capsys, code, out, err, into: Path) -> None:
    assert code == 0, err
    assert sorted(p.name for p in into.iterdir()) == sorted([BM25.name, MINILM.name])
    assert (into / MINILM.name).read_bytes() == json.dumps(doc_of(MINILM)).encode("utf-8")
    assert f"kept results/theirs-minilm.json as {into / MINILM.name}" in out
    assert "refused results/edited.json: 'metrics.accuracy'.macro" in err
    assert "refused package.json: " in err
    assert "2 of 4 result files kept" in out
    # compare and a board of one's own read them
    code, out, err = run_cli(capsys, "compare", "bm25", "minilm", "--suite", "demo", "--results-dir", str(into),
                             "--resamples", "200", "--permutations", "200")
    assert code == 0, err
    assert "bm25" in out and "minilm" in out
    code, out, err = run_cli(capsys, "leaderboard", "--results-dir", str(into), "--output", str(into.parent / "board.md"))
    assert code == 0, err


def test_results_pull_from_a_local_bare_git_repository(capsys, tmp_path):
    work = _results_tree(tmp_path / "work")
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("commit", "-q", "-m", "results", cwd=work)
    bare = tmp_path / "results.git"
    _git("clone", "-q", "--bare", str(work), str(bare))
    into = tmp_path / "pulled"
    code, out, err = run_cli(capsys, "results", "pull", str(bare), str(into))
    _check_pulled(capsys, code, out, err, into)


def test_results_pull_from_a_hugging_face_dataset(capsys, tmp_path, monkeypatch):
    import huggingface_hub

    snapshot = _results_tree(tmp_path / "snapshot")
    calls = []

    def snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    into = tmp_path / "pulled"
    code, out, err = run_cli(capsys, "results", "pull", "someone/odqa-results", str(into))
    assert [(c["repo_id"], c["repo_type"]) for c in calls] == [("someone/odqa-results", "dataset")]
    _check_pulled(capsys, code, out, err, into)


def test_results_pull_keeps_the_newest_file_of_a_configuration(capsys, tmp_path):
    folder = tmp_path / "folder"
    older, newer = doc_of(BM25), doc_of(BM25)
    newer["created"] = "2026-12-01T00:00:00Z"
    write(folder / "a.json", newer)
    write(folder / "b.json", older)
    into = tmp_path / "pulled"
    code, out, err = run_cli(capsys, "results", "pull", str(folder), str(into))
    assert code == 0, err
    assert doc_of(into / BM25.name)["created"] == "2026-12-01T00:00:00Z"
    assert "left out b.json: a.json holds the same configuration and is newer" in err


def test_results_pull_with_nothing_valid_or_an_unreachable_source_is_one_line(capsys, tmp_path):
    folder = tmp_path / "folder"
    write(folder / "edited.json", edited(BM25))
    code, out, err = run_cli(capsys, "results", "pull", str(folder), str(tmp_path / "pulled"))
    assert code == 2 and "no valid result file (1 *.json files found, 1 refused)" in err.splitlines()[-1]
    code, out, err = run_cli(capsys, "results", "pull", (tmp_path / "absent.git").as_uri(), str(tmp_path / "pulled"))
    one_line_error(code, err, "cannot clone")
    code, out, err = run_cli(capsys, "results", "pull", "not a source", str(tmp_path / "pulled"))
    one_line_error(code, err, "neither a git URL nor a Hugging Face dataset id")


def test_the_workflow_runs_the_tested_commands():
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "pull_request" in text
    assert "harness validate --board" in text and "harness leaderboard --check" in text
    assert "leaderboard/results/*.json" in text


def test_results_pull_does_not_replace_a_result_covering_more(capsys, tmp_path):
    into = tmp_path / "pulled"
    write(into / BM25.name, doc_of(BM25))
    shallower = doc_of(BM25)
    shallower["k"] = [1, 5, 20]
    for values in shallower["metrics"].values():
        del values["macro"]["100"]
        for part in values["parts"].values():
            del part["100"]
    write(tmp_path / "folder" / "shallower.json", shallower)
    code, out, err = run_cli(capsys, "results", "pull", str(tmp_path / "folder"), str(into))
    assert code == 2
    assert f"refused shallower.json: {into / BM25.name} holds this configuration with cutoffs 100" in err
    assert doc_of(into / BM25.name)["k"] == [1, 5, 20, 100]

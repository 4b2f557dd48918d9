"""A trustworthy leaderboard: a forged cell fails ``--check``, names cannot forge columns, other
question sets get sections of their own, no row is replaced or lost silently, and results that
pass validation cannot crash a reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError, InputFileError
from harness.results.schema import read_result, validate, write_result
from helpers.board_cells import cells
from helpers.cli_errors import one_line_error, run_cli
from helpers.result_docs import make_result

# --- 1. a trustworthy leaderboard ---------------------------------------------------------------


def _board_files(tmp_path: Path, results: list[dict]) -> tuple[Path, Path]:
    results_dir, output = tmp_path / "results", tmp_path / "LB.md"
    for result in results:
        write_result(result, results_dir)
    return results_dir, output


def test_check_rejects_a_forged_cell(capsys, tmp_path):
    results_dir, output = _board_files(tmp_path, [make_result("honest")])
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output))[0] == 0
    forged = output.read_text().replace("25.00", "99.00", 1)
    assert forged != output.read_text()
    output.write_text(forged)
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output), "--check")
    assert code == 1 and "out of date" in err


def test_a_name_with_pipes_cannot_forge_columns(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    results_dir, _ = _board_files(tmp_path, [make_result("x | 100.00 | 100.00 | 100.00 | 100.00")])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    (row,) = cells(markdown)
    assert len(row) == 8 and row[2] == "25.00"  # 4 cutoffs, domain and result


def test_other_question_sets_get_their_own_sections(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    a, b = make_result("a"), make_result("b")
    b["suite"]["questions_fingerprint"] = "sha256:" + "f" * 64
    results_dir, _ = _board_files(tmp_path, [a, b])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    assert markdown.count("\n## s (question set ") == 2
    assert "were made on 2 different question sets" in markdown
    assert len(cells(markdown)) == 2  # one row in each section, never ranked together


def test_a_fuller_result_is_not_replaced_silently(tmp_path):
    full = make_result("r")
    path = write_result(full, tmp_path)
    shallow = make_result("r", k=[1, 5])
    with pytest.raises(HarnessError, match=r"cutoffs 20, 100 that the new one lacks.*not replacing it"):
        write_result(shallow, tmp_path)
    assert read_result(path).data["k"] == [1, 5, 20, 100]
    other_questions = make_result("r")
    other_questions["suite"]["questions_fingerprint"] = "sha256:other"
    with pytest.raises(HarnessError, match="another question set"):
        write_result(other_questions, tmp_path)
    write_result(shallow, tmp_path, replace=True)
    assert read_result(path).data["k"] == [1, 5]
    write_result(make_result("r", created="2027-01-01T00:00:00Z"), tmp_path)  # a fuller one replaces freely


def test_leaderboard_never_loses_rows_silently(capsys, tmp_path, monkeypatch):
    results_dir, output = _board_files(tmp_path, [make_result("a"), make_result("b")])
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output))[0] == 0
    before = output.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(empty), "--output", str(output))
    one_line_error(code, err, "would lose 2 row(s)", "nothing written")
    assert output.read_text() == before
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(tmp_path / "typo"), "--output", str(output))
    one_line_error(code, err, "no such folder")
    # another results folder never rewrites the project's own leaderboard by default
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir))
    one_line_error(code, err, "--output")
    assert not (tmp_path / "leaderboard").exists()
    assert run_cli(capsys, "leaderboard", "--results-dir", str(empty), "--output", str(output), "--force")[0] == 0


def test_the_leaderboard_shows_a_suites_own_cutoffs_and_other_metrics(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    result = make_result("r", k=[1, 3, 10], depth=10, ranks={"all": {"q1": 0, "q2": 4, "q3": None, "q4": 2}})
    result["metrics"] = {"mrr": {"macro": {"1": 0.25, "3": 0.25, "10": 0.3}, "parts": {"all": {"1": 0.25, "3": 0.25, "10": 0.3}}}}
    results_dir, _ = _board_files(tmp_path, [result])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    assert "| top-1 " in markdown and "| top-3 " in markdown and "| top-10 " in markdown
    assert "top-20" not in markdown
    main_row, mrr_row = cells(markdown)
    assert main_row[2:5] == ["25.00", "50.00", "75.00"]
    assert "mrr@10" in markdown and mrr_row[2:5] == ["25.00", "25.00", "30.00"]


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (lambda d: d["suite"]["parts"].append("oops"), "'suite.parts[1]'"),
        (lambda d: d["suite"].update(corpus={"name": 3}), "'suite.corpus'"),
        (lambda d: d["suite"]["corpus"].update(passages="many"), "'suite.corpus.passages'"),
        (lambda d: d["suite"].update(match="fuzzy"), "'suite.match'"),
        (lambda d: d["suite"].update(synthetic="yes"), "'suite.synthetic'"),
        (lambda d: d["retriever"].update(plugin=5), "'retriever.plugin'"),
        (lambda d: d.update(k=[1, 5, 20, 100, 1000]), "'k'"),
        (lambda d: d.update(depth=True), "'depth'"),
        (lambda d: d["metrics"].update(accuracy={"macro": {"1": "x"}, "parts": {}}), "'metrics.accuracy'.macro"),
        (lambda d: d["metrics"].update(accuracy=[]), "'metrics.accuracy'"),
        (lambda d: d["timings"].update(search="slow"), "'timings'"),
        (lambda d: d["first_hit_ranks"].update(extra={"q": 1}), "'first_hit_ranks' must have exactly the parts"),
    ],
)
def test_results_that_pass_validation_cannot_crash_readers(capsys, tmp_path, mutate, problem):
    data = make_result()
    mutate(data)
    with pytest.raises(InputFileError, match=problem.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        validate(data, source="x.json")
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    (results_dir / "bad.json").write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(tmp_path / "o.md"))
    one_line_error(code, err, "bad.json")



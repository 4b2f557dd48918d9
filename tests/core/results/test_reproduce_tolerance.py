"""``harness reproduce``'s two rules, at their boundaries, with hand-computed counts.

A reproduction table allows 0.02 points (pyserini's ``abs_tol=2e-2`` on percentages); a paper
table allows half a unit of the last printed digit plus its stated allowance. Each case puts a
result just inside and just outside the bound: with N questions a hit count h gives 100 h / N
percent, so the differences below are exact in decimal.
"""

from __future__ import annotations

import pytest

from harness.analysis.published import allowed_difference, checks, format_checks, read_published_table
from harness.cli.main import main
from harness.errors import InputFileError
from harness.results.schema import read_results, write_result

from helpers.result_docs import make_result


def table_file(tmp_path, header: str, values: str, name: str = "t-1", row_extra: str = "") -> object:
    text = f'name = "{name}"\ntitle = "T"\ncitation = "C"\nversion = "v1"\n{header}\n' \
           f'[[rows]]\nsystem = "S"\nsuite = "s"\nretriever = "r"\nvalues = {{ {values} }}\n{row_extra}'
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return read_published_table(path)


def result_with(tmp_path, hits: int, questions: int, params=None):
    """A result whose top-1 accuracy is hits / questions."""
    ranks = {"all": {f"q{i}": 0 if i < hits else None for i in range(questions)}}
    folder = tmp_path / f"results-{hits}-{questions}-{len(params or {})}"
    write_result(make_result("r", suite="s", ranks=ranks, params=params, k=[1]), folder)
    return read_results(folder)


def top1(table, results):
    done, _ = checks([table], results)
    (check,) = [c for c in done if c.k == 1]
    return check


# reproduction: 62.94 published, 10,000 questions (0.01-point steps): 62.96 / 62.92 inside (0.02),
# 62.97 / 62.91 outside (0.03).
@pytest.mark.parametrize("hits, inside", [(6294, True), (6296, True), (6292, True), (6297, False), (6291, False)])
def test_reproduction_tables_allow_two_hundredths_of_a_point(tmp_path, hits, inside):
    table = table_file(tmp_path, 'kind = "reproduction"\ndigits = 2', "1 = 62.94")
    assert allowed_difference(table, table.rows[0]) == 0.02
    assert top1(table, result_with(tmp_path, hits, 10_000)).within() is inside


# paper, one decimal, no allowance: 81.6 allows 0.05; 2,000 questions (0.05-point steps):
# 1633 -> 81.65 and 1631 -> 81.55 inside, 1634 -> 81.70 and 1630 -> 81.50 outside.
@pytest.mark.parametrize("hits, inside", [(1633, True), (1631, True), (1634, False), (1630, False)])
def test_paper_tables_allow_half_the_last_printed_digit(tmp_path, hits, inside):
    table = table_file(tmp_path, 'kind = "paper"\ndigits = 1', "1 = 81.6")
    assert allowed_difference(table, table.rows[0]) == pytest.approx(0.05)
    assert top1(table, result_with(tmp_path, hits, 2_000)).within() is inside


# paper, two decimals: 80.89 allows 0.005; 20,000 questions (0.005-point steps):
# 16179 -> 80.895 inside, 16180 -> 80.90 outside.
@pytest.mark.parametrize("hits, inside", [(16179, True), (16180, False), (16177, True), (16176, False)])
def test_two_printed_decimals_allow_half_a_hundredth(tmp_path, hits, inside):
    table = table_file(tmp_path, 'kind = "paper"\ndigits = 2', "1 = 80.89")
    assert top1(table, result_with(tmp_path, hits, 20_000)).within() is inside


# paper with an allowance: 75.0 printed with one decimal, allowance 1.0 -> 1.05 points;
# 2,000 questions: 1521 -> 76.05 and 1479 -> 73.95 inside, 1522 -> 76.10 and 1478 -> 73.90 outside.
@pytest.mark.parametrize("hits, inside", [(1521, True), (1479, True), (1522, False), (1478, False)])
def test_paper_allowance_adds_to_the_printed_precision(tmp_path, hits, inside):
    header = 'kind = "paper"\ndigits = 1\nallowance = { points = 1.0, reason = "re-trained" }'
    table = table_file(tmp_path, header, "1 = 75.0")
    assert allowed_difference(table, table.rows[0]) == pytest.approx(1.05)
    assert top1(table, result_with(tmp_path, hits, 2_000)).within() is inside


def test_digits_keep_the_printed_precision_that_toml_floats_lose(tmp_path):
    """81.60 printed with two decimals reads as the float 81.6; ``digits = 2`` keeps 0.005."""
    table = table_file(tmp_path, 'kind = "paper"\ndigits = 2', "1 = 81.60")
    assert allowed_difference(table, table.rows[0]) == pytest.approx(0.005)
    # a row's own digits override the table's
    table = table_file(tmp_path, 'kind = "paper"\ndigits = 2', "1 = 81.6", row_extra="digits = 1\n")
    assert allowed_difference(table, table.rows[0]) == pytest.approx(0.05)


def test_tolerance_override_is_in_points(tmp_path):
    table = table_file(tmp_path, 'kind = "reproduction"\ndigits = 2', "1 = 62.94")
    check = top1(table, result_with(tmp_path, 6394, 10_000))  # 63.94: one point off
    assert not check.within() and check.within(1.0) and not check.within(0.99)
    assert "--tolerance: ±1" in format_checks([check], [], 1.0)
    assert "reproduction: ±0.02" in format_checks([check], [])


def test_options_select_the_results_a_row_is_compared_with(tmp_path):
    table = table_file(tmp_path, 'kind = "paper"\ndigits = 1', "1 = 50.0", row_extra='options = { checkpoint = "nq-t0-3b" }\n')
    other = result_with(tmp_path, 1, 2, params={"checkpoint": "trivia-t0-3b"})
    done, missing = checks([table], other)
    assert not done and len(missing) == 1
    assert "harness run --retriever r --suite s -o checkpoint=nq-t0-3b" in format_checks(done, missing)
    same = result_with(tmp_path, 1, 2, params={"checkpoint": "nq-t0-3b", "batch_size": 8})
    done, missing = checks([table], same)
    assert len(done) == 1 and not missing and done[0].within()


@pytest.mark.parametrize(
    "header, values, problem",
    [
        ('kind = "paper"\ndigits = 1', "1 = 43.77", "top-1 = 43.77 has more decimals than 'digits' = 1"),
        ('kind = "published"', "1 = 43.7", "'kind' must be one of 'paper', 'reproduction'"),
        ('kind = "reproduction"\nallowance = { points = 1.0, reason = "x" }', "1 = 43.7", "'allowance' applies to kind = \"paper\" tables only"),
        ('kind = "paper"\nallowance = { points = 1.0 }', "1 = 43.7", "'allowance' must be a table"),
        ('kind = "paper"\nallowance = { points = -1, reason = "x" }', "1 = 43.7", "'allowance.points' must be"),
        ('kind = "paper"\ndigits = 1.5', "1 = 43.7", "'digits' must be a whole number"),
    ],
)
def test_bad_rule_keys_are_one_line_errors(tmp_path, header, values, problem):
    with pytest.raises(InputFileError) as info:
        table_file(tmp_path, header, values)
    assert problem in str(info.value) and "\n" not in str(info.value)


def test_cli_applies_each_tables_rule(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "specs" / "published"
    spec.mkdir(parents=True)
    (spec / "t-2.toml").write_text(
        'name = "t-2"\ntitle = "T"\ncitation = "C"\nkind = "reproduction"\ndigits = 2\n'
        '[[rows]]\nsystem = "S"\nsuite = "s"\nretriever = "r"\nvalues = { 1 = 62.94 }\n'
    )
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path / "specs"))
    from harness import registry

    registry._cache.clear()
    try:
        results = tmp_path / "results"
        ranks = {"all": {f"q{i}": 0 if i < 6297 else None for i in range(10_000)}}  # 62.97: 0.03 off
        write_result(make_result("r", suite="s", ranks=ranks, k=[1]), results)
        assert main(["reproduce", "--results-dir", str(results), "--check"]) == 1
        assert "drift by more than their tables' allowed difference" in capsys.readouterr().err
        assert main(["reproduce", "--results-dir", str(results), "--check", "--tolerance", "0.03"]) == 0
    finally:
        registry._cache.clear()

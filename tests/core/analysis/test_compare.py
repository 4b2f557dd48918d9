"""``harness compare``: intervals, paired tests and their refusals, on hand-made and committed results."""

from __future__ import annotations

import json
import math

import pytest

from harness.analysis.compare import System, check_comparable, compare, format_comparison, load_systems
from harness.cli.main import main
from harness.errors import HarnessError
from harness.results.schema import read_result, read_results, write_result

from helpers.result_docs import make_result
from helpers.paths import REPO

ROOT = REPO
COMMITTED = ROOT / "leaderboard" / "results"


def ranks_of(hit_ranks):
    return {"all": {f"q{i}": r for i, r in enumerate(hit_ranks)}}


@pytest.fixture
def two(tmp_path):
    # top-1 hits: A = 1111110000, B = 1000001100 -> A only: q1..q5 (5), B only: q6, q7 (2)
    a = make_result("a", ranks=ranks_of([0, 0, 0, 0, 0, 0, 3, None, None, 50]))
    b = make_result("b", ranks=ranks_of([0, 9, 9, 9, 9, None, 0, 0, None, 2]))
    write_result(a, tmp_path)
    write_result(b, tmp_path)
    return tmp_path


def test_pair_by_hand(two):
    c = compare(load_systems(["a", "b"], suite="s", results_dir=two), ks=[1, 5])
    assert c.accuracy["a"][1].value == pytest.approx(0.6)
    assert c.accuracy["b"][1].value == pytest.approx(0.3)
    top1 = next(t for t in c.pairs if t.measure == "top-1")
    assert (top1.a_only, top1.b_only) == (5, 2)
    # exact McNemar: 2 * P(X <= 2), X ~ Binomial(7, 1/2) = 2 * (1 + 7 + 21) / 128
    assert top1.p_value == pytest.approx(2 * 29 / 128)
    assert top1.difference.value == pytest.approx(0.3)
    top5 = next(t for t in c.pairs if t.measure == "top-5")
    # top-5 hits: A = 1111111000, B = 1000001101 -> A only: q1..q5, B only: q7, q9
    assert (top5.a_only, top5.b_only) == (5, 2)
    mrr = next(t for t in c.pairs if t.measure.startswith("MRR"))
    assert mrr.measure == "MRR@5" and mrr.test == "paired randomisation"
    # three tests, Holm: the smallest p times 3, then max with the next times 2, ...
    ps = sorted(t.p_value for t in c.pairs)
    holm = sorted(t.p_holm for t in c.pairs)
    assert holm[0] == pytest.approx(min(1, 3 * ps[0]))
    assert holm[1] == pytest.approx(max(holm[0], min(1, 2 * ps[1])))
    # intervals contain their estimate and the output says what was done
    for estimate in (c.accuracy["a"][1], top1.difference):
        assert estimate.low <= estimate.value <= estimate.high
    text = format_comparison(c)
    assert "Holm" in text and "McNemar" in text and "seed 0" in text


def test_same_seed_same_numbers_and_the_seed_matters(two):
    systems = load_systems(["a", "b"], suite="s", results_dir=two)
    one = compare(systems, seed=3).to_json()
    assert compare(systems, seed=3).to_json() == one
    assert compare(systems, seed=4).to_json() != one


def test_a_third_system_does_not_change_a_pairs_numbers(two):
    write_result(make_result("c", ranks=ranks_of([1] * 10)), two)
    pair = compare(load_systems(["a", "b"], suite="s", results_dir=two)).to_json()
    trio = compare(load_systems(["a", "b", "c"], suite="s", results_dir=two)).to_json()
    assert trio["systems"][:2] == pair["systems"]
    ab = [p for p in trio["pairs"] if (p["a"], p["b"]) == ("a", "b")]
    assert [p["difference"] for p in ab] == [p["difference"] for p in pair["pairs"]]


def test_baseline_compares_each_system_with_it_only(two):
    write_result(make_result("c", ranks=ranks_of([1] * 10)), two)
    c = compare(load_systems(["a", "b", "c"], suite="s", results_dir=two), baseline="b", ks=[1])
    assert {(t.a, t.b) for t in c.pairs} == {("a", "b"), ("c", "b")}
    with pytest.raises(HarnessError, match="--baseline 'x'"):
        compare(load_systems(["a", "b"], suite="s", results_dir=two), baseline="x")


def test_different_question_sets_are_refused(tmp_path):
    a = make_result("a", ranks=ranks_of([0, 1]))
    b = make_result("b", ranks=ranks_of([0, 1]))
    b["suite"]["questions_fingerprint"] = "sha256:other"
    systems = [System("a", read_result(write_result(a, tmp_path))), System("b", read_result(write_result(b, tmp_path)))]
    with pytest.raises(HarnessError, match="different question sets"):
        check_comparable(systems)
    c = make_result("c", ranks={"all": {"q0": 0, "qX": 1}})
    with pytest.raises(HarnessError, match="same questions"):
        check_comparable([systems[0], System("c", read_result(write_result(c, tmp_path / "c")))])
    d = make_result("d", ranks=ranks_of([0, 1]), suite="other")
    with pytest.raises(HarnessError, match="different suites"):
        check_comparable([systems[0], System("d", read_result(write_result(d, tmp_path / "d")))])


def test_cli_errors_are_one_line(two, capsys):
    other = make_result("z", ranks=ranks_of([0]))
    other["suite"]["questions_fingerprint"] = "sha256:other"
    path = write_result(other, two / "elsewhere")
    cases = [
        (["a", str(path)], "different question sets"),
        (["a", "nope"], "no result of 'nope' on suite s (results of s: a, b)"),
        (["a"], "at least two"),
        (["a", "b", "--k", "200"], "deeper than the shallowest result's depth"),
        (["missing.json", "a"], "missing.json: no such result file"),
    ]
    for args, message in cases:
        code = main(["compare", *args, "--suite", "s", "--results-dir", str(two)])
        err = capsys.readouterr().err
        assert code == 2, args
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_cli_json_output(two, capsys):
    assert main(["compare", "a", "b", "--suite", "s", "--results-dir", str(two), "--json", "--k", "1", "--resamples", "500"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["resamples"] == 500 and data["seed"] == 0
    assert [s["label"] for s in data["systems"]] == ["a", "b"]
    assert data["pairs"][0]["a_only"] == 5


def test_configurations_sharing_a_name_need_their_file(tmp_path):
    write_result(make_result("a", params={"x": 1}), tmp_path)
    write_result(make_result("a", params={"x": 2}), tmp_path)
    with pytest.raises(HarnessError, match="has 2 configurations"):
        load_systems(["a", "a"], suite="s", results_dir=tmp_path)
    files = sorted(str(p) for p in tmp_path.glob("*.json"))
    systems = load_systems(files, suite=None, results_dir=tmp_path)
    assert len({s.label for s in systems}) == 2


def test_committed_demo_results_against_direct_counts():
    """The committed demo results: counts and exact p-values computed here from the ranks."""
    results = {r.retriever: r for r in read_results(COMMITTED)}
    c = compare(load_systems(["minilm", "bm25"], suite="demo", results_dir=COMMITTED), baseline="bm25")
    a = [r for part in results["minilm"].ranks.values() for r in part.values()]
    b = [r for part in results["bm25"].ranks.values() for r in part.values()]
    for k in (1, 5, 20, 100):
        only_a = sum(1 for x, y in zip(a, b) if (x is not None and x < k) and not (y is not None and y < k))
        only_b = sum(1 for x, y in zip(a, b) if (y is not None and y < k) and not (x is not None and x < k))
        n, m = only_a + only_b, min(only_a, only_b)
        p = min(1.0, 2 * sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n)
        test = next(t for t in c.pairs if t.measure == f"top-{k}")
        assert (test.a_only, test.b_only) == (only_a, only_b)
        assert test.p_value == pytest.approx(p, rel=1e-9)
    # Holm by hand over the family of five tests: sorted p times (5, 4, 3, 2, 1), running maximum
    ps = [t.p_value for t in c.pairs]
    running, expected = 0.0, {}
    for rank, i in enumerate(sorted(range(len(ps)), key=ps.__getitem__)):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        expected[i] = running
    assert [t.p_holm for t in c.pairs] == pytest.approx([expected[i] for i in range(len(ps))], rel=1e-12)
    # macro top-20 equals the leaderboard's number and lies in its interval
    e = c.accuracy["minilm"][20]
    assert round(100 * e.value, 2) == 96.83 and e.low < e.value < e.high
    assert (e.high - e.low) < 0.05


def test_the_readme_example_is_what_the_command_prints(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("$ harness compare bm25 minilm"):]
    block = block[: block.index("```")]
    command, *expected = block.splitlines()
    args = command.removeprefix("$ harness ").split()
    assert main([*args, "--results-dir", str(COMMITTED)]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in expected:
        if line and line != "...":
            assert line in printed, line


def test_more_bad_arguments_are_one_line_errors(two, tmp_path, capsys):
    cases = [
        (["compare", "a", "b", "--suite", "s", "--results-dir", str(two), "--mrr-k", "0"], "--mrr-k 0 must be between 1"),
        (["compare", "a", "b", "--suite", "s", "--results-dir", str(tmp_path / "none")], "no such folder"),
        (["reproduce", "--results-dir", str(tmp_path / "none")], "no such folder"),
        (["compare", "a", "b", "--results-dir", str(two)], "give --suite"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err

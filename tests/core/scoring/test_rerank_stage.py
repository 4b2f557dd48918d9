"""Re-ranking as a second stage: the core's checks and ordering, the result chain, the command line
(``run`` and ``score`` with ``--rerank``) and the leaderboard row, with re-rankers that load no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import Candidate, Hit, Passage, RunContext
from harness.cli.main import main
from harness.errors import HarnessError
from harness.scoring.rerank import rerank_rankings
from harness.results.schema import chain_label, config_digest, result_filename, validate


@pytest.fixture
def fake_rerankers():
    from helpers.fake_rerankers import registries_with_fake_rerankers

    with registries_with_fake_rerankers():
        yield


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class Fixed:
    """Returns the scores it was built with, by passage id."""

    def __init__(self, scores):
        self.scores = scores
        self.calls = []

    def parameters(self):
        return {}

    def rerank(self, questions, candidates, context):
        self.calls.append([[c.passage_id for c in cands] for cands in candidates])
        return [[Hit(passage_id=c.passage_id, score=self.scores[c.passage_id]) for c in cands] for cands in candidates]


def _passage(pid):
    return Passage(id=pid, title=f"t{pid}", text=f"text {pid}")


def _hits(*ids):
    return [Hit(passage_id=pid, score=100.0 - i) for i, pid in enumerate(ids)]


def test_sorted_by_new_score_ties_in_first_stage_order_and_the_tail_kept(tmp_path):
    reranker = Fixed({"a": 1.0, "b": 2.0, "c": 1.0, "d": 2.0, "e": 9.0, "f": 9.0})
    context = RunContext(cache_dir=tmp_path, progress=False)
    (ranking,) = rerank_rankings(reranker, ["q"], ["q1"], [_hits("a", "b", "c", "d", "e", "f")], 4, context,
                                 name="fixed", passage=_passage)
    assert [h.passage_id for h in ranking] == ["b", "d", "a", "c", "e", "f"]
    assert [h.score for h in ranking] == [2.0, 2.0, 1.0, 1.0, 0.0, -1.0]  # the tail below the lowest re-ranked score
    assert reranker.calls == [[["a", "b", "c", "d"]]]  # only the top 4 are re-ranked


def test_candidates_carry_the_passages(tmp_path):
    seen = []

    class Spy(Fixed):
        def rerank(self, questions, candidates, context):
            seen.extend(c for cands in candidates for c in cands)
            return super().rerank(questions, candidates, context)

    rerank_rankings(Spy({"a": 0.0, "b": 0.0}), ["q"], ["q1"], [_hits("a", "b")], 10, RunContext(cache_dir=tmp_path, progress=False),
                    passage=_passage)
    assert all(isinstance(c, Candidate) for c in seen)
    assert seen[0].passage == _passage("a") and seen[0].hit.score == 100.0


def test_a_first_stage_passage_without_text_is_one_line(tmp_path):
    def passage(pid):
        raise KeyError(pid)

    with pytest.raises(HarnessError, match="passage 'a' of the first stage has no text"):
        rerank_rankings(Fixed({}), ["q"], ["q1"], [_hits("a")], 10, RunContext(cache_dir=tmp_path, progress=False), passage=passage)


def test_run_with_rerank_records_the_chain(capsys, tmp_path, fake_rerankers):
    results = tmp_path / "results"
    common = ["-r", "test-overlap", "-s", "demo", "--k", "1,5", "--no-progress", "--results-dir", str(results),
              "--cache-dir", str(tmp_path / "cache")]
    assert run_cli(capsys, "run", *common)[0] == 0
    code, out, err = run_cli(capsys, "run", *common, "--rerank", "test-title", "--rerank-depth", "10", "-R", "weight=2")
    assert code == 0, err
    assert "re-ranked by test-title (top 10; weight=2.0)" in out
    files = sorted(results.glob("*.json"))
    assert len(files) == 2  # the chain is its own configuration
    chained = next(f for f in files if "test-overlap+test-title" in f.name)
    data = json.loads(chained.read_text())
    validate(data, source=chained)
    assert data["retriever"] == {"name": "test-overlap", "plugin": "tests-fake", "parameters": {"title_weight": 1.0}}
    assert data["reranker"] == {"name": "test-title", "plugin": "tests-fake-rerankers", "parameters": {"weight": 2.0}, "depth": 10}
    assert data["depth"] == 10 and data["k"] == [1, 5]
    assert "rerank" in data["timings"] and "load_reranker" in data["timings"]

    board = tmp_path / "LB.md"
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(board))[0] == 0
    text = board.read_text()
    assert "| test-overlap » test-title(top-10) " in text and "| test-overlap " in text
    page = (tmp_path / "html" / "demo.html").read_text()  # every parameter: on the suite's page
    assert "» test-title: depth=10, weight=2.0" in page and "[html/demo.html](html/demo.html)" in text


@pytest.mark.parametrize(
    "mode, fragment",
    [
        ("unknown-id", "returned passage 'no-such-passage', which is not among its 5 candidates"),
        ("duplicate", "returned passage 't2' twice"),
        ("left-out", "returned 4 hits for 5 candidates (first left out:"),
        ("nan", "has score nan, not a finite number"),
        ("not-a-hit", "hit 0 is a tuple, not a harness.api.Hit"),
        ("too-few-rankings", "returned 3 rankings for 4 questions"),
    ],
)
def test_a_broken_reranker_is_a_one_line_error(tmp_path, mode, fragment):
    from helpers.fake_rerankers import BrokenReranker
    from helpers.fake_retrievers import OverlapRetriever
    from harness.evaluate import Second, evaluate_retriever
    from harness.testing import toy_suite

    with pytest.raises(HarnessError) as caught:
        evaluate_retriever(
            OverlapRetriever(), toy_suite(), name="o", plugin="p", k=[1, 5],
            context=RunContext(cache_dir=tmp_path, progress=False),
            reranker=Second(BrokenReranker(mode), name="test-broken", plugin="p", depth=5),
        )
    message = str(caught.value)
    assert "\n" not in message and message.startswith("re-ranker 'test-broken'") and fragment in message, message


def test_a_broken_reranker_fails_the_command_with_exit_2(capsys, tmp_path, fake_rerankers):
    code, out, err = run_cli(
        capsys, "run", "-r", "test-overlap", "-s", "demo", "--no-progress", "--results-dir", str(tmp_path / "r"),
        "--cache-dir", str(tmp_path / "c"), "--rerank", "test-broken", "-R", "mode=unknown-id",
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "re-ranker 'test-broken': question" in err and "not among its" in err
    assert not list((tmp_path / "r").glob("*.json"))


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--rerank", "test-titel"], "did you mean 'test-title'"),
        (["--rerank", "test-title", "-R", "wieght=1"], "re-ranker 'test-title' has no option 'wieght'; did you mean 'weight'?"),
        (["-R", "weight=1"], "without a re-ranker"),
        (["--rerank-depth", "10"], "without a re-ranker"),
        (["--rerank", "test-title", "--rerank-depth", "0"], "--rerank-depth"),
        (["--rerank", "test-title", "-R", "weight"], "--rerank-option: expected KEY=VALUE"),
    ],
)
def test_rerank_usage_errors_are_one_line(capsys, tmp_path, fake_rerankers, extra, fragment):
    code, out, err = run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--no-progress",
                             "--results-dir", str(tmp_path / "r"), *extra)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_score_reranks_another_systems_run(capsys, tmp_path, fake_rerankers):
    results, runs = tmp_path / "results", tmp_path / "runs"
    code, out, err = run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--k", "1,5", "--no-progress",
                             "--results-dir", str(results), "--save-run", "--runs-dir", str(runs), "--cache-dir", str(tmp_path / "c"))
    assert code == 0, err
    produced = next(results.glob("*.json"))
    for run_file in (next(runs.glob("*.trec")), next(runs.glob("*.dpr.json"))):
        code, out, err = run_cli(capsys, "score", "-s", "demo", "--run", str(run_file), "--name", "mine", "--no-progress",
                                 "--results-dir", str(tmp_path / "scored"), "--rerank", "test-title", "--rerank-depth", "5")
        assert code == 0, err
    scored = [json.loads(p.read_text()) for p in sorted((tmp_path / "scored").glob("*.json"))]
    assert len(scored) == 2 and all(d["reranker"]["name"] == "test-title" and d["reranker"]["depth"] == 5 for d in scored)
    # The same re-ranking of the same first stage gives the same ranks, from a TREC run (passages
    # from the corpus) or a DPR JSON (titles and texts carried) alike; top-5 is the first stage's.
    assert scored[0]["first_hit_ranks"] == scored[1]["first_hit_ranks"]
    first = json.loads(produced.read_text())
    assert scored[0]["metrics"]["accuracy"]["macro"]["5"] == first["metrics"]["accuracy"]["macro"]["5"]


def test_result_names_and_labels():
    params = {"k1": 0.9}
    assert result_filename("demo", "bm25", params) == f"demo--bm25--{config_digest('bm25', params)}.json"
    upr = {"name": "upr", "plugin": "rerank", "parameters": {"model": "google/t5-large-lm-adapt"}, "depth": 100}
    chained = result_filename("demo", "bm25", params, upr)
    assert chained.startswith("demo--bm25+upr--") and chained != result_filename("demo", "bm25", params)
    assert result_filename("demo", "bm25", params, {**upr, "depth": 50}) != chained
    assert chain_label("bm25", None) == "bm25"
    assert chain_label("bm25", upr) == "bm25 » upr(t5-large-lm-adapt, top-100)"
    local = {**upr, "parameters": {"model": "tiny-t5 (sha256:0123456789ab)"}, "depth": 1000}
    assert chain_label("bm25", local) == "bm25 » upr(tiny-t5, top-1000)"
    assert chain_label("bm25", {**upr, "parameters": {}}) == "bm25 » upr(top-100)"


@pytest.mark.parametrize(
    "block, problem",
    [
        ([], "'reranker' must be a JSON object"),
        ({"parameters": {}, "depth": 5}, "missing key 'reranker.name'"),
        ({"name": "", "parameters": {}, "depth": 5}, "'reranker.name'"),
        ({"name": "x", "parameters": [], "depth": 5}, "'reranker.parameters'"),
        ({"name": "x", "parameters": {}, "depth": 0}, "'reranker.depth'"),
        ({"name": "x", "parameters": {}, "depth": True}, "'reranker.depth'"),
    ],
)
def test_schema_checks_the_reranker_block(block, problem):
    from helpers.fake_retrievers import OverlapRetriever
    from harness.errors import InputFileError
    from harness.evaluate import evaluate_retriever
    from harness.testing import toy_suite

    suite = toy_suite()
    data = evaluate_retriever(OverlapRetriever(), suite, name="o", plugin="p",
                              context=RunContext(cache_dir=Path("."), progress=False)).result
    validate(data, source="r.json")
    with pytest.raises(InputFileError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        validate({**data, "reranker": block}, source="r.json")


def test_check_reranker_passes_a_good_one_and_names_a_broken_one(fake_rerankers):
    from helpers.fake_rerankers import BrokenReranker
    from harness.testing import check_reranker

    checked = check_reranker("test-title", options={"weight": 2})
    assert checked.parameters == {"weight": 2.0} and len(checked.rankings) == 4
    assert checked.rankings[2][0] == "t7"  # "What is the fruit of the oak tree called?": title Oak
    with pytest.raises(AssertionError, match="check_reranker: re-ranker 'BrokenReranker': question 'toy-1': returned passage 't1' twice"):
        check_reranker(BrokenReranker("duplicate"))

"""What a result cost (the ``cost`` block: devices, GPU-hours, memory measured around the run,
bytes and throughput the engines report) and re-ranking against its ceiling (the first stage's
ranks kept in every re-ranked result; ceiling, wins and losses checked by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.ceiling import ceiling_of, format_ceiling
from harness.api import RunContext
from harness.cli.main import main
from harness.errors import InputFileError
from harness.results.cost import check_cost, cost_record
from harness.results.schema import Result, validate
from harness.util.resources import Peak, PeakMemory, directory_bytes


@pytest.fixture
def fake_rerankers():
    from helpers.fake_rerankers import registries_with_fake_rerankers

    with registries_with_fake_rerankers():
        yield


# ------------------------------------------------------------------------------------------ cost


def test_a_cpu_runs_cost_from_its_stages_reports():
    compute = {"world_size": 1, "retriever": {"search_device": "cpu", "index_bytes": 600, "encode_device": "cpu",
                                              "embedding_bytes": 1000, "encode_passages_per_s": 250.0}}
    timings = {"load_suite": 5.0, "load_retriever": 1.0, "index": 10.0, "search": 4.0, "score": 1.0}
    cost = cost_record(compute, timings, 1000, Peak(host_bytes=2_000_000, host_scope="run", gpu_bytes=None))
    assert cost == {"device_kind": "cpu", "device_count": 1, "gpu_hours": 0.0, "seconds": 15.0,
                    "peak_host_bytes": 2_000_000, "peak_host_scope": "run", "peak_gpu_bytes": None,
                    "index_bytes": 600, "embedding_bytes": 1000, "encode_passages_per_s": 250.0,
                    "search_queries_per_s": 250.0}  # 1000 questions / 4 s; loading is not costed
    assert check_cost(cost) is None


def test_gpu_hours_charge_every_gpu_of_every_process_for_the_runs_time():
    compute = {"world_size": 2, "retriever": {"encode_device": "cuda:0", "search_device": "cuda", "search_devices": 4},
               "reranker": {"score_device": "cuda", "score_devices": 2}}
    cost = cost_record(compute, {"index": 1800.0, "search": 1800.0, "rerank": 3600.0}, 10, None,
                       [{"name": "NVIDIA H100 80GB HBM3", "count": 8}])
    assert cost["device_kind"] == "NVIDIA H100 80GB HBM3" and cost["device_count"] == 8  # 4 per process x 2
    assert cost["gpu_hours"] == 8 * 7200 / 3600 == 16.0
    assert cost["peak_host_bytes"] is None and cost["peak_host_scope"] == "process"
    assert check_cost(cost) is None


def test_a_fusions_bytes_are_its_components_summed():
    compute = {"world_size": 1, "retriever": {"components": [
        {"name": "bm25", "search_device": "cpu", "index_bytes": 100},
        {"name": "minilm", "encode_device": "cpu", "index_bytes": 0, "embedding_bytes": 700, "encode_passages_per_s": 9.5},
    ]}}
    cost = cost_record(compute, {"search": 2.0}, 4, None)
    assert (cost["index_bytes"], cost["embedding_bytes"], cost["encode_passages_per_s"]) == (100, 700, 9.5)
    assert cost["search_queries_per_s"] == 2.0


@pytest.mark.parametrize("change, problem", [
    ({"device_kind": ""}, "'cost.device_kind'"),
    ({"device_count": 0}, "'cost.device_count' is below 1"),
    ({"device_count": True}, "'cost.device_count'"),
    ({"gpu_hours": float("nan")}, "'cost.gpu_hours'"),
    ({"seconds": -1}, "'cost.seconds'"),
    ({"peak_host_scope": "machine"}, "'cost.peak_host_scope'"),
    ({"index_bytes": "1 GB"}, "'cost.index_bytes'"),
    ({"search_queries_per_s": float("inf")}, "'cost.search_queries_per_s'"),
])
def test_the_schema_refuses_a_broken_cost_block(change, problem):
    from harness.evaluate import evaluate_retriever
    from harness.testing import toy_suite
    from helpers.fake_retrievers import OverlapRetriever

    data = evaluate_retriever(OverlapRetriever(), toy_suite(), name="o", plugin="p",
                              context=RunContext(cache_dir=Path("."), progress=False)).result
    validate(data, source="r.json")
    assert check_cost(data["cost"]) is None and data["cost"]["device_kind"] == "cpu"
    with pytest.raises(InputFileError, match=problem.replace("(", r"\(")):
        validate({**data, "cost": {**data["cost"], **change}}, source="r.json")
    with pytest.raises(InputFileError, match="'cost' is not an object"):
        validate({**data, "cost": [1]}, source="r.json")


def test_peak_host_memory_is_the_spans_own():
    """A 256 MB array allocated inside a span raises its peak by about that much; a later span
    that allocates nothing does not see it (the peak was reset), on Linux."""
    with PeakMemory() as before:
        pass
    with PeakMemory() as span:
        block = np.ones(256 * 2**20 // 8)
        del block
    with PeakMemory() as after:
        pass
    if span.result.host_scope != "run":
        pytest.skip("this system cannot reset the peak resident set (/proc/self/clear_refs)")
    assert span.result.host_bytes - before.result.host_bytes > 200 * 2**20
    assert after.result.host_bytes < span.result.host_bytes - 200 * 2**20
    assert span.result.gpu_bytes is None  # no CUDA in this process


def test_directory_bytes_counts_files_not_links(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_bytes(b"1" * 100)
    (tmp_path / "y").write_bytes(b"2" * 23)
    (tmp_path / "link").symlink_to(tmp_path / "y")
    assert directory_bytes(tmp_path) == 123 and directory_bytes(tmp_path / "none") == 0


def test_bm25_and_dense_runs_record_their_cost(tmp_path):
    """The engines' own figures: Lucene's folder bytes; the dense index's embeddings and index,
    its encoding throughput on a first run and none on a run that reuses the cache."""
    pytest.importorskip("pyserini")
    from harness import registry
    from harness.evaluate import evaluate_retriever
    from harness.testing import toy_suite

    def run(name):
        retriever = registry.load("retrievers", name, {}).value
        suite = toy_suite()
        result = evaluate_retriever(retriever, suite, name=name, plugin="p",
                                    context=RunContext(cache_dir=tmp_path / "cache", progress=False)).result
        validate(result, source=name)
        return result, len(suite.questions), len(suite.corpus)

    bm25, questions, passages = run("bm25")
    cost = bm25["cost"]
    assert cost["index_bytes"] > 0 and cost["index_bytes"] == bm25["compute"]["retriever"]["index_bytes"]
    assert cost["embedding_bytes"] is None and cost["encode_passages_per_s"] is None
    assert cost["search_queries_per_s"] == pytest.approx(questions / bm25["timings"]["search"], rel=1e-3)
    assert cost["peak_host_bytes"] > 0 and cost["device_kind"] == "cpu" and cost["gpu_hours"] == 0.0

    first, _, _ = run("minilm")
    facts = first["compute"]["retriever"]
    assert facts["encode_passages"] == passages and first["cost"]["encode_passages_per_s"] == facts["encode_passages_per_s"] > 0
    assert first["cost"]["embedding_bytes"] == passages * 384 * 4  # a small corpus keeps float32 vectors
    assert first["cost"]["index_bytes"] == passages * 384 * 4  # faiss IndexFlatIP's own float32 copy
    again, _, _ = run("minilm")
    assert again["compute"]["retriever"]["encode_passages"] == 0 and again["cost"]["encode_passages_per_s"] is None


# -------------------------------------------------------------------------------------- ceiling


def _result(first_stage, after, depth, ks=(1, 2, 5)):
    """A re-ranked result over two parts, from first-stage and re-ranked 0-based ranks."""
    from harness.evaluate import compute_metrics

    parts = list(after)
    data = {
        "schema": "harness-result/1", "created": "2026-11-25T00:00:00Z",
        "suite": {"name": "s", "match": "string", "questions_fingerprint": "f", "corpus": {"name": "c", "passages": 9, "fingerprint": None},
                  "parts": [{"name": p, "questions": len(after[p])} for p in parts]},
        "retriever": {"name": "bm25", "parameters": {}},
        "reranker": {"name": "upr", "parameters": {}, "depth": depth},
        "matcher": "m", "k": list(ks), "depth": 10, "first_hit_ranks": after, "first_stage_ranks": first_stage,
        "metrics": compute_metrics(after, list(ks), ["accuracy"]),
        "timings": {}, "versions": {}, "machine": {},
    }
    validate(data, source="r.json")
    return Result(data=data, path=None)


def test_the_ceiling_wins_and_losses_by_hand():
    first = {"A": {"a1": 0, "a2": 3, "a3": 7, "a4": None}, "B": {"b1": 1, "b2": 4}}
    after = {"A": {"a1": 1, "a2": 0, "a3": 7, "a4": None}, "B": {"b1": 0, "b2": 0}}
    c = ceiling_of(_result(first, after, depth=5))
    # part A: a1, a2 within the first stage's top 5 (a3 at 7 is not): 2/4; part B: 2/2
    assert c.depth == 5 and c.ceiling == pytest.approx((2 / 4 + 2 / 2) / 2) and c.n == 6
    at = {a.k: a for a in c.at}
    # top-1: before a1, nothing in B (b1 at rank 1); after a2, b1, b2: 3 wins (a2, b1, b2), 1 loss (a1)
    assert (at[1].wins, at[1].losses) == (3, 1)
    assert at[1].won == (("A", "a2"), ("B", "b1"), ("B", "b2")) and at[1].lost == (("A", "a1"),)
    # top-2: after a1 (1), a2, b1, b2; before a1, b1 (1): won a2, b2, lost none
    assert at[2].won == (("A", "a2"), ("B", "b2")) and at[2].lost == () and (at[2].wins, at[2].losses) == (2, 0)
    assert at[1].first_stage == pytest.approx((1 / 4 + 0) / 2) and at[1].reranked == pytest.approx((1 / 4 + 2 / 2) / 2)
    assert at[1].p_value == pytest.approx(0.625)  # exact McNemar, 4 discordant, min 1: 2 * (1 + 4) / 16
    # top-5: every answer the first stage had within 5 is still within 5 (a re-ranking of those 5)
    assert (at[5].wins, at[5].losses) == (0, 0) and at[5].reranked == pytest.approx(c.ceiling)
    assert at[5].won == at[5].lost == ()
    text = format_ceiling([c])
    assert "top-5: 75.00" in text and "| 3 / 1 " in text
    # the ids, as part/id (two parts); a cutoff without any is left out
    assert "- bm25 » upr(top-5), top-1: won 3 (A/a2, B/b1, B/b2); lost 1 (A/a1)\n" in text
    assert "- bm25 » upr(top-5), top-2: won 2 (A/a2, B/b2); lost 0\n" in text and "top-5: won" not in text
    assert c.to_json()["at"]["1"] | {"p": None} == {
        "first_stage": pytest.approx(1 / 8), "reranked": pytest.approx(5 / 8), "wins": 3, "losses": 1, "p": None,
        "won": {"A": ["a2"], "B": ["b1", "b2"]}, "lost": {"A": ["a1"]},
    }
    assert c.to_json()["at"]["5"]["won"] == {} and c.to_json()["at"]["5"]["lost"] == {}


def test_won_and_lost_lists_are_cut_after_ten_and_escaped():
    """One part: bare ids; 13 won, 10 shown, then "… and 3 more"; ids are markdown text."""
    ids = [f"q{i:02d}" for i in range(12)] + ["x|<b>"]
    first = {"all": {**{q: None for q in ids}, "l1": 0, "l2": 0}}
    after = {"all": {**{q: 0 for q in ids}, "l1": None, "l2": 3}}
    c = ceiling_of(_result(first, after, depth=5, ks=(1, 5)))
    (one, five) = c.at
    assert one.wins == 13 and [q for _, q in one.won] == ids and [q for _, q in one.lost] == ["l1", "l2"]
    assert five.wins == 13 and [q for _, q in five.lost] == ["l1"]  # l2 at 3 is within 5 after re-ranking
    assert c.to_json()["at"]["1"]["won"] == {"all": ids}  # --json has every id
    text = format_ceiling([c])
    shown = ", ".join(ids[:10])
    assert f"- bm25 » upr(top-5), top-1: won 13 ({shown} … and 3 more); lost 2 (l1, l2)\n" in text
    assert f"- bm25 » upr(top-5), top-5: won 13 ({shown} … and 3 more); lost 1 (l1)\n" in text
    assert "x|<b>" not in text  # the 13th, not shown; escaped when it is:
    c2 = ceiling_of(_result({"all": {"x|<b>": None}}, {"all": {"x|<b>": 0}}, depth=5, ks=(1,)))
    assert "won 1 (x\\|&lt;b>)" in format_ceiling([c2])


def test_first_stage_ranks_are_checked_by_the_schema():
    first = {"A": {"a1": 0}, "B": {"b1": 1}}
    after = {"A": {"a1": 0}, "B": {"b1": 0}}
    data = _result(first, after, depth=5).data
    for broken, problem in [
        ({**data, "first_stage_ranks": {"A": {"a1": 0}}}, "exactly the parts"),
        ({**data, "first_stage_ranks": {"A": {"zz": 0}, "B": {"b1": 1}}}, "'first_stage_ranks.A' must have the questions"),
        ({**data, "first_stage_ranks": {"A": {"a1": 10}, "B": {"b1": 1}}}, r"'first_stage_ranks.A.a1' must be null or an integer in \[0, 10\)"),
        ({k: v for k, v in data.items() if k != "reranker"}, "only for a re-ranked result"),
    ]:
        with pytest.raises(InputFileError, match=problem):
            validate(broken, source="r.json")


def test_a_reranked_run_and_score_keep_the_first_stage_and_compare_shows_the_ceiling(capsys, tmp_path, fake_rerankers):
    results, runs = tmp_path / "results", tmp_path / "runs"
    common = ["-r", "test-overlap", "-s", "demo", "--k", "1,5", "--no-progress", "--results-dir", str(results),
              "--cache-dir", str(tmp_path / "cache")]
    assert main(["run", *common, "--save-run", "--runs-dir", str(runs)]) == 0
    assert main(["run", *common, "--rerank", "test-title", "--rerank-depth", "10"]) == 0
    first_file = next(f for f in results.glob("*.json") if "+" not in f.name)
    chained = next(f for f in results.glob("*.json") if "test-overlap+test-title" in f.name)
    first, data = json.loads(first_file.read_text()), json.loads(chained.read_text())
    # the first stage of the chain is the plain run, question by question (deeper: 10 hits)
    assert {p: {q: r if r is not None and r < 5 else None for q, r in qs.items()} for p, qs in data["first_stage_ranks"].items()} \
        == {p: {q: r if r is not None and r < 5 else None for q, r in qs.items()} for p, qs in first["first_hit_ranks"].items()}
    ceiling = ceiling_of(Result(data=data, path=chained))
    by_hand = np.mean([np.mean([r is not None and r < 10 for r in qs.values()]) for qs in data["first_stage_ranks"].values()])
    assert ceiling.ceiling == pytest.approx(by_hand)
    assert all(a.reranked <= ceiling.ceiling + 1e-12 for a in ceiling.at)
    capsys.readouterr()
    assert main(["compare", str(first_file), str(chained), "--resamples", "50", "--permutations", "50"]) == 0
    out = capsys.readouterr().out
    assert "Re-ranking against its ceiling" in out and f"top-10: {100 * by_hand:.2f}" in out
    assert main(["compare", str(first_file), str(chained), "--resamples", "50", "--permutations", "50", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["rerank_ceiling"]
    assert entry["depth"] == 10 and entry["ceiling"] == pytest.approx(by_hand)
    assert entry["at"]["1"]["wins"] == ceiling.at[0].wins
    # every question won and lost at top-1, by part, worked out from the two rank tables
    first_ranks = data["first_stage_ranks"]
    won = {p: [q for q, r in qs.items() if r == 0 and first_ranks[p][q] != 0] for p, qs in data["first_hit_ranks"].items()}
    lost = {p: [q for q, r in qs.items() if r != 0 and first_ranks[p][q] == 0] for p, qs in data["first_hit_ranks"].items()}
    assert entry["at"]["1"]["won"] == {p: qs for p, qs in won.items() if qs}
    assert entry["at"]["1"]["lost"] == {p: qs for p, qs in lost.items() if qs}
    assert entry["at"]["1"]["wins"] == sum(map(len, won.values())) and entry["at"]["1"]["losses"] == sum(map(len, lost.values()))
    # the text output lists them (the first ten of each) under the table
    changed = [(k, a) for k, a in entry["at"].items() if a["wins"] or a["losses"]]
    assert ("Questions won and lost at each cutoff" in out) == bool(changed)
    for k, a in changed:
        assert f", top-{k}: won {a['wins']}" in out and f"; lost {a['losses']}" in out
    assert [s["cost"]["device_kind"] for s in report["systems"]] == ["cpu", "cpu"]
    # a run file re-ranked by harness score keeps its first stage too
    run_file = next(runs.glob("*.trec"))
    assert main(["score", "-s", "demo", "--run", str(run_file), "--name", "mine", "--no-progress",
                 "--results-dir", str(tmp_path / "scored"), "--rerank", "test-title", "--rerank-depth", "5"]) == 0
    scored = json.loads(next((tmp_path / "scored").glob("*.json")).read_text())
    assert scored["first_stage_ranks"] == {p: {q: r if r is not None and r < 10 else None for q, r in qs.items()}
                                           for p, qs in first["first_hit_ranks"].items()}
    assert scored["cost"]["search_queries_per_s"] is None and scored["cost"]["device_kind"] == "cpu"

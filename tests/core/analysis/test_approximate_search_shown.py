"""A result whose rankings come from an approximate index (HNSW, IVF-PQ) says so, with its
settings, in ``compare`` and on the board; an exact one says nothing."""

from __future__ import annotations

from pathlib import Path

from harness.analysis.compare import approximate_search, compare, format_comparison, load_systems
from harness.board.markdown import render
from harness.results.schema import Result, read_results, write_result

from helpers.board_cells import cells
from helpers.result_docs import make_result

HNSW = {"index": "hnsw", "hnsw_m": 32, "hnsw_ef_construction": 200, "hnsw_ef_search": 128, "hnsw_metric": "ip"}


def _approximate(name: str) -> dict:
    result = make_result(name, params={"model": "m", **HNSW}, ranks={"all": {"q1": 0, "q2": 3, "q3": None, "q4": 1}})
    result["compute"] = {"retriever": {"search_device": "cpu", "search_devices": 1, "search_precision": "approximate",
                                       "search_index": HNSW}}
    return result


def test_the_recorded_settings_or_the_parameters_name_an_approximate_search():
    recorded = Result(_approximate("a"))
    assert approximate_search(recorded) == ("approximate search (hnsw: hnsw_m=32, hnsw_ef_construction=200, "
                                            "hnsw_ef_search=128, hnsw_metric=ip)")
    # a result written before the compute block said so: its parameters
    older = Result(make_result("b", params={"model": "m", "index": "ivfpq", "ivf_nlist": 8, "pq_m": 4}))
    assert approximate_search(older) == "approximate search (ivfpq: ivf_nlist=8, pq_m=4)"
    exact = make_result("c", params={"model": "m", "index": "flat"})
    exact["compute"] = {"retriever": {"search_precision": "fp32"}}
    assert approximate_search(Result(exact)) is None


def test_compare_and_the_board_show_an_approximate_search(tmp_path: Path):
    results_dir = tmp_path / "results"
    write_result(_approximate("approx"), results_dir)
    write_result(make_result("exact", params={"index": "flat"}), results_dir)
    comparison = compare(load_systems(["approx", "exact"], suite="s", results_dir=results_dir), ks=[1, 5])
    text = format_comparison(comparison)
    assert "Not exact: approx: approximate search (hnsw: hnsw_m=32" in text
    assert "exact: approximate" not in text
    systems = {s["label"]: s for s in comparison.to_json()["systems"]}
    assert systems["approx"]["approximate_search"].startswith("approximate search (hnsw")
    assert systems["exact"]["approximate_search"] is None
    rows = {row[0]: row for row in cells(render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir))}
    assert rows["approx"][1].startswith("approximate search (hnsw: hnsw_m=32")
    assert "approximate" not in rows["exact"][1]

"""How plots and tables name and tell apart what they show: a colour per series however many, no
matplotlib warning on long names, Wikidata relation names beside relation ids, and a re-ranked
result named by its two stages."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from matplotlib.colors import to_rgba

from harness.analysis import plots
from harness.analysis.compare import load_systems
from harness.errors import HarnessError
from harness.results.labels import WIKIDATA_RELATIONS, part_title, relation_name
from harness.results.schema import Result, read_results, write_result

from helpers.paths import REPO
from helpers.result_docs import make_result

COMMITTED = REPO / "leaderboard" / "results"


def _results(n: int, label: str = "system") -> list[Result]:
    return [Result(make_result(retriever=f"{label} {i:03d}", ranks={"all": {"q1": i % 5, "q2": None}}, depth=20), None)
            for i in range(n)]


@pytest.mark.parametrize("n", [11, 23, 60, 75])
def test_every_series_of_a_topk_plot_has_a_colour_of_its_own(n):
    figure = plots.draw(plots.topk_plot(_results(n)))
    lines = figure.axes[0].get_lines()
    assert len(lines) == n
    colours = [to_rgba(line.get_color()) for line in lines]
    assert len(set(colours)) == n
    # neighbours also differ in line style or marker
    looks = [(line.get_linestyle(), line.get_marker()) for line in lines]
    assert all(a != b for a, b in zip(looks, looks[1:]))


def test_the_committed_topk_plot_repeats_no_colour():
    chosen = [r for r in read_results(COMMITTED) if r.suite == "demo"]
    assert len(chosen) >= 23
    figure = plots.draw(plots.topk_plot(chosen))
    colours = [to_rgba(line.get_color()) for line in figure.axes[0].get_lines()]
    assert len(set(colours)) == len(colours) == len(chosen)


@pytest.mark.parametrize("kind", ["topk", "parts", "grid"])
def test_long_names_draw_without_a_warning(kind, capfd):
    long = "a configuration named at great length " * 8
    if kind == "topk":
        plot = plots.topk_plot(_results(3, long))
    else:
        parts = {f"part {long} {i}": {"q1": 0, "q2": None} for i in range(12)}
        n = 3 if kind == "parts" else plots.BARS_MAX + 1
        plot = plots.parts_plot([Result(make_result(retriever=f"{long} {i}", ranks=parts, suite=long * 2), None)
                                 for i in range(n)], 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svg = plots.render_bytes(plot, "svg")
    assert [str(w.message) for w in caught] == []
    assert capfd.readouterr().err == ""
    assert svg.startswith(b"<?xml")


def test_each_relation_of_entityquestions_has_its_wikidata_name(shared_data):
    templates = json.loads((REPO / "plugins" / "harness_builtins" / "data" / "relation_query_templates.json").read_text())
    relations = {name.split("_")[0] for name in templates}
    assert relations <= set(WIKIDATA_RELATIONS)
    test_parts = {p.name.split(".")[0] for p in (shared_data / "entityquestions" / "test").glob("P*.test.json")}
    assert test_parts and test_parts <= set(WIKIDATA_RELATIONS)
    # names as Wikidata gives them
    assert relation_name("P17") == "country" and relation_name("P19") == "place of birth"
    assert relation_name("P106") == "occupation" and relation_name("P800") == "notable work"
    assert relation_name("P19_similar") == "place of birth"
    assert part_title("P17") == "P17 country"
    for part in ("bucket0", "all", "P99999", "xP17", "P17x"):
        assert relation_name(part) is None and part_title(part) == part


@pytest.fixture
def reranked_results(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    for name in ("demo--bm25--4566dfd2.json", "demo--bm25+upr--25b19cc3.json"):
        shutil.copy(COMMITTED / name, folder / name)
    return folder


@pytest.mark.parametrize("name", ["bm25 » upr", "bm25»upr", "bm25 >> upr", "bm25+upr", "bm25 » upr(demo-t5, top-20)"])
def test_a_reranked_result_is_named_by_its_two_stages(reranked_results, name):
    (system, first) = load_systems([name, "bm25"], suite="demo", results_dir=reranked_results)
    assert system.result.reranker["name"] == "upr" and first.result.reranker is None
    assert system.label == "bm25 » upr(demo-t5, top-20)"


def test_two_reranked_depths_are_named_by_their_full_labels(reranked_results):
    data = json.loads((reranked_results / "demo--bm25+upr--25b19cc3.json").read_text())
    data["reranker"]["depth"] = 10
    write_result(data, reranked_results)
    with pytest.raises(HarnessError, match=r"'bm25 » upr' on demo has 2 configurations.*top-10.*top-20"):
        load_systems(["bm25 » upr"], suite="demo", results_dir=reranked_results)
    (system,) = load_systems(["bm25 » upr(demo-t5, top-10)"], suite="demo", results_dir=reranked_results)
    assert system.result.reranker["depth"] == 10


def test_harness_plot_where_a_file_stands_for_the_folder_is_one_line(tmp_path, capsys):
    from harness.cli.main import main

    (tmp_path / "afile").write_text("x")
    code = main(["plot", "topk", "--suite", "demo", "--results-dir", str(COMMITTED), "--output", str(tmp_path / "afile" / "x")])
    err = capsys.readouterr().err
    assert code == 2
    (line,) = err.strip().splitlines()
    assert f"{tmp_path / 'afile' / 'x' / 'demo-topk'}." in line and "cannot write the plot" in line

"""The board's files: one plot file per suite however its name is spelled, nothing written where a
file stands in for a folder (or a folder for a file), names longer than a file name can be; and
what the board says of its rows: rows identical on every question are named with the training
variants' descriptions, a trained row's parameter cell starts with what tells it from the others,
and parts named by Wikidata relation ids show the relation's name."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from harness import registry
from harness.board import build_board
from harness.board.sections import sections
from harness.cli.main import main
from harness.results.schema import dumps, read_results, write_result

from helpers.paths import REPO
from helpers.result_docs import make_result

RANKS_A = {"all": {"q1": 0, "q2": 4, "q3": None, "q4": 30}}
RANKS_B = {"all": {"q1": None, "q2": 0, "q3": 0, "q4": 2}}


def _doc(suite, ranks, fingerprint, **kwargs):
    doc = make_result(suite=suite, ranks=ranks, **kwargs)
    doc["suite"]["questions_fingerprint"] = fingerprint
    return doc


def _plot_manifest(folder):
    return json.loads((folder / "plots" / "plots.json").read_text())


def test_two_suites_whose_names_share_a_slug_keep_their_own_plots(tmp_path):
    results = tmp_path / "results"
    write_result(_doc("col x", RANKS_A, "sha256:a"), results)
    write_result(_doc("col_x", RANKS_B, "sha256:b"), results)
    assert len(list(results.glob("*.json"))) == 2  # one result file each, too
    board = build_board(results, tmp_path / "README.md", published=())
    board.write()
    assert sorted(p.suite for p in board.plots.values()) == ["col x", "col_x"]
    manifest = _plot_manifest(tmp_path)
    assert len(manifest["files"]) == 2 and len(set(manifest["plots"].values())) == 2
    # each suite's figure is drawn from its own numbers: top-1 of "col x" is 1/4, of "col_x" 2/4
    by_suite = {p.suite: p for p in board.plots.values()}
    assert by_suite["col x"].data["series"]["r"][0] == 25.0
    assert by_suite["col_x"].data["series"]["r"][0] == 50.0
    # the committed board's stems are unchanged
    assert "demo-topk" in _plot_manifest(REPO / "leaderboard")["plots"]


@pytest.mark.parametrize("blocker", ["html", "plots", "plots/s-topk.svg", "html/s.html", "plots/plots.json"])
def test_a_file_or_folder_where_the_board_writes_is_one_line_and_nothing_is_written(tmp_path, capsys, blocker):
    write_result(make_result(suite="s"), tmp_path / "results")
    out = tmp_path / "board"
    out.mkdir()
    path = out / blocker
    if "/" in blocker:
        path.mkdir(parents=True)  # a folder where a file goes
    else:
        path.write_text("a file where a folder goes\n")
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    code = main(["leaderboard", "--results-dir", str(tmp_path / "results"), "--output", str(out / "README.md")])
    err = capsys.readouterr().err
    assert code == 2
    (line,) = err.strip().splitlines()
    assert str(path) in line and "nothing written" in line and "Traceback" not in err
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before


def test_a_suite_name_longer_than_a_file_name_can_be(tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    suite = "a suite named at length " * 20
    (results / "long.json").write_text(dumps(make_result(suite=suite)))
    code = main(["leaderboard", "--results-dir", str(results), "--output", str(tmp_path / "README.md")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Warning" not in captured.err and "warning" not in captured.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(len(p.name) < 100 for p in files if p.parent != results)
    assert len(list((tmp_path / "plots").glob("*.svg"))) == 1 and len(list((tmp_path / "html").glob("*.html"))) == 3  # index, the suite's, literature


def test_rows_identical_on_every_question_are_named(tmp_path):
    results = tmp_path / "results"
    write_result(make_result(retriever="one", params={"a": 1}, ranks=RANKS_A), results)
    write_result(make_result(retriever="two", params={"b": 2}, ranks=RANKS_A), results)
    write_result(make_result(retriever="three", params={"c": 3}, ranks=RANKS_B), results)
    # the same ranks to a shallower depth are other numbers at deeper cutoffs: not identical
    write_result(make_result(retriever="four", ranks={"all": {"q1": 0, "q2": 4, "q3": None, "q4": None}}, depth=20), results)
    board = build_board(results, tmp_path / "README.md", published=())
    (section,) = board.sections
    assert section.identical == (("one", "two"),)
    board.write()
    (line,) = [x for x in board.markdown.splitlines() if "Identical on every question" in x]
    assert "one and two" in line and "three" not in line and "four" not in line
    page = (tmp_path / "html" / "s.html").read_text()
    assert "Identical on every question: one and two" in page


def _trained(variant, steps, data="demo-train (sha256:57dc9efebf7d)"):
    return {
        "variant": variant, "model": f"model (sha256:{variant})", "backend": "sentence-transformers",
        "format": "title_text", "max_length": "model default", "precision": "fp32",
        "training": {"variant": variant, "initial_model": "small-bert", "data": [data], "seed": 0, "steps": steps},
        "similarity": "inner_product", "index": "flat",
    }


def test_the_stopgrad_variant_says_why_it_equals_dpr_on_the_board(tmp_path):
    (stopgrad,) = [v for v in registry.registry("variants") if v.name == "stopgrad"]
    assert "half" in stopgrad.description and "Adam" in stopgrad.description and "dpr" in stopgrad.description
    results = tmp_path / "results"
    write_result(make_result(retriever="trained", params=_trained("dpr", 171), ranks=RANKS_A), results)
    write_result(make_result(retriever="trained", params=_trained("stopgrad", 171), ranks=RANKS_A), results)
    board = build_board(results, tmp_path / "README.md", published=())
    board.write()
    (section,) = board.sections
    assert dict(section.variants)["stopgrad"] == stopgrad.description
    assert f"- stopgrad: {stopgrad.description}" in board.markdown
    assert re.search(r"Identical on every question\*\*: trained: dpr on demo-train \(\w+\) and trained: stopgrad", board.markdown)
    assert "<dt>stopgrad</dt>" in (tmp_path / "html" / "s.html").read_text()


def test_the_committed_dpr_and_stopgrad_rows_are_named_identical():
    folder = REPO / "leaderboard" / "results"
    ranks = {}
    for path in folder.glob("demo--trained--*.json"):
        data = json.loads(path.read_text())
        ranks.setdefault(data["retriever"]["parameters"]["variant"], data["first_hit_ranks"])
    assert ranks["dpr"] == ranks["stopgrad"]  # the premise: the same rank on every question
    text = (REPO / "leaderboard" / "README.md").read_text()
    (line,) = [x for x in text.splitlines() if x.startswith("**Identical on every question**")]
    assert "trained: dpr on demo-train" in line and "trained: stopgrad on demo-train" in line


def test_a_trained_rows_parameters_start_with_what_tells_it_from_the_others(tmp_path):
    results = tmp_path / "results"
    write_result(make_result(retriever="trained", params=_trained("dpr", 171), ranks=RANKS_A), results)
    write_result(make_result(retriever="trained", params=_trained("flip", 232), ranks=RANKS_B), results)
    write_result(make_result(
        retriever="trained", params=_trained("qsft", 171, data="demo-train (sha256:f4f09667f367)"), ranks=RANKS_B,
    ), results)
    write_result(make_result(retriever="bm25", params={"k1": 0.9, "b": 0.4}), results)
    (section,) = sections(read_results(results))
    cells = {row.variant: row.parameters.split(", ") for row in section.rows}
    # the two settings that differ first (with the digest that tells the two data sets apart), then the rest
    assert set(cells["dpr"][:2]) == {"steps=171", "data=demo-train (sha256:57dc9efebf7d)"}
    assert set(cells["flip"][:2]) == {"steps=232", "data=demo-train (sha256:57dc9efebf7d)"}
    assert set(cells["qsft"][:2]) == {"steps=171", "data=demo-train (sha256:f4f09667f367)"}
    assert cells["dpr"][2] == "backend=sentence-transformers"
    assert cells[None] == ["k1=0.9", "b=0.4"]  # a retriever with one configuration: as before


def test_parts_named_by_relation_ids_show_the_relations_name(tmp_path):
    results = tmp_path / "results"
    ranks = {"P17": {"q1": 0, "q2": None}, "P19_similar": {"q3": 0}, "bucket0": {"q4": 1}}
    write_result(make_result(ranks=ranks), results)
    board = build_board(results, tmp_path / "README.md", published=())
    board.write()
    page = (tmp_path / "html" / "s.html").read_text()
    assert "<th>P17 country</th>" in page and "<th>P19_similar place of birth</th>" in page and "<th>bucket0</th>" in page
    svg = (tmp_path / "plots" / "s-parts.svg").read_text()
    assert "<!-- P17 country -->" in svg and "<!-- P19_similar place of birth -->" in svg


def test_a_board_written_before_is_left_as_it_was_when_it_cannot_be_written(tmp_path, capsys):
    write_result(make_result(suite="s"), tmp_path / "results")
    out = tmp_path / "board"
    assert main(["leaderboard", "--results-dir", str(tmp_path / "results"), "--output", str(out / "README.md")]) == 0
    shutil.rmtree(out / "html")
    (out / "html").write_text("")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # a new row would change the markdown and the plot
    write_result(make_result(suite="s", retriever="other", ranks=RANKS_B), tmp_path / "results")
    capsys.readouterr()
    assert main(["leaderboard", "--results-dir", str(tmp_path / "results"), "--output", str(out / "README.md")]) == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_configurations_of_one_retriever_start_with_the_setting_they_differ_in(tmp_path):
    results = tmp_path / "results"
    for model, ranks in (("small-bert", RANKS_A), ("tiny-bert", RANKS_B)):
        write_result(make_result(retriever="dense", params={"format": "title_text", "max_length": 128, "model": model},
                                 ranks=ranks), results)
    (section,) = sections(read_results(results))
    assert sorted(row.parameters for row in section.rows) == [
        "model=small-bert, format=title_text, max_length=128", "model=tiny-bert, format=title_text, max_length=128",
    ]

"""Result files (schema, validation, atomic writes) and the leaderboard renderer."""

from __future__ import annotations


import json
import os
from pathlib import Path

import pytest

from harness.util.atomic import write_text_atomic
from harness.errors import InputFileError
from harness.board.markdown import render
from harness.results.schema import read_result, read_results, result_filename, validate, write_result

from helpers.result_docs import make_result
from helpers.board_cells import cells


def test_write_and_read_back(tmp_path):
    path = write_result(make_result(), tmp_path)
    assert path.name == result_filename("s", "r", {"a": 1})
    result = read_result(path)
    assert result.suite == "s" and result.retriever == "r"
    parts, macro = result.accuracy(5)
    assert parts == {"all": 0.5} and macro == 0.5
    assert result.accuracy(1)[1] == 0.25
    assert result.accuracy(100)[1] == 0.75
    assert result.accuracy(101) is None  # beyond the depth that was retrieved


def test_same_configuration_replaces_its_file_and_another_gets_its_own(tmp_path):
    a = write_result(make_result(params={"a": 1}), tmp_path)
    b = write_result(make_result(params={"a": 1}, created="2026-02-01T00:00:00Z"), tmp_path)
    c = write_result(make_result(params={"a": 2}), tmp_path)
    assert a == b and a != c
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (lambda d: d.pop("first_hit_ranks"), "missing key 'first_hit_ranks'"),
        (lambda d: d.update(schema="other/9"), 'expected "schema"'),
        (lambda d: d["first_hit_ranks"]["all"].update(q9=100), "must be null or an integer in [0, 100)"),
        (lambda d: d["first_hit_ranks"]["all"].update(q9=True), "must be null or an integer"),
        (lambda d: d["first_hit_ranks"].update(all={}), "non-empty JSON object"),
        (lambda d: d["retriever"].update(name=""), "'retriever.name' must be a non-empty string"),
        (lambda d: d.update(depth="100"), "'depth' must be a JSON int"),
    ],
)
def test_validation_names_the_source_and_problem(mutate, problem):
    data = make_result()
    mutate(data)
    with pytest.raises(InputFileError) as err:
        validate(data, source="x.json")
    assert str(err.value).startswith("x.json: ") and problem in str(err.value)


def test_unreadable_result_files_give_one_line_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "harness-result/1",\n  oops}')
    with pytest.raises(InputFileError) as err:
        read_result(bad)
    assert str(err.value).startswith(f"{bad}:2: invalid JSON")
    assert "\n" not in str(err.value)
    with pytest.raises(InputFileError, match="cannot read result file"):
        read_result(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputFileError, match="bin.json: cannot read result file"):
        read_result(tmp_path / "bin.json")


def test_atomic_write_leaves_nothing_behind_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    write_text_atomic(target, "old")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]






def _board(tmp_path: Path, results: list[dict]) -> str:
    results_dir = tmp_path / "results"
    for r in results:
        write_result(r, results_dir)
    return render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)


def test_leaderboard_rows_are_ordered_and_recomputed_from_ranks(tmp_path):
    weak = make_result("weak", ranks={"all": {"q1": None, "q2": 50, "q3": None, "q4": 3}})
    strong = make_result("strong", ranks={"all": {"q1": 0, "q2": 1, "q3": 2, "q4": None}})
    markdown = _board(tmp_path, [weak, strong])
    strong_row, weak_row = cells(markdown)
    # strong: top-1 25%, top-5 75%; weak: top-5 25%, top-100 50%
    assert strong_row[:6] == ["strong", "a=1", "25.00", "75.00", "75.00", "75.00"]
    assert weak_row[:6] == ["weak", "a=1", "0.00", "25.00", "25.00", "50.00"]
    assert strong_row[-1].startswith("[s--strong--") and "(results/s--strong--" in strong_row[-1]
    assert "## s (SYNTHETIC)" in markdown


def test_leaderboard_macro_averages_parts_and_shows_each_part(tmp_path):
    ranks = {"P1": {"a": 0, "b": None}, "P2": {"c": 0, "d": 0, "e": 0, "f": None}}
    markdown = _board(tmp_path, [make_result("m", ranks=ranks)])
    # P1 top-1 = 50%, P2 top-1 = 75%: macro 62.50 (not the micro 66.67)
    (main,) = cells(markdown)
    p1, p2 = cells(markdown, details=True)[-2:]
    assert main[2] == "62.50"
    assert "6 questions in 2 parts, macro-averaged" in markdown
    assert p1 == ["P1", "50.00"] and p2 == ["P2", "75.00"]


def test_trained_rows_split_a_suite_into_the_parts_seen_in_training_and_the_rest(tmp_path):
    ranks = {
        "P1": {"a": 0, "b": 0},           # seen by the trained system
        "P2": {"c": 0, "d": None},        # seen
        "P3": {"e": None, "f": None},     # unseen
    }
    bm25_ranks = {"P1": {"a": 0, "b": None}, "P2": {"c": 0, "d": 0}, "P3": {"e": 0, "f": 0}}
    training = {"variant": "dpr", "seen": ["P1", "P2", "P9"], "seed": 0}
    trained = make_result("dense", params={"encoder": "trained", "query": {"training": training}}, ranks=ranks)
    bm25 = make_result("bm25", params={"k1": 0.9}, ranks=bm25_ranks)
    markdown = _board(tmp_path, [trained, bm25])
    assert "macro averages over the 2 parts some systems were trained on (P1, P2) and the 1 others" in markdown
    section = markdown[markdown.index("**Seen and unseen parts**"):]
    # the trained row is labelled by its variant (and digest), as compare and plot label it
    rows = {row[0].split(":")[0]: row for row in cells(section) if row[0] == "bm25" or row[0].startswith("dense: dpr (")}
    # top-1: dense seen (100 + 50) / 2 = 75, unseen 0; bm25 seen (50 + 100) / 2 = 75, unseen 100
    assert rows["dense"][1:5] == ["dpr", "these parts", "75.00", "0.00"]
    assert rows["bm25"][1:5] == ["", "–", "75.00", "100.00"]
    # a system trained on every part (or none) makes no split
    everything = make_result("dense", params={"query": {"training": {**training, "seen": ["P1", "P2", "P3"]}}}, ranks=ranks)
    assert "Seen and unseen parts" not in _board(tmp_path / "all", [everything, bm25])


def test_leaderboard_is_deterministic_and_keeps_the_newest_per_configuration(tmp_path):
    old = make_result("r", ranks={"all": {"q": None}}, created="2026-01-01T00:00:00Z")
    new = make_result("r", ranks={"all": {"q": 0}}, created="2026-03-01T00:00:00Z")
    d1, d2 = tmp_path / "one", tmp_path / "two"
    (d1 / "results").mkdir(parents=True)
    (d2 / "results").mkdir(parents=True)
    # same configuration in two files: only the newest counts
    (d1 / "results" / "a.json").write_text(json.dumps(new))
    (d1 / "results" / "b.json").write_text(json.dumps(old))
    (d2 / "results" / "z.json").write_text(json.dumps(new))
    (d2 / "results" / "y.json").write_text(json.dumps(old))
    m1 = render(read_results(d1 / "results"), output_dir=d1, results_dir=d1 / "results")
    m2 = render(read_results(d2 / "results"), output_dir=d2, results_dir=d2 / "results")
    (row,) = cells(m1)
    assert row[:3] == ["r", "a=1", "100.00"] and row[-1] == "[a.json](results/a.json)"
    assert m1.replace("a.json", "X") == m2.replace("z.json", "X")


def test_results_deeper_than_depth_are_dashes(tmp_path):
    shallow = make_result("shallow", ranks={"all": {"q": 0, "p": 4}}, depth=5)
    deep = make_result("deep", ranks={"all": {"q": 0, "p": 40}})
    markdown = _board(tmp_path, [shallow, deep])
    rows = {row[0]: row for row in cells(markdown)}
    assert rows["shallow"][2:6] == ["50.00", "100.00", "–", "–"]
    assert rows["deep"][2:6] == ["50.00", "50.00", "50.00", "100.00"]


def test_leaderboard_parameters_are_summarized():
    from harness.board.sections import summarize_parameters

    params = {
        "alpha": 1.3,
        "sparse": {"name": "bm25", "parameters": {"k1": 0.9}},
        "components": [{"name": "bm25"}, {"name": "minilm"}],
        "model": "x" * 100,
        "nested": {"a": 1},
    }
    expected = f"alpha=1.3, sparse=bm25, components=bm25+minilm, model={'x' * 59}…"
    assert summarize_parameters(params, width=200) == expected


def test_the_summary_is_short_and_made_of_whole_items():
    from harness.board.sections import SUMMARY_WIDTH, summarize_parameters

    params = {
        "query_model": "sentence-transformers/all-MiniLM-L6-v2 (sha256:b04a52bc540c)",
        "passage_model": "sentence-transformers/all-MiniLM-L6-v2 (sha256:b04a52bc540c)",
        "pooling": "mean",
        "query_max_length": 64,
        "passage_max_length": 256,
        **{f"setting_{i}": "value" for i in range(12)},
    }
    summary = summarize_parameters(params)
    assert summary.startswith("model=sentence-transformers/all-MiniLM-L6-v2, pooling=mean, ")
    assert "query_max_length=64" in summary and " max_length=" not in summary  # sides that differ stay apart
    assert "sha256" not in summary and "(" not in summary  # digests are in the details only
    assert summary.endswith(" more") and len(summary) <= SUMMARY_WIDTH + 20
    items = summary.split(", ")
    assert all("=" in item for item in items[:-1]) and items[-1].startswith("… +")
    shown, hidden = len(items) - 1, int(items[-1].split("+")[1].split()[0])
    assert shown + hidden == 2 + 1 + 2 + 12 - 1  # query_/passage_model merged into one item


def test_cells_cannot_break_the_table(tmp_path):
    result = make_result(retriever="evil | 1.00 | 2.00", params={"note": "a|b\nc"})
    markdown = _board(tmp_path, [result])
    rows = [line for line in markdown.splitlines() if line.startswith("| evil")]
    assert rows and all(line.count("|") - line.count("\\|") == 9 for line in rows[:1])  # 8 columns: domain before result
    assert "evil \\| 1.00 \\| 2.00" in markdown and "a\\|b c" in markdown


def test_a_trained_rows_summary_leaves_out_what_its_label_says():
    from harness.board.sections import summarize_parameters

    trained = {"variant": "qsft", "model": "model (sha256:33e14fa284cb)", "backend": "sentence-transformers",
               "training": {"variant": "qsft", "data": ["demo-train (sha256:f4f09667f367)"]}, "index": "flat"}
    assert summarize_parameters(trained) == "backend=sentence-transformers, index=flat"
    # not a trained checkpoint: a model and a variant are what tells the rows apart
    assert summarize_parameters({"variant": "a", "model": "m (sha256:0123)"}) == "variant=a, model=m"

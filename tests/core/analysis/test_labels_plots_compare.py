"""One label for a result everywhere (compare, plot, leaderboard), plots that can be read, and
compare's per-part tests, degenerate intervals and p-value format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.analysis import plots
from harness.analysis.compare import compare, format_comparison, format_p, load_systems
from harness.cli.main import main
from harness.errors import HarnessError
from harness.results.labels import result_label, training_data, unique_labels
from harness.board.markdown import render
from harness.results.schema import read_result, read_results, write_result

from helpers.result_docs import make_result
from helpers.paths import REPO

ROOT = REPO
COMMITTED = ROOT / "leaderboard" / "results"

#: Two parts of six questions; first-hit ranks per system.
RANKS_A = {"P1": {f"a{i}": r for i, r in enumerate([0, 0, 0, 1, None, 3])},
           "P2": {f"b{i}": r for i, r in enumerate([0, 2, None, None, 0, 9])}}
RANKS_B = {"P1": {f"a{i}": r for i, r in enumerate([None, 4, None, 1, None, 0])},
           "P2": {f"b{i}": r for i, r in enumerate([0, None, None, 7, None, None])}}


def trained(variant, ranks=RANKS_A, data=("demo-train (sha256:57dc9efebf7d)",), retriever="trained", **extra):
    training = {"variant": variant, "initial_model": "runs/small-bert", "data": list(data), "seed": 0, "steps": 10}
    params = {"variant": variant, "model": f"model (sha256:{variant:0<12.12})", "format": "title_text", "training": training}
    return make_result(retriever, params=params, ranks=ranks, **extra)


def written(folder, *docs):
    return [write_result(d, folder) for d in docs]


def drawn(fig):
    """``fig`` laid out and drawn (Agg), and its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def p_cells(text):
    """The p and p (Holm) cells of every paired-test table in compare's text."""
    found, columns = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "p (Holm)" in cells:
            columns = (cells.index("p"), cells.index("p (Holm)"))
        elif columns and not set(line) <= set("|-: "):
            found += [cells[i] for i in columns]
    return found


def one_line_error(capsys, args):
    assert main(args) == 2, args
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


# --- one label -----------------------------------------------------------------------------------


def test_trained_results_are_labelled_by_variant_training_data_and_digest(tmp_path):
    qsft, dpr = (read_result(p) for p in written(tmp_path, trained("qsft"), trained("dpr", ranks=RANKS_B)))
    assert result_label(qsft) == f"trained: qsft on demo-train ({qsft.config_key()})"
    assert result_label(dpr) == f"trained: dpr on demo-train ({dpr.config_key()})"
    assert result_label(qsft) != result_label(dpr)
    # the committed demo results: every trained file its own label
    committed = read_results(COMMITTED)
    by_file = {r.path.name: result_label(r) for r in committed}
    assert by_file["demo--trained--4d253ded.json"] == "trained: qsft on demo-train (4d253ded)"
    assert by_file["demo--trained--e3f993ad.json"] == "trained: dpr on demo-train (e3f993ad)"
    assert by_file["demo--specialised--1e758dc5.json"] == "specialised on demo-train (1e758dc5)"
    assert by_file["demo--bm25--4566dfd2.json"] == "bm25"
    assert len(set(by_file.values())) == len(by_file)
    # training data: names without digests or folders, several joined
    assert training_data({"data": ["/data/nq-train.json (sha256:abc)", "trivia (sha256:d)"]}) == "nq-train.json+trivia"


def test_compare_plot_and_leaderboard_use_the_same_label(tmp_path):
    paths = written(tmp_path, trained("qsft"), trained("dpr", ranks=RANKS_B), make_result("bm25", params={"k1": 0.9}, ranks=RANKS_B))
    results = [read_result(p) for p in paths]
    expected = [result_label(r) for r in results]
    systems = load_systems([str(p) for p in paths], suite=None, results_dir=tmp_path)
    assert [s.label for s in systems] == expected
    assert plots.labels(results) == expected
    assert list(plots.topk_plot(results).data["series"]) == expected
    assert list(plots.parts_plot(results, 5).data["series"]) == expected
    markdown = render(read_results(tmp_path), output_dir=tmp_path, results_dir=tmp_path)
    for label in expected:
        assert f"| {label} " in markdown
    assert "| trained " not in markdown  # no row named by the retriever alone


def test_repeated_names_get_the_digest_and_one_configuration_twice_is_refused(tmp_path):
    docs = [make_result("bm25", params={"k1": 0.9}), make_result("bm25", params={"k1": 1.2})]
    results = [read_result(p) for p in written(tmp_path, *docs)]
    assert unique_labels(results) == [f"bm25 ({r.config_key()})" for r in results]
    # the same configuration in two files: one series would hide the other
    copy = tmp_path / "copy" / results[0].path.name
    copy.parent.mkdir()
    copy.write_bytes(results[0].path.read_bytes())
    with pytest.raises(HarnessError) as info:
        plots.topk_plot([results[0], read_result(copy)])
    message = str(info.value)
    assert str(results[0].path) in message and str(copy) in message and "\n" not in message


# --- files wherever a system is named ------------------------------------------------------------


def test_compare_takes_result_files_as_systems_and_as_baseline(tmp_path, capsys):
    qsft, dpr, bm25 = written(tmp_path, trained("qsft"), trained("dpr", ranks=RANKS_B), make_result("bm25", ranks=RANKS_B))
    base = ["compare", str(qsft), str(dpr), str(bm25), "--k", "1", "--resamples", "200", "--permutations", "200", "--json"]
    assert main([*base, "--baseline", str(dpr)]) == 0
    data = json.loads(capsys.readouterr().out)
    dpr_label = result_label(read_result(dpr))
    assert {p["b"] for p in data["pairs"]} == {dpr_label}
    assert {p["a"] for p in data["pairs"]} == {result_label(read_result(qsft)), "bm25"}
    # another spelling of the same file, the label as shown, and the name it was given by
    for baseline in (f"{dpr.parent}/./{dpr.name}", dpr_label, str(dpr)):
        assert main([*base, "--baseline", baseline]) == 0
        assert {p["b"] for p in json.loads(capsys.readouterr().out)["pairs"]} == {dpr_label}
    # by label, looked up in --results-dir
    assert main(["compare", dpr_label, "bm25", "--suite", "s", "--results-dir", str(tmp_path), "--k", "1",
                 "--resamples", "100", "--permutations", "100", "--json", "--baseline", "bm25"]) == 0
    assert [s["label"] for s in json.loads(capsys.readouterr().out)["systems"]] == [dpr_label, "bm25"]
    # a bare retriever name several configurations share: refused, each one named
    err = one_line_error(capsys, ["compare", "trained", "bm25", "--suite", "s", "--results-dir", str(tmp_path)])
    assert "'trained' on s has 2 configurations" in err and dpr_label in err and qsft.name in err
    err = one_line_error(capsys, [*base, "--baseline", str(tmp_path / "other.json")])
    assert "--baseline" in err and "not one of the compared result files" in err
    err = one_line_error(capsys, [*base, "--baseline", "trained"])
    assert "names 2 of the compared systems" in err


def test_plot_takes_result_files_and_labels(tmp_path, capsys):
    qsft, dpr = written(tmp_path, trained("qsft"), trained("dpr", ranks=RANKS_B))
    out = tmp_path / "out"
    assert main(["plot", "topk", str(qsft), str(dpr), "--output", str(out), "--format", "svg"]) == 0
    assert main(["plot", "parts", result_label(read_result(qsft)), str(dpr), "--suite", "s", "--results-dir", str(tmp_path),
                 "--output", str(out), "--format", "svg", "--k", "5"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["s-parts-top5.svg", "s-topk.svg"]
    capsys.readouterr()


# --- no silent merging in a matrix ---------------------------------------------------------------


def test_matrix_keeps_two_trained_results_apart_or_refuses_naming_both(tmp_path, capsys):
    qsft, dpr = written(tmp_path, trained("qsft"), trained("dpr", ranks=RANKS_B))
    results = [read_result(qsft), read_result(dpr)]
    plot = plots.matrix_plot(results, 5)
    assert plot.data["row_names"] == sorted(result_label(r) for r in results)
    assert len([v for row in plot.data["values"] for v in row if v is not None]) == 2
    out = tmp_path / "out"
    assert main(["plot", "matrix", "--results-dir", str(tmp_path), "--output", str(out), "--format", "svg", "--k", "5"]) == 0
    capsys.readouterr()
    # rows and columns that cannot tell them apart: one line naming both files
    err = one_line_error(capsys, ["plot", "matrix", "--results-dir", str(tmp_path), "--output", str(out), "--k", "5",
                                  "--rows", "format", "--columns", "suite"])
    assert qsft.name in err and dpr.name in err and "one cell" in err


# --- plots that can be read ----------------------------------------------------------------------


def test_buckets_are_refused_for_a_suite_without_popularity_buckets(tmp_path, capsys):
    written(tmp_path, make_result("bm25", ranks=RANKS_A))
    err = one_line_error(capsys, ["plot", "buckets", "--suite", "s", "--results-dir", str(tmp_path), "--output", str(tmp_path / "o")])
    assert "suite s has no popularity buckets (its parts are P1, P2)" in err and "harness plot parts" in err
    buckets = {f"bucket{i}": {f"q{i}{j}": (0 if j <= i else None) for j in range(4)} for i in range(3)}
    folder = tmp_path / "pop"
    written(folder, make_result("bm25", ranks=buckets, suite="entityquestions-popularity-random-p19"))
    plot = plots.parts_plot(read_results(folder), 1, kind="buckets")
    assert "by popularity bucket" in plot.title and plot.data["parts"] == ["bucket0", "bucket1", "bucket2"]
    assert plots.render_bytes(plot, "svg").startswith(b"<?xml")


def test_synthetic_data_is_marked_on_every_plot(tmp_path):
    results = [read_result(p) for p in written(tmp_path, make_result("a", ranks=RANKS_A), make_result("b", ranks=RANKS_B))]
    for plot in (plots.topk_plot(results), plots.parts_plot(results, 5), plots.matrix_plot(results, 5)):
        assert "synthetic data" in plot.title
        assert plot.data["synthetic"] == ["s"]
        fig = plots.draw(plot)
        assert fig.get_suptitle() == plots.SYNTHETIC_NOTE
    real = make_result("a", ranks=RANKS_A)
    real["suite"]["synthetic"] = False
    plot = plots.topk_plot([read_result(write_result(real, tmp_path / "real"))])
    assert "synthetic" not in plot.title and "synthetic" not in plot.data and plots.draw(plot).get_suptitle() == ""


def test_many_systems_are_drawn_as_a_grid_and_legends_hide_nothing(tmp_path):
    docs = [make_result(f"system-{i}", params={"i": i}, ranks=RANKS_A if i % 2 else RANKS_B) for i in range(22)]
    results = read_results(written(tmp_path, *docs)[0].parent)
    parts = plots.parts_plot(results, 5)
    fig = plots.draw(parts)
    ax = fig.axes[0]
    # one row per system, each named on its axis: nothing to match by colour
    assert ax.get_legend() is None and len(ax.images) == 1
    assert [t.get_text() for t in ax.get_yticklabels()] == list(parts.data["series"])
    # few systems: bars, each its own colour
    few = plots.draw(plots.parts_plot(results[:plots.BARS_MAX], 5))
    colours = {tuple(c.patches[0].get_facecolor()) for c in few.axes[0].containers}
    assert len(colours) == plots.BARS_MAX
    # top-k: every line style distinct, and the legend clear of the axes and of the "100" tick
    for subset in (results[:3], results):
        topk = plots.draw(plots.topk_plot(subset))
        ax = topk.axes[0]
        styles = {(str(line.get_color()), line.get_linestyle()) for line in ax.get_lines()}
        assert len(styles) == len(subset)
        renderer = drawn(topk)
        legend = ax.get_legend().get_window_extent(renderer)
        ticks = [t for t in ax.get_xticklabels() if t.get_text() == "100"]
        assert ticks and all(t.get_window_extent(renderer).x1 < legend.x0 for t in ticks)
        assert ax.get_window_extent(renderer).x1 < legend.x0
        assert ax.get_ylim()[1] > 100
    # the matrix's colour bar label lies inside the saved drawing (constrained layout, tight box)
    matrix = plots.draw(plots.matrix_plot(results[:3], 5))
    assert matrix.get_layout_engine() is not None
    renderer = drawn(matrix)
    colorbar = matrix.axes[1]
    label = colorbar.yaxis.label.get_window_extent(renderer)
    assert colorbar.yaxis.label.get_text() == "top-5 accuracy (%)"
    assert 0 <= label.x0 and label.x1 <= matrix.bbox.x1


# --- compare: by part, degenerate intervals, p-values --------------------------------------------


@pytest.fixture
def pair(tmp_path):
    return [str(p) for p in written(tmp_path, make_result("a", ranks=RANKS_A), make_result("b", ranks=RANKS_B))]


def test_by_part_gives_per_part_differences_and_tests(pair, capsys):
    args = ["compare", *pair, "--k", "1", "--k", "5", "--resamples", "300", "--permutations", "300"]
    assert main([*args, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "pairs_by_part" not in plain
    assert main([*args, "--json", "--by-part"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pairs"] == plain["pairs"]  # asking for parts changes nothing overall
    by_part = data["pairs_by_part"]
    assert {(t["part"], t["measure"]) for t in by_part} == {(p, m) for p in ("P1", "P2") for m in ("top-1", "top-5", "MRR@5")}
    p1 = next(t for t in by_part if t["part"] == "P1" and t["measure"] == "top-1")
    # P1 top-1: a hits a0, a1, a2; b hits a5 -> a only 3, b only 1; difference (3 - 1) / 6
    assert (p1["a_only"], p1["b_only"]) == (3, 1)
    assert p1["difference"]["value"] == pytest.approx(2 / 6)
    assert p1["difference"]["low"] <= p1["difference"]["value"] <= p1["difference"]["high"]
    assert p1["p"] == pytest.approx(2 * 5 / 16)  # exact McNemar: 2 * P(X <= 1), X ~ Bin(4, 1/2)
    assert all(t["p_holm"] >= t["p"] for t in by_part)
    assert main([*args, "--by-part"]) == 0
    text = capsys.readouterr().out
    assert "Paired tests by part (6)" in text
    for heading in ("top-1 differences by part:", "top-5 differences by part:", "MRR@5 differences by part:"):
        assert heading in text
    row = next(line for line in text.splitlines() if line.startswith("| P1 ") and "top-1" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "+33.33" and cells[6] == "3 / 1" and cells[7] == format_p(p1["p"])


def test_a_degenerate_interval_says_why(tmp_path, capsys):
    everything = {"P1": {f"q{i}": 0 for i in range(42)}}
    half = {"P1": {f"q{i}": (0 if i % 2 else None) for i in range(42)}}
    paths = written(tmp_path, make_result("all", ranks=everything), make_result("half", ranks=half))
    assert main(["compare", *map(str, paths), "--k", "1", "--resamples", "200", "--permutations", "200"]) == 0
    text = capsys.readouterr().out
    assert "100.00 [100.00, 100.00] (degenerate: all n=42 questions hit)" in text
    assert "every bootstrap resample gives the same value" in text
    assert "50.00 [" in text and "50.00 [50.00, 50.00]" not in text
    c = compare(load_systems([str(p) for p in paths], suite=None, results_dir=tmp_path), ks=[1], resamples=100, permutations=100)
    assert c.accuracy["all"][1].degenerate == "all n=42 questions hit"
    assert c.accuracy["half"][1].degenerate is None
    assert c.to_json()["systems"][0]["accuracy"]["1"]["degenerate"] == "all n=42 questions hit"
    # two systems that agree everywhere: the difference's interval is degenerate too
    same = compare(load_systems([str(paths[0]), str(write_result(make_result("copy", ranks=everything), tmp_path))],
                                suite=None, results_dir=tmp_path), ks=[1], resamples=50, permutations=50)
    assert same.pairs[0].difference.degenerate == "A and B agree on all n=42 questions"


def test_p_values_have_one_format_and_json_keeps_the_float(pair, capsys):
    assert [format_p(p) for p in (1.0, 0.05, 0.0123456, 0.001, 0.000999, 0.0002, 3.6e-20)] == [
        "1.0000", "0.0500", "0.0123", "0.0010", "1.0e-03", "2.0e-04", "3.6e-20"]
    fixed, scientific = re.compile(r"\d\.\d{4}"), re.compile(r"\d\.\de-\d\d")
    args = ["compare", *pair, "--resamples", "200", "--permutations", "200", "--by-part"]
    assert main(args) == 0
    values = p_cells(capsys.readouterr().out)
    assert len(values) == 2 * (4 + 1) * 3  # (p, Holm) x (4 cutoffs + MRR) x (overall + 2 parts)
    assert all(fixed.fullmatch(v) or scientific.fullmatch(v) for v in values), values
    for v in values:
        assert (float(v) >= 1e-3) == bool(fixed.fullmatch(v)), v
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(isinstance(t["p"], float) and isinstance(t["p_holm"], float) for t in data["pairs"] + data["pairs_by_part"])
    c = compare(load_systems(pair, suite=None, results_dir=Path(pair[0]).parent), resamples=200, permutations=200)
    assert [t["p"] for t in c.to_json()["pairs"]] == [t.p_value for t in c.pairs]
    assert p_cells(format_comparison(c)) == [format_p(p) for t in c.pairs for p in (t.p_value, t.p_holm)]
    # the committed demo: p-values from 1e-29 to 0.01 side by side, each in its one format
    assert main(["compare", "minilm", "bm25", "--suite", "demo", "--results-dir", str(COMMITTED), "--k", "20",
                 "--resamples", "100", "--permutations", "100"]) == 0
    values = p_cells(capsys.readouterr().out)
    assert any(float(v) < 1e-20 for v in values) and any(float(v) > 1e-3 for v in values)
    for v in values:
        assert (fixed if float(v) >= 1e-3 else scientific).fullmatch(v), v

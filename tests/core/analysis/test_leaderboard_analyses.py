"""What the leaderboard adds from the analyses: intervals, ties with the best, seeds, published rows, plots."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from harness.analysis import stats
from harness.analysis.plots import MANIFEST, parts_plot, render_bytes, standard_plots, sync_plot_dir, topk_plot
from harness.analysis.published import checks, format_checks, read_published_table
from harness.api import PublishedRow, PublishedTable
from harness.cli.main import main
from harness.errors import InputFileError
from harness.board.markdown import render
from harness.results.schema import read_results, write_result

from helpers.result_docs import make_result
from helpers.board_cells import cells


def ranks(hits_at_0):
    """Questions q0.. with rank 0 where 1, else no hit."""
    return {"all": {f"q{i}": 0 if h else None for i, h in enumerate(hits_at_0)}}


def board(tmp_path, docs, **kwargs):
    for d in docs:
        write_result(d, tmp_path / "results")
    return render(read_results(tmp_path / "results"), output_dir=tmp_path, results_dir=tmp_path / "results", **kwargs)


def test_each_value_has_its_bootstrap_interval(tmp_path):
    hits = [1] * 30 + [0] * 70
    markdown = board(tmp_path, [make_result("a", ranks=ranks(hits))])
    (row,) = cells(markdown, raw=True)
    low, high = stats.bootstrap_ci(
        [np.array(hits, dtype=float)], rng=np.random.default_rng(0)
    )  # another seed: the interval agrees to about a point
    value, interval = row[2].split(" ", 1)
    assert value.strip("*") == "30.00"
    shown = [float(x) for x in interval.strip("()").split("–")]
    assert shown[0] == pytest.approx(100 * low, abs=1.5) and shown[1] == pytest.approx(100 * high, abs=1.5)
    # a binomial proportion's interval: about +- 1.96 * sqrt(p(1-p)/n) = +- 9 points
    assert shown[1] - shown[0] == pytest.approx(2 * 1.96 * math.sqrt(0.3 * 0.7 / 100) * 100, abs=1.5)


def test_best_and_those_not_significantly_worse_are_bold(tmp_path):
    n = 200
    best = [1] * 120 + [0] * 80
    close = [1] * 116 + [0] * 84  # 4 discordant questions: McNemar p = 0.125
    far = [1] * 40 + [0] * 160  # 80 discordant: p ~ 1e-24
    markdown = board(tmp_path, [make_result(x, ranks=ranks(h), depth=1, k=[1]) for x, h in (("best", best), ("close", close), ("far", far))])
    rows = {row[0]: row for row in cells(markdown, raw=True)}
    assert rows["best"][2].startswith("**60.00**")
    assert rows["close"][2].startswith("**58.00**")
    assert rows["far"][2].startswith("20.00 (")
    assert len(best) == n


def test_seeds_of_one_configuration_are_one_row(tmp_path):
    docs = [
        make_result("t", params={"lr": 1, "seed": s}, ranks=ranks(h), created=f"2026-01-0{s}T00:00:00Z")
        for s, h in ((1, [1, 1, 0, 0]), (2, [1, 1, 1, 0]), (3, [1, 0, 0, 0]))
    ]
    markdown = board(tmp_path, docs)
    (row,) = cells(markdown, raw=True)
    assert row[0] == "t (3 seeds)" and row[1] == "lr=1"
    # top-1: 50, 75, 25 -> mean 50, sample std 25
    assert row[2] == "50.00 ± 25.00"
    assert row[-1].count("](") == 3


def test_published_rows_sit_beside_results_of_their_suite(tmp_path):
    doc = make_result("bm25", suite="nq")
    doc["suite"]["synthetic"] = False
    table = PublishedTable(
        name="paper-t1", title="T1", citation="Someone 2020, Table 1", url="https://example.org/t1",
        rows=(PublishedRow(system="BM25 (paper)", suite="nq", values={20: 59.1, 100: 73.7}),
              PublishedRow(system="Other suite", suite="trivia", values={20: 1.0})),
    )
    markdown = board(tmp_path, [doc], published=[table])
    suites, literature = markdown.split("## The literature, suite by suite")
    rows = cells(suites, raw=True)
    published = [r for r in rows if r[0].startswith("*published:*")]
    assert len(published) == 1
    assert published[0][:2] == ["*published:* BM25 (paper)", "[Someone 2020, Table 1](https://example.org/t1)"]
    assert published[0][2:6] == ["–", "–", "59.1", "73.7"]  # as printed
    # every table also has its own folded block, rows of every suite included
    assert "<details><summary>paper-t1: T1</summary>" in markdown and "| Other suite" in markdown


def published_file(tmp_path, text, name="p-1"):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


GOOD = '''
name = "p-1"
title = "T"
citation = "C"
[[rows]]
system = "BM25"
suite = "s"
retriever = "r"
values = { 1 = 50.0, 5 = 55.0 }
'''


def test_read_published_table(tmp_path):
    table = read_published_table(published_file(tmp_path, GOOD))
    assert table.rows[0].values == {1: 50.0, 5: 55.0} and table.rows[0].retriever == "r"


@pytest.mark.parametrize(
    "change, problem",
    [
        (("values = { 1 = 50.0, 5 = 55.0 }", "values = { 1 = 150.0 }"), "rows[0]: top-1 must be a percentage"),
        (("values = { 1 = 50.0, 5 = 55.0 }", "values = { x = 1.0 }"), "rows[0]: cutoff 'x'"),
        (('name = "p-1"', 'name = "other"'), "'name' is 'other' but the file is named p-1.toml"),
        (('suite = "s"', 'suite = "s"\ncolour = 1'), "rows[0]: unknown key 'colour'"),
        (('title = "T"', 'title = '), "invalid TOML"),
        (('citation = "C"', ''), "'citation' must be a non-empty string"),
    ],
)
def test_bad_published_files_are_one_line_errors(tmp_path, change, problem):
    path = published_file(tmp_path, GOOD.replace(*change))
    with pytest.raises(InputFileError) as info:
        read_published_table(path)
    assert problem in str(info.value) and "\n" not in str(info.value) and str(path) in str(info.value)


def test_reproduce_check_compares_within_tolerance(tmp_path, capsys):
    table = read_published_table(published_file(tmp_path, GOOD))
    # top-1 = 25% (published 50), top-5 = 50% (published 55)
    write_result(make_result("r", suite="s"), tmp_path / "results")
    done, missing = checks([table], read_results(tmp_path / "results"))
    assert [(c.k, round(c.difference, 4), c.within(2)) for c in done] == [(1, -25.0, False), (5, -5.0, False)]
    assert [c.within(6) for c in done] == [False, True]
    assert [c.allowed for c in done] == [0.5, 0.5]  # no digits key: 50.0 and 55.0 show no decimals
    text = format_checks(done, missing, 2)
    assert "DRIFT" in text and "OK" not in text
    assert not missing


def test_reproduce_cli_exit_status(tmp_path, capsys, monkeypatch):
    spec_dir = tmp_path / "specs"
    (spec_dir / "published").mkdir(parents=True)
    published_file(spec_dir / "published", GOOD)
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec_dir))
    from harness import registry

    registry._cache.clear()
    results = tmp_path / "results"
    results.mkdir()
    # an empty folder (a check pointed at the wrong folder) compares nothing: that fails the check
    assert main(["reproduce", "--results-dir", str(results)]) == 0
    assert main(["reproduce", "--results-dir", str(results), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "p-1: BM25 on s: harness run --retriever r --suite s" in out
    assert f"nothing was compared: {results} holds no result file" in err
    # results none of which is of a published row: said, and a failure unless expected
    write_result(make_result("other", suite="s2", ranks=ranks([1, 1, 0, 0])), results)
    assert main(["reproduce", "--results-dir", str(results), "--check"]) == 1
    err = capsys.readouterr().err
    assert "nothing was compared: none of the 1 result(s)" in err and "--allow-unpublished passes" in err
    assert main(["reproduce", "--results-dir", str(results), "--check", "--allow-unpublished"]) == 0
    assert "(allowed by --allow-unpublished)" in capsys.readouterr().err
    shutil.rmtree(results)
    results.mkdir()
    assert main(["reproduce", "--results-dir", str(results), "--check", "--allow-unpublished"]) == 1
    assert "holds no result file" in capsys.readouterr().err
    write_result(make_result("r", suite="s", ranks=ranks([1, 1, 0, 0])), results)  # top-1 50, top-5 50
    assert main(["reproduce", "--results-dir", str(results)]) == 0
    assert main(["reproduce", "--results-dir", str(results), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "1 of 2 comparisons drift" in err
    assert main(["reproduce", "--results-dir", str(results), "--check", "--tolerance", "30"]) == 0
    assert main(["reproduce", "--results-dir", str(results), "--check", "--tolerance", "0.3"]) == 1  # points now
    registry._cache.clear()


def test_plots_are_reproducible_and_checked(tmp_path):
    docs = [make_result("a", ranks={"p1": {"q1": 0, "q2": 3}, "p2": {"q3": None, "q4": 1}}),
            make_result("b", ranks={"p1": {"q1": 2, "q2": None}, "p2": {"q3": 0, "q4": 0}})]
    for d in docs:
        write_result(d, tmp_path / "results")
    results = read_results(tmp_path / "results")
    plots = standard_plots(results)
    assert sorted(plots) == ["s-parts", "s-topk"]
    assert plots["s-topk"].data["series"]["a"][:4] == [25.0, 50.0, 50.0, 75.0]  # macro over p1, p2
    for fmt in ("png", "svg"):
        assert render_bytes(plots["s-topk"], fmt) == render_bytes(plots["s-topk"], fmt)
    folder = tmp_path / "plots"
    assert sync_plot_dir(plots, folder, check=True) == [f"{folder / MANIFEST} is missing"]
    sync_plot_dir(plots, folder, check=False)
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST, "s-parts.svg", "s-topk.svg"]
    assert sync_plot_dir(plots, folder, check=True) == []
    # an edited image, a plot of other data, a stray file: each is caught
    original = (folder / "s-topk.svg").read_bytes()
    (folder / "s-topk.svg").write_bytes(original.replace(b"<svg", b"<svg data-x='1'", 1))
    assert any("s-topk.svg" in p for p in sync_plot_dir(plots, folder, check=True))
    (folder / "s-topk.svg").write_bytes(original)
    other = dict(plots, **{"s-topk": topk_plot(results[:1])})
    assert any("other data: s-topk" in p for p in sync_plot_dir(other, folder, check=True))
    (folder / "s-topk.svg").unlink()
    assert f"{folder / 's-topk.svg'} is missing" in sync_plot_dir(plots, folder, check=True)
    sync_plot_dir(plots, folder, check=False)
    # a plot no longer wanted is caught and removed; files harness did not draw are left alone
    (folder / "mine.svg").write_text("<svg/>")
    fewer = {"s-topk": plots["s-topk"]}
    assert any("s-parts.svg" in p for p in sync_plot_dir(fewer, folder, check=True))
    sync_plot_dir(fewer, folder, check=False)
    assert not (folder / "s-parts.svg").exists() and (folder / "mine.svg").exists()
    assert sync_plot_dir(fewer, folder, check=True) == []
    sync_plot_dir(plots, folder, check=False)
    # another matplotlib: data and recorded digests are compared instead of a fresh drawing
    record = json.loads((folder / MANIFEST).read_text())
    record["matplotlib"] = "0.0"
    (folder / MANIFEST).write_text(json.dumps(record))
    assert sync_plot_dir(plots, folder, check=True) == []
    (folder / "s-parts.svg").write_bytes(b"<svg/>")
    assert any("changed after it was drawn" in p for p in sync_plot_dir(plots, folder, check=True))


def test_parts_plot_refuses_cutoffs_deeper_than_a_result(tmp_path):
    write_result(make_result("a", depth=5, ranks={"all": {"q1": 0, "q2": None}}), tmp_path)
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="deeper than a's depth"):
        parts_plot(read_results(tmp_path), 20)


def test_plot_command_writes_png_and_svg(tmp_path, capsys):
    write_result(make_result("a"), tmp_path / "results")
    write_result(make_result("b", ranks={"all": {"q1": None, "q2": 0, "q3": 1, "q4": 2}}), tmp_path / "results")
    out = tmp_path / "out"
    assert main(["plot", "topk", "--suite", "s", "--results-dir", str(tmp_path / "results"), "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["s-topk.png", "s-topk.svg"]
    assert (out / "s-topk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", "matrix", "--results-dir", str(tmp_path / "results"), "--output", str(out), "--format", "png", "--k", "5"]) == 0
    assert (out / "matrix-top5.png").is_file()
    assert main(["plot", "matrix", "--results-dir", str(tmp_path / "results"), "--output", str(out), "--rows", "nope"]) == 2
    assert "has no parameter 'nope'" in capsys.readouterr().err


def test_plot_labels_tell_repeated_names_apart_by_variant_else_digest(tmp_path):
    from harness.analysis.plots import labels

    ranks = {"P1": {"a": 0, "b": None}, "P2": {"c": 3, "d": 30}}
    docs = [
        make_result("trained", params={"variant": "dpr", "path": "runs/a"}, ranks=ranks),
        make_result("trained", params={"variant": "flip", "path": "runs/b"}, ranks=ranks),
        make_result("trained", params={"variant": "flip", "path": "runs/c"}, ranks=ranks),
        make_result("bm25", params={"k1": 0.9}, ranks=ranks),
    ]
    for doc in docs:
        write_result(doc, tmp_path)
    results = sorted(read_results(tmp_path), key=lambda r: (r.label, str(r.parameters)))
    shown = labels(results)
    # trained results: the variant and the configuration digest, as compare and the leaderboard show them
    assert shown[0] == "bm25" and shown[1] == f"trained: dpr ({results[1].config_key()})"
    assert shown[2].startswith("trained: flip (") and shown[3].startswith("trained: flip (") and shown[2] != shown[3]
    # the leaderboard's bar chart keeps the best configurations only
    many = [make_result(f"r{i}", params={"i": i}, ranks={"P1": {"a": i % 3, "b": None}, "P2": {"c": 0, "d": i}}) for i in range(9)]
    folder = tmp_path / "many"
    for doc in many:
        write_result(doc, folder)
    plot = standard_plots(read_results(folder))["s-parts"]
    from harness.analysis.plots import PARTS_SHOWN

    assert len(plot.data["series"]) == PARTS_SHOWN

"""What reaches the leaderboard and the other generated texts: input text is shown, never obeyed
(no HTML, link, row or column from a file or a name), and labels say what was done (re-ranked
depth, why a name is unavailable, one row per configuration)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import harness.registry
from harness.api import RunContext
from harness.cli.main import main
from harness.errors import HarnessError
from harness.board.markdown import render
from harness.results.report import link_target, markdown_link, markdown_text
from harness.results.schema import Result, dumps, read_results, result_filename, validate, write_result

from helpers.result_docs import make_result
from helpers.board_cells import cells

#: The HTML the board writes itself; any other ``<`` in a generated file came from an input.
OWN_TAGS = re.compile(r"</?(?:details|summary)>")

HOSTILE_NAME = "<img src=x onerror=alert(1)>\r\n| forged | a=1 | 99.99 | 99.99 | 99.99 | 99.99 | [f.json](javascript:alert(1)) |"
HOSTILE_PARAMETERS = {
    "model": "[weights](javascript:alert(1))",
    "path": "/models/<b onmouseover=alert(1)>x</b>\n| forged | row |",
    "note": "`code` | pipe \\| <!-- comment --> &lt;script&gt;",
}


def assert_inert(markdown: str, own: str = "") -> None:
    """No HTML but the board's own, no link but http(s) or relative ones, and every table row
    with its header's number of columns; ``own``: text of the generator's own holding a ``<``."""
    assert "<" not in OWN_TAGS.sub("", markdown.replace(own, "") if own else markdown)
    for target in re.findall(r"(?<!\\)\]\(([^)]*)\)", markdown):
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", target)
        assert scheme is None or scheme.group(1) in ("http", "https"), target
    assert "javascript:" not in "".join(re.findall(r"(?<!\\)\]\(([^)]*)\)", markdown))
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(?:[-: ]+\|)+", lines[i + 1]):
            width = len(re.split(r"(?<!\\)\|", line))
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                assert len(re.split(r"(?<!\\)\|", lines[j])) == width, lines[j]
                j += 1
    assert not any(line.lstrip("| ").startswith("forged") for line in lines)


def board(tmp_path: Path, docs: list[dict], **kwargs) -> str:
    results = tmp_path / "results"
    for d in docs:
        write_result(d, results)
    return render(read_results(results), output_dir=tmp_path, results_dir=results, **kwargs)


@pytest.fixture
def fresh_registry(monkeypatch):
    """Registries and plugins loaded anew for this test (its spec folder), and dropped after it."""
    from harness import plugins

    monkeypatch.setattr(harness.registry, "_cache", {})
    monkeypatch.setattr(harness.registry, "_unavailable", {})
    plugins.loaded_plugins.cache_clear()
    yield
    plugins.loaded_plugins.cache_clear()


# --- A: markup from inputs ------------------------------------------------------------------------


def test_markdown_text_shows_markup_literally():
    assert markdown_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)>"
    assert markdown_text("a|b\r\nc\td\u2028e\u202ef") == "a\\|b  c d e f"
    assert markdown_text("[x](javascript:alert(1))") == "[x\\](javascript:alert(1))"
    assert markdown_text("[x]: javascript:alert(1)") == "[x\\]: javascript:alert(1)"
    assert markdown_text("`code`") == "\\`code\\`"
    assert markdown_text("&lt; & AT&T") == "&amp;lt; & AT&T"
    assert markdown_text("a\\|b") == "a\\\\\\|b" and markdown_text("ends\\") == "ends\\\\"
    assert markdown_text("# heading") == "\\# heading" and markdown_text("1. item") == "1\\. item"
    # what names and notes hold every day stays as written
    for plain in ("bm25", "contents=title\\ntext", "components[0].name=bm25", "80.4 in the README", "alpha * BM25", "Li & Lin"):
        assert markdown_text(plain) == plain


@pytest.mark.parametrize(
    "url, target",
    [
        ("https://example.org/t1", "https://example.org/t1"),
        ("HTTP://example.org/a_(b)|c d", None),  # a space: not one address
        ("http://example.org/a_(b)|c", "http://example.org/a_%28b%29%7Cc"),
        ("results/s--r--1234.json", "results/s--r--1234.json"),
        ("../x/(y).json", "../x/%28y%29.json"),
        ("javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("java\tscript:alert(1)", None),
        (" javascript:alert(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("file:///etc/passwd", None),
        ("//evil.example/x", None),
        ("https:///no-host", None),
        ("javascript&#58;alert(1)", "javascript&amp;#58;alert%281%29"),  # markdown would decode the reference
        ("javascript\\:alert(1)", "javascript%5C:alert%281%29"),  # markdown would drop the backslash
    ],
)
def test_links_are_http_or_relative(url, target):
    assert link_target(url) == target


def test_an_unsafe_link_is_shown_as_text():
    assert markdown_link("C", "javascript:alert(1)") == "C (javascript:alert(1))"
    assert markdown_link("<b>C</b>", "https://example.org") == "[&lt;b>C&lt;/b>](https://example.org)"
    assert markdown_link("C", "") == "C"


def test_hostile_result_files_add_no_markup_and_no_rows(tmp_path):
    hostile = make_result(HOSTILE_NAME, params=HOSTILE_PARAMETERS)
    hostile["suite"]["corpus"]["name"] = "<iframe src=javascript:alert(1)>"
    hostile["metrics"] = {"<i>m</i>\n| x |": {"macro": {k: 0.5 for k in ("1", "5", "20", "100")},
                                              "parts": {"all": {k: 0.5 for k in ("1", "5", "20", "100")}}}}
    chain = make_result("bm25", params={"k1": 0.9})
    chain["reranker"] = {"name": "<i>upr</i>", "plugin": "p", "depth": 100,
                         "parameters": {"model": "<img src=x onerror=alert(2)>/t5\n| forged |"}}
    plain = make_result("plain")
    markdown = board(tmp_path, [hostile, chain, plain])
    assert_inert(markdown)
    main = [row for row in cells(markdown) if row[-1].endswith(".json)")]
    assert len(main) == 3  # one row per result, whatever their names hold
    assert any(row[0].startswith("&lt;img src=x onerror=alert(1)>") for row in main)
    assert "[weights\\](javascript:alert(1))" in markdown


def test_hostile_suite_and_part_names_add_no_markup_and_no_rows(tmp_path):
    ranks = {"<b>P1</b>": {"a": 0, "b": None}, "P2\r\n| forged | 1 |": {"c": 0, "d": 0}}
    training = {"variant": "<v onclick=alert(1)>", "seen": ["<b>P1</b>"]}
    docs = [
        make_result("dense", params={"query": {"training": training}}, ranks=ranks, suite="<h1>s</h1>\n## forged"),
        make_result("bm25", ranks=ranks, suite="<h1>s</h1>\n## forged"),
    ]
    markdown = board(tmp_path, docs, plots={"<h1>s</h1>\n## forged": ["plots/x).svg"]})
    assert_inert(markdown)
    assert "\n## &lt;h1>s&lt;/h1> ## forged (SYNTHETIC)\n" in markdown
    assert "![x)](plots/x%29.svg)" in markdown
    assert len([row for row in cells(markdown) if row[-1].endswith(".json)")]) == 2


def _spec_folder(tmp_path: Path, tables: dict[str, str]) -> Path:
    spec = tmp_path / "specs"
    (spec / "published").mkdir(parents=True)
    for name, text in tables.items():
        (spec / "published" / f"{name}.toml").write_text(text, encoding="utf-8")
    return spec


EVIL_TABLE = r'''
name = "evil-table"
title = "<img src=x onerror=alert(1)> Title\r\n| forged | nq | 99.9 |"
citation = "[click](javascript:alert(1)) <b onmouseover=alert(1)>cite</b>"
url = "javascript:alert(document.cookie)"
note = "<script>alert(1)</script>\n\n| forged | row |"
version = "<i>v1</i>"
allowance = { points = 1.0, reason = "<u onclick=alert(1)>why</u>" }

[[rows]]
system = "<img src=x onerror=alert(2)>\r\n| forged | nq | 99.9 | 99.9 |"
suite = "nq"
values = { 20 = 50.0, 100 = 60.0 }
retriever = "bm25<script>"
options = { model = "<b>x</b>" }
note = "[x](javascript:alert(3))"

[[rows]]
system = "part row"
suite = "nq"
part = "<p>\nP1"
values = { 20 = 40.0 }
'''

ODD_URL_TABLE = '''
name = "odd-url"
title = "T"
citation = "C"
url = "http://example.org/wiki/A_(b)"

[[rows]]
system = "S"
suite = "nq"
values = { 20 = 10.0 }
'''


def test_hostile_published_tables_add_no_markup_no_link_and_no_rows(tmp_path, monkeypatch, capsys, fresh_registry):
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(_spec_folder(tmp_path, {"evil-table": EVIL_TABLE, "odd-url": ODD_URL_TABLE})))
    results = tmp_path / "results"
    doc = make_result("bm25", suite="nq", params={"k1": 0.9})
    doc["suite"]["synthetic"] = False
    write_result(doc, results)
    output = tmp_path / "board" / "README.md"
    assert main(["leaderboard", "--results-dir", str(results), "--output", str(output)]) == 0, capsys.readouterr().err
    markdown = output.read_text(encoding="utf-8")
    assert_inert(markdown)
    section = markdown[markdown.index("\n## nq"):markdown.index("\n## The literature")]
    rows = cells(section, raw=True)
    assert len([r for r in rows if r[-1].endswith(".json)")]) == 1
    from harness.analysis.published import rows_for_suite

    published = [r for r in rows if r[0].startswith("*published:*")]
    assert len(published) == len(rows_for_suite(list(harness.registry.registry("published")), "nq"))
    ours = [r for r in published if r[-1] in ("evil-table", "odd-url")]
    assert len(ours) == 2  # evil-table's whole-suite row and odd-url's: nothing forged among them
    assert sum(1 for r in ours if r[1] == "[C](http://example.org/wiki/A_%28b%29)") == 1
    # the unsafe address is shown as text beside its citation, never as a link
    assert "(javascript:alert(document.cookie))" in markdown
    assert not re.search(r"(?<!\\)\]\(javascript:", markdown)


def test_compare_tables_show_hostile_labels_as_text(tmp_path):
    from harness.analysis.compare import System, compare, format_comparison

    ranks = {"<b>P1</b>": {"a": 0, "b": None}, "P2\n| forged |": {"c": 0, "d": None}}
    a = Result(make_result(HOSTILE_NAME, ranks=ranks, suite="<s>\n| x |"), tmp_path / "a.json")
    b = Result(make_result("b", ranks={p: {q: None for q in v} for p, v in ranks.items()}, suite="<s>\n| x |"), tmp_path / "b.json")
    text = format_comparison(compare([System(a.label, a), System(b.label, b)], resamples=20, permutations=20), by_part=True)
    assert_inert(text, own="p <= ")
    assert text.splitlines()[0].startswith("&lt;s> \\| x \\|")


def test_the_terminal_table_keeps_names_on_their_lines():
    from harness.results.report import format_result_table

    doc = make_result("r\n| forged", params={"p": "x\r\ny"}, suite="s\nretriever fake")
    doc["reranker"] = {"name": "rr\nx", "plugin": "p", "parameters": {"model": "m\n"}, "depth": 100}
    header = format_result_table(doc).split("\n\n")[0].splitlines()
    assert len(header) == 3
    assert header[1].startswith("retriever r | forged (p=x  y)")


def test_plots_draw_names_as_written():
    from harness.analysis.plots import draw, render_bytes, topk_plot

    docs = [Result(make_result(name)) for name in ("a$\\frac{$b", "_hidden")]
    plot = topk_plot(docs)
    assert render_bytes(plot, "svg").startswith(b"<?xml")  # no mathtext error
    legend = [t.get_text() for t in draw(plot).axes[0].get_legend().get_texts()]
    assert legend == ["a\\$\\frac{\\$b", " _hidden"]  # a legend drops labels starting with "_"


# --- B: labels that say what was done ------------------------------------------------------------


class FiveHits:
    """A first stage that returns at most five passages, whatever depth it is asked for."""

    def parameters(self):
        return {"hits": 5}

    def index(self, corpus, context):
        self.ids = [p.id for p in corpus]

    def search(self, queries, k, context):
        from harness.api import Hit

        return [[Hit(passage_id=pid, score=float(-i)) for i, pid in enumerate(self.ids[: min(5, k)])] for _ in queries]


def test_the_label_shows_the_depth_actually_reranked(tmp_path):
    from helpers.fake_rerankers import TitleOverlapReranker
    from harness.evaluate import Second, evaluate_retriever
    from harness.results.report import format_result_table
    from harness.testing import toy_suite

    result = evaluate_retriever(
        FiveHits(), toy_suite(), name="five", plugin="p", k=[1, 5],
        context=RunContext(cache_dir=tmp_path, progress=False),
        reranker=Second(TitleOverlapReranker(), name="title", plugin="p", depth=100),
    ).result
    assert result["reranker"]["depth"] == 100 and result["reranker"]["reranked"] == 5
    validate(result, source="r.json")
    parsed = Result(result)
    assert parsed.label == "five » title(top-5 of 100 asked)"
    # what was re-ranked is a record of the run, not part of its configuration
    assert result_filename("toy", "five", {"hits": 5}, {**result["reranker"], "reranked": 100}) == result_filename(
        "toy", "five", {"hits": 5}, {k: v for k, v in result["reranker"].items() if k != "reranked"}
    )
    assert "re-ranked by title (top 5 at most (100 asked; the first stage had fewer hits)" in format_result_table(result)
    markdown = board(tmp_path, [result])
    (row,) = [r for r in cells(markdown) if r[-1].endswith(".json)")]
    assert row[0] == "five » title(top-5 of 100 asked)"
    assert "depth=100, reranked=5 at most (the first stage had fewer hits)" in markdown
    with pytest.raises(HarnessError, match="'reranker.reranked'"):
        validate({**result, "reranker": {**result["reranker"], "reranked": 101}}, source="r.json")


def test_scoring_a_shallow_run_records_the_depth_actually_reranked(capsys, tmp_path):
    from helpers.fake_rerankers import registries_with_fake_rerankers

    with registries_with_fake_rerankers():
        assert main(["run", "-r", "test-overlap", "-s", "demo", "--k", "1,5", "--no-progress", "--results-dir",
                     str(tmp_path / "first"), "--save-run", "--runs-dir", str(tmp_path / "runs"),
                     "--cache-dir", str(tmp_path / "c")]) == 0
        run_file = next((tmp_path / "runs").glob("*.trec"))
        code = main(["score", "-s", "demo", "--run", str(run_file), "--name", "mine", "--no-progress", "--results-dir",
                     str(tmp_path / "scored"), "--rerank", "test-title", "--rerank-depth", "100"])
        out, err = capsys.readouterr()
    assert code == 0, err
    (doc,) = [json.loads(p.read_text()) for p in (tmp_path / "scored").glob("*.json")]
    assert doc["reranker"]["depth"] == 100 and doc["reranker"]["reranked"] == 5
    assert "re-ranked by test-title (top 5 at most (100 asked" in out


BROKEN_SUITE = 'name = "curatedd"\ndescription = "d"\nmatch = "regexx"\n'


def test_a_suite_whose_spec_failed_says_why_not_did_you_mean(tmp_path, monkeypatch, capsys, fresh_registry):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "curatedd.toml").write_text(BROKEN_SUITE)
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    for argv in (["run", "-r", "bm25", "-s", "curatedd", "--results-dir", str(tmp_path / "r")], ["data", "fetch", "curatedd"]):
        assert main(argv) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert "did you mean" not in last
        assert "suite 'curatedd' is not available: its spec failed to load" in last
        assert str(tmp_path / "suites" / "curatedd.toml") in last and "missing key" in last
    # an unknown name is still answered with the names that exist
    assert main(["run", "-r", "bm25", "-s", "curatedx", "--results-dir", str(tmp_path / "r")]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_a_suite_left_out_for_its_corpus_and_a_broken_run_say_why(tmp_path, monkeypatch, capsys, fresh_registry):
    (tmp_path / "suites").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "suites" / "mine.toml").write_text(
        'name = "my-suite"\ndescription = "d"\nmatch = "string"\ncorpus = "nowhere"\nlicense = "l"\ncitation = "c"\n'
        '[[parts]]\nname = "p"\nurl = "file:///x.json"\npath = "m/x.json"\nformat = "json-list"\n'
    )
    (tmp_path / "runs" / "demo-runx.toml").write_text('name = "demo-runx"\nsuite = 3\n')
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    with pytest.raises(HarnessError, match=r"suite 'my-suite' is not available: .*mine.toml: 'corpus' names unknown corpus 'nowhere'"):
        harness.registry.suites().get("my-suite")
    with pytest.raises(HarnessError, match=r"published run 'demo-runx' is not available: .*demo-runx.toml"):
        harness.registry.registry("runs").get("demo-runx")
    capsys.readouterr()


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(doc), encoding="utf-8")


def test_one_configuration_in_two_files_is_one_row_the_newest_by_time(tmp_path, capsys):
    results = tmp_path / "results"
    older = make_result("r", ranks={"all": {"q": None}}, created="2026-01-02T00:00:00Z")
    newer = make_result("r", ranks={"all": {"q": 0}}, created="2026-01-03T20:00:00Z")
    _write(results / "a.json", newer)
    _write(results / "b.json", older)
    _write(results / "c.json", make_result("r", ranks={"all": {"q": None}}, created="2026-01-01T00:00:00Z"))
    markdown = render(read_results(results), output_dir=tmp_path, results_dir=results)
    (row,) = [r for r in cells(markdown) if r[-1].endswith(".json)")]
    assert row[2] == "100.00" and row[-1] == "[a.json](results/a.json)"
    assert ("the newest by its recorded time (`created`) is shown: a.json (2026-01-03T20:00:00Z) over 2 older "
            "files (2026-01-01T00:00:00Z, 2026-01-02T00:00:00Z)") in markdown
    # the command names the file left out, and a row superseded by a newer file is not a lost row
    output = tmp_path / "board.md"
    only_old = tmp_path / "old"
    _write(only_old / "a.json", older)
    assert main(["leaderboard", "--results-dir", str(only_old), "--output", str(output)]) == 0
    _write(only_old / "b.json", newer)
    capsys.readouterr()
    assert main(["leaderboard", "--results-dir", str(only_old), "--output", str(output)]) == 0
    err = capsys.readouterr().err
    assert f"{only_old / 'a.json'} is not shown: {only_old / 'b.json'} holds the same configuration" in err
    assert "[b.json]" in output.read_text() and "[a.json]" not in output.read_text()


def test_one_configuration_recorded_twice_at_once_is_refused_naming_both(tmp_path, capsys):
    results = tmp_path / "results"
    _write(results / "a.json", make_result("r", ranks={"all": {"q": None}}))
    _write(results / "b.json", make_result("r", ranks={"all": {"q": 0}}))
    with pytest.raises(HarnessError) as info:
        render(read_results(results), output_dir=tmp_path, results_dir=results)
    message = str(info.value)
    assert str(results / "a.json") in message and str(results / "b.json") in message and "\n" not in message
    assert main(["leaderboard", "--results-dir", str(results), "--output", str(tmp_path / "o.md")]) == 2
    assert "recorded at the same time" in capsys.readouterr().err
    # identical copies are one result
    _write(results / "b.json", make_result("r", ranks={"all": {"q": None}}))
    assert len([r for r in cells(render(read_results(results), output_dir=tmp_path, results_dir=results))]) == 1


def test_compare_by_name_takes_the_newest_by_time(tmp_path):
    from harness.analysis.compare import find_result

    results = tmp_path / "results"
    _write(results / "a.json", make_result("r", ranks={"all": {"q": None}}))
    _write(results / "b.json", make_result("r", ranks={"all": {"q": 0}}))
    with pytest.raises(HarnessError, match="recorded at the same time"):
        find_result("r", suite="s", results=read_results(results))
    _write(results / "a.json", make_result("r", ranks={"all": {"q": None}}, created="2026-01-02T00:00:00Z"))
    assert find_result("r", suite="s", results=read_results(results)).path.name == "a.json"


def test_a_result_without_a_seed_is_not_folded_into_seeds(tmp_path):
    docs = [make_result("t", params={"lr": 1, "seed": s}, created=f"2026-01-0{s}T00:00:00Z") for s in (1, 2)]
    docs.append(make_result("t", params={"lr": 1}))
    rows = {row[0]: row for row in cells(board(tmp_path, docs)) if row[-1].endswith(")")}
    assert sorted(rows) == ["t", "t (2 seeds)"]
    assert rows["t (2 seeds)"][1] == "lr=1" and rows["t"][1] == "lr=1"

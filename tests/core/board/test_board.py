"""The board layer (harness.board): build_board checks and writes a board, the templates escape
every value they write, the shipped style sheet and script are what the pages inline; and the
selection of results the board, compare and plot share (harness.results.selection)."""

from __future__ import annotations

import html
from importlib.resources import files

import pytest
from markupsafe import Markup

from harness.board import build_board
from harness.errors import HarnessError
from harness.results.report import markdown_text, one_line
from harness.results.schema import read_results, write_result
from harness.results.selection import latest, newest, question_set

from helpers.result_docs import make_result


def _results(folder, docs):
    return [write_result(doc, folder) for doc in docs]


def _docs():
    return [
        make_result("bm25", params={"k1": 0.9}),
        make_result("dense", params={"model": "m"}, ranks={"all": {"q1": 3, "q2": 0, "q3": 1, "q4": None}}),
    ]


def test_a_built_board_is_written_then_checks_clean(tmp_path):
    _results(tmp_path / "results", _docs())
    output = tmp_path / "board" / "README.md"
    board = build_board(tmp_path / "results", output, published=())
    with pytest.raises(HarnessError, match="no leaderboard to check"):
        board.check()
    board.write()
    assert output.read_text(encoding="utf-8") == board.markdown
    assert sorted(board.pages) == ["index.html", "s.html"]
    for name, page in board.pages.items():
        assert (tmp_path / "board" / "html" / name).read_text(encoding="utf-8") == page
    assert sorted(p.name for p in (tmp_path / "board" / "plots").iterdir() if p.suffix == ".svg") == sorted(f"{stem}.svg" for stem in board.plots)
    again = build_board(tmp_path / "results", output, published=())
    assert again.check() == [] and again.pages == board.pages and again.markdown == board.markdown


def test_check_names_the_first_thing_out_of_date(tmp_path):
    _results(tmp_path / "results", _docs())
    output = tmp_path / "README.md"
    build_board(tmp_path / "results", output, published=()).write()
    markdown = output.read_text(encoding="utf-8")
    output.write_text(markdown.replace("bm25", "bm26", 1), encoding="utf-8")
    (problem,) = build_board(tmp_path / "results", output, published=()).check()
    assert problem.startswith(f"{output} is out of date with {tmp_path / 'results'}")
    output.write_text(markdown, encoding="utf-8")
    page = tmp_path / "html" / "s.html"
    page.write_text(page.read_text(encoding="utf-8") + " ", encoding="utf-8")
    (problem,) = build_board(tmp_path / "results", output, published=()).check()
    assert problem.startswith(f"{tmp_path / 'html'} is out of date") and "s.html differs" in problem


def test_write_refuses_to_lose_rows_unless_forced(tmp_path):
    paths = _results(tmp_path / "results", _docs())
    output = tmp_path / "README.md"
    build_board(tmp_path / "results", output, published=()).write()
    before = output.read_text(encoding="utf-8")
    paths[1].unlink()
    board = build_board(tmp_path / "results", output, published=())
    assert board.lost_rows() == [markdown_text(paths[1].name)]
    with pytest.raises(HarnessError, match="would lose 1 row"):
        board.write()
    assert output.read_text(encoding="utf-8") == before
    board.write(force=True)
    assert paths[1].name not in output.read_text(encoding="utf-8")


def test_a_missing_results_folder_is_one_error(tmp_path):
    with pytest.raises(HarnessError, match="no such folder"):
        build_board(tmp_path / "nothing", tmp_path / "README.md", published=())


def test_pages_inline_the_shipped_style_sheet_and_script(tmp_path):
    """The assets are plain files of the package (no template syntax), inlined byte for byte."""
    assets = files("harness.board") / "assets"
    css = (assets / "board.css").read_bytes().decode("utf-8")
    js = (assets / "board.js").read_bytes().decode("utf-8")
    assert css.endswith("}\n") and js.endswith("})();\n")
    assert not any(mark in text for text in (css, js) for mark in ("{{", "{%", "{#"))
    _results(tmp_path / "results", _docs())
    board = build_board(tmp_path / "results", tmp_path / "README.md", published=())
    board.write()
    for name, page in board.pages.items():
        assert page.count(f"<style>\n{css}</style>") == 1, name
        assert page.count(f"<script>\n{js}</script>") == 1, name


@pytest.mark.parametrize("text", ['<a href="x">', "it's & <b>", "line\nbreak\u2028", "plain", 7])
def test_the_html_templates_escape_every_value(text):
    from harness.board.html import _environment

    env = _environment()
    assert env.autoescape is True
    assert env.from_string("{{ x }}|<i title=\"{{ x }}\">").render(x=text) == (
        f'{html.escape(one_line(text), quote=True)}|<i title="{html.escape(one_line(text), quote=True)}">'
    )
    assert env.from_string("{{ x }}").render(x=Markup("<b>made by the page</b>")) == "<b>made by the page</b>"


@pytest.mark.parametrize("text", ["| a | b |", "# heading", "[x](javascript:alert(1))", "<b>", "1. item", "`code`"])
def test_the_markdown_template_escapes_every_value(text):
    from harness.board.markdown import Markdown, _environment

    env = _environment()
    assert env.from_string("{{ x }}").render(x=text) == markdown_text(text)
    assert env.from_string("{{ x }}").render(x=Markdown(text)) == text


def test_selection_keeps_the_newest_result_of_each_configuration_and_question_set(tmp_path):
    old = make_result("bm25", created="2026-01-01T00:00:00Z")
    new = make_result("bm25", created="2026-02-01T00:00:00Z", ranks={"all": {"q1": 0, "q2": 0, "q3": None, "q4": 30}})
    other_set = make_result("bm25", created="2025-01-01T00:00:00Z")
    other_set["suite"]["questions_fingerprint"] = "sha256:other"
    # one configuration: one file name, so each in a folder of its own
    paths = [write_result(doc, tmp_path / name) for doc, name in ((old, "old"), (new, "new"), (other_set, "other"))]
    results = [r for name in ("old", "new", "other") for r in read_results(tmp_path / name)]
    chosen, superseded = newest(results)
    assert sorted(r.path for r in chosen) == sorted([paths[1], paths[2]])
    assert [(a.path, b.path) for a, b in superseded] == [(paths[0], paths[1])]
    assert latest(results) == chosen
    assert [question_set(r) for r in results] == ["sha256:x", "sha256:x", "sha256:other"]


def test_selection_refuses_two_different_results_recorded_at_one_time(tmp_path):
    a = make_result("bm25")
    b = make_result("bm25", ranks={"all": {"q1": 1, "q2": 4, "q3": None, "q4": 30}})
    write_result(a, tmp_path / "a")
    write_result(b, tmp_path / "b")
    results = read_results(tmp_path / "a") + read_results(tmp_path / "b")
    with pytest.raises(HarnessError, match="recorded at the same time"):
        newest(results)

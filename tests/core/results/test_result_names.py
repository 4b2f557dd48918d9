"""Result file names: one file per suite and configuration however the names are spelled, short
enough for any file system however long the names, and a result that cannot be written is one
line naming its path."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from harness.cli.main import main
from harness.errors import HarnessError
from harness.results.schema import dumps, read_result, read_results, result_filename, write_result

from helpers.result_docs import make_result


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """A TREC run of the demo suite: passage 1 for every question."""
    from harness import registry

    suite = registry.registry("suites").get("demo").load()
    run = tmp_path_factory.mktemp("run") / "one.trec"
    run.write_text("".join(f"{q.id} Q0 1 1 1.0 one\n" for q in suite.questions))
    return run


def test_a_300_character_name_is_written_and_read_back(demo_run, tmp_path, capsys, test_registries):
    name = "a name given at length " * 13 + "!"
    assert len(name) == 300
    code = main(["score", "--suite", "demo", "--run", str(demo_run), "--name", name, "--no-progress",
                 "--results-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (path,) = tmp_path.glob("*.json")
    assert len(path.name) < 150 and f"result written to {path}" in captured.out
    result = read_result(path)  # its name is harness's own for this configuration
    assert result.retriever == name


def test_suites_whose_names_share_a_slug_get_files_of_their_own(tmp_path):
    for suite in ("col x", "col_x", "col/x", "Col_x"):
        write_result(make_result(suite=suite), tmp_path)
    assert sorted(r.suite for r in read_results(tmp_path)) == ["Col_x", "col x", "col/x", "col_x"]
    names = [p.name for p in tmp_path.glob("*.json")]
    assert len({n.lower() for n in names}) == 4
    # a suite whose name is a safe file name keeps the name it had: the committed results' names hold
    assert result_filename("demo", "bm25", {"a": 1}).startswith("demo--bm25--")
    digest = hashlib.sha256(b"col x").hexdigest()[:8]
    assert f"col_x-{digest}--r--" in " ".join(names)


def test_a_file_under_the_former_name_is_still_read_and_not_overwritten_by_another_suite(tmp_path):
    doc = make_result(suite="col x")
    former = tmp_path / ("col_x--r--" + result_filename("col x", "r", {"a": 1}).rsplit("--", 1)[1])
    former.write_text(dumps(doc))
    (result,) = read_results(tmp_path)
    assert result.suite == "col x"
    # the suite "col_x" is named so now: its result refuses to replace the other suite's file
    with pytest.raises(HarnessError, match="holds a result of suite 'col x'"):
        write_result(make_result(suite="col_x"), tmp_path)
    assert json.loads(former.read_text())["suite"]["name"] == "col x"


@pytest.mark.parametrize("retriever, suite", [("r" * 300, "s"), ("r", "s" * 300), ("ü" * 300, "日本" * 150)])
def test_long_names_give_short_file_names(tmp_path, retriever, suite):
    path = write_result(make_result(retriever=retriever, suite=suite), tmp_path)
    assert len(path.name.encode()) <= 200
    assert read_result(path).retriever == retriever


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_result_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(HarnessError, match=f"^{tmp_path}/s--r--[0-9a-f]{{8}}\\.json: cannot write the result"):
            write_result(make_result(), tmp_path)
    finally:
        tmp_path.chmod(0o700)


def test_a_folder_where_the_result_goes_is_one_line(tmp_path):
    (tmp_path / result_filename("s", "r", {"a": 1})).mkdir()
    with pytest.raises(HarnessError, match="cannot write the result"):
        write_result(make_result(), tmp_path)

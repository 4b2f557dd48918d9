"""Other tools' run files as the tools themselves write them (``tests/data/tool_runs/``, written
by Tevatron, ranx, FlashRAG and Rankify through ``scripts/make_tool_runs.py``; where a tool is
installed, a file it writes during the test as well): each scores question by question like the
same ranking as a TREC run, its ``has_answer`` flags are ignored, and a corrupted field is one line
naming file and line."""

from __future__ import annotations

import json

import pytest

from harness.errors import InputFileError
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import detect_format, read_run
from helpers.tool_runs import score_cli, scored_doc, flat_ranks
from helpers.paths import REPO, TESTS


# ---- files written by the tools' own code -----------------------------------------------------
#
# tests/data/tool_runs/ holds one ranking of 12 demo questions written by Tevatron, ranx, FlashRAG
# and Rankify themselves (scripts/make_tool_runs.py; PROVENANCE.json names tool, version and
# writer), beside the same ranking as a TREC run. Every has_answer flag in them is true.

TOOL_RUNS = TESTS / "data" / "tool_runs"
MAKE_TOOL_RUNS = REPO / "scripts" / "make_tool_runs.py"

#: (file, the format it is read as, the TREC run of the same ranking)
TOOL_FILES = [
    ("tevatron.rank.txt", "tevatron", "ranking.trec"),
    ("ranx.run.json", "ranx", "ranking.trec"),
    ("ranx.run.trec", "trec", "ranking.trec"),
    ("flashrag.intermediate_data.json", "flashrag", "ranking.trec"),
    ("rankify.dataset.json", "rankify-dataset", "ranking.trec"),
    ("rankify.dataset.json", "rankify-reranked", "reranked.trec"),
    ("rankify.documents.jsonl", "rankify-dataset", "ranking.trec"),
]
#: The versions that wrote them (PyPI distributions).
TOOL_VERSIONS = {"tevatron": ("tevatron", "0.1.0"), "ranx": ("ranx", "0.3.21"), "flashrag": ("flashrag-dev", "0.1.2"),
                 "rankify": ("rankify", "0.1.4")}
#: The first-hit ranks of ranking.trec and reranked.trec on the 12 questions, in file order.
FIXED_RANKS = [0, 2, None, 1, 5, 0, 4, None, 3, 5, 2, 1]
RERANKED_RANKS = [5, 3, None, 4, 0, 5, 1, None, 2, 0, 3, 4]


def _flat(result: dict) -> dict:
    return {qid: rank for part in result["first_hit_ranks"].values() for qid, rank in part.items()}


@pytest.fixture(scope="module")
def demo_suite():
    from harness import registry

    return registry.suites().get("demo").load()


@pytest.fixture(scope="module")
def provenance() -> dict:
    return json.loads((TOOL_RUNS / "PROVENANCE.json").read_text())


@pytest.fixture(scope="module")
def trec_results() -> dict:
    """``{TREC file: result}`` of the committed TREC runs, scored as ``harness score`` scores them."""
    from harness.runfiles.score import score_file

    return {name: score_file("demo", TOOL_RUNS / name, show_progress=False) for name in ("ranking.trec", "reranked.trec")}


def test_tool_runs_provenance_names_every_file_and_format(provenance):
    listed = [(e["file"], e["format"], e["ranking"]) for e in provenance["files"]]
    assert listed == TOOL_FILES
    other_formats = ("tevatron", "ranx", "flashrag", "rankify-dataset", "rankify-reranked")
    assert set(other_formats) <= {fmt for _file, fmt, _trec in TOOL_FILES}
    for entry in provenance["files"]:
        assert (entry["distribution"], entry["version"]) == TOOL_VERSIONS[entry["tool"]], entry
        assert entry["writer"].startswith(entry["tool"] + "."), entry
        assert (TOOL_RUNS / entry["file"]).stat().st_size < 64_000
    assert provenance["suite"] == "demo" and len(provenance["questions"]) == 12


def test_the_trec_runs_have_the_first_hits_they_were_made_with(provenance, trec_results):
    qids = provenance["questions"]
    assert [_flat(trec_results["ranking.trec"])[q] for q in qids] == FIXED_RANKS
    assert [_flat(trec_results["reranked.trec"])[q] for q in qids] == RERANKED_RANKS
    others = {q: r for q, r in _flat(trec_results["ranking.trec"]).items() if q not in qids}
    assert len(others) == 1008 - 12 and set(others.values()) == {None}


def _same_ranks(found: dict, expected: dict, label: str) -> None:
    assert found.keys() == expected.keys()
    differ = {q: (found[q], expected[q]) for q in expected if found[q] != expected[q]}
    assert not differ, f"{label}: first-hit ranks differ from the TREC run (file, trec): {differ}"


@pytest.mark.parametrize("file_name, fmt, trec", TOOL_FILES, ids=[f"{f}-{fmt}" for f, fmt, _t in TOOL_FILES])
def test_tool_written_file_scores_like_its_trec_run(demo_suite, trec_results, file_name, fmt, trec):
    from harness.runfiles.score import score_file

    path = TOOL_RUNS / file_name
    expected = trec_results[trec]
    assert detect_format(path) == ("rankify-dataset" if fmt == "rankify-reranked" else fmt)
    result = score_file("demo", path, format=fmt, show_progress=False)
    assert result["retriever"]["parameters"]["format"] == fmt
    _same_ranks(_flat(result), _flat(expected), f"{file_name} as {fmt}")
    assert result["metrics"] == expected["metrics"] and result["depth"] == expected["depth"] == 6
    if fmt != "rankify-reranked":  # the format detected
        _same_ranks(_flat(score_file("demo", path, show_progress=False)), _flat(expected), f"{file_name} detected")
    # read whole (what --rerank reads), then scored
    ranks = score_run(demo_suite, read_run(path, demo_suite, format=fmt))
    assert ranks == expected["first_hit_ranks"]


@pytest.mark.parametrize("file_name, fmt, trec", TOOL_FILES, ids=[f"{f}-{fmt}" for f, fmt, _t in TOOL_FILES])
def test_tool_written_file_through_the_cli(capsys, tmp_path, file_name, fmt, trec):
    extra = ("--format", fmt) if fmt == "rankify-reranked" else ()
    found = scored_doc(capsys, tmp_path, TOOL_RUNS / file_name, *extra)
    expected = scored_doc(capsys, tmp_path, TOOL_RUNS / trec)
    assert found["retriever"]["parameters"]["format"] == fmt
    _same_ranks(_flat(found), _flat(expected), file_name)
    assert found["metrics"] == expected["metrics"]


@pytest.mark.parametrize("file_name, fmt", [("rankify.dataset.json", "rankify-dataset"), ("rankify.dataset.json", "rankify-reranked"),
                                            ("rankify.documents.jsonl", "rankify-dataset")])
def test_has_answer_flags_of_tool_written_files_are_ignored(demo_suite, provenance, file_name, fmt):
    path = TOOL_RUNS / file_name
    text = path.read_text()
    assert text.count('"has_answer": true') >= 12 * 6 and '"has_answer": false' not in text
    run = read_run(path, demo_suite, format=fmt)
    qids = provenance["questions"]
    assert all(hit.has_answer is True for q in qids for hit in run.rankings[q])  # carried, not believed
    ranks = flat_ranks(demo_suite, run)
    assert [ranks[q] for q in qids] == (RERANKED_RANKS if fmt == "rankify-reranked" else FIXED_RANKS)


def _item_line(text: str, index: int, indent: str = "    {") -> int:
    """The line the ``index``-th item of an indented JSON list starts on."""
    starts = [n for n, line in enumerate(text.splitlines(), start=1) if line == indent]
    return starts[index]


def _corrupt_tevatron(text):
    lines = text.splitlines(keepends=True)
    qid, pid, _score = lines[7].split("\t")
    lines[7] = f"{qid}\t{pid}\t8x\n"
    return "".join(lines), 8, "score must be a finite number, got '8x'"


def _corrupt_ranx(text):
    data = json.loads(text)
    qid = list(data)[1]
    pid = list(data[qid])[2]
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if row == f'  "{qid}": {{')
    data[qid][pid] = str(data[qid][pid])
    corrupted = json.dumps(data, indent=2)
    return corrupted, line, f"question {qid!r}: document {pid!r}: score must be a number, got {data[qid][pid]!r}"


def _corrupt_flashrag(text):
    data = json.loads(text)
    assert json.dumps(data, indent=4) == text  # FlashRAG's json.dump(..., indent=4)
    doc = data[3]["output"]["retrieval_result"][2]
    doc["docid"] = doc.pop("id")
    return json.dumps(data, indent=4), _item_line(text, 3), "item 3: output.retrieval_result[2]: missing 'id'"


def _corrupt_rankify_flag(text):
    data = json.loads(text)
    assert json.dumps(data, indent=4) == text  # Rankify's json.dump(..., indent=4)
    data[5]["ctxs"][2]["has_answer"] = "yes"
    return json.dumps(data, indent=4), _item_line(text, 5), "item 5: ctxs[2]: 'has_answer' must be true or false, got 'yes'"


def _corrupt_rankify_reranked(text):
    data = json.loads(text)
    del data[7]["reranked_ctxs"]
    return json.dumps(data, indent=4), _item_line(text, 7), "item 7: missing 'reranked_ctxs'"


def _corrupt_rankify_jsonl(text):
    lines = text.splitlines(keepends=True)
    item = json.loads(lines[3])
    assert json.dumps(item) + "\n" == lines[3]  # Rankify's json.dumps(entry) + "\n"
    item["ctxs"][1]["id"] = 2.5
    lines[3] = json.dumps(item) + "\n"
    return "".join(lines), 4, "item 3: ctxs[1]: passage id must be a string or integer, got float"


CORRUPTED = [
    ("tevatron.rank.txt", "tevatron", _corrupt_tevatron),
    ("ranx.run.json", "ranx", _corrupt_ranx),
    ("flashrag.intermediate_data.json", "flashrag", _corrupt_flashrag),
    ("rankify.dataset.json", "rankify-dataset", _corrupt_rankify_flag),
    ("rankify.dataset.json", "rankify-reranked", _corrupt_rankify_reranked),
    ("rankify.documents.jsonl", "rankify-dataset", _corrupt_rankify_jsonl),
]


@pytest.mark.parametrize("file_name, fmt, corrupt", CORRUPTED, ids=[f"{f}-{fmt}" for f, fmt, _c in CORRUPTED])
def test_a_corrupted_field_of_a_tool_written_file_is_one_line_naming_file_and_line(capsys, tmp_path, file_name, fmt, corrupt):
    from harness.runfiles.score import score_file

    text, line, problem = corrupt((TOOL_RUNS / file_name).read_text())
    path = tmp_path / file_name
    path.write_text(text)
    with pytest.raises(InputFileError) as exc:
        score_file("demo", path, format=fmt, show_progress=False)
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"{path}:{line}: ") and problem in message, message
    extra = ("--format", fmt) if fmt == "rankify-reranked" else ()  # else detected
    code, _out, err = score_cli(capsys, "score", "-s", "demo", "--run", str(path), "--results-dir", str(tmp_path / "r"),
                           "--no-progress", *extra)
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{path}:{line}: " in err and problem in err, err
    assert not (tmp_path / "r").exists()


def _make_tool_runs():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("make_tool_runs", MAKE_TOOL_RUNS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


#: The module each tool's writer imports.
TOOL_MODULES = {"tevatron": "tevatron.faiss_retriever.__main__", "ranx": "ranx", "flashrag": "flashrag.dataset.dataset",
                "rankify": "rankify.dataset.dataset"}


@pytest.mark.parametrize("tool", list(TOOL_MODULES))
def test_a_file_written_now_by_the_installed_tool_scores_like_the_trec_run(tmp_path, tool_home, demo_suite, trec_results, tool):
    from importlib.metadata import version

    from harness.runfiles.score import score_file

    pytest.importorskip(TOOL_MODULES[tool])
    script = _make_tool_runs()
    fixed = script.Fixed.from_trec(demo_suite, TOOL_RUNS / "ranking.trec")
    out = tmp_path / "out"
    out.mkdir()
    records = script.WRITERS[tool](out, fixed)
    assert [(r["file"], r["format"], r["ranking"]) for r in records] == [t for t in TOOL_FILES if t[0].startswith(tool + ".")]
    for record in records:
        path = out / record["file"]
        assert detect_format(path) == ("rankify-dataset" if record["format"] == "rankify-reranked" else record["format"])
        result = score_file("demo", path, format=record["format"], show_progress=False)
        _same_ranks(_flat(result), _flat(trec_results[record["ranking"]]), f"{record['file']} written by {tool} {record['version']}")
        if version(TOOL_VERSIONS[tool][0]) == TOOL_VERSIONS[tool][1]:  # the version that wrote the committed file
            assert path.read_bytes() == (TOOL_RUNS / record["file"]).read_bytes()

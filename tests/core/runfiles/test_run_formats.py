"""Run formats as an extension point: the core's formats are registered through
``register_run_formats`` like a plugin's, every name and alias is written once (in its format's
module), one function picks the reading strategy, and an in-process plugin's format is detected,
read and scored by the same code as the core's."""

from __future__ import annotations

import gzip
import importlib
import types

import pytest

from harness import hookimpl, registry
from harness.api import InMemoryCorpus, Part, Passage, Question, RunEntry, RunFormatSpec, Suite
from harness.errors import HarnessError, InputFileError
from harness.plugins import CORE_PLUGIN, new_plugin_manager, register_plugin
from harness.runfiles.formats import CORE_FORMATS
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import read_run
from harness.runfiles.registered import detect_format, format_names, run_format, spellings
from harness.runfiles.strategy import reading_strategy


def _suite() -> Suite:
    passages = [Passage(id=str(i), title=f"t{i}", text=f"passage {i} says answer{i}") for i in range(6)]
    questions = tuple(Question(id=f"q{i}", text=f"question {i}?", answers=(f"answer{i}",)) for i in range(3))
    return Suite(name="tiny", description="", parts=(Part(name="all", questions=questions),),
                 corpus=InMemoryCorpus("tiny-corpus", passages), synthetic=True)


def test_the_core_registers_each_format_module_once_under_its_own_name():
    manager = new_plugin_manager()
    found = registry.Registry.collect(manager, "run-formats")
    specs = [importlib.import_module(f"harness.runfiles.formats.{module}").SPEC for module in CORE_FORMATS]
    assert sorted(found.names()) == sorted(spec.name for spec in specs)
    assert {entry.plugin for entry in found.entries()} == {CORE_PLUGIN}
    # a module's file name is its format's name (underscores for dashes)
    assert [spec.name.replace("-", "_") for spec in specs] == list(CORE_FORMATS)
    spelled = [alias for spec in specs for alias in (spec.name, *spec.aliases)]
    assert len(spelled) == len(set(spelled))
    assert spellings() == {alias: spec.name for spec in specs for alias in (spec.name, *spec.aliases)}
    assert run_format("dpr").name == "dpr-json" and run_format("pyserini").name == "pyserini-json"


def test_an_unknown_format_name_is_one_line_naming_the_known_ones():
    with pytest.raises(HarnessError) as error:
        run_format("trek")
    assert str(error.value).startswith("unknown run format 'trek'; known: ")
    assert "trec" in str(error.value) and "\n" not in str(error.value)


def test_a_spec_with_an_unknown_match_is_refused():
    with pytest.raises(ValueError, match="match must be one of"):
        RunFormatSpec(name="x", description="x", entries=lambda body, name, chunk: iter(()), match="position")


def test_one_function_picks_the_strategy(tmp_path):
    path = tmp_path / "run"
    plugin = RunFormatSpec(name="x", description="x", entries=lambda body, name, chunk: iter(()))
    assert reading_strategy(plugin, path, None) == "stream"
    assert reading_strategy(plugin, path, "gzip", scoring=True) == "stream"
    dpr = run_format("dpr-json")
    assert reading_strategy(dpr, path, None) == "whole"
    assert reading_strategy(dpr, path, None, scoring=True) == "split"
    assert reading_strategy(dpr, path, "tar.gz", scoring=True) == "stream"
    trec = run_format("trec")
    assert reading_strategy(trec, path, None, scoring=True) == "whole"
    with pytest.raises(InputFileError) as error:
        reading_strategy(trec, path, "gzip")
    assert str(error.value) == f"{path}: a compressed trec run is not supported: decompress it first"


def _pipe_entries(body, name, chunk):
    """``qid|docid|score`` lines, a question's lines together, best first."""
    current, first, ids, scores = None, 0, [], []
    for line_no, raw in enumerate(body.read().decode("utf-8").splitlines(), start=1):
        fields = raw.split("|")
        if len(fields) != 3:
            raise InputFileError(name, f"expected qid|docid|score, got {raw!r}", line=line_no)
        qid, docid, score = fields
        if qid != current:
            if current is not None:
                yield RunEntry(qid=current, question=None, answers=None, ids=ids, scores=scores, texts=[None] * len(ids),
                               titles=[None] * len(ids), flags=[None] * len(ids), line=first, where=f"question {current!r}: ")
            current, first, ids, scores = qid, line_no, [], []
        ids.append(docid)
        scores.append(float(score))
    if current is not None:
        yield RunEntry(qid=current, question=None, answers=None, ids=ids, scores=scores, texts=[None] * len(ids),
                       titles=[None] * len(ids), flags=[None] * len(ids), line=first, where=f"question {current!r}: ")


@pytest.fixture
def pipe_format(monkeypatch):
    """The core's formats and a plugin's ``pipe`` format, as the registry gives them."""
    module = types.ModuleType("pipe_format")

    @hookimpl
    def register_run_formats(register):
        register(RunFormatSpec(name="pipe", aliases=("psv",), description="qid|docid|score", entries=_pipe_entries,
                               sniff=lambda head, reopen: head.split("\n", 1)[0].count("|") == 2))

    module.register_run_formats = register_run_formats
    manager = new_plugin_manager()
    register_plugin(manager, module, "pipe-plugin")
    monkeypatch.setitem(registry._cache, "run-formats", registry.Registry.collect(manager, "run-formats"))
    return module


def test_a_plugin_format_is_detected_read_and_scored_like_the_same_run_in_trec(tmp_path, pipe_format):
    suite = _suite()
    lines = [("q0", "3", 2.0), ("q0", "0", 1.0), ("q1", "4", 3.0), ("q1", "1", 2.5), ("q2", "5", 1.0)]
    pipe = tmp_path / "run.psv"
    pipe.write_text("".join(f"{q}|{d}|{s}\n" for q, d, s in lines), encoding="utf-8")
    trec = tmp_path / "run.trec"
    trec.write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(lines)), encoding="utf-8")
    assert "pipe" in format_names() and spellings()["psv"] == "pipe"
    assert detect_format(pipe) == "pipe" and detect_format(trec) == "trec"
    run = read_run(pipe, suite)
    assert run.format == "pipe"
    assert {q: [h.passage_id for h in hits] for q, hits in run.rankings.items()} == {"q0": ["3", "0"], "q1": ["4", "1"], "q2": ["5"]}
    expected = score_run(suite, read_run(trec, suite))
    assert expected == {"all": {"q0": 1, "q1": 1, "q2": None}}  # answer{i} is in passage i only
    assert score_run(suite, run) == expected
    packed = tmp_path / "run.psv.gz"
    packed.write_bytes(gzip.compress(pipe.read_bytes()))
    assert score_run(suite, read_run(packed, suite, format="psv")) == expected
    pipe.write_text("q0|3|2.0\nq0|3\n", encoding="utf-8")
    with pytest.raises(InputFileError) as error:
        read_run(pipe, suite)
    assert str(error.value) == f"{pipe}:2: expected qid|docid|score, got 'q0|3'"

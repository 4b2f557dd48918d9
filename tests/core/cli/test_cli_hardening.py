"""Hostile inputs, kills and faults, one class of defect per section: each test would have caught
the defect it names, and checks the one mechanism that now covers the whole class."""

from __future__ import annotations

import os

import numpy as np
import pytest

from harness.api import InMemoryCorpus, Passage, RunContext
from harness.cli.main import main
from harness.errors import HarnessError, InputFileError
from harness.testing import toy_suite
from helpers.cli_errors import one_line_error, run_cli
from helpers.result_docs import make_result

# --- 2. one line, not a traceback -------------------------------------------------------------


def _deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


def test_deeply_nested_inputs_are_one_line_errors(capsys, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text(_deep_json())
    from harness.data.questions import read_questions

    with pytest.raises(InputFileError, match="deep.json.*nested too deeply"):
        read_questions(deep, "json-list")
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    (results_dir / "deep.json").write_text(_deep_json())
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(tmp_path / "o.md"))
    one_line_error(code, err, "deep.json", "nested too deeply")
    run = tmp_path / "run.json"
    run.write_text(_deep_json())
    code, _, err = run_cli(capsys, "score", "--suite", "demo", "--run", str(run), "--format", "dpr", "--results-dir", str(tmp_path / "r"))
    one_line_error(code, err, "run.json", "nested too deeply")
    code, _, err = run_cli(capsys, "run", "-r", "bm25", "-s", "demo", "-o", "k1=" + _deep_json(5000))
    one_line_error(code, err)


def test_a_deeply_nested_spec_is_one_line(tmp_path, monkeypatch):
    from harness.data.catalog import read_suite_spec

    spec = tmp_path / "deep.toml"
    spec.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(InputFileError, match="deep.toml"):
        read_suite_spec(spec)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["-o", "k1=NaN"], "not a finite number"),
        (["-o", "k1=Infinity"], "not a finite number"),
        (["-o", "k1=1e999"], "not a finite number"),
        (["-o", "k1=1", "-o", "k1=2"], "given twice"),
        (["--k", "99999999999999999999"], "deeper than harness retrieves"),
        (["--k", "１２"], "not a positive integer"),
        (["--k", "٣"], "not a positive integer"),
        (["-o", "k1=nan"], "retriever 'bm25': option k1 must be a number >= 0, got 'nan'"),
    ],
)
def test_unusable_option_values_are_one_line_errors(capsys, argv, fragment):
    code, _, err = run_cli(capsys, "run", "-r", "bm25", "-s", "demo", *argv)
    one_line_error(code, err, fragment)


def test_hybrid_depth_is_bounded(capsys):
    code, _, err = run_cli(capsys, "run", "-r", "rrf:bm25+minilm", "-s", "demo", "-o", "depth=100000000")
    one_line_error(code, err, "depth must be an integer from 1 to 10000")


def test_a_spec_that_is_not_utf8_or_has_dot_segments(tmp_path):
    from harness.data.catalog import read_suite_spec

    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'name = "x"\ndescription = "caf\xe9"\n')
    with pytest.raises(InputFileError, match=r"latin.toml:2: not UTF-8"):
        read_suite_spec(latin)
    good = (
        'name = "x"\ndescription = "d"\nmatch = "string"\ncorpus = "c"\nlicense = "l"\ncitation = "c"\n'
        '[[parts]]\nname = "p"\nurl = "https://example.org/q.tsv"\npath = "PATH"\nformat = "dpr-tsv"\n'
    )
    for path in ("a/./q.tsv", "./q.tsv", "a//q.tsv", "a\\\\q.tsv", "a/../q.tsv"):
        spec = tmp_path / "dots.toml"
        spec.write_text(good.replace("PATH", path))
        with pytest.raises(InputFileError, match="'path' must be a relative path"):
            read_suite_spec(spec)


def test_a_bug_is_one_line_unless_debugging(capsys, monkeypatch):
    from harness.cli import listing

    monkeypatch.setattr(listing, "registry", lambda kind: 1 / 0)
    code, _, err = run_cli(capsys, "list", "suites")
    one_line_error(code, err, "internal error: ZeroDivisionError", status=1)
    monkeypatch.setenv("HARNESS_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["list", "suites"])


def test_eof_is_not_reported_as_an_interrupt(capsys, monkeypatch):
    from harness.cli import listing

    def eof(kind):
        raise EOFError("Ran out of input")

    monkeypatch.setattr(listing, "registry", eof)
    code, _, err = run_cli(capsys, "list", "suites")
    one_line_error(code, err, "unexpected end of input")


# --- 3. no work lost at the last step ---------------------------------------------------------


def test_an_unusable_results_dir_fails_before_any_work(capsys, tmp_path, test_registries, monkeypatch):
    import helpers.fake_retrievers as fake_retrievers
    indexed = []
    monkeypatch.setattr(fake_retrievers.OverlapRetriever, "index", lambda self, c, ctx: indexed.append(1))
    (tmp_path / "file").write_text("")
    code, _, err = run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--results-dir", str(tmp_path / "file" / "r"))
    one_line_error(code, err, "--results-dir", "is not a directory")
    code, _, err = run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--results-dir", str(tmp_path / "file"))
    one_line_error(code, err, "--results-dir", "is a file")
    assert indexed == []


def test_the_table_is_printed_even_when_the_result_cannot_be_written(capsys, tmp_path, test_registries):
    results = tmp_path / "r"
    assert run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--no-progress", "--results-dir", str(results))[0] == 0
    code, out, err = run_cli(capsys, "run", "-r", "test-overlap", "-s", "demo", "--k", "1", "--no-progress",
                             "--results-dir", str(results))
    assert "macro average (24 parts)" in out  # the work is shown ...
    one_line_error(code, err, "not replacing it")  # ... and why it was not recorded


# --- 4 and 5. caches that heal; nothing left behind --------------------------------------------


def _toy_corpus():
    return toy_suite().corpus


@pytest.mark.slow
def test_a_damaged_bm25_index_is_named_and_rebuilt(tmp_path, capsys):
    from harness_builtins.bm25.retriever import BM25Retriever

    corpus, context = _toy_corpus(), RunContext(cache_dir=tmp_path, threads=1, progress=False)
    first = BM25Retriever()
    first.index(corpus, context)
    before = first.search(["yellow fruit"], 3, context)
    (index_dir,) = (tmp_path / "bm25").iterdir()
    segment = max((p for p in (index_dir / "lucene").iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
    segment.write_bytes(segment.read_bytes()[:10])  # truncated
    again = BM25Retriever()
    again.index(corpus, context)
    assert "is damaged" in capsys.readouterr().err
    assert again.search(["yellow fruit"], 3, context) == before


def test_a_damaged_embedding_shard_is_named_and_reencoded(tmp_path, capsys):
    from harness_builtins.dense.embeddings import embed_corpus, shard_name
    from helpers.dense_fakes import HashEncoder, passages

    corpus = InMemoryCorpus("c", [Passage(id=i, title=t, text=x) for i, t, x in passages(10)])
    cache = embed_corpus(HashEncoder(), corpus, tmp_path, shard_size=4, progress=False)
    expected = cache.all_vectors()
    shard = cache.path / shard_name("emb", 1)
    shard.write_bytes(shard.read_bytes()[:100])
    (cache.path / shard_name("ids", 2)).write_bytes(b"")
    encoder = HashEncoder()
    healed = embed_corpus(encoder, corpus, tmp_path, shard_size=4, progress=False)
    assert "is damaged (shard 1, 2)" in capsys.readouterr().err
    assert np.array_equal(healed.all_vectors(), expected)
    assert sum(len(c) for c in encoder.calls) == 6  # only the damaged shards (4 + 2 passages)


def test_a_damaged_corpus_store_is_named_and_rebuilt(tmp_path):
    from harness.data.corpus_store import CorpusStore, build_store, open_or_build

    source = tmp_path / "c.tsv"
    source.write_text("id\ttext\ttitle\n" + "".join(f"{i}\tpassage {i}\tT{i}\n" for i in range(1, 50)))
    store = build_store(source, tmp_path / "store", name="c", progress=False)
    arrow = store.path / "passages.arrow"
    del store
    arrow.write_bytes(arrow.read_bytes()[:200])
    with pytest.raises(HarnessError, match="damaged.*passages.arrow has 200 bytes"):
        CorpusStore.open(tmp_path / "store")
    healed = open_or_build(source, tmp_path / "store", name="c", progress=False)
    assert len(healed) == 49 and healed.get("7").text == "passage 7"


def test_an_interrupted_build_leaves_nothing_and_a_killed_one_is_cleaned(tmp_path):
    from harness.util.atomic import atomic_dir, remove_stale

    target = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(target) as tmp:
            (tmp / "half").write_text("x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    # what a process killed with -9 left: a temporary of a pid that no longer exists
    dead = 2**22 + 12345
    leftover = tmp_path / f".index.{dead}.0badf00d.tmp"
    leftover.mkdir()
    (leftover / "segment").write_text("x")
    mine = tmp_path / f".index.{os.getpid()}.0badf00d.tmp"
    mine.mkdir()
    assert remove_stale(tmp_path) == [leftover]
    with atomic_dir(target) as tmp:
        (tmp / "done").write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == [mine.name, "index"]


def test_a_corpus_store_build_interrupted_leaves_nothing(tmp_path, monkeypatch):
    from harness.data import corpus_store

    source = tmp_path / "c.tsv"
    source.write_text("id\ttext\ttitle\n" + "".join(f"{i}\tpassage {i}\tT{i}\n" for i in range(1, 50)))

    def interrupted(*args, **kwargs):
        yield 2, "1", "T", "x"
        raise KeyboardInterrupt

    monkeypatch.setattr(corpus_store, "source_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        corpus_store.build_store(source, tmp_path / "store", name="c", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tsv"]


def test_ctrl_c_prints_interrupted(capsys, monkeypatch):
    from harness.cli import listing

    def interrupt(kind):
        raise KeyboardInterrupt

    monkeypatch.setattr(listing, "registry", interrupt)
    code, _, err = run_cli(capsys, "list", "suites")
    assert code == 130 and err.strip() == "harness: interrupted"


def test_a_report_says_when_the_corpus_was_not_opened():
    from harness.results.report import format_result_table

    result = make_result()
    result["metrics"] = {"accuracy": {"macro": {"1": 0.25}, "parts": {"all": {"1": 0.25}}}}
    result["suite"]["corpus"] = {"name": "wikipedia-dpr-100w", "passages": None, "fingerprint": None}
    header = format_result_table(result).splitlines()[0]
    assert "corpus not opened (wikipedia-dpr-100w)" in header and "None" not in header


def test_the_jvm_leaves_ctrl_c_to_python():
    """Without -Xrs the JVM's own SIGINT handler ends the process silently mid-build."""
    import jnius_config

    from harness_builtins.bm25.java import start_jvm

    start_jvm()
    assert "-Xrs" in jnius_config.get_options()


def test_a_bare_harness_shows_its_help_and_a_closed_pipe_ends_quietly(capsys, monkeypatch):
    code, out, err = run_cli(capsys)
    assert code == 0 and out.startswith("Usage: harness") and err == ""

    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    from harness.cli import listing

    monkeypatch.setattr(listing.click, "echo", closed)
    assert main(["list", "metrics"]) == 141  # (under capture stdout has no descriptor to redirect)
    assert capsys.readouterr().err == ""

"""Hostile inputs, kills and faults, one class of defect per section: each test would have caught
the defect it names, and checks the one mechanism that now covers the whole class."""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest

from harness.api import Hit, InMemoryCorpus, Passage, RunContext
from harness.cli.main import main
from harness.errors import HarnessError, InputFileError
from harness.results.schema import read_result, validate, write_result
from harness.testing import toy_suite
from helpers.result_docs import make_result
from helpers.board_cells import cells


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *fragments: str, status: int = 2) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("harness: warning:")]
    assert code == status, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- 1. a trustworthy leaderboard ---------------------------------------------------------------


def _board_files(tmp_path: Path, results: list[dict]) -> tuple[Path, Path]:
    results_dir, output = tmp_path / "results", tmp_path / "LB.md"
    for result in results:
        write_result(result, results_dir)
    return results_dir, output


def test_check_rejects_a_forged_cell(capsys, tmp_path):
    results_dir, output = _board_files(tmp_path, [make_result("honest")])
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output))[0] == 0
    forged = output.read_text().replace("25.00", "99.00", 1)
    assert forged != output.read_text()
    output.write_text(forged)
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output), "--check")
    assert code == 1 and "out of date" in err


def test_a_name_with_pipes_cannot_forge_columns(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    results_dir, _ = _board_files(tmp_path, [make_result("x | 100.00 | 100.00 | 100.00 | 100.00")])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    (row,) = cells(markdown)
    assert len(row) == 7 and row[2] == "25.00"


def test_other_question_sets_get_their_own_sections(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    a, b = make_result("a"), make_result("b")
    b["suite"]["questions_fingerprint"] = "sha256:" + "f" * 64
    results_dir, _ = _board_files(tmp_path, [a, b])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    assert markdown.count("\n## s (question set ") == 2
    assert "were made on 2 different question sets" in markdown
    assert len(cells(markdown)) == 2  # one row in each section, never ranked together


def test_a_fuller_result_is_not_replaced_silently(tmp_path):
    full = make_result("r")
    path = write_result(full, tmp_path)
    shallow = make_result("r", k=[1, 5])
    with pytest.raises(HarnessError, match=r"cutoffs 20, 100 that the new one lacks.*not replacing it"):
        write_result(shallow, tmp_path)
    assert read_result(path).data["k"] == [1, 5, 20, 100]
    other_questions = make_result("r")
    other_questions["suite"]["questions_fingerprint"] = "sha256:other"
    with pytest.raises(HarnessError, match="another question set"):
        write_result(other_questions, tmp_path)
    write_result(shallow, tmp_path, replace=True)
    assert read_result(path).data["k"] == [1, 5]
    write_result(make_result("r", created="2027-01-01T00:00:00Z"), tmp_path)  # a fuller one replaces freely


def test_leaderboard_never_loses_rows_silently(capsys, tmp_path, monkeypatch):
    results_dir, output = _board_files(tmp_path, [make_result("a"), make_result("b")])
    assert run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(output))[0] == 0
    before = output.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(empty), "--output", str(output))
    one_line_error(code, err, "would lose 2 row(s)", "nothing written")
    assert output.read_text() == before
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(tmp_path / "typo"), "--output", str(output))
    one_line_error(code, err, "no such folder")
    # another results folder never rewrites the project's own leaderboard by default
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir))
    one_line_error(code, err, "--output")
    assert not (tmp_path / "leaderboard").exists()
    assert run_cli(capsys, "leaderboard", "--results-dir", str(empty), "--output", str(output), "--force")[0] == 0


def test_the_leaderboard_shows_a_suites_own_cutoffs_and_other_metrics(tmp_path):
    from harness.board.markdown import render
    from harness.results.schema import read_results

    result = make_result("r", k=[1, 3, 10], depth=10, ranks={"all": {"q1": 0, "q2": 4, "q3": None, "q4": 2}})
    result["metrics"] = {"mrr": {"macro": {"1": 0.25, "3": 0.25, "10": 0.3}, "parts": {"all": {"1": 0.25, "3": 0.25, "10": 0.3}}}}
    results_dir, _ = _board_files(tmp_path, [result])
    markdown = render(read_results(results_dir), output_dir=tmp_path, results_dir=results_dir)
    assert "| top-1 " in markdown and "| top-3 " in markdown and "| top-10 " in markdown
    assert "top-20" not in markdown
    main_row, mrr_row = cells(markdown)
    assert main_row[2:5] == ["25.00", "50.00", "75.00"]
    assert "mrr@10" in markdown and mrr_row[2:5] == ["25.00", "25.00", "30.00"]


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (lambda d: d["suite"]["parts"].append("oops"), "'suite.parts[1]'"),
        (lambda d: d["suite"].update(corpus={"name": 3}), "'suite.corpus'"),
        (lambda d: d["suite"]["corpus"].update(passages="many"), "'suite.corpus.passages'"),
        (lambda d: d["suite"].update(match="fuzzy"), "'suite.match'"),
        (lambda d: d["suite"].update(synthetic="yes"), "'suite.synthetic'"),
        (lambda d: d["retriever"].update(plugin=5), "'retriever.plugin'"),
        (lambda d: d.update(k=[1, 5, 20, 100, 1000]), "'k'"),
        (lambda d: d.update(depth=True), "'depth'"),
        (lambda d: d["metrics"].update(accuracy={"macro": {"1": "x"}, "parts": {}}), "'metrics.accuracy'.macro"),
        (lambda d: d["metrics"].update(accuracy=[]), "'metrics.accuracy'"),
        (lambda d: d["timings"].update(search="slow"), "'timings'"),
        (lambda d: d["first_hit_ranks"].update(extra={"q": 1}), "'first_hit_ranks' must have exactly the parts"),
    ],
)
def test_results_that_pass_validation_cannot_crash_readers(capsys, tmp_path, mutate, problem):
    data = make_result()
    mutate(data)
    with pytest.raises(InputFileError, match=problem.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        validate(data, source="x.json")
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    (results_dir / "bad.json").write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results_dir), "--output", str(tmp_path / "o.md"))
    one_line_error(code, err, "bad.json")


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


# --- 6. files others can read -----------------------------------------------------------------


def test_written_files_follow_the_umask(tmp_path):
    from harness.util.atomic import atomic_dir, write_text_atomic

    old = os.umask(0o022)
    try:
        import harness.util.atomic as atomic

        atomic._umask = None
        path = write_result(make_result(), tmp_path / "results")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert stat.S_IMODE(write_text_atomic(tmp_path / "t.txt", "x").stat().st_mode) == 0o644
        with atomic_dir(tmp_path / "d"):
            pass
        assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
    finally:
        os.umask(old)
        atomic._umask = None


# --- 7. the right facts in errors -------------------------------------------------------------


def test_line_numbers_after_bytes_that_are_not_utf8_and_no_bom(tmp_path):
    from harness.data.questions import read_questions

    lines = [f"question {i}?\t['a{i}']\n".encode() for i in range(3000)]
    lines[2500] = b"caf\xe9 ?\t['x']\n"
    path = tmp_path / "q.tsv"
    path.write_bytes(b"".join(lines))
    with pytest.raises(InputFileError, match=r"q.tsv:2501: not UTF-8"):
        read_questions(path, "dpr-tsv")
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps({"question": "who?", "answer": ["me"]}).encode() + b"\n")
    (question,) = read_questions(jsonl, "jsonl")
    assert question.text == "who?"
    tsv = tmp_path / "bom.tsv"
    tsv.write_bytes(b"\xef\xbb\xbfwho?\t['me']\n")
    assert read_questions(tsv, "dpr-tsv")[0].text == "who?"


# --- 8. broken rankings are refused -----------------------------------------------------------


class _Broken:
    def __init__(self, kind):
        self.kind = kind

    def parameters(self):
        return {"kind": self.kind}

    def index(self, corpus, context):
        pass

    def search(self, queries, k, context):
        good = [Hit(passage_id=f"t{i}", score=10.0 - i) for i in range(1, 5)]
        if self.kind == "duplicate":
            ranking = good[:2] + [good[0]]
        elif self.kind == "reversed":
            ranking = list(reversed(good))
        elif self.kind == "nan":
            ranking = good[:1] + [Hit(passage_id="t5", score=math.nan)]
        elif self.kind == "unknown-below":
            ranking = good + [Hit(passage_id="no-such-passage", score=0.0)]
        else:
            raise AssertionError(self.kind)
        return [ranking for _ in queries]


@pytest.mark.parametrize(
    "kind, fragment",
    [
        ("duplicate", "passage 't1' is ranked twice"),
        ("reversed", "not in descending order"),
        ("nan", "not a finite number"),
        ("unknown-below", "'no-such-passage', which is not in the corpus"),
    ],
)
def test_broken_rankings_from_a_retriever_are_refused(tmp_path, kind, fragment):
    from harness.evaluate import evaluate_retriever, make_context

    suite = toy_suite()
    with pytest.raises(HarnessError) as err:
        evaluate_retriever(_Broken(kind), suite, name="broken", plugin="test", k=[5],
                           context=make_context(suite, cache_dir=tmp_path, show_progress=False))
    message = str(err.value)
    assert message.startswith("retriever 'broken': question 'toy-1': ") and fragment in message


def _demo_trec(tmp_path: Path, lines: list[tuple[str, str, int, float]]) -> Path:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {p} {r} {s} test\n" for q, p, r, s in lines))
    return path


def test_broken_run_files_are_refused(capsys, tmp_path):
    from harness import registry

    demo = registry.suites().get("demo").load()
    question = demo.questions[0].id
    ids = [p.id for _, p in zip(range(3), demo.corpus)]
    reversed_run = _demo_trec(tmp_path, [(question, pid, r, float(r)) for r, pid in enumerate(ids, start=1)])
    code, _, err = run_cli(capsys, "score", "-s", "demo", "--run", str(reversed_run), "--results-dir", str(tmp_path / "r"))
    one_line_error(code, err, f"question {question!r}", "not in descending order")
    unknown = _demo_trec(tmp_path, [(question, ids[0], 1, 3.0), (question, "no-such", 2, 2.0)])
    code, _, err = run_cli(capsys, "score", "-s", "demo", "--run", str(unknown), "--results-dir", str(tmp_path / "r"))
    one_line_error(code, err, "'no-such', which is not in corpus")
    assert not (tmp_path / "r").exists()


# --- 9. a file changed in place is not trusted --------------------------------------------------


@pytest.mark.parametrize("large", [False, True], ids=["small-file", "large-file"])
def test_a_file_edited_in_place_with_size_and_mtime_kept_is_rehashed(tmp_path, monkeypatch, large):
    import hashlib

    from harness.data import download

    if large:
        monkeypatch.setattr(download, "REHASH_BYTES", 0)  # the stat-record path of big corpora
    content = b"question\t['answer']\n" * 100
    remote = download.RemoteFile(url="https://example.invalid/q.tsv", path="q.tsv",
                                 sha256=hashlib.sha256(content).hexdigest(), size=len(content))
    path = tmp_path / "q.tsv"
    path.write_bytes(content)
    assert download.fetch(remote, data_dir=tmp_path, offline=True, progress=False).verified
    st = path.stat()
    time.sleep(0.01)
    with open(path, "r+b") as f:
        f.write(b"Q")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same modification time
    with pytest.raises(download.ChecksumError, match="does not match its pinned checksum"):
        download.fetch(remote, data_dir=tmp_path, offline=True, progress=False)


# --- 10. one broken spec file leaves the other suites usable -----------------------------------


def test_one_broken_spec_file_does_not_hide_the_other_suites(tmp_path, monkeypatch, capsys):
    from harness_builtins.datasets.catalog import catalog

    (tmp_path / "suites").mkdir()
    (tmp_path / "corpora").mkdir()
    (tmp_path / "suites" / "broken.toml").write_text("name = [unclosed\n")
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    found = catalog()
    assert "nq" in found.suites and "entityquestions" in found.suites
    assert "broken.toml" in capsys.readouterr().err
    with pytest.raises(InputFileError, match="broken.toml"):
        catalog(strict=True)


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

"""Run files at the edges, one rule for every format, compression and reading strategy:

- a score written as a JSON integer too large for a float, or of more than Python's 4,300-digit
  conversion limit, is one line naming the file and the line (never ``OverflowError`` /
  ``ValueError``);
- a ``.tar.gz`` with several ``.json`` members is refused naming them; ``--member`` picks one;
- a passage the run carries no text for must be in the corpus, below the first hit too, whether
  the file is read whole, split or streamed: one line naming the file and the entry's line;
- a question given twice is refused, plain or compressed, read fast or by the general reader;
- errors are found while streaming, in bounded memory (a syntax error at byte 70 of a large gzip
  run, a Tevatron file without line breaks), measured with ``tracemalloc``;
- a run file's default row name keeps its system's name apart (``tfidf.ranx.json`` and
  ``tfidf.tevatron.txt``), and ``--format`` given wrongly names the format the file looks like.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from harness.api import InMemoryCorpus, Part, Passage, Question, Suite
from harness.cli.main import main
from harness.errors import HarnessError, InputFileError
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import read_run
from harness.runfiles.registered import run_format
from harness.runfiles.stream import score_streamed

pytestmark = pytest.mark.filterwarnings("ignore:run .* questions are missing")

QUESTIONS = (
    Question(id="q0", text="who wrote hamlet", answers=("Shakespeare",)),
    Question(id="q1", text="capital of france", answers=("Paris",)),
)
PASSAGES = {
    "1": Passage(id="1", title="Hamlet", text="Hamlet is a play by Shakespeare."),
    "2": Passage(id="2", title="Paris", text="The city on the Seine."),
    "3": Passage(id="3", title="France", text="Paris is the capital of France."),
}


def suite() -> Suite:
    return Suite(name="edges", parts=(Part(name="test", questions=QUESTIONS),), corpus=InMemoryCorpus("small", PASSAGES.values()))


# ---- one run in every format --------------------------------------------------------------------

#: Each question's ranking: (passage id, score as written in the file).
RANKING = {"q0": [("1", "3.0"), ("2", "2.0")], "q1": [("2", "5.0"), ("3", "1.0")]}


def _json_items(ranking, *, key="ctxs", ids="id"):
    return "[\n" + ",\n".join(
        '{"question": %s, "answers": %s, "%s": [%s]}' % (
            json.dumps(q.text), json.dumps(list(q.answers)), key,
            ", ".join('{"%s": "%s", "score": %s}' % (ids, pid, score) for pid, score in ranking[q.id]),
        )
        for q in QUESTIONS
    ) + "\n]\n"


def write_run(folder: Path, fmt: str, ranking=RANKING) -> Path:
    """``ranking`` written in format ``fmt``, scores as given (literally), one question a line
    (JSON) or one passage a line (text formats)."""
    if fmt == "trec":
        text = "".join(f"{qid} Q0 {pid} {rank + 1} {score} t\n" for qid, hits in ranking.items() for rank, (pid, score) in enumerate(hits))
    elif fmt == "tevatron":
        text = "".join(f"{qid}\t{pid}\t{score}\n" for qid, hits in ranking.items() for pid, score in hits)
    elif fmt == "ranx":
        text = "{\n" + ",\n".join(
            '"%s": {%s}' % (qid, ", ".join(f'"{pid}": {score}' for pid, score in hits)) for qid, hits in ranking.items()
        ) + "\n}\n"
    elif fmt == "pyserini-json":
        text = "{\n" + ",\n".join(
            '"%s": {"contexts": [%s]}' % (qid, ", ".join(f'{{"docid": "{pid}", "score": {score}}}' for pid, score in hits))
            for qid, hits in ranking.items()
        ) + "\n}\n"
    elif fmt in ("dpr-json", "upr-json", "rankify-json"):
        text = _json_items(ranking)
    elif fmt == "rankify-dataset":
        text = "".join(
            '{"question": %s, "answers": %s, "ctxs": [%s]}\n' % (
                json.dumps(q.text), json.dumps(list(q.answers)),
                ", ".join(f'{{"score": {score}, "id": "{pid}"}}' for pid, score in ranking[q.id]),
            )
            for q in QUESTIONS
        )
    elif fmt == "flashrag":
        text = "".join(
            '{"id": "%s", "question": %s, "golden_answers": %s, "output": {"retrieval_result": [%s]}}\n' % (
                q.id, json.dumps(q.text), json.dumps(list(q.answers)),
                ", ".join(f'{{"id": "{pid}", "score": {score}}}' for pid, score in ranking[q.id]),
            )
            for q in QUESTIONS
        )
    else:
        raise AssertionError(fmt)
    path = folder / f"run-{fmt}.txt"
    path.write_text(text)
    return path


FORMATS = ("trec", "tevatron", "ranx", "pyserini-json", "dpr-json", "upr-json", "rankify-json", "rankify-dataset", "flashrag")
#: Formats read compressed.
COMPRESSED = ("pyserini-json", "dpr-json", "upr-json", "rankify-json")


def _gzip(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def _variants(tmp_path, fmt, ranking):
    path = write_run(tmp_path, fmt, ranking)
    yield path
    if fmt in COMPRESSED:
        yield _gzip(path)


def _readers(path, fmt):
    """Every way the harness reads a file: read then score (whole, or streamed when compressed),
    and scored as a stream."""
    from harness.runfiles.archives import detect_compression

    yield lambda: score_run(suite(), read_run(path, suite(), format=fmt))
    yield lambda: score_streamed(path, suite(), run_format(fmt), compression=detect_compression(path))


def _line_of(path: Path, needle: str) -> int:
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return text[: text.index(needle)].count("\n") + 1


def _one_line(exc_info, path: Path, line: int | None) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and isinstance(exc_info.value, InputFileError), message
    assert message.startswith(f"{path}:{line}: " if line is not None else f"{path}"), message
    return message


def test_the_runs_of_every_format_score_alike(tmp_path):
    """The baseline the edge cases depart from: every format reads the same ranking."""
    for fmt in FORMATS:
        for path in _variants(tmp_path, fmt, RANKING):
            for read in _readers(path, fmt):
                ranks = read()
                ranks = ranks.ranks if hasattr(ranks, "ranks") else [ranks["test"]["q0"], ranks["test"]["q1"]]
                assert ranks == [0, 1], (fmt, path)


# ---- C: numbers a float cannot hold -------------------------------------------------------------


@pytest.mark.parametrize("digits, problem", [(400, "too large for a float"), (4400, "more than 4,300 digits")])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_huge_integer_score_is_one_line_naming_file_and_line(tmp_path, fmt, digits, problem):
    huge = "1" + "0" * digits
    ranking = {"q0": [("1", "3.0"), ("2", "2.0")], "q1": [("3", huge), ("1", "1.0")]}
    if fmt in ("trec", "tevatron"):  # text formats parse a score as a float: 1e400 is not finite
        problem = "finite"
    elif fmt in ("rankify-dataset", "flashrag") and digits < 4300:
        problem = "score must be a finite number"
    for path in _variants(tmp_path, fmt, ranking):
        line = _line_of(path, huge) if fmt not in ("ranx", "pyserini-json") else _line_of(path, '"q1"')
        for read in _readers(path, fmt):
            with pytest.raises(HarnessError) as exc:
                read()
            assert problem in _one_line(exc, path, line), (fmt, path)


def test_a_huge_integer_score_through_the_cli_exits_2(tmp_path, capsys):
    from harness import registry

    demo = registry.suites().get("demo").load()
    question = demo.questions[0]
    pid = next(iter(demo.corpus)).id
    run = tmp_path / "huge.json"
    run.write_text('{"%s": {"%s": 1%s}}' % (question.id, pid, "0" * 400))
    code = main(["score", "--suite", "demo", "--run", str(run), "--no-progress", "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0 and f"{run}:1: " in err and "too large for a float" in err, err
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())


# ---- D11: an archive whose member is ambiguous --------------------------------------------------


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tar_gz_with_two_json_members_is_refused_naming_both(tmp_path):
    wrong = {"q0": [("2", "3.0"), ("1", "2.0")], "q1": [("1", "5.0"), ("3", "1.0")]}
    right = write_run(tmp_path, "dpr-json").read_bytes()
    archive = _tar(tmp_path / "run.tar.gz", {"README": b"x", "a/first.json": write_run(tmp_path, "upr-json", wrong).read_bytes(),
                                              "a/second.json": right})
    for read in _readers(archive, "dpr-json"):
        with pytest.raises(InputFileError) as exc:
            read()
        message = _one_line(exc, archive, None)
        assert "'a/first.json'" in message and "'a/second.json'" in message and "ambiguous" in message
    # the member named is read, and scores as the same file on its own
    run = read_run(archive, suite(), format="dpr-json", member="a/second.json")
    assert score_run(suite(), run) == {"test": {"q0": 0, "q1": 1}}
    alone = _tar(tmp_path / "one.tar.gz", {"README": b"x", "a/second.json": right})
    assert score_run(suite(), read_run(alone, suite(), format="dpr-json")) == {"test": {"q0": 0, "q1": 1}}


def test_score_member_option_picks_the_member(tmp_path, capsys):
    from harness import registry

    demo = registry.suites().get("demo").load()
    passages = [p.id for p, _ in zip(demo.corpus, range(3))]
    lines = "".join(f"{q.id} Q0 {pid} {r + 1} {3.0 - r} t\n" for q in demo.questions for r, pid in enumerate(passages))
    items = [{"question": q.text, "answers": list(q.answers), "ctxs": [{"id": pid, "score": 3.0 - r} for r, pid in enumerate(passages)]}
             for q in demo.questions]
    archive = _tar(tmp_path / "two.tar.gz", {"x.json": b"[]", "y.json": json.dumps(items).encode()})
    args = ["score", "--suite", "demo", "--run", str(archive), "--no-progress", "--k", "1,3"]
    assert main([*args, "--results-dir", str(tmp_path / "r0")]) == 2
    assert "'x.json', 'y.json'" in capsys.readouterr().err
    assert main([*args, "--member", "y.json", "--format", "dpr-json", "--results-dir", str(tmp_path / "r1")]) == 0
    (tmp_path / "same.trec").write_text(lines)
    assert main(["score", "--suite", "demo", "--run", str(tmp_path / "same.trec"), "--no-progress", "--k", "1,3",
                 "--results-dir", str(tmp_path / "r2")]) == 0
    capsys.readouterr()
    (one,), (two,) = (list((tmp_path / r).glob("*.json")) for r in ("r1", "r2"))
    assert json.loads(one.read_text())["first_hit_ranks"] == json.loads(two.read_text())["first_hit_ranks"]


# ---- D12: one rule for passages the corpus does not have ----------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unknown_passage_below_the_first_hit_is_refused_in_every_format(tmp_path, fmt):
    # q0's first hit is at 0 ("1" holds Shakespeare); "999" comes after it
    ranking = {"q0": [("1", "3.0"), ("999", "2.0")], "q1": [("3", "5.0"), ("1", "1.0")]}
    for path in _variants(tmp_path, fmt, ranking):
        line = _line_of(path, "999") if fmt in ("trec", "tevatron") else _line_of(path, QUESTIONS[0].text if fmt not in (
            "ranx", "pyserini-json") else '"q0"')
        if fmt == "trec":
            line = 1  # a TREC question is named on its first line
        if fmt == "tevatron":
            line = 1
        for read in _readers(path, fmt):
            with pytest.raises(InputFileError) as exc:
                read()
            message = _one_line(exc, path, line)
            assert "names passage '999', which is not in corpus 'small'" in message and "hit 1" in message, (fmt, path)


def test_a_passage_with_its_text_in_the_run_need_not_be_in_the_corpus(tmp_path):
    items = [{"question": q.text, "answers": list(q.answers),
              "ctxs": [{"id": "777", "score": 2.0, "title": "t", "text": "not this one"},
                       {"id": "888", "score": 1.0, "title": "t", "text": f"the answer is {q.answers[0]}"}]}
             for q in QUESTIONS]
    path = tmp_path / "texts.json"
    path.write_text(json.dumps(items, indent=1))
    for candidate in (path, _gzip(path)):
        for read in _readers(candidate, "dpr-json"):
            ranks = read()
            assert (ranks.ranks if hasattr(ranks, "ranks") else list(ranks["test"].values())) == [1, 1]


# ---- D13: a question given twice ----------------------------------------------------------------


@pytest.mark.parametrize("fmt, general", [("pyserini-json", False), ("pyserini-json", True), ("ranx", False), ("tevatron", False)])
def test_a_question_given_twice_is_refused_plain_and_compressed(tmp_path, fmt, general):
    path = write_run(tmp_path, fmt)
    text = path.read_text()
    if fmt == "tevatron":
        text += "q0\t3\t0.5\n"
    elif fmt == "ranx":
        text = text.rstrip().removesuffix("}") + ',\n"q0": {"3": 0.5}\n}\n'
    else:
        text = text.rstrip().removesuffix("}") + ',\n"q0": {"contexts": [{"docid": "3", "score": 0.5}]}\n}\n'
    if general:  # a number msgspec refuses sends the file to the general reader
        text = text.replace('"q1": {"contexts"', '"q1": {"answers": [1e999], "contexts"')
    path.write_text(text)
    second = text.count("\n", 0, text.rindex('"q0"' if fmt != "tevatron" else "q0\t3")) + 1
    for candidate in (path, _gzip(path)) if fmt in COMPRESSED else (path,):
        for read in _readers(candidate, fmt):
            with pytest.raises(InputFileError) as exc:
                read()
            message = _one_line(exc, candidate, second)
            assert "'q0' again" in message, (fmt, candidate)


def test_the_fast_reader_counts_records_against_the_decoded_questions():
    from harness.runfiles.columns import count_keys, decode_columns

    one = b'{"a": {"contexts": []}, "b": {"contexts": []}}'
    twice = b'{"a": {"contexts": []}, "a": {"contexts": []}}'
    assert count_keys(one, b'"contexts"', 10) == 2 and len(decode_columns(one, "object")) == 2
    assert decode_columns(twice, "object") is None  # the general reader decides


# ---- D14: bounded memory while streaming --------------------------------------------------------


def _peak(read) -> tuple[int, str]:
    tracemalloc.start()
    try:
        with pytest.raises(InputFileError) as exc:
            read()
        return tracemalloc.get_traced_memory()[1], str(exc.value)
    finally:
        tracemalloc.stop()


def test_a_syntax_error_early_in_a_large_gzip_run_is_found_in_bounded_memory(tmp_path):
    item = json.dumps({"question": "q", "answers": ["a"], "ctxs": [{"id": str(i), "score": 1.0, "text": "x" * 400} for i in range(100)]})
    body = '[{"question": "who wrote hamlet", "ctxs": [{"id": "1" "score": 1.0}]},\n' + ",\n".join([item] * 2000) + "]"
    assert body.index('"score"') < 70 and len(body) > 80_000_000
    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(body.encode(), compresslevel=1))
    del body
    peak, message = _peak(lambda: read_run(path, suite(), format="dpr-json"))
    assert message.startswith(f"{path}:1: invalid JSON: Expecting ',' delimiter"), message
    assert peak < 40_000_000, peak  # the whole file decompressed would be over 80 MB


def test_a_tevatron_file_without_line_breaks_is_refused_in_bounded_memory(tmp_path):
    path = tmp_path / "one-line.tsv"
    path.write_text("q0\t1\t1.0 " * 5_000_000)  # 45 MB, no line break
    peak, message = _peak(lambda: read_run(path, suite(), format="tevatron"))
    assert message.startswith(f"{path}:1: line longer than 65,536 characters"), message
    assert peak < 32_000_000, peak


def test_an_unterminated_json_string_is_refused_in_bounded_memory(tmp_path, monkeypatch):
    from harness.runfiles import stream

    monkeypatch.setattr(stream, "MAX_MEMBER", 1 << 20)
    path = tmp_path / "open.json.gz"
    path.write_bytes(gzip.compress(('[{"question": "' + "x" * 5_000_000).encode()))
    peak, message = _peak(lambda: read_run(path, suite(), format="dpr-json"))
    assert "longer than 1,048,576 characters" in message, message
    assert peak < 40_000_000


# ---- issue 35: names and formats ----------------------------------------------------------------


def test_a_run_files_default_name_keeps_its_systems_name():
    from harness.runfiles.score import default_name

    assert default_name(Path("tfidf.ranx.json")) == "tfidf.ranx"
    assert default_name(Path("tfidf.tevatron.txt")) == "tfidf.tevatron"
    assert default_name(Path("tfidf.trec")) == "tfidf"
    assert default_name(Path("nq-test.json.gz")) == "nq-test"
    assert default_name(Path("runs.tar.gz")) == "runs"
    assert default_name(Path("v1.2.run")) == "v1.2"
    assert default_name(Path(".json")) == ".json"
    assert len({default_name(Path(n)) for n in ("tfidf.ranx.json", "tfidf.tevatron.txt", "tfidf.dpr.json")}) == 3


def test_a_wrong_format_names_the_detected_one(tmp_path, capsys):
    from harness import registry

    demo = registry.suites().get("demo").load()
    pid = next(iter(demo.corpus)).id
    run = tmp_path / "tfidf.ranx.json"
    run.write_text(json.dumps({q.id: {pid: 1.0} for q in demo.questions}))
    code = main(["score", "--suite", "demo", "--run", str(run), "--format", "trec", "--no-progress", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "the file looks like a ranx run (--format ranx" in err and err.count("\n") == 1, err
    code = main(["score", "--suite", "demo", "--run", str(run), "--no-progress", "--k", "1", "--results-dir", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr().err
    (result,) = (tmp_path / "r").glob("*.json")
    assert json.loads(result.read_text())["retriever"]["name"] == "tfidf.ranx"


def test_a_trec_file_without_line_breaks_is_refused_before_it_is_split(tmp_path):
    path = tmp_path / "one-line.trec"
    path.write_text("q0 Q0 1 1 1.0 t " * 2_000_000)  # 32 MB, no line break
    peak, message = _peak(lambda: read_run(path, suite(), format="trec"))
    assert message.startswith(f"{path}:1: line longer than 65,536 characters"), message
    assert peak < 3 * path.stat().st_size  # the text read whole, never its 12 million fields


def test_a_trec_rank_of_over_4300_digits_and_a_member_of_a_plain_file(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q0 Q0 1 1 1.0 t\nq0 Q0 2 1%s 0.5 t\n" % ("0" * 4400))
    with pytest.raises(InputFileError) as exc:
        read_run(path, suite(), format="trec")
    assert "rank has more than 4,300 digits" in _one_line(exc, path, 2)
    from harness.runfiles.score import score_file

    with pytest.raises(HarnessError, match=r"--member x.json: .*run.trec is not a .tar.gz archive"):
        score_file("demo", path, member="x.json")

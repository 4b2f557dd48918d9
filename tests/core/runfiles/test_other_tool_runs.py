"""Other tools' run files (harness.runfiles.othertools): Tevatron, ranx, FlashRAG, Rankify.

Each format is checked against the same ranking in the harness's native TREC format on the demo
suite (identical first-hit ranks and metrics), for ignored ``has_answer`` flags, for one-line
errors naming file and line (exit status 2 through the CLI), and for being read as a stream, on
files made here from each format's documented shape (files written by each tool's own code:
``test_tool_written_runs.py``).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from pathlib import Path

import pytest

from helpers.fake_retrievers import registries_with_fake_retrievers
from harness.api import InMemoryCorpus, Part, Passage, Question, Suite
from harness.cli.main import main
from harness.errors import InputFileError
from harness.runfiles.registered import format_names, run_format, spellings
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import detect_format, read_run
from harness.runfiles.stream import read_streamed, score_streamed
from helpers.tool_runs import score_cli, scored_doc, flat_ranks



def read_other(path, questions, fmt, **kwargs):
    return read_streamed(path, questions, run_format(fmt), **kwargs)


def score_other(path, suite, fmt, **kwargs):
    return score_streamed(path, suite, run_format(fmt), **kwargs)


#: The other tools' formats the core reads.
OTHER_FORMATS = ("tevatron", "ranx", "flashrag", "rankify-dataset", "rankify-reranked")

DEPTH = 20

pytestmark = pytest.mark.filterwarnings("ignore:run .* questions are missing")


# ---- the demo ranking and its files ---------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``(folder, suite, rankings)``: a test-overlap run of the demo suite, its top DEPTH hits per
    question with distinct descending scores, and the same ranking as a native TREC run."""
    from harness import registry

    tmp_path = tmp_path_factory.mktemp("demo")
    with registries_with_fake_retrievers(), contextlib.redirect_stdout(io.StringIO()):
        code = main([
            "run", "-r", "test-overlap", "-s", "demo", "--no-progress", "--save-run",
            "--runs-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results"),
            "--cache-dir", str(tmp_path / "cache"),
        ])
    assert code == 0
    suite = registry.suites().get("demo").load()
    (trec,) = (tmp_path / "runs").glob("*.trec")
    rankings: dict[str, list[str]] = {q.id: [] for q in suite.questions}
    for line in trec.read_text().splitlines():
        qid, _q0, pid, _rank, _value, _tag = line.split()
        if len(rankings[qid]) < DEPTH:
            rankings[qid].append(pid)
    with open(tmp_path / "native.trec", "w") as f:
        for qid, pids in rankings.items():
            for rank, pid in enumerate(pids, start=1):
                f.write(f"{qid} Q0 {pid} {rank} {_score(rank - 1)} native\n")
    return tmp_path, suite, rankings


def _score(position: int) -> float:
    return 100.0 - position * 0.5


def _passage(suite, pid):
    return suite.corpus.get(pid)


def write_tevatron(path, suite, rankings):
    with open(path, "w") as f:
        for qid, pids in rankings.items():
            for i, pid in enumerate(pids):
                f.write(f"{qid}\t{pid}\t{_score(i)}\n")
    return path


def write_ranx(path, suite, rankings, shuffle=True):
    # ranx's dict of dicts; key order does not matter (the reader sorts by score)
    data = {qid: dict(reversed([(pid, _score(i)) for i, pid in enumerate(pids)]) if shuffle else [(pid, _score(i)) for i, pid in enumerate(pids)])
            for qid, pids in rankings.items()}
    path.write_text(json.dumps(data))
    return path


def _flashrag_items(suite, rankings, flag=None):
    items = []
    for n, q in enumerate(suite.questions):
        docs = []
        for pid in rankings[q.id]:
            p = _passage(suite, pid)
            doc = {"id": pid, "contents": f'"{p.title}"\n{p.text}'}
            if flag is not None:
                doc["has_answer"] = flag
            docs.append(doc)
        items.append({"id": f"test_{n}", "question": q.text, "golden_answers": list(q.answers),
                      "output": {"retrieval_result": docs, "pred": "x"}})
    return items


def write_flashrag(path, suite, rankings, jsonl=False, flag=None):
    items = _flashrag_items(suite, rankings, flag)
    if jsonl:
        path.write_text("".join(json.dumps(item) + "\n" for item in items))
    else:
        path.write_text(json.dumps(items, indent=4))  # as FlashRAG's Dataset.save
    return path


def _rankify_docs(suite, rankings, *, text=True, flag=False, reranked=False, key="ctxs"):
    docs = []
    for q in suite.questions:
        ctxs = []
        for i, pid in enumerate(rankings[q.id]):
            ctx = {"score": _score(i), "has_answer": flag, "id": int(pid)}  # Context.to_dict order
            if text:
                p = _passage(suite, pid)
                ctx["text"], ctx["title"] = p.text, p.title
            ctxs.append(ctx)
        doc = {"question": q.text if q.text.endswith("?") else q.text + "?", "answers": list(q.answers)}
        if reranked:
            # first-stage contexts in another order; the re-ranked ones keep first-stage scores
            doc[key] = [dict(c, score=_score(j)) for j, c in enumerate(reversed(ctxs))]
            doc["reranked_ctxs"] = [dict(c, score=float(j)) for j, c in enumerate(ctxs)]
        else:
            doc[key] = ctxs
        docs.append(doc)
    return docs


def write_rankify(path, suite, rankings, jsonl=False, **kwargs):
    docs = _rankify_docs(suite, rankings, **kwargs)
    if jsonl:
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    else:
        path.write_text(json.dumps(docs, indent=4))  # as Rankify's Dataset.save_dataset
    return path


WRITERS = {
    "tevatron": ("run.tsv", write_tevatron, {}),
    "ranx": ("run.json", write_ranx, {}),
    "flashrag": ("intermediate_data.json", write_flashrag, {}),
    "flashrag-jsonl": ("items.jsonl", write_flashrag, {"jsonl": True}),
    "rankify-dataset": ("rankify.json", write_rankify, {}),
    "rankify-jsonl": ("rankify.jsonl", write_rankify, {"jsonl": True, "text": False}),
    "rankify-contexts": ("documents.json", write_rankify, {"key": "contexts", "text": False}),
}
FORMAT_OF = {"flashrag-jsonl": "flashrag", "rankify-jsonl": "rankify-dataset", "rankify-contexts": "rankify-dataset"}






@pytest.fixture(scope="module")
def native_result(demo, tmp_path_factory):
    folder, _suite, _rankings = demo
    out_dir = tmp_path_factory.mktemp("native")
    code = main(["score", "-s", "demo", "--run", str(folder / "native.trec"), "--results-dir", str(out_dir),
                 "--name", "same", "--no-progress"])
    assert code == 0
    (result,) = out_dir.glob("*.json")
    return json.loads(result.read_text())


# ---- same numbers as the native run ---------------------------------------------------------


@pytest.mark.parametrize("variant", list(WRITERS))
def test_scores_like_the_same_ranking_in_trec(capsys, demo, native_result, variant, tmp_path):
    _folder, suite, rankings = demo
    file_name, write, kwargs = WRITERS[variant]
    fmt = FORMAT_OF.get(variant, variant)
    path = write(tmp_path / file_name, suite, rankings, **kwargs)
    assert detect_format(path) == fmt
    data = scored_doc(capsys, tmp_path, path)  # the format is detected
    assert data["retriever"]["parameters"]["format"] == fmt
    assert data["first_hit_ranks"] == native_result["first_hit_ranks"]
    assert data["metrics"] == native_result["metrics"]
    assert data["depth"] == native_result["depth"] == DEPTH
    # the library: read_run + score_run, and the one-question-at-a-time scorer
    native = score_run(suite, read_run(Path(_folder) / "native.trec", suite))
    assert score_run(suite, read_run(path, suite, format=fmt)) == native
    streamed = score_other(path, suite, fmt)
    assert streamed.missing == () and streamed.depth == DEPTH
    flat = [rank for part in native.values() for rank in part.values()]
    assert streamed.ranks == flat


def test_rankify_reranked_is_scored_in_list_order(capsys, demo, native_result, tmp_path):
    _folder, suite, rankings = demo
    path = write_rankify(tmp_path / "reranked.json", suite, rankings, reranked=True)
    run = read_run(path, suite, format="rankify-reranked")
    assert [h.passage_id for h in run.rankings[suite.questions[0].id]] == rankings[suite.questions[0].id]
    assert score_run(suite, run) == native_result["first_hit_ranks"]
    # the first-stage contexts of the same file are the reversed ranking
    first_stage = read_run(path, suite, format="rankify-dataset")
    assert [h.passage_id for h in first_stage.rankings[suite.questions[0].id]] == rankings[suite.questions[0].id][::-1]


@pytest.mark.skipif(
    not set(OTHER_FORMATS) <= set(spellings()),
    reason="the registered run formats do not name the other tools' formats yet",
)
@pytest.mark.parametrize("variant", ["tevatron", "ranx", "flashrag", "rankify-dataset"])
def test_format_option_names_each_format(capsys, demo, native_result, variant, tmp_path):
    _folder, suite, rankings = demo
    file_name, write, kwargs = WRITERS[variant]
    path = write(tmp_path / file_name, suite, rankings, **kwargs)
    data = scored_doc(capsys, tmp_path, path, "--format", variant)
    assert data["first_hit_ranks"] == native_result["first_hit_ranks"]


def test_formats_are_registered_and_listed(capsys):
    assert set(OTHER_FORMATS) <= set(format_names())
    code, out, _err = score_cli(capsys, "score", "--help")
    assert code == 0
    for name in ("tevatron", "ranx", "flashrag", "rankify-dataset", "rankify-reranked"):
        assert name in out


# ---- has_answer flags are not trusted ---------------------------------------------------------


@pytest.mark.parametrize("variant", ["flashrag", "rankify-dataset", "rankify-jsonl"])
def test_has_answer_true_everywhere_changes_nothing(capsys, demo, native_result, variant, tmp_path):
    _folder, suite, rankings = demo
    file_name, write, kwargs = WRITERS[variant]
    path = write(tmp_path / file_name, suite, rankings, **kwargs, flag=True)
    assert '"has_answer": true' in path.read_text()
    data = scored_doc(capsys, tmp_path, path)
    assert data["first_hit_ranks"] == native_result["first_hit_ranks"]
    assert data["metrics"] == native_result["metrics"]
    # a flag on a passage without the answer is carried (for information), not believed
    run = read_run(path, suite, format=FORMAT_OF.get(variant, variant))
    flat = {qid: rank for part in score_run(suite, run).values() for qid, rank in part.items()}
    first = next(q for q in suite.questions if flat[q.id] != 0)
    assert run.rankings[first.id][0].has_answer is True


# ---- small suites: matching questions, ties, positions -------------------------------------


def small_suite(parts=1) -> Suite:
    questions = (
        Question(id="q0", text="who wrote hamlet", answers=("Shakespeare",)),
        Question(id="q1", text="capital of france", answers=("Paris",)),
        Question(id="q2", text="capital of france", answers=("Paris",)),  # the same text twice
        Question(id="q3", text="largest planet?", answers=("Jupiter",)),
    )
    corpus = InMemoryCorpus("small", [
        Passage(id="1", title="Hamlet", text="Hamlet is a play by Shakespeare."),
        Passage(id="2", title="Paris", text="The city on the Seine."),
        Passage(id="3", title="France", text="Paris is the capital of France."),
        Passage(id="4", title="Jupiter", text="Jupiter is the largest planet."),
    ])
    if parts == 1:
        return Suite(name="small", parts=(Part(name="all", questions=questions),), corpus=corpus)
    return Suite(name="small", parts=(Part(name="a", questions=questions[:2]), Part(name="b", questions=questions[2:])), corpus=corpus)




def test_rankify_questions_match_with_the_question_mark_rankify_adds(tmp_path):
    suite = small_suite()
    docs = [
        {"question": "who wrote hamlet?", "answers": ["Shakespeare"], "ctxs": [{"score": 2.0, "has_answer": None, "id": 1}]},
        {"question": "largest planet?", "answers": ["Jupiter"], "ctxs": [{"score": None, "has_answer": None, "id": 2},
                                                                        {"score": None, "has_answer": None, "id": 4}]},
    ]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(docs, indent=4))
    run = read_run(path, suite.questions, format="rankify-dataset")
    assert [h.passage_id for h in run.rankings["q3"]] == ["2", "4"]  # null scores: list order
    assert run.missing == ("q1", "q2")
    assert flat_ranks(suite, run) == {"q0": 0, "q1": None, "q2": None, "q3": 1}
    # FlashRAG does not add "?"
    flash = tmp_path / "f.jsonl"
    flash.write_text(json.dumps({"id": "x", "question": "who wrote hamlet?", "golden_answers": [], "retrieval_result": []}) + "\n")
    with pytest.raises(InputFileError, match=r"f.jsonl:1: item 0: question 'who wrote hamlet\?' is not a question of the suite"):
        read_run(flash, suite.questions, format="flashrag")


def test_flashrag_items_match_by_text_in_suite_order_or_by_id(tmp_path):
    suite = small_suite()
    items = [
        {"id": "test_2", "question": "capital of france", "golden_answers": ["Paris"],
         "output": {"retrieval_result": [{"id": "3", "contents": '"France"\nParis is the capital of France.'}]}},
        {"id": "test_1", "question": "capital of france", "golden_answers": ["Paris"],
         "output": {"retrieval_result": [{"id": "2", "contents": '"Paris"\nThe city on the Seine.'},
                                         {"id": "3", "contents": "no newline: the corpus text is matched"}]}},
    ]
    path = tmp_path / "i.json"
    path.write_text(json.dumps(items, indent=4))
    run = read_run(path, suite.questions, format="flashrag")
    assert [h.passage_id for h in run.rankings["q1"]] == ["3"]  # the first item takes the first "capital of france"
    assert [h.passage_id for h in run.rankings["q2"]] == ["2", "3"]
    assert run.rankings["q2"][0].title == "Paris" and run.rankings["q2"][0].text == "The city on the Seine."
    assert run.rankings["q2"][1].text is None
    assert flat_ranks(suite, run) == {"q0": None, "q1": 0, "q2": 1, "q3": None}
    items.append(dict(items[0]))
    path.write_text(json.dumps(items, indent=4))
    with pytest.raises(InputFileError, match="appears more often than in the suite"):
        read_run(path, suite.questions, format="flashrag")
    # by id: the first item's id is a suite id
    by_id = [{"id": "q2", "question": "capital of france", "retrieval_result": [{"id": "3", "contents": "x\nParis"}]},
             {"id": "q9", "question": "who wrote hamlet", "retrieval_result": []}]
    path.write_text("\n".join(json.dumps(i) for i in by_id))
    with pytest.raises(InputFileError, match=r"i.json:2: item 1: unknown question id 'q9'"):
        read_run(path, suite.questions, format="flashrag")


def test_tevatron_qids_may_be_positions_and_ties_keep_file_order(tmp_path):
    suite = small_suite()
    path = tmp_path / "rank.txt"
    path.write_text("3\t2\t1.5\n3\t4\t1.5\n3\t1\t0.5\n0\twiki:1\t7\n")
    run = read_run(path, suite, format="tevatron")
    assert [(h.passage_id, h.score) for h in run.rankings["q3"]] == [("2", 1.5), ("4", 1.5), ("1", 0.5)]
    assert flat_ranks(suite, run) == {"q0": 0, "q1": None, "q2": None, "q3": 1}
    # unsorted lines are sorted by score (stable)
    path.write_text("q3\t1\t0.5\nq3\t2\t1.5\nq3\t4\t1.5\n")
    assert [h.passage_id for h in read_run(path, suite, format="tevatron").rankings["q3"]] == ["2", "4", "1"]
    # positions are not used for multi-part suites
    path.write_text("3\t2\t1.5\n")
    with pytest.raises(InputFileError, match=r"rank.txt:1: unknown question id '3'.*multi-part"):
        read_run(path, small_suite(parts=2), format="tevatron")


def test_ranx_ties_are_broken_by_document_id(tmp_path):
    suite = small_suite()
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"q3": {"4": 1.0, "2": 1.0, "1": 3}, "q0": {}}))
    run = read_run(path, suite, format="ranx")
    assert [(h.passage_id, h.score) for h in run.rankings["q3"]] == [("1", 3.0), ("2", 1.0), ("4", 1.0)]
    assert run.rankings["q0"] == ()
    assert flat_ranks(suite, run) == {"q0": None, "q1": None, "q2": None, "q3": 2}




def test_ranx_files_written_by_ranx(tmp_path, tool_home):
    ranx = pytest.importorskip("ranx")
    suite = small_suite()
    path = tmp_path / "run.json"
    ranx.Run({"q3": {"4": 0.9, "2": 0.1}, "q0": {"1": 2.0}}, name="bm25").save(str(path))
    run = read_run(path, suite)
    assert run.format == "ranx"
    assert [h.passage_id for h in run.rankings["q3"]] == ["4", "2"]


def test_a_gzipped_file_is_read_when_its_format_is_given(tmp_path):
    suite = small_suite()
    path = tmp_path / "rank.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("q0\t1\t2.0\nq3\t4\t1.0\n")
    run = read_run(path, suite, format="tevatron")
    assert flat_ranks(suite, run) == {"q0": 0, "q1": None, "q2": None, "q3": 0}
    with pytest.raises(InputFileError, match="a compressed tevatron run is not supported: decompress it first"):
        detect_format(path, "gzip")


# ---- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, fmt",
    [
        ("q1\t7\t1.5\nq1\t8\t1.0\n", "tevatron"),
        ("q1 Q0 7 1 1.5 tag\n", "trec"),
        ('{"q1": {"7": 1.5, "8": 1}}', "ranx"),
        ('{\n "q1": {"question": "x", "answers": [], "contexts": []}\n}', "pyserini-json"),
        ('[{"question": "x", "answers": [], "ctxs": [{"id": "1", "title": "t", "text": "x", "score": 1}]}]', "dpr-json"),
        ('[{"question": "x", "answers": [], "ctxs": [{"score": 1.0, "has_answer": false, "id": 1}]}]', "rankify-dataset"),
        ('[{"question": "x", "answers": [], "contexts": []}]', "rankify-dataset"),
        ('{"question": "x", "answers": [], "ctxs": []}\n{"question": "y", "answers": [], "ctxs": []}\n', "rankify-dataset"),
        ('[{"id": "test_0", "question": "x", "golden_answers": [], "output": {"retrieval_result": []}}]', "flashrag"),
        ('{"id": "test_0", "question": "x", "golden_answers": [], "output": {"retrieval_result": []}}\n', "flashrag"),
    ],
)
def test_detection(tmp_path, content, fmt):
    path = tmp_path / "run"
    path.write_text(content)
    assert detect_format(path) == fmt


def test_detection_reads_past_the_first_characters_and_into_compressed_files(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"q0": {str(i): 1.0 / (i + 1) for i in range(8000)}, "q1": {"1": 1.0}}))
    assert path.stat().st_size > 65536
    assert detect_format(path) == "ranx"
    items = _big("flashrag", questions=2, hits=2000)
    assert len(items.split(b"\n")[0]) > 65536
    path.write_bytes(items)
    assert detect_format(path) == "flashrag"
    gz = tmp_path / "run.json.gz"
    gz.write_bytes(gzip.compress(b'{"q0": {"1": 2.0}}'))
    with pytest.raises(InputFileError, match="a compressed ranx run is not supported"):
        detect_format(gz, "gzip")
    gz.write_bytes(gzip.compress(b'[{"question": "x", "answers": [], "ctxs": [{"id": "1", "score": 1}]}]'))
    assert detect_format(gz, "gzip") == "dpr-json"


def test_space_separated_three_columns_are_not_guessed(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("0 1 2\n")
    with pytest.raises(InputFileError, match="cannot tell the run format"):
        detect_format(path)
    assert read_run(path, small_suite(), format="tevatron").rankings["q0"][0].passage_id == "1"


# ---- malformed files: one line naming file and line, exit 2 ---------------------------------

MALFORMED = [
    ("tevatron", "q0\t1\t2.0\nq0\t2\t1.0\nq0\t3\tabc\n", 3, "score must be a finite number, got 'abc'"),
    ("tevatron", "q0\t1\t2.0\nq0\t2\n", 2, "expected 3 tab-separated columns"),
    ("tevatron", "q0\t1\t2.0\nq3\t2\t1.0\nq0\t3\t0.5\n", 3, "question 'q0' again: its lines (from line 1) must be together"),
    ("tevatron", "q0\t1\t2.0\nq0\t1\t1.0\n", 2, "passage '1' listed twice for question 'q0' (first on line 1)"),
    ("tevatron", "q0\t1\t2.0\nq0\t2\tnan\n", 2, "score must be a finite number"),
    ("tevatron", "q0\t1\t1.0\nq0\t2\t2.0\nqx\t1\t1\n", 3, "unknown question id 'qx'"),
    ("ranx", '{\n"q0": {"1": 2.0},\n"q3": {"4": "high"}\n}', 3, "question 'q3': document '4': score must be a number, got 'high'"),
    ("ranx", '{\n"q0": {"1": 2.0},\n"q3": [1, 2]\n}', 3, "question 'q3': expected an object {docid: score}, got list"),
    ("ranx", '[{"q0": {"1": 2.0}}]', 1, "expected a JSON object {qid: {docid: score}}"),
    ("ranx", '{\n"q0": {"1": 2.0},\n"q3": {"4": 1.0,}\n}', 3, "invalid JSON"),
    ("flashrag", '{"id": "a", "question": "who wrote hamlet", "retrieval_result": [{"id": "1"}]}\n'
                 '{"id": "b", "question": "largest planet?", "retrieval_result": [{"contents": "x"}]}\n',
     2, "item 1: retrieval_result[0]: missing 'id'"),
    ("flashrag", '{"id": "a", "question": "who wrote hamlet", "retrieval_result": []}\n{"id": "b", "question": \n',
     2, "invalid JSON line"),
    ("flashrag", '[\n {"id": "a", "question": "who wrote hamlet", "output": {}}\n]', 2,
     "item 0: missing 'retrieval_result' (FlashRAG's Dataset.save writes it in 'output')"),
    ("flashrag", '{"id": "a", "question": "who wrote hamlet", "retrieval_result": [{"id": "1", "score": 1}, {"id": "2"}]}\n',
     1, "retrieval_result[1]: missing 'score'"),
    ("rankify-dataset", '[\n {"question": "who wrote hamlet", "ctxs": [{"id": 1, "score": 1.0}]},\n'
                        ' {"question": "largest planet?", "ctxs": [{"id": 4, "score": 1.0, "has_answer": "yes"}]}\n]',
     3, "item 1: ctxs[0]: 'has_answer' must be true or false, got 'yes'"),
    ("rankify-dataset", '{"question": "who wrote hamlet", "ctxs": [{"id": 1, "score": 1.0}, {"id": 4, "score": 2.0}]}\n',
     1, "item 0: question 'q0': scores are not in descending order"),
    ("rankify-dataset", '{"question": "who wrote hamlet", "ctxs": [{"id": 1.5, "score": 1.0}]}\n',
     1, "ctxs[0]: passage id must be a string or integer, got float"),
    ("rankify-dataset", '{"question": "who is there", "ctxs": []}\n', 1, "is not a question of the suite"),
    ("rankify-reranked", '{"question": "who wrote hamlet", "ctxs": []}\n', 1, "missing 'reranked_ctxs'"),
]


@pytest.mark.parametrize("fmt, content, line, problem", MALFORMED)
def test_malformed_files_give_one_line_with_file_and_line(tmp_path, fmt, content, line, problem):
    path = tmp_path / "bad.run"
    path.write_text(content)
    for read in (lambda: read_run(path, small_suite(), format=fmt), lambda: score_other(path, small_suite(), fmt)):
        with pytest.raises(InputFileError) as exc:
            read()
        message = str(exc.value)
        assert "\n" not in message
        assert message.startswith(f"{path}:{line}: "), message
        assert problem in message, message


@pytest.mark.parametrize(
    "name, content, line",
    [
        ("bad.tsv", "P17-0001\t599\t2.0\nP17-0001\t1461\toops\n", 2),
        ("bad.json", '{\n"P17-0001": {"599": 2.0},\n"P17-0002": {"1461": true}\n}', 3),
        ("bad.jsonl", '{"id": "a", "question": "Which country is Lamel Region located in?", "golden_answers": [], '
                      '"output": {"retrieval_result": [{"id": "599", "contents": "t\\nx"}]}}\n{"id": "b", "golden_answers": []}\n', 2),
        ("bad-rankify.json", '[\n {"question": "Which country is Lamel Region located in?", "answers": [],\n'
                             '  "ctxs": [{"score": 1.0, "has_answer": true, "id": "599"}, {"score": 2.0, "has_answer": false, "id": 1461}]}\n]', 2),
    ],
)
def test_cli_exits_2_with_one_line(capsys, test_registries, tmp_path, name, content, line):
    path = tmp_path / name
    path.write_text(content)
    code, _out, err = score_cli(capsys, "score", "-s", "demo", "--run", str(path), "--results-dir", str(tmp_path / "r"), "--no-progress")
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{path}:{line}: " in err
    assert not (tmp_path / "r").exists()


# ---- streaming ------------------------------------------------------------------------------


class CountingReader:
    """A binary stream that counts the bytes read from it."""

    def __init__(self, data: bytes):
        self.body = io.BytesIO(data)
        self.read_bytes = 0

    def read(self, size=-1):
        data = self.body.read(size)
        self.read_bytes += len(data)
        return data


def _big(fmt: str, questions: int = 400, hits: int = 50) -> bytes:
    ranking = {f"q{i}": [str(i * hits + j) for j in range(hits)] for i in range(questions)}
    if fmt == "tevatron":
        return "".join(f"{q}\t{p}\t{_score(j)}\n" for q, ps in ranking.items() for j, p in enumerate(ps)).encode()
    if fmt == "ranx":
        return json.dumps({q: {p: _score(j) for j, p in enumerate(ps)} for q, ps in ranking.items()}).encode()
    if fmt == "flashrag":
        return "".join(
            json.dumps({"id": q, "question": q, "golden_answers": [], "output": {"retrieval_result": [
                {"id": p, "contents": f'"T{p}"\nsome text of passage {p}'} for p in ps]}}) + "\n"
            for q, ps in ranking.items()
        ).encode()
    docs = [{"question": q, "answers": [], "ctxs": [{"score": _score(j), "has_answer": False, "id": int(p)} for j, p in enumerate(ps)]}
            for q, ps in ranking.items()]
    return json.dumps(docs, indent=4).encode()


@pytest.mark.parametrize("fmt", ["tevatron", "ranx", "flashrag", "rankify-dataset"])
def test_readers_yield_before_reading_the_whole_file(fmt):
    data = _big(fmt)
    body = CountingReader(data)
    entries = run_format(fmt).entries(body, "big", 8192)
    first = next(entries)
    assert first.ids[:2] == ["0", "1"] and len(first.ids) == 50
    assert body.read_bytes < len(data) / 20, (body.read_bytes, len(data))
    second = next(entries)
    assert second.ids[0] == "50"
    assert body.read_bytes < len(data) / 10
    assert sum(1 for _ in entries) == 398
    assert body.read_bytes == len(data)


def test_read_other_keeps_only_the_top_hits_asked_for(tmp_path):
    path = tmp_path / "big.tsv"
    path.write_bytes(_big("tevatron", questions=3, hits=50))
    questions = [Question(id=f"q{i}", text=f"q{i}", answers=("x",)) for i in range(3)]
    rankings, missing, _mismatched = read_other(path, questions, "tevatron", keep=5)
    assert [len(h) for h in rankings.values()] == [5, 5, 5] and missing == ()
    assert [len(h) for h in read_run(path, questions, format="tevatron", keep=3).rankings.values()] == [3, 3, 3]

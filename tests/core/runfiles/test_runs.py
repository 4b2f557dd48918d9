"""harness.runfiles.readers: reading, writing and scoring run files, checked against pyserini's evaluator.

The key check (``test_same_numbers_as_pyserini_*``) writes pyserini DPR-run files for generated
rankings over REAL questions (NQ test and TriviaQA test in string mode, CuratedTREC in regex
mode, from ``../shared/data``) and runs pyserini 1.6's own ``evaluate_dpr_retrieval`` on them
(imported directly: the module pulls in neither the JVM nor torch). Its per-question 0/1 top-k
hits are captured by replacing the module's ``np`` with a recorder, so the comparison is exact
per question, not only on the printed four decimals (which are compared too, through the CLI).

Where pyserini and the harness (which follows DPR) differ by design, a test documents it:
missing questions (pyserini divides by the questions in the file), ``has_answer`` flags
(pyserini trusts them, the harness recomputes), and stdlib ``re`` versus ``regex`` in regex mode
(no difference shows up on CuratedTREC; see ``test_curated_patterns_compile_alike_in_re_and_regex``).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

import pytest
import regex

import helpers.qa_data as qa_data
from helpers.regex_witness import regex_witness
from harness.errors import HarnessError, InputFileError
from harness.scoring.matching import has_answer
from harness.data.questions import read_questions
from harness.runfiles.ranks import first_hit_ranks_for_run, flag_disagreements, score_run
from harness.runfiles.readers import Run, RunHit, RunWarning, detect_format, read_run
from harness.runfiles.writers import write_dpr_json, write_pyserini_json, write_trec
from harness.scoring.ranks import first_hit_ranks, top_k_accuracy
from harness.api import InMemoryCorpus, Part, Passage, Question, Suite

TOPK = [1, 5, 20, 100]
#: Contexts per question given pyserini-computed has_answer flags (its has_answers is slow).
FLAGGED = 5


# ---- small fixtures -------------------------------------------------------------------------


def small_questions() -> tuple[Question, ...]:
    return (
        Question(id="0", text="who wrote hamlet", answers=("William Shakespeare", "Shakespeare")),
        Question(id="1", text="capital of france", answers=("Paris",)),
        Question(id="2", text="largest planet", answers=("Jupiter",)),
    )


def small_corpus() -> InMemoryCorpus:
    return InMemoryCorpus(
        "small",
        [
            Passage(id="1", title="Hamlet", text="Hamlet is a tragedy by William Shakespeare."),
            Passage(id="2", title="Paris", text="The city on the Seine is the capital."),  # answer in title only
            Passage(id="3", title="France", text="Paris is the capital of France."),
            Passage(id="4", title="Planets", text="Saturn has rings."),
            Passage(id="5", title="Jupiter", text="Jupiter is the largest planet."),
        ],
    )


def small_run() -> Run:
    return Run.from_rankings(
        small_questions(),
        [
            [("4", 3.5), ("1", 2.25), ("3", -1.0)],
            [("2", 10.0), ("3", 9.0), ("1", 1e-3)],
            [],  # question 2 retrieved nothing
        ],
    )


def ids_and_scores(run: Run) -> dict[str, list[tuple[str, float]]]:
    return {qid: [(h.passage_id, h.score) for h in hits] for qid, hits in run.rankings.items()}


def one_line_error(exc_info, path: Path, line: int | None = None) -> str:
    message = str(exc_info.value)
    assert "\n" not in message
    prefix = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(prefix), message
    return message


# ---- round trips ----------------------------------------------------------------------------


def test_trec_round_trip_keeps_rankings_and_scores(tmp_path):
    run = small_run()
    path = write_trec(tmp_path / "run.trec", run, tag="bm25")
    lines = path.read_text().splitlines()
    assert lines[0] == "0 Q0 4 1 3.5 bm25"
    assert detect_format(path) == "trec"
    back = read_run(path, small_questions())
    assert ids_and_scores(back) == ids_and_scores(run)
    assert back.missing == ("2",)
    assert back.format == "trec"


def test_trec_lines_are_ordered_by_rank_column_not_file_order(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(
        "1 Q0 3 2 9.0 t\n"
        "0 Q0 1 3 1.0 t\n"
        "1 Q0 2 1 10.0 t\n"
        "0 Q0 4 1 3.0 t\n"
        "\n"
        "0 Q0 5 2 2.0 t\n"
    )
    run = read_run(path, small_questions())
    assert [h.passage_id for h in run.rankings["0"]] == ["4", "5", "1"]
    assert [h.passage_id for h in run.rankings["1"]] == ["2", "3"]
    # rank ties keep file order (stable sort)
    path.write_text("0 Q0 1 1 1.0 t\n0 Q0 4 1 3.0 t\n")
    assert [h.passage_id for h in read_run(path, small_questions()).rankings["0"]] == ["1", "4"]


def test_dpr_json_round_trip_with_flags_from_harness_matcher(tmp_path):
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    path = write_dpr_json(tmp_path / "dpr.json", run, questions, corpus, mode="string")
    assert detect_format(path) == "dpr-json"
    data = json.loads(path.read_text())
    assert [item["question"] for item in data] == [q.text for q in questions]
    assert data[0]["ctxs"][1] == {
        "id": "1",
        "title": "Hamlet",
        "text": "Hamlet is a tragedy by William Shakespeare.",
        "score": "2.25",
        "has_answer": True,
    }
    back = read_run(path, questions)
    assert ids_and_scores(back) == ids_and_scores(run)
    assert back.missing == ()  # DPR results list every question, here one with no ctxs
    for question in questions:
        for hit in back.rankings[question.id]:
            passage = corpus.get(hit.passage_id)
            assert (hit.title, hit.text) == (passage.title, passage.text)
            assert hit.has_answer == has_answer(question.answers, passage.text, mode="string")
    # the title "Paris" of passage 2 is never matched: question 1's first hit is passage 3
    ranks = first_hit_ranks_for_run(back, questions, mode="string")
    assert ranks == [1, 1, None]
    assert ranks == first_hit_ranks_for_run(run, questions, mode="string", corpus=corpus)
    assert flag_disagreements(back, questions, mode="string") == []


def test_wiki_prefix_and_integer_ids_become_bare_ids(tmp_path):
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    path = write_dpr_json(tmp_path / "dpr.json", run, questions, corpus, mode="string", id_prefix="wiki:")
    assert json.loads(path.read_text())[0]["ctxs"][0]["id"] == "wiki:4"
    assert ids_and_scores(read_run(path, questions)) == ids_and_scores(run)
    path.write_text(json.dumps([{"question": "who wrote hamlet", "answers": [], "ctxs": [{"id": 1, "score": 2}]}]))
    assert read_run(path, questions).rankings["0"] == (RunHit(passage_id="1", score=2.0),)
    trec = tmp_path / "run.trec"
    trec.write_text("0 Q0 wiki:5 1 1.0 t\n")
    assert read_run(trec, questions).rankings["0"][0].passage_id == "5"


def test_pyserini_json_round_trip(tmp_path):
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    path = write_pyserini_json(tmp_path / "ps.json", run, questions, corpus, mode="string")
    assert detect_format(path) == "pyserini-json"
    data = json.loads(path.read_text())
    assert list(data) == ["0", "1"]  # a question without hits is left out, as pyserini does
    assert data["1"]["contexts"][0] == {"docid": "2", "score": "10.0", "text": "Paris\nThe city on the Seine is the capital.", "has_answer": False}
    back = read_run(path, questions)
    assert ids_and_scores(back) == ids_and_scores(run)
    assert back.missing == ("2",)
    assert back.rankings["1"][0].title == "Paris"
    with pytest.warns(RunWarning, match="1 of 3 questions are missing"):
        assert first_hit_ranks_for_run(back, questions, mode="string") == [1, 1, None]


# ---- matching file questions to a suite -----------------------------------------------------


def test_qids_are_ids_else_positions(tmp_path):
    questions = tuple(Question(id=f"q{i}", text=f"question {i}", answers=("x",)) for i in range(3))
    path = tmp_path / "run.trec"
    path.write_text("q2 Q0 a 1 1.0 t\nq0 Q0 b 1 1.0 t\n")
    run = read_run(path, questions)
    assert list(run.rankings) == ["q0", "q1", "q2"]  # suite order, whatever the file order
    assert run.missing == ("q1",)
    path.write_text("2 Q0 a 1 1.0 t\n0 Q0 b 1 1.0 t\n")  # pyserini numbers DPR topics 0..n-1
    assert ids_and_scores(read_run(path, questions)) == ids_and_scores(run)

    path.write_text("0 Q0 a 1 1.0 t\n3 Q0 b 1 1.0 t\n")
    with pytest.raises(InputFileError) as exc:
        read_run(path, questions)
    assert "unknown question id '3'" in one_line_error(exc, path, 2)
    path.write_text("q0 Q0 a 1 1.0 t\n1 Q0 b 1 1.0 t\n")
    with pytest.raises(InputFileError, match="mix suite question ids"):
        read_run(path, questions)
    path.write_text("1 Q0 a 1 1.0 t\n01 Q0 b 1 1.0 t\n")
    with pytest.raises(InputFileError, match="same suite question 'q1'"):
        read_run(path, questions)


def test_multi_part_suites_take_ids_only(tmp_path):
    parts = tuple(
        Part(name=rel, questions=tuple(Question(id=f"{rel}-{i}", text=f"{rel} {i}", answers=("x",)) for i in range(2)))
        for rel in ("P19", "P20")
    )
    suite = Suite(name="eq", parts=parts, corpus=InMemoryCorpus("c", [Passage(id="a", title="", text="x")]))
    path = tmp_path / "run.trec"
    path.write_text("P20-1 Q0 a 1 1.0 t\n")
    run = read_run(path, suite)
    with pytest.warns(RunWarning):
        assert score_run(suite, run) == {"P19": {"P19-0": None, "P19-1": None}, "P20": {"P20-0": None, "P20-1": 0}}
    path.write_text("0 Q0 a 1 1.0 t\n")
    with pytest.raises(InputFileError, match="positions are not used for multi-part suites"):
        read_run(path, suite)


def test_dpr_json_is_positional_and_question_text_must_match(tmp_path):
    questions = small_questions()
    path = tmp_path / "dpr.json"
    item = lambda q: {"question": q, "answers": [], "ctxs": []}  # noqa: E731
    path.write_text(json.dumps([item("who wrote hamlet"), item("capital of spain")]))
    with pytest.raises(InputFileError) as exc:
        read_run(path, questions)
    message = one_line_error(exc, path)
    assert "item 1: question 'capital of spain' does not match the suite's question '1' 'capital of france'" in message
    path.write_text(json.dumps([item("who wrote hamlet")] * 4))
    with pytest.raises(InputFileError, match="run has 4 questions but the suite has 3"):
        read_run(path, questions)
    # the references' only question normalisation: ’ -> '
    q = (Question(id="0", text="who’s there", answers=("x",)),)
    path.write_text(json.dumps([item("who's there")]))
    assert read_run(path, q).missing == ()


def test_answers_differing_from_the_suite_are_reported(tmp_path):
    questions = small_questions()
    path = tmp_path / "dpr.json"
    path.write_text(json.dumps([{"question": "who wrote hamlet", "answers": ["Marlowe"], "ctxs": [{"id": "1", "score": 1, "text": "by William Shakespeare"}]}]))
    run = read_run(path, questions)
    assert run.answer_mismatches == ("0",)
    with pytest.warns(RunWarning) as record:
        assert first_hit_ranks_for_run(run, questions, mode="string") == [0, None, None]  # the suite's answers
    assert any("answers in the file differ" in str(w.message) for w in record)


def test_passages_need_text_or_a_corpus(tmp_path):
    questions, run = small_questions(), small_run()
    with pytest.raises(HarnessError, match="no corpus was given"):
        first_hit_ranks_for_run(run, questions, mode="string")
    corpus = InMemoryCorpus("tiny", [Passage(id="4", title="", text="")])
    with pytest.raises(HarnessError, match="passage '1', which is not in corpus 'tiny'"):
        first_hit_ranks_for_run(run, questions, mode="string", corpus=corpus)
    with pytest.raises(ValueError, match="not aligned"):
        first_hit_ranks_for_run(run, questions[:2], mode="string", corpus=corpus)


# ---- malformed files ------------------------------------------------------------------------

TREC_CASES = [
    ("0 Q0 1 1 1.0 t\n0 Q0 2 2 0.5\n", 2, "expected 6 whitespace-separated columns"),
    ("0 Q0 1 1 high t\n", 1, "score must be a number, got 'high'"),
    ("0 Q0 1 1 nan t\n", 1, "score is NaN"),
    ("0 Q0 1 first 1.0 t\n", 1, "rank must be an integer"),
    ("0 Q0 1 1 1.0 t\n0 Q0 1 2 0.5 t\n", 2, "passage '1' listed twice for question '0' (first on line 1)"),
    ("0 Q0 1 1 1.0 t\nzz Q0 1 1 1.0 t\n", 2, "unknown question id 'zz'"),
]


@pytest.mark.parametrize("content, line, problem", TREC_CASES)
def test_malformed_trec_runs_name_file_and_line(tmp_path, content, line, problem):
    path = tmp_path / "run.trec"
    path.write_text(content)
    with pytest.raises(InputFileError) as exc:
        read_run(path, small_questions(), format="trec")
    assert problem in one_line_error(exc, path, line)


#: (format, content, line, problem): a record's problem names the line the record starts on.
JSON_CASES = [
    ("dpr-json", '[{"question": "who wrote hamlet",\n "ctxs": [}]', 2, "invalid JSON"),
    ("dpr-json", '{"0": []}', None, "expected a JSON list"),
    ("dpr-json", '[{"question": "who wrote hamlet", "ctxs": {"id": 1}}]', 1, "item 0: 'ctxs' must be a list, got dict"),
    ("dpr-json", '[{"question": "who wrote hamlet"}]', 1, "item 0: missing 'ctxs'"),
    ("dpr-json", '[{"ctxs": [{"score": 1}]}]', 1, "item 0: ctxs[0]: missing 'id'"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": "x"}]}]', 1, "item 0: ctxs[0]: score must be a number, got 'x'"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": 1, "has_answer": "yes"}]}]', 1, "'has_answer' must be true or false"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": 1, "text": 5}]}]', 1, "'text' must be a string"),
    ("pyserini-json", '{"0": {"contexts": 3}}', 1, "question '0': 'contexts' must be a list, got int"),
    ("pyserini-json", '{"0": {"contexts": [{"docid": "1", "score": "1", "text": "no title line"}]}}', 1, "'text' has no newline"),
    ("pyserini-json", '{"7": {"contexts": []}}', None, "unknown question id '7'"),
    ("pyserini-json", '{"1": {"question": "capital of spain", "contexts": []}}', None, "does not match the suite's question '1'"),
    ("pyserini-json", "[]", None, "expected a JSON object"),
    # What orjson refuses and the standard parser reads is read the same way as before:
    ("pyserini-json", '{"0": {"contexts": [{"docid": "1", "score": NaN}]}}', 1, "score is NaN"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": 1e999999}], "question": 7}]', 1, "'question' must be a string"),
    ("dpr-json", '[{"ctxs": [{"id": "", "score": 1}]}]', 1, "item 0: ctxs[0]: empty passage id"),
    ("dpr-json", '[{"ctxs": [{"id": "wiki:", "score": 1}]}]', 1, "item 0: ctxs[0]: empty passage id"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": true}]}]', 1, "score must be a number, got bool"),
    ("dpr-json", '[{"ctxs": [{"id": "1", "score": 1, "title": 3}]}]', 1, "'title' must be a string"),
    ("dpr-json", '[\n{"ctxs": []},\n{"ctxs": [{"id": "1", "score": "x"}]}]', 3, "item 1: ctxs[0]: score must be a number"),
    ("pyserini-json", '{\n"0": {"contexts": []},\n"1": {"contexts": [{"docid": "1", "score": NaN}]}}', 3, "question '1': contexts[0]: score is NaN"),
]


def test_json_runs_read_alike_with_orjson_and_json(tmp_path, monkeypatch):
    """The fast path (orjson, plain contexts) and the standard one give the same run, BOM and
    big integers, lone surrogates, wiki: ids, numeric-string scores and integer ids included."""
    import builtins

    plain = (
        '\ufeff[{"question": "who wrote hamlet", "ctxs": [{"id": "wiki:12", "score": "80.5", "text": "x y"},'
        ' {"id": 4, "score": 3, "title": "t", "text": "Shakespeare", "has_answer": true}]},'
        ' {"ctxs": [{"id": "7", "score": 1.5}]}]'
    )
    odd = '[{"ctxs": [{"id": 99999999999999999999999, "score": 1, "text": "x \\ud800 y"}]}]'  # orjson refuses
    runs = {}
    for name, content in (("plain", plain), ("odd", odd)):
        (tmp_path / f"{name}.json").write_text(content, encoding="utf-8")
        runs[name, "orjson"] = read_run(tmp_path / f"{name}.json", small_questions(), format="dpr-json")
    real_import = builtins.__import__

    def no_orjson(name, *args, **kwargs):
        if name == "orjson":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_orjson)
    for name in ("plain", "odd"):
        assert read_run(tmp_path / f"{name}.json", small_questions(), format="dpr-json").rankings == runs[name, "orjson"].rankings
    first = list(runs["plain", "orjson"].rankings.values())[0]
    assert [h.passage_id for h in first] == ["12", "4"]
    (odd_hit,) = list(runs["odd", "orjson"].rankings.values())[0]
    assert odd_hit.passage_id == "99999999999999999999999" and odd_hit.text == "x \ud800 y"
    assert first[0].score == 80.5 and first[1].has_answer is True and first[1].title == "t"


@pytest.mark.parametrize("fmt, content, line, problem", JSON_CASES)
def test_malformed_json_runs_give_one_line(tmp_path, fmt, content, line, problem):
    path = tmp_path / "run.json"
    path.write_text(content)
    with pytest.raises(InputFileError) as exc:
        read_run(path, small_questions(), format=fmt)
    assert problem in one_line_error(exc, path, line)


def test_detect_format_refuses_unknown_content(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("0 1 2\n")
    with pytest.raises(InputFileError, match="cannot tell the run format"):
        detect_format(path)
    path.write_text("  \n")
    with pytest.raises(InputFileError, match="empty run file"):
        read_run(path, small_questions())
    with pytest.raises(InputFileError, match="cannot read run file"):
        read_run(tmp_path / "absent.trec", small_questions())


# ---- pyserini's evaluator as the oracle -----------------------------------------------------


@contextlib.contextmanager
def pyserini_recorder():
    """Run pyserini's ``evaluate_retrieval`` and capture its per-question 0/1 hit lists per k."""
    ev = pytest.importorskip("pyserini.eval.evaluate_dpr_retrieval")
    recorded: list[list[int]] = []

    class NumpyRecorder:
        @staticmethod
        def mean(values):
            recorded.append(list(values))
            return sum(values) / len(values)

    with mock.patch.object(ev, "np", NumpyRecorder), mock.patch.object(ev, "tqdm", lambda it: it):
        yield ev, recorded


def pyserini_hits(path: Path, regex_mode: bool, capsys) -> tuple[dict[int, list[int]], list[str]]:
    with pyserini_recorder() as (ev, recorded):
        capsys.readouterr()
        ev.evaluate_retrieval(str(path), TOPK, regex_mode)
        printed = capsys.readouterr().out.splitlines()
    assert len(recorded) == len(TOPK)
    return dict(zip(TOPK, recorded)), printed


def harness_hits(ranks, k):
    return [1 if r is not None and r < k else 0 for r in ranks]


def generated_run(questions, splice_answers, *, seed, pool_size=3000, words=30):
    """Generated rankings over real ``questions``: answer strings spliced into passages at many ranks."""
    gen = qa_data.build_run(
        [(q.text, list(a)) for q, a in zip(questions, splice_answers)],
        pool_size=pool_size,
        depth=100,
        words_per_passage=words,
        seed=seed,
    )
    corpus = InMemoryCorpus(
        f"generated-{seed}", [Passage(id=pid, title=gen.titles[pid], text=gen.texts[pid]) for pid in gen.texts]
    )
    run = Run.from_rankings(questions, [[(pid, 100.0 - i) for i, pid in enumerate(r)] for r in gen.rankings])
    return run, corpus


def check_against_pyserini(tmp_path, capsys, questions, run, corpus, mode):
    regex_mode = mode == "regex"
    path = write_pyserini_json(tmp_path / "run.json", run, questions, corpus, mode=mode, has_answer=False)
    expected, printed = pyserini_hits(path, regex_mode, capsys)

    from_text = first_hit_ranks_for_run(read_run(path, questions), questions, mode=mode)
    trec = write_trec(tmp_path / "run.trec", run)
    from_corpus = first_hit_ranks_for_run(read_run(trec, questions), questions, mode=mode, corpus=corpus)
    dpr = write_dpr_json(tmp_path / "dpr.json", run, questions, corpus, mode=mode)
    dpr_run = read_run(dpr, questions)
    from_dpr_text = first_hit_ranks_for_run(dpr_run, questions, mode=mode)
    assert from_text == from_corpus == from_dpr_text
    for k in TOPK:
        assert harness_hits(from_text, k) == expected[k], f"top-{k} differs from pyserini"
    assert printed == [f"Top{k}\taccuracy: {top_k_accuracy(from_text, k):.4f}" for k in TOPK]
    # DPR's flags, as the harness writes them, are what the harness recomputes
    assert flag_disagreements(dpr_run, questions, mode=mode) == []

    # the usual pyserini file: has_answer flags computed by pyserini's own has_answers on the
    # text part of title\ntext (as convert_trec_run_to_dpr_retrieval_run.py does); its evaluator
    # trusts them, the harness recomputes, and the numbers agree
    ev = pytest.importorskip("pyserini.eval.evaluate_dpr_retrieval")
    tokenizer = ev.SimpleTokenizer()
    data = json.loads(path.read_text())
    for record in data.values():
        for ctx in record["contexts"][:FLAGGED]:  # the rest: pyserini computes has_answer itself
            _title, text = ctx["text"].split("\n")
            ctx["has_answer"] = ev.has_answers(text, record["answers"], tokenizer, regex_mode)
    flagged = tmp_path / "flagged.json"
    flagged.write_text(json.dumps(data))
    flagged_expected, _ = pyserini_hits(flagged, regex_mode, capsys)
    assert flagged_expected == expected
    assert flag_disagreements(read_run(flagged, questions), questions, mode=mode) == []
    return from_text


def assert_spread(ranks, n):
    """The generated run exercises hits at top-1, ranks 1-99 and misses."""
    assert sum(r == 0 for r in ranks) > 0.02 * n
    assert sum(r is not None and 5 <= r < 100 for r in ranks) > 0.05 * n
    assert sum(r is None for r in ranks) > 0.05 * n


@pytest.mark.parametrize(
    "name, relative, fmt, count",
    [
        ("nq-test", "dpr-qas/topics.dpr.nq.test.txt", "dpr-tsv", 600),
        ("trivia-test", "dpr-qas/topics.dpr.trivia.test.txt", "dpr-tsv", 200),
    ],
)
def test_same_numbers_as_pyserini_string_mode(tmp_path, capsys, shared_data, name, relative, fmt, count):
    questions = read_questions(shared_data / relative, fmt)
    questions = tuple(random.Random(name).sample(questions, count))
    questions = tuple(Question(id=str(i), text=q.text, answers=q.answers) for i, q in enumerate(questions))
    run, corpus = generated_run(questions, [q.answers for q in questions], seed=len(name))
    ranks = check_against_pyserini(tmp_path, capsys, questions, run, corpus, "string")
    assert_spread(ranks, count)


def test_same_numbers_as_pyserini_regex_mode_curated_trec(tmp_path, capsys, shared_data):
    questions = read_questions(shared_data / "dpr-qas/topics.dpr.curated.test.txt", "jsonl")
    assert len(questions) == 694
    rng = random.Random(7)
    witnesses = [[w for w in (regex_witness(a, rng, single_line=True) for a in q.answers) if w] for q in questions]
    assert sum(bool(w) for w in witnesses) > 600
    run, corpus = generated_run(questions, witnesses, seed=3, pool_size=3000)
    ranks = check_against_pyserini(tmp_path, capsys, questions, run, corpus, "regex")
    assert_spread(ranks, len(questions))
    # the same run scored in string mode is much lower: regex mode is not optional for this suite
    string_ranks = first_hit_ranks_for_run(run, questions, mode="string", corpus=corpus)
    assert top_k_accuracy(string_ranks, 100) < top_k_accuracy(ranks, 100)


def test_pyserini_command_line_prints_the_harness_numbers(tmp_path, shared_data):
    pytest.importorskip("pyserini.eval.evaluate_dpr_retrieval")
    questions = read_questions(shared_data / "dpr-qas/topics.dpr.curated.test.txt", "jsonl")[:300]
    rng = random.Random(11)
    witnesses = [[w for w in (regex_witness(a, rng, single_line=True) for a in q.answers) if w] for q in questions]
    run, corpus = generated_run(questions, witnesses, seed=5, pool_size=1500)
    path = write_pyserini_json(tmp_path / "run.json", run, questions, corpus, mode="regex", has_answer=False)
    out = subprocess.run(
        [sys.executable, "-m", "pyserini.eval.evaluate_dpr_retrieval", "--retrieval", str(path), "--topk", *map(str, TOPK), "--regex"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    ranks = first_hit_ranks_for_run(read_run(path, questions), questions, mode="regex")
    assert out == [f"Top{k}\taccuracy: {top_k_accuracy(ranks, k):.4f}" for k in TOPK]


def test_pyserini_matches_the_second_line_of_title_newline_text(tmp_path, capsys):
    """What evaluate_dpr_retrieval matches: ``ctx['text'].split('\\n')[1]``, never the title.

    For pyserini's own files (one newline) that is DPR's text-only rule. A stored text with more
    lines is matched on its second line only; the harness mirrors that (DPR would match all of it).
    """
    questions = small_questions()
    path = tmp_path / "run.json"

    def ctx(docid, text):
        return {"docid": docid, "score": "1.0", "text": text}

    data = {
        "0": {"question": "who wrote hamlet", "answers": ["William Shakespeare", "Shakespeare"],
              "contexts": [ctx("1", "Shakespeare\nHamlet is a tragedy."), ctx("2", "Hamlet\nA play by Shakespeare.")]},
        "1": {"question": "capital of france", "answers": ["Paris"],
              "contexts": [ctx("3", "France\nThe capital is\nParis."), ctx("4", "Paris\nParis")]},
        "2": {"question": "largest planet", "answers": ["Jupiter"], "contexts": [ctx("5", "x\nJupiter\n")]},
    }
    path.write_text(json.dumps(data))
    expected, _ = pyserini_hits(path, False, capsys)
    run = read_run(path, questions)
    assert run.rankings["1"][0].text == "The capital is"
    ranks = first_hit_ranks_for_run(run, questions, mode="string")
    assert ranks == [1, 1, 0]
    for k in TOPK:
        assert harness_hits(ranks, k) == expected[k]


# ---- where pyserini and DPR (and so the harness) differ by design ---------------------------


def test_divergence_missing_questions_change_pyserini_denominator(tmp_path, capsys):
    """Pyserini averages over the questions in the file; DPR and the harness over the suite."""
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    path = write_pyserini_json(tmp_path / "run.json", run, questions, corpus, mode="string", has_answer=False)
    expected, _ = pyserini_hits(path, False, capsys)
    assert expected[5] == [1, 1]  # question 2 is not in the file: pyserini reports 2/2
    with pytest.warns(RunWarning, match="1 of 3 questions are missing"):
        ranks = first_hit_ranks_for_run(read_run(path, questions), questions, mode="string")
    assert top_k_accuracy(ranks, 5) == 2 / 3


def test_divergence_pyserini_trusts_has_answer_flags(tmp_path, capsys):
    """Pyserini's evaluator uses a context's has_answer when present; the harness recomputes."""
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    path = write_pyserini_json(tmp_path / "run.json", run, questions, corpus, mode="string")
    data = json.loads(path.read_text())
    data["1"]["contexts"][0]["has_answer"] = True  # the title-only "Paris" passage, as a title+text matcher would flag it
    path.write_text(json.dumps(data))
    expected, _ = pyserini_hits(path, False, capsys)
    assert expected[1] == [0, 1]
    back = read_run(path, questions)
    assert flag_disagreements(back, questions, mode="string") == [("1", 0, "2", True, False)]
    with pytest.warns(RunWarning):
        assert first_hit_ranks_for_run(back, questions, mode="string")[1] == 1


def test_curated_patterns_compile_alike_in_re_and_regex(shared_data):
    """Pyserini compiles CuratedTREC answers with stdlib ``re``, DPR (and the harness) with ``regex``.

    After NFD both reject the same three patterns (an escaped accented letter becomes a bad
    escape ``\\e``/``\\o``) and accept the rest; the generated-run comparison above finds no
    question where the two modules disagree.
    """
    import unicodedata

    questions = read_questions(shared_data / "dpr-qas/topics.dpr.curated.test.txt", "jsonl")
    rejected = {"re": [], "regex": []}
    for q in questions:
        for answer in q.answers:
            pattern = unicodedata.normalize("NFD", answer)
            for name, module in (("re", re), ("regex", regex)):
                try:
                    module.compile(pattern, module.IGNORECASE | module.UNICODE | module.MULTILINE)
                except Exception:
                    rejected[name].append(answer)
    assert rejected["re"] == rejected["regex"]
    assert len(rejected["re"]) == 3


def test_first_hit_ranks_for_run_equals_scoring_first_hit_ranks():
    questions, corpus, run = small_questions(), small_corpus(), small_run()
    direct = first_hit_ranks(questions, run.passage_ids(), lambda pid: corpus.get(pid).text, mode="string")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert first_hit_ranks_for_run(run, questions, mode="string", corpus=corpus) == direct

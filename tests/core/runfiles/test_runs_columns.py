"""The fast JSON run path (harness.runfiles.columns) and the two-process scorer (harness.runfiles.split)
against the general reader and the one-piece scorer: same runs, same ranks, same errors."""

from __future__ import annotations

import json
import random

import pytest

import harness.runfiles.columns as columns_module
import harness.runfiles.split as split_module
from harness.api import InMemoryCorpus, Part, Passage, Question, Suite
from harness.errors import HarnessError, InputFileError
from harness.runfiles.columns import ColumnarRankings, read_columns
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import read_run
from harness.runfiles.split import score_json_split, split_point
from harness.scoring.rankings import check_columns, check_ranking

QUESTIONS = (
    Question(id="0", text="who wrote hamlet", answers=("William Shakespeare", "Shakespeare")),
    Question(id="1", text="capital of france", answers=("Paris",)),
    Question(id="2", text="largest planet", answers=("Jupiter",)),
)


#: The JSON shape each format's engine reads (its ``JsonLayout.shape``).
SHAPE = {"dpr-json": "list", "pyserini-json": "object"}


def read_both(path, questions=QUESTIONS, fmt=None, monkeypatch=None):
    """The run read by the fast path and by the general reader (fast path switched off)."""
    fast = read_run(path, questions, format=fmt)
    monkeypatch.setattr(columns_module, "msgspec", None)
    slow = read_run(path, questions, format=fmt)
    monkeypatch.undo()
    return fast, slow


PYSERINI = {
    "0": {
        "question": "who wrote hamlet",
        "answers": ["William Shakespeare", "Shakespeare"],
        "contexts": [
            {"docid": "wiki:12", "score": "80.5", "text": "Hamlet\nA play by William Shakespeare.", "has_answer": True},
            {"docid": 4, "score": 3, "text": "Title \\n odd\u000aline two\nthree"},
            {"docid": "9", "score": 2.5, "text": None},
            {"docid": "10", "score": 2.5},
        ],
    },
    "2": {"answers": ["Jupiter"], "contexts": [{"docid": "5", "score": -1e300, "text": "Π\nΣίσυφος Jupiter"}]},
}

DPR = [
    {"question": "who wrote hamlet", "answers": ["x"], "ctxs": [
        {"id": "wiki:1", "score": "3.5", "title": "Hamlet", "text": "By \\n Shakespeare", "has_answer": False},
        {"id": 7, "score": 1, "title": None, "text": None},
    ]},
    {"ctxs": []},
]


@pytest.mark.parametrize("fmt, content", [("pyserini-json", PYSERINI), ("dpr-json", DPR)])
@pytest.mark.parametrize("indent", [None, 4])
@pytest.mark.parametrize("bom", [False, True])
def test_fast_path_reads_what_the_general_reader_reads(tmp_path, monkeypatch, fmt, content, indent, bom):
    path = tmp_path / "run.json"
    path.write_text(("\ufeff" if bom else "") + json.dumps(content, indent=indent, ensure_ascii=False), encoding="utf-8")
    fast, slow = read_both(path, fmt=fmt, monkeypatch=monkeypatch)
    assert isinstance(fast.rankings, ColumnarRankings) and not isinstance(slow.rankings, ColumnarRankings)
    assert dict(fast.rankings) == dict(slow.rankings)
    assert (fast.missing, fast.answer_mismatches, fast.format) == (slow.missing, slow.answer_mismatches, slow.format)
    if fmt == "pyserini-json":
        hits = fast.rankings["0"]
        assert [h.passage_id for h in hits] == ["12", "4", "9", "10"]
        assert hits[1].title == "Title \\n odd" and hits[1].text == "line two"
        assert hits[2].text is None and fast.rankings["2"][0].text == "Σίσυφος Jupiter"


@pytest.mark.parametrize(
    "text",
    [
        '"no newline at all"',
        '"an escaped backslash then n: \\\\n"',
        '"\\\\\\\\n two escaped backslashes"',
    ],
)
def test_a_pyserini_text_without_a_newline_is_refused_by_both(tmp_path, text):
    path = tmp_path / "run.json"
    path.write_text('{"0": {"contexts": [{"docid": "1", "score": 1, "text": "a\\nb"}, {"docid": "2", "score": 0, "text": ' + text + "}]}}")
    assert read_columns(path, "object") is None
    with pytest.raises(InputFileError, match="'text' has no newline"):
        read_run(path, QUESTIONS)


@pytest.mark.parametrize(
    "content",
    [
        '{"0": {"contexts": [{"docid": "1", "score": NaN}]}}',
        '{"0": {"contexts": [{"docid": "1", "score": "nan"}]}}',
        '{"0": {"contexts": [{"docid": "1", "score": 1e999}]}}',
        '{"0": {"contexts": [{"docid": "\\ud800", "score": 1}]}}',
        '{"0": {"contexts": [{"docid": true, "score": 1}]}}',
        '{"0": {"contexts": [{"docid": "", "score": 1}]}}',
        '{"0": {"contexts": [{"docid": "wiki:", "score": 1}]}}',
        '{"0": {"contexts": [{"docid": "1", "score": 1, "text": 5}]}}',
        '{"0": {"contexts": [{"docid": "1", "score": 1, "has_answer": 1}]}}',
        '{"0": {"contexts": [{"score": 1}]}}',
        '{"0": {"contexts": {"docid": "1"}}}',
        '{"0": []}',
        '[1, 2]',
        '{"0": {"contexts": [], "answers": ' + "[" * 100_000 + "]" * 100_000 + "}}",
    ],
)
def test_what_the_fast_path_does_not_take_goes_to_the_general_reader(tmp_path, content):
    path = tmp_path / "run.json"
    path.write_text(content)
    assert read_columns(path, "object") is None


def test_check_columns_words_failures_as_check_ranking():
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randrange(0, 6)
        ids = [rng.choice(["a", "b", "c", "d", "e", "f", ""]) for _ in range(n)]
        scores = [rng.choice([3.0, 2.0, 2.0, 1.0, float("inf"), float("nan"), -0.5]) for _ in range(n)]
        depth = rng.choice([None, 3, 10])
        expected = None
        try:
            check_ranking(list(zip(ids, scores)), question="q", source="s", depth=depth)
        except HarnessError as exc:
            expected = str(exc)
        try:
            check_columns(ids, scores, question="q", source="s", depth=depth)
            got = None
        except HarnessError as exc:
            got = str(exc)
        assert got == expected, (ids, scores, depth)


# ---- the two-process scorer -----------------------------------------------------------------


def _suite(n: int, parts: int = 1) -> Suite:
    questions = [Question(id=f"q{i}", text=f"question {i}", answers=(f"answer{i % 7}", f"alt {i % 5}")) for i in range(n)]
    size = -(-n // parts)
    corpus = InMemoryCorpus("c", [Passage(id="p0", title="t", text="nothing")])
    return Suite(
        name="s", corpus=corpus,
        parts=tuple(Part(name=f"part{p}", questions=tuple(questions[p * size : (p + 1) * size])) for p in range(parts)),
    )


def _contexts(rng: random.Random, i: int, depth: int) -> list[dict]:
    out = []
    for position in range(depth):
        words = [rng.choice(["answer3", "alt", "4", "Jupiter", "x", "answer33", "ς", "Σ"]) for _ in range(6)]
        out.append({"docid": f"d{rng.randrange(60)}" if position else f"own{i}", "score": 100.0 - position,
                    "text": f"T{position}\n{' '.join(words)}"})
    # Distinct ids within a ranking, as a valid run has.
    seen, kept = set(), []
    for ctx in out:
        if ctx["docid"] not in seen:
            seen.add(ctx["docid"])
            kept.append(ctx)
    return kept


def _write(path, suite, fmt, *, indent, ids=True, seed=0, depth=12):
    rng = random.Random(seed)
    records = []
    for i, q in enumerate(suite.questions):
        contexts = _contexts(rng, i, depth)
        if fmt == "dpr-json":
            records.append({"question": q.text, "answers": list(q.answers), "ctxs": [
                {"id": c["docid"], "score": c["score"], "title": "t", "text": c["text"].split("\n")[1]} for c in contexts]})
        else:
            records.append((q.id if ids else str(i), {"question": q.text, "answers": list(q.answers), "contexts": contexts}))
    payload = records if fmt == "dpr-json" else dict(records)
    if indent == "lines":  # one member a line, as pyserini's converter writes them
        members = [json.dumps(r, ensure_ascii=False) for r in records] if fmt == "dpr-json" else [
            f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in records]
        brackets = "[]" if fmt == "dpr-json" else "{}"
        path.write_text(brackets[0] + "\n" + ",\n".join(members) + "\n" + brackets[1] + "\n", encoding="utf-8")
        return
    path.write_text(json.dumps(payload, indent=indent, ensure_ascii=False), encoding="utf-8")


def _one_piece(path, suite, fmt):
    run = read_run(path, suite, format=fmt)
    by_part = score_run(suite, run)
    return [rank for part in by_part.values() for rank in part.values()], run


@pytest.fixture
def small_split(monkeypatch):
    monkeypatch.setattr(split_module, "SPLIT_BYTES", 0)


@pytest.mark.parametrize("fmt, ids", [("pyserini-json", True), ("pyserini-json", False), ("dpr-json", True)])
@pytest.mark.parametrize("indent", ["lines", 2, 4])
def test_two_processes_give_the_one_piece_ranks(tmp_path, small_split, fmt, indent, ids):
    suite = _suite(41)
    path = tmp_path / "run.json"
    _write(path, suite, fmt, indent=indent, ids=ids)
    ranks, run = _one_piece(path, suite, fmt)
    found = score_json_split(path, suite.questions, SHAPE[fmt], mode="string", allow_index=True)
    assert found is not None
    assert found.ranks == ranks and any(r is not None for r in ranks) and None in ranks
    assert found.depth == max(len(hits) for hits in run.rankings.values())
    assert (found.run.missing, found.run.answer_mismatches) == (run.missing, run.answer_mismatches)
    import hashlib

    assert found.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_split_points_fall_between_top_level_members(tmp_path):
    suite = _suite(9)
    for fmt in ("pyserini-json", "dpr-json"):
        for indent in ("lines", 1, 4):
            path = tmp_path / f"{fmt}{indent}.json"
            _write(path, suite, fmt, indent=indent)
            data = path.read_bytes()
            end, start = split_point(data, SHAPE[fmt])
            close, opening = (b"]", b"[") if fmt == "dpr-json" else (b"}", b"{")
            first, second = json.loads(data[:end] + close), json.loads(opening + data[start:])
            whole = json.loads(data)
            assert (first + second if fmt == "dpr-json" else {**first, **second}) == whole
            assert len(first) and len(second)
        compact = tmp_path / "compact.json"
        _write(compact, suite, fmt, indent=None)
        assert split_point(compact.read_bytes(), SHAPE[fmt]) is None
    # Without indentation every level starts a line alike: a cut inside a member is refused.
    flat = tmp_path / "flat.json"
    _write(flat, suite, "pyserini-json", indent=0)
    end, start = split_point(flat.read_bytes(), "object")
    with pytest.raises(json.JSONDecodeError):
        json.loads(flat.read_bytes()[:end] + b"}")
    assert split_module._half(flat.read_bytes(), "pyserini-json", (end, start), second=False) is None


def test_the_two_process_path_steps_aside_where_it_cannot_be_exact(tmp_path, small_split):
    suite = _suite(20)
    path = tmp_path / "run.json"
    _write(path, suite, "pyserini-json", indent=4)
    content = json.loads(path.read_text())
    # The same qid in both halves: the one-piece reader keeps the last.
    dup = dict(content)
    text = json.dumps(dup, indent=4)
    text = text.replace('"q19": {', '"q0": {')
    path.write_text(text)
    assert score_json_split(path, suite.questions, "object", mode="string", allow_index=True) is None
    # A missing text, a ranking out of order: decided by the one-piece path.
    for breaking in ("text", "order"):
        broken = json.loads(json.dumps(content))
        ctx = broken["q15"]["contexts"]
        if breaking == "text":
            del ctx[1]["text"]
        else:
            ctx[0]["score"], ctx[1]["score"] = ctx[1]["score"], ctx[0]["score"]
        path.write_text(json.dumps(broken, indent=4))
        assert score_json_split(path, suite.questions, "object", mode="string", allow_index=True) is None
    # Alignment errors are the one-piece reader's, word for word.
    wrong = json.loads(json.dumps(content))
    wrong["q15"]["question"] = "something else"
    path.write_text(json.dumps(wrong, indent=4))
    with pytest.raises(InputFileError) as split_error:
        score_json_split(path, suite.questions, "object", mode="string", allow_index=True)
    with pytest.raises(InputFileError) as whole_error:
        read_run(path, suite, format="pyserini-json")
    assert str(split_error.value) == str(whole_error.value)


def test_harness_score_takes_the_two_process_path_with_the_same_result(tmp_path, small_split, monkeypatch):
    from harness.runfiles import score as score_module

    suite = _suite(30, parts=2)
    path = tmp_path / "run.json"
    _write(path, suite, "pyserini-json", indent=4)
    monkeypatch.setattr(score_module.registry, "suites", lambda: {"s": type("S", (), {"load": staticmethod(lambda: suite)})()})
    calls = []
    real = split_module.score_json_split
    monkeypatch.setattr(split_module, "score_json_split", lambda *a, **k: calls.append(1) or real(*a, **k))
    split_doc = score_module.score_file("s", path)
    monkeypatch.setattr(split_module, "score_json_split", lambda *a, **k: None)
    whole_doc = score_module.score_file("s", path)
    assert calls == [1]
    for key in ("first_hit_ranks", "metrics", "depth", "retriever", "k"):
        assert split_doc[key] == whole_doc[key], key

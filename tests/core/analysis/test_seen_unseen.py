"""Seen / unseen splits of a suite's questions against training data."""

from __future__ import annotations

import gzip
import json

import pytest

from harness import registry
from harness.analysis.compare import load_systems
from harness.analysis.seen import normalize_answer, pattern, read_training, seen_unseen, splits_for
from harness.cli.main import main
from harness.errors import InputFileError
from helpers.paths import REPO

COMMITTED = REPO / "leaderboard" / "results"


def test_squad_answer_normalisation():
    assert normalize_answer("The  Beatles!") == "beatles"
    assert normalize_answer("an Apple, a day") == "apple day"


def test_pattern_is_the_shared_prefix_and_suffix():
    assert pattern(["Where was Ann Lee born?", "Where was Bo born?"]) == (("where", "was"), ("born",))
    assert pattern(["Who founded Acme?", "Who founded Beta Corp?"]) == (("who", "founded"), ())
    assert pattern(["a b", "c d"]) is None
    assert pattern(["only one"]) is None
    # a question left with no words between prefix and suffix: no pattern
    assert pattern(["Where was X born?", "Where was born?"]) is None


def test_training_formats(tmp_path):
    items = [{"question": "Where was Ann born?", "answers": ["Oslo"], "positive_ctxs": [{"text": "x" * 100}]}]
    (tmp_path / "dpr.json").write_text(json.dumps(items))
    with gzip.open(tmp_path / "P19.train.json.gz", "wt") as f:
        json.dump(items, f)
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "q?", "answer": ["a"], "relation": "P20"}) + "\n")
    (tmp_path / "q.csv").write_text("who?\t['x']\n")
    assert [i.part for i in read_training(tmp_path / "dpr.json", part_names=["P19"])] == [None]
    assert [i.part for i in read_training(tmp_path / "P19.train.json.gz", part_names=["P19", "P1"])] == ["P19"]
    assert [(i.question, i.part) for i in read_training(tmp_path / "q.jsonl")] == [("q?", "P20")]
    assert [i.answers for i in read_training(tmp_path / "q.csv")] == [("x",)]
    (tmp_path / "bad.json").write_text('[{"question": "a", "answers": ["b"]},\n {"answers": []}]')
    with pytest.raises(InputFileError, match=r"bad.json:2: each item must be an object with a 'question'"):
        list(read_training(tmp_path / "bad.json"))


@pytest.fixture(scope="module")
def demo():
    return registry.load("suites", "demo", {}).value


def test_demo_splits(tmp_path, demo):
    p19 = next(p for p in demo.parts if p.name == "P19")
    p17 = next(p for p in demo.parts if p.name == "P17")
    first = p19.questions[0]  # "Where was <entity> born?"
    entity = first.text.removeprefix("Where was ").removesuffix(" born?")
    training = [
        # follows P19's pattern, with another entity
        {"question": "Where was Nobody Atall born?", "answers": ["Nowhere"]},
        # mentions the first P19 question's entity in another relation
        {"question": f"Who is {entity} married to?", "answers": ["Someone"]},
        # one P17 question verbatim, with its answer
        {"question": p17.questions[0].text, "answers": list(p17.questions[0].answers)},
    ]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(training))
    # a file named after a part labels that part seen
    (tmp_path / "P20.train.json").write_text(json.dumps([{"question": "x?", "answers": ["y"]}]))
    # unlabelled training questions: relations by question pattern
    splits = {s.kind: s for s in splits_for(demo, [path])}
    relation = splits["relation"]
    assert "P19" in relation.parts_seen and "P17" in relation.parts_seen and "P20" not in relation.parts_seen
    assert relation.seen[first.id] and not relation.seen[next(p for p in demo.parts if p.name == "P36").questions[0].id]
    # with labels (here a file named after a part), the labels alone say which relations were seen
    labelled = {s.kind: s for s in splits_for(demo, [path, tmp_path / "P20.train.json"])}
    assert labelled["relation"].parts_seen == ["P20"]
    assert splits["entity"].seen[first.id]
    assert splits["question"].seen[p17.questions[0].id] and sum(splits["question"].seen.values()) == 1
    assert splits["answer"].seen[p17.questions[0].id]


def test_seen_unseen_accuracy_and_cli(tmp_path, demo, capsys):
    p19 = next(p for p in demo.parts if p.name == "P19")
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"question": q.text, "answers": list(q.answers)}) + "\n" for q in p19.questions[:5]))
    systems = load_systems(["bm25", "minilm"], suite="demo", results_dir=COMMITTED)
    result = seen_unseen(systems, [path], ks=[20])
    assert result.counts["question"] == (5, len(demo.questions) - 5)
    assert result.splits[0].kind == "relation" and result.splits[0].parts_seen == ["P19"]
    # relation-seen accuracy is P19's own top-20 (one seen part)
    bm25 = next(s for s in systems if s.label == "bm25").result
    assert result.accuracy["bm25"]["relation"]["seen"][20] == pytest.approx(bm25.accuracy(20)[0]["P19"])
    # question-seen accuracy over the five questions, by hand
    ranks = bm25.ranks["P19"]
    expected = sum(1 for q in p19.questions[:5] if ranks[q.id] is not None and ranks[q.id] < 20) / 5
    assert result.accuracy["bm25"]["question"]["seen"][20] == pytest.approx(expected)
    assert main(["compare", "bm25", "minilm", "--suite", "demo", "--results-dir", str(COMMITTED), "--k", "20",
                 "--resamples", "200", "--permutations", "200", "--seen-from", str(path)]) == 0
    out = capsys.readouterr().out
    assert "relation: 42 questions seen" in out and "seen parts: P19" in out

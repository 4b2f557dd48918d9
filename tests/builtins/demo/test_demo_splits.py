"""The demo world's training splits ``demo-train`` and ``demo-dev`` (plugins/harness_builtins/demo)."""

from __future__ import annotations

import json

import pytest

from harness import registry
from harness.scoring.matching import has_answer
from harness_builtins.demo import TRAIN_RELATIONS, demo_world, generate_world, load_demo_suite
from harness_builtins.demo.splits import DEV_QUESTIONS_PER_RELATION, TRAIN_QUESTIONS_PER_RELATION
from harness_builtins.demo.world import load_templates
from helpers.paths import REPO

RESULT = REPO / "leaderboard" / "results" / "demo--bm25--4566dfd2.json"

#: Adding the splits must not change the test suite: these are the fingerprints results were
#: recorded with (also pinned in test_demo_suite.py).
CORPUS_FINGERPRINT = "sha256:22910796cfa1c8fc530cf6a942f844225d8138f24e42a1ec5ce170379cf7f289"
QUESTIONS_FINGERPRINT = "sha256:6491766515a28e9c96347832315bd27e4ff45b407559ae8c4b59e32516092555"

#: Questions per training relation in the default world (dev is drawn first and always full).
TRAIN_SIZES = {"P19": 200, "P26": 200, "P40": 125, "P69": 200, "P112": 67, "P131": 200, "P159": 87,
               "P175": 94, "P264": 79, "P407": 200, "P495": 200, "P800": 200}


@pytest.fixture(scope="module")
def suites():
    return {name: registry.load("suites", name, {}).value for name in ("demo", "demo-train", "demo-dev")}


def test_demo_is_unchanged(suites):
    recorded = json.loads(RESULT.read_text(encoding="utf-8"))["suite"]
    demo = suites["demo"]
    assert demo.questions_fingerprint == recorded["questions_fingerprint"] == QUESTIONS_FINGERPRINT
    assert demo.corpus.fingerprint == recorded["corpus"]["fingerprint"] == CORPUS_FINGERPRINT
    assert len(demo.corpus) == recorded["corpus"]["passages"]
    assert [p.name for p in demo.parts] == [p["name"] for p in recorded["parts"]]


def test_train_relations_are_every_other_relation():
    relations = sorted(load_templates(), key=lambda r: int(r[1:]))
    assert len(relations) == 24
    assert TRAIN_RELATIONS == tuple(relations[1::2])
    assert len(set(TRAIN_RELATIONS)) == 12


def test_split_suites_are_registered(suites):
    for split in ("train", "dev"):
        spec = registry.suites().get(f"demo-{split}")
        assert spec.synthetic is True and spec.match == "string" and "SYNTHETIC" in spec.description
        suite = suites[f"demo-{split}"]
        assert suite.name == f"demo-{split}" and suite.synthetic and suite.match == "string"
        assert [p.name for p in suite.parts] == list(TRAIN_RELATIONS)
        assert suite.corpus is suites["demo"].corpus  # the same corpus, built once
    assert {p.name: len(p.questions) for p in suites["demo-dev"].parts} == {
        r: DEV_QUESTIONS_PER_RELATION for r in TRAIN_RELATIONS
    }
    train = {p.name: len(p.questions) for p in suites["demo-train"].parts}
    assert train == TRAIN_SIZES
    assert all(0 < n <= TRAIN_QUESTIONS_PER_RELATION for n in train.values())


def test_splits_are_disjoint_and_answerable(suites):
    world = demo_world()
    assert load_demo_suite().parts == world.parts
    subjects = {"test": {world.subjects[q.id][0].id for q in suites["demo"].questions}}
    texts = {"test": {q.text for q in suites["demo"].questions}}
    for split in ("train", "dev"):
        suite = suites[f"demo-{split}"]
        ids = [q.id for q in suite.questions]
        assert len(set(ids)) == len(ids) and all(f"-{split}-" in i for i in ids)
        subjects[split] = {world.split_subjects[q.id][0].id for q in suite.questions}
        texts[split] = {q.text for q in suite.questions}
        assert len(texts[split]) == len(suite.questions)
        for part in suite.parts:
            template = world.templates[part.name]
            for q in part.questions:
                subject, relation = world.split_subjects[q.id]
                assert relation == part.name and q.text == template.replace("[X]", subject.name)
                # asked only when the subject's own article has an answer in a passage's text
                assert any(has_answer(q.answers, suite.corpus.get(pid).text) for pid in subject.passage_ids)
    for a, b in (("test", "train"), ("test", "dev"), ("train", "dev")):
        assert not subjects[a] & subjects[b], (a, b)
        assert not texts[a] & texts[b], (a, b)


def test_splits_are_deterministic_and_leave_other_seeds_alone():
    again = generate_world()
    assert again.splits == demo_world().splits
    other = generate_world(seed=7)
    assert set(other.splits) == {"train", "dev"}
    test_subjects = {s.id for s, _ in other.subjects.values()}
    dev = {s.id for qid, (s, _) in other.split_subjects.items() if "-dev-" in qid}
    train = {s.id for qid, (s, _) in other.split_subjects.items() if "-train-" in qid}
    assert dev and train and not (dev & train) and not (test_subjects & (dev | train))

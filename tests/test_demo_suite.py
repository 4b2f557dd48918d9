"""The built-in synthetic ``demo`` suite (plugins/harness_builtins/demo)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from importlib import metadata, resources

import pytest

import harness_builtins.demo as demo
from harness.matching import AnswerMatcher, has_answer, prepare
from harness.plugins import new_plugin_manager, register_plugin
from harness.registry import Registry
from harness.types import InMemoryCorpus, Suite
from harness_builtins.demo import generate_world, load_demo_suite
from harness_builtins.demo.names import fold
from harness_builtins.demo.world import PASSAGE_WORDS, Entity, answers_of, name_of

RELATIONS = ["P17", "P19", "P20", "P26", "P36", "P40", "P50", "P69", "P106", "P112", "P127", "P131",
             "P136", "P159", "P170", "P175", "P176", "P264", "P276", "P407", "P413", "P495", "P740",
             "P800"]

#: relation -> (kinds its subjects may have, kinds its objects may have; None: a value string)
SIGNATURES: dict[str, tuple[set[str], set[str] | None]] = {
    "P17": ({"city", "region", "university", "landmark", "event"}, {"country"}),
    "P19": ({"person"}, {"city"}),
    "P20": ({"person"}, {"city"}),
    "P26": ({"person"}, {"person"}),
    "P36": ({"country"}, {"city"}),
    "P40": ({"person"}, {"person"}),
    "P50": ({"book"}, {"person"}),
    "P69": ({"person"}, {"university"}),
    "P106": ({"person"}, None),
    "P112": ({"company", "label", "club"}, {"person"}),
    "P127": ({"company", "label", "club", "landmark"}, {"person", "company", "club"}),
    "P131": ({"city"}, {"region"}),
    "P136": ({"person", "band"}, None),
    "P159": ({"company", "label", "club"}, {"city"}),
    "P170": ({"artwork"}, {"person"}),
    "P175": ({"song"}, {"person", "band"}),
    "P176": ({"product"}, {"company"}),
    "P264": ({"person", "band"}, {"label"}),
    "P276": ({"landmark", "event"}, {"city"}),
    "P407": ({"book", "film", "song"}, {"language"}),
    "P413": ({"person"}, None),
    "P495": ({"book", "film", "song", "artwork"}, {"country"}),
    "P740": ({"company", "label", "club", "band"}, {"city"}),
    "P800": ({"person"}, {"book", "film", "song", "artwork"}),
}

#: sha256 fingerprints of the default world. They change only when the generator changes: if you
#: changed it on purpose, update them (results recorded on the old suite are then not comparable).
CORPUS_FINGERPRINT = "sha256:589443b72e416a4d8cef4b59ceda32c27abea86c742a36343afb19980c2a2d2b"
QUESTIONS_FINGERPRINT = "sha256:f148174dc92c7dd62a1e516615c6a241cbeb61b4211ec94f24f635a933cb999f"


@pytest.fixture(scope="module")
def world():
    return generate_world()


@pytest.fixture(scope="module")
def suite(world):
    return world.suite()


@pytest.fixture(scope="module")
def passages(world):
    return {p.id: p for p in world.passages}


def _article_texts(entity: Entity, passages) -> list[str]:
    return [passages[pid].text for pid in entity.passage_ids]


# ----------------------------------------------------------------------------- plugin and suite


def test_plugin_registers_the_demo_suite():
    manager = new_plugin_manager()
    register_plugin(manager, demo, "demo")
    spec = Registry.collect(manager, "suites").get("demo")
    assert spec.synthetic is True
    assert spec.match == "string"
    assert "SYNTHETIC" in spec.description
    assert spec.load is load_demo_suite


def test_entry_point_names_the_demo_module():
    (ep,) = [ep for ep in metadata.entry_points(group="harness") if ep.name == "demo"]
    assert ep.load() is demo


def test_loaded_suite_shape():
    suite = load_demo_suite()
    assert isinstance(suite, Suite)
    assert suite is load_demo_suite()  # generated once per process
    assert suite.name == "demo"
    assert suite.synthetic is True
    assert suite.match == "string"
    assert suite.default_k == (1, 5, 20, 100)
    assert "SYNTHETIC" in suite.description and "not comparable" in suite.description
    assert isinstance(suite.corpus, InMemoryCorpus)
    assert suite.corpus.name == "demo-synthetic-wiki"


def test_generation_imports_nothing_heavy():
    code = (
        "import sys; from harness_builtins.demo import load_demo_suite; load_demo_suite(); "
        "heavy = [m for m in ('torch', 'pyserini', 'numpy', 'jnius') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- determinism


def test_two_generations_are_identical(world, suite):
    again = generate_world()
    assert again.passages == world.passages
    assert again.parts == world.parts
    second = again.suite()
    assert second.corpus.fingerprint == suite.corpus.fingerprint
    assert second.questions_fingerprint == suite.questions_fingerprint
    assert load_demo_suite().corpus.fingerprint == suite.corpus.fingerprint


def test_other_seed_gives_another_world(suite):
    other = generate_world(seed=7).suite()
    assert other.corpus.fingerprint != suite.corpus.fingerprint
    assert other.questions_fingerprint != suite.questions_fingerprint


def test_same_world_under_any_hash_seed(suite):
    """No dependence on set or str-hash order: other processes with other hash seeds agree."""
    code = (
        "from harness_builtins.demo import load_demo_suite; s = load_demo_suite(); "
        "print(s.corpus.fingerprint, s.questions_fingerprint)"
    )
    expected = f"{suite.corpus.fingerprint} {suite.questions_fingerprint}"
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
        assert out.stdout.strip() == expected


def test_fingerprints_are_pinned(suite):
    """The default world is the same on every machine and every run (see the note above)."""
    assert suite.corpus.fingerprint == CORPUS_FINGERPRINT
    assert suite.questions_fingerprint == QUESTIONS_FINGERPRINT


# ----------------------------------------------------------------------------- sizes and parts


def test_sizes(world, suite):
    assert 3000 <= len(suite.corpus) <= 6000
    assert 900 <= len(suite.questions) <= 1100
    for part in suite.parts:
        assert 30 <= len(part.questions) <= 50, part.name


def test_one_part_per_relation_in_template_order(suite):
    path = resources.files("harness_builtins") / "data" / "relation_query_templates.json"
    templates = json.loads(path.read_text(encoding="utf-8"))
    in_file = [r for r in templates if "_" not in r and r != "P30"]
    assert in_file == RELATIONS
    assert [part.name for part in suite.parts] == RELATIONS


def test_questions_come_from_their_relation_template(world):
    for part in world.parts:
        template = world.templates[part.name]
        for i, q in enumerate(part.questions, start=1):
            subject, relation = world.subjects[q.id]
            assert relation == part.name
            assert q.id == f"{part.name}-{i:04d}"
            assert q.text == template.replace("[X]", subject.name)
            assert "[X]" not in q.text
        assert len({q.text for q in part.questions}) == len(part.questions)


def test_question_ids_and_subjects_are_unique(world, suite):
    ids = [q.id for q in suite.questions]
    assert len(set(ids)) == len(ids)
    subjects = [world.subjects[i][0].id for i in ids]
    assert len(set(subjects)) == len(subjects)  # no entity is asked about twice


def test_answers_are_the_fact_objects(world, suite):
    for q in suite.questions:
        subject, relation = world.subjects[q.id]
        objects = subject.facts[relation]
        assert q.answers[0] == name_of(objects[0])
        assert {name_of(o) for o in objects} <= set(q.answers)
        for obj in objects:
            if isinstance(obj, Entity):
                assert set(obj.aliases) <= set(q.answers)
        assert all(a.strip() for a in q.answers)


def test_relations_link_the_right_kinds(world, suite):
    for q in suite.questions:
        subject, relation = world.subjects[q.id]
        subject_kinds, object_kinds = SIGNATURES[relation]
        assert subject.kind in subject_kinds, (q.id, subject)
        for obj in subject.facts[relation]:
            if object_kinds is None:
                assert isinstance(obj, str), (q.id, obj)
            else:
                assert isinstance(obj, Entity) and obj.kind in object_kinds, (q.id, obj)


def test_world_facts_are_consistent(world):
    for e in world.entities:
        for spouse in e.facts.get("P26", ()):
            assert e in spouse.facts["P26"]  # marriage is symmetric
        if e.kind == "city":
            (region,) = e.facts["P131"]
            assert e.facts["P17"] == region.facts["P17"]  # the city's country is its region's
        if e.kind == "country":
            (capital,) = e.facts["P36"]
            assert capital.facts["P17"] == [e]
        if e.kind == "person":
            assert ("P20" in e.facts) == (e.attrs["y2"] is not None)  # only the dead have a death place
            for child in e.facts.get("P40", ()):
                assert child.attrs["y"] > e.attrs["y"]


# ----------------------------------------------------------------------------- passages


def test_every_answer_is_in_a_passage_of_the_subjects_article(world, passages):
    for part in world.parts:
        for q in part.questions:
            subject, _ = world.subjects[q.id]
            assert subject.passage_ids
            assert all(passages[pid].title == subject.name for pid in subject.passage_ids)
            texts = _article_texts(subject, passages)
            assert any(has_answer(list(q.answers), text, mode="string") for text in texts), q


def test_answer_positions_agree_with_dpr_matching(world, passages):
    """The generator's record of where answers lie (used to pick askable facts) is exact."""
    for e in world.entities[::3]:
        texts = _article_texts(e, passages)
        for relation in e.spans:
            found = any(has_answer(list(answers_of(e.facts[relation])), t, mode="string") for t in texts)
            assert found == e.answerable(relation), (e, relation)


def test_an_answer_split_across_passages_is_not_askable():
    e = Entity(0, "city", "Ostrelin", 1.0)
    e.spans["P17"] = [(PASSAGE_WORDS - 2, 3)]  # words 98, 99 | 100: split by the passage boundary
    assert not e.answerable("P17")
    e.spans["P17"].append((2 * PASSAGE_WORDS - 3, 3))  # words 197..199: whole in passage 2
    assert e.answerable("P17")


@pytest.mark.parametrize("seed", [1, 99])
def test_other_seeds_keep_the_guarantees(seed):
    world = generate_world(seed=seed)
    passages = {p.id: p for p in world.passages}
    assert 3000 <= len(passages) <= 6000
    assert [part.name for part in world.parts] == RELATIONS
    assert all(len(part.questions) == 42 for part in world.parts)
    for qid, (subject, relation) in world.subjects.items():
        answers = list(answers_of(subject.facts[relation]))
        assert any(has_answer(answers, text) for text in _article_texts(subject, passages)), qid


def test_passages_have_dpr_shape(world):
    ids = [p.id for p in world.passages]
    assert ids == [str(i) for i in range(1, len(ids) + 1)]  # "1", "2", ... like DPR
    for p in world.passages:
        assert p.title.strip() and p.text.strip()
        assert len(p.text.split()) <= 100
        assert p.text == " ".join(p.text.split())


def test_articles_are_consecutive_100_word_chunks(world, passages):
    owner: dict[str, Entity] = {}
    for e in world.entities:
        ids = [int(pid) for pid in e.passage_ids]
        assert ids == list(range(ids[0], ids[0] + len(ids))), e
        sizes = [len(passages[pid].text.split()) for pid in e.passage_ids]
        assert all(size == 100 for size in sizes[:-1]), e  # only an article's last passage is short
        for pid in e.passage_ids:
            assert pid not in owner
            owner[pid] = e
        assert e.name in passages[e.passage_ids[0]].text  # the lead names the subject
    assert len(owner) == len(world.passages)


def test_names_are_unique_and_do_not_collide(world):
    keys = [fold(e.name) for e in world.entities]
    assert len(set(keys)) == len(keys)
    names = set(keys)
    for e in world.entities:
        for alias in e.aliases:
            assert fold(alias) not in names  # an alias is never another entity's name
            assert alias in e.name.split()  # the distinctive word of "Nous County"
    # single-word names (cities, countries, languages...) are never a word of another name
    single = {k for k in keys if " " not in k}
    for key in keys:
        words = key.split()
        if len(words) > 1:
            assert not single.intersection(words), key


def test_names_are_invented_and_pronounceable(world):
    people = [e for e in world.entities if e.kind == "person"]
    assert len(people) > 1000
    for e in people:
        first, last = e.name.split()
        assert first[0].isupper() and last[0].isupper()
        assert 4 <= len(fold(first)) <= 12 and 4 <= len(fold(last)) <= 12
    cities = [e.name for e in world.entities if e.kind == "city"]
    assert all(" " not in c and c[0].isupper() for c in cities)


# ----------------------------------------------------------------------------- realism


def test_popularity_is_skewed(world, passages):
    counts = sorted((len(e.passage_ids) for e in world.entities), reverse=True)
    top = counts[: len(counts) // 100]
    assert statistics.median(counts) == 1
    assert statistics.mean(top) >= 5
    assert sum(top) >= 0.08 * len(passages)  # the top 1% of entities hold a large share
    assert Counter(counts)[1] >= 0.8 * len(counts)  # most entities fit in one passage


def test_popular_entities_are_mentioned_in_other_articles(world):
    ranked = sorted(world.entities, key=lambda e: (-len(e.passage_ids), e.id))

    def mentions(e: Entity) -> int:
        own = set(e.passage_ids)
        return sum(1 for p in world.passages if p.id not in own and e.name in p.text)

    top = [mentions(e) for e in ranked[:10]]
    tail = [mentions(e) for e in ranked if len(e.passage_ids) == 1][::40]
    assert max(top) >= 100
    assert statistics.median(top) >= 10 * max(1, statistics.median(tail))


def test_relation_wording_is_shared_across_articles(world, passages):
    """Distractors: many people's articles use the birthplace wording, in several variants."""
    people_by_wording: dict[str, set[str]] = {}
    for e in world.entities:
        if e.kind != "person":
            continue
        for text in _article_texts(e, passages):
            for wording in ("was born in", "birthplace was", "A native of", "born on"):
                if wording in text:
                    people_by_wording.setdefault(wording, set()).add(e.name)
    assert len(people_by_wording.get("was born in", ())) >= 100
    assert all(len(people_by_wording.get(w, ())) >= 20 for w in ("birthplace was", "A native of", "born on"))


def test_p19_answers_also_appear_in_other_peoples_articles(world, passages, suite):
    """Popular birthplaces recur: for many P19 questions the answer is in other people's passages."""
    p19 = next(part for part in suite.parts if part.name == "P19")
    people = [e for e in world.entities if e.kind == "person"]
    prepared = {pid: prepare(passages[pid].text, "string") for e in people for pid in e.passage_ids}
    shared = 0
    for q in p19.questions:
        subject, _ = world.subjects[q.id]
        matcher = AnswerMatcher(q.answers, mode="string")
        others = (pid for pid in prepared if pid not in subject.passage_ids)
        if sum(1 for pid in others if matcher.matches_prepared(prepared[pid])) >= 2:
            shared += 1
    assert shared >= len(p19.questions) // 2


def test_question_subjects_are_mostly_rare_entities(world, suite):
    sizes = [len(world.subjects[q.id][0].passage_ids) for q in suite.questions]
    assert statistics.median(sizes) == 1

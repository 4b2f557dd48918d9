"""harness.testing: the toy suite, and check_retriever on a good retriever and on broken ones."""

from __future__ import annotations

import math
import re
import pytest

from harness.testing import RetrieverCheck, check_retriever, toy_suite
from harness.api import Hit, RetrieverSpec, Suite


class WordOverlap:
    """A correct retriever: scores passages by shared lowercased words of title + text."""

    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase
        self.indexed_with = None

    def parameters(self):
        return {"lowercase": self.lowercase}

    def _words(self, text):
        return set(re.findall(r"\w+", text.lower() if self.lowercase else text))

    def index(self, corpus, context):
        self.indexed_with = context
        self.docs = [(p.id, self._words(p.title + " " + p.text)) for p in corpus]

    def ranking(self, query, k):
        words = self._words(query)
        scored = [(len(words & doc), i, pid) for i, (pid, doc) in enumerate(self.docs)]
        scored = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:k]
        return [Hit(passage_id=pid, score=float(score)) for score, _, pid in scored]

    def search(self, queries, k, context):
        return [self.ranking(q, k) for q in queries]


def test_toy_suite_is_small_and_valid():
    suite = toy_suite()
    assert isinstance(suite, Suite)
    assert suite.match == "string" and suite.synthetic
    assert 3 <= len(suite.questions) <= 10
    assert len(suite.corpus) > 5  # more than the default k, so ignoring k is caught
    for q in suite.questions:
        assert q.answers


def test_good_retriever_passes_and_reports_accuracy():
    check = check_retriever(WordOverlap())
    assert isinstance(check, RetrieverCheck)
    assert check.parameters == {"lowercase": True}
    assert len(check.rankings) == len(toy_suite().questions)
    assert all(len(r) <= 5 for r in check.rankings)
    assert check.first_hit_ranks == [0, 0, 0, 0]
    assert check.accuracy == {1: 1.0, 5: 1.0}


def test_spec_is_loaded_with_options(tmp_path):
    spec = RetrieverSpec(
        name="overlap",
        description="test",
        load=lambda **options: WordOverlap(**options),
        options={"lowercase": True},
    )
    check = check_retriever(spec, options={"lowercase": False}, k=3, cache_dir=tmp_path)
    assert check.parameters == {"lowercase": False}
    assert all(len(r) <= 3 for r in check.rankings)
    assert set(check.accuracy) == {1, 3}

    with pytest.raises(AssertionError, match=r"has no option .k1.*declares no such option"):
        check_retriever(spec, options={"k1": 0.9})


def test_cache_dir_is_handed_to_the_retriever(tmp_path):
    retriever = WordOverlap()
    check_retriever(retriever, cache_dir=tmp_path)
    assert retriever.indexed_with.cache_dir == tmp_path


def test_custom_suite():
    suite = toy_suite()
    check = check_retriever(WordOverlap(), suite=suite, k=1)
    assert check.accuracy == {1: 1.0}


class NotAMapping(WordOverlap):
    def parameters(self):
        return [("lowercase", True)]


class NotJson(WordOverlap):
    def parameters(self):
        return {"tokenizer": object()}


class NanParameter(WordOverlap):
    def parameters(self):
        return {"k1": math.nan}


class TooFewRankings(WordOverlap):
    def search(self, queries, k, context):
        return super().search(queries, k, context)[:-1]


class IgnoresK(WordOverlap):
    def search(self, queries, k, context):
        return super().search(queries, 100, context)


class TuplesNotHits(WordOverlap):
    def search(self, queries, k, context):
        return [[(h.passage_id, h.score) for h in r] for r in super().search(queries, k, context)]


class UnknownIds(WordOverlap):
    def search(self, queries, k, context):
        return [[Hit(passage_id="doc-" + h.passage_id, score=h.score) for h in r] for r in super().search(queries, k, context)]


class DuplicateIds(WordOverlap):
    def search(self, queries, k, context):
        return [[r[0], r[0]] for r in super().search(queries, k, context)]


class NanScores(WordOverlap):
    def search(self, queries, k, context):
        return [[Hit(passage_id=h.passage_id, score=math.nan) for h in r] for r in super().search(queries, k, context)]


class InfiniteScores(WordOverlap):
    def search(self, queries, k, context):
        return [[Hit(passage_id=h.passage_id, score=math.inf) for h in r] for r in super().search(queries, k, context)]


class StringScores(WordOverlap):
    def search(self, queries, k, context):
        return [[Hit(passage_id=h.passage_id, score=str(h.score)) for h in r] for r in super().search(queries, k, context)]


class WorstFirst(WordOverlap):
    def search(self, queries, k, context):
        return [list(reversed(r)) for r in super().search(queries, k, context)]


class NoSearch:
    def parameters(self):
        return {}

    def index(self, corpus, context):
        pass


BROKEN = [
    (NotAMapping(), r"parameters\(\) returned a list, not a mapping"),
    (NotJson(), r"parameters\(\) is not JSON-serialisable"),
    (NanParameter(), r"parameters\(\) is not JSON-serialisable"),
    (TooFewRankings(), r"search\(\) returned 3 rankings for 4 queries"),
    (IgnoresK(), r"returned \d+ hits, more than k=5"),
    (TuplesNotHits(), r"hit 0 is a tuple, not a harness\.api\.Hit"),
    (UnknownIds(), r"hit 0 has unknown passage id 'doc-t\d'"),
    (DuplicateIds(), r"passage id 't\d' appears twice"),
    (NanScores(), r"hit 0 has score nan, not a finite number"),
    (InfiniteScores(), r"hit 0 has score inf, not a finite number"),
    (StringScores(), r"hit 0 has score '\d\.0', not a finite number"),
    (WorstFirst(), r"scores are not sorted best first \(hit \d scores \d\.0 after \d\.0\)"),
    (NoSearch(), r"lacks parameters\(\), index\(\) or search\(\)"),
]


@pytest.mark.parametrize(("retriever", "message"), BROKEN, ids=[type(r).__name__ for r, _ in BROKEN])
def test_broken_retriever_fails_with_a_clear_message(retriever, message):
    with pytest.raises(AssertionError, match=message) as info:
        check_retriever(retriever)
    assert str(info.value).startswith("check_retriever: ")


def test_unknown_registered_name_is_a_harness_error(monkeypatch):
    import harness.registry
    from harness.errors import HarnessError

    monkeypatch.setattr(harness.registry, "_cache", {})  # leave the process-wide registry as it was
    with pytest.raises(HarnessError):
        check_retriever("no-such-retriever-anywhere")


def test_bad_k_is_rejected():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        check_retriever(WordOverlap(), k=0)

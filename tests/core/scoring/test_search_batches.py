"""How many questions the harness hands a retriever per ``search`` call: its own batch, or the
number the retriever asks for (:class:`harness.api.BatchesSearches`), read before every call."""

from __future__ import annotations

import pytest

from harness.api import BatchesSearches, Hit, InMemoryCorpus, Passage, Question, Retriever, RunContext
from harness.scoring.retrieval import SEARCH_BATCH, retrieve, search_batch


class Counting:
    """Ranks the one passage for every question and records each call's size; ``batches`` are
    what ``search_batch`` says before each call."""

    def __init__(self, batches):
        self.batches, self.calls = list(batches), []

    @property
    def search_batch(self):
        return self.batches[min(len(self.calls), len(self.batches) - 1)]

    def parameters(self):
        return {}

    def index(self, corpus, context):
        pass

    def search(self, queries, k, context):
        self.calls.append(len(queries))
        return [[Hit(passage_id="p", score=1.0)] for _ in queries]


def questions(n: int) -> list[Question]:
    return [Question(id=str(i), text=f"q{i}", answers=("a",)) for i in range(n)]


def context(tmp_path) -> RunContext:
    return RunContext(cache_dir=tmp_path, progress=False)


def test_the_retrievers_number_is_read_before_every_call(tmp_path):
    retriever = Counting([2, 5, 3])
    assert isinstance(retriever, BatchesSearches) and isinstance(retriever, Retriever)
    corpus = InMemoryCorpus("one", [Passage(id="p", title="", text="t")])
    rankings = retrieve(retriever, questions(12), 1, context(tmp_path), corpus=corpus)
    assert retriever.calls == [2, 5, 3, 2] and len(rankings) == 12


@pytest.mark.parametrize("wanted", [None, 0, -3, True, 2.5, "8"])
def test_anything_but_a_positive_integer_is_the_harnesss_batch(tmp_path, wanted):
    retriever = Counting([wanted])
    assert search_batch(retriever) == SEARCH_BATCH
    retrieve(retriever, questions(SEARCH_BATCH + 1), 1, context(tmp_path))
    assert retriever.calls == [SEARCH_BATCH, 1]


def test_a_retriever_without_it_gets_the_harnesss_batch(tmp_path):
    class Plain:
        calls: list = []

        def search(self, queries, k, context):
            self.calls.append(len(queries))
            return [[Hit(passage_id="p", score=1.0)] for _ in queries]

    retriever = Plain()
    assert not hasattr(retriever, "search_batch")
    retrieve(retriever, questions(SEARCH_BATCH * 2 + 1), 1, context(tmp_path))
    assert retriever.calls == [SEARCH_BATCH, SEARCH_BATCH, 1]


def test_a_huge_number_is_all_the_questions_in_one_call(tmp_path):
    retriever = Counting([10**30])
    retrieve(retriever, questions(7), 1, context(tmp_path))
    assert retriever.calls == [7]

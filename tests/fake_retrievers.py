"""A pure-Python retriever for tests that must not start Java or load a model."""

from __future__ import annotations

import contextlib
import re
import sys
from collections import Counter, defaultdict

import pytest

from harness import hookimpl
from harness.api import Hit, RetrieverSpec

_WORD = re.compile(r"\w+")


class OverlapRetriever:
    """Ranks passages by how many of the query's distinct words occur in title + text."""

    def __init__(self, title_weight: float = 1.0):
        self.title_weight = float(title_weight)
        self.calls: list[int] = []

    def parameters(self):
        return {"title_weight": self.title_weight}

    def index(self, corpus, context):
        self._postings = defaultdict(list)
        self._order = {}
        for i, p in enumerate(corpus):
            self._order[p.id] = i
            words = Counter(_WORD.findall(p.text.lower()))
            for w in _WORD.findall(p.title.lower()):
                words[w] += self.title_weight
            for w, c in words.items():
                self._postings[w].append((p.id, c))

    def search(self, queries, k, context):
        self.calls.append(len(queries))
        out = []
        for q in queries:
            scores = Counter()
            for w in set(_WORD.findall(q.lower())):
                for pid, c in self._postings.get(w, ()):
                    scores[pid] += 1.0 + 0.01 * c
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], self._order[kv[0]]))[:k]
            out.append([Hit(passage_id=pid, score=s) for pid, s in ranked])
        return out


@hookimpl
def register_retrievers(register):
    register(
        RetrieverSpec(
            name="test-overlap",
            description="word overlap (tests only)",
            load=lambda **options: OverlapRetriever(**options),
            options={"title_weight": 1.0},
        )
    )


@contextlib.contextmanager
def registries_with_fake_retrievers():
    """The installed plugins plus ``tests/fake_retrievers.py`` (a Java-free retriever)."""
    import harness.registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.registry import KINDS, Registry

    manager = loaded_plugins().manager
    if not manager.is_registered(sys.modules[__name__]):
        register_plugin(manager, sys.modules[__name__], "tests-fake")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness.registry, "_cache", {kind: Registry.collect(manager, kind) for kind in KINDS})
        try:
            yield
        finally:
            manager.unregister(sys.modules[__name__])

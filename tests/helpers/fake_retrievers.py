"""A pure-Python retriever for tests that must not start Java or load a model."""

from __future__ import annotations

import contextlib
import re
import sys
from collections import Counter

import pytest

from harness import hookimpl
from harness.api import Hit, RetrieverSpec

_WORD = re.compile(r"\w+")


class OverlapRetriever:
    """Ranks passages by how many of the query's distinct words occur in title + text.

    A passage's score is ``sum over the query's distinct words w it contains of (1 + 0.01 *
    count(w))``, where ``count`` counts the word in the text plus ``title_weight`` per title
    occurrence; ties keep corpus order, and passages without any query word are not returned.
    Computed with two sparse products (query words x passages), so a 1,000-question suite over
    8,000 passages takes a fraction of a second.
    """

    def __init__(self, title_weight: float = 1.0):
        self.title_weight = float(title_weight)
        self.calls: list[int] = []

    def parameters(self):
        return {"title_weight": self.title_weight}

    def index(self, corpus, context):
        from scipy import sparse

        self._vocab: dict[str, int] = {}
        self._ids: list[str] = []
        rows, cols, counts = [], [], []
        for i, p in enumerate(corpus):
            self._ids.append(p.id)
            words = Counter(_WORD.findall(p.text.lower()))
            for w in _WORD.findall(p.title.lower()):
                words[w] += self.title_weight
            for w, c in words.items():
                rows.append(i)
                cols.append(self._vocab.setdefault(w, len(self._vocab)))
                counts.append(float(c))
        shape = (len(self._ids), max(len(self._vocab), 1))
        self._counts = sparse.csr_matrix((counts, (rows, cols)), shape=shape)
        self._present = sparse.csr_matrix(([1.0] * len(counts), (rows, cols)), shape=shape)

    def search(self, queries, k, context):
        import numpy as np
        from scipy import sparse

        self.calls.append(len(queries))
        rows, cols = [], []
        for i, q in enumerate(queries):
            for w in set(_WORD.findall(q.lower())):
                if w in self._vocab:
                    rows.append(i)
                    cols.append(self._vocab[w])
        asked = sparse.csr_matrix(([1.0] * len(rows), (rows, cols)), shape=(len(queries), self._counts.shape[1]))
        present = (asked @ self._present.T).toarray()
        scores = present + 0.01 * (asked @ self._counts.T).toarray()
        out = []
        for i in range(len(queries)):
            matched = np.flatnonzero(present[i])
            order = matched[np.argsort(-scores[i, matched], kind="stable")][:k]
            out.append([Hit(passage_id=self._ids[j], score=float(scores[i, j])) for j in order])
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
    """The installed plugins plus ``tests/helpers/fake_retrievers.py`` (a Java-free retriever)."""
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

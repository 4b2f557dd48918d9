"""Re-rankers for tests that must not load a model: a plain one and one that breaks on purpose."""

from __future__ import annotations

import contextlib
import math
import re
import sys

import pytest

from harness import hookimpl
from harness.api import Hit, RerankerSpec

_WORD = re.compile(r"\w+")


class TitleOverlapReranker:
    """Scores a candidate by how many of the question's words its title has (many ties, on purpose)."""

    def __init__(self, weight: float = 1.0):
        self.weight = float(weight)
        self.seen: list[list[list[str]]] = []

    def parameters(self):
        return {"weight": self.weight}

    def rerank(self, questions, candidates, context):
        self.seen.append([[c.passage_id for c in cands] for cands in candidates])
        out = []
        for question, cands in zip(questions, candidates):
            words = set(_WORD.findall(question.lower()))
            hits = [
                Hit(passage_id=c.passage_id, score=self.weight * len(words & set(_WORD.findall(c.passage.title.lower()))))
                for c in cands
            ]
            out.append(hits[::-1])  # any order: the harness sorts
        return out


class BrokenReranker:
    """Returns what ``mode`` says is wrong."""

    def __init__(self, mode: str = "unknown-id"):
        self.mode = mode

    def parameters(self):
        return {"mode": self.mode}

    def rerank(self, questions, candidates, context):
        out = [[Hit(passage_id=c.passage_id, score=float(-i)) for i, c in enumerate(cands)] for cands in candidates]
        if self.mode == "too-few-rankings":
            return out[:-1]
        if self.mode == "unknown-id":
            out[0][0] = Hit(passage_id="no-such-passage", score=1.0)
        elif self.mode == "duplicate":
            out[0][1] = out[0][0]
        elif self.mode == "left-out":
            out[0].pop()
        elif self.mode == "nan":
            out[0][0] = Hit(passage_id=out[0][0].passage_id, score=math.nan)
        elif self.mode == "not-a-hit":
            out[0][0] = (out[0][0].passage_id, 1.0)
        return out


@hookimpl
def register_rerankers(register):
    register(RerankerSpec(
        name="test-title", description="title word overlap (tests only)",
        load=lambda **options: TitleOverlapReranker(**options), options={"weight": 1.0},
    ))
    register(RerankerSpec(
        name="test-broken", description="broken on purpose (tests only)",
        load=lambda **options: BrokenReranker(**options), options={"mode": "unknown-id"},
    ))


@contextlib.contextmanager
def registries_with_fake_rerankers():
    """The installed plugins plus the fake retrievers and these re-rankers."""
    import harness.registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.registry import KINDS, Registry
    from helpers.fake_retrievers import registries_with_fake_retrievers

    with registries_with_fake_retrievers():
        manager = loaded_plugins().manager
        module = sys.modules[__name__]
        if not manager.is_registered(module):
            register_plugin(manager, module, "tests-fake-rerankers")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(harness.registry, "_cache", {kind: Registry.collect(manager, kind) for kind in KINDS})
            try:
                yield
            finally:
                manager.unregister(module)


class LetterEncoder:
    """Vectors of letter counts (a-h): an encoder that loads no model, for checkpoint tests."""

    def __init__(self, path: str | None = None):
        self.path = path

    def identity(self):
        return "letters/1"

    def _vector(self, text):
        import numpy as np

        return np.array([text.lower().count(c) for c in "abcdefgh"], dtype=np.float32)

    def encode_queries(self, queries):
        import numpy as np

        return np.stack([self._vector(q) for q in queries])

    def encode_passages(self, passages):
        import numpy as np

        return np.stack([self._vector(f"{t} {x}") for t, x in passages])


@hookimpl
def register_encoders(register):
    from harness.api import EncoderSpec

    register(EncoderSpec(name="test-letters", description="letter counts (tests only)",
                         load=lambda **options: LetterEncoder(**options), options={"path": None}))

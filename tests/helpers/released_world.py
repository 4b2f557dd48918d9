"""A small released-embeddings world: a corpus, its vectors served as a release in each layout, the
registered release specs, and the numpy brute force the imported rankings are compared with."""

from __future__ import annotations

import time
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness import hookimpl
from harness.api import (
    EmbeddingsPart,
    InMemoryCorpus,
    Passage,
    ReleasedEmbeddings,
    RunContext,
)

CORPUS = "tiny-wiki"


PASSAGES = 2000


QUESTIONS = 24


K = 20


Contiguous = namedtuple("Contiguous", "path offset rows dim")


class ArrayRelease:
    """A stand-in reader with the formats' contract (``dim``, ``dtype``, ``rows``, ``chunks``,
    ``contiguous``) over arrays, chunk by chunk; ``block`` is a raw float32 file of ``vectors`` at
    ``offset`` (the in-place case); ``pause`` seconds between chunks (the kill test)."""

    def __init__(self, ids, vectors, *, chunk=128, block=None, offset=0, pause=0.0, path="release.bin"):
        self.ids, self.vectors = list(ids), np.asarray(vectors)
        self.dim, self.dtype, self.rows = self.vectors.shape[1], np.dtype(np.float32), len(self.ids)
        self.chunk, self.block, self.offset, self.pause, self.path = chunk, block, offset, pause, path

    def chunks(self, skip=0):
        for start in range(skip, self.rows, self.chunk):
            if self.pause:
                time.sleep(self.pause)
            yield self.ids[start : start + self.chunk], self.vectors[start : start + self.chunk]

    def contiguous(self):
        return None if self.block is None else Contiguous(self.block, self.offset, self.rows, self.dim)

    def path_of(self, row):
        return self.path


def words() -> list[str]:
    from helpers.dense_models import vocab_file

    vocab = [w for w in vocab_file().read_text(encoding="utf-8").split() if w.isalpha() and len(w) > 3]
    return vocab[1000:6000]


def make_corpus() -> InMemoryCorpus:
    rng = np.random.default_rng(7)
    vocab = words()
    passages = [
        Passage(id=str(i + 1), title=" ".join(rng.choice(vocab, 2)), text=" ".join(rng.choice(vocab, 30)))
        for i in range(PASSAGES)
    ]
    return InMemoryCorpus(CORPUS, passages)


def spec_of(name="tiny-release", *, rows=PASSAGES, dim=None, encoder="dpr-nq", corpus=CORPUS, prefix="", fmt="dpr-pickle"):
    return ReleasedEmbeddings(
        name=name, description="test release", corpus=corpus, encoder=encoder, format=fmt,
        parts=(EmbeddingsPart(url="http://127.0.0.1/none", path=f"tests/{name}.bin", sha256="0" * 64),),
        rows=rows, dim=dim, id_prefix=prefix,
    )


def tiny_dpr(directory: Path, kind: str, *, seed: int) -> Path:
    """A tiny DPR question or context encoder (the shipped WordPiece vocabulary), initialised
    widely (``initializer_range=0.5``) so that its passages' vectors differ (at BERT's 0.02 a
    2-layer, 32-wide model gives every passage nearly the same [CLS] vector)."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    from helpers.dense_models import TINY, save_tokenizer

    save_tokenizer(directory)
    torch.manual_seed(seed)
    cls = DPRQuestionEncoder if kind == "question" else DPRContextEncoder
    cls(DPRConfig(vocab_size=30522, initializer_range=0.5, **TINY)).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The corpus, the tiny DPR retriever's encoders, the passages' float32 vectors and questions."""
    from harness_builtins.dense.retriever import build_retriever

    root = tmp_path_factory.mktemp("released-models")
    models = SimpleNamespace(dpr_question=tiny_dpr(root / "question", "question", seed=2),
                             dpr_ctx=tiny_dpr(root / "ctx", "ctx", seed=3))
    corpus = make_corpus()
    retriever = build_retriever("dpr-nq", query_model=str(models.dpr_question),
                                passage_model=str(models.dpr_ctx), device="cpu")
    passages = list(corpus)
    vectors = np.asarray(retriever.encoder.passage.encode_passages([(p.title, p.text) for p in passages]), np.float32)
    rng = np.random.default_rng(3)
    questions = [" ".join(rng.choice(words(), 6)) + "?" for _ in range(QUESTIONS)]
    return {"corpus": corpus, "vectors": vectors, "ids": [p.id for p in passages], "questions": questions,
            "models": models, "dim": vectors.shape[1]}


def retriever_for(world, **options):
    from harness_builtins.dense.retriever import build_retriever

    return build_retriever("dpr-nq", query_model=str(world["models"].dpr_question),
                           passage_model=str(world["models"].dpr_ctx), device="cpu", shard_size=300, **options)


def brute_force(world, retriever, ids, vectors, k=K):
    """Per question: the top-k passage ids and scores by float64 sums of the float32 vectors rounded
    once to float32, equal scores by the tie key (the engine's documented order)."""
    from harness_builtins.dense.index import tie_key

    queries = retriever.encoder.encode_queries(world["questions"]).astype(np.float64)
    scores = queries @ np.asarray(vectors, np.float32).astype(np.float64).T
    keys = np.array([tie_key(i) for i in ids], dtype=np.uint64)
    out = []
    for row in scores.astype(np.float32):  # each sum rounded once to float32, as the engine reports it
        order = np.lexsort((keys, -row.astype(np.float64)))[:k]
        out.append(([ids[i] for i in order], row[order]))
    return out


def assert_same_rankings(hits, expected):
    assert len(hits) == len(expected)
    for ranking, (ids, scores) in zip(hits, expected):
        assert [h.passage_id for h in ranking] == ids
        np.testing.assert_array_equal(np.array([h.score for h in ranking], np.float32), scores)


class _Releases:
    """A plugin registering the releases a test adds."""

    def __init__(self):
        self.specs: dict[str, ReleasedEmbeddings] = {}

    @hookimpl
    def register_embeddings(self, register):
        for spec in self.specs.values():
            register(spec)


@pytest.fixture
def releases(monkeypatch):
    """``add(spec)`` registers a release through the plugin hook (the registry line re-collected)."""
    import harness.registry
    from harness.plugins import loaded_plugins, register_plugin

    plugin = _Releases()
    manager = loaded_plugins().manager
    register_plugin(manager, plugin, "tests-releases")
    cache = dict(harness.registry._cache)
    monkeypatch.setattr(harness.registry, "_cache", cache)

    def add(spec):
        plugin.specs[spec.name] = spec
        cache.pop("embeddings", None)

    try:
        yield add
    finally:
        manager.unregister(plugin)


@pytest.fixture
def registered(releases, monkeypatch):
    """Register releases read by the stand-in reader (``add(spec, reader_factory)``): nothing is
    fetched, the reader is handed to the importer."""
    from harness_builtins.dense.released import importer, use

    readers = {}

    def add(spec, reader):
        releases(spec)
        readers[spec.name] = reader

    original = importer.import_release
    monkeypatch.setattr(use, "fetch", lambda spec, progress: [Path(f"/nonexistent/{spec.name}.bin")])
    monkeypatch.setattr(importer, "import_release",
                        lambda spec, *a, **kw: original(spec, *a, reader=readers[spec.name](), **kw))
    return add


def context(tmp_path):
    return RunContext(cache_dir=tmp_path, threads=1, progress=False)


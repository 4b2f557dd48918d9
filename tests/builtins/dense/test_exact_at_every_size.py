"""Exact dense rankings at every corpus size and on every device, proven or counted: the flat
searches' ceilings, a collapsed encoder on the GPU path (run on CPU devices), a float16 cache
ranked by its float32 copy, the count of a float16 cache without one, and approximate indexes
labelled as such. Every expectation is computed here in float64 numpy, independently."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from helpers.dense_fakes import TableEncoder, cache_of, corpus_of

from harness.errors import HarnessError
from harness_builtins.dense import embeddings, gpu_flat, index as index_module
from harness_builtins.dense.embeddings import CACHE_FORMAT, META_FILE, EmbeddingCache, embed_corpus, shard_name
from harness_builtins.dense.gpu_flat import TorchFlatIP
from harness_builtins.dense.index import DenseIndex, IndexConfig, MappedFlatIP


def _digest(passage_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(passage_id.encode(), digest_size=8).digest(), "big")


def exact_rankings(vectors: np.ndarray, queries: np.ndarray, ids: list[str], k: int) -> list[list[str]]:
    """Each question's top ``k`` by the float64 inner product with the float32 vectors, rounded to
    float32, equal scores by the passage id's blake2b digest (the harness's documented order)."""
    scores = (np.asarray(vectors, np.float64) @ np.asarray(queries, np.float64).T).astype(np.float32)
    out = []
    for q in range(len(queries)):
        column = scores[:, q]
        # every row scoring at least the k-th score (ties there included), then the exact order
        rows = np.flatnonzero(column >= np.partition(column, len(column) - k)[len(column) - k])
        digests = np.array([_digest(ids[r]) for r in rows], dtype=np.uint64)
        out.append([ids[r] for r in rows[np.lexsort((digests, -column[rows].astype(np.float64)))][:k]])
    return out


def collapsed(rows: int, dim: int, queries: int, seed: int = 0, spread: float = 3e-4):
    """A collapsed encoder: every passage vector within ``spread`` (relative) of one vector, so
    scores differ below float16's resolution (2^-11)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(dim).astype(np.float32)
    vectors = (base + spread * rng.standard_normal((rows, dim))).astype(np.float32)
    return vectors, (base + 0.1 * rng.standard_normal((queries, dim))).astype(np.float32)


# --- A2: corpora of up to 2M passages on GPUs ---------------------------------------------------


@pytest.mark.parametrize("devices", [["cpu"], ["cpu", "cpu"]])
@pytest.mark.parametrize("float32_fits", [True, False])
def test_a_collapsed_encoder_keeps_every_float32_top_100_row_on_the_gpu_path(tmp_path, monkeypatch, devices,
                                                                              float32_fits):
    """The GPU flat search (the same torch code on CPU devices) of a float32 cache: in float32
    where it fits, else from a float16 copy whose candidates the ceiling proves (searching again
    with more where it cannot). Today's float16 candidates missed a true top-100 row on 16 of 16
    questions here."""
    vectors, queries = collapsed(3000, 32, 16)
    ids = [f"p{i}" for i in range(len(vectors))]
    cache = cache_of(tmp_path, vectors, "collapsed", shard_size=1000)
    assert cache.meta["dtype"] == "float32"
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: devices)
    if not float32_fits:
        real = gpu_flat.shortfall
        monkeypatch.setattr(gpu_flat, "shortfall", lambda d, n, devs, itemsize=2: "full" if itemsize == 4 else real(d, n, devs))
    index = DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False)
    assert isinstance(index.index, TorchFlatIP)
    ranked = index.ranked(queries, 100)
    assert ranked.ids == exact_rankings(vectors, queries, ids, 100)
    assert ranked.decided_by_rounding == 0
    assert index.compute["search_precision"] == (gpu_flat.SEARCH_PRECISION_FP32 if float32_fits else gpu_flat.SEARCH_PRECISION)
    assert index.index.rounded is not float32_fits
    cpu = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False).ranked(queries, 100)
    assert cpu.ids == ranked.ids and cpu.decided_by_rounding == 0


def _rest_max(vectors: np.ndarray, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The largest exact (float64) score of the rows each question's candidates leave out."""
    exact = np.asarray(queries, np.float64) @ np.asarray(vectors, np.float64).T
    out = np.full(len(queries), -np.inf)
    for q in range(len(queries)):
        keep = np.ones(len(vectors), bool)
        keep[rows[q][rows[q] >= 0]] = False
        if keep.any():
            out[q] = exact[q, keep].max()
    return out


@pytest.mark.parametrize("scale", [1.0, 1e-6, 3e4])
@pytest.mark.parametrize("kind", ["float32", "float16-copy", "faiss", "mapped"])
def test_every_row_left_out_scores_below_the_ceiling(tmp_path, monkeypatch, kind, scale):
    """The ceiling is an upper bound on the exact score of every row a search did not return,
    whatever the magnitude of the questions (their float16 split is scaled)."""
    vectors, queries = collapsed(1500, 24, 12, seed=4)
    spread = np.random.default_rng(5).standard_normal((500, 24)).astype(np.float32)
    vectors = np.concatenate([vectors, spread])
    queries = (queries * scale).astype(np.float32)
    cache = cache_of(tmp_path, vectors, f"ceiling-{kind}", shard_size=400)
    if kind in ("float32", "float16-copy"):
        index = DenseIndex._torch_flat(cache, IndexConfig(kind="flat"), ["cpu", "cpu"], False, full=kind == "float32")
    else:
        monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: [])
        if kind == "mapped":
            monkeypatch.setattr(index_module, "physical_memory", lambda: 0)
        index = DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False)
        assert isinstance(index.index, MappedFlatIP) is (kind == "mapped")
    for m in (5, 50, 400):
        rows, ceiling = index.search_bounded(queries, m)
        assert np.all(np.isfinite(ceiling))
        assert np.all(_rest_max(vectors, queries, rows) <= ceiling)
    rows, ceiling = index.search_bounded(queries, len(vectors))
    assert np.all(ceiling == -np.inf)


def test_questions_the_candidates_cannot_prove_are_counted_and_said(tmp_path, monkeypatch, capsys):
    """Where more equal scores straddle the k-th place than the most candidates searched, the
    ranking is not proven: the question is counted (``decided_by_rounding``) and said once."""
    from harness.api import RunContext
    from harness_builtins.dense.retriever import DenseRetriever

    monkeypatch.setattr(index_module, "MAX_CANDIDATES", 64)
    monkeypatch.setattr(index_module, "_warned", set())
    table = np.ones((300, 4), np.float32)
    query = np.ones(4, np.float32)

    class Same(TableEncoder):
        def encode_queries(self, queries):
            return np.stack([query for _ in queries])

    corpus = corpus_of([(f"p{i}", "", str(i)) for i in range(len(table))], name="same")
    retriever = DenseRetriever(Same(table, "same"))
    retriever.index(corpus, RunContext(cache_dir=tmp_path, progress=False))
    retriever.search(["a", "b"], 10, RunContext(cache_dir=tmp_path, progress=False))
    assert retriever.compute()["decided_by_rounding"] == 2
    assert "2 of 2 questions' top-10 could differ" in capsys.readouterr().err


# --- A3: corpora over 2M passages ---------------------------------------------------------------


def simulated_float16_cache(path, vectors: np.ndarray, *, shard: int, reference: bool) -> EmbeddingCache:
    """A complete float16 cache of ``vectors`` written directly (the layout of
    :mod:`harness_builtins.dense.embeddings`), with its float32 copy (``f32-*.npy``) or without
    (a cache written before the copy existed)."""
    path.mkdir(parents=True)
    count = len(vectors)
    shards = -(-count // shard)
    for s in range(shards):
        block = vectors[s * shard : (s + 1) * shard]
        np.save(path / shard_name("emb", s), block.astype(np.float16))
        np.save(path / shard_name("ids", s), np.array([f"p{i}".encode() for i in range(s * shard, s * shard + len(block))]))
        if reference:
            np.save(path / shard_name("f32", s), block)
    meta = {"format": CACHE_FORMAT, "key": "simulated", "encoder": "simulated", "corpus": "simulated",
            "corpus_fingerprint": "simulated", "passages": count, "shard_size": shard, "shards": shards,
            "dim": vectors.shape[1], "dtype": "float16", "complete": True,
            **({"reference_dtype": "float32"} if reference else {})}
    (path / META_FILE).write_text(json.dumps(meta))
    return EmbeddingCache.open(path)


@pytest.fixture(scope="module")
def simulated_200k():
    """200,000 random float32 passage vectors (32-d) and 100 questions: float16 rounding changes
    the float32 top-100 of several of them (13 here)."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((200_000, 32), dtype=np.float32)
    queries = rng.standard_normal((100, 32), dtype=np.float32)
    ids = [f"p{i}" for i in range(len(vectors))]
    return vectors, queries, exact_rankings(vectors, queries, ids, 100)


@pytest.mark.parametrize("search", ["faiss", "mapped", "gpu"])
def test_a_float16_cache_is_ranked_by_its_float32_copy(tmp_path, monkeypatch, simulated_200k, search):
    """The float16 copy is searched, the candidates proven and re-scored from the float32 copy:
    every question's top-100 is the encoder's own float32 ranking (numpy, float64 sums)."""
    vectors, queries, expected = simulated_200k
    cache = simulated_float16_cache(tmp_path / "c", vectors, shard=50_000, reference=True)
    stored = cache.all_vectors(np.float32)
    changed = sum(a != b for a, b in zip(exact_rankings(stored, queries, [f"p{i}" for i in range(len(vectors))], 100), expected))
    assert changed >= 5  # the float16 values alone would rank these questions otherwise
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: ["cpu"] if search == "gpu" else [])
    if search == "mapped":
        monkeypatch.setattr(index_module, "physical_memory", lambda: 0)
    index = DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False)
    ranked = index.ranked(queries, 100)
    assert ranked.ids == expected
    assert ranked.decided_by_rounding == 0
    # each score is the float32 copy's exact score
    first = int(ranked.ids[0][0][1:])
    assert ranked.scores[0, 0] == np.float32(vectors[first].astype(np.float64) @ queries[0].astype(np.float64))


def test_a_float16_cache_without_its_float32_copy_counts_what_rounding_could_change(tmp_path, simulated_200k):
    """A cache written before the float32 copy existed ranks by float16 values: every question
    whose top-100 differs from the float32 ranking is among those counted."""
    vectors, queries, expected = simulated_200k
    cache = simulated_float16_cache(tmp_path / "c", vectors, shard=50_000, reference=False)
    assert cache.rounded and cache.reference is None
    ranked = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False).ranked(queries, 100)
    differ = sum(a != b for a, b in zip(ranked.ids, expected))
    assert differ >= 5 and ranked.decided_by_rounding >= differ


def test_a_large_corpus_keeps_the_encoders_float32_vectors_beside_its_float16_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(embeddings, "FLOAT32_MAX_PASSAGES", 5)
    vectors = (np.random.default_rng(7).standard_normal((12, 8)) * 3).astype(np.float32)
    corpus = corpus_of([(f"p{i}", "", str(i)) for i in range(12)], name="big")
    cache = embed_corpus(TableEncoder(vectors, "big"), corpus, tmp_path, shard_size=5, chunk_size=3, progress=False)
    names = sorted(p.name for p in cache.path.iterdir())
    assert names == ["emb-00000.npy", "emb-00001.npy", "emb-00002.npy", "f32-00000.npy", "f32-00001.npy",
                     "f32-00002.npy", "ids-00000.npy", "ids-00001.npy", "ids-00002.npy", "meta.json"]
    assert cache.meta["dtype"] == "float16" and cache.meta["reference_dtype"] == "float32"
    np.testing.assert_array_equal(cache.all_vectors(np.float16), vectors.astype(np.float16))
    np.testing.assert_array_equal(np.concatenate([np.load(cache.path / shard_name("f32", s)) for s in range(3)]), vectors)
    np.testing.assert_array_equal(cache.reference_rows(np.array([11, 0, 5])), vectors[[11, 0, 5]].astype(np.float64))
    assert cache.reference_bytes() == 12 * 8 * 4 == 2 * sum(s.nbytes for s in cache.shards)
    # a complete cache missing one float32 shard re-encodes that shard alone
    (cache.path / shard_name("f32", 1)).unlink()
    encoder = TableEncoder(vectors, "big")
    calls = []
    encoder.encode_passages = lambda passages, real=encoder.encode_passages: calls.append(len(passages)) or real(passages)
    again = embed_corpus(encoder, corpus, tmp_path, shard_size=5, chunk_size=5, progress=False)
    assert calls == [5] and again.reference is not None
    np.testing.assert_array_equal(again.reference_rows(np.arange(12)), vectors.astype(np.float64))


def test_a_float16_cache_refuses_values_beyond_float16(tmp_path, monkeypatch):
    monkeypatch.setattr(embeddings, "FLOAT32_MAX_PASSAGES", 2)
    vectors = np.ones((4, 3), np.float32)
    vectors[2, 1] = 1e5
    corpus = corpus_of([(f"p{i}", "", str(i)) for i in range(4)], name="huge")
    with pytest.raises(HarnessError, match="magnitude 1e\\+05, beyond float16's 65504"):
        embed_corpus(TableEncoder(vectors, "huge"), corpus, tmp_path, progress=False)
    assert not list((tmp_path).glob("*/emb-*.npy")) and not list(tmp_path.glob("*/.*.tmp"))


# --- A4: approximate indexes labelled --------------------------------------------------------------


@pytest.mark.parametrize("config, settings", [
    (IndexConfig(kind="hnsw", hnsw_m=8, hnsw_ef_search=40),
     {"index": "hnsw", "hnsw_m": 8, "hnsw_ef_construction": 200, "hnsw_ef_search": 40, "hnsw_metric": "ip"}),
    (IndexConfig(kind="ivfpq", ivf_nlist=4, ivf_nprobe=2, pq_m=2, pq_nbits=4),
     {"index": "ivfpq", "ivf_nlist": 4, "ivf_nprobe": 2, "pq_m": 2, "pq_nbits": 4}),
])
def test_an_approximate_index_records_that_it_is_approximate_with_its_settings(tmp_path, monkeypatch, config, settings):
    monkeypatch.setattr(index_module, "gpu_available", lambda: False)
    vectors = np.random.default_rng(11).standard_normal((700, 8)).astype(np.float32)
    index = DenseIndex.build(cache_of(tmp_path, vectors, "approx"), config, progress=False, save=False)
    assert index.compute["search_precision"] == "approximate"
    assert index.compute["search_index"] == settings
    assert index.search_bounded(vectors[:2], 5)[1] is None  # nothing to prove
    flat = DenseIndex.build(cache_of(tmp_path, vectors, "approx"), IndexConfig(kind="flat", gpu="false"), progress=False)
    assert flat.compute["search_precision"] == "fp32" and "search_index" not in flat.compute


def test_a_result_of_an_approximate_index_records_it(tmp_path):
    from harness.api import RunContext
    from harness.evaluate import evaluate_retriever
    from harness.results.schema import validate
    from harness.testing import toy_suite
    from harness_builtins.dense.retriever import DenseRetriever

    class Random:
        def identity(self):
            return "random-8"

        def encode_queries(self, queries):
            return np.random.default_rng(len(queries)).standard_normal((len(queries), 8)).astype(np.float32)

        def encode_passages(self, passages):
            return np.random.default_rng(len(passages)).standard_normal((len(passages), 8)).astype(np.float32)

    retriever = DenseRetriever(Random(), index=IndexConfig(kind="hnsw", hnsw_m=16))
    result = evaluate_retriever(retriever, toy_suite(), name="approx", plugin="test", k=[1],
                                context=RunContext(cache_dir=tmp_path, progress=False)).result
    validate(result, source="r.json")
    compute = result["compute"]["retriever"]
    assert compute["search_precision"] == "approximate"
    assert compute["search_index"] == {"index": "hnsw", "hnsw_m": 16, "hnsw_ef_construction": 200,
                                       "hnsw_ef_search": 128, "hnsw_metric": "ip"}

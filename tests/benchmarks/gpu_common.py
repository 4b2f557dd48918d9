"""Inputs of the GPU benchmarks, made without downloads: random models built from configurations,
a word-piece vocabulary generated on the spot, synthetic passages, and a DPR-Wikipedia-sized
embedding cache made by hard-linking one shard; and the one JSON line each benchmark writes."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

#: DPR's Wikipedia: passages, and rows per cache shard.
WIKI_PASSAGES = 21_015_324
SHARD = 100_000

#: Where the JSON lines go (one per measurement); stdout too.
OUT = os.environ.get("HARNESS_BENCH_OUT")


def device_record() -> dict[str, Any]:
    import torch

    from harness.util.environment import package_version

    record: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                              "cuda": torch.version.cuda, "cpu_count": os.cpu_count()}
    for name in ("transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu-cu12", "faiss-gpu"):
        if (version := package_version(name)) is not None:
            record[name] = version
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        record.update(gpu=props.name, gpu_count=torch.cuda.device_count(), gpu_memory_gib=round(props.total_memory / 2**30, 1))
    return record


def emit(name: str, **fields: Any) -> dict[str, Any]:
    """Print (and append to ``$HARNESS_BENCH_OUT``) one JSON line: the benchmark, its figures and
    the device."""
    line = {"benchmark": name, **fields, "device": device_record(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    text = json.dumps(line, sort_keys=False)
    print(text, flush=True)
    if OUT:
        with open(OUT, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return line


def peak_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def word_vocab(size: int = 30522) -> list[str]:
    """A WordPiece vocabulary (see :func:`gpu_encode.build_vocab`)."""
    from gpu_encode import build_vocab

    return build_vocab(size)


def bert_dir(root: Path, **config: Any) -> Path:
    """A random BERT (BERT-base unless ``config`` overrides ``BertConfig``) with a generated
    WordPiece tokenizer, saved as a transformers model directory (once per ``root``)."""
    from gpu_encode import build_model, save_tokenizer

    path = root / ("bert-" + "-".join(f"{k}{v}" for k, v in sorted(config.items())) if config else "bert-base")
    if not (path / "config.json").is_file():
        vocab = word_vocab()
        save_tokenizer(path, vocab)
        build_model(path, vocab_size=len(vocab), architectures=["BertModel"], **config)
    return path


def passages(n: int, *, tokens: int = 140, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` synthetic ``(title, text)`` passages of about ``tokens`` BERT tokens (DPR's passage
    length; see :func:`gpu_encode.synthetic_passages`)."""
    from gpu_encode import synthetic_passages

    return synthetic_passages(word_vocab(), n, tokens, seed=seed)


def hardlinked_cache(root: Path, *, rows: int = WIKI_PASSAGES, dim: int = 768, seed: int = 0) -> tuple[Path, np.ndarray]:
    """An embedding cache of ``rows`` float16 vectors (``dim`` wide): one random 100,000-row shard
    written once and hard-linked as every full shard, the remainder a slice of it; ids likewise.
    Returns the cache folder and the base shard (float16): row ``r`` holds ``base[r % 100000]``."""
    from harness_builtins.dense.embeddings import CACHE_FORMAT, META_FILE, shard_name

    path = root / f"wiki-{rows}x{dim}"
    rng = np.random.default_rng(seed)
    base = (rng.standard_normal((min(SHARD, rows), dim), dtype=np.float32) * 0.5).astype(np.float16)
    if (path / META_FILE).is_file():
        return path, base
    path.mkdir(parents=True, exist_ok=True)
    ids = np.array([f"{i}".encode() for i in range(len(base))], dtype="S8")
    np.save(path / "base-emb.npy", base)
    np.save(path / "base-ids.npy", ids)
    shards = -(-rows // SHARD)
    for s in range(shards):
        n = min(SHARD, rows - s * SHARD)
        if n == SHARD:
            os.link(path / "base-emb.npy", path / shard_name("emb", s))
            os.link(path / "base-ids.npy", path / shard_name("ids", s))
        else:
            np.save(path / shard_name("emb", s), base[:n])
            np.save(path / shard_name("ids", s), ids[:n])
    meta = {"format": CACHE_FORMAT, "key": "bench", "encoder": "random", "corpus": "wiki-sim",
            "corpus_fingerprint": f"bench-{rows}", "passages": rows, "shard_size": SHARD, "shards": shards,
            "dim": dim, "dtype": "float16", "complete": True}
    (path / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return path, base


def expected_top(base: np.ndarray, rows: int, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact top ``k`` over a :func:`hardlinked_cache` from its base shard alone (numpy
    float32): each base vector's score repeated for each of its copies, ties by the lower row."""
    wide = base.astype(np.float32)
    scores = queries.astype(np.float32) @ wide.T
    copies = np.full(len(base), rows // len(base))
    copies[: rows % len(base)] += 1
    out_s = np.empty((len(queries), k), np.float32)
    out_r = np.empty((len(queries), k), np.int64)
    for q in range(len(queries)):
        order = np.lexsort((np.arange(len(base)), -scores[q]))
        got: list[int] = []
        for b in order.tolist():
            got += [b + len(base) * c for c in range(int(copies[b]))]
            if len(got) >= k:
                break
        out_r[q] = got[:k]
        out_s[q] = scores[q][out_r[q] % len(base)]
    return out_s, out_r


def cuda_or_skip():
    import pytest

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch



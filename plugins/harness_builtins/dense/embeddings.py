"""Corpus embeddings on disk: float16 ``.npy`` shards, memory-mapped, resumable.

Layout of one cache (``<root>/<corpus name>-<key>/``; the dense retrievers use
``<cache_dir>/dense/``):

- ``meta.json``: format, key, the encoder's :meth:`~harness_builtins.dense.encoders.Encoder.identity`,
  corpus name, fingerprint and size, shard size, dimension, dtype, and ``complete``.
- ``emb-00000.npy`` ...: float16 ``(rows, dim)`` arrays, :data:`DEFAULT_SHARD_SIZE` passages each
  (the last one fewer), in corpus order, opened with ``mmap_mode="r"``.
- ``ids-00000.npy`` ...: the passage ids of those rows (UTF-8 bytes, numpy ``S`` dtype): row to id.
- ``index-*.faiss``: built approximate indexes (see :mod:`harness_builtins.dense.index`).

The key is a digest of the encoder identity (model name and revision, or the content digest of a
local directory; formatting, pooling, max length, precision) and the corpus fingerprint, so any
change to either gives a new cache and an unchanged pair reuses it. The shard size is not part of
the key: an existing cache keeps its own.

Building streams the corpus (``iter(corpus)``) in chunks; memory is bounded by one shard of
vectors (written into a memory-mapped temporary file) and one chunk of passages. Each shard is
written under a temporary name and renamed into place when complete (ids first, vectors last:
a shard counts as done when its ``emb-*.npy`` exists). After an interruption the next build skips
the finished shards (their passages are read past, not encoded) and encodes the rest.
One process builds a given cache at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError, warn
from harness.util.progress import progress as progress_bar
from harness.api import Corpus

from harness_builtins.dense.encoders import Encoder

CACHE_FORMAT = "harness-dense-embeddings/1"
DEFAULT_SHARD_SIZE = 100_000
DEFAULT_CHUNK_SIZE = 1024
META_FILE = "meta.json"
DTYPE = np.float16


def shard_name(kind: str, shard: int) -> str:
    return f"{kind}-{shard:05d}.npy"


def cache_key(encoder_identity: str, corpus_fingerprint: str) -> str:
    blob = json.dumps([CACHE_FORMAT, encoder_identity, corpus_fingerprint], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_path(root: str | os.PathLike, corpus: Corpus, encoder_identity: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus.name).strip("._") or "corpus"
    return Path(root) / f"{slug}-{cache_key(encoder_identity, corpus.fingerprint)[:20]}"


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _remove_stale_temporaries(directory: Path) -> None:
    """Delete temporary files left by a process that is gone (``.NAME.PID.tmp``)."""
    for tmp in directory.glob(".*.tmp"):
        match = re.search(r"\.(\d+)\.tmp$", tmp.name)
        pid = int(match.group(1)) if match else None
        if pid is not None and pid != os.getpid():
            try:
                os.kill(pid, 0)
                continue  # its writer is still running
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
        if pid is not None:
            tmp.unlink(missing_ok=True)


class EmbeddingCache:
    """A complete cache, memory-mapped: per-shard vectors and ids."""

    def __init__(self, path: Path, meta: dict[str, Any]):
        self.path = path
        self.meta = meta
        self.shard_size: int = meta["shard_size"]
        self.count: int = meta["passages"]
        self.dim: int = meta["dim"]
        n = meta["shards"]
        self.shards: list[np.ndarray] = [np.load(path / shard_name("emb", s), mmap_mode="r") for s in range(n)]
        self.ids: list[np.ndarray] = [np.load(path / shard_name("ids", s), mmap_mode="r") for s in range(n)]
        rows = sum(len(s) for s in self.shards)
        if rows != self.count or any(len(a) != len(b) for a, b in zip(self.shards, self.ids)):
            raise HarnessError(f"{path}: embedding shards hold {rows} rows, meta.json says {self.count}; delete it")

    @classmethod
    def open(cls, path: str | os.PathLike) -> EmbeddingCache:
        path = Path(path)
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != CACHE_FORMAT or not meta.get("complete"):
            raise HarnessError(f"{path}: not a complete embedding cache")
        return cls(path, meta)

    def __len__(self) -> int:
        return self.count

    def vectors(self, dtype: Any = np.float32) -> Iterator[np.ndarray]:
        """Each shard's vectors converted to ``dtype`` (one shard in memory at a time)."""
        for shard in self.shards:
            yield np.ascontiguousarray(shard, dtype=dtype)

    def all_vectors(self, dtype: Any = np.float32) -> np.ndarray:
        """Every vector in one array (small corpora, tests)."""
        if not self.shards:
            return np.zeros((0, self.dim), dtype=dtype)
        return np.concatenate(list(self.vectors(dtype)))

    def passage_ids(self, rows: np.ndarray) -> list[str]:
        """The passage id of each row (``rows`` may be any shape; returned flat, row-major)."""
        rows = np.asarray(rows, dtype=np.int64).ravel()
        shard = rows // self.shard_size
        offset = rows - shard * self.shard_size
        return [self.ids[s][o].decode("utf-8") for s, o in zip(shard.tolist(), offset.tolist())]

    def sample(self, n: int, *, seed: int = 0) -> np.ndarray:
        """``n`` distinct rows' vectors (float32), uniformly at random; all when ``n >= len``."""
        if n >= self.count:
            return self.all_vectors()
        rows = np.sort(np.random.default_rng(seed).choice(self.count, size=n, replace=False))
        shard = rows // self.shard_size
        parts = [np.asarray(self.shards[s][rows[shard == s] - s * self.shard_size], dtype=np.float32)
                 for s in np.unique(shard).tolist()]
        return np.ascontiguousarray(np.concatenate(parts))


def embed_corpus(
    encoder: Encoder,
    corpus: Corpus,
    root: str | os.PathLike,
    *,
    shard_size: int = DEFAULT_SHARD_SIZE,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = True,
    on_shard: Callable[[int], None] | None = None,
) -> EmbeddingCache:
    """The corpus's passage embeddings under ``root``: reused when cached, else encoded (resuming
    after the last finished shard of an interrupted build). ``on_shard(i)`` is called after shard
    ``i`` is written."""
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise HarnessError(f"shard_size must be a positive integer, got {shard_size!r}")
    identity = encoder.identity()
    path = cache_path(root, corpus, identity)
    meta = open_meta(identity, corpus, path, shard_size)
    if meta.get("complete"):
        damaged = damaged_shards(path, meta)
        if not damaged:
            return EmbeddingCache(path, meta)
        warn(f"the embedding cache {path} is damaged (shard {', '.join(map(str, damaged))}); re-encoding "
             f"{'it' if len(damaged) == 1 else 'them'}")
        meta["complete"] = False
        _write_json_atomic(path / META_FILE, meta)
    _remove_stale_temporaries(path)
    _build_shards(encoder, corpus, path, meta, chunk_size=chunk_size, progress=progress, on_shard=on_shard)
    meta["complete"] = True
    meta["finished"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    _write_json_atomic(path / META_FILE, meta)
    return EmbeddingCache(path, meta)


def shard_rows(meta: dict[str, Any], shard: int) -> int:
    return min(meta["shard_size"], meta["passages"] - shard * meta["shard_size"])


def damaged_shards(path: Path, meta: dict[str, Any]) -> list[int]:
    """Shards on disk that are not what was written: a file missing beside its twin, unreadable,
    truncated, or of the wrong shape or type (checked from the files' headers and sizes)."""
    bad = []
    for s in range(meta["shards"]):
        emb, ids = path / shard_name("emb", s), path / shard_name("ids", s)
        if not emb.exists() and not meta.get("complete"):
            continue  # not finished yet (the vectors file is renamed into place last)
        try:
            vectors = np.load(emb, mmap_mode="r")
            names = np.load(ids, mmap_mode="r")
            ok = (
                vectors.dtype == np.dtype(DTYPE)
                and vectors.shape == (shard_rows(meta, s), meta["dim"])
                and names.shape == (shard_rows(meta, s),)
            )
        except (OSError, ValueError, EOFError, TypeError):
            ok = False
        if not ok:
            bad.append(s)
    return bad


def open_meta(identity: str, corpus: Corpus, path: Path, shard_size: int) -> dict[str, Any]:
    """The cache's ``meta.json`` at ``path`` when it belongs to this encoder and corpus (complete
    or not), else a new one, with stale shards from another encoder or corpus removed."""
    meta_file = path / META_FILE
    key = cache_key(identity, corpus.fingerprint)
    meta: dict[str, Any] | None = None
    if meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            meta = None
        if meta is not None and (meta.get("format") != CACHE_FORMAT or meta.get("key") != key):
            meta = None  # foreign or older cache in our place: start over
    if meta is not None:
        return meta
    count = len(corpus)
    path.mkdir(parents=True, exist_ok=True)
    for stale in [*path.glob("emb-*.npy"), *path.glob("ids-*.npy"), *path.glob("index-*")]:
        stale.unlink()
    meta = {
        "format": CACHE_FORMAT,
        "key": key,
        "encoder": identity,
        "corpus": corpus.name,
        "corpus_fingerprint": corpus.fingerprint,
        "passages": count,
        "shard_size": shard_size,
        "shards": (count + shard_size - 1) // shard_size,
        "dim": None,
        "dtype": np.dtype(DTYPE).name,
        "complete": False,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    _write_json_atomic(meta_file, meta)
    return meta


def _build_shards(
    encoder: Encoder,
    corpus: Corpus,
    path: Path,
    meta: dict[str, Any],
    *,
    chunk_size: int,
    progress: bool,
    on_shard: Callable[[int], None] | None,
    todo: set[int] | None = None,
    record_dim: bool = True,
) -> None:
    """Encode every shard not yet on disk, or only those in ``todo`` (reading past the others'
    passages); ``record_dim=False`` leaves ``meta.json`` alone (a distributed rank's case)."""
    count, shard_size, shards = meta["passages"], meta["shard_size"], meta["shards"]
    bad = set(damaged_shards(path, meta))
    for s in bad:  # truncated, emptied or half-written by hand: encode again
        (path / shard_name("emb", s)).unlink(missing_ok=True)
        (path / shard_name("ids", s)).unlink(missing_ok=True)
    done = [(path / shard_name("emb", s)).is_file() and s not in bad for s in range(shards)]
    if todo is not None:
        done = [d or s not in todo for s, d in enumerate(done)]
    sizes = [min(shard_size, count - s * shard_size) for s in range(shards)]
    passages = iter(corpus)
    encoded_before = sum(size for size, d in zip(sizes, done) if d)
    started = time.perf_counter()
    encoded = 0
    with progress_bar(total=count, initial=encoded_before, desc="dense encode", unit="psg", enabled=progress) as bar:
        for s in range(shards):
            if done[s]:
                skipped = sum(1 for _ in zip(range(sizes[s]), passages))
                if skipped != sizes[s]:
                    raise HarnessError(f"corpus {corpus.name!r} yielded fewer passages than its length {count}")
                continue
            tmp_ids = path / f".{shard_name('ids', s)}.{os.getpid()}.tmp"
            tmp_emb = path / f".{shard_name('emb', s)}.{os.getpid()}.tmp"
            vectors: np.ndarray | None = None
            ids: list[str] = []
            row = 0
            try:
                while row < sizes[s]:
                    chunk = [p for _, p in zip(range(min(chunk_size, sizes[s] - row)), passages)]
                    if not chunk:
                        raise HarnessError(f"corpus {corpus.name!r} yielded fewer passages than its length {count}")
                    out = np.asarray(encoder.encode_passages([(p.title, p.text) for p in chunk]))
                    if out.ndim != 2 or out.shape[0] != len(chunk):
                        raise HarnessError(
                            f"encoder returned an array of shape {out.shape} for {len(chunk)} passages"
                        )
                    if not np.isfinite(out).all():
                        raise HarnessError("encoder returned NaN or infinite values")
                    if meta["dim"] is None:
                        meta["dim"] = int(out.shape[1])
                        if record_dim:
                            _write_json_atomic(path / META_FILE, meta)
                    elif out.shape[1] != meta["dim"]:
                        raise HarnessError(f"encoder returned {out.shape[1]}-d vectors, the cache holds {meta['dim']}-d")
                    if vectors is None:
                        vectors = np.lib.format.open_memmap(tmp_emb, mode="w+", dtype=DTYPE, shape=(sizes[s], meta["dim"]))
                    vectors[row : row + len(chunk)] = out
                    ids.extend(p.id for p in chunk)
                    row += len(chunk)
                    encoded += len(chunk)
                    bar.update(len(chunk))
                    bar.set_postfix(psg_s=f"{encoded / max(time.perf_counter() - started, 1e-9):.1f}", refresh=False)
                assert vectors is not None
                vectors.flush()
                del vectors
                vectors = None
                width = max(1, max(len(i.encode("utf-8")) for i in ids))
                with open(tmp_ids, "wb") as f:
                    np.save(f, np.array([i.encode("utf-8") for i in ids], dtype=f"S{width}"))
                os.replace(tmp_ids, path / shard_name("ids", s))
                os.replace(tmp_emb, path / shard_name("emb", s))  # the shard is done once this exists
            except BaseException:
                vectors = None
                tmp_ids.unlink(missing_ok=True)
                tmp_emb.unlink(missing_ok=True)
                raise
            if on_shard is not None:
                on_shard(s)
    if next(passages, None) is not None:
        raise HarnessError(f"corpus {corpus.name!r} yielded more passages than its length {count}")

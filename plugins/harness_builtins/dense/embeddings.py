"""Corpus embeddings on disk: float32 or float16 ``.npy`` shards, memory-mapped, resumable.

Layout of one cache (``<root>/<corpus name>-<key>/``; the dense retrievers use
``<cache_dir>/dense/``):

- ``meta.json``: format, key, the encoder's :meth:`~harness_builtins.dense.encoders.Encoder.identity`,
  corpus name, fingerprint and size, shard size, dimension, dtype, and ``complete``.
- ``emb-00000.npy`` ...: ``(rows, dim)`` arrays of :func:`storage_dtype` (float32 up to
  :data:`FLOAT32_MAX_PASSAGES` passages, float16 beyond), :data:`DEFAULT_SHARD_SIZE` passages each
  (the last one fewer), in corpus order, opened with ``mmap_mode="r"``.
- ``ids-00000.npy`` ...: the passage ids of those rows (UTF-8 bytes, numpy ``S`` dtype): row to id.
- ``f32-00000.npy`` ...: in a float16 cache, the encoder's float32 vectors of the same rows
  (``meta["reference_dtype"]``: ``float32``), read only for each question's candidates.
- ``index-*.faiss``: built approximate indexes (see :mod:`harness_builtins.dense.index`).

**Precision.** A corpus of up to :data:`FLOAT32_MAX_PASSAGES` passages keeps the encoder's float32
vectors exactly, so every score the search computes is the model's own. A larger one keeps a
float16 search copy (DPR's 21M x 768: 30 GiB, searched on CPU or copied to GPUs) and, beside it,
the float32 vectors (``f32-*.npy``, twice the float16 bytes: 60 GiB more for DPR's 21M, 90 GiB
in all), from which the final ranking re-scores each question's candidates: the search proves its
candidates hold the float32 top-k from the float16 rounding bound
(:mod:`~harness_builtins.dense.bounds`), so the ranking is the encoder's own. A float16 cache
written before the float32 copy existed (no ``reference_dtype``) is still searched; its rankings
are made from the float16 values, and the questions whose top-k the rounding could have changed
are counted.

**Imported releases** (:mod:`harness_builtins.dense.released.importer`, ``-o embeddings=NAME``)
are caches of this same layout under ``<root>/<corpus name>-release-<key>/``, keyed by the
release's name, the digest of its parts and the corpus fingerprint: float32 whatever the corpus
size (the release's own values), one row per release vector in the release's order (passages the
release lacks have no row and are never retrieved), ``meta.json`` recording the release
(``release``: name, digest, format, parts, the id mapping). When a release's vectors lie float32 in
row order in one file (a faiss flat index), ``meta["store"]`` names that file, byte offset, size
and time, and the shards are views of it memory-mapped in place (:func:`mapped_store_shards`)
instead of ``emb-*.npy`` copies.

The key is a digest of the encoder identity (model name and revision, or the content digest of a
local directory; formatting, pooling, max length, precision) and the corpus fingerprint, so any
change to either gives a new cache and an unchanged pair reuses it. The shard size is not part of
the key: an existing cache keeps its own.

Building reads the corpus in chunks: by position (``passage_at(row)``, e.g. a corpus store,
also behind a :class:`~harness.data.corpora.LazyCorpus`) only the rows of the shards to encode,
otherwise streamed (``iter(corpus)``), reading past the other shards' passages. Memory is bounded
by one shard of vectors (written into a memory-mapped temporary file) and one chunk of passages.
Each shard is written under a temporary name and renamed into place when complete (ids first,
vectors last: a shard counts as written when its ``emb-*.npy`` exists). After an interruption the
next build keeps the finished shards (:func:`shard_states`: both files there, with the expected
rows, dtype and a width shared with the other finished shards; the width is learnt from them when
``meta.json`` has none, as a distributed build leaves it), deletes damaged ones and encodes the
rest. One process, or one distributed job, builds a given cache at a time.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError, warn
from harness.util.progress import progress as progress_bar
from harness.api import Corpus, Passage

from harness_builtins.dense.encoders import Encoder
from harness_builtins.dense.options import INDEX_OPTIONS

CACHE_FORMAT = "harness-dense-embeddings/1"
DEFAULT_SHARD_SIZE = 100_000
DEFAULT_CHUNK_SIZE = 1024
META_FILE = "meta.json"
DTYPE = np.float16
#: The dtype of a float16 cache's reference copy (``f32-*.npy``), recorded as ``reference_dtype``.
REFERENCE_DTYPE = np.float32
#: float16's largest finite value: a float16 cache refuses vectors beyond it.
FLOAT16_MAX = float(np.finfo(np.float16).max)
#: Corpora up to this many passages keep float32 vectors (2M x 768 = 5.7 GiB); larger ones float16.
FLOAT32_MAX_PASSAGES = 2_000_000


def storage_dtype(passages: int) -> np.dtype:
    """The dtype a corpus of ``passages`` passages is cached in (see the module notes)."""
    return np.dtype(np.float32 if passages <= FLOAT32_MAX_PASSAGES else DTYPE)


def shard_name(kind: str, shard: int) -> str:
    return f"{kind}-{shard:05d}.npy"


def cache_key(encoder_identity: str, corpus_fingerprint: str, dtype: Any = DTYPE) -> str:
    """Digest of the encoder identity, the corpus and the storage dtype (float16 adds nothing, so
    float16 caches keep the keys they had before float32 ones existed)."""
    parts = [CACHE_FORMAT, encoder_identity, corpus_fingerprint]
    if np.dtype(dtype) != np.dtype(DTYPE):
        parts.append(np.dtype(dtype).name)
    blob = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_path(root: str | os.PathLike, corpus: Corpus, encoder_identity: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus.name).strip("._") or "corpus"
    return Path(root) / f"{slug}-{cache_key(encoder_identity, corpus.fingerprint, storage_dtype(len(corpus)))[:20]}"


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
        store = meta.get("store")
        if store is not None:
            self.shards: list[np.ndarray] = mapped_store_shards(path, store, self.shard_size, self.count, self.dim)
        else:
            self.shards = [np.load(path / shard_name("emb", s), mmap_mode="r") for s in range(n)]
        self.ids: list[np.ndarray] = [np.load(path / shard_name("ids", s), mmap_mode="r") for s in range(n)]
        rows = sum(len(s) for s in self.shards)
        if rows != self.count or any(len(a) != len(b) for a, b in zip(self.shards, self.ids)):
            raise HarnessError(f"{path}: embedding shards hold {rows} rows, meta.json says {self.count}; delete it")
        #: A float16 cache's float32 copy (``f32-*.npy``), memory-mapped; None when the stored
        #: shards are the reference themselves.
        self.reference: list[np.ndarray] | None = None
        if has_reference(meta):
            self.reference = [np.load(path / shard_name("f32", s), mmap_mode="r") for s in range(n)]
            if any(r.shape != v.shape or r.dtype != REFERENCE_DTYPE for r, v in zip(self.reference, self.shards)):
                raise HarnessError(f"{path}: its float32 shards (f32-*.npy) do not match its float16 ones; delete it")
        #: Passages this process encoded to complete the cache, and the seconds it took (0 and 0.0
        #: when it was complete already: :func:`embed_corpus` sets them).
        self.encoded: int = 0
        self.encode_seconds: float = 0.0

    @classmethod
    def open(cls, path: str | os.PathLike) -> EmbeddingCache:
        path = Path(path)
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != CACHE_FORMAT or not meta.get("complete"):
            raise HarnessError(f"{path}: not a complete embedding cache")
        return cls(path, meta)

    def __len__(self) -> int:
        return self.count

    @property
    def release(self) -> dict[str, Any] | None:
        """Where an imported release's vectors came from (``meta["release"]``), or None when this
        cache was encoded here."""
        return self.meta.get("release")

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

    def rows(self, rows: np.ndarray, dtype: Any = np.float64, *, shards: list[np.ndarray] | None = None) -> np.ndarray:
        """The stored vectors of ``rows`` (any order, repeats allowed), converted to ``dtype``."""
        shards = self.shards if shards is None else shards
        rows = np.asarray(rows, dtype=np.int64).ravel()
        out = np.empty((len(rows), self.dim), dtype=dtype)
        shard = rows // self.shard_size
        for s in np.unique(shard).tolist():
            chosen = shard == s
            out[chosen] = shards[s][rows[chosen] - s * self.shard_size]
        return out

    def reference_rows(self, rows: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        """The encoder's vectors of ``rows``: the float32 copy of a float16 cache (only these rows
        are read), else the stored ones."""
        return self.rows(rows, dtype, shards=self.reference)

    @property
    def rounded(self) -> bool:
        """Whether the only vectors kept are a float16 rounding of the encoder's (a float16 cache
        without its float32 copy): rankings are then made from rounded values."""
        return self.reference is None and bool(self.shards) and self.shards[0].dtype == np.float16

    def reference_bytes(self) -> int:
        """Bytes of the float32 copy beside a float16 cache (0 without one)."""
        return int(sum(r.nbytes for r in self.reference)) if self.reference is not None else 0

    def sample(self, n: int, *, seed: int = 0) -> np.ndarray:
        """``n`` distinct rows' vectors (float32), uniformly at random; all when ``n >= len``."""
        if n >= self.count:
            return self.all_vectors()
        rows = np.sort(np.random.default_rng(seed).choice(self.count, size=n, replace=False))
        shard = rows // self.shard_size
        parts = [np.asarray(self.shards[s][rows[shard == s] - s * self.shard_size], dtype=np.float32)
                 for s in np.unique(shard).tolist()]
        return np.ascontiguousarray(np.concatenate(parts))


#: An in-place store file up to this size is hashed whole by :func:`store_fingerprint` (well under
#: a second); a larger one at :data:`STORE_SAMPLES` rows spread evenly over it, with its header.
STORE_FULL_HASH_BYTES = 256 << 20
STORE_SAMPLES = 256


def store_fingerprint(file: str | os.PathLike, offset: int, rows: int, dim: int) -> str:
    """A digest of an in-place store's content: the whole file when it is at most
    :data:`STORE_FULL_HASH_BYTES` (``full:``), else its header and :data:`STORE_SAMPLES` rows
    spread evenly over the block, the first and last among them (``sampled:``); the rows read are
    the same for the same shape, so the digest changes when any byte it covers does."""
    digest = hashlib.sha256()
    end = offset + 4 * rows * dim
    with open(file, "rb") as f:
        if end <= STORE_FULL_HASH_BYTES:
            while block := f.read(16 << 20):
                digest.update(block)
            return f"full:{digest.hexdigest()}"
        digest.update(f.read(offset))
        row_bytes = 4 * dim
        for row in np.unique(np.linspace(0, rows - 1, STORE_SAMPLES).astype(np.int64)).tolist():
            f.seek(offset + row * row_bytes)
            digest.update(f.read(row_bytes))
    return f"sampled:{digest.hexdigest()}"


def mapped_store_shards(path: Path, store: dict[str, Any], shard_size: int, rows: int, dim: int) -> list[np.ndarray]:
    """The shards of a cache whose float32 vectors lie in another file (``meta["store"]``: a
    release's own contiguous block, memory-mapped in place): read-only views of ``shard_size``
    rows each. The file must still be the one recorded: its size, modification time and, where
    recorded, its content (:func:`store_fingerprint`: a change in place that kept the size and
    time is noticed too); a release deleted or changed since the import is an error naming it."""
    file = Path(store["path"])
    offset, stored_rows = int(store["offset"]), int(store["rows"])
    try:
        st = file.stat()
    except OSError:
        raise HarnessError(f"{path}: its vectors lie in {file}, which is gone; fetch the release again or delete "
                           f"{path} to import it afresh") from None
    if stored_rows != rows or st.st_size != store.get("size") or st.st_mtime_ns != store.get("mtime_ns"):
        raise HarnessError(f"{path}: its vectors lie in {file}, which changed since it was imported (size or time); "
                           f"delete {path} to import the release again")
    if offset + 4 * rows * dim > st.st_size:
        raise HarnessError(f"{file} is too short for {rows} float32 vectors of width {dim} at byte {offset}")
    recorded = store.get("fingerprint")
    if recorded is not None and store_fingerprint(file, offset, rows, dim) != recorded:
        raise HarnessError(f"{path}: its vectors lie in {file}, whose content changed since it was imported; "
                           f"delete {path} to import the release again")
    if rows == 0:
        return []
    block = np.memmap(file, dtype=np.float32, mode="r", offset=offset, shape=(rows, dim))
    return [block[start : start + shard_size] for start in range(0, rows, shard_size)]


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
    shard_size = INDEX_OPTIONS.declaration("shard_size").check(shard_size, "shard_size")
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
    todo = resume_shards(path, meta)
    started = time.perf_counter()
    _build_shards(encoder, corpus, path, meta, todo=todo, chunk_size=chunk_size, progress=progress, on_shard=on_shard)
    seconds = time.perf_counter() - started
    meta["complete"] = True
    meta["finished"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cache = EmbeddingCache(path, meta)  # opened (every shard read) before meta.json says complete
    _write_json_atomic(path / META_FILE, meta)
    cache.encoded, cache.encode_seconds = sum(shard_rows(meta, shard) for shard in todo), seconds
    return cache


def has_reference(meta: dict[str, Any]) -> bool:
    """Whether a cache keeps float32 copies (``f32-*.npy``) beside float16 shards."""
    return meta.get("reference_dtype") == np.dtype(REFERENCE_DTYPE).name and meta.get("dtype") == np.dtype(DTYPE).name


def shard_rows(meta: dict[str, Any], shard: int) -> int:
    return min(meta["shard_size"], meta["passages"] - shard * meta["shard_size"])


@dataclass
class ShardStates:
    """What :func:`shard_states` found on disk."""

    #: shards whose files are what was written, with vectors ``dim`` wide.
    finished: list[int]
    #: shards whose vectors file is there but something is wrong -> what is wrong.
    damaged: dict[int, str]
    #: shards without a vectors file (never finished).
    missing: list[int]
    #: the cache's vector width: meta.json's, else learnt from the finished shards (None: unknown).
    dim: int | None

    @property
    def todo(self) -> list[int]:
        """The shards still to encode, in order."""
        return sorted([*self.missing, *self.damaged])


def _shard_width(path: Path, meta: dict[str, Any], shard: int) -> int | str:
    """The vector width of a shard whose vectors file exists, or what is wrong with its files
    (unreadable, truncated, or the wrong dtype or rows; checked from headers and sizes)."""
    rows = shard_rows(meta, shard)
    arrays = []
    for kind in ("emb", "ids"):
        try:
            arrays.append(np.load(path / shard_name(kind, shard), mmap_mode="r"))
        except (OSError, ValueError, EOFError, TypeError) as exc:
            return f"{shard_name(kind, shard)} cannot be read ({type(exc).__name__})"
    vectors, names = arrays
    dtype = np.dtype(meta.get("dtype", np.dtype(DTYPE).name))
    if vectors.dtype != dtype or vectors.ndim != 2 or vectors.shape[0] != rows or vectors.shape[1] < 1:
        expected = f"expected {rows} rows of {dtype.name}"
        return f"{shard_name('emb', shard)} holds {vectors.dtype} of shape {vectors.shape}, {expected}"
    if names.dtype.kind != "S" or names.shape != (rows,):
        return f"{shard_name('ids', shard)} holds {names.dtype} of shape {names.shape}, expected {rows} ids"
    if has_reference(meta):
        try:
            reference = np.load(path / shard_name("f32", shard), mmap_mode="r")
        except (OSError, ValueError, EOFError, TypeError) as exc:
            return f"{shard_name('f32', shard)} cannot be read ({type(exc).__name__})"
        if reference.dtype != REFERENCE_DTYPE or reference.shape != vectors.shape:
            return (f"{shard_name('f32', shard)} holds {reference.dtype} of shape {reference.shape}, expected "
                    f"{vectors.shape} float32")
    return int(vectors.shape[1])


def shard_states(path: Path, meta: dict[str, Any]) -> ShardStates:
    """Every shard's state on disk. The width is meta.json's ``dim`` or, when it has none, the most
    common width of the readable shards (ties: the lowest shard's); a shard of another width is
    damaged."""
    widths: dict[int, int] = {}
    damaged: dict[int, str] = {}
    missing: list[int] = []
    for s in range(meta["shards"]):
        if not (path / shard_name("emb", s)).exists():
            missing.append(s)  # not finished (the vectors file is renamed into place last)
            continue
        width = _shard_width(path, meta, s)
        if isinstance(width, str):
            damaged[s] = width
        else:
            widths[s] = width
    dim = meta.get("dim")
    if dim is None and widths:
        dim = Counter(widths.values()).most_common(1)[0][0]
    for s, width in widths.items():
        if width != dim:
            damaged[s] = f"{shard_name('emb', s)} holds {width}-d vectors, the cache {dim}-d"
    finished = [s for s, width in widths.items() if width == dim]
    return ShardStates(finished=finished, damaged=dict(sorted(damaged.items())), missing=missing, dim=dim)


def damaged_shards(path: Path, meta: dict[str, Any]) -> list[int]:
    """Shards on disk that are not what was written (:func:`shard_states`), and in a complete
    cache the missing ones too."""
    states = shard_states(path, meta)
    return sorted([*states.damaged, *(states.missing if meta.get("complete") else [])])


def resume_shards(path: Path, meta: dict[str, Any]) -> list[int]:
    """Ready an unfinished cache for encoding what is left: damaged shards deleted, the width
    learnt from finished shards recorded in ``meta`` and meta.json. Returns the shards to encode."""
    states = shard_states(path, meta)
    for s in states.damaged:
        (path / shard_name("emb", s)).unlink(missing_ok=True)
        (path / shard_name("ids", s)).unlink(missing_ok=True)
        (path / shard_name("f32", s)).unlink(missing_ok=True)
    if meta.get("dim") is None and states.dim is not None:
        meta["dim"] = states.dim
        _write_json_atomic(path / META_FILE, meta)
    return states.todo


def open_meta(identity: str, corpus: Corpus, path: Path, shard_size: int) -> dict[str, Any]:
    """The cache's ``meta.json`` at ``path`` when it belongs to this encoder and corpus (complete
    or not), else a new one, with stale shards from another encoder or corpus removed."""
    meta_file = path / META_FILE
    count = len(corpus)
    dtype = storage_dtype(count)
    key = cache_key(identity, corpus.fingerprint, dtype)
    meta: dict[str, Any] | None = None
    if meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            meta = None
        if meta is not None and (meta.get("format") != CACHE_FORMAT or meta.get("key") != key):
            meta = None  # foreign or older cache in our place: start over
        elif meta is not None and (problem := _layout_problem(meta, count)) is not None:
            warn(f"the embedding cache {path} is not what its meta.json describes ({problem}); encoding it again")
            meta = None
    if meta is not None:
        return meta
    path.mkdir(parents=True, exist_ok=True)
    for stale in [*path.glob("emb-*.npy"), *path.glob("ids-*.npy"), *path.glob("f32-*.npy"), *path.glob("index-*")]:
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
        "dtype": dtype.name,
        **({"reference_dtype": np.dtype(REFERENCE_DTYPE).name} if dtype == np.dtype(DTYPE) else {}),
        "complete": False,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    _write_json_atomic(meta_file, meta)
    return meta


def _layout_problem(meta: dict[str, Any], count: int) -> str | None:
    """What is wrong with the shard layout a cache's ``meta.json`` records for a corpus of
    ``count`` passages (a shard size out of the option's bounds, a shard count that does not
    follow from it), or None."""
    shard_size, shards = meta.get("shard_size"), meta.get("shards")
    if meta.get("passages") != count:
        return f"passages {meta.get('passages')!r}, the corpus has {count}"
    try:
        INDEX_OPTIONS.declaration("shard_size").check(shard_size, "shard_size")
    except HarnessError as exc:
        return str(exc)
    if type(shard_size) is not int:
        return f"shard_size {shard_size!r} is not an integer"
    if type(shards) is not int or shards != (count + shard_size - 1) // shard_size:
        return f"shards {shards!r} for {count} passages of {shard_size} per shard"
    return None


def _build_shards(
    encoder: Encoder,
    corpus: Corpus,
    path: Path,
    meta: dict[str, Any],
    *,
    todo: Iterable[int],
    chunk_size: int,
    progress: bool,
    on_shard: Callable[[int], None] | None,
    record_dim: bool = True,
) -> None:
    """Encode the shards in ``todo``, in order, touching no other shard; ``record_dim=False``
    leaves ``meta.json`` alone (a distributed rank's case)."""
    todo = set(todo)
    count = meta["passages"]
    sizes = [shard_rows(meta, s) for s in range(meta["shards"])]
    started = time.perf_counter()
    encoded = 0
    with progress_bar(total=count, initial=count - sum(sizes[s] for s in todo), desc="dense encode", unit="psg",
                      enabled=progress) as bar:

        def advance(rows: int) -> None:
            nonlocal encoded
            encoded += rows
            bar.update(rows)
            bar.set_postfix(psg_s=f"{encoded / max(time.perf_counter() - started, 1e-9):.1f}", refresh=False)

        for s, passages in _todo_passages(corpus, sizes, todo):
            _write_shard(encoder, passages, path, meta, s, sizes[s], chunk_size=chunk_size, record_dim=record_dim,
                         advance=advance)
            if on_shard is not None:
                on_shard(s)


def _passage_at(corpus: Corpus) -> Callable[[int], Passage] | None:
    """The corpus's positional access, ``passage_at(row)`` (a corpus store's, also behind a
    :class:`~harness.data.corpora.LazyCorpus`), or None."""
    from harness.data.corpora import LazyCorpus

    if isinstance(corpus, LazyCorpus):
        corpus = corpus.open()
    at = getattr(corpus, "passage_at", None)
    return at if callable(at) else None


def _todo_passages(corpus: Corpus, sizes: list[int], todo: set[int]) -> Iterator[tuple[int, Iterator[Passage]]]:
    """Each shard in ``todo``, in order, with an iterator over exactly its passages: read by
    position when the corpus allows it (only these rows), else streamed."""
    at = _passage_at(corpus)
    if at is None:
        return _streamed(corpus, sizes, todo)
    starts = list(itertools.accumulate(sizes, initial=0))
    return ((s, map(at, range(starts[s], starts[s] + sizes[s]))) for s in sorted(todo))


def _streamed(corpus: Corpus, sizes: list[int], todo: set[int]) -> Iterator[tuple[int, Iterator[Passage]]]:
    """:func:`_todo_passages` from ``iter(corpus)``: the other shards' passages are read past, and
    the corpus must yield exactly ``len(corpus)`` passages."""
    passages = iter(corpus)
    for s, size in enumerate(sizes):
        shard = _exactly(passages, size, corpus)
        if s in todo:
            yield s, shard
        deque(shard, maxlen=0)  # what the caller left (all of a skipped shard)
    if next(passages, None) is not None:
        raise HarnessError(f"corpus {corpus.name!r} yielded more passages than its length {len(corpus)}")


def _exactly(passages: Iterator[Passage], rows: int, corpus: Corpus) -> Iterator[Passage]:
    """The next ``rows`` passages; fewer is an error."""
    for _ in range(rows):
        passage = next(passages, None)
        if passage is None:
            raise HarnessError(f"corpus {corpus.name!r} yielded fewer passages than its length {len(corpus)}")
        yield passage


def _write_shard(
    encoder: Encoder,
    passages: Iterator[Passage],
    path: Path,
    meta: dict[str, Any],
    shard: int,
    rows: int,
    *,
    chunk_size: int,
    record_dim: bool,
    advance: Callable[[int], None],
) -> None:
    """Encode ``rows`` passages into a memory-mapped temporary, then rename the ids, the float32
    copy (a float16 cache's) and the vectors into place (in that order: the shard is done once
    ``emb-*.npy`` exists)."""
    tmp_ids = path / f".{shard_name('ids', shard)}.{os.getpid()}.tmp"
    tmp_emb = path / f".{shard_name('emb', shard)}.{os.getpid()}.tmp"
    tmp_ref = path / f".{shard_name('f32', shard)}.{os.getpid()}.tmp"
    keep_reference = has_reference(meta)
    vectors: np.ndarray | None = None
    reference: np.ndarray | None = None
    ids: list[str] = []
    try:
        while len(ids) < rows:
            chunk = list(itertools.islice(passages, min(chunk_size, rows - len(ids))))
            out = _encode_chunk(encoder, chunk, path, meta, record_dim=record_dim)
            if vectors is None:
                shape = (rows, meta["dim"])
                vectors = np.lib.format.open_memmap(tmp_emb, mode="w+", dtype=np.dtype(meta["dtype"]), shape=shape)
                if keep_reference:
                    reference = np.lib.format.open_memmap(tmp_ref, mode="w+", dtype=REFERENCE_DTYPE, shape=shape)
            if reference is not None:
                # the float16 copy is the rounding of these float32 values (the search's bounds say so)
                reference[len(ids) : len(ids) + len(chunk)] = out
                vectors[len(ids) : len(ids) + len(chunk)] = reference[len(ids) : len(ids) + len(chunk)]
            else:
                vectors[len(ids) : len(ids) + len(chunk)] = out
            ids.extend(p.id for p in chunk)
            advance(len(chunk))
        vectors.flush()
        vectors = None
        if reference is not None:
            reference.flush()
            reference = None
        width = max(1, max(len(i.encode("utf-8")) for i in ids))
        with open(tmp_ids, "wb") as f:
            np.save(f, np.array([i.encode("utf-8") for i in ids], dtype=f"S{width}"))
        os.replace(tmp_ids, path / shard_name("ids", shard))
        if keep_reference:
            os.replace(tmp_ref, path / shard_name("f32", shard))
        os.replace(tmp_emb, path / shard_name("emb", shard))
    except BaseException:
        vectors = reference = None
        tmp_ids.unlink(missing_ok=True)
        tmp_emb.unlink(missing_ok=True)
        tmp_ref.unlink(missing_ok=True)
        raise


def _encode_chunk(encoder: Encoder, chunk: list[Passage], path: Path, meta: dict[str, Any], *, record_dim: bool) -> np.ndarray:
    """The encoder's vectors for ``chunk``, checked; the first chunk of a cache without a width
    sets ``meta["dim"]`` (and meta.json's with ``record_dim``)."""
    out = np.asarray(encoder.encode_passages([(p.title, p.text) for p in chunk]))
    if out.ndim != 2 or out.shape[0] != len(chunk):
        raise HarnessError(f"encoder returned an array of shape {out.shape} for {len(chunk)} passages")
    if not np.isfinite(out).all():
        raise HarnessError("encoder returned NaN or infinite values")
    if np.dtype(meta["dtype"]) == np.dtype(DTYPE) and out.size and float(np.abs(out).max()) > FLOAT16_MAX:
        raise HarnessError(f"encoder returned a value of magnitude {float(np.abs(out).max()):.4g}, beyond float16's "
                           f"{FLOAT16_MAX:g}: a corpus of over {FLOAT32_MAX_PASSAGES:,} passages keeps a float16 "
                           "search copy")
    if meta["dim"] is None:
        meta["dim"] = int(out.shape[1])
        if record_dim:
            _write_json_atomic(path / META_FILE, meta)
    elif out.shape[1] != meta["dim"]:
        raise HarnessError(f"encoder returned {out.shape[1]}-d vectors, the cache holds {meta['dim']}-d")
    return out

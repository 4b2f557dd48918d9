"""A release's vectors imported into an embedding cache: ids mapped, checked, streamed, resumable.

:func:`import_release` reads a release (:class:`~harness.api.ReleasedEmbeddings`, its downloaded
parts, through :func:`~harness_builtins.dense.released.formats.open_release`) chunk by chunk in
the release's order and writes the cache :mod:`harness_builtins.dense.embeddings` describes, under
``<cache_root>/<corpus>-release-<key>/`` (:func:`release_cache_path`): float32 whatever the
corpus's size, one row per release vector, in the release's order.

**Ids.** Every release id, less the release's ``id_prefix``, is looked up among the corpus's
passage ids (a corpus store's own id index, else a dictionary built from the corpus); never by
position. The rules:

- an id that is not a passage of the corpus is an error naming the file, the id and its row; when
  none of the first chunk's ids is a passage id, the error says the release's ids do not match the
  corpus at all (with an id of each, so a wrong ``id_prefix`` shows);
- an id twice (in one chunk or across chunks) is an error naming the id and both rows;
- corpus passages the release lacks have no row: they can never be retrieved. They are counted
  and named (``meta["release"]["mapping"]``); a release that lacks more than
  :data:`MAX_MISSING_SHARE` of the corpus is an error (it is not this corpus's release: DPR's
  lack 4 or 24 of 21,015,324 passages);
- a width other than the spec's ``dim``, a row count other than the spec's ``rows``, or a
  non-finite value is an error naming the file.

**Memory.** One chunk of the reader, one shard's memory-mapped temporary (``shard_size`` rows,
0.3 GB at 100,000 x 768) and, for ids, a ``uint32`` file of one entry per corpus passage (which
release row holds it: 84 MB at 21M) are all it holds; a corpus store maps ids to rows from its
own memory-mapped index.

**In place.** When the release's vectors lie float32 in row order in one file
(``reader.contiguous()``: a faiss flat index), nothing is copied: the ids are mapped and the
vectors read once to be checked (finite), and the cache's ``meta.json`` records the file, offset,
size and time (``store``); its shards are views of that file. Every other format is copied into
float32 ``emb-*.npy`` shards.

**Disk**, for DPR's Wikipedia (about 21M x 768; the cache's ids take 8-9 bytes a passage, 0.2 GB):

- ``faiss-flat`` (pyserini): the ``.tar.gz`` (59.8 GB; 37.8 GB for the DKRR ones) and the folder
  it is unpacked into beside it (``index`` 64.6 GB, ``docid`` 0.2 GB), which the cache maps in
  place: 125 GB while importing; once imported, a release whose checksums its spec pins is not
  fetched again, so the archive may be deleted (65 GB), never the unpacked folder.
- ``dpr-pickle``, ``wiki-dpr``: the downloads (their float32 vectors plus pickle or parquet
  framing, about 65 GB and 75 GB with wiki_dpr's texts) plus 64.6 GB of float32 shards.
- ``contriever-pickle``: the tar (float16: about 32 GB) plus 64.6 GB of float32 shards (the
  float16 values widened exactly).
- ``art-pickle``: the pickle (float16, 32 GB) plus 64.6 GB of float32 shards.

Shards of a copied import may be deleted with their release's downloads kept: the next run
imports again.

**Resume, atomicity.** The cache is built in ``.<name>.partial/`` beside its final place, shard by
shard (each shard's ids then vectors renamed into place when written whole; ``progress.json``
updated after each), and renamed into place when complete, its ``meta.json`` marked complete.
An import killed at any point (``kill -9``) resumes after its last whole shard and writes the same
bytes: nothing the cache holds depends on time or on where it was interrupted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.api import Corpus, ReleasedEmbeddings
from harness.errors import HarnessError
from harness.util.progress import progress as progress_bar

from harness_builtins.dense.embeddings import (
    CACHE_FORMAT,
    DEFAULT_SHARD_SIZE,
    META_FILE,
    EmbeddingCache,
    _write_json_atomic,
    shard_name,
)

#: A release may lack at most this share of the corpus's passages; more is an error.
MAX_MISSING_SHARE = 0.01
#: At most this many missing passage ids are named in ``meta.json`` and the result.
MAX_NAMED_MISSING = 1000
PROGRESS_FILE = "progress.json"
OWNER_FILE = "owner.npy"


def release_digest(spec: ReleasedEmbeddings, paths: Sequence[Path]) -> str:
    """A digest of the release's parts: each part's pinned sha256 (else its publisher's md5, else
    the sha256 recorded when it was fetched, else the file's sha256), with its path; its name."""
    from harness.data.download import recorded_sha256, sha256_file

    parts: list[list[str]] = []
    for i, part in enumerate(spec.parts):
        local = Path(paths[i]) if i < len(paths) else None
        digest = part.sha256 or (f"md5:{part.md5}" if getattr(part, "md5", None) else None)
        if digest is None and local is not None and local.is_file():
            digest = recorded_sha256(local) or sha256_file(local)
        parts.append([part.path, digest or f"size:{part.size}"])
    blob = json.dumps({"name": spec.name, "format": spec.format, "parts": parts}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def pinned_digest(spec: ReleasedEmbeddings) -> str | None:
    """:func:`release_digest` from the spec alone, when every part's checksum is pinned there (a
    sha256 or the publisher's md5); None when a part's digest is known only once it is fetched."""
    if all(part.sha256 or getattr(part, "md5", None) for part in spec.parts):
        return release_digest(spec, [])
    return None


def find_import(root: str | os.PathLike, corpus: Corpus, spec: ReleasedEmbeddings) -> EmbeddingCache | None:
    """The complete import of ``spec`` for ``corpus`` under ``root`` when its digest is known
    without fetching (:func:`pinned_digest`): the downloads are not needed again (an in-place
    import still needs its unpacked index, checked when the cache opens)."""
    digest = pinned_digest(spec)
    if digest is not None:
        return _open_complete(release_cache_path(root, corpus, spec, digest), digest)
    return _left_after_downloads(root, corpus, spec)


def _left_after_downloads(root: str | os.PathLike, corpus: Corpus, spec: ReleasedEmbeddings) -> EmbeddingCache | None:
    """For a release without pinned checksums whose downloads are all gone from the data folder
    (deleted to save their space once imported): its one complete import for ``corpus``, made from
    the downloads whose digest it records; None while any part is there (then the parts are
    checked and digested as usual), or when there is no such import or several."""
    from harness.data.embeddings import part_path

    if any(part_path(part).exists() for part in spec.parts):
        return None
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus.name).strip("._") or "corpus"
    found = []
    for folder in sorted(Path(root).glob(f"{slug}-release-*")):
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        release = meta.get("release") if isinstance(meta, dict) else None
        if (isinstance(release, dict) and release.get("name") == spec.name and meta.get("complete")
                and meta.get("corpus_fingerprint") == corpus.fingerprint
                and folder == release_cache_path(root, corpus, spec, str(release.get("digest")))):
            found.append((folder, str(release["digest"])))
    if len(found) != 1:
        return None
    return _open_complete(*found[0])


def release_key(corpus: Corpus, spec: ReleasedEmbeddings, digest: str) -> str:
    """The import's key: the cache format, the release's name and digest, the corpus fingerprint."""
    blob = json.dumps([CACHE_FORMAT, "release", spec.name, digest, corpus.fingerprint])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def release_cache_path(root: str | os.PathLike, corpus: Corpus, spec: ReleasedEmbeddings, digest: str) -> Path:
    """Where ``spec``'s import for ``corpus`` lives under ``root``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus.name).strip("._") or "corpus"
    return Path(root) / f"{slug}-release-{release_key(corpus, spec, digest)[:20]}"


# --- ids ------------------------------------------------------------------------------------------


def dense_rows(ids: Sequence[str], count: int) -> np.ndarray | None:
    """The rows of ``ids`` in a corpus whose ids are ``"1"`` ... ``str(count)`` in order (a corpus
    store's ``dense`` id index, as DPR's Wikipedia is), computed at once: -1 for an id that is not
    one of them (not the canonical decimal text: ``"012"``, ``"+5"``, ``" 7"`` are not); None when
    an id is not a decimal number at all (the caller asks the store)."""
    text = np.asarray(ids, dtype=str)
    try:
        numbers = text.astype(np.int64)
    except (ValueError, OverflowError):
        return None
    canonical = (numbers >= 1) & (numbers <= count) & (numbers.astype(str) == text)
    return np.where(canonical, numbers - 1, -1)


class IdMap:
    """Passage id -> corpus row, explicitly: a corpus store's id index (its ``dense`` ids computed
    at once by :func:`dense_rows`, else its memory-mapped hash index through ``rows``/``row``),
    else a dictionary built once from the corpus.

    The dictionary is for corpora that are not stores (an in-memory corpus, a test's): it holds
    every passage id as a Python string with its row, about 150 bytes a passage (0.15 GB per
    million), so it suits corpora up to a few million passages. DPR's 21M Wikipedia is opened as a
    corpus store (the built-in corpora are), whose memory-mapped id index costs nothing to hold;
    a 21M corpus mapped through the dictionary would alone take about 3 GB."""

    def __init__(self, corpus: Corpus):
        from harness.data.corpora import LazyCorpus

        inner = corpus.open() if isinstance(corpus, LazyCorpus) else corpus
        self.count = len(corpus)
        self.name = corpus.name
        self._store = inner if callable(getattr(inner, "rows", None)) and callable(getattr(inner, "passage_at", None)) else None
        self._ids: list[str] | None = None
        self._rows: dict[str, int] | None = None
        meta = getattr(self._store, "meta", None)
        self._dense = isinstance(meta, dict) and meta.get("id_index") == "dense"
        if self._store is None:
            self._ids = [p.id for p in inner]
            self._rows = {pid: row for row, pid in enumerate(self._ids)}

    def rows(self, ids: Sequence[str]) -> np.ndarray:
        """Each id's corpus row, -1 where the corpus has no such passage."""
        if self._rows is not None:
            get = self._rows.get
            return np.fromiter((get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        if self._dense and (rows := dense_rows(ids, self.count)) is not None:
            return rows
        try:
            return np.asarray(self._store.rows(list(ids)), dtype=np.int64)
        except KeyError:
            out = np.empty(len(ids), dtype=np.int64)
            for k, pid in enumerate(ids):
                try:
                    out[k] = self._store.row(pid)
                except KeyError:
                    out[k] = -1
            return out

    def id_at(self, row: int) -> str:
        return self._ids[row] if self._ids is not None else self._store.passage_at(int(row)).id

    def example(self) -> str:
        return self.id_at(0) if self.count else "(none)"


# --- the import -----------------------------------------------------------------------------------


@dataclass
class ImportStats:
    """What this process did for an import (not recorded in the cache: it depends on the run)."""

    rows: int = 0
    seconds: float = 0.0
    bytes_read: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0


def import_release(
    spec: ReleasedEmbeddings,
    paths: Sequence[str | os.PathLike],
    corpus: Corpus,
    encoder_identity: str,
    cache_root: str | os.PathLike,
    *,
    progress: bool = True,
    shard_size: int = DEFAULT_SHARD_SIZE,
    reader: Any | None = None,
    digest: str | None = None,
) -> EmbeddingCache:
    """``spec``'s vectors (downloaded to ``paths``, in part order) as an embedding cache for
    ``corpus`` under ``cache_root``: reused when imported already, else imported (resuming an
    interrupted import). ``encoder_identity`` (the encoder whose passage side the release equals)
    is recorded. ``reader`` overrides the format's reader (tests). The returned cache's ``imported``
    attribute holds this process's :class:`ImportStats`."""
    paths = [Path(p) for p in paths]
    digest = digest or release_digest(spec, paths)
    final = release_cache_path(cache_root, corpus, spec, digest)
    done = _open_complete(final, digest)
    if done is not None:
        return done
    try:
        return _import_into(spec, paths, corpus, encoder_identity, final, digest, reader, shard_size, progress)
    except OSError as exc:  # a read-only or full cache folder: one line, not a traceback
        raise HarnessError(f"cannot write the import of released embeddings {spec.name!r} into {final.parent}: "
                           f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}; give a writable "
                           f"--cache-dir with room for it") from None


def _import_into(spec: ReleasedEmbeddings, paths: list[Path], corpus: Corpus, encoder_identity: str, final: Path,
                 digest: str, reader: Any, shard_size: int, progress: bool) -> EmbeddingCache:
    work = final.with_name(f".{final.name}.partial")
    work.mkdir(parents=True, exist_ok=True)
    with _locked(work):
        finished = _open_complete(final, digest)  # by another process while this one waited for the lock
        if finished is not None:
            shutil.rmtree(work, ignore_errors=True)
            return finished
        if _complete(work, digest):  # written whole, killed before the rename
            if final.exists():
                shutil.rmtree(final)
            _tidy(work)
            os.replace(work, final)
            cache = EmbeddingCache.open(final)
            cache.imported = ImportStats()
            return cache
        if reader is None:
            from harness_builtins.dense.released.formats import open_release

            reader = open_release(spec.format, readable_paths(spec, paths), dim=spec.dim)
        stats = _import(spec, paths, corpus, encoder_identity, digest, reader, work, shard_size, progress)
        if final.exists():
            shutil.rmtree(final)  # damaged, partly deleted, or its in-place store changed: replaced
        os.replace(work, final)
    cache = EmbeddingCache.open(final)
    cache.imported = stats
    return cache


def _open_complete(final: Path, digest: str) -> EmbeddingCache | None:
    """The complete import at ``final`` of the release with ``digest``, or None (absent, damaged,
    partly deleted, another release's, or its in-place store changed)."""
    if not (final / META_FILE).is_file():
        return None
    try:
        cache = EmbeddingCache.open(final)
    except (HarnessError, OSError, ValueError, KeyError):
        return None
    if not cache.release or cache.release.get("digest") != digest:
        return None
    cache.imported = ImportStats()
    return cache


def readable_paths(spec: ReleasedEmbeddings, paths: Sequence[Path]) -> list[Path]:
    """The files the format's reader opens: a faiss-flat release's archive (pyserini ships its
    folder as a ``.tar.gz``) unpacked once beside it, into the folder named as the archive without
    its suffix (the ``index`` in it is then memory-mapped in place); other parts as fetched (the
    Contriever reader reads its tar as it is)."""
    if spec.format != "faiss-flat":
        return list(paths)
    from harness_builtins.dense.released.formats import unpack_faiss_archive

    out = []
    for i, path in enumerate(paths):
        part = spec.parts[i] if i < len(spec.parts) else None
        archive = (part is not None and part.compression is not None) or path.name.endswith((".tar", ".tar.gz", ".tgz"))
        if archive and path.is_file():
            name = re.sub(r"\.(tar\.gz|tgz|tar)$", "", path.name)
            dest = path.with_name(name if name != path.name else f"{name}.unpacked")
            marker = dest.with_name(f".{dest.name}.unpacked.json")
            expected = {"archive": _file_state(path)}
            if dest.exists() and _read_json(marker) != {**expected, **_unpacked_state(dest)}:
                shutil.rmtree(dest)  # changed since it was unpacked (or unpacked by no known run): again
            if not dest.exists():
                marker.unlink(missing_ok=True)
            path = unpack_faiss_archive(path, dest)
            if not marker.is_file():
                _write_json_atomic(marker, {**expected, **_unpacked_state(dest)})
        out.append(path)
    return out


def _file_state(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _unpacked_state(dest: Path) -> dict[str, Any]:
    """What an unpacked faiss folder holds: its ``index`` (size, time, content fingerprint) and its
    ``docid`` (size, time, sha256); ``{}`` when it is not a readable flat index, so that it is
    unpacked again. Recorded beside the folder when it is unpacked and compared before it is
    imported again: an index or docid changed in place since is unpacked afresh from the archive."""
    from harness.data.download import sha256_file
    from harness.errors import InputFileError
    from harness_builtins.dense.embeddings import store_fingerprint
    from harness_builtins.dense.released.formats import read_faiss_flat_header

    index, docid = dest / "index", dest / "docid"
    try:
        block = read_faiss_flat_header(index)
        return {"index": [*_file_state(index), store_fingerprint(index, block.offset, block.rows, block.dim)],
                "docid": [*_file_state(docid), sha256_file(docid)]}
    except (InputFileError, OSError):
        return {}


@contextlib.contextmanager
def _locked(work: Path) -> Iterator[None]:
    """One process imports into ``work`` at a time (an advisory lock, released when it dies)."""
    import fcntl

    with open(work.parent / f".{work.name}.lock", "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HarnessError(f"another process is importing into {work}; wait for it to finish") from None
        yield


def _where(reader: Any, paths: Sequence[Path], row: int | None = None, *, vector: bool = False) -> str:
    """The file a release row comes from, for messages: the reader's own answer where it has one;
    for a ``vector``'s problem, the file holding the vectors where they lie apart from the ids (a
    faiss ``index`` beside its ``docid``)."""
    if vector:
        with contextlib.suppress(Exception):
            block = reader.contiguous()
            if block is not None:
                return str(block.path)
    locate = getattr(reader, "path_of", None)
    if callable(locate) and row is not None:
        with contextlib.suppress(Exception):
            return str(locate(row))
    return str(paths[0]) if len(paths) == 1 else f"{paths[0].parent} ({len(paths)} parts)"


def _import(spec: ReleasedEmbeddings, paths: list[Path], corpus: Corpus, identity: str, digest: str, reader: Any,
            work: Path, shard_size: int, progress: bool) -> ImportStats:
    rows = spec.rows  # the reader's count where it knows it without reading (else checked at the end)
    if int(reader.dim) != spec.dim:
        raise HarnessError(f"{_where(reader, paths)}: {reader.dim}-d vectors, release {spec.name!r} says {spec.dim}-d")
    if reader.rows is not None and int(reader.rows) != rows:
        raise HarnessError(f"{_where(reader, paths)}: {int(reader.rows):,} vectors, release {spec.name!r} says {rows:,}")
    count = len(corpus)
    contiguous = reader.contiguous()
    in_place = contiguous is not None
    if in_place and (int(contiguous.rows) != rows or int(contiguous.dim) != spec.dim):
        raise HarnessError(f"{contiguous.path}: its block holds {contiguous.rows:,} x {contiguous.dim}, release "
                           f"{spec.name!r} {rows:,} x {spec.dim}")
    shards = (rows + shard_size - 1) // shard_size
    state = _read_progress(work, rows=rows, shard_size=shard_size, in_place=in_place, digest=digest, count=count)
    done_shards = state["shards_done"]
    owner_path = work / OWNER_FILE
    if done_shards and not owner_path.is_file():  # the ids' record is gone: start over
        _read_progress(work, fresh=True)
        state = _read_progress(work, rows=rows, shard_size=shard_size, in_place=in_place, digest=digest, count=count)
        done_shards = 0
    for stale in work.glob(".*.tmp"):
        stale.unlink()
    # a shard renamed into place after the last progress record (the files there, not every shard
    # number the spec's row count allows: a spec may claim far more rows than its files hold)
    for stale in [*work.glob("ids-*.npy"), *work.glob("emb-*.npy")]:
        number = re.fullmatch(r"(?:ids|emb)-(\d+)\.npy", stale.name)
        if number is not None and int(number.group(1)) >= done_shards:
            stale.unlink(missing_ok=True)
    owner = (np.load(owner_path, mmap_mode="r+") if owner_path.is_file() and done_shards
             else np.lib.format.open_memmap(owner_path, mode="w+", dtype=np.uint32, shape=(count,)))
    ids_map = IdMap(corpus)
    stats = ImportStats()
    started = time.perf_counter()
    start = done_shards * shard_size
    writer = _ShardWriter(work, shard_size, spec.dim, rows, copy=not in_place, first=done_shards,
                          where=_where(reader, paths))
    with progress_bar(total=rows, initial=start, desc=f"import {spec.name}", unit="vec", enabled=progress) as bar:
        row = start
        first_chunk = True
        for ids, vectors in reader.chunks(skip=start):
            n = len(ids)
            vectors = np.asarray(vectors)
            if vectors.ndim != 2 or vectors.shape != (n, spec.dim):
                raise HarnessError(f"{_where(reader, paths, row, vector=True)}: a chunk of {n} ids came with vectors of shape "
                                   f"{vectors.shape}, expected ({n}, {spec.dim})")
            if not np.isfinite(vectors).all():
                bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
                raise HarnessError(f"{_where(reader, paths, row + bad, vector=True)}: the vector of id {ids[bad]!r} (row {row + bad}) "
                                   f"holds NaN or infinite values")
            corpus_rows = _map_ids(spec, ids, ids_map, reader, paths, row, first=first_chunk and row == 0)
            _claim(owner, corpus_rows, row, ids, reader, paths, ids_map)
            passage_ids = [i[len(spec.id_prefix):] for i in ids] if spec.id_prefix else list(ids)
            for s in writer.add(passage_ids, vectors):
                owner.flush()
                _write_progress(work, {**state, "shards_done": s + 1})
            row += n
            stats.bytes_read += vectors.nbytes
            bar.update(n)
            first_chunk = False
    writer.finish()
    stats.rows = rows - start
    stats.seconds = time.perf_counter() - started
    missing = np.flatnonzero(np.asarray(owner) == 0)
    del owner
    if len(missing) > MAX_MISSING_SHARE * count:
        raise HarnessError(f"{_where(reader, paths)}: release {spec.name!r} holds {rows:,} of corpus {corpus.name!r}'s "
                           f"{count:,} passages ({len(missing):,} missing, more than {MAX_MISSING_SHARE:.0%}): "
                           f"it is not this corpus's release")
    named = [ids_map.id_at(r) for r in missing[:MAX_NAMED_MISSING].tolist()]
    meta: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "key": release_key(corpus, spec, digest),
        "encoder": identity,
        "corpus": corpus.name,
        "corpus_fingerprint": corpus.fingerprint,
        "passages": rows,
        "shard_size": shard_size,
        "shards": shards,
        "dim": spec.dim,
        "dtype": "float32",
        "complete": True,
        "release": {
            "name": spec.name,
            "digest": digest,
            "format": spec.format,
            "encoder": spec.encoder,
            "parts": [part.path for part in spec.parts],
            "mapping": {"release_rows": rows, "corpus_passages": count, "mapped": rows,
                        "missing": int(len(missing)), "missing_ids": named, "id_prefix": spec.id_prefix},
            "in_place": in_place,
        },
    }
    if in_place:
        from harness_builtins.dense.embeddings import store_fingerprint

        file = Path(contiguous.path).resolve()
        st = file.stat()
        meta["store"] = {"path": str(file), "offset": int(contiguous.offset), "rows": rows, "dim": spec.dim,
                         "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                         "fingerprint": store_fingerprint(file, int(contiguous.offset), rows, spec.dim)}
    _write_json_atomic(work / META_FILE, meta)  # complete: what follows only tidies
    _tidy(work)
    return stats


def _tidy(work: Path) -> None:
    """Remove the import's own records from a complete import's folder."""
    (work / OWNER_FILE).unlink(missing_ok=True)
    (work / PROGRESS_FILE).unlink(missing_ok=True)


def _complete(work: Path, digest: str) -> bool:
    try:
        meta = json.loads((work / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(meta.get("complete")) and (meta.get("release") or {}).get("digest") == digest


def _read_progress(work: Path, **expected: Any) -> dict[str, Any]:
    """``progress.json`` when it belongs to this import (same release, sizes and mode), else a
    fresh start (and the folder's shards removed)."""
    try:
        state = json.loads((work / PROGRESS_FILE).read_text(encoding="utf-8"))
        if all(state.get(k) == v for k, v in expected.items()) and isinstance(state.get("shards_done"), int):
            return state
    except (OSError, ValueError):
        pass
    for stale in [*work.glob("emb-*.npy"), *work.glob("ids-*.npy"), work / OWNER_FILE]:
        stale.unlink(missing_ok=True)
    state = {**expected, "shards_done": 0}
    _write_progress(work, state)
    return state


def _write_progress(work: Path, state: dict[str, Any]) -> None:
    _write_json_atomic(work / PROGRESS_FILE, state)


def _map_ids(spec: ReleasedEmbeddings, ids: Sequence[str], ids_map: IdMap, reader: Any, paths: list[Path], row: int,
             *, first: bool) -> np.ndarray:
    """The corpus rows of a chunk's release ids; an unknown id is an error (see the module notes)."""
    prefix = spec.id_prefix
    if not prefix:
        known = ids_map.rows(ids)
    else:
        bare = [i[len(prefix):] if i.startswith(prefix) else None for i in ids]
        known = np.full(len(ids), -1, dtype=np.int64)
        present = [k for k, b in enumerate(bare) if b is not None]
        if present:
            known[present] = ids_map.rows([bare[k] for k in present])
    unknown = np.flatnonzero(known < 0)
    if len(unknown):
        bad = int(unknown[0])
        if first and len(unknown) == len(ids):
            raise HarnessError(
                f"{_where(reader, paths, row)}: none of the release's first {len(ids)} ids is a passage of corpus "
                f"{corpus_name(ids_map)}: the release's ids do not match this corpus (release id {ids[bad]!r}, "
                f"id_prefix {prefix!r}; corpus id {ids_map.example()!r})")
        raise HarnessError(f"{_where(reader, paths, row + bad)}: id {ids[bad]!r} (row {row + bad}) is not a passage of "
                           f"corpus {corpus_name(ids_map)} ({len(unknown)} of {len(ids)} ids of its chunk are not)")
    return known


def corpus_name(ids_map: IdMap) -> str:
    return f"{ids_map.name!r} ({ids_map.count:,} passages)"


def _claim(owner: np.ndarray, corpus_rows: np.ndarray, row: int, ids: Sequence[str], reader: Any, paths: list[Path],
           ids_map: IdMap) -> None:
    """Mark each corpus row as held by its release row (``owner[c] = release row + 1``); a row
    another release row holds is a duplicate id (a re-read after a resume writes the same value)."""
    mine = np.arange(row + 1, row + 1 + len(corpus_rows), dtype=np.uint32)
    before = owner[corpus_rows]
    clash = np.flatnonzero((before != 0) & (before != mine))
    if not len(clash):
        owner[corpus_rows] = mine
        clash = np.flatnonzero(owner[corpus_rows] != mine)  # twice in this chunk: the last one won
        if not len(clash):
            return
        k = int(clash[0])
        other = int(owner[corpus_rows[k]]) - 1
    else:
        k = int(clash[0])
        other = int(before[k]) - 1
    raise HarnessError(f"{_where(reader, paths, row + k)}: id {ids[k]!r} appears twice (rows {min(other, row + k)} and "
                       f"{max(other, row + k)}); a release holds each passage once")


class _ShardWriter:
    """Writes the cache's shards in release order: each shard's vectors (when copying) into a
    memory-mapped temporary, then its ids and vectors renamed into place."""

    def __init__(self, work: Path, shard_size: int, dim: int, rows: int, *, copy: bool, first: int, where: str):
        self.work, self.shard_size, self.dim, self.rows, self.copy = work, shard_size, dim, rows, copy
        self.where = where
        self.shard = first
        self.filled = 0
        self.ids: list[str] = []
        self.vectors: np.ndarray | None = None

    def _size(self, shard: int) -> int:
        return min(self.shard_size, self.rows - shard * self.shard_size)

    def add(self, ids: list[str], vectors: np.ndarray) -> list[int]:
        """Take a chunk; returns the shards it completed."""
        finished = []
        at = 0
        while at < len(ids):
            size = self._size(self.shard)
            take = min(size - self.filled, len(ids) - at)
            if take <= 0:
                raise HarnessError(f"{self.where}: more than the release's {self.rows:,} vectors")
            if self.copy:
                if self.vectors is None:
                    tmp = self.work / f".{shard_name('emb', self.shard)}.{os.getpid()}.tmp"
                    self.vectors = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(size, self.dim))
                self.vectors[self.filled : self.filled + take] = vectors[at : at + take]
            self.ids.extend(ids[at : at + take])
            self.filled += take
            at += take
            if self.filled == size:
                self._close()
                finished.append(self.shard)
                self.shard += 1
                self.filled, self.ids, self.vectors = 0, [], None
        return finished

    def finish(self) -> list[int]:
        if self.filled or self.shard * self.shard_size < self.rows:
            read = self.shard * self.shard_size + self.filled
            raise HarnessError(f"{self.where}: {read:,} vectors, the release says {self.rows:,}")
        return []

    def _close(self) -> None:
        s = self.shard
        tmp_ids = self.work / f".{shard_name('ids', s)}.{os.getpid()}.tmp"
        encoded = [i.encode("utf-8") for i in self.ids]
        width = max(1, max(map(len, encoded), default=1))
        with open(tmp_ids, "wb") as f:
            np.save(f, np.array(encoded, dtype=f"S{width}"))
        os.replace(tmp_ids, self.work / shard_name("ids", s))
        if self.copy and self.vectors is not None:
            self.vectors.flush()
            tmp = Path(self.vectors.filename)
            self.vectors = None
            os.replace(tmp, self.work / shard_name("emb", s))

"""An on-disk, memory-mapped passage store for corpora too large to hold in memory.

Built for DPR's 21M-passage Wikipedia (``psgs_w100.tsv``, PROTOCOL section 4) but usable for any
corpus of ``id``/``title``/``text`` passages:

>>> store = build_store("psgs_w100.tsv.gz", "stores/wiki", name="dpr-wiki")   # doctest: +SKIP
>>> store = CorpusStore.open("stores/wiki")                          # instant; doctest: +SKIP
>>> store.get("1").title                                                       # doctest: +SKIP
'Aaron'

Sources (plain or gzip-compressed, detected by the gzip magic bytes, not the name):

- ``dpr-tsv``: DPR's passage file. Header ``id\\ttext\\ttitle``, then one passage per row. Fields
  are CSV-quoted, so rows are read with ``csv.reader(f, delimiter="\\t")`` in its default
  (non-strict) dialect, exactly as DPR's ``CsvCtxSrc`` reads the file; a quoted field may span
  lines. Text is kept as the reader returns it (DPR additionally strips ``"`` from both ends of
  the text; this store does not). Blank lines are skipped. A field longer than the csv module's
  ``field_size_limit()`` (131,072 characters unless raised) is an error.
- ``jsonl``: one ``{"id": str | int, "title": str, "text": str}`` object per line; ``title`` may be
  left out (empty title), other keys are ignored. Pyserini's ``contents`` field is *not* read:
  split it into ``title`` and ``text`` first. Blank lines are skipped.

Every problem in a source (bad header, wrong column count, empty or duplicate id, invalid JSON,
bad UTF-8, corrupt gzip) raises :class:`~harness.errors.InputFileError` naming the file and the
line where the offending row starts, and leaves nothing at the output path.

Layout of a store directory (all files are written into a temporary sibling directory that is
renamed into place only when complete):

- ``passages.arrow``: an uncompressed Arrow IPC file with the string columns ``id``, ``title`` and
  ``text``, in source order, in record batches of at most :data:`BATCH_ROWS` rows (fewer when a
  batch reaches :data:`BATCH_BYTES`, so 32-bit string offsets never overflow). It is memory-mapped:
  opening is instant, pages are read on demand and shared between processes.
- the id index. When the ids are exactly ``"1"``, ``"2"``, ... in order (DPR's file), none is
  written: the row of id ``n`` is ``n - 1``. Otherwise ``id_hash.npy`` holds the sorted 64-bit
  hashes (:func:`id_hash`) of all ids and ``id_row.npy`` the row of each; a lookup is a binary
  search over the memory-mapped hashes followed by a check of the stored id, so hash collisions
  are harmless.
- ``meta.json``: format version, name, passage count, fingerprint, id index kind and the source
  file's path, size and mtime (:func:`open_or_build` uses them to reuse a store).

Building is one streaming pass: memory is bounded by one batch (at most :data:`BATCH_BYTES` of
UTF-8 text), plus, for non-dense ids only, about 28 bytes per passage to sort the id hashes at the
end; never by the corpus size. The fingerprint
is computed in the same pass and equals :class:`~harness.api.InMemoryCorpus`'s for the same
passages in the same order (:mod:`harness.api.corpus`).

Only the standard library is imported at module level; numpy and pyarrow are imported when a
store is built or opened.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import shutil
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, InputFileError, UnknownNameError
from harness.api.corpus import PassageFingerprint
from harness.util.atomic import (
    COMPLETE_FILE,
    apply_umask,
    check_complete,
    fsync_path,
    mark_complete,
    remove_stale,
    temp_name,
)
from harness.util.progress import progress as _progress_bar
from harness.data.corpus_sources import FORMATS, Source, line_of_rows, source_rows
from harness.api import Passage

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa

STORE_FORMAT = "harness-corpus-store"
STORE_VERSION = 1
#: Columns of ``passages.arrow``, in this order.
COLUMNS: tuple[str, ...] = ("id", "title", "text")

#: Most rows in one record batch.
BATCH_ROWS = 65_536
#: A batch is written early once its strings reach this many bytes (keeps offsets within int32).
BATCH_BYTES = 64 << 20

PASSAGES_FILE = "passages.arrow"
META_FILE = "meta.json"
HASH_FILE = "id_hash.npy"
ROW_FILE = "id_row.npy"

#: How ids are hashed for the sorted index: the first 8 bytes of BLAKE2b, little-endian.
ID_HASH = "blake2b-64-le"



def id_hash(passage_id: bytes) -> int:
    """The 64-bit hash the id index sorts by (:data:`ID_HASH`), of an id's UTF-8 bytes."""
    return int.from_bytes(hashlib.blake2b(passage_id, digest_size=8).digest(), "little")


# --- building -----------------------------------------------------------------------------------


class _Builder:
    """Appends rows to per-column byte buffers, writes them as record batches; fingerprints and hashes ids.

    A pending batch is three ``bytearray`` of UTF-8 data plus their int32 offsets, turned into
    Arrow arrays without a copy, so memory is about one batch of text (:data:`BATCH_BYTES`).
    """

    def __init__(self, tmp: Path):
        import pyarrow as pa

        self.pa = pa
        self.tmp = tmp
        self.schema = pa.schema([pa.field(c, pa.string(), nullable=False) for c in COLUMNS])
        self.sink = pa.OSFile(str(tmp / PASSAGES_FILE), "wb")
        self.writer = pa.ipc.new_file(self.sink, self.schema, options=pa.ipc.IpcWriteOptions(compression=None))
        self._fingerprint = PassageFingerprint()
        self.count = 0  # rows written or pending
        self.dense = True  # ids so far are exactly "1", "2", ...
        self.hash_file: Any = None  # raw uint64 id hashes, once the ids stop being dense
        self._new_batch()

    def _new_batch(self) -> None:
        self.data = (bytearray(), bytearray(), bytearray())
        self.offsets = (array("i", [0]), array("i", [0]), array("i", [0]))
        self.hashes = array("Q")
        self.pending = 0

    def add(self, passage_id: str, title: str, text: str) -> None:
        self.count += 1
        if self.dense and passage_id != str(self.count):
            self._leave_dense()
        i, t, x = passage_id.encode("utf-8"), title.encode("utf-8"), text.encode("utf-8")
        self._fingerprint.update_encoded(i, t, x)
        di, dt, dx = self.data
        oi, ot, ox = self.offsets
        di += i
        dt += t
        dx += x
        oi.append(len(di))
        ot.append(len(dt))
        ox.append(len(dx))
        if not self.dense:
            self.hashes.append(id_hash(i))
        self.pending += 1
        if self.pending >= BATCH_ROWS or len(dx) + len(dt) + len(di) >= BATCH_BYTES:
            self.flush()

    def _leave_dense(self) -> None:
        """Ids are not 1..n: hash every id so far (they were "1".."n-1") and keep hashing."""
        self.dense = False
        self.hash_file = open(self.tmp / "id_hash.tmp", "wb")  # noqa: SIM115 - closed in finish()
        for start in range(1, self.count, BATCH_ROWS):
            stop = min(start + BATCH_ROWS, self.count)
            self.hash_file.write(array("Q", (id_hash(str(n).encode()) for n in range(start, stop))).tobytes())

    def flush(self) -> None:
        if not self.pending:
            return
        pa = self.pa
        if self.hash_file is not None:
            self.hash_file.write(self.hashes.tobytes())
        arrays = [
            pa.Array.from_buffers(pa.string(), self.pending, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
            for offsets, data in zip(self.offsets, self.data)
        ]
        self.writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        del arrays  # release the buffers before the bytearrays are replaced
        self._new_batch()

    @property
    def fingerprint(self) -> str:
        return self._fingerprint.value

    def finish(self) -> None:
        self.flush()
        self.writer.close()
        self.sink.close()
        if self.hash_file is not None:
            self.hash_file.close()

    def abort(self) -> None:
        for closer in (self.writer.close, self.sink.close):
            try:
                closer()
            except Exception:  # noqa: BLE001 - best effort while another error propagates
                pass
        if self.hash_file is not None:
            self.hash_file.close()


def _write_hash_index(tmp: Path, count: int) -> list[tuple[int, int]]:
    """Sort the id hashes into ``id_hash.npy`` / ``id_row.npy``; return candidate duplicate row pairs.

    Rows whose ids share a hash are compared by id afterwards (by the caller); a pair here is
    (earlier row, later row) for every two rows of a run of equal hashes.
    """
    import numpy as np

    raw = tmp / "id_hash.tmp"
    hashes = np.fromfile(raw, dtype=np.uint64)
    raw.unlink()
    if len(hashes) != count:  # pragma: no cover - internal consistency
        raise RuntimeError(f"id index has {len(hashes)} hashes for {count} passages")
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    del hashes
    row_dtype = np.uint32 if count < 2**32 else np.uint64
    np.save(tmp / HASH_FILE, sorted_hashes)
    np.save(tmp / ROW_FILE, order.astype(row_dtype))
    same = np.flatnonzero(sorted_hashes[1:] == sorted_hashes[:-1])
    pairs: list[tuple[int, int]] = []
    if len(same):
        # Group consecutive equal positions into runs, then pair every two rows in a run.
        run: list[int] = []
        for position in same.tolist():
            if run and position != run[-1]:
                pairs.extend(_run_pairs(order, run))
                run = []
            if not run:
                run = [position]
            run.append(position + 1)
        pairs.extend(_run_pairs(order, run))
    return pairs


def _run_pairs(order: np.ndarray, run: list[int]) -> list[tuple[int, int]]:
    rows = sorted(int(order[p]) for p in run)
    return [(a, b) for k, a in enumerate(rows) for b in rows[k + 1 :]]


def build_store(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    format: str = "dpr-tsv",
    name: str,
    progress: bool = True,
    overwrite: bool = False,
) -> CorpusStore:
    """Build a store at ``out_dir`` from ``source`` in one streaming pass; return it opened.

    ``format`` is ``"dpr-tsv"`` or ``"jsonl"`` (either may be gzip-compressed). The store is built
    in a temporary sibling directory and renamed to ``out_dir`` when complete; on any error it is
    removed, so nothing is left at ``out_dir``. An existing ``out_dir`` is an error unless
    ``overwrite`` is true (then it is replaced once the new store is complete).
    """
    if format not in FORMATS:
        raise UnknownNameError("corpus format", format, FORMATS)
    source, out_dir = Path(source), Path(out_dir)
    if (out_dir.exists() or out_dir.is_symlink()) and not overwrite:
        raise HarnessError(f"{out_dir} already exists (pass overwrite=True to rebuild the corpus store)")
    try:
        stat = source.stat()
    except OSError as exc:
        raise InputFileError(source, f"cannot read corpus file: {exc.strerror or exc}") from None

    started = time.perf_counter()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out_dir.parent, out_dir.name)
    tmp = _sibling_dir(out_dir, "building")
    try:
        reader = Source(source, newline="" if format == "dpr-tsv" else None)
        builder: _Builder | None = None
        try:
            builder = _Builder(tmp)
            bar = _progress_bar(enabled=progress, total=stat.st_size, unit="B", unit_scale=True, desc=f"corpus {name}")
            with bar:
                done = 0
                for _line, passage_id, title, text in source_rows(reader, format):
                    builder.add(passage_id, title, text)
                    if not builder.pending:  # a batch was just written
                        position = reader.position()
                        bar.update(position - done)
                        done = position
                        bar.set_postfix(passages=builder.count, refresh=False)
            builder.finish()
        except BaseException:
            if builder is not None:
                builder.abort()
            raise
        finally:
            reader.close()
        count = builder.count
        if count == 0:
            raise InputFileError(source, "no passages")
        if not builder.dense:
            pairs = _write_hash_index(tmp, count)
            if pairs:
                _raise_on_duplicates(source, format, tmp, pairs)

        import pyarrow as pa

        meta = {
            "format": STORE_FORMAT,
            "version": STORE_VERSION,
            "name": name,
            "passages": count,
            "fingerprint": builder.fingerprint,
            "columns": list(COLUMNS),
            "id_index": "dense" if builder.dense else "hash",
            "id_hash": None if builder.dense else ID_HASH,
            "max_batch_rows": BATCH_ROWS,
            "max_batch_bytes": BATCH_BYTES,
            "source": {
                "path": str(source.resolve()),
                "format": format,
                "compressed": reader.compressed,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
            },
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "build_seconds": round(time.perf_counter() - started, 3),
            "pyarrow": pa.__version__,
        }
        with open(tmp / META_FILE, "w", encoding="utf-8", newline="\n") as f:
            f.write(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        for file in tmp.iterdir():
            fsync_path(file)
            apply_umask(file)
        mark_complete(tmp)
        _move_into_place(tmp, out_dir, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return CorpusStore.open(out_dir)


def _raise_on_duplicates(source: Path, format: str, tmp: Path, pairs: list[tuple[int, int]]) -> None:
    """Raise for the first (in file order) row whose id repeats an earlier row's id."""
    import pyarrow as pa

    with pa.memory_map(str(tmp / PASSAGES_FILE), "r") as mm:
        table = pa.ipc.open_file(mm).read_all()
        ids = table.column("id")
        duplicates = [(b, a) for a, b in pairs if ids[a].as_py() == ids[b].as_py()]
        if not duplicates:
            return
        later, first = min(duplicates)
        passage_id = ids[later].as_py()
        del table, ids
    lines = line_of_rows(source, format, (first, later))
    raise InputFileError(
        source, f"duplicate passage id {passage_id!r} (first at line {lines.get(first, '?')})", line=lines.get(later)
    )


def _sibling_dir(out_dir: Path, tag: str) -> Path:
    """A new, empty directory next to ``out_dir`` (``.NAME.PID.RANDOM.tmp``: a later run removes it
    when its process is gone), with the usual umask permissions."""
    path = temp_name(out_dir)
    path.mkdir()
    apply_umask(path, directory=True)
    return path


def _move_into_place(tmp: Path, out_dir: Path, *, overwrite: bool) -> None:
    """Rename the finished ``tmp`` to ``out_dir``; with ``overwrite``, replace what is there."""
    if not overwrite:
        try:
            os.rename(tmp, out_dir)  # fails if another process created a non-empty out_dir meanwhile
            return
        except OSError:
            if not (out_dir.exists() or out_dir.is_symlink()):
                raise
        # Built concurrently by someone else: fine if it holds the very same corpus under our name.
        try:
            theirs = json.loads((out_dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            theirs = {}
        ours = json.loads((tmp / META_FILE).read_text(encoding="utf-8"))
        if all(theirs.get(k) == ours[k] for k in ("format", "version", "name", "fingerprint")):
            shutil.rmtree(tmp, ignore_errors=True)
            return
        raise HarnessError(f"{out_dir} was created while the corpus store was being built; not replacing it")
    if not (out_dir.exists() or out_dir.is_symlink()):
        os.rename(tmp, out_dir)
        return
    old = _sibling_dir(out_dir, "old")
    os.rename(out_dir, old / "store")
    try:
        os.rename(tmp, out_dir)
    except BaseException:
        os.rename(old / "store", out_dir)
        raise
    finally:
        # Readers with the old store open keep their memory maps (the files are only unlinked).
        shutil.rmtree(old, ignore_errors=True)


def open_or_build(
    source: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    format: str = "dpr-tsv",
    name: str,
    progress: bool = True,
) -> CorpusStore:
    """Open the store at ``out_dir`` if it was built from ``source`` as it is now, else (re)build it.

    "As it is now" means the same format and name and the source's size and mtime unchanged. A
    store whose source has since been deleted is reused (the store holds every passage).
    """
    out_dir = Path(out_dir)
    if (out_dir / META_FILE).is_file():
        try:
            store = CorpusStore.open(out_dir)
        except HarnessError:
            store = None
        if store is not None:
            recorded = store.meta.get("source", {})
            try:
                stat = Path(source).stat()
            except OSError:
                stat = None
            same = store.name == name and recorded.get("format") == format
            if same and (
                stat is None or (recorded.get("size") == stat.st_size and recorded.get("mtime_ns") == stat.st_mtime_ns)
            ):
                return store
    return build_store(source, out_dir, format=format, name=name, progress=progress, overwrite=True)


# --- reading a store ----------------------------------------------------------------------------


class CorpusStore:
    """A built store, memory-mapped; implements the :class:`~harness.api.Corpus` protocol.

    Open with :meth:`open` (instant: nothing is read until asked for). Several processes may open
    the same store; the pages are shared through the OS page cache. Instances pickle by path.
    """

    name: str

    def __init__(self, path: Path, meta: dict[str, Any]):
        """Use :meth:`CorpusStore.open`."""
        import numpy as np
        import pyarrow as pa

        self.path = path
        self.meta = meta
        self.name = meta["name"]
        self._fingerprint: str = meta["fingerprint"]
        self._count: int = meta["passages"]
        self._map = pa.memory_map(str(path / PASSAGES_FILE), "r")
        self._reader = pa.ipc.open_file(self._map)
        if self._reader.schema.names != list(COLUMNS):
            raise HarnessError(
                f"{path}: {PASSAGES_FILE} has columns {self._reader.schema.names}, expected {list(COLUMNS)}"
            )
        # Per column and record batch: the int32 offsets and the UTF-8 data, as memoryviews.
        self._starts: list[int] = []
        self._offsets: tuple[list[memoryview], ...] = ([], [], [])
        self._data: tuple[list[memoryview], ...] = ([], [], [])
        rows = 0
        for b in range(self._reader.num_record_batches):
            batch = self._reader.get_batch(b)
            self._starts.append(rows)
            rows += batch.num_rows
            for c in range(len(COLUMNS)):
                column = batch.column(c)
                _validity, offsets, data = column.buffers()
                if column.null_count:
                    raise HarnessError(f"{path}: column {COLUMNS[c]} has nulls; rebuild the store")
                start = column.offset
                self._offsets[c].append(memoryview(offsets).cast("i")[start : start + len(column) + 1])
                self._data[c].append(memoryview(data) if data is not None else memoryview(b""))
        if rows != self._count:
            raise HarnessError(f"{path}: {PASSAGES_FILE} has {rows} rows but {META_FILE} says {self._count}")
        self._dense = meta["id_index"] == "dense"
        self._hashes: np.ndarray | None = None
        self._rows: np.ndarray | None = None
        if not self._dense:
            self._hashes = np.load(path / HASH_FILE, mmap_mode="r")
            self._rows = np.load(path / ROW_FILE, mmap_mode="r")
            if len(self._hashes) != self._count or len(self._rows) != self._count:
                raise HarnessError(f"{path}: id index does not match {PASSAGES_FILE}; rebuild the store")

    @classmethod
    def open(cls, path: str | os.PathLike) -> CorpusStore:
        """Open the store at ``path`` (a directory written by :func:`build_store`)."""
        path = Path(path)
        try:
            meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HarnessError(f"{path} is not a corpus store (no {META_FILE}); build it with build_store") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise HarnessError(f"{path / META_FILE}: cannot read corpus store metadata: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            raise HarnessError(f"{path} is not a corpus store ({META_FILE} has no format {STORE_FORMAT!r})")
        if (path / COMPLETE_FILE).exists() and (problem := check_complete(path)) is not None:
            raise HarnessError(f"{path}: the corpus store is damaged ({problem}); remove this folder to rebuild it")
        if meta.get("version") != STORE_VERSION:
            raise HarnessError(
                f"{path}: corpus store version {meta.get('version')!r}, this harness reads {STORE_VERSION}; rebuild it"
            )
        try:
            return cls(path, meta)
        except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
            raise HarnessError(f"{path}: cannot open corpus store: {exc}") from None

    def __reduce__(self):
        return (CorpusStore.open, (str(self.path),))

    def __repr__(self) -> str:
        return f"CorpusStore(name={self.name!r}, passages={self._count}, path={str(self.path)!r})"

    # -- Corpus protocol

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Passage]:
        for batch in self.iter_batches():
            ids, titles, texts = (batch.column(c).to_pylist() for c in range(len(COLUMNS)))
            for i, t, x in zip(ids, titles, texts):
                yield Passage(id=i, title=t, text=x)

    def get(self, passage_id: str) -> Passage:
        return self._passage(passage_id, self.row(passage_id))

    # -- more

    def __contains__(self, passage_id: object) -> bool:
        try:
            self.row(passage_id)  # type: ignore[arg-type]
        except KeyError:
            return False
        return True

    def text(self, passage_id: str) -> str:
        """The passage's text (``KeyError`` when there is none)."""
        return self._field(2, self.row(passage_id))

    def title(self, passage_id: str) -> str:
        """The passage's title (``KeyError`` when there is none)."""
        return self._field(1, self.row(passage_id))

    def get_many(self, passage_ids: Iterable[str]) -> list[Passage]:
        """The passages with these ids, in this order; ``KeyError`` names the first absent one."""
        passage_ids = list(passage_ids)
        passage = self._passage
        return [passage(pid, row) for pid, row in zip(passage_ids, self.rows(passage_ids).tolist())]

    def texts(self, passage_ids: Iterable[str]) -> list[str]:
        """The texts of these passages, in this order; ``KeyError`` names the first absent one."""
        field = self._field
        return [field(2, row) for row in self.rows(passage_ids).tolist()]

    def passage_at(self, row: int) -> Passage:
        """The passage in 0-based position ``row`` (source order)."""
        if not 0 <= row < self._count:
            raise IndexError(f"row {row} out of range for {self._count} passages")
        return self._passage(self._field(0, row), row)

    def iter_batches(self, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        """The Arrow record batches in order (zero-copy); ``columns`` selects and orders columns."""
        for b in range(self._reader.num_record_batches):
            batch = self._reader.get_batch(b)
            yield batch if columns is None else batch.select(list(columns))

    def row(self, passage_id: str) -> int:
        """The 0-based position of the passage with this id; ``KeyError`` when there is none."""
        if not isinstance(passage_id, str):
            raise KeyError(passage_id)
        if self._dense:
            if passage_id.isascii() and passage_id.isdigit() and passage_id[0] != "0":
                n = int(passage_id)
                if n <= self._count:
                    return n - 1
            raise KeyError(passage_id)
        import numpy as np

        hashes, rows = self._hashes, self._rows
        assert hashes is not None and rows is not None
        h = id_hash(passage_id.encode("utf-8"))
        # np.uint64: a plain int below 2**63 would make numpy compare as float64 (and copy the index)
        position = int(hashes.searchsorted(np.uint64(h)))
        while position < self._count and int(hashes[position]) == h:
            row = int(rows[position])
            if self._field(0, row) == passage_id:
                return row
            position += 1
        raise KeyError(passage_id)

    def rows(self, passage_ids: Iterable[str]) -> np.ndarray:
        """The rows of these ids as an int64 array (vectorised); ``KeyError`` for the first absent."""
        import numpy as np

        passage_ids = passage_ids if isinstance(passage_ids, list) else list(passage_ids)
        if self._dense:
            return np.fromiter((self.row(p) for p in passage_ids), dtype=np.int64, count=len(passage_ids))
        hashes, rows = self._hashes, self._rows
        assert hashes is not None and rows is not None
        for p in passage_ids:
            if not isinstance(p, str):
                raise KeyError(p)
        wanted = np.fromiter((id_hash(p.encode("utf-8")) for p in passage_ids), dtype=np.uint64, count=len(passage_ids))
        positions = hashes.searchsorted(wanted)
        found = np.take(hashes, np.minimum(positions, self._count - 1)) == wanted
        candidates = np.take(rows, np.minimum(positions, self._count - 1)).astype(np.int64)
        out = np.empty(len(passage_ids), dtype=np.int64)
        field = self._field
        for k, (pid, ok, row) in enumerate(zip(passage_ids, found.tolist(), candidates.tolist())):
            if ok and field(0, row) == pid:
                out[k] = row
            else:  # absent, or a hash collision: the slow path decides
                out[k] = self.row(pid)
        return out

    def _passage(self, passage_id: str, row: int) -> Passage:
        b = bisect.bisect_right(self._starts, row) - 1
        j = row - self._starts[b]
        offsets, data = self._offsets[1][b], self._data[1][b]
        title = str(data[offsets[j] : offsets[j + 1]], "utf-8")
        offsets, data = self._offsets[2][b], self._data[2][b]
        return Passage(id=passage_id, title=title, text=str(data[offsets[j] : offsets[j + 1]], "utf-8"))

    def _field(self, column: int, row: int) -> str:
        b = bisect.bisect_right(self._starts, row) - 1
        j = row - self._starts[b]
        offsets = self._offsets[column][b]
        return str(self._data[column][b][offsets[j] : offsets[j + 1]], "utf-8")

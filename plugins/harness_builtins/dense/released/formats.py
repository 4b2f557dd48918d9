"""Readers of the released-embeddings formats: downloaded files in, ``(ids, vectors)`` chunks out.

:func:`open_release` gives a :class:`ReleaseReader` for a format of
:data:`harness.api.embeddings.EMBEDDING_FORMATS` and the files of a release (its parts, fetched).
Every reader streams the release in its own row order, ids exactly as the release writes them
(text; integers as their decimal text) and vectors as float32, in chunks of at most
:data:`CHUNK_BYTES`, never holding the release in memory. Each layout is its publisher's:

``faiss-flat``
    pyserini's prebuilt dense indexes (``FaissSearcher``): a folder with ``index``, a faiss
    ``IndexFlatIP`` written by ``faiss.write_index``, and ``docid``, one passage id a line in row
    order. The index is not loaded with faiss: its header (fourcc ``IxFI``, ``d``, ``ntotal``, two
    dummies, ``is_trained``, ``metric_type``; then the codes' length in floats) is parsed and
    checked against the file's size and the ``docid`` lines, and the vectors, one contiguous
    float32 block, are read in place (:meth:`ReleaseReader.contiguous` hands the block over for
    memory-mapping). Any other faiss index (IVF, HNSW, PQ, an id map, L2) is refused. pyserini
    ships the folder as a ``.tar.gz``: :func:`unpack_faiss_archive` unpacks it first.
``dpr-pickle``
    DPR's ``generate_dense_embeddings.py`` shards (``wiki_passages_0`` ... ``_49``): each a pickled
    list of ``(id, vector)`` tuples (``out[i].view(-1).numpy()``), read with
    :class:`~.unpickle.PickleStream` a pickler batch at a time.
``contriever-pickle``
    Contriever's ``generate_passage_embeddings.py`` shards (``passages_00`` ...): each a pickled
    ``(ids, embeddings)`` pair, one ``(n, dim)`` array (float16 from its fp16 default), shipped in
    ``wikipedia_embeddings.tar``. The members are read in the tar's order straight from the tar
    (nothing is extracted); a shard's ids are streamed into a compact store (its README encodes
    all 21M passages as one shard) and its array stays in the file, read a chunk of rows at a time.
``art-pickle``
    ART's precomputed evidence embeddings (``OpenRetreivalDataStore.save_shard`` /
    ``merge_shards_and_save``): one pickled ``{'embed_data': {row_id: np.float16(vector)}}``, the
    row ids numpy integers; read an item batch at a time.
``wiki-dpr``
    Hugging Face ``facebook/wiki_dpr`` parquet files (``id``, ``text``, ``title``, ``embeddings``
    as a list of float32): only ``id`` and ``embeddings`` are read, a record batch at a time;
    whole files and row groups before ``skip`` are passed over from the parquet metadata.

Damaged files (truncated, not the format, a refused pickle) raise
:class:`~harness.errors.InputFileError`: one line naming the file.
"""

from __future__ import annotations

import gzip
import itertools
import os
import shutil
import struct
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from harness.api import EMBEDDING_FORMATS
from harness.errors import HarnessError, InputFileError

from .unpickle import FileSpan, PickledArray, PickleStream, read_span

#: The most bytes of float32 vectors one chunk holds (and at most :data:`CHUNK_ROWS` rows).
CHUNK_BYTES = 32 << 20
CHUNK_ROWS = 65536


@dataclass(frozen=True)
class Contiguous:
    """The release's vectors lie in row order in one file: float32 little-endian, C order."""

    path: Path
    offset: int  # byte offset of row 0
    rows: int
    dim: int


class ReleaseReader(Protocol):
    format: str
    dim: int
    dtype: np.dtype  # the dtype the release stores (float32, or float16 where published so)
    rows: int | None  # known without reading every vector, else None

    def chunks(self, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        """Rows in the release's own order from row ``skip`` on: ids as the release writes them,
        vectors float32 C-contiguous ``(n, dim)``, at most :data:`CHUNK_ROWS` rows a chunk."""
        ...

    def contiguous(self) -> Contiguous | None:
        """The vector block, where the release is one float32 block in row order (faiss-flat)."""
        ...


def chunk_rows(dim: int) -> int:
    """Rows a chunk holds at width ``dim``."""
    return max(1, min(CHUNK_ROWS, CHUNK_BYTES // (4 * max(dim, 1))))


def _id_text(value, where, what: str) -> str:
    """An id as text: a string as is, an integer (Python or numpy) as its decimal text."""
    if type(value) is str:
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    raise InputFileError(where, f"{what} {value!r} is neither a string nor an integer")


class _Batcher:
    """Gathers rows into chunks of at most ``limit`` rows (ids and float32 blocks)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.ids: list[str] = []
        self.blocks: list[np.ndarray] = []
        self.rows = 0

    def add(self, ids: list[str], block: np.ndarray) -> Iterator[tuple[list[str], np.ndarray]]:
        start = 0
        while start < len(ids):
            take = min(self.limit - self.rows, len(ids) - start)
            self.ids.extend(ids[start:start + take])
            self.blocks.append(block[start:start + take])
            self.rows += take
            start += take
            if self.rows == self.limit:
                yield self.flush()

    def flush(self) -> tuple[list[str], np.ndarray]:
        blocks = self.blocks
        vectors = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
        if vectors.dtype != np.float32 or not vectors.flags.c_contiguous or not vectors.flags.writeable:
            vectors = np.ascontiguousarray(vectors, dtype=np.float32)
            if not vectors.flags.writeable:
                vectors = vectors.copy()
        chunk = (self.ids, vectors)
        self.ids, self.blocks, self.rows = [], [], 0
        return chunk

    def rest(self) -> Iterator[tuple[list[str], np.ndarray]]:
        if self.rows:
            yield self.flush()


# --- faiss-flat -------------------------------------------------------------------------------

#: faiss's fourccs (``index_write.cpp``), to name what a refused index is.
_FAISS_KINDS = {
    b"IxFI": "IndexFlatIP", b"IxF2": "IndexFlatL2", b"IxFl": "IndexFlat", b"IwFl": "IndexIVFFlat",
    b"IwFL": "IndexIVFFlat", b"IvFl": "IndexIVFFlat", b"IwPQ": "IndexIVFPQ", b"IwQR": "IndexIVFPQR",
    b"IwSq": "IndexIVFScalarQuantizer", b"IwSQ": "IndexIVFScalarQuantizer", b"IHNf": "IndexHNSWFlat",
    b"IHNp": "IndexHNSWPQ", b"IHNs": "IndexHNSWSQ", b"IxPQ": "IndexPQ", b"IxPq": "IndexPQ",
    b"IxPo": "IndexPQ", b"IHN2": "IndexHNSW2Level", b"IxSQ": "IndexScalarQuantizer",
    b"IxMp": "IndexIDMap", b"IxM2": "IndexIDMap2", b"IxPT": "IndexPreTransform", b"IxRF": "IndexRefineFlat",
    b"IxLS": "IndexLSH", b"IxSh": "IndexShards", b"IxSD": "IndexShards",
}
_FAISS_HEADER = struct.Struct("<4siqqq?i")  # fourcc, d, ntotal, dummy, dummy, is_trained, metric_type
_METRIC_INNER_PRODUCT = 0


def read_faiss_flat_header(path: Path, *, dim: int | None = None) -> Contiguous:
    """The vector block of a faiss ``IndexFlatIP`` file, checked against the file's size; any
    other index (or a damaged one) is refused in one line naming the file."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(_FAISS_HEADER.size + 8)
    except OSError as exc:
        raise InputFileError(path, f"cannot read the faiss index: {exc.strerror or exc}") from None
    if len(head) < 4:
        raise InputFileError(path, "not a faiss index: the file is empty")
    fourcc = head[:4]
    if fourcc != b"IxFI":
        kind = _FAISS_KINDS.get(fourcc)
        if kind is None and fourcc[:1] in (b"I", b"i") and fourcc.isascii() and fourcc.isalnum():
            kind = "index of another kind"
        if kind is None:
            raise InputFileError(path, f"not a faiss flat index (it starts with {fourcc!r}, not faiss's 'IxFI')")
        raise InputFileError(path, f"a faiss {kind} (fourcc {fourcc.decode('ascii')!r}), not an IndexFlatIP: "
                                   "only flat inner-product indexes are read (their vectors are stored exactly)")
    if len(head) < _FAISS_HEADER.size + 8:
        raise InputFileError(path, f"truncated: {size} bytes, shorter than a faiss IndexFlatIP header")
    _, d, ntotal, _, _, _, metric = _FAISS_HEADER.unpack_from(head)
    if metric != _METRIC_INNER_PRODUCT:
        raise InputFileError(path, f"a faiss flat index with metric_type {metric}, not inner product (0)")
    (floats,) = struct.unpack_from("<Q", head, _FAISS_HEADER.size)
    offset = _FAISS_HEADER.size + 8
    if d <= 0 or ntotal < 0 or floats != ntotal * d:
        raise InputFileError(path, f"a damaged IndexFlatIP header: d={d}, ntotal={ntotal}, {floats} stored floats")
    if dim is not None and d != dim:
        raise InputFileError(path, f"holds {d}-dimensional vectors, not {dim}")
    if size != offset + 4 * floats:
        raise InputFileError(path, f"{size:,} bytes where an IndexFlatIP of {ntotal:,} x {d} vectors has "
                                   f"{offset + 4 * floats:,}: truncated or damaged")
    return Contiguous(path=path, offset=offset, rows=ntotal, dim=d)


def _count_lines(path: Path) -> int:
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(16 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


class FaissFlatReader:
    """pyserini's prebuilt dense index: ``index`` (faiss IndexFlatIP) and ``docid``."""

    format = "faiss-flat"
    dtype = np.dtype(np.float32)

    def __init__(self, index: Path, docid: Path, dim: int):
        self.index_path, self.docid_path = index, docid
        self.block = read_faiss_flat_header(index, dim=dim)
        self.dim = self.block.dim
        try:
            ids = _count_lines(docid)
        except OSError as exc:
            raise InputFileError(docid, f"cannot read the docid file: {exc.strerror or exc}") from None
        if ids != self.block.rows:
            raise InputFileError(docid, f"{ids:,} ids for the {self.block.rows:,} vectors of {index}")
        self.rows = self.block.rows

    def contiguous(self) -> Contiguous:
        return self.block

    def path_of(self, row: int) -> Path:
        """Where row ``row``'s id is written (for messages)."""
        return self.docid_path

    def chunks(self, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        step = chunk_rows(self.dim)
        row_bytes = 4 * self.dim
        with open(self.docid_path, encoding="utf-8", errors="strict", newline="\n") as docids, \
                open(self.index_path, "rb") as vectors:
            try:
                for _ in itertools.islice(docids, min(skip, self.rows)):
                    pass
                vectors.seek(self.block.offset + skip * row_bytes)
                for first in range(skip, self.rows, step):
                    n = min(step, self.rows - first)
                    ids = [line.rstrip() for line in itertools.islice(docids, n)]  # as FaissSearcher.load_docids
                    if len(ids) != n or not all(ids):
                        empty = next((i for i, text in enumerate(ids) if not text), len(ids))
                        raise InputFileError(self.docid_path, "an empty passage id", line=first + empty + 1)
                    block = np.empty((n, self.dim), dtype="<f4")
                    if vectors.readinto(memoryview(block).cast("B")) != n * row_bytes:
                        raise InputFileError(self.index_path, "truncated while reading its vectors")
                    yield ids, block
            except UnicodeDecodeError:
                raise InputFileError(self.docid_path, "holds a passage id that is not UTF-8") from None


def unpack_faiss_archive(archive: Path, dest: Path) -> Path:
    """Unpack pyserini's ``.tar(.gz)`` of a dense index into the folder ``dest`` (its ``index``
    and ``docid``); ``dest`` if it is there already.

    The two members are streamed (16 MiB at a time) into ``dest``'s sibling ``NAME.partial``,
    which is renamed to ``dest`` once both are complete: an interrupted unpack leaves no ``dest``
    and is redone from the start. Disk: the unpacked size (the ``index``, ~4 x rows x dim bytes:
    64.6 GB for 21M x 768, and ``docid``) besides the archive itself.
    """
    archive, dest = Path(archive), Path(dest)
    if (dest / "index").is_file() and (dest / "docid").is_file():
        return dest
    if dest.exists():
        raise HarnessError(f"{dest} exists without a faiss 'index' and 'docid': remove it to unpack {archive} again")
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    found: dict[str, str] = {}
    try:
        with tarfile.open(archive, "r|*") as tar:
            for member in tar:
                base = member.name.rstrip("/").rsplit("/", 1)[-1]
                if base not in ("index", "docid") or not member.isreg():
                    continue
                if base in found:
                    raise InputFileError(archive, f"holds two {base!r} members ({found[base]}, {member.name})")
                found[base] = member.name
                source = tar.extractfile(member)
                with open(partial / base, "wb") as out:
                    shutil.copyfileobj(source, out, 16 << 20)
                    out.flush()
                    os.fsync(out.fileno())
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise InputFileError(archive, f"not a readable tar archive: {_first_line(exc)}") from None
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise HarnessError(f"cannot unpack {archive} into {partial}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    missing = [m for m in ("index", "docid") if m not in found]
    if missing:
        shutil.rmtree(partial, ignore_errors=True)
        raise InputFileError(archive, f"holds no {' or '.join(repr(m) for m in missing)} member: not a pyserini dense index")
    os.replace(partial, dest)
    return dest


# --- pickles ----------------------------------------------------------------------------------


def _vector_rows(rows: list[tuple[str, PickledArray]], dim: int, where) -> tuple[list[str], np.ndarray]:
    """Ids and a float32 ``(n, dim)`` block from ``(id, 1-D array)`` rows of in-memory arrays."""
    ids = []
    runs: list[tuple[np.dtype, list[bytes]]] = []
    for key, array in rows:
        if type(array) is not PickledArray or type(array.data) is not bytes:
            raise InputFileError(where, f"the vector of id {key!r} is a {type(array).__name__}, not a numpy array")
        if array.shape != (dim,) and array.shape != (1, dim):
            raise InputFileError(where, f"the vector of id {key!r} has shape {array.shape}, not ({dim},)")
        if array.dtype.kind != "f":
            raise InputFileError(where, f"the vector of id {key!r} is {array.dtype}, not floating point")
        ids.append(key)
        if runs and runs[-1][0] == array.dtype:
            runs[-1][1].append(array.data)
        else:
            runs.append((array.dtype, [array.data]))
    blocks = [np.frombuffer(b"".join(data), dtype=dtype).reshape(-1, dim) for dtype, data in runs]
    block = blocks[0] if len(blocks) == 1 else np.concatenate([b.astype(np.float32) for b in blocks])
    return ids, block


class _PickleReader:
    """Shared by the pickle readers: the dtype of the first vector, found by reading up to it."""

    dim: int
    paths: list[Path]
    _dtype: np.dtype | None = None
    _starts: list | tuple = ()  # (first row, file) of the files read so far

    @property
    def dtype(self) -> np.dtype:
        if self._dtype is None:
            self._dtype = np.dtype(np.float32)
            for _ in self._first_row():
                break
        return self._dtype

    def _first_row(self) -> Iterator[None]:
        for path in self.paths:
            for rows in self._rows(path):
                if rows:
                    if type(rows[0][1]) is PickledArray:
                        self._dtype = np.dtype(rows[0][1].dtype)
                    yield None
                    return

    def contiguous(self) -> None:
        return None

    def path_of(self, row: int) -> Path:
        """The file holding row ``row`` (of those read so far), for messages."""
        return _path_of(self._starts, row, self.paths)

    def chunks(self, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        batcher = _Batcher(chunk_rows(self.dim))
        seen = 0
        self._starts = []
        for path in self.paths:
            self._starts.append((seen, path))
            for rows in self._rows(path):
                if seen + len(rows) <= skip:
                    seen += len(rows)
                    continue
                ids, block = _vector_rows(rows, self.dim, path)
                drop = max(0, skip - seen)
                seen += len(rows)
                yield from batcher.add(ids[drop:], block[drop:])
        yield from batcher.rest()


def _open_binary(path: Path):
    """``path`` opened for reading bytes; a failure is one line naming it."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None


def _path_of(starts: list[tuple[int, object]], row: int, paths: list[Path]):
    """The last of ``starts`` (first row, file) at or before ``row``."""
    found = paths[0] if paths else None
    for first, path in starts:
        if first > row:
            break
        found = path
    return found


class DprPickleReader(_PickleReader):
    """DPR's shards: pickled lists of ``(id, vector)``; ids str or int as the version wrote them."""

    format = "dpr-pickle"
    rows = None

    def __init__(self, paths: Sequence[Path], dim: int):
        self.paths, self.dim = list(paths), dim

    def _rows(self, path: Path) -> Iterator[list[tuple[str, PickledArray]]]:
        with _open_binary(path) as f:
            for batch in PickleStream(f, path, stream_at=()):
                rows = []
                for item in batch:
                    if type(item) is not tuple or len(item) < 2:
                        raise InputFileError(path, f"an item {type(item).__name__} that is not an (id, vector) tuple")
                    rows.append((_id_text(item[0], path, "an id"), item[1]))
                yield rows

class ArtPickleReader(_PickleReader):
    """ART's evidence embeddings: ``{'embed_data': {row_id: float16 vector}}`` in one pickle."""

    format = "art-pickle"
    rows = None

    def __init__(self, paths: Sequence[Path], dim: int):
        self.paths, self.dim = list(paths), dim

    def _rows(self, path: Path) -> Iterator[list[tuple[str, PickledArray]]]:
        with _open_binary(path) as f:
            stream = PickleStream(f, path, stream_at=("embed_data",))
            for batch in stream:
                yield [(_id_text(key, path, "a row id"), value) for key, value in batch]
            if type(stream.result) is not dict or set(stream.result) != {"embed_data"}:
                keys = sorted(map(repr, stream.result)) if type(stream.result) is dict else type(stream.result).__name__
                raise InputFileError(path, f"holds {keys}, not ART's {{'embed_data': ...}}")


class ContrieverTarReader(_PickleReader):
    """Contriever's shards in ``wikipedia_embeddings.tar`` (or as separate files): each a
    pickled ``(ids, embeddings)``, read from the tar in member order without extracting."""

    format = "contriever-pickle"
    rows = None

    def __init__(self, paths: Sequence[Path], dim: int):
        self.paths, self.dim = list(paths), dim

    def _members(self) -> Iterator[tuple[Path, str, int, int]]:
        """(file, name for messages, start, end) of every shard, in order."""
        for path in self.paths:
            try:
                is_tar = tarfile.is_tarfile(path)
            except OSError as exc:
                raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
            if not is_tar:
                yield path, str(path), 0, path.stat().st_size
                continue
            with open(path, "rb") as f:
                magic = f.read(6)
            if magic.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ")):
                raise InputFileError(path, "a compressed tar: Contriever's wikipedia_embeddings.tar is read "
                                           "uncompressed, its shards in place")
            try:
                with tarfile.open(path, "r:") as tar:
                    members = [m for m in tar if m.isreg()]
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise InputFileError(path, f"a damaged or truncated tar ({_first_line(exc)})") from None
            size = path.stat().st_size
            for member in members:
                if member.offset_data + member.size > size:
                    raise InputFileError(f"{path}:{member.name}", "truncated: the member runs past the end of the tar")
                yield path, f"{path}:{member.name}", member.offset_data, member.offset_data + member.size

    def _shard(self, f, name: str, start: int, end: int) -> tuple[_IdStore, PickledArray]:
        """The shard's ids (streamed out of the pickle into a compact store: a shard may hold all
        21M) and its embeddings (left in the file when large)."""
        key = (name, start, end)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        ids = _IdStore()
        stream = PickleStream(f, name, start=start, end=end, stream_at=(), match_rows=False)
        for batch in stream:
            ids.add([_id_text(i, name, "an id") for i in batch])
        result = stream.result
        if (type(result) is not tuple or len(result) != 2 or result[0] != []
                or type(result[1]) is not PickledArray):
            raise InputFileError(name, "not Contriever's (ids, embeddings) pair")
        array = result[1]
        if len(array.shape) != 2 or array.shape[1] != self.dim:
            raise InputFileError(name, f"embeddings of shape {array.shape}, not (n, {self.dim})")
        if array.shape[0] != len(ids):
            raise InputFileError(name, f"{len(ids):,} ids for {array.shape[0]:,} embeddings")
        if array.dtype.kind != "f":
            raise InputFileError(name, f"embeddings of dtype {array.dtype}, not floating point")
        if array.order != "C":
            raise InputFileError(name, "embeddings in Fortran order: rows cannot be read in chunks")
        self._last = (key, (ids, array))
        return ids, array

    _last = None  # the last shard parsed: (member, (ids, embeddings)), kept for the next read

    def _first_row(self) -> Iterator[None]:
        for path, name, start, end in self._members():
            with open(path, "rb") as f:
                _, array = self._shard(f, name, start, end)
            self._dtype = np.dtype(array.dtype)
            yield None
            return

    def chunks(self, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        step = chunk_rows(self.dim)
        seen = 0
        self._starts = []
        for path, name, start, end in self._members():
            self._starts.append((seen, name))
            with open(path, "rb") as f:
                ids, array = self._shard(f, name, start, end)
                rows = len(ids)
                if seen + rows <= skip:
                    seen += rows
                    continue
                first = max(0, skip - seen)
                seen += rows
                for row in range(first, rows, step):
                    n = min(step, rows - row)
                    if type(array.data) is FileSpan:
                        try:
                            block = read_span(f, array.data, array.dtype, row, n, self.dim)
                        except EOFError as exc:
                            raise InputFileError(name, f"truncated while reading its embeddings: {exc}") from None
                    else:
                        block = np.array(array.values()[row:row + n], dtype=np.float32)
                    yield ids.slice(row, row + n), block


class _IdStore:
    """Ids kept compactly (their UTF-8 bytes joined, one end offset each: ~9 bytes an id instead
    of a Python string's ~60), in batches as they were added."""

    def __init__(self):
        self.blobs: list[bytes] = []
        self.ends: list[np.ndarray] = []
        self.firsts: list[int] = [0]

    def add(self, ids: list[str]) -> None:
        if not ids:
            return
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        self.blobs.append(b"".join(encoded))
        self.ends.append(np.cumsum([len(e) for e in encoded], dtype=np.uint32))  # a batch is << 4 GB
        self.firsts.append(self.firsts[-1] + len(ids))

    def __len__(self) -> int:
        return self.firsts[-1]

    def slice(self, start: int, stop: int) -> list[str]:
        out: list[str] = []
        b = int(np.searchsorted(self.firsts, start, side="right")) - 1
        while start < stop:
            first, blob, ends = self.firsts[b], self.blobs[b], self.ends[b]
            upto = min(stop, self.firsts[b + 1])
            lo, hi = start - first, upto - first
            offsets = ends[lo:hi].tolist()
            begin = int(ends[lo - 1]) if lo else 0
            for end in offsets:
                out.append(str(blob[begin:end], "utf-8", "surrogatepass"))
                begin = end
            start, b = upto, b + 1
        return out


# --- wiki-dpr (parquet) -----------------------------------------------------------------------


#: Bytes of a parquet column chunk read at a time.
_PARQUET_BUFFER = 8 << 20


class WikiDprReader:
    """Hugging Face ``wiki_dpr`` parquet files: the ``id`` and ``embeddings`` columns."""

    format = "wiki-dpr"

    def __init__(self, paths: Sequence[Path], dim: int):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.paths, self.dim = list(paths), dim
        self._files = []
        dtype = None
        for path in self.paths:
            try:
                meta = pq.ParquetFile(path)
            except (pa.ArrowException, OSError) as exc:
                raise InputFileError(path, f"not a readable parquet file: {_first_line(exc)}") from None
            schema = meta.schema_arrow
            missing = [c for c in ("id", "embeddings") if schema.get_field_index(c) < 0]
            if missing:
                raise InputFileError(path, f"has no {' or '.join(missing)} column (wiki_dpr's are id, text, title, embeddings)")
            kind = schema.field("embeddings").type
            if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)) \
                    or not pa.types.is_floating(kind.value_type):
                raise InputFileError(path, f"an embeddings column of type {kind}, not a list of floats")
            this = np.dtype(kind.value_type.to_pandas_dtype())
            dtype = dtype or this
            groups = [meta.metadata.row_group(g).num_rows for g in range(meta.num_row_groups)]
            self._files.append((path, groups))
        self.dtype = dtype or np.dtype(np.float32)
        self.rows = sum(sum(groups) for _, groups in self._files)

    def contiguous(self) -> None:
        return None

    def path_of(self, row: int) -> Path:
        """The parquet file holding row ``row`` (for messages)."""
        first, starts = 0, []
        for path, groups in self._files:
            starts.append((first, path))
            first += sum(groups)
        return _path_of(starts, row, self.paths)

    def chunks(self, skip: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        step = chunk_rows(self.dim)
        seen = 0
        for path, groups in self._files:
            total = sum(groups)
            if seen + total <= skip:
                seen += total
                continue
            wanted, drop = [], 0
            for g, n in enumerate(groups):
                if seen + n <= skip:
                    seen += n
                    continue
                if not wanted:
                    drop = max(0, skip - seen)
                wanted.append(g)
                seen += n
            try:
                # Column chunks streamed through a small buffer (pyarrow's default pre-buffering
                # reads a whole row group's columns first: 1.8 GB peak for a 1.2 GB row group).
                parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=_PARQUET_BUFFER)
                batches = parquet.iter_batches(batch_size=step, row_groups=wanted, columns=["id", "embeddings"])
                for batch in batches:
                    if drop:
                        cut = min(drop, batch.num_rows)
                        batch, drop = batch.slice(cut), drop - cut
                        if not batch.num_rows:
                            continue
                    yield self._convert(path, batch, pa)
            except (pa.ArrowException, OSError) as exc:
                raise InputFileError(path, f"a damaged parquet file: {_first_line(exc)}") from None

    def _convert(self, path: Path, batch, pa) -> tuple[list[str], np.ndarray]:
        ids_column, vectors = batch.column("id"), batch.column("embeddings")
        if ids_column.null_count or vectors.null_count:
            raise InputFileError(path, "null ids or embeddings")
        ids = [_id_text(i, path, "an id") for i in ids_column.to_pylist()]
        if pa.types.is_fixed_size_list(vectors.type):
            widths_ok = vectors.type.list_size == self.dim
        else:
            offsets = vectors.offsets.to_numpy()
            widths_ok = bool((np.diff(offsets) == self.dim).all())
        if not widths_ok:
            raise InputFileError(path, f"embeddings that are not all {self.dim} floats long")
        values = vectors.flatten()
        if values.null_count:
            raise InputFileError(path, "null values inside embeddings")
        block = values.to_numpy(zero_copy_only=False).reshape(len(ids), self.dim)
        return ids, np.array(block, dtype=np.float32, order="C")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- opening ----------------------------------------------------------------------------------


def _faiss_parts(paths: Sequence[Path]) -> tuple[Path, Path]:
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0] / "index", paths[0] / "docid"
    named = {p.name: p for p in paths}
    if len(paths) == 2 and set(named) == {"index", "docid"}:
        return named["index"], named["docid"]
    if len(paths) == 1 and paths[0].name.endswith((".tar", ".tar.gz", ".tgz")):
        raise HarnessError(f"{paths[0]}: a packed faiss index: unpack it first (unpack_faiss_archive)")
    raise HarnessError(f"a faiss-flat release is a folder holding 'index' and 'docid', not {', '.join(map(str, paths))}")


def open_release(format: str, paths: Sequence[Path], *, dim: int) -> ReleaseReader:
    """The reader of a release in ``format`` whose files (in read order) are ``paths``, with
    vectors ``dim`` wide."""
    if format not in EMBEDDING_FORMATS:
        raise HarnessError(f"unknown released-embeddings format {format!r}; known: {', '.join(EMBEDDING_FORMATS)}")
    paths = [Path(p) for p in paths]
    if not paths:
        raise HarnessError(f"a {format} release without files")
    if format == "faiss-flat":
        index, docid = _faiss_parts(paths)
        for path in (index, docid):
            if not path.is_file():
                raise InputFileError(path, "missing: a pyserini dense index holds 'index' and 'docid'")
        return FaissFlatReader(index, docid, dim)
    for path in paths:
        if not path.is_file():
            raise InputFileError(path, "missing")
    if format == "dpr-pickle":
        return DprPickleReader(paths, dim)
    if format == "contriever-pickle":
        return ContrieverTarReader(paths, dim)
    if format == "art-pickle":
        return ArtPickleReader(paths, dim)
    return WikiDprReader(paths, dim)


__all__ = ["CHUNK_BYTES", "CHUNK_ROWS", "Contiguous", "ReleaseReader", "chunk_rows", "open_release",
           "read_faiss_flat_header", "unpack_faiss_archive"]

"""The pickle readers: DPR's shards (``dpr-pickle``), Contriever's ``wikipedia_embeddings.tar``
(``contriever-pickle``) and ART's evidence embeddings (``art-pickle``).

Each reads its publisher's pickles with the restricted, streaming unpickler of :mod:`.unpickle`
(nothing in a pickle is run, nothing is held whole). DPR's and ART's rows come a pickler batch at
a time as ``(id, 1-D array)`` pairs, turned into float32 blocks by :func:`_vector_rows` and
chunked by the shared :class:`_PickleReader`; Contriever's shards are read in place from the tar,
their ids streamed into a compact :class:`_IdStore` and their one ``(n, dim)`` array read a chunk
of rows at a time from the file.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from harness.errors import InputFileError

from .contract import _Batcher, _first_line, _id_text, _open_binary, _path_of, chunk_rows
from .unpickle import FileSpan, PickledArray, PickleStream, read_span


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


__all__ = ["ArtPickleReader", "ContrieverTarReader", "DprPickleReader"]

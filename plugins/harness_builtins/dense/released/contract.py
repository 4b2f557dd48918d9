"""What every released-embeddings reader is and shares (the readers are in :mod:`.faiss_flat`,
:mod:`.pickles` and :mod:`.wiki_dpr`; :func:`.formats.open_release` picks one).

The contract: a :class:`ReleaseReader` streams a release in its own row order as ``(ids,
vectors)`` chunks of at most :data:`CHUNK_BYTES` (:func:`chunk_rows` rows at a width), ids as
text and vectors float32; :class:`Contiguous` is a release's vector block where it is one
float32 block in the file. And the pieces the readers share: ids as text (:func:`_id_text`),
rows gathered into chunks (:class:`_Batcher`), a file opened or named for one-line messages
(:func:`_open_binary`, :func:`_path_of`, :func:`_first_line`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from harness.errors import InputFileError

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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["CHUNK_BYTES", "CHUNK_ROWS", "Contiguous", "ReleaseReader", "chunk_rows"]

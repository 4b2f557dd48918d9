"""The ``faiss-flat`` reader: pyserini's prebuilt dense indexes, read without faiss.

A release is a folder holding ``index`` (a faiss ``IndexFlatIP`` written by ``faiss.write_index``)
and ``docid`` (one passage id a line, in row order); :func:`_faiss_parts` finds the two among a
release's paths. :func:`read_faiss_flat_header` parses and checks the index's header against the
file's size (any other faiss index is refused, named by its fourcc in :data:`_FAISS_KINDS`),
:class:`FaissFlatReader` reads the vectors in place, one contiguous float32 block, with the
``docid`` lines, and :func:`unpack_faiss_archive` unpacks the ``.tar.gz`` pyserini ships first.
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
from pathlib import Path

import numpy as np

from harness.errors import HarnessError, InputFileError

from .contract import Contiguous, _first_line, chunk_rows

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


def _faiss_parts(paths: Sequence[Path]) -> tuple[Path, Path]:
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0] / "index", paths[0] / "docid"
    named = {p.name: p for p in paths}
    if len(paths) == 2 and set(named) == {"index", "docid"}:
        return named["index"], named["docid"]
    if len(paths) == 1 and paths[0].name.endswith((".tar", ".tar.gz", ".tgz")):
        raise HarnessError(f"{paths[0]}: a packed faiss index: unpack it first (unpack_faiss_archive)")
    raise HarnessError(f"a faiss-flat release is a folder holding 'index' and 'docid', not {', '.join(map(str, paths))}")


__all__ = ["FaissFlatReader", "read_faiss_flat_header", "unpack_faiss_archive"]

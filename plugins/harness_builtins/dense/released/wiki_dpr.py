"""The ``wiki-dpr`` reader: Hugging Face ``facebook/wiki_dpr`` parquet files.

Only the ``id`` and ``embeddings`` (a list of floats) columns are read, a record batch at a time
through a small buffer (:data:`_PARQUET_BUFFER`) so a row group's columns are never held whole;
whole files and row groups before ``skip`` are passed over from the parquet metadata. pyarrow is
imported only when a reader is made.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from harness.errors import InputFileError

from .contract import _first_line, _id_text, _path_of, chunk_rows

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


__all__ = ["WikiDprReader"]

"""Small released-embeddings files, each written the way its publisher's code writes it.

Plain functions, shared by the reader tests (``test_released_formats.py``) and the import's
end-to-end tests. Each returns the list of file paths a spec's ``parts`` would name, in read order.

- :func:`write_faiss_flat`: pyserini's prebuilt dense index, written by faiss itself
  (``faiss.IndexFlatIP`` + ``faiss.write_index``) and a ``docid`` file, one id a line (what
  pyserini's ``FaissSearcher.load_docids`` reads); :func:`write_faiss_flat_tar` packs the folder as
  pyserini ships it (``NAME.tar.gz`` holding ``NAME/index`` and ``NAME/docid``).
- :func:`write_dpr_pickles`: DPR's ``generate_dense_embeddings.py``: per shard ``pickle.dump`` of a
  list of ``(ctx_id, out[i].view(-1).numpy())`` tuples, each vector a view of its batch's rows,
  to ``wiki_passages_{shard}`` (protocol 3: the default of the Python 3.6 it was run on).
- :func:`write_contriever_tar`: Contriever's ``generate_passage_embeddings.py``: per shard
  ``pickle.dump((allids, allembeddings), f)`` (a list of ids, one ``(n, dim)`` array, float16 when
  the model ran in fp16, its default) to ``passages_{shard:02d}``, the shards packed in
  ``wikipedia_embeddings.tar``; rows split as its ``shard_size = len(passages) // num_shards``.
- :func:`write_art_pickle`: ART's ``OpenRetreivalDataStore``: ``pickle.dump({'embed_data':
  {row_id: np.float16(embed)}})`` with numpy ``int64`` row ids as keys (``add_block_data`` over
  ``row_id.detach().cpu().numpy()``), protocol 4.
- :func:`write_wiki_dpr_parquet`: Hugging Face ``facebook/wiki_dpr``: parquet files with columns
  ``id`` (string), ``text``, ``title`` and ``embeddings`` (``Sequence(Value("float32"))``), by
  pyarrow or by ``datasets`` itself.
- :func:`write_hostile_pickle`: a DPR-shaped pickle whose one vector's ``__reduce__`` would run a
  shell command creating ``marker``.
"""

from __future__ import annotations

import io
import os
import pickle
import shlex
import tarfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: The protocols the publishers' pickles were written with (the default pickle protocol of the
#: Python each ran on: DPR 3.6 -> 3; Contriever and ART 3.8 -> 4).
DPR_PROTOCOL = 3
CONTRIEVER_PROTOCOL = 4
ART_PROTOCOL = 4


def write_faiss_flat(folder, ids: Sequence[str], vectors: np.ndarray) -> list[Path]:
    """``folder/index`` (a faiss ``IndexFlatIP`` holding ``vectors``) and ``folder/docid``."""
    import faiss

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{i}\n" for i in ids))
    return [folder / "index", folder / "docid"]


def write_faiss_flat_tar(path, ids: Sequence[str], vectors: np.ndarray, *, name: str | None = None) -> list[Path]:
    """The folder of :func:`write_faiss_flat` packed as pyserini ships it: ``path`` (a
    ``.tar.gz``) holding ``NAME/index`` and ``NAME/docid`` (``NAME`` defaults to the archive's
    name without ``.tar.gz``)."""
    path = Path(path)
    name = name or path.name.removesuffix(".gz").removesuffix(".tar")
    staging = path.parent / f".{path.name}.staging"
    index, docid = write_faiss_flat(staging / name, ids, vectors)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(staging / name, arcname=name)
    for file in (index, docid):
        file.unlink()
    (staging / name).rmdir()
    staging.rmdir()
    return [path]


def _shard_bounds(rows: int, shards: int) -> list[tuple[int, int]]:
    """Contiguous shards as DPR and Contriever cut them: ``rows // shards`` each, the last takes
    the rest."""
    size = rows // shards
    return [(s * size, rows if s == shards - 1 else (s + 1) * size) for s in range(shards)]


def write_dpr_pickles(folder, ids: Sequence, vectors: np.ndarray, shards: int, *, protocol: int = DPR_PROTOCOL,
                      batch: int = 32) -> list[Path]:
    """``folder/wiki_passages_0`` ... ``_{shards-1}``: each a pickled list of ``(id, vector)``
    tuples as DPR's ``gen_ctx_vectors`` builds it (each vector the ``view(-1)`` of one row of its
    encoder batch of ``batch`` rows). ``ids`` are written as given (str, or int as some DPR
    versions hold them)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard, (start, end) in enumerate(_shard_bounds(len(ids), shards)):
        results = []
        for first in range(start, end, batch):
            out = np.array(vectors[first:min(first + batch, end)])  # the batch's output tensor
            results.extend([(ids[first + i], out[i].reshape(-1)) for i in range(out.shape[0])])
        path = folder / f"wiki_passages_{shard}"
        with open(path, mode="wb") as f:
            pickle.dump(results, f, protocol=protocol)
        paths.append(path)
    return paths


def write_contriever_tar(path, ids: Sequence[str], vectors: np.ndarray, shards: int, *,
                         protocol: int = CONTRIEVER_PROTOCOL, folder: str = "wikipedia_embeddings") -> list[Path]:
    """``path`` (a tar) holding ``{folder}/passages_00`` ... : each a pickled ``(allids,
    allembeddings)`` pair, ``allembeddings`` one ``(n, dim)`` array in ``vectors``' dtype (pass
    float16 for Contriever's fp16 default)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for shard, (start, end) in enumerate(_shard_bounds(len(ids), shards)):
            allids = list(ids[start:end])
            allembeddings = np.ascontiguousarray(vectors[start:end])
            data = io.BytesIO()
            pickle.dump((allids, allembeddings), data, protocol=protocol)
            info = tarfile.TarInfo(f"{folder}/passages_{shard:02d}")
            info.size = data.tell()
            data.seek(0)
            tar.addfile(info, data)
    return [path]


def write_art_pickle(path, ids: Sequence[int], vectors: np.ndarray, *, protocol: int = ART_PROTOCOL) -> list[Path]:
    """``path``: ART's evidence embeddings, ``{'embed_data': {row_id: np.float16(embed)}}``, the
    row ids numpy ``int64`` scalars (``ids`` must be integers), in ``ids``' order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    embed_data = {}
    row_id = np.asarray(ids, dtype=np.int64)
    for idx, embed in zip(row_id, np.asarray(vectors, dtype=np.float32)):
        embed_data[idx] = np.float16(embed)
    with open(path, "wb") as writer:
        pickle.dump({"embed_data": embed_data}, writer, protocol=protocol)
    return [path]


def write_wiki_dpr_parquet(folder, ids: Sequence[str], vectors: np.ndarray, files: int, *, writer: str = "pyarrow",
                           row_group_size: int | None = None) -> list[Path]:
    """``folder/train-0000i-of-0000n.parquet``: ``wiki_dpr``'s columns (``id``, ``text``,
    ``title``, ``embeddings`` as a list of float32), rows split in ``files`` contiguous files;
    ``writer`` ``"pyarrow"`` or ``"datasets"`` (``Dataset.to_parquet`` with wiki_dpr's features)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(vectors, dtype=np.float32)
    paths = []
    for part, (start, end) in enumerate(_shard_bounds(len(ids), files)):
        columns = {
            "id": [str(i) for i in ids[start:end]],
            "text": [f"text of passage {i}" for i in ids[start:end]],
            "title": [f"Title {i}" for i in ids[start:end]],
            "embeddings": [row.tolist() for row in vectors[start:end]],
        }
        path = folder / f"train-{part:05d}-of-{files:05d}.parquet"
        if writer == "datasets":
            import datasets

            features = datasets.Features({
                "id": datasets.Value("string"), "text": datasets.Value("string"),
                "title": datasets.Value("string"), "embeddings": datasets.Sequence(datasets.Value("float32")),
            })
            datasets.Dataset.from_dict(columns, features=features).to_parquet(str(path))
        else:
            schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("title", pa.string()),
                                ("embeddings", pa.list_(pa.float32()))])
            pq.write_table(pa.table(columns, schema=schema), path, row_group_size=row_group_size)
        paths.append(path)
    return paths


class _Hostile:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def write_hostile_pickle(path, marker) -> list[Path]:
    """``path``: a DPR-shaped shard (a list of ``(id, vector)``) whose second vector is an object
    whose ``__reduce__`` calls ``os.system`` to create ``marker``; a plain ``pickle.load`` of it
    creates the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [("1", np.zeros(4, dtype=np.float32)), ("2", _Hostile(marker))]
    with open(path, "wb") as f:
        pickle.dump(rows, f, protocol=DPR_PROTOCOL)
    return [path]


__all__ = [
    "write_art_pickle", "write_contriever_tar", "write_dpr_pickles", "write_faiss_flat", "write_faiss_flat_tar",
    "write_hostile_pickle", "write_wiki_dpr_parquet",
]

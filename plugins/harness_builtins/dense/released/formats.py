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

The readers live by layout: :mod:`.faiss_flat`, :mod:`.pickles` (``dpr-pickle``,
``contriever-pickle``, ``art-pickle``) and :mod:`.wiki_dpr`; their contract and shared pieces in
:mod:`.contract`. Every name is importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.api import EMBEDDING_FORMATS
from harness.errors import HarnessError, InputFileError

from .contract import CHUNK_BYTES, CHUNK_ROWS, Contiguous, ReleaseReader, chunk_rows
from .faiss_flat import FaissFlatReader, _faiss_parts, read_faiss_flat_header, unpack_faiss_archive
from .pickles import ArtPickleReader, ContrieverTarReader, DprPickleReader
from .wiki_dpr import WikiDprReader


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

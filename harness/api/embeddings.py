"""Released passage embeddings: the vectors a retriever's authors (or pyserini) published for a
corpus, described as data so a dense retriever can search them without encoding a passage.

Plugins register :class:`ReleasedEmbeddings` records (``register_embeddings``); the built-in
``datasets`` plugin reads them from ``embeddings/NAME.toml`` in its spec folders
(``datasets_spec/`` and those of ``$HARNESS_SPEC_PATH``). ``harness list embeddings`` shows them,
``harness data fetch NAME`` downloads every part (resumable, each checksummed), and a dense
retriever searches one with ``-o embeddings=NAME``: the release is imported into the embedding
cache a ``harness run`` would have written, its ids mapped to the corpus's passage ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: How a release is laid out on disk, each read by its publisher's layout:
#: ``faiss-flat`` (pyserini's prebuilt dense index: a faiss ``IndexFlatIP`` file ``index`` and a
#: ``docid`` file, one passage id a line, row order), ``dpr-pickle`` (DPR's
#: ``generate_dense_embeddings.py`` shards: a pickled list of ``(id, vector)`` tuples),
#: ``contriever-pickle`` (Contriever's ``generate_passage_embeddings.py`` shards: a pickled
#: ``(ids, embeddings)`` pair, shipped in a tar), ``art-pickle`` (ART's/MSS's evidence embeddings),
#: ``wiki-dpr`` (Hugging Face ``facebook/wiki_dpr``: a dataset with ``id`` and ``embeddings``
#: columns).
EMBEDDING_FORMATS = ("faiss-flat", "dpr-pickle", "contriever-pickle", "art-pickle", "wiki-dpr")
#: How the vectors are stored in a download.
EMBEDDING_DTYPES = ("float32", "float16")
#: Archive kinds a part may be (its format's reader finds the files it reads inside it).
PART_COMPRESSIONS = ("tar.gz", "tar")


@dataclass(frozen=True, kw_only=True)
class EmbeddingsPart:
    """One file of a release: where it is, where it goes under the data directory, and its
    checksum and size where the publisher gives them (as for any download,
    :mod:`harness.data.download`; no ``sha256``: the digest of the first download is recorded).

    ``md5`` is the publisher's MD5 of the file where that is the checksum it publishes (pyserini's
    index tables): the fetched file is checked against it too. ``compression`` says the part is an
    archive (``tar.gz`` or ``tar``): the format's reader finds its files inside it (a faiss flat
    index's ``index`` and ``docid``; every file of Contriever's tar, a shard each).
    """

    url: str
    path: str
    sha256: str | None = None
    size: int | None = None
    md5: str | None = None
    compression: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReleasedEmbeddings:
    """A released set of passage vectors: its parts, layout, the corpus and encoder it belongs to.

    ``corpus`` names a corpus spec; ``encoder`` the encoder preset whose passage side produced the
    vectors (its question side is what searches them, and a sample of passages is re-encoded with
    its passage side to check the release before it is trusted). ``format`` is one of
    :data:`EMBEDDING_FORMATS`; ``parts`` every file to download, in the order they are read.
    ``rows`` is the number of vectors the publisher lists, ``dim`` their width. ``id_prefix`` is what
    the release puts before the corpus's passage id (e.g. ``"wiki:"``); ids are always mapped
    explicitly, never by position. ``disk`` is the bytes the release needs once fetched and
    imported (downloads and the float32 store), stated to the user before a fetch. ``dtype`` is how
    the vectors are stored in the download (``float32``, or ``float16`` for ART's pickle: widened
    to float32 on import). ``reproduces`` says, in words, which published row the release gives.
    """

    name: str
    description: str
    corpus: str
    encoder: str
    format: str
    parts: tuple[EmbeddingsPart, ...]
    rows: int
    dim: int
    id_prefix: str = ""
    disk: int | None = None
    license: str = ""
    citation: str = ""
    homepage: str = ""
    version: str = ""
    dtype: str = "float32"
    reproduces: str = ""
    source: str = field(default="", compare=False)  # the spec file it was read from, for messages


__all__ = ["EMBEDDING_DTYPES", "EMBEDDING_FORMATS", "PART_COMPRESSIONS", "EmbeddingsPart", "ReleasedEmbeddings"]

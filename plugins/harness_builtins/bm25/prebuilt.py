"""Pyserini's prebuilt Lucene index for DPR's Wikipedia, instead of indexing 21M passages here.

For a corpus listed in :data:`PREBUILT` (``wikipedia-dpr-100w``, DPR's ``psgs_w100``), BM25 uses
pyserini's prebuilt index of the same passages (``title\\ntext`` contents, Anserini's default
English analyzer: what this plugin would build, and what the pyserini and DPR papers report).
It is fetched with pyserini's own mechanism (``pyserini.util.download_prebuilt_index``: its URLs,
its md5 checksum, its unpacking), with ``PYSERINI_CACHE`` pointed into the harness cache, so the
index lands in ``<cache>/bm25/prebuilt/indexes/<name>.<md5>/``, the layout pyserini itself uses.

Sizes (pyserini's ``wikipedia-dpr-100w``, built 2021-01-20): 9.2 GB to download (``.tar.gz``),
about as much again unpacked (the tarball is deleted after unpacking, so ~19 GB free disk while fetching); Lucene memory-maps
the index, so searching needs a few GB of JVM heap, not the index's size in RAM.

With ``HARNESS_OFFLINE=1`` nothing is downloaded: a missing index is one error line naming the
command that fetches it and the folder it goes to. Any other corpus is indexed by the plugin.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from harness.api import Corpus, RunContext
from harness.data.download import OFFLINE_ENV, is_offline
from harness.errors import HarnessError

from harness_builtins.bm25.java import start_jvm

#: Corpus name -> pyserini prebuilt index name.
PREBUILT = {"wikipedia-dpr-100w": "wikipedia-dpr-100w"}

#: Where prebuilt indexes live, under the run's cache folder (pyserini's cache root).
PREBUILT_FOLDER = Path("bm25") / "prebuilt"


def _index_info(name: str) -> dict:
    start_jvm()  # pyserini's modules start a JVM on import: it must be the Java 21 one
    from pyserini.prebuilt_index_info import TF_INDEX_INFO

    try:
        return TF_INDEX_INFO[name]
    except KeyError:
        raise HarnessError(f"bm25: this pyserini has no prebuilt index {name!r}; upgrade pyserini") from None


def prebuilt_path(name: str, cache_dir: str | os.PathLike) -> Path:
    """Where pyserini unpacks prebuilt index ``name`` when its cache is ``<cache_dir>/bm25/prebuilt``.

    Mirrors ``pyserini.util.download_and_unpack_index``: ``indexes/<file name without .tar.gz>.<md5>``.
    """
    info = _index_info(name)
    stem = re.sub(r"\.tar\.gz.*$", "", info.get("filename") or info["urls"][0].split("/")[-1])
    return Path(cache_dir) / PREBUILT_FOLDER / "indexes" / f"{stem}.{info['md5']}"


def _complete(path: Path) -> bool:
    # pyserini renames the unpacked folder into place last; a Lucene index has a segments_N file.
    return path.is_dir() and any(p.name.startswith("segments_") for p in path.iterdir())


@contextlib.contextmanager
def _pyserini_cache(root: Path):
    old = os.environ.get("PYSERINI_CACHE")
    os.environ["PYSERINI_CACHE"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYSERINI_CACHE", None)
        else:
            os.environ["PYSERINI_CACHE"] = old


def fetch_command(name: str, cache_dir: str | os.PathLike) -> str:
    """The shell command that fetches index ``name`` into the harness cache with pyserini."""
    root = Path(cache_dir) / PREBUILT_FOLDER
    return (
        f"PYSERINI_CACHE={root} python -c \"from pyserini.util import download_prebuilt_index; "
        f"download_prebuilt_index('{name}')\""
    )


def prebuilt_lucene_index(corpus: Corpus, context: RunContext) -> Path | None:
    """The Lucene index folder to search for ``corpus``, if pyserini has a prebuilt one for it.

    Downloads it (pyserini's URLs and md5 check) on first use; None for other corpora.
    """
    name = PREBUILT.get(corpus.name)
    if name is None:
        return None
    path = prebuilt_path(name, context.cache_dir)
    if _complete(path):
        return path
    info = _index_info(name)
    size = info.get("size compressed (bytes)")
    how_big = f", {size / 1e9:.1f} GB download, ~{2 * size / 1e9:.0f} GB free disk while unpacking" if size else ""
    if is_offline():
        raise HarnessError(
            f"bm25: pyserini's prebuilt index {name!r} for corpus {corpus.name!r} is not in the cache and "
            f"{OFFLINE_ENV} is set; fetch it with: {fetch_command(name, context.cache_dir)} "
            f"(it unpacks to {path}{how_big})"
        )
    from pyserini.util import download_prebuilt_index

    root = Path(context.cache_dir) / PREBUILT_FOLDER
    root.mkdir(parents=True, exist_ok=True)
    try:
        with _pyserini_cache(root):
            fetched = Path(download_prebuilt_index(name, verbose=context.progress))
    except (OSError, ValueError, AssertionError) as exc:  # pyserini reports a bad checksum by assert
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise HarnessError(
            f"bm25: could not fetch pyserini's prebuilt index {name!r}: {message}; "
            f"fetch it with: {fetch_command(name, context.cache_dir)}"
        ) from None
    if not _complete(fetched):
        raise HarnessError(f"bm25: pyserini's prebuilt index {name!r} at {fetched} is incomplete; remove it and retry")
    return fetched


def open_searcher(path: Path, k1: float, b: float):
    """A pyserini ``LuceneSearcher`` on the index at ``path``, set to BM25(k1, b)."""
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(path))
    searcher.set_bm25(k1, b)
    return searcher

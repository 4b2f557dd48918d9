"""Pyserini's prebuilt Lucene index for DPR's Wikipedia, instead of indexing 21M passages here.

For a corpus listed in :data:`PREBUILT` (``wikipedia-dpr-100w``, DPR's ``psgs_w100``), BM25 uses
pyserini's prebuilt index of the same passages (``title\\ntext`` contents, Anserini's default
English analyzer: what this plugin would build, and what the pyserini and DPR papers report).
It is fetched with pyserini's own mechanism (``pyserini.util.download_prebuilt_index``: its URLs,
its md5 checksum, its unpacking), with ``PYSERINI_CACHE`` pointed into the harness cache, so the
index lands in ``<cache>/bm25/prebuilt/indexes/<archive name>.<md5>/``, the layout pyserini itself
uses.

Two versions of the index exist, one per pyserini line (:data:`KNOWN_INDEXES`, as pyserini lists
them):

- pyserini 1.x and 2.0.0: ``lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz`` (md5
  ``7b58c08d...``, 9.18 GB gzip-compressed, built 2021-01-20 with the Lucene of Anserini then);
- pyserini 2.1.0 on: ``lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.tar`` (md5
  ``1ef94a97...``, 11.08 GB, an uncompressed tar of an index rebuilt on Lucene 10.4.0).

The unpacked folder is the archive's name less its extension, then ``.<md5>``: pyserini 1.x strips
``.tar.gz`` (``re.sub('.tar.gz.*$', '', name)``), pyserini 2.1 on ``\\.tar(\\.gz)?`` and a query
string (``_archive_name_to_dir_name``); :func:`folder_names` gives both readings, and an index
unpacked by either pyserini is found. The folder must hold a Lucene commit (a ``segments_N``
file).

A run on the prebuilt index records in its parameters the index it searched (:func:`index_record`):
pyserini's index name, its archive file name (``index_file``), the md5 pyserini lists for it, and
the Lucene version that wrote the index, read from the ``segments_N`` header
(:func:`lucene_version`: a few dozen bytes, no JVM). Published BM25 numbers are scoped to an
``index_file`` (``scope`` in ``datasets_spec/published/pyserini-*.toml``), so a result is checked
against the figures of its own index version.

Sizes: about the download again unpacked (the archive is deleted after unpacking, so ~2x its size
free disk while fetching); Lucene memory-maps the index, so searching needs a few GB of JVM heap,
not the index's size in RAM.

Pyserini 2.1 on reads its prebuilt-index list from the network when first asked; offline (or
when that fails) the index pyserini's version ships with is taken from :data:`KNOWN_INDEXES`.
With ``HARNESS_OFFLINE=1`` nothing is downloaded: a missing index is one error line naming the
command that fetches it and the folder it goes to. Any other corpus is indexed by the plugin.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
from pathlib import Path
from typing import Any

from harness.api import Corpus, RunContext
from harness.data.download import OFFLINE_ENV, is_offline
from harness.errors import HarnessError, InputFileError

from harness_builtins.bm25.java import start_jvm

#: Corpus name -> pyserini prebuilt index name.
PREBUILT = {"wikipedia-dpr-100w": "wikipedia-dpr-100w"}

#: Where prebuilt indexes live, under the run's cache folder (pyserini's cache root).
PREBUILT_FOLDER = Path("bm25") / "prebuilt"

#: The versions of pyserini's ``wikipedia-dpr-100w`` index, as pyserini lists them: pyserini
#: 1.6.0's ``prebuilt_index_info.py`` (the same through 2.0.0) and, from 2.1.0 on,
#: castorini/prebuilt-indexes ``lucene/other-inverted.json`` (read at 81a1cec3), with the first
#: pyserini release that downloads each.
KNOWN_INDEXES: dict[str, dict[str, Any]] = {
    "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz": {
        "index": "wikipedia-dpr-100w", "md5": "7b58c08da992b2ea7e96667f0b176651", "size": 9177917732,
        "documents": 21015324, "pyserini": (0, 0, 0),
        "urls": ["https://rgw.cs.uwaterloo.ca/pyserini/indexes/lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz"],
    },
    "lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.tar": {
        "index": "wikipedia-dpr-100w", "md5": "1ef94a97f2ac418577d1e6a9ecf44806", "size": 11078635520,
        "documents": 21015324, "pyserini": (2, 1, 0), "lucene": "10.4.0",
        "urls": ["https://rgw.cs.uwaterloo.ca/pyserini/indexes/lucene/lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.tar"],
    },
}

#: Lucene's codec header magic (``CodecUtil.CODEC_MAGIC``), the first four bytes of ``segments_N``.
_CODEC_MAGIC = 0x3FD76C17


def pyserini_version() -> tuple[int, ...] | None:
    """The installed pyserini's version as numbers (``(1, 6, 0)``), or None when it is not installed."""
    try:
        text = importlib.metadata.version("pyserini")
    except importlib.metadata.PackageNotFoundError:
        return None
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _known_for(name: str, version: tuple[int, ...] | None) -> tuple[str, dict] | None:
    """The :data:`KNOWN_INDEXES` entry pyserini ``version`` downloads for index ``name``."""
    found = [(f, i) for f, i in KNOWN_INDEXES.items() if i["index"] == name and (version is None or version >= i["pyserini"])]
    return max(found, key=lambda item: item[1]["pyserini"]) if found else None


def _index_info(name: str) -> dict:
    """Pyserini's record of prebuilt index ``name`` (``filename``, ``urls``, ``md5``, size); where
    pyserini cannot give it (2.1 on reads it from the network), the known one for its version."""
    start_jvm()  # pyserini's modules start a JVM on import: it must be the Java 21 one
    from pyserini.prebuilt_index_info import TF_INDEX_INFO

    try:
        info = dict(TF_INDEX_INFO[name])
    except KeyError:
        raise HarnessError(f"bm25: this pyserini has no prebuilt index {name!r}; upgrade pyserini") from None
    except OSError:  # urllib's URLError: pyserini 2.1 on could not fetch its index list
        known = _known_for(name, pyserini_version())
        if known is None:
            raise HarnessError(f"bm25: pyserini could not list its prebuilt indexes (offline?) and {name!r} is not known here") from None
        filename, entry = known
        info = {"filename": filename, "urls": list(entry["urls"]), "md5": entry["md5"], "size": entry["size"]}
    return info


def archive_name(info: dict) -> str:
    """The archive's file name as pyserini names it: its ``filename``, else its first URL's last part."""
    return info.get("filename") or re.sub(r"\?dl=1$", "", info["urls"][0].split("/")[-1])


def folder_names(filename: str, md5: str) -> list[str]:
    """The folder names pyserini unpacks archive ``filename`` to: pyserini 2.1 on strips
    ``\\.tar(\\.gz)?`` and a query string, pyserini 1.x ``.tar.gz`` and anything after it; the same
    name for a ``.tar.gz``, two readings for a ``.tar``."""
    names = [re.sub(r"\.tar(\.gz)?(\?.*)?$", "", filename), re.sub(r".tar.gz.*$", "", filename)]
    return list(dict.fromkeys(f"{stem}.{md5}" for stem in names))


def prebuilt_path(name: str, cache_dir: str | os.PathLike) -> Path:
    """Where prebuilt index ``name`` is when pyserini's cache is ``<cache_dir>/bm25/prebuilt``: the
    folder of either pyserini naming (:func:`folder_names`) that holds an index, else the one
    pyserini 2.1 on would unpack to (for a ``.tar.gz`` the same as pyserini 1.x's)."""
    info = _index_info(name)
    indexes = Path(cache_dir) / PREBUILT_FOLDER / "indexes"
    candidates = [indexes / folder for folder in folder_names(archive_name(info), info["md5"])]
    return next((path for path in candidates if _complete(path)), candidates[0])


def _complete(path: Path) -> bool:
    # pyserini renames the unpacked folder into place last; a Lucene index has a segments_N file.
    return path.is_dir() and any(p.name.startswith("segments_") for p in path.iterdir())


def _vint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 28:
            raise ValueError("truncated variable-length integer")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def lucene_version(index: str | os.PathLike) -> dict[str, Any]:
    """The Lucene version that wrote index folder ``index``'s latest commit, and the major version
    it was created with: ``{"lucene_version": "10.4.0", "lucene_created_major": 10}``.

    Read from the header of the ``segments_N`` file with the highest generation (Lucene's
    ``SegmentInfos.readCommit``, Lucene 7 on: codec header ``segments``, 16-byte id, the
    generation as suffix, then the writer's version as three variable-length integers and the
    creation major); a file that is not such a header is an :class:`InputFileError`.
    """
    folder = Path(index)
    commits = [p for p in folder.iterdir() if re.fullmatch(r"segments_[0-9a-z]+", p.name)] if folder.is_dir() else []
    if not commits:
        raise InputFileError(folder, "no Lucene commit (segments_N file): not a Lucene index")
    path = max(commits, key=lambda p: int(p.name.split("_", 1)[1], 36))
    try:
        with open(path, "rb") as f:
            data = f.read(256)
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        if len(data) < 4 or int.from_bytes(data[:4], "big") != _CODEC_MAGIC:
            raise ValueError("no Lucene codec header (an index older than Lucene 7, or not a segments file)")
        length, at = _vint(data, 4)
        codec = data[at : at + length].decode("utf-8", "replace")
        at += length
        if codec != "segments":
            raise ValueError(f"codec {codec!r}, expected 'segments'")
        at += 4 + 16  # format version, segment id
        if at >= len(data):
            raise ValueError("truncated header")
        at += 1 + data[at]  # the generation suffix
        major, at = _vint(data, at)
        minor, at = _vint(data, at)
        bugfix, at = _vint(data, at)
        created, at = _vint(data, at)
    except ValueError as exc:
        raise InputFileError(path, f"cannot read the Lucene version: {exc}") from None
    return {"lucene_version": f"{major}.{minor}.{bugfix}", "lucene_created_major": created}


def index_record(name: str, path: Path, info: dict) -> dict[str, Any]:
    """What a result records of the prebuilt index it searched (flat, for the retriever's
    parameters): pyserini's name, the archive file, the md5 pyserini lists and the Lucene version
    read from the index itself."""
    return {"prebuilt_index": name, "index_file": archive_name(info), "index_md5": info["md5"], **lucene_version(path)}


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
    size = info.get("size compressed (bytes)") or info.get("size")
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


def prebuilt_record(corpus: Corpus, path: Path) -> dict[str, Any]:
    """:func:`index_record` of the prebuilt index at ``path`` that :func:`prebuilt_lucene_index`
    gave for ``corpus``."""
    name = PREBUILT[corpus.name]
    return index_record(name, path, _index_info(name))


def open_searcher(path: Path, k1: float, b: float):
    """A pyserini ``LuceneSearcher`` on the index at ``path``, set to BM25(k1, b)."""
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(path))
    searcher.set_bm25(k1, b)
    return searcher

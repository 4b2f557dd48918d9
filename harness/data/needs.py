"""What a run needs from the data folder, and which of it is not there.

A :class:`Needed` is one file a suite, a corpus, a published run, released embeddings or a
retriever downloads through :func:`harness.data.download.fetch`: what it is for, its URL, where it
goes under the data folder, and its size and sha256 when published. :func:`missing` keeps those
whose file is not in the data folder; :func:`format_table` and :func:`format_tsv` list them for
``harness data missing`` (a table to read, and tab-separated ``url path size sha256 what`` lines
to feed a download script on a machine that has a network).

A retriever's files are known before it is loaded when its plugin declares them
(:func:`declare_retriever_needs`, from its ``register_retrievers`` hook): ``harness run`` then
names, offline, every missing file of the suite, its corpus and the retriever at once
(:class:`MissingFilesError`), and opens the suite's corpus before any model is loaded
(:func:`prepare_run`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data.download import LISTING, OFFLINE_ENV, OfflineError, RemoteFile, data_dir as default_data_dir, locate
from harness.data.download import offline_message, size_text


@dataclass(frozen=True)
class Needed:
    """One file a run needs: ``what`` it is for (``suite nq, part test: questions``) and the
    :class:`~harness.data.download.RemoteFile` it is fetched as."""

    what: str
    remote: RemoteFile

    def target(self, data_dir: str | os.PathLike | None = None) -> Path:
        """Where the file goes (:func:`harness.data.download.locate`)."""
        return locate(self.remote, data_dir)


def missing(needed: Iterable[Needed], data_dir: str | os.PathLike | None = None) -> list[Needed]:
    """The files of ``needed`` not in the data folder, in order, each target once."""
    out: list[Needed] = []
    seen: set[Path] = set()
    for item in needed:
        target = item.target(data_dir)
        if target in seen or target.is_file():
            continue
        seen.add(target)
        out.append(item)
    return out


def total_text(needed: Sequence[Needed]) -> str:
    """``3 files, 13.1 GB`` (``at least`` and how many are of unpublished size, when some are)."""
    known = sum(item.remote.size or 0 for item in needed)
    unknown = sum(1 for item in needed if item.remote.size is None)
    files = f"{len(needed)} file{'s' if len(needed) != 1 else ''}"
    if not unknown:
        return f"{files}, {size_text(known)}"
    if unknown == len(needed):
        return f"{files} of unpublished size"
    return f"{files}, at least {size_text(known)} ({unknown} of unpublished size)"


def format_table(needed: Sequence[Needed], data_dir: str | os.PathLike | None = None) -> str:
    """A readable table of ``needed``: what, size, target path, URL and sha256."""
    from tabulate import tabulate

    rows = [
        [item.what, size_text(item.remote.size), str(item.target(data_dir)), item.remote.url,
         item.remote.sha256 or "not published"]
        for item in needed
    ]
    return tabulate(rows, headers=["needed for", "size", "save as", "url", "sha256"], tablefmt="github",
                    disable_numparse=True)


#: The columns of :func:`format_tsv`, in order.
TSV_COLUMNS = ("url", "path", "size", "sha256", "what")


def format_tsv(needed: Sequence[Needed], data_dir: str | os.PathLike | None = None) -> str:
    """One tab-separated line per file, ``url path size sha256 what`` (``-`` for a size or sha256
    not published; tabs and line breaks in ``what`` become spaces), no header: for scripts."""
    lines = []
    for item in needed:
        what = " ".join(item.what.split())
        size = str(item.remote.size) if item.remote.size is not None else "-"
        lines.append("\t".join([item.remote.url, str(item.target(data_dir)), size, item.remote.sha256 or "-", what]))
    return "".join(line + "\n" for line in lines)


class MissingFilesError(OfflineError):
    """Offline mode is on and files a command needs are not in the data folder: every one of them
    is named (what it is for, its size, where to save it) in one line, with the listing that gives
    their URLs and checksums. ``also``: files only a run needs (a suite's corpus), named after them."""

    def __init__(self, needed: Sequence[Needed], *, also: Sequence[Needed] = (), listing: str = LISTING,
                 data_dir: str | os.PathLike | None = None):
        self.needed, self.also, self.listing = list(needed), list(also), listing
        folder = Path(data_dir) if data_dir is not None else default_data_dir()
        every = [*self.needed, *self.also]
        if len(every) == 1:  # the message of the one file's own fetch
            super().__init__(offline_message(every[0].remote, every[0].target(data_dir)))
            return

        def named(items: Sequence[Needed]) -> str:
            return "; ".join(f"{item.what} ({size_text(item.remote.size)}): {item.remote.url} -> {item.target(data_dir)}"
                             for item in items)

        if self.needed:
            message = f"offline mode ({OFFLINE_ENV}=1) and {total_text(self.needed)} are not in the data folder {folder}: "
            message += named(self.needed)
            if self.also:
                message += f"; a run also needs {total_text(self.also)}: {named(self.also)}"
        else:
            message = f"offline mode ({OFFLINE_ENV}=1) and {total_text(self.also)} are not in the data folder {folder}: "
            message += named(self.also)
        super().__init__(
            f"{message}; `{listing}` lists them with their checksums (--format tsv for a download script), "
            f"or unset {OFFLINE_ENV} to download them"
        )

    @property
    def every(self) -> list[Needed]:
        """The files named, those only a run needs included."""
        return [*self.needed, *self.also]


# -- what a retriever downloads ------------------------------------------------------------------

#: retriever name -> its plugin's declaration: ``options`` (the resolved ones) -> files it downloads.
_RETRIEVER_NEEDS: dict[str, Callable[[Mapping[str, Any]], Sequence[Needed]]] = {}


def declare_retriever_needs(name: str, needs: Callable[[Mapping[str, Any]], Sequence[Needed]]) -> None:
    """Declare the files retriever ``name`` downloads when loaded with given options (called from
    the plugin's ``register_retrievers`` hook): ``needs(options)`` lists them, whether or not they
    are there, without loading anything heavy."""
    _RETRIEVER_NEEDS[name] = needs


def retriever_needs(name: str, options: Mapping[str, Any]) -> list[Needed]:
    """The files retriever ``name`` with ``options`` downloads, as its plugin declares them (none
    when it declares nothing)."""
    declared = _RETRIEVER_NEEDS.get(name)
    return list(declared(options)) if declared is not None else []


def run_listing(suite: str, retriever: str, options: Mapping[str, Any] | None = None) -> str:
    """The ``harness data missing`` command listing every file a run of ``retriever`` (with the
    options given) on ``suite`` needs."""
    import shlex

    given = "".join(f" -o {shlex.quote(f'{key}={value}')}" for key, value in (options or {}).items())
    return f"{LISTING} {shlex.quote(suite)} --corpus --retriever {shlex.quote(retriever)}{given}"


def prepare_run(suite_load: Callable[[], Any], retriever: str, options: Mapping[str, Any], *, listing: str) -> Any:
    """The loaded suite of a run (``suite_load()``), with its corpus opened, before the retriever is
    loaded: a corpus that cannot be had fails before any model is. Offline, every missing file
    of the suite, its corpus and the retriever (as its plugin declares them) is named in one
    :class:`MissingFilesError` (``listing``: the ``harness data missing`` command for this run)."""
    from harness.data.corpora import LazyCorpus
    from harness.data.download import is_offline

    offline = is_offline()
    wanted = missing(retriever_needs(retriever, options)) if offline else []
    try:
        loaded = suite_load()
    except MissingFilesError as exc:
        raise MissingFilesError(missing([*exc.every, *wanted]), listing=listing) from None
    corpus = loaded.corpus
    if isinstance(corpus, LazyCorpus) and not corpus.loaded:
        if offline:
            wanted = missing([*corpus.needs, *wanted])
        if wanted:
            raise MissingFilesError(wanted, listing=listing)
        corpus.open()
    elif wanted:
        raise MissingFilesError(wanted, listing=listing)
    return loaded


__all__ = [
    "LISTING", "MissingFilesError", "Needed", "TSV_COLUMNS", "declare_retriever_needs", "format_table", "format_tsv",
    "missing", "prepare_run", "retriever_needs", "run_listing", "size_text", "total_text",
]

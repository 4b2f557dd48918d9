"""Loading a spec'd suite: fetch and read its question files; attach its corpus lazily."""

from __future__ import annotations

from pathlib import Path

from harness.data.corpora import LazyCorpus
from harness.errors import HarnessError, warn
from harness.data.download import FetchResult, RemoteFile, data_dir, fetch, is_offline
from harness.data.needs import LISTING, MissingFilesError, Needed, missing
from harness.data.questions import read_questions
from harness.data.catalog import CorpusDatasetSpec, FileSpec
from harness.api import Corpus, Part, Suite

from harness_builtins.datasets.catalog import catalog


def fetch_file(file: FileSpec, *, progress: bool = True) -> FetchResult:
    """The local copy of a spec'd file, downloaded and verified if not already there."""
    return fetch(remote(file), progress=progress)


def training_file(name: str, *, progress: bool = True) -> Path:
    """The local copy of a training spec's file (``harness train --data NAME``), fetched if need be."""
    return fetch_file(catalog().training[name].file, progress=progress).path


def suite_needs(spec, corpus_spec: CorpusDatasetSpec | None) -> tuple[list[Needed], list[Needed]]:
    """The files of suite ``spec``: its question files, and its corpus's (none without ``corpus_spec``)."""
    several = len(spec.parts) > 1
    questions = [
        Needed(f"suite {spec.name}" + (f", part {part.name}" if several else "") + ": questions", remote(part.file))
        for part in spec.parts
    ]
    corpus = [corpus_needed(corpus_spec)] if corpus_spec is not None else []
    return questions, corpus


def corpus_needed(spec: CorpusDatasetSpec) -> Needed:
    """The source file of corpus ``spec``."""
    passages = f", {spec.passages:,} passages" if spec.passages else ""
    return Needed(f"corpus {spec.name}{passages}", remote(spec.file))


def remote(file: FileSpec) -> RemoteFile:
    return RemoteFile(url=file.url, path=file.path, sha256=file.sha256, size=file.size)


def load_suite(name: str, *, progress: bool = True) -> Suite:
    found = catalog()
    spec = found.suites[name]
    corpus_spec = found.corpora[spec.corpus]
    questions, corpus = suite_needs(spec, corpus_spec)
    if is_offline() and (absent := missing(questions)):
        raise MissingFilesError(absent, also=missing(corpus), listing=f"{LISTING} {name} --corpus")
    parts = []
    several = len(spec.parts) > 1
    for part in spec.parts:
        path = fetch_file(part.file, progress=progress).path
        prefix = f"{part.name}-" if several else ""
        parts.append(Part(name=part.name, questions=read_questions(path, part.file.format, id_prefix=prefix)))
    return Suite(
        name=spec.name,
        parts=tuple(parts),
        corpus=LazyCorpus(corpus_spec.name, lambda: open_corpus(corpus_spec, progress=progress), needs=corpus),
        match=spec.match,  # type: ignore[arg-type]
        default_k=spec.default_k,
        description=spec.description,
    )


def open_corpus(spec: CorpusDatasetSpec, *, progress: bool = True) -> Corpus:
    """Fetch a corpus and open it: SQuAD paragraphs in memory, TSV/JSONL through a corpus store
    built once (in the data folder, keyed by the source file's sha256) and memory-mapped after."""
    fetched = fetch_file(spec.file, progress=progress)
    if spec.file.format == "squad-json":
        from harness_builtins.datasets.squad import squad_paragraph_corpus

        return squad_paragraph_corpus(fetched.path, name=spec.name)
    from harness.data.corpus_store import CorpusStore, build_store

    store_dir = data_dir() / "stores" / f"{spec.name}-{fetched.sha256[:16]}"
    if store_dir.exists():
        try:
            return CorpusStore.open(store_dir)
        except HarnessError as exc:
            warn(f"{str(exc).split('; remove this folder')[0]}; rebuilding it")
    return build_store(
        Path(fetched.path), store_dir, format=spec.file.format, name=spec.name, progress=progress, overwrite=True
    )

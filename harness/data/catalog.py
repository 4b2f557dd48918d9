"""Declarative dataset specs: suites and corpora described in TOML files, and their validation.

The built-in ``datasets`` plugin ships a folder of specs for the standard benchmarks and adds the
folders of ``$HARNESS_SPEC_PATH``; any folder with ``suites/`` and ``corpora/`` works.

A **suite spec** (``suites/NAME.toml`` in a spec folder) names where a suite's questions come from and
how to score it::

    name = "nq"
    description = "Natural Questions test set with DPR's answers"
    match = "string"                       # or "regex" (CuratedTREC): never a user flag
    default_k = [1, 5, 20, 100]
    corpus = "wikipedia-dpr-100w"          # a corpus spec's name
    license = "..."
    citation = "..."
    homepage = "..."

    [[parts]]                              # one or more; several parts are macro-averaged
    name = "test"
    url = "https://raw.githubusercontent.com/<repo>/<pinned commit>/<path>"
    path = "anserini-tools/topics.dpr.nq.test.txt"   # where it lives under the data directory
    sha256 = "480cfe1d..."                 # required for pinned URLs (commit in the URL)
    size = 296949                          # bytes
    format = "dpr-tsv"                     # a reader of harness.data.questions

A **training spec** (``training/NAME.toml``) names a training set for ``harness train --data
NAME``: ``name``, ``description``, ``url``, ``path``, ``sha256`` (optional), ``size``, ``format``
(``dpr-json``: DPR's ``biencoder-*.json``; ``jsonl``: one such record a line), ``compression``,
``examples`` (the expected number of questions, informative), ``license``, ``citation``.

A **corpus spec** (``corpora/NAME.toml``) has ``name``, ``description``, ``url``,
``path``, ``sha256`` (optional: DPR publishes none), ``size``, ``format`` (``dpr-tsv``, ``jsonl``
or ``squad-json``), ``compression`` (``"gzip"`` or absent), ``passages`` (expected count),
``license`` and ``citation``.

``license``, ``citation`` and ``homepage`` are optional (a spec of one's own data needs none); the
built-in specs give the first two, which a test checks. A spec file with several problems reports
them all in one line (:mod:`harness.data.specs`).

Users add spec folders with ``HARNESS_SPEC_PATH`` (``os.pathsep``-separated; see
:func:`user_spec_dirs`), each holding ``suites/``, ``corpora/`` and ``training/`` like the built-in one.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from harness.data.specs import Problems, SpecRecord, decode
from harness.errors import InputFileError
from harness.data.questions import FORMATS as QUESTION_FORMATS
from harness.api import MATCH_MODES

SPEC_PATH_ENV = "HARNESS_SPEC_PATH"
CORPUS_FORMATS = ("dpr-tsv", "jsonl", "squad-json")
TRAINING_FORMATS = ("dpr-json", "jsonl")
PART_FORMATS = tuple(dict.fromkeys((*QUESTION_FORMATS, "squad-json")))
COMPRESSIONS = ("gzip",)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: A URL pinned to an immutable revision: a 40-hex commit in the path.
_PINNED = re.compile(r"/[0-9a-f]{40}/")


@dataclass(frozen=True, kw_only=True)
class FileSpec:
    """A file to download: its URL, where it goes under the data directory, and its checksum."""

    url: str
    path: str
    sha256: str | None = None
    size: int | None = None
    format: str
    compression: str | None = None

    @property
    def pinned(self) -> bool:
        """Whether the URL names an immutable revision (then a checksum is required)."""
        return bool(_PINNED.search(self.url))


@dataclass(frozen=True, kw_only=True)
class PartSpec:
    name: str
    file: FileSpec


@dataclass(frozen=True, kw_only=True)
class SuiteDatasetSpec:
    name: str
    description: str
    match: str
    default_k: tuple[int, ...]
    corpus: str
    parts: tuple[PartSpec, ...]
    license: str = ""
    citation: str = ""
    homepage: str = ""
    source: Path
    #: The suite's own training split(s), by training set or suite name (None: not stated).
    train: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class CorpusDatasetSpec:
    name: str
    description: str
    file: FileSpec
    passages: int | None
    license: str = ""
    citation: str = ""
    homepage: str = ""
    source: Path


@dataclass(frozen=True, kw_only=True)
class TrainingDatasetSpec:
    name: str
    description: str
    file: FileSpec
    examples: int | None
    license: str = ""
    citation: str = ""
    homepage: str = ""
    source: Path


def user_spec_dirs() -> list[Path]:
    """The folders of ``$HARNESS_SPEC_PATH``, in order."""
    return [Path(p) for p in os.environ.get(SPEC_PATH_ENV, "").split(os.pathsep) if p]


class _Location(SpecRecord, kw_only=True):
    """Where a download comes from and goes (:func:`check_location`)."""

    url: str
    path: str
    sha256: str | None = None
    size: int | None = None


class _FileRecord(_Location, kw_only=True):
    format: str
    compression: str | None = None


class _PartRecord(_FileRecord, kw_only=True):
    name: str


class _Described(SpecRecord, kw_only=True):
    """What every spec has: its name, description and provenance (``license``, ``citation``,
    ``homepage``: optional here, required of the built-in specs by their test)."""

    name: str
    description: str
    license: str = ""
    citation: str = ""
    homepage: str = ""


class _SuiteRecord(_Described, kw_only=True):
    MESSAGES = {"default_k": "must be a non-empty list of positive integers"}

    match: str
    default_k: list[int] = msgspec.field(default_factory=lambda: [1, 5, 20, 100])
    corpus: str
    parts: list[_PartRecord]
    train: list[str] | None = None


class _DescribedFile(_FileRecord, kw_only=True):
    """A spec of one download (a corpus, a training set): what :class:`_Described` has, and the file."""

    name: str
    description: str
    license: str = ""
    citation: str = ""
    homepage: str = ""


class _CorpusRecord(_DescribedFile, kw_only=True):
    passages: int | None = None


class _TrainingRecord(_DescribedFile, kw_only=True):
    examples: int | None = None


_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def check_choice(value: str | None, choices: Iterable[str], key: str, problems: Problems, *, prefix: str = "") -> None:
    """``value`` (when given) is one of ``choices``."""
    choices = tuple(choices)
    if value is not None and value not in choices:
        problems.add(f"{prefix}{key!r} must be one of {', '.join(choices)}, got {value!r}")


def check_described(record: Any, problems: Problems) -> None:
    """The spec's ``name`` (when it decoded) is lowercase letters, digits, '.', '_' or '-'."""
    if record.name is not None and not _NAME.match(record.name):
        problems.add(f"'name' must be lowercase letters, digits, '.', '_' or '-', got {record.name!r}")


def check_location(record: Any, problems: Problems, *, prefix: str = "") -> None:
    """A download's ``url`` (http(s) or file), ``path`` (relative, inside the data directory),
    ``sha256`` and ``size`` (both optional), each checked (those that decoded)."""
    if record.url is not None and not re.match(r"^(https?|file)://", record.url):
        problems.add(f"{prefix}'url' must be an http(s):// or file:// URL, got {record.url!r}")
    path = record.path
    segments = path.split("/") if path is not None else []
    if path is None:
        pass
    elif not path or path.startswith("/") or "\\" in path or "\x00" in path or any(s in ("", ".", "..") for s in segments):
        problems.add(
            f"{prefix}'path' must be a relative path inside the data directory with no empty, '.' or "
            f"'..' segments (forward slashes), got {path!r}"
        )
    if record.sha256 is not None and not _SHA256.match(record.sha256):
        problems.add(f"{prefix}'sha256' must be 64 lowercase hex digits")
    if record.size is not None and record.size <= 0:
        problems.add(f"{prefix}'size' must be positive")


def _file(record: _FileRecord, formats: Iterable[str], problems: Problems, *, prefix: str = "") -> FileSpec:
    check_location(record, problems, prefix=prefix)
    check_choice(record.format, formats, "format", problems, prefix=prefix)
    check_choice(record.compression, COMPRESSIONS, "compression", problems, prefix=prefix)
    spec = FileSpec(url=record.url, path=record.path, sha256=record.sha256, size=record.size, format=record.format,
                    compression=record.compression)
    if record.url is not None and spec.pinned and spec.sha256 is None:
        problems.add(f"{prefix}'sha256' is required: the URL is pinned to a commit")
    return spec


def described(record: Any, source: Path) -> dict[str, Any]:
    """The keys every spec has, for the spec's record."""
    return {"name": record.name, "description": record.description, "license": record.license,
            "citation": record.citation, "homepage": record.homepage, "source": source}


def load_toml(path: Path) -> dict[str, Any]:
    """The table of TOML file ``path``; unreadable bytes and invalid TOML are one-line errors."""
    from harness.util.jsonio import read_text

    text = read_text(path, what="spec", prefix="")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(path, f"invalid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise InputFileError(path, "TOML nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise InputFileError(path, f"invalid TOML: {' '.join(str(exc).split()).split(';')[0]}") from None


_load_toml = load_toml


def read_suite_spec(path: str | Path) -> SuiteDatasetSpec:
    """The suite spec of TOML file ``path``; every problem of the file is in one
    :class:`InputFileError` naming it."""
    path = Path(path)
    problems = Problems(path)
    record = decode(load_toml(path), _SuiteRecord, problems)
    if record is None:
        problems.raise_any()
    check_described(record, problems)
    check_choice(record.match, MATCH_MODES, "match", problems)
    if record.default_k is not None and (not record.default_k or not all(k >= 1 for k in record.default_k)):
        problems.add("'default_k' must be a non-empty list of positive integers")
    if record.parts is not None and not record.parts:
        problems.add("'parts' must list at least one part")
    for index, name in enumerate(record.train or ()):
        if name is not None and not _NAME.match(name):
            problems.add(f"'train'[{index}] must name a training set (lowercase letters, digits, '.', '_' or '-'), got {name!r}")
    parts = []
    for index, part in enumerate(record.parts or ()):
        if part is not None:
            file = _file(part, PART_FORMATS, problems, prefix=f"parts[{index}].")
            parts.append(PartSpec(name=part.name, file=file))
    names = [p.name for p in parts]
    if not problems and len(set(names)) != len(names):
        problems.add("part names must be unique")
    problems.raise_any()
    return SuiteDatasetSpec(
        **described(record, path),
        match=record.match,
        default_k=tuple(sorted(set(record.default_k))),
        corpus=record.corpus,
        parts=tuple(parts),
        train=None if record.train is None else tuple(record.train),
    )


def read_corpus_spec(path: str | Path) -> CorpusDatasetSpec:
    """The corpus spec of TOML file ``path`` (every problem at once, as :func:`read_suite_spec`)."""
    path = Path(path)
    problems = Problems(path)
    record = decode(load_toml(path), _CorpusRecord, problems)
    if record is None:
        problems.raise_any()
    check_described(record, problems)
    file = _file(record, CORPUS_FORMATS, problems)
    problems.raise_any()
    return CorpusDatasetSpec(**described(record, path), file=file, passages=record.passages)


def read_training_spec(path: str | Path) -> TrainingDatasetSpec:
    """The training-set spec of TOML file ``path`` (every problem at once)."""
    path = Path(path)
    problems = Problems(path)
    record = decode(load_toml(path), _TrainingRecord, problems)
    if record is None:
        problems.raise_any()
    check_described(record, problems)
    if record.examples is not None and record.examples <= 0:
        problems.add("'examples' must be positive")
    file = _file(record, TRAINING_FORMATS, problems)
    problems.raise_any()
    return TrainingDatasetSpec(**described(record, path), file=file, examples=record.examples)


@dataclass(frozen=True)
class SpecCatalog:
    suites: dict[str, SuiteDatasetSpec]
    corpora: dict[str, CorpusDatasetSpec]
    training: dict[str, TrainingDatasetSpec] = field(default_factory=dict)


def load_catalog(dirs: Iterable[Path], *, on_error: Callable[[InputFileError], None] | None = None) -> SpecCatalog:
    """Every suite, corpus and training spec of ``dirs``; a malformed file, a duplicate name or a suite naming
    an unknown corpus is an :class:`InputFileError`. With ``on_error`` each such file is handed to
    it and left out instead, so one broken file does not make every other suite unusable."""

    def bad(error: InputFileError) -> None:
        if on_error is None:
            raise error
        on_error(error)

    suites: dict[str, SuiteDatasetSpec] = {}
    corpora: dict[str, CorpusDatasetSpec] = {}
    training: dict[str, TrainingDatasetSpec] = {}
    kinds = (
        ("corpus", "corpora", read_corpus_spec, corpora),
        ("suite", "suites", read_suite_spec, suites),
        ("training set", "training", read_training_spec, training),
    )
    failed_corpora: dict[str, InputFileError] = {}  # a corpus spec left out, by the name(s) it goes by
    for folder in dirs:
        for kind, subfolder, reader, table in kinds:
            for path in sorted((Path(folder) / subfolder).glob("*.toml")):
                try:
                    spec = reader(path)
                    if spec.name in table:
                        raise InputFileError(path, f"{kind} {spec.name!r} is also defined in {table[spec.name].source}")
                except InputFileError as error:
                    if table is corpora:
                        for known in _spec_names(path):
                            failed_corpora.setdefault(known, error)
                    bad(error)
                    continue
                table[spec.name] = spec
    for name, spec in list(suites.items()):
        if spec.corpus not in corpora:
            del suites[name]
            failed = failed_corpora.get(spec.corpus)
            if failed is not None:  # the corpus exists but its spec is at fault: say so where the suite is used
                bad(InputFileError(spec.source, f"'corpus' names corpus {spec.corpus!r}, whose spec is left out: {failed}"))
            else:
                bad(InputFileError(spec.source, f"'corpus' names unknown corpus {spec.corpus!r}"))
    return SpecCatalog(suites=suites, corpora=corpora, training=training)


def _spec_names(path: Path) -> list[str]:
    """The names a spec file that failed to load goes by: its ``name`` when the TOML still gives
    one, and its file name's stem."""
    names = [path.stem]
    try:
        declared = tomllib.loads(path.read_text(encoding="utf-8")).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError, ValueError):
        declared = None
    if isinstance(declared, str) and declared and declared not in names:
        names.insert(0, declared)
    return names

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

from harness.errors import InputFileError
from harness.data.questions import FORMATS as QUESTION_FORMATS
from harness.api import MATCH_MODES

SPEC_PATH_ENV = "HARNESS_SPEC_PATH"
CORPUS_FORMATS = ("dpr-tsv", "jsonl", "squad-json")
TRAINING_FORMATS = ("dpr-json", "jsonl")
PART_FORMATS = (*QUESTION_FORMATS, "squad-json")
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
    license: str
    citation: str
    homepage: str = ""
    source: Path


@dataclass(frozen=True, kw_only=True)
class CorpusDatasetSpec:
    name: str
    description: str
    file: FileSpec
    passages: int | None
    license: str
    citation: str
    homepage: str = ""
    source: Path


@dataclass(frozen=True, kw_only=True)
class TrainingDatasetSpec:
    name: str
    description: str
    file: FileSpec
    examples: int | None
    license: str
    citation: str
    homepage: str = ""
    source: Path


def user_spec_dirs() -> list[Path]:
    """The folders of ``$HARNESS_SPEC_PATH``, in order."""
    return [Path(p) for p in os.environ.get(SPEC_PATH_ENV, "").split(os.pathsep) if p]


class _Fields:
    """Typed access to a spec table with one-line errors naming the file and the key."""

    def __init__(self, data: dict[str, Any], source: Path, prefix: str = ""):
        self.data, self.source, self.prefix = data, source, prefix

    def fail(self, problem: str) -> None:
        raise InputFileError(self.source, problem)

    def get(self, key: str, kind: type | tuple[type, ...], *, required: bool = True, default: Any = None) -> Any:
        if key not in self.data:
            if required:
                self.fail(f"missing key {self.prefix}{key!r}")
            return default
        value = self.data[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(f"{self.prefix}{key!r} must be {names}, got {type(value).__name__}")
        return value

    def choice(self, key: str, choices: Iterable[str], *, required: bool = True) -> str | None:
        value = self.get(key, str, required=required)
        if value is not None and value not in choices:
            self.fail(f"{self.prefix}{key!r} must be one of {', '.join(choices)}, got {value!r}")
        return value

    def unknown(self, allowed: Iterable[str]) -> None:
        extra = sorted(set(self.data) - set(allowed))
        if extra:
            self.fail(f"unknown key {self.prefix}{extra[0]!r}")


_FILE_KEYS = ("url", "path", "sha256", "size", "format", "compression")


def _file(fields: _Fields, formats: Iterable[str]) -> FileSpec:
    url, path, sha256, size = _location(fields)
    spec = FileSpec(
        url=url,
        path=path,
        sha256=sha256,
        size=size,
        format=fields.choice("format", tuple(formats)),
        compression=fields.choice("compression", COMPRESSIONS, required=False),
    )
    if spec.pinned and spec.sha256 is None:
        fields.fail(f"{fields.prefix}'sha256' is required: the URL is pinned to a commit")
    return spec


def _location(fields: _Fields) -> tuple[str, str, str | None, int | None]:
    """A download's ``url`` (http(s) or file), ``path`` (relative, inside the data directory),
    ``sha256`` and ``size`` (both optional), each checked."""
    url = fields.get("url", str)
    if not re.match(r"^(https?|file)://", url):
        fields.fail(f"{fields.prefix}'url' must be an http(s):// or file:// URL, got {url!r}")
    path = fields.get("path", str)
    segments = path.split("/")
    if not path or path.startswith("/") or "\\" in path or "\x00" in path or any(s in ("", ".", "..") for s in segments):
        fields.fail(
            f"{fields.prefix}'path' must be a relative path inside the data directory with no empty, '.' or "
            f"'..' segments (forward slashes), got {path!r}"
        )
    sha256 = fields.get("sha256", str, required=False)
    if sha256 is not None and not _SHA256.match(sha256):
        fields.fail(f"{fields.prefix}'sha256' must be 64 lowercase hex digits")
    size = fields.get("size", int, required=False)
    if size is not None and size <= 0:
        fields.fail(f"{fields.prefix}'size' must be positive")
    return url, path, sha256, size


def _common(fields: _Fields) -> dict[str, Any]:
    name = fields.get("name", str)
    if not re.match(r"^[a-z0-9][a-z0-9._-]*$", name):
        fields.fail(f"'name' must be lowercase letters, digits, '.', '_' or '-', got {name!r}")
    return {
        "name": name,
        "description": fields.get("description", str),
        "license": fields.get("license", str),
        "citation": fields.get("citation", str),
        "homepage": fields.get("homepage", str, required=False, default=""),
        "source": fields.source,
    }


def _load_toml(path: Path) -> dict[str, Any]:
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


def read_suite_spec(path: str | Path) -> SuiteDatasetSpec:
    path = Path(path)
    fields = _Fields(_load_toml(path), path)
    fields.unknown(("name", "description", "match", "default_k", "corpus", "parts", "license", "citation", "homepage"))
    common = _common(fields)
    default_k = fields.get("default_k", list, required=False, default=[1, 5, 20, 100])
    if not default_k or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in default_k):
        fields.fail("'default_k' must be a non-empty list of positive integers")
    raw_parts = fields.get("parts", list)
    if not raw_parts:
        fields.fail("'parts' must list at least one part")
    parts = []
    for index, raw in enumerate(raw_parts):
        if not isinstance(raw, dict):
            fields.fail(f"'parts[{index}]' must be a table")
        part = _Fields(raw, path, prefix=f"parts[{index}].")
        part.unknown(("name", *_FILE_KEYS))
        parts.append(PartSpec(name=part.get("name", str), file=_file(part, PART_FORMATS)))
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        fields.fail("part names must be unique")
    return SuiteDatasetSpec(
        **common,
        match=fields.choice("match", MATCH_MODES),
        default_k=tuple(sorted(set(default_k))),
        corpus=fields.get("corpus", str),
        parts=tuple(parts),
    )


def read_corpus_spec(path: str | Path) -> CorpusDatasetSpec:
    path = Path(path)
    fields = _Fields(_load_toml(path), path)
    fields.unknown(("name", "description", "passages", "license", "citation", "homepage", *_FILE_KEYS))
    common = _common(fields)
    passages = fields.get("passages", int, required=False)
    return CorpusDatasetSpec(**common, file=_file(fields, CORPUS_FORMATS), passages=passages)


def read_training_spec(path: str | Path) -> TrainingDatasetSpec:
    path = Path(path)
    fields = _Fields(_load_toml(path), path)
    fields.unknown(("name", "description", "examples", "license", "citation", "homepage", *_FILE_KEYS))
    common = _common(fields)
    examples = fields.get("examples", int, required=False)
    if examples is not None and examples <= 0:
        fields.fail("'examples' must be positive")
    return TrainingDatasetSpec(**common, file=_file(fields, TRAINING_FORMATS), examples=examples)


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

"""Where a model comes from: a hub id (with an optional revision) or a local directory, and how it
is identified in results and caches. Shared by every plugin that loads models by name."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from harness.errors import HarnessError

#: Files of a model directory that determine its vectors (weights, configs, vocabularies).
_MODEL_FILE_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin", ".pt", ".pth")
#: Training leftovers that may sit in a checkpoint directory but do not change the model.
_IGNORED_PREFIXES = ("optimizer", "scheduler", "trainer_state", "training_args", "rng_state", "readme", ".")
_digest_cache: dict[tuple[str, tuple], str] = {}


#: JSON keys whose boolean says how a model's files were loaded when it was saved (the tokenizer's
#: ``local_files_only``, set by ``HF_HUB_OFFLINE``, and ``is_local``), read as a local offline load
#: writes them.
_LOADED_FLAGS = re.compile(rb'("(?:local_files_only|is_local)"\s*:\s*)false\b')
#: JSON keys whose text names where a model's files were loaded from (older libraries write them),
#: read as empty.
_LOADED_FROM = re.compile(rb'("(?:_name_or_path|name_or_path|tokenizer_file|_commit_hash)"\s*:\s*)"(?:[^"\\]|\\.)*"')


def canonical_json(data: bytes) -> bytes:
    """A model directory's JSON file as a local, offline load writes it: how and where the files
    were loaded when the model was saved is left out of its digest (a file holding no such value
    is unchanged)."""
    return _LOADED_FROM.sub(rb'\1""', _LOADED_FLAGS.sub(rb"\1true", data))


def directory_digest(path: str | os.PathLike) -> str:
    """sha256 over a model directory's relevant files (relative path, size, content), recursively.

    Weights, configs and tokenizer files count; READMEs, hidden files and optimizer or trainer
    state do not, so a copy of a directory, or one with a regenerated model card, has the same
    digest. JSON files count as :func:`canonical_json` reads them, so the same weights saved
    online or offline, or loaded from another folder, have one digest (the libraries' version
    stamps count). Cached per process by the files' sizes and mtimes.
    """
    root = Path(path).expanduser().resolve()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix.lower() in _MODEL_FILE_SUFFIXES
        and not any(part.lower().startswith(_IGNORED_PREFIXES) for part in p.relative_to(root).parts)
    )
    if not files:
        raise HarnessError(f"{root}: no model files (config, weights, vocabulary) in this directory")
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root), stamp)
    if key not in _digest_cache:
        digest = hashlib.sha256()
        for p in files:
            rel = p.relative_to(root).as_posix().encode()
            if p.suffix.lower() == ".json":
                data = canonical_json(p.read_bytes())
                digest.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
                continue
            digest.update(len(rel).to_bytes(8, "little") + rel + p.stat().st_size.to_bytes(8, "little"))
            with open(p, "rb") as f:
                while block := f.read(1 << 22):
                    digest.update(block)
        _digest_cache[key] = "sha256:" + digest.hexdigest()
    return _digest_cache[key]


class ModelRef:
    """Where a model comes from: a hub id (with an optional revision) or a local directory.

    ``label`` names the model in recorded parameters instead of its directory (e.g. the packaged
    MiniLM); local directories are identified by :func:`directory_digest`, never by their path.
    """

    def __init__(self, name_or_path: str | os.PathLike, revision: str | None = None, label: str | None = None):
        if not str(name_or_path).strip():
            raise HarnessError("a model name or directory is required")
        self.name_or_path = str(name_or_path)
        self.revision = revision
        self.label = label

    @property
    def local(self) -> bool:
        return Path(self.name_or_path).expanduser().is_dir()

    @property
    def path(self) -> str:
        """What ``from_pretrained`` receives."""
        return str(Path(self.name_or_path).expanduser()) if self.local else self.name_or_path

    def identity(self) -> str:
        if self.local:
            return f"dir:{directory_digest(self.name_or_path)}"
        return f"hub:{self.name_or_path}@{self.revision or 'main'}"

    def describe(self) -> str:
        """The model as recorded in results: hub id (and revision), or name and content digest."""
        if self.local:
            name = self.label or Path(self.name_or_path).expanduser().resolve().name
            return f"{name} ({directory_digest(self.name_or_path)[:19]})"
        name = self.label or self.name_or_path
        return f"{name}@{self.revision}" if self.revision else name

    def __repr__(self) -> str:
        return f"ModelRef({self.name_or_path!r}, revision={self.revision!r})"

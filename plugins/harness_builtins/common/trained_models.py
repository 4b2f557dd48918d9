"""What identifies a trained model folder, and whether it may be loaded: shared by ``harness train``
(the record it writes, the checkpoints it resumes), the ``trained`` retriever and the
``late-interaction`` re-ranker.

- :func:`model_digest`: a content digest of a model folder that depends on what the model
  computes (weights, configuration, vocabulary), not on how its files were loaded when it was
  saved. Saving a model records such things in its JSON files: the tokenizer's
  ``local_files_only`` (set by ``HF_HUB_OFFLINE``) and ``is_local``, and with older libraries the
  path or hub name it was loaded from (``_name_or_path``, ``name_or_path``, ``tokenizer_file``,
  ``_commit_hash``). The digest reads those as a local, offline load writes them (``true``, and no
  path), so the same weights trained online or offline, or from a copy in another folder, give one
  digest. Otherwise it is :func:`harness.util.models.directory_digest`'s: the same files (weights,
  configs, vocabularies; no READMEs, hidden files or optimizer state), each as relative path,
  size and bytes, so a folder holding no such values has the same digest under both. The
  libraries' version stamps (``transformers_version``, ``__version__``) count: weights written
  by other versions are other files.
- :func:`describe_model`: an initial model as results record it: a hub id or a packaged model's
  short name as given, a local folder as its name and digest (never the path it was at).
- :func:`foreign_module`: a sentence-transformers folder whose ``modules.json`` or
  ``router_config.json`` names a class outside sentence-transformers (loading it would import
  that code), found before anything is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any

#: Files of a model folder that determine its vectors (as :func:`harness.util.models.directory_digest`).
_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin", ".pt", ".pth")
#: Training leftovers and documents that may sit in a model folder but do not change the model.
_IGNORED = ("optimizer", "scheduler", "trainer_state", "training_args", "rng_state", "readme", ".")
#: JSON keys whose boolean says how the files were loaded, read as a local offline load writes them.
_LOADED_FLAGS = re.compile(rb'("(?:local_files_only|is_local)"\s*:\s*)false\b')
#: JSON keys whose text names where the files were loaded from, read as empty.
_LOADED_FROM = re.compile(rb'("(?:_name_or_path|name_or_path|tokenizer_file|_commit_hash)"\s*:\s*)"(?:[^"\\]|\\.)*"')

_cache: dict[tuple[str, tuple], str] = {}


def _files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in _SUFFIXES
        and not any(part.lower().startswith(_IGNORED) for part in p.relative_to(root).parts)
    )


def canonical_json(data: bytes) -> bytes:
    """A model folder's JSON file as a local, offline load writes it (see the module notes)."""
    return _LOADED_FROM.sub(rb'\1""', _LOADED_FLAGS.sub(rb"\1true", data))


def model_digest(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` of a model folder's contents (see the module notes); cached per process by
    the files' sizes and modification times."""
    from harness.errors import HarnessError

    root = Path(path).expanduser().resolve()
    files = _files(root) if root.is_dir() else []
    if not files:
        raise HarnessError(f"{root}: no model files (config, weights, vocabulary) in this directory")
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root), stamp)
    if key not in _cache:
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
        _cache[key] = "sha256:" + digest.hexdigest()
    return _cache[key]


def short(digest: str) -> str:
    """A digest as results show it: ``sha256:`` and its first 12 hex digits."""
    return digest[:19]


def describe_model(name: str, digest: str | None = None) -> str:
    """An initial model as a result records it: ``NAME (sha256:...)`` for a local folder (its own
    name and :func:`model_digest`: ``digest`` when given, else computed when the folder is there),
    else ``name`` as given (a hub id, a packaged model's short name, or a folder that is gone)."""
    if digest is None and Path(name).expanduser().is_dir():
        try:
            digest = model_digest(name)
        except Exception:  # noqa: BLE001 - a folder without model files is shown by its name
            digest = None
    if not digest:
        return name
    folder = PurePath(str(name).replace("\\", "/").rstrip("/")).name or str(name)
    return f"{folder} ({short(digest)})"


def data_name(name: str) -> str:
    """A training data entry as a result records it: a training set's or suite's name as given, a
    file by its own name (never the folder it was in)."""
    return PurePath(str(name).replace("\\", "/").rstrip("/")).name or str(name)


#: Where the classes a sentence-transformers folder names may come from (loading one imports it).
MODULE_PREFIXES = ("sentence_transformers.",)


def named_types(value: Any) -> Iterator[str]:
    """Every ``"type"`` text in a ``modules.json`` / ``router_config.json`` value, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "type" and isinstance(item, str):
                yield item
            else:
                yield from named_types(item)
    elif isinstance(value, list):
        for item in value:
            yield from named_types(item)


def foreign_module(model_dir: str | os.PathLike) -> str | None:
    """The problem with a sentence-transformers folder whose ``modules.json`` or
    ``router_config.json`` (at any depth) names a class outside sentence-transformers, or cannot
    be read; None when every class it names is sentence-transformers' own."""
    root = Path(model_dir)
    for file in sorted(p for name in ("modules.json", "router_config.json") for p in root.rglob(name) if p.is_file()):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            return f"{file}: cannot read it ({' '.join(str(exc).split())[:120] or type(exc).__name__})"
        found = next((t for t in named_types(data) if not t.startswith(MODULE_PREFIXES)), None)
        if found is not None:
            return f"{file} names the class {found!r}, which is not sentence-transformers' (loading it would import that code)"
    return None

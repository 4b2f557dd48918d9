"""What identifies a trained model folder, and whether it may be loaded: shared by ``harness train``
(the record it writes, the checkpoints it resumes), the ``trained`` retriever and the
``late-interaction`` re-ranker.

- :func:`model_digest`: a content digest of a model folder that depends on what the model
  computes (weights, configuration, vocabulary), not on how or where its files were loaded when
  it was saved (:func:`harness.util.models.directory_digest`, whose JSON files are read as a
  local, offline load writes them: the tokenizer's ``local_files_only``, set by
  ``HF_HUB_OFFLINE``, and ``is_local`` as ``true``, and with older libraries no path or hub name
  in ``_name_or_path``, ``name_or_path``, ``tokenizer_file`` or ``_commit_hash``). The same
  weights trained online or offline, or from a copy in another folder, give one digest; the
  libraries' version stamps (``transformers_version``, ``__version__``) count.
- :func:`describe_model`: an initial model as results record it: a hub id or a packaged model's
  short name as given, a local folder as its name and digest (never the path it was at).
- :func:`foreign_module`: a sentence-transformers folder whose ``modules.json`` or
  ``router_config.json`` names a class outside sentence-transformers (loading it would import
  that code), found before anything is loaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any


def model_digest(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` of a model folder's contents (see the module notes)."""
    from harness.util.models import directory_digest

    return directory_digest(path)


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
    """Every class a ``modules.json`` / ``router_config.json`` value names, at any depth: each
    ``"type"`` text, and each text of a ``"types"`` object (a Router's modules by name)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "type" and isinstance(item, str):
                yield item
            elif key == "types" and isinstance(item, dict):
                yield from (v for v in item.values() if isinstance(v, str))
                yield from named_types([v for v in item.values() if not isinstance(v, str)])
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

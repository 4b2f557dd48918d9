"""Where a re-ranker's model comes from (a hub id with an optional revision, or a directory), how
it is identified in results and caches, and the device, precision and option checks they share."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

#: Files of a model directory that determine its outputs (weights, configs, vocabularies).
_MODEL_FILE_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin", ".pt", ".pth")
#: Training leftovers that may sit in a checkpoint directory but do not change the model.
_IGNORED_PREFIXES = ("optimizer", "scheduler", "trainer_state", "training_args", "rng_state", "readme", ".")
_digest_cache: dict[tuple[str, tuple], str] = {}

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


def directory_digest(path: str | os.PathLike) -> str:
    """``sha256:<hex>`` over a model directory's relevant files (relative path, size, content),
    recursively; READMEs, hidden files and trainer state do not count. Cached per process by the
    files' sizes and modification times."""
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
            digest.update(len(rel).to_bytes(8, "little") + rel + p.stat().st_size.to_bytes(8, "little"))
            with open(p, "rb") as f:
                while block := f.read(1 << 22):
                    digest.update(block)
        _digest_cache[key] = "sha256:" + digest.hexdigest()
    return _digest_cache[key]


class ModelRef:
    """A hub id (with an optional revision) or a local directory; a directory is identified by its
    content (:func:`directory_digest`), never by its path."""

    def __init__(self, name_or_path: Any, revision: str | None = None):
        if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path).strip():
            raise HarnessError("a model name or directory is required (-R model=HUB_ID_OR_DIR)")
        self.name_or_path = str(name_or_path)
        self.revision = revision

    @property
    def local(self) -> bool:
        return Path(self.name_or_path).expanduser().is_dir()

    @property
    def path(self) -> str:
        """What ``from_pretrained`` receives."""
        return str(Path(self.name_or_path).expanduser()) if self.local else self.name_or_path

    def identity(self) -> str:
        """What caches are keyed by: the directory's content digest, or hub id and revision."""
        if self.local:
            return f"dir:{directory_digest(self.name_or_path)}"
        return f"hub:{self.name_or_path}@{self.revision or 'main'}"

    def describe(self) -> str:
        """The model as recorded in results: hub id (and revision), or name and content digest."""
        if self.local:
            name = Path(self.name_or_path).expanduser().resolve().name
            return f"{name} ({directory_digest(self.name_or_path)[:19]})"
        return f"{self.name_or_path}@{self.revision}" if self.revision else self.name_or_path


def resolve_device(device: Any) -> str:
    """``auto`` is ``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    device = str(device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise HarnessError(f"device {device!r} was asked for but torch sees no GPU")
    return device


def resolve_precision(precision: Any, device: str) -> str:
    """``auto``: bf16 on a GPU that supports it (T5 overflows in fp16), else fp32."""
    import torch

    precision = precision or "auto"
    if precision not in PRECISIONS:
        raise HarnessError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    on_gpu = device.startswith("cuda")
    if precision == "auto":
        return "bf16" if on_gpu and torch.cuda.is_bf16_supported() else "fp32"
    if precision == "fp16" and not on_gpu:
        raise HarnessError("precision fp16 needs a GPU device; use fp32 or bf16 on CPU")
    return precision


def torch_dtype(precision: str):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def positive_int(name: str, value: Any, default: int) -> int:
    """``value`` (``None``: ``default``) as a positive integer; else a one-line error."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HarnessError(f"{name} must be a positive integer, got {value!r}")
    return value


def default_batch_size(value: Any, device: str) -> int:
    return positive_int("batch_size", value, 32 if device.startswith("cuda") else 16)

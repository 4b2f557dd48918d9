"""The device, precision and option checks the re-rankers share; where their models come from is
the core's :class:`harness.util.models.ModelRef` (re-exported here with :func:`directory_digest`)."""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError
from harness.util.models import ModelRef, directory_digest

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


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


__all__ = ["ModelRef", "directory_digest", "PRECISIONS", "resolve_device", "resolve_precision", "torch_dtype", "positive_int", "default_batch_size"]

"""The ``device`` and ``precision`` options of every built-in model user (re-rankers, dense
encoders, the ART teacher, the question generator): one resolution, one set of messages.

``device``: ``auto`` (``cuda`` when torch sees a GPU, else ``cpu``), ``cpu``, ``cuda``,
``cuda:N``, or another single device torch knows; a GPU torch does not see is a one-line error.
:func:`resolve_devices` also takes lists (one model replica per entry).

``precision``: ``auto``, ``fp32``, ``bf16`` or ``fp16`` (``fp16`` only on a GPU). What ``auto``
means on a GPU is the caller's (``gpu_auto``): sequence-to-sequence models take bf16 where the GPU
supports it, else fp32 (T5 overflows in fp16); the dense encoders take fp16 autocast. On a CPU
``auto`` is always fp32.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError


PRECISIONS = ("auto", "fp32", "bf16", "fp16")

#: What a ``device`` option names: one device, or ``auto`` / ``cuda`` (decided at run time).
DEVICE_HELP = "auto, cpu, cuda or cuda:N"


def _checked_device(device: str, option: str = "device") -> str:
    """``device`` when torch can use it (a known device type, a GPU index that exists); else a
    one-line error naming ``option``."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise HarnessError(f"{option} must be {DEVICE_HELP}, got {device!r}") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise HarnessError(f"{option}: {device!r} was asked for but torch sees no GPU")
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            seen = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise HarnessError(f"{option}: {device!r} was asked for but torch sees {count} GPU{'s' if count != 1 else ''} ({seen})")
    return device


def resolve_device(device: Any, option: str = "device") -> str:
    """``auto`` (or ``None``, empty) is ``cuda`` when torch sees a GPU, else ``cpu``; anything else
    must name a device torch can use (a ``torch.device`` is taken as its name), else a one-line
    error naming ``option``."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise HarnessError(f"{option} must be {DEVICE_HELP}, got {device!r}")
    return _checked_device(device, option)


def resolve_devices(device: Any, option: str = "device") -> list[str]:
    """The devices a model is replicated on, one replica per entry.

    ``auto``: every GPU torch sees (``cuda:0`` .. ``cuda:N-1``), else ``["cpu"]``; ``cuda``: every
    GPU torch sees; ``cpu``, ``cuda:N`` (or another single device torch knows): that device alone;
    a comma-separated text or a list of single devices (``cuda:0,cuda:2``): those, in that order
    (a device named twice holds two replicas). Devices of different kinds cannot be mixed. Anything
    else is a one-line error naming ``option``.
    """
    import torch

    if device in (None, "", "auto"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        return [f"cuda:{i}" for i in range(count)] if count else ["cpu"]
    if isinstance(device, str):
        entries = [part.strip() for part in device.split(",")]
    elif isinstance(device, (list, tuple)) and device and all(isinstance(part, str) for part in device):
        entries = [part.strip() for part in device]
    else:
        raise HarnessError(f"{option} must be {DEVICE_HELP}, or a list of devices, got {device!r}")
    if len(entries) == 1 and entries[0] == "cuda":
        _checked_device("cuda", option)
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    for entry in entries:
        if entry in ("", "auto", "cuda"):
            raise HarnessError(f"{option}: a list must name single devices (cpu, cuda:N), got {device!r}")
        _checked_device(entry, option)
    kinds = sorted({torch.device(entry).type for entry in entries})
    if len(kinds) > 1:
        raise HarnessError(f"{option}: cannot mix devices of kinds {' and '.join(kinds)} ({device!r})")
    return entries


def device_kind(device: str) -> str:
    """``cuda`` for ``cuda:1``, ``cpu`` for ``cpu``."""
    return device.split(":", 1)[0]


def resolve_precision(precision: Any, device: str, *, gpu_auto: str = "bf16") -> str:
    """The precision a model runs in on ``device`` (a resolved device name).

    ``auto`` (or ``None``, empty): fp32 on a CPU; on a GPU ``gpu_auto``, where ``bf16`` falls back
    to fp32 on a GPU without bf16 support (sequence-to-sequence models: T5 overflows in fp16) and
    ``fp16`` is fp16 (the dense encoders' autocast). ``fp16`` on a CPU and unknown names are
    one-line errors.
    """
    if gpu_auto not in PRECISIONS[1:]:
        raise ValueError(f"gpu_auto must be one of {', '.join(PRECISIONS[1:])}, got {gpu_auto!r}")
    precision = precision or "auto"
    if precision not in PRECISIONS:
        raise HarnessError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    on_gpu = device.startswith("cuda")
    if precision == "auto":
        if not on_gpu:
            return "fp32"
        if gpu_auto == "bf16":
            import torch

            return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        return gpu_auto
    if precision == "fp16" and not on_gpu:
        raise HarnessError("precision fp16 needs a GPU device; use fp32 or bf16 on CPU")
    return precision


def torch_dtype(precision: str):
    """The torch dtype of a resolved precision."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def default_batch_size(value: Any, device: str) -> int:
    """``value`` as a positive integer; ``None``: 32 on a GPU, 16 on a CPU."""
    from harness.api import positive_int

    if value is None:
        return 32 if device.startswith("cuda") else 16
    return positive_int(1).check(value, "batch_size")


__all__ = [
    "PRECISIONS", "DEVICE_HELP", "resolve_device", "resolve_devices", "device_kind", "resolve_precision",
    "torch_dtype", "default_batch_size",
]

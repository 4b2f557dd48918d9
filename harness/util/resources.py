"""What a run cost, measured: peak host and GPU memory over a span of work, and the bytes a folder
holds.

Host memory is the process's resident set: on Linux the peak (``VmHWM``) is reset when the span
starts (``/proc/self/clear_refs`` with ``5``) and read when it ends, so the figure is the span's
own even when one process runs several commands; where that cannot be done the peak since the
process started (``getrusage``'s ``ru_maxrss``) is reported, and ``peak_host_scope`` says which
(``"run"`` or ``"process"``). It counts this process only, not child processes.

GPU memory is what torch's caching allocator handed out (``torch.cuda.max_memory_allocated``),
summed over the devices: read only when the run itself loaded torch and initialised CUDA (nothing
is imported for it), so a CPU or BM25 run reports ``None``.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass
from pathlib import Path

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")


def _vm_hwm() -> int | None:
    """The process's peak resident set in bytes (``VmHWM``), or None where /proc has no such line."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_host_peak() -> bool:
    """Reset ``VmHWM`` to the current resident set (Linux 4.0+); False where it cannot be."""
    try:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")
    except OSError:
        return False
    return _vm_hwm() is not None


def _cuda():
    """torch's CUDA module when this process already loaded torch and initialised CUDA, else None."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return None
    except Exception:  # a broken CUDA setup must not lose the run's result
        return None
    return torch.cuda


@dataclass
class Peak:
    """Peak memory of a span: host bytes and their scope (``run``: the span's own; ``process``:
    since the process started), and GPU bytes (None when the span used no GPU)."""

    host_bytes: int | None
    host_scope: str
    gpu_bytes: int | None


class PeakMemory:
    """Measures the peak host and GPU memory of a span of work: ``start()`` when it begins,
    ``stop()`` (a :class:`Peak`) when it ends; or ``with PeakMemory() as span:`` and ``span.result``."""

    def __init__(self) -> None:
        self.result: Peak | None = None
        self._scoped = False

    def start(self) -> PeakMemory:
        self._scoped = _reset_host_peak()
        cuda = _cuda()
        if cuda is not None:
            for device in range(cuda.device_count()):
                cuda.reset_peak_memory_stats(device)
        return self

    def stop(self) -> Peak:
        host = _vm_hwm() if self._scoped else None
        scope = "run"
        if host is None:
            # ru_maxrss is in kilobytes on Linux, bytes on macOS
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            host, scope = (peak if sys.platform == "darwin" else peak * 1024), "process"
        gpu = None
        cuda = _cuda()
        if cuda is not None:
            gpu = int(sum(cuda.max_memory_allocated(device) for device in range(cuda.device_count())))
        self.result = Peak(host_bytes=int(host), host_scope=scope, gpu_bytes=gpu)
        return self.result

    def __enter__(self) -> PeakMemory:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def directory_bytes(path: str | os.PathLike) -> int:
    """The bytes of the regular files under ``path`` (links not followed; 0 for no such folder)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(root, name)):
                total += stat.st_size
    return total

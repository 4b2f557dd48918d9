"""What a result was produced with: package versions and machine facts."""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import harness

#: Distributions whose versions can change numbers or timings; recorded in every result.
KEY_PACKAGES = ("pyserini", "torch", "transformers", "sentence-transformers", "faiss-cpu", "regex", "pluggy", "numpy")


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions(plugins: Iterable[Any]) -> dict[str, object]:
    """harness's version, each plugin's distribution and version, and the key dependencies'.

    ``plugins``: the loaded plugins (:class:`harness.plugins.PluginInfo` records: ``name``,
    ``distribution``, ``version``), given by the caller, so that this module loads none."""
    packages = {name: v for name in KEY_PACKAGES if (v := package_version(name)) is not None}
    return {
        "harness": harness.__version__,
        "python": platform.python_version(),
        "plugins": {p.name: {"distribution": p.distribution, "version": p.version} for p in plugins},
        "packages": packages,
    }


def machine() -> dict[str, object]:
    """The machine a run was timed on (no host name or user name)."""
    info: dict[str, object] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
    }
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        info["memory_bytes"] = None
    info["accelerators"] = accelerators()
    return info


def accelerators() -> list[dict[str, object]]:
    """The CUDA devices torch sees, by name and count (empty when torch was not loaded by the run
    or sees none: nothing is imported for this)."""
    import sys

    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return []
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # a broken driver must not stop a result from being written
        return []
    return [{"name": name, "count": names.count(name)} for name in dict.fromkeys(names)]

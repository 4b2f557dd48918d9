"""Where harness keeps indexes and other reusable artefacts."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "HARNESS_CACHE_DIR"


def cache_dir() -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "harness"

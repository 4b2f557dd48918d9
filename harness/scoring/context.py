"""The :class:`~harness.api.RunContext` a retriever or re-ranker gets for a run on a suite."""

from __future__ import annotations

import os
from pathlib import Path

from harness.api import RunContext, Suite
from harness.util.cache import cache_dir as default_cache_dir


def make_context(
    suite: Suite,
    *,
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    show_progress: bool = True,
) -> RunContext:
    """The :class:`RunContext` of a run on ``suite``: the cache folder (default
    ``$HARNESS_CACHE_DIR``), threads (default: every core) and progress bars."""
    return RunContext(
        cache_dir=Path(cache_dir) if cache_dir is not None else default_cache_dir(),
        threads=threads or max(1, os.cpu_count() or 1),
        progress=show_progress,
        suite=suite.name,
    )


__all__ = ["make_context"]

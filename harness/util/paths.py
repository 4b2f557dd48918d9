"""Default locations of result files and the leaderboard (relative to the working directory)."""

from __future__ import annotations

import os
from pathlib import Path

RESULTS_ENV = "HARNESS_RESULTS_DIR"
LEADERBOARD_FILE = Path("leaderboard") / "README.md"


def default_results_dir() -> Path:
    """``$HARNESS_RESULTS_DIR``, else ``leaderboard/results``."""
    return Path(os.environ.get(RESULTS_ENV) or Path("leaderboard") / "results")

"""Default locations of result files and the leaderboard (relative to the working directory)."""

from __future__ import annotations

import os
from pathlib import Path

RESULTS_ENV = "HARNESS_RESULTS_DIR"
LEADERBOARD_FILE = Path("leaderboard") / "README.md"
#: The committed leaderboard's result files (what ``harness leaderboard`` reads by default). Runs
#: go there only when asked to (``--results-dir leaderboard/results``).
LEADERBOARD_RESULTS = Path("leaderboard") / "results"
#: Where a user's runs go by default when ``$HARNESS_RESULTS_DIR`` is not set.
USER_RESULTS = Path("results")


def default_results_dir() -> Path:
    """The user's results: ``$HARNESS_RESULTS_DIR``, else ``results`` (in the working directory).

    Not the committed leaderboard's results (:data:`LEADERBOARD_RESULTS`): a run changes the
    committed board only when it is told to write there."""
    return Path(os.environ.get(RESULTS_ENV) or USER_RESULTS)

"""Results: the versioned result-file schema, the markdown leaderboard, the terminal table.

- :mod:`harness.results.schema`       ``harness-result/1``: validation, reading, atomic writing
- :mod:`harness.results.checkpoint`   ``harness-training/1``: the training checkpoint's record,
  one writer and one reader
- :mod:`harness.results.leaderboard`  the leaderboard, regenerated from result files
- :mod:`harness.results.report`       one result as a terminal table

The schema's functions are re-exported here: ``from harness.results import write_result``.
"""

from harness.results.schema import (
    SCHEMA,
    Result,
    config_digest,
    read_result,
    read_results,
    result_filename,
    validate,
    write_result,
)

__all__ = [
    "SCHEMA",
    "Result",
    "config_digest",
    "read_result",
    "read_results",
    "result_filename",
    "validate",
    "write_result",
]

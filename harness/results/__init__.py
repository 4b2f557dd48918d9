"""Results: the versioned result-file schema, which results to show, labels, the terminal table.

- :mod:`harness.results.schema`       ``harness-result/1``: validation, reading, atomic writing
- :mod:`harness.results.checkpoint`   ``harness-training/1``: the training checkpoint's record,
  one writer and one reader
- :mod:`harness.results.selection`    the newest result of each configuration, question sets
- :mod:`harness.results.cost`         the ``cost`` block: what a run used
- :mod:`harness.results.labels`       one label per configuration, everywhere
- :mod:`harness.results.report`       one result as a terminal table

The leaderboard built from result files is :mod:`harness.board`, a layer above this package.

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

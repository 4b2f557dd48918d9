"""The metric every run reports, provided by the core itself so that it needs no plugin.

The core registers this module with every plugin manager under the name ``harness`` (see
:func:`harness.plugins.new_plugin_manager`), through the same ``register_metrics`` hook plugins
implement; it cannot be disabled. Other metrics (``mrr``...) come from plugins.
"""

from __future__ import annotations

from harness import hookimpl
from harness.api import MetricSpec
from harness.scoring.ranks import top_k_accuracy

#: The metric ``harness run`` reports when none is named.
DEFAULT_METRIC = "accuracy"


@hookimpl
def register_metrics(register):
    register(
        MetricSpec(
            name=DEFAULT_METRIC,
            description="top-k retrieval accuracy (DPR): share of questions with an answer in the top k",
            compute=top_k_accuracy,
            label="top-{k}",
        )
    )

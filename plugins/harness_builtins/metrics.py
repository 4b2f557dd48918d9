"""Built-in metrics over first-hit ranks besides the core's ``accuracy``."""

from __future__ import annotations

from harness import hookimpl
from harness.api import FirstHitRanks, MetricSpec


def mean_reciprocal_rank(ranks: FirstHitRanks, k: int) -> float:
    """MRR@k of the first answer-bearing passage: mean of ``1 / (rank + 1)`` over questions whose
    first-hit rank is below ``k``, counting 0 for the others."""
    if not ranks:
        return 0.0
    return sum(1.0 / (r + 1) for r in ranks if r is not None and r < k) / len(ranks)


@hookimpl
def register_metrics(register):
    register(
        MetricSpec(
            name="mrr",
            description="mean reciprocal rank of the first answer-bearing passage within the top k",
            compute=mean_reciprocal_rank,
            label="MRR@{k}",
        )
    )

"""Metrics: functions of each question's first-hit rank at a cutoff k, and the
:class:`MetricSpec` plugins register."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: First-hit rank of each question: 0-based position of the first answer-bearing passage, or None.
FirstHitRanks = Sequence[int | None]


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """A metric computed from first-hit ranks at a cutoff k: ``compute(ranks, k) -> float`` in [0, 1]."""

    name: str
    description: str
    compute: Callable[[FirstHitRanks, int], float]
    #: Short column label; ``{k}`` is replaced by the cutoff, e.g. ``"top-{k}"``.
    label: str = "{name}@{k}"

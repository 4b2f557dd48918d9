"""Scoring by DPR's protocol (PROTOCOL section 1): the answer matcher, first-hit ranks, top-k.

- :mod:`harness.scoring.matching`  DPR's ``has_answer`` (string and regex modes)
- :mod:`harness.scoring.ranks`     first-hit ranks, top-k accuracy, macro average over parts
- :mod:`harness.scoring.metrics`   the core's ``accuracy`` metric (needs no plugin)
- :mod:`harness.scoring.rerank`    a re-ranker's answer checked and applied to first-stage rankings
- :mod:`harness.scoring.rankings`  what every ranking must be before it is scored
- :mod:`harness.scoring.retrieval` a retriever's rankings for a question set, searched and checked

Importing this package does not import the matcher (``regex``); it is loaded when ranks are
first computed.
"""

from harness.scoring.ranks import first_hit_ranks, macro_average, ranks_by_part, top_k_accuracy

__all__ = ["first_hit_ranks", "macro_average", "ranks_by_part", "top_k_accuracy"]

"""Building a result document (schema ``harness-result/1``, :mod:`harness.results.schema`) from
first-hit ranks: the metrics at each cutoff, the ``compute`` block, and the document itself.

Used by ``harness run`` (:mod:`harness.evaluate`, which re-exports these names) and by scoring a
run file (:mod:`harness.runfiles.score`), which so does not depend on the runner.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from harness import registry
from harness.api import MAX_K, Suite
from harness.errors import HarnessError, warn
from harness.plugins import loaded_plugins
from harness.results.schema import SCHEMA
from harness.scoring.matching import MATCHER_VERSION
from harness.scoring.ranks import macro_average
from harness.util.environment import machine, versions


def parse_k(values: Sequence[int]) -> tuple[int, ...]:
    """Sorted distinct cutoffs; each must be a positive integer up to :data:`MAX_K`."""
    ks = []
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise HarnessError(f"--k values must be positive integers, got {k!r}")
        if k > MAX_K:
            raise HarnessError(f"--k: {k} is deeper than harness retrieves (at most {MAX_K})")
        ks.append(k)
    if not ks:
        raise HarnessError("--k needs at least one value")
    return tuple(sorted(set(ks)))


def check_metrics(metrics: Sequence[str]) -> None:
    """Unknown metric names fail before any work."""
    if not metrics:
        raise HarnessError("at least one metric is needed")
    for name in metrics:
        registry.metrics().get(name)


def compute_metrics(
    ranks: Mapping[str, Mapping[str, int | None]], ks: Sequence[int], metric_names: Sequence[str]
) -> dict[str, Any]:
    """Each metric at each k, per part and macro-averaged over parts; keys of k are strings (JSON)."""
    out: dict[str, Any] = {}
    for name in metric_names:
        spec = registry.metrics().get(name)
        parts = {
            part: {str(k): spec.compute(list(by_q.values()), k) for k in ks} for part, by_q in ranks.items()
        }
        macro = {str(k): macro_average({p: v[str(k)] for p, v in parts.items()}) for k in ks}
        out[name] = {"macro": macro, "parts": parts}
    return out


def compute_record(retriever: Any, reranker: Any = None) -> dict[str, Any]:
    """The result's ``compute`` block: the process group's size (``torchrun``'s ``WORLD_SIZE``)
    and what the stages say of how they computed (:class:`harness.api.ReportsCompute`)."""
    from harness.api import ReportsCompute

    try:
        world = max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        world = 1
    record: dict[str, Any] = {"world_size": world}
    for key, stage in (("retriever", retriever), ("reranker", reranker)):
        if stage is None or not isinstance(stage, ReportsCompute):
            continue
        try:
            facts = dict(stage.compute())
            json.dumps(facts)
        except Exception as exc:  # a plugin's broken report must not lose the run's result
            warn(f"the {key}'s compute() failed ({type(exc).__name__}: {str(exc)[:120]}); not recorded")
            continue
        record[key] = facts
    return record


def _corpus_record(suite: Suite) -> dict[str, Any]:
    """The corpus's name, size and fingerprint; size and fingerprint only if it was opened (a
    lazily opened corpus that scoring never needed is not downloaded for the record's sake)."""
    corpus = suite.corpus
    if getattr(corpus, "loaded", True):
        return {"name": corpus.name, "passages": len(corpus), "fingerprint": corpus.fingerprint}
    return {"name": corpus.name, "passages": None, "fingerprint": None}


def build_result(
    suite: Suite,
    *,
    retriever: Mapping[str, Any],
    ranks: Mapping[str, Mapping[str, int | None]],
    ks: Sequence[int],
    depth: int,
    metrics: Sequence[str],
    timings: Mapping[str, float],
    extra: Mapping[str, Any] | None = None,
    reranker: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The result document (schema ``harness-result/1``) for first-hit ranks of ``suite``;
    ``reranker`` is the second stage's block (:func:`harness.scoring.rerank.reranker_record`), if any."""
    second = {"reranker": dict(reranker)} if reranker is not None else {}
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": {
            "name": suite.name,
            "description": suite.description,
            "synthetic": suite.synthetic,
            "match": suite.match,
            "questions_fingerprint": suite.questions_fingerprint,
            "parts": [{"name": p.name, "questions": len(p.questions)} for p in suite.parts],
            "corpus": _corpus_record(suite),
        },
        "retriever": dict(retriever),
        **second,
        "matcher": MATCHER_VERSION,
        "k": list(ks),
        "depth": depth,
        "first_hit_ranks": {part: dict(by_q) for part, by_q in ranks.items()},
        "metrics": compute_metrics(ranks, ks, metrics),
        "timings": dict(timings),
        "versions": versions(loaded_plugins().plugins),
        "machine": machine(),
        **(dict(extra) if extra else {}),
    }


__all__ = ["build_result", "check_metrics", "compute_metrics", "compute_record", "parse_k"]

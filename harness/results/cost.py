"""What a result cost: the ``cost`` block every run records beside its accuracy.

::

    "cost": {
      "device_kind": "cpu" | "<GPU name>",   # what the stages computed on
      "device_count": 1,                     # GPUs used (over every torchrun process), else processes
      "gpu_hours": 0.0,                      # device_count x seconds / 3600 on GPUs, else 0
      "seconds": 12.3,                       # index + search + re-rank + score wall time
      "peak_host_bytes": 123456789,          # peak resident set (harness.util.resources)
      "peak_host_scope": "run" | "process",
      "peak_gpu_bytes": null | int,          # torch's allocator, summed over devices
      "index_bytes": null | int,             # the search structure (Lucene folder, faiss or GPU index)
      "embedding_bytes": null | int,         # the passage embeddings (dense)
      "encode_passages_per_s": null | float, # passages encoded by this run / encoding seconds
      "search_queries_per_s": float          # questions / search seconds (encoding questions included)
    }

Device, bytes and encoding throughput are what the stages report of themselves
(:class:`harness.api.ReportsCompute`, in the result's ``compute`` block; a fusion reports its
components, and their bytes are summed); memory is measured around the run; queries/s is the
number of questions over the seconds of the search stage, which the harness times itself. A
figure a stage does not report is ``null``, never guessed. ``gpu_hours`` charges every GPU the
run held for the run's whole time, as a cluster's accounting does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from harness.util.resources import Peak

#: Stages whose seconds count towards the run's cost (loading aside: a one-off, cached later).
COSTED_STAGES = ("index", "search", "rerank", "score")

_INT_FIELDS = ("device_count", "index_bytes", "embedding_bytes", "peak_host_bytes", "peak_gpu_bytes")
_FLOAT_FIELDS = ("gpu_hours", "seconds", "encode_passages_per_s", "search_queries_per_s")
_NULLABLE = {"index_bytes", "embedding_bytes", "peak_gpu_bytes", "encode_passages_per_s", "search_queries_per_s",
             "peak_host_bytes"}


def _stages(facts: Any) -> Iterator[Mapping[str, Any]]:
    """``facts`` and every component's facts inside it (a fusion's ``components``), depth first."""
    if not isinstance(facts, Mapping):
        return
    yield facts
    for component in facts.get("components") or ():
        yield from _stages(component)


def _gpus(facts: Mapping[str, Any]) -> int:
    """GPUs one stage computed on: the count beside each ``*_device`` that names CUDA (at least 1)."""
    used = 0
    for key, value in facts.items():
        if key.endswith("_device") and isinstance(value, str) and value.startswith("cuda"):
            count = facts.get(key + "s")
            used = max(used, count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1)
    return used


def _summed(stages: list[Mapping[str, Any]], key: str) -> int | None:
    values = [s[key] for s in stages if isinstance(s.get(key), int) and not isinstance(s.get(key), bool)]
    return sum(values) if values else None


def cost_record(compute: Mapping[str, Any], timings: Mapping[str, float], questions: int, peak: Peak | None,
                accelerators: list[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The ``cost`` block of a run (see the module notes) from its ``compute`` block, stage
    ``timings``, question count, measured ``peak`` memory and the machine's ``accelerators``."""
    world = compute.get("world_size", 1)
    world = world if isinstance(world, int) and world > 0 else 1
    stages = [facts for key in ("retriever", "reranker") for facts in _stages(compute.get(key))]
    gpus = max((_gpus(s) for s in stages), default=0) * world
    seconds = round(sum(float(timings.get(stage, 0.0)) for stage in COSTED_STAGES), 4)
    if gpus:
        names = [str(a.get("name")) for a in accelerators or () if a.get("name")]
        kind = names[0] if len(names) == 1 else (" + ".join(names) if names else "cuda")
    else:
        kind = "cpu"
    retriever = [facts for facts in _stages(compute.get("retriever"))]
    encode = next((s.get("encode_passages_per_s") for s in retriever if isinstance(s.get("encode_passages_per_s"), (int, float))), None)
    search_seconds = float(timings.get("search", 0.0))
    return {
        "device_kind": kind,
        "device_count": gpus or world,
        "gpu_hours": round(gpus * seconds / 3600, 6) if gpus else 0.0,
        "seconds": seconds,
        "peak_host_bytes": peak.host_bytes if peak is not None else None,
        "peak_host_scope": peak.host_scope if peak is not None else "process",
        "peak_gpu_bytes": peak.gpu_bytes if peak is not None else None,
        "index_bytes": _summed(retriever, "index_bytes"),
        "embedding_bytes": _summed(retriever, "embedding_bytes"),
        "encode_passages_per_s": round(float(encode), 3) if encode is not None else None,
        "search_queries_per_s": round(questions / search_seconds, 3) if search_seconds > 0 else None,
    }


def check_cost(cost: Any) -> str | None:
    """What is wrong with a result's ``cost`` block (None when nothing is): an object with every
    field above, counts and bytes non-negative integers, rates and hours finite and non-negative."""
    if not isinstance(cost, Mapping):
        return "'cost' is not an object"
    if not isinstance(cost.get("device_kind"), str) or not cost["device_kind"]:
        return "'cost.device_kind' is not a non-empty string"
    if cost.get("peak_host_scope") not in ("run", "process"):
        return "'cost.peak_host_scope' is not 'run' or 'process'"
    for key in _INT_FIELDS:
        value = cost.get(key)
        if value is None and key in _NULLABLE and key in cost:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"'cost.{key}' is not a non-negative integer"
    if cost["device_count"] < 1:
        return "'cost.device_count' is below 1"
    for key in _FLOAT_FIELDS:
        value = cost.get(key)
        if value is None and key in _NULLABLE and key in cost:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return f"'cost.{key}' is not a finite non-negative number"
    return None

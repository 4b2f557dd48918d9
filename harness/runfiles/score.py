"""Scoring a run file made elsewhere, recorded like a ``harness run`` result (``harness score``)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import registry
from harness.errors import HarnessError
from harness.evaluate import build_result, check_metrics, parse_k
from harness.runfiles.ranks import score_run
from harness.runfiles.readers import RunWarning, read_run
from harness.scoring.metrics import DEFAULT_METRIC

#: ``--format`` spellings: the short names of ``harness score --format`` and the readers' own.
FORMAT_ALIASES = {"trec": "trec", "dpr": "dpr-json", "dpr-json": "dpr-json", "pyserini": "pyserini-json", "pyserini-json": "pyserini-json"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def score_file(
    suite: str,
    run_file: str | Path,
    *,
    format: str | None = None,
    name: str | None = None,
    k: Sequence[int] | None = None,
    metrics: Sequence[str] = (DEFAULT_METRIC,),
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The result document for ``run_file`` scored on ``suite`` with DPR's protocol.

    The retriever is recorded as ``name`` (default: the file's name without extension) with the
    file's name, format and sha256 as parameters. Cutoffs deeper than the run are dropped.
    """
    run_file = Path(run_file)
    fmt = None
    if format is not None:
        if format not in FORMAT_ALIASES:
            raise HarnessError(f"--format must be one of trec, dpr, pyserini; got {format!r}")
        fmt = FORMAT_ALIASES[format]
    check_metrics(metrics)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    loaded = registry.suites().get(suite).load()
    timings["load_suite"] = round(time.perf_counter() - start, 4)
    start = time.perf_counter()
    # The file's digest is computed on a thread while it is read and scored (hashlib releases
    # the GIL on large blocks), which hides its cost on large runs.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        digest = pool.submit(_sha256, run_file)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RunWarning)
            run = read_run(run_file, loaded, format=fmt)
            ranks = score_run(loaded, run)
        sha256 = digest.result()
    timings["score"] = round(time.perf_counter() - start, 4)
    for w in caught:
        if warn is not None and issubclass(w.category, RunWarning):
            warn(str(w.message))
    depth = max((len(hits) for hits in run.rankings.values()), default=0)
    if depth == 0:
        raise HarnessError(f"{run_file}: the run retrieves no passage for any question of suite {suite!r}")
    ks = parse_k(k if k is not None else loaded.default_k)
    kept = tuple(x for x in ks if x <= depth)
    if len(kept) < len(ks) and warn is not None:
        warn(f"the run has at most {depth} passages per question; top-{', top-'.join(str(x) for x in ks if x > depth)} not reported")
    if not kept:
        raise HarnessError(f"{run_file}: the run is shallower ({depth}) than every cutoff asked for ({', '.join(map(str, ks))})")
    stem = run_file.name.split(".")[0] or "run"
    return build_result(
        loaded,
        retriever={
            "name": name or stem,
            "plugin": "run-file",
            "parameters": {"run_file": run_file.name, "format": run.format, "sha256": sha256},
        },
        ranks=ranks,
        ks=kept,
        depth=depth,
        metrics=metrics,
        timings=timings,
    )

"""Evaluating a retriever on a suite: the library behind ``harness run``.

>>> from harness.evaluate import evaluate
>>> result = evaluate("bm25", "demo")                     # doctest: +SKIP
>>> result["metrics"]["accuracy"]["macro"]["20"]          # doctest: +SKIP

By name: :func:`evaluate` (the result document) and :func:`run_evaluation` (also the suite and
the rankings). With objects already loaded (a plugin's own command, a grid of encoders sharing one
index): :func:`evaluate_retriever`, or its steps :func:`retrieve`, :func:`score_suite` and
:func:`build_result`.

Both take an optional re-ranker (``rerank="upr"``, ``rerank_options``, ``rerank_depth``): the
first stage then retrieves at least ``rerank_depth`` hits, :func:`harness.scoring.rerank.rerank_rankings`
re-orders its top ``rerank_depth``, and the result records the chain (``reranker``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness import registry
from harness.util.environment import accelerators
from harness.util.resources import PeakMemory
from harness.errors import HarnessError, warn
from harness.scoring.metrics import DEFAULT_METRIC
from harness.results.cost import cost_record
from harness.results.build import build_result, check_metrics, compute_metrics, compute_record, parse_k
from harness.scoring.context import make_context
from harness.scoring.ranks import first_hit_ranks, ranks_by_part
from harness.scoring.retrieval import normalize_question, retrieve
from harness.scoring.ties import describe_ties
from harness.api import DEFAULT_RERANK_DEPTH, MAX_K, Corpus, Hit, Reranker, Retriever, RunContext, Suite

__all__ = [
    "Evaluation",
    "compute_metrics",
    "compute_record",
    "Second",
    "Timer",
    "build_result",
    "check_metrics",
    "evaluate",
    "evaluate_retriever",
    "MAX_K",
    "make_context",
    "normalize_question",
    "parse_k",
    "retrieve",
    "run_evaluation",
    "score_suite",
]

class Timer:
    """Wall-clock seconds per named stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - start, 4)


def _text_lookup(corpus: Corpus, retriever_name: str):
    def text(passage_id: str) -> str:
        try:
            return corpus.get(passage_id).text
        except KeyError:
            raise HarnessError(
                f"retriever {retriever_name!r} returned passage id {passage_id!r}, "
                f"which is not in corpus {corpus.name!r}"
            ) from None

    return text


def score_suite(
    suite: Suite, rankings: Sequence[Sequence[Hit]], *, retriever_name: str = "?"
) -> dict[str, dict[str, int | None]]:
    """First-hit ranks per part and question id, for rankings aligned with ``suite.questions``."""
    lookup = _text_lookup(suite.corpus, retriever_name)
    ids = [[hit.passage_id for hit in ranking] for ranking in rankings]
    return ranks_by_part(suite.parts, first_hit_ranks(suite.questions, ids, lookup, mode=suite.match))


def suite_ties(
    suite: Suite, rankings: Sequence[Sequence[Hit]], ranks: Mapping[str, Mapping[str, int | None]], ks: Sequence[int]
) -> dict[str, dict[str, int]]:
    """The ties at each cutoff of rankings aligned with ``suite.questions``
    (:func:`harness.scoring.ties.tie_report`)."""
    from harness.scoring.ties import tie_report

    first = {q_id: rank for by_q in ranks.values() for q_id, rank in by_q.items()}
    return tie_report(suite.questions, rankings, [first[q.id] for q in suite.questions],
                      lambda pid: suite.corpus.get(pid).text, mode=suite.match, ks=ks)


def evaluate(retriever: str, suite: str, **kwargs: Any) -> dict[str, Any]:
    """Run retriever ``retriever`` on suite ``suite`` and return the result document (not written).

    Keyword arguments are :func:`run_evaluation`'s: ``k`` (default: the suite's cutoffs; the
    retriever is asked for ``max(k)`` passages per question), ``options`` (passed to the
    retriever's loader), ``metrics``, ``cache_dir``, ``threads``, ``show_progress``, and a
    re-ranker: ``rerank`` (its name), ``rerank_options``, ``rerank_depth``.
    """
    return run_evaluation(retriever, suite, **kwargs).result


@dataclass(frozen=True)
class Evaluation:
    """What a run produced: the result document, the loaded suite, and each question's ranking."""

    result: dict[str, Any]
    suite: Suite
    rankings: list[list[Hit]]


def run_evaluation(
    retriever: str,
    suite: str,
    *,
    k: Sequence[int] | None = None,
    options: Mapping[str, Any] | None = None,
    metrics: Sequence[str] = (DEFAULT_METRIC,),
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    show_progress: bool = True,
    rerank: str | None = None,
    rerank_options: Mapping[str, Any] | None = None,
    rerank_depth: int | None = None,
) -> Evaluation:
    """Run a named retriever on a named suite: the result document, plus the suite and the
    rankings (with scores) for saving the run. Names and options are checked before any work.

    With ``rerank`` (a re-ranker's name), the first stage's top ``rerank_depth`` hits (default:
    the re-ranker's own depth) are re-ranked by it, loaded with ``rerank_options``."""
    timer = Timer()
    memory = PeakMemory().start()
    found = registry.resolve("retrievers", retriever, options)
    if rerank is None and (rerank_options or rerank_depth is not None):
        raise HarnessError("re-ranker options or depth were given without a re-ranker (--rerank NAME)")
    if rerank is not None:
        from harness.scoring.rerank import check_depth, default_depth

        found_reranker = registry.resolve("rerankers", rerank, rerank_options)
        rerank_depth = check_depth(rerank_depth if rerank_depth is not None else default_depth(found_reranker.spec))
    suite_spec = registry.suites().get(suite)
    check_metrics(metrics)
    with timer.stage("load_suite"):  # and its corpus, before any model; offline, every missing file named at once
        from harness.data.needs import prepare_run, run_listing

        loaded_suite = prepare_run(suite_spec.load, retriever, found.options,
                                   listing=run_listing(suite, retriever, options))
    ks = parse_k(k if k is not None else loaded_suite.default_k)
    with timer.stage("load_retriever"):
        model = registry.load("retrievers", retriever, found.options).value
    second = None
    if rerank is not None:
        with timer.stage("load_reranker"):
            loaded = registry.load("rerankers", rerank, found_reranker.options)
        second = Second(loaded.value, name=rerank, plugin=loaded.plugin, depth=rerank_depth)
    return evaluate_retriever(
        model,
        loaded_suite,
        name=retriever,
        plugin=found.plugin,
        k=ks,
        metrics=metrics,
        context=make_context(loaded_suite, cache_dir=cache_dir, threads=threads, show_progress=show_progress),
        timer=timer,
        reranker=second,
        memory=memory,
    )


@dataclass(frozen=True)
class Second:
    """A loaded re-ranker as a run's second stage: the object, its name and plugin, and how many
    of the first stage's hits it re-ranks."""

    reranker: Reranker
    name: str
    plugin: str
    depth: int = DEFAULT_RERANK_DEPTH

    def record(self, reranked: int | None = None) -> dict[str, Any]:
        """The result's ``reranker`` block; ``reranked``: the most hits any question had re-ranked."""
        from harness.scoring.rerank import reranker_record

        return reranker_record(self.name, self.plugin, self.reranker.parameters(), self.depth, reranked)


def evaluate_retriever(
    retriever: Retriever,
    suite: Suite,
    *,
    name: str,
    plugin: str,
    k: Sequence[int] | None = None,
    metrics: Sequence[str] = (DEFAULT_METRIC,),
    context: RunContext | None = None,
    extra: Mapping[str, Any] | None = None,
    timer: Timer | None = None,
    reranker: Second | None = None,
    memory: PeakMemory | None = None,
) -> Evaluation:
    """Index ``suite``'s corpus with a loaded retriever, search every question for ``max(k)``
    hits, score them by DPR's protocol and build the result document (recorded under ``name``
    and ``plugin``; ``extra`` adds top-level fields). With ``reranker`` the first stage retrieves
    at least ``reranker.depth`` hits and its top ``reranker.depth`` are re-ranked before scoring;
    the result then keeps the first stage's first-hit ranks (``first_stage_ranks``: what the
    re-ranker could have reached). ``memory`` is the span measuring the run's peak memory, started
    by the caller before loading (default: from here)."""
    timer = timer or Timer()
    memory = memory or PeakMemory().start()
    check_metrics(metrics)
    ks = parse_k(k if k is not None else suite.default_k)
    depth = max(ks) if reranker is None else max(max(ks), reranker.depth)
    context = context or make_context(suite)
    with timer.stage("index"):
        retriever.index(suite.corpus, context)
    with timer.stage("search"):
        part_of = {q.id: part.name for part in suite.parts for q in part.questions}
        rankings = retrieve(retriever, suite.questions, depth, context, name=name, corpus=suite.corpus,
                            parts=[part_of[q.id] for q in suite.questions])
    reranked = None
    first_stage = None
    if reranker is not None:
        from harness.scoring.rerank import most_reranked, rerank_rankings

        reranked = most_reranked(rankings, reranker.depth)
        with timer.stage("score"):
            first_stage = score_suite(suite, rankings, retriever_name=name)
        with timer.stage("rerank"):
            rankings = rerank_rankings(
                reranker.reranker,
                [normalize_question(q.text) for q in suite.questions],
                [q.id for q in suite.questions],
                rankings,
                reranker.depth,
                context,
                name=reranker.name,
                passage=suite.corpus.get,
            )
    with timer.stage("score"):
        ranks = score_suite(suite, rankings, retriever_name=name)
        ties = suite_ties(suite, rankings, ranks, ks)
    if (line := describe_ties(ties, len(suite.questions))) is not None:
        warn(f"{name} on {suite.name}: {line}")
    computed = compute_record(retriever, reranker.reranker if reranker is not None else None)
    cost = cost_record(computed, timer.seconds, len(suite.questions), memory.stop(), accelerators())
    result = build_result(
        suite,
        retriever={"name": name, "plugin": plugin, "parameters": dict(retriever.parameters())},
        ranks=ranks,
        ks=ks,
        depth=depth,
        metrics=metrics,
        timings=timer.seconds,
        extra={"compute": computed, "cost": cost, "ties": ties,
               **({"first_stage_ranks": first_stage} if first_stage is not None else {}), **(dict(extra) if extra else {})},
        reranker=reranker.record(reranked) if reranker is not None else None,
    )
    return Evaluation(result=result, suite=suite, rankings=rankings)



"""Evaluating a retriever on a suite: the library behind ``harness run``.

>>> from harness.evaluate import evaluate
>>> result = evaluate("bm25", "demo")                     # doctest: +SKIP
>>> result["metrics"]["accuracy"]["macro"]["20"]          # doctest: +SKIP
0.8382936507936506
>>> result.accuracy[20]                                   # doctest: +SKIP
83.83

By name or with objects (a retriever object with the :class:`~harness.api.Retriever` methods, a
:class:`~harness.api.Suite`): :func:`evaluate` (the result document) and :func:`run_evaluation`
(also the suite and the rankings). With objects already loaded (a plugin's own command, a grid of encoders sharing one
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
from harness.api import DEFAULT_RERANK_DEPTH, MAX_K, Corpus, Hit, Reranker, Retriever, RetrieverSpec, RunContext, Suite

__all__ = [
    "Evaluation",
    "EvaluationResult",
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


def evaluate(retriever: str | Retriever, suite: str | Suite, **kwargs: Any) -> EvaluationResult:
    """Run ``retriever`` on ``suite`` and return the result document (not written).

    ``retriever`` is a registered retriever's name or any object with the
    :class:`~harness.api.Retriever` methods (``parameters``, ``index``, ``search``: one defined
    in a notebook needs no plugin); ``suite`` a registered suite's name or a
    :class:`~harness.api.Suite` (:meth:`~harness.api.Suite.from_lists` makes one from lists of
    questions, answers and passages). Keyword arguments are :func:`run_evaluation`'s: ``k``
    (default: the suite's cutoffs; the retriever is asked for ``max(k)`` passages per question),
    ``options`` (passed to a named retriever's loader), ``name`` (an object's name in the result),
    ``metrics``, ``cache_dir``, ``threads``, ``show_progress``, and a re-ranker: ``rerank`` (its
    name), ``rerank_options``, ``rerank_depth``.

    The document is the ``dict`` a result file holds (metric keys are texts, ``"20"``, and values
    fractions: ``result["metrics"]["accuracy"]["macro"]["20"] == 0.8383``), with
    :attr:`EvaluationResult.accuracy` besides: top-k accuracy in percent by integer k, as
    ``harness run`` prints it (``result.accuracy[20] == 83.83``).
    """
    return EvaluationResult(run_evaluation(retriever, suite, **kwargs).result)


class EvaluationResult(dict):
    """A result document (a plain ``dict`` in every way: indexing, ``json.dumps``, comparison)
    with the numbers ``harness run`` prints as attributes: percent, rounded to two decimals as
    printed, by integer cutoff. The document's own values stay fractions under text keys."""

    def metric(self, metric: str = DEFAULT_METRIC, part: str | None = None) -> dict[int, float]:
        """``metric`` at each cutoff in percent, rounded as printed: the suite's headline (the
        macro average over parts) or, with ``part``, one part's."""
        try:
            block = self["metrics"][metric]
            values = block["macro"] if part is None else block["parts"][part]
        except KeyError:
            where = f" for part {part!r}" if part is not None else ""
            raise KeyError(f"the result has no {metric!r} metric{where}") from None
        return {int(k): round(100 * float(v), 2) for k, v in values.items()}

    @property
    def accuracy(self) -> dict[int, float]:
        """Top-k answer accuracy in percent by k, the macro average over parts (one part: its
        number): ``result.accuracy[20]``."""
        return self.metric(DEFAULT_METRIC)

    @property
    def parts(self) -> dict[str, dict[int, float]]:
        """Each part's top-k accuracy in percent by k: ``result.parts["P17"][20]``."""
        return {part: self.metric(DEFAULT_METRIC, part) for part in self["metrics"][DEFAULT_METRIC]["parts"]}


@dataclass(frozen=True)
class Evaluation:
    """What a run produced: the result document, the loaded suite, and each question's ranking."""

    result: dict[str, Any]
    suite: Suite
    rankings: list[list[Hit]]


def run_evaluation(
    retriever: str | Retriever,
    suite: str | Suite,
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
    name: str | None = None,
) -> Evaluation:
    """Run a retriever on a suite: the result document, plus the suite and the rankings (with
    scores) for saving the run. Names and options are checked before any work.

    ``retriever`` is a registered name (loaded with ``options``) or an object with the
    :class:`~harness.api.Retriever` methods, recorded as ``name`` (default: its class's name)
    from its class's module; ``suite`` a registered name or a :class:`~harness.api.Suite`.
    With ``rerank`` (a re-ranker's name), the first stage's top ``rerank_depth`` hits (default:
    the re-ranker's own depth) are re-ranked by it, loaded with ``rerank_options``."""
    timer = Timer()
    memory = PeakMemory().start()
    given = None if isinstance(retriever, str) else _given_retriever(retriever, options, name)
    if given is None:
        if name is not None:
            raise HarnessError("name= names a retriever object; a registered retriever is recorded under its own name")
        found = registry.resolve("retrievers", retriever, options)
    if rerank is None and (rerank_options or rerank_depth is not None):
        raise HarnessError("re-ranker options or depth were given without a re-ranker (--rerank NAME)")
    if rerank is not None:
        from harness.scoring.rerank import check_depth, default_depth

        found_reranker = registry.resolve("rerankers", rerank, rerank_options)
        rerank_depth = check_depth(rerank_depth if rerank_depth is not None else default_depth(found_reranker.spec))
    if isinstance(suite, Suite):
        suite_entry = None
    else:
        suite_entry = registry.suites().entry(suite)
    check_metrics(metrics)
    with timer.stage("load_suite"):  # and its corpus, before any model; offline, every missing file named at once
        if suite_entry is None:
            loaded_suite = suite
        else:
            from harness.data.needs import prepare_run, run_listing

            with registry.running("suites", suite, suite_entry.plugin):
                loaded_suite = (
                    suite_entry.spec.load() if given is not None else
                    prepare_run(suite_entry.spec.load, retriever, found.options,
                                listing=run_listing(suite, retriever, options))
                )
    ks = parse_k(k if k is not None else loaded_suite.default_k)
    if given is not None:
        model, retriever, plugin = given
    else:
        with timer.stage("load_retriever"):
            model = registry.load("retrievers", retriever, found.options).value
        plugin = found.plugin
    second = None
    if rerank is not None:
        with timer.stage("load_reranker"):
            loaded = registry.load("rerankers", rerank, found_reranker.options)
        second = Second(loaded.value, name=rerank, plugin=loaded.plugin, depth=rerank_depth)
    return evaluate_retriever(
        model,
        loaded_suite,
        name=retriever,
        plugin=plugin,
        k=ks,
        metrics=metrics,
        context=make_context(loaded_suite, cache_dir=cache_dir, threads=threads, show_progress=show_progress),
        timer=timer,
        reranker=second,
        memory=memory,
    )


def _given_retriever(retriever: Any, options: Mapping[str, Any] | None, name: str | None) -> tuple[Retriever, str, str]:
    """A retriever object given instead of a name: the object, its name and where it comes from
    (its class's module), checked before any work."""
    if isinstance(retriever, RetrieverSpec):
        raise HarnessError(f"give the retriever's name ({retriever.name!r}) or a loaded retriever, not its spec")
    if not isinstance(retriever, Retriever):
        raise HarnessError(
            f"a retriever is a registered name or an object with parameters(), index() and search(); "
            f"got a {type(retriever).__name__}"
        )
    if options:
        raise HarnessError("options are for a retriever given by name; set them on the object itself")
    if name is None:
        name = type(retriever).__name__
    if not isinstance(name, str) or not name.strip():
        raise HarnessError(f"name must be non-empty text, got {name!r}")
    return retriever, name, type(retriever).__module__


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
    with timer.stage("index"), registry.running("retrievers", name, plugin):
        retriever.index(suite.corpus, context)
    with timer.stage("search"), registry.running("retrievers", name, plugin):
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
        with timer.stage("rerank"), registry.running("rerankers", reranker.name, reranker.plugin):
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
    with registry.running("retrievers", name, plugin):
        computed = compute_record(retriever, reranker.reranker if reranker is not None else None)
        parameters = dict(retriever.parameters())
    cost = cost_record(computed, timer.seconds, len(suite.questions), memory.stop(), accelerators())
    from harness.results.meta import MODEL_KEY, model_block

    second = reranker.record(reranked) if reranker is not None else None
    result = build_result(
        suite,
        retriever={"name": name, "plugin": plugin, "parameters": parameters},
        ranks=ranks,
        ks=ks,
        depth=depth,
        metrics=metrics,
        timings=timer.seconds,
        extra={"compute": computed, "cost": cost, "ties": ties,
               **({"first_stage_ranks": first_stage} if first_stage is not None else {}),
               MODEL_KEY: model_block(name, parameters, second), **(dict(extra) if extra else {})},
        reranker=second,
    )
    return Evaluation(result=result, suite=suite, rankings=rankings)



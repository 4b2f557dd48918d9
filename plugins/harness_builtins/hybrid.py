"""Fusing retrievers: pyserini's sparse + dense hybrid (``hybrid:SPARSE+DENSE``) and reciprocal
rank fusion (``rrf:A+B[+C...]``).

Both are composed retrievers: the text after the colon names registered retrievers, which are
looked up with :func:`harness.registry.retrievers` and loaded with their default options.

``hybrid:SPARSE+DENSE`` follows pyserini's ``HybridSearcher._hybrid_results``
(``pyserini/search/hybrid/_searcher.py``), per query:

- each side is asked for its top ``depth`` hits (pyserini's ``--hits``/``k0``, 1000);
- the candidates are the union of both sides' hits; a passage one side did not return takes that
  side's *minimum* score over the hits it did return (0 when it returned none);
- with ``normalize`` each side's scores become ``(s - (min + max) / 2) / (max - min)`` over that
  side's hits (pyserini's ``--normalization``; where all of a side's hits share one score, which
  makes pyserini divide by zero, that side's scores become 0);
- ``score = dense + alpha * sparse`` (pyserini's default; its ``--weight-on-dense`` is not offered);
- sorted by score, best first, and cut to ``k``.

The order is fixed, not detected: the FIRST component is the sparse side (the one ``alpha``
weights), the SECOND the dense side. The public API has no notion of sparse or dense, so a wrong
order cannot be recognised in general; only ``hybrid:dpr-*+bm25`` is refused with the right order.

``alpha`` defaults per suite to pyserini's tuned values (PROTOCOL section 5): see
:func:`default_alpha`. The value actually used is ``parameters()["alpha"]``.

``rrf:A+B[+C...]`` follows pyserini's ``reciprocal_rank_fusion`` (``pyserini/fusion/_base.py``,
Cormack et al. 2009): each component's top ``depth`` hits get ``1 / (rrf_k + rank)`` with 1-based
ranks (a hit's position in the component's list, not its score), summed over components
(``math.fsum``: correctly rounded, so passages with the same ranks in any order tie exactly),
``rrf_k`` = 60, ``depth`` = 1000; sorted best first and cut to ``k``.

Ties, in both: equal fused scores are ordered by passage id ascending (string order). That is
pyserini's ``TrecRun.merge`` rule, which its RRF uses; its hybrid leaves ties in ``set`` iteration
order, which changes with ``PYTHONHASHSEED``, so it has no rule of its own to follow.

A passage listed twice by one component counts once, at its first (best) position; components
must not return duplicates anyway (:func:`harness.testing.check_retriever`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness import hookimpl
from harness.errors import HarnessError
from harness.api import (
    MAX_K,
    Corpus,
    Hit,
    Options,
    Retriever,
    RetrieverSpec,
    RunContext,
    boolean,
    non_negative_float,
    positive_int,
)

#: Each side's hits considered by default: pyserini's ``--hits`` (hybrid) and ``--depth`` (fusion).
DEFAULT_DEPTH = 1000
#: Cormack et al.'s constant, pyserini's ``--rrf.k`` default.
DEFAULT_RRF_K = 60
#: ``alpha`` when no tuned value applies.
DEFAULT_ALPHA = 1.0

#: The dataset whose tuned alpha a suite takes. Dev splits and re-distributions of the same
#: questions share their dataset's alpha; suites on other corpora (squad-dev-paragraphs) do not.
DATASET_OF_SUITE: dict[str, str] = {
    "nq": "nq",
    "nq-dev": "nq",
    "nq-open": "nq",
    "nq-open-dev": "nq",
    "nq-open-google": "nq",
    "trivia": "trivia",
    "trivia-dev": "trivia",
    "wq": "wq",
    "curated": "curated",
    "squad": "squad",
}
#: pyserini's tuned alphas for BM25 + DPR (PROTOCOL section 5). NQ depends on the dense model.
DATASET_ALPHA: dict[str, float] = {"trivia": 0.95, "wq": 0.95, "curated": 1.05, "squad": 2.0}
#: NQ's alpha by dense retriever: multi-dataset DPR 1.3, DPR trained on NQ alone 1.2.
NQ_ALPHA: dict[str, float] = {"dpr-multi": 1.3, "dpr-nq": 1.2}
#: Dense retrievers known by name (used only to refuse ``hybrid:DENSE+bm25``).
KNOWN_DENSE = frozenset(NQ_ALPHA)
KNOWN_SPARSE = frozenset({"bm25"})


def default_alpha(suite: str | None, dense: str) -> tuple[float, str]:
    """The alpha pyserini tuned for ``suite`` with dense retriever ``dense``, and why.

    NQ (``nq``, ``nq-open``, their dev splits, ``nq-open-google``): 1.3 with ``dpr-multi``, 1.2
    with ``dpr-nq``, otherwise 1.0; TriviaQA 0.95; WebQuestions 0.95; CuratedTREC 1.05; SQuAD 2.0;
    any other suite (or none) 1.0.
    """
    dataset = DATASET_OF_SUITE.get(suite or "")
    if dataset == "nq":
        if dense in NQ_ALPHA:
            return NQ_ALPHA[dense], f"pyserini's alpha for NQ with {dense}"
        return DEFAULT_ALPHA, f"no tuned alpha for NQ with {dense!r}; default {DEFAULT_ALPHA}"
    if dataset is not None:
        return DATASET_ALPHA[dataset], f"pyserini's alpha for {dataset}"
    return DEFAULT_ALPHA, f"no tuned alpha for suite {suite!r}; default {DEFAULT_ALPHA}"


# --------------------------------------------------------------------------- fusion rules


def _first_occurrences(hits: Sequence[Hit], depth: int | None) -> dict[str, float]:
    """passage id -> score of the first ``depth`` hits, keeping each id's first (best) position."""
    scores: dict[str, float] = {}
    for hit in hits if depth is None else hits[:depth]:
        scores.setdefault(hit.passage_id, float(hit.score))
    return scores


def _ranked(scores: Mapping[str, float], k: int | None) -> list[Hit]:
    """Best first; equal scores by passage id ascending (pyserini's ``TrecRun.merge``)."""
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [Hit(passage_id=pid, score=score) for pid, score in (order if k is None else order[:k])]


def hybrid_fuse(
    sparse: Sequence[Hit],
    dense: Sequence[Hit],
    *,
    alpha: float,
    k: int | None = None,
    depth: int | None = None,
    normalize: bool = False,
) -> list[Hit]:
    """One query's hybrid ranking: ``dense + alpha * sparse`` over the union of both sides' hits.

    A passage missing from one side takes that side's minimum score over its hits (0 if it has
    none). ``depth`` cuts each side first (None: all of it); ``k`` cuts the result (None: all).
    With ``normalize``, each side's scores are centred on the midpoint of their range and divided
    by the range, as pyserini does (a side whose hits all score the same gets 0).
    """
    s, d = _first_occurrences(sparse, depth), _first_occurrences(dense, depth)
    s_min, s_max = (min(s.values()), max(s.values())) if s else (0.0, 1.0)
    d_min, d_max = (min(d.values()), max(d.values())) if d else (0.0, 1.0)
    fused: dict[str, float] = {}
    for pid in s.keys() | d.keys():
        sparse_score, dense_score = s.get(pid, s_min), d.get(pid, d_min)
        if normalize:
            sparse_score = (sparse_score - (s_min + s_max) / 2) / (s_max - s_min) if s_max != s_min else 0.0
            dense_score = (dense_score - (d_min + d_max) / 2) / (d_max - d_min) if d_max != d_min else 0.0
        fused[pid] = alpha * sparse_score + dense_score  # pyserini's expression, same rounding
    return _ranked(fused, k)


def rrf_fuse(
    rankings: Sequence[Sequence[Hit]], *, k: int | None = None, rrf_k: float = DEFAULT_RRF_K, depth: int | None = None
) -> list[Hit]:
    """One query's reciprocal rank fusion: ``sum over rankings of 1 / (rrf_k + rank)``, rank 1-based.

    ``depth`` cuts each ranking first (None: all of it); ``k`` cuts the result (None: all).
    """
    terms: dict[str, list[float]] = {}
    for ranking in rankings:
        for rank, pid in enumerate(_first_occurrences(ranking, depth), start=1):
            terms.setdefault(pid, []).append(1.0 / (rrf_k + rank))
    return _ranked({pid: math.fsum(values) for pid, values in terms.items()}, k)


# --------------------------------------------------------------------------- components


@dataclass(frozen=True)
class Component:
    """A loaded component retriever and the name it was asked for by."""

    name: str
    retriever: Retriever

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "parameters": dict(self.retriever.parameters())}

    def search(self, owner: str, queries: Sequence[str], depth: int, context: RunContext) -> list[Sequence[Hit]]:
        rankings = list(self.retriever.search(queries, depth, context))
        if len(rankings) != len(queries):
            raise HarnessError(
                f"{owner}: component {self.name!r} returned {len(rankings)} rankings for {len(queries)} queries"
            )
        return rankings


def split_components(owner: str, argument: str | None, usage: str) -> list[str]:
    """The component names in ``A+B+...``; empty or repeated names are errors."""
    if not argument or not argument.strip():
        raise HarnessError(f"{owner}: give {usage}")
    names = [name.strip() for name in argument.split("+")]
    if any(not name for name in names):
        raise HarnessError(f"{owner}: empty retriever name in {argument!r}; give {usage}")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise HarnessError(
                f"{owner}: retriever {name!r} appears twice; fusing a retriever with itself adds nothing"
            )
        seen.add(name)
    return names


def load_component(owner: str, name: str) -> Component:
    """Load registered retriever ``name`` (``PREFIX:ARGUMENT`` too) with its default options."""
    from harness import registry

    try:
        loaded = registry.load("retrievers", name)
    except HarnessError as exc:
        raise HarnessError(f"{owner}: {exc}") from exc
    return Component(name, loaded.value)


def _load_all(owner: str, names: Sequence[str]) -> list[Component]:
    return [load_component(owner, name) for name in names]


# --------------------------------------------------------------------------- retrievers


def components_compute(components: Sequence[Component]) -> dict[str, Any]:
    """A fusion's ``compute`` block: ``components``, each component's name and what its
    retriever reports of itself (:class:`harness.api.ReportsCompute`; nothing for one that does
    not); the harness sums their bytes into the result's ``cost``."""
    out = []
    for component in components:
        report = getattr(component.retriever, "compute", None)
        facts = dict(report()) if callable(report) else {}
        out.append({"name": component.name, **facts})
    return {"components": out}


class HybridRetriever:
    """``dense + alpha * sparse`` over the union of each side's top ``depth`` (see the module doc)."""

    def __init__(self, owner: str, sparse: Component, dense: Component, *, alpha: float | None,
                 depth: int, normalize: bool):
        self.owner, self.sparse, self.dense = owner, sparse, dense
        self.explicit_alpha, self.depth, self.normalize = alpha, depth, normalize
        self.alpha: float | None = alpha
        #: Why ``alpha`` has its value ("option", or which tuned value applied).
        self.alpha_source = "option" if alpha is not None else "per suite, resolved at index()/search()"

    def _resolve_alpha(self, context: RunContext) -> float:
        if self.explicit_alpha is None:
            self.alpha, self.alpha_source = default_alpha(context.suite, self.dense.name)
        return self.alpha

    def parameters(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha if self.alpha is not None else "auto",
            "depth": self.depth,
            "normalize": self.normalize,
            "sparse": self.sparse.record(),
            "dense": self.dense.record(),
        }

    def compute(self) -> dict[str, Any]:
        """Each side's own ``compute`` facts (:func:`components_compute`)."""
        return components_compute([self.sparse, self.dense])

    def index(self, corpus: Corpus, context: RunContext) -> None:
        self._resolve_alpha(context)
        self.sparse.retriever.index(corpus, context)
        self.dense.retriever.index(corpus, context)

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        alpha = self._resolve_alpha(context)
        queries = list(queries)
        sparse = self.sparse.search(self.owner, queries, self.depth, context)
        dense = self.dense.search(self.owner, queries, self.depth, context)
        return [
            hybrid_fuse(s, d, alpha=alpha, k=k, depth=self.depth, normalize=self.normalize)
            for s, d in zip(sparse, dense)
        ]


class RRFRetriever:
    """Reciprocal rank fusion of two or more retrievers (see the module doc)."""

    def __init__(self, owner: str, components: Sequence[Component], *, rrf_k: float, depth: int):
        self.owner, self.components, self.rrf_k, self.depth = owner, list(components), rrf_k, depth

    def parameters(self) -> dict[str, Any]:
        return {
            "rrf_k": self.rrf_k,
            "depth": self.depth,
            "components": [c.record() for c in self.components],
        }

    def compute(self) -> dict[str, Any]:
        """Each component's own ``compute`` facts (:func:`components_compute`)."""
        return components_compute(self.components)

    def index(self, corpus: Corpus, context: RunContext) -> None:
        for component in self.components:
            component.retriever.index(corpus, context)

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        queries = list(queries)
        per_component = [c.search(self.owner, queries, self.depth, context) for c in self.components]
        return [
            rrf_fuse(rankings, k=k, rrf_k=self.rrf_k, depth=self.depth) for rankings in zip(*per_component)
        ]


# --------------------------------------------------------------------------- plugin

#: Each side's (component's) top ``depth`` hits are fused.
_DEPTH = positive_int(DEFAULT_DEPTH, max=MAX_K, help="hits taken from each side")

HYBRID_OPTIONS = Options({
    "alpha": non_negative_float("auto", literals=("auto",), help="weight of the sparse side; auto: per suite"),
    "depth": _DEPTH,
    "normalize": boolean(False, help="min-max normalise each side's scores first"),
})
RRF_OPTIONS = Options({
    "rrf_k": non_negative_float(DEFAULT_RRF_K, help="the constant k of 1 / (k + rank)"),
    "depth": _DEPTH,
})


def load_hybrid(*, argument: str | None = None, alpha: Any = "auto", depth: Any = DEFAULT_DEPTH,
                normalize: Any = False) -> HybridRetriever:
    owner = f"hybrid:{argument}" if argument else "hybrid"
    names = split_components(owner, argument, "hybrid:SPARSE+DENSE, e.g. hybrid:bm25+dpr-multi")
    if len(names) != 2:
        raise HarnessError(
            f"{owner}: hybrid fuses exactly 2 retrievers (SPARSE+DENSE), got {len(names)}; use rrf for more"
        )
    if names[0] in KNOWN_DENSE and names[1] in KNOWN_SPARSE:
        raise HarnessError(f"{owner}: the sparse retriever comes first: hybrid:{names[1]}+{names[0]}")
    resolved_alpha = None if alpha in (None, "auto") else float(alpha)  # values checked by HYBRID_OPTIONS
    sparse, dense = _load_all(owner, names)
    return HybridRetriever(owner, sparse, dense, alpha=resolved_alpha, depth=depth, normalize=normalize)


def load_rrf(*, argument: str | None = None, rrf_k: Any = DEFAULT_RRF_K, depth: Any = DEFAULT_DEPTH) -> RRFRetriever:
    owner = f"rrf:{argument}" if argument else "rrf"
    names = split_components(owner, argument, "rrf:A+B[+C...], e.g. rrf:bm25+dpr-multi")
    if len(names) < 2:
        raise HarnessError(f"{owner}: rrf fuses 2 or more retrievers, got {len(names)}")
    value = float(rrf_k)  # values checked by RRF_OPTIONS
    rrf_k = int(value) if value.is_integer() else value
    return RRFRetriever(owner, _load_all(owner, names), rrf_k=rrf_k, depth=depth)


def fused_meta(options: Any) -> Any:
    """A fusion's metadata: its components' (:func:`harness.api.combine`), found by name in the
    recorded parameters (``sparse``/``dense``, ``components``) or in the ``argument``."""
    from harness import registry
    from harness.api import combine, meta_of

    stages = [options[key] for key in ("sparse", "dense") if isinstance(options.get(key), dict)]
    if isinstance(options.get("components"), list):
        stages += [c for c in options["components"] if isinstance(c, dict)]
    if not stages and isinstance(options.get("argument"), str):
        stages = [{"name": name, "parameters": {}} for name in options["argument"].split("+")]
    if not stages:
        return None
    retrievers = registry.retrievers()
    return combine(
        meta_of(retrievers.get(stage["name"]).meta, stage.get("parameters") or {}) if stage.get("name") in retrievers else None
        for stage in stages
    )


@hookimpl
def register_retrievers(register):
    register(
        RetrieverSpec(
            name="hybrid",
            description=(
                "pyserini's sparse+dense hybrid: dense + alpha*sparse over the union of each side's "
                "top-depth, a missing side taking its minimum score; alpha per suite (Ma et al. 2021, "
                "arXiv:2104.05740)"
            ),
            load=load_hybrid,
            options=HYBRID_OPTIONS,
            meta=fused_meta,
            argument="SPARSE+DENSE",
        )
    )
    register(
        RetrieverSpec(
            name="rrf",
            description=(
                "reciprocal rank fusion (pyserini's): sum of 1/(rrf_k + rank) over the retrievers' top-depth "
                "(Cormack et al. 2009, SIGIR)"
            ),
            load=load_rrf,
            options=RRF_OPTIONS,
            meta=fused_meta,
            argument="A+B[+C...]",
        )
    )

"""Helpers for plugin authors' tests: a toy suite and retriever and re-ranker conformance checks.

>>> from harness.testing import check_retriever
>>> check_retriever(my_retriever_spec)             # doctest: +SKIP
RetrieverCheck(parameters={...}, rankings=[...], first_hit_ranks=[...], accuracy={1: 1.0, 5: 1.0})

:func:`check_retriever` loads a retriever, indexes a small corpus, searches it, and raises
``AssertionError`` with a message naming the problem when the retriever breaks the
:class:`harness.api.Retriever` contract. It checks the contract, not quality: the accuracy it
returns is for the author's own assertions. :func:`check_reranker` does the same for a
re-ranker (:class:`harness.api.Reranker`), over every passage of the corpus.

Only the standard library and :mod:`harness` are imported, so this module is cheap to import.
"""

from __future__ import annotations

import json
import math
import numbers
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.api import (
    Hit,
    InMemoryCorpus,
    Part,
    Passage,
    Question,
    Retriever,
    RetrieverSpec,
    RunContext,
    Suite,
)

_TOY_PASSAGES = (
    ("t1", "Apple", "The apple is a round fruit that grows on trees; many apples are red or green."),
    ("t2", "Banana", "The banana is a long yellow fruit that grows in bunches in warm countries."),
    ("t3", "Cherry", "A cherry is a small red stone fruit; cherry trees flower in spring."),
    ("t4", "Lemon", "The lemon is a sour yellow citrus fruit used for juice."),
    ("t5", "Potato", "The potato is a starchy tuber eaten boiled, baked or fried."),
    ("t6", "Carrot", "The carrot is an orange root vegetable rich in vitamin A."),
    ("t7", "Oak", "The oak is a large tree whose fruit is the acorn."),
    ("t8", "Salt", "Table salt is sodium chloride, a mineral used to season food."),
)

_TOY_QUESTIONS = (
    ("toy-1", "What colour is a banana?", ("yellow",)),
    ("toy-2", "What vegetable is orange and rich in vitamin A?", ("carrot",)),
    ("toy-3", "What is the fruit of the oak tree called?", ("acorn",)),
    ("toy-4", "What is table salt made of?", ("sodium chloride",)),
)


def toy_suite() -> Suite:
    """A tiny suite: 8 passages, 4 questions in one part, string matching.

    It has more passages than the default ``k`` of :func:`check_retriever`, so a retriever that
    ignores ``k`` is caught. A lexical retriever should answer every question at rank 0.
    """
    corpus = InMemoryCorpus("toy", (Passage(id=i, title=t, text=x) for i, t, x in _TOY_PASSAGES))
    questions = tuple(Question(id=i, text=t, answers=a) for i, t, a in _TOY_QUESTIONS)
    return Suite(
        name="toy",
        parts=(Part(name="toy", questions=questions),),
        corpus=corpus,
        match="string",
        default_k=(1, 5),
        synthetic=True,
        description="harness.testing toy suite",
    )


@dataclass(frozen=True)
class RetrieverCheck:
    """What :func:`check_retriever` saw from a retriever that passed."""

    #: ``retriever.parameters()`` as a dict.
    parameters: dict[str, Any]
    #: Each question's ranked passage ids.
    rankings: list[list[str]]
    #: Each question's first-hit rank (0-based), or None.
    first_hit_ranks: list[int | None]
    #: Top-1 and top-k accuracy on the suite.
    accuracy: dict[int, float]


def _fail(message: str) -> None:
    raise AssertionError(f"check_retriever: {message}")


def _load(retriever: str | RetrieverSpec | Retriever, options: Mapping[str, Any]) -> tuple[str, Retriever]:
    from harness.api import OptionError
    from harness.registry import check_options, registry, resolved_options

    argument = None
    if isinstance(retriever, str):
        entry = registry("retrievers").entry(retriever)
        if entry.spec.name != retriever:  # NAME:ARGUMENT
            argument = retriever.partition(":")[2]
        retriever = entry.spec
    if isinstance(retriever, RetrieverSpec):
        name = retriever.name
        try:
            json.dumps(dict(retriever.options), allow_nan=False)
        except (TypeError, ValueError) as exc:
            _fail(f"retriever {name!r}: RetrieverSpec.options is not JSON-serialisable: {exc}")
        try:
            options = check_options("retrievers", name, retriever.options, options)
        except OptionError as exc:
            _fail(f"{exc}: the retriever declares no such option in RetrieverSpec.options" if exc.unknown else str(exc))
        loaded = retriever.load(**resolved_options(retriever, options), **({"argument": argument} if argument is not None else {}))
    else:
        if options:
            raise TypeError("options can only be given with a RetrieverSpec or a retriever name")
        name, loaded = type(retriever).__name__, retriever
    if not isinstance(loaded, Retriever):
        _fail(f"{name!r} loaded a {type(loaded).__name__}, which lacks parameters(), index() or search()")
    return name, loaded


def check_retriever(
    retriever: str | RetrieverSpec | Retriever,
    *,
    suite: Suite | None = None,
    k: int = 5,
    cache_dir: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> RetrieverCheck:
    """Check that a retriever keeps the :class:`~harness.api.Retriever` contract.

    ``retriever`` is a registered retriever's name, a :class:`~harness.api.RetrieverSpec`
    (loaded with ``options``) or an already-loaded retriever. It indexes ``suite``'s corpus
    (default :func:`toy_suite`) with ``cache_dir`` as its cache (default: a temporary directory,
    removed afterwards), searches every question for ``k`` hits, and raises ``AssertionError`` when:

    - ``parameters()`` is not a mapping with string keys that ``json.dumps`` accepts (no NaN);
    - ``search`` does not return one ranking per query, or a ranking holds more than ``k`` hits;
    - a hit is not a :class:`~harness.api.Hit`, names a passage that is not in the corpus or
      one already in the same ranking, or has a score that is not a finite number;
    - a ranking's scores are not sorted best (highest) first;
    - (given a spec) ``RetrieverSpec.options`` is not JSON-serialisable, or ``options`` names an
      option the spec does not declare.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    suite = suite if suite is not None else toy_suite()
    name, model = _load(retriever, dict(options or {}))

    parameters = model.parameters()
    if not isinstance(parameters, Mapping):
        _fail(f"{name}.parameters() returned a {type(parameters).__name__}, not a mapping")
    if not all(isinstance(key, str) for key in parameters):
        _fail(f"{name}.parameters() has keys that are not strings: {list(parameters)!r}")
    try:
        json.dumps(dict(parameters), allow_nan=False)
    except (TypeError, ValueError) as exc:
        _fail(f"{name}.parameters() is not JSON-serialisable: {exc}")

    with tempfile.TemporaryDirectory(prefix="harness-check-") as tmp:
        context = RunContext(cache_dir=Path(cache_dir) if cache_dir is not None else Path(tmp), threads=1, progress=False)
        model.index(suite.corpus, context)
        queries = [q.text for q in suite.questions]
        results = model.search(queries, k, context)

    if not isinstance(results, Sequence) or len(results) != len(queries):
        got = len(results) if isinstance(results, Sequence) else type(results).__name__
        _fail(f"{name}.search() returned {got} rankings for {len(queries)} queries")
    rankings: list[list[str]] = []
    for query, ranking in zip(queries, results):
        where = f"{name}.search() for query {query!r}"
        if not isinstance(ranking, Sequence):
            _fail(f"{where}: ranking is a {type(ranking).__name__}, not a sequence of Hit")
        if len(ranking) > k:
            _fail(f"{where}: returned {len(ranking)} hits, more than k={k}")
        ids: list[str] = []
        previous = math.inf
        for position, hit in enumerate(ranking):
            if not isinstance(hit, Hit):
                _fail(f"{where}: hit {position} is a {type(hit).__name__}, not a harness.api.Hit")
            try:
                known = isinstance(hit.passage_id, str) and suite.corpus.get(hit.passage_id) is not None
            except KeyError:
                known = False
            if not known:
                _fail(f"{where}: hit {position} has unknown passage id {hit.passage_id!r}")
            if hit.passage_id in ids:
                _fail(f"{where}: passage id {hit.passage_id!r} appears twice")
            score = hit.score
            if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
                _fail(f"{where}: hit {position} has score {score!r}, not a finite number")
            if score > previous:
                _fail(
                    f"{where}: scores are not sorted best first "
                    f"(hit {position} scores {score!r} after {previous!r})"
                )
            previous = score
            ids.append(hit.passage_id)
        rankings.append(ids)

    from harness.scoring.ranks import first_hit_ranks, top_k_accuracy

    ranks = first_hit_ranks(suite.questions, rankings, lambda pid: suite.corpus.get(pid).text, mode=suite.match)
    return RetrieverCheck(
        parameters=dict(parameters),
        rankings=rankings,
        first_hit_ranks=ranks,
        accuracy={cut: top_k_accuracy(ranks, cut) for cut in sorted({1, k})},
    )


@dataclass(frozen=True)
class RerankerCheck:
    """What :func:`check_reranker` saw from a re-ranker that passed."""

    #: ``reranker.parameters()`` as a dict.
    parameters: dict[str, Any]
    #: Each question's passage ids after re-ranking (every corpus passage, best first).
    rankings: list[list[str]]


def check_reranker(
    reranker: str | Any,
    *,
    suite: Suite | None = None,
    cache_dir: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> RerankerCheck:
    """Check that a re-ranker keeps the :class:`~harness.api.Reranker` contract.

    ``reranker`` is a registered re-ranker's name (loaded with ``options``) or a loaded re-ranker.
    Every question of ``suite`` (default :func:`toy_suite`) gets all corpus passages as candidates,
    in corpus order; ``AssertionError`` is raised when ``parameters()`` is not a JSON-able mapping
    with string keys, or the answer breaks the contract: one ranking per question holding every
    candidate once as a :class:`~harness.api.Hit` with a finite score
    (:func:`harness.scoring.rerank.rerank_rankings` checks it as a run would).
    """
    from harness.errors import HarnessError
    from harness.scoring.rerank import rerank_rankings

    if isinstance(reranker, str):
        from harness.registry import load

        try:
            name, model = reranker, load("rerankers", reranker, dict(options or {})).value
        except HarnessError as exc:
            raise AssertionError(f"check_reranker: {exc}") from None
    else:
        if options:
            raise TypeError("options can only be given with a re-ranker name")
        name, model = type(reranker).__name__, reranker
    for method in ("parameters", "rerank"):
        if not callable(getattr(model, method, None)):
            raise AssertionError(f"check_reranker: {name!r} has no {method}() method")
    parameters = model.parameters()
    if not isinstance(parameters, Mapping) or not all(isinstance(key, str) for key in parameters):
        raise AssertionError(f"check_reranker: {name}.parameters() is not a mapping with string keys")
    try:
        json.dumps(dict(parameters), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"check_reranker: {name}.parameters() is not JSON-serialisable: {exc}") from None
    suite = suite if suite is not None else toy_suite()
    passages = list(suite.corpus)
    first = [Hit(passage_id=p.id, score=float(len(passages) - i)) for i, p in enumerate(passages)]
    with tempfile.TemporaryDirectory(prefix="harness-check-") as tmp:
        context = RunContext(cache_dir=Path(cache_dir) if cache_dir is not None else Path(tmp), threads=1, progress=False)
        try:
            reranked = rerank_rankings(
                model, [q.text for q in suite.questions], [q.id for q in suite.questions],
                [first] * len(suite.questions), len(passages), context, name=name, passage=suite.corpus.get,
            )
        except HarnessError as exc:
            raise AssertionError(f"check_reranker: {exc}") from None
    return RerankerCheck(parameters=dict(parameters), rankings=[[h.passage_id for h in r] for r in reranked])

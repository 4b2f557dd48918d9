"""A retriever asked for a question set's rankings: questions normalised as the references
expect, searched in batches with a progress bar, and every ranking checked
(:func:`harness.scoring.rankings.check_ranking`) before anything scores it.

The runner (:mod:`harness.evaluate`) and the data layer (distant supervision,
:func:`harness.data.training.suite_training_examples`) both retrieve through :func:`retrieve`;
:mod:`harness.evaluate` re-exports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.api import Corpus, Hit, Question, Retriever, RunContext
from harness.errors import HarnessError
from harness.scoring.rankings import check_ranking, corpus_has
from harness.util.progress import progress

#: Queries handed to a retriever per ``search`` call (progress is reported between batches), unless
#: the retriever asks for another number (:class:`harness.api.BatchesSearches`).
SEARCH_BATCH = 256


def search_batch(retriever: Retriever) -> int:
    """Questions per ``search`` call: the retriever's ``search_batch`` when it gives a positive
    integer, else :data:`SEARCH_BATCH`."""
    wanted = getattr(retriever, "search_batch", None)
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
        return wanted
    return SEARCH_BATCH


def normalize_question(text: str) -> str:
    """The only normalisation questions get in the references: ``’`` becomes ``'``."""
    return text.replace("\u2019", "'")


def retrieve(
    retriever: Retriever,
    questions: Sequence[Question],
    depth: int,
    context: RunContext,
    *,
    name: str = "?",
    corpus: Corpus | None = None,
    parts: Sequence[str] | None = None,
) -> list[list[Hit]]:
    """Each question's top-``depth`` hits, searched in batches with a progress bar. With
    ``parts`` (each question's part name), a retriever with ``search_parts``
    (:class:`~harness.api.PartAwareRetriever`) is told each question's part.

    Every ranking is checked (:func:`harness.scoring.rankings.check_ranking`): at most ``depth``
    :class:`Hit` records, no passage twice, finite scores best first, and, given ``corpus``, only
    its passages; a broken one is a one-line error naming retriever ``name`` and the question.
    """
    known = corpus_has(corpus) if corpus is not None else None
    source = f"retriever {name!r}"
    rankings: list[list[Hit]] = []
    queries = [normalize_question(q.text) for q in questions]
    with progress(total=len(queries), desc="search", unit="q", enabled=context.progress) as bar:
        start = 0
        while start < len(queries):
            size = search_batch(retriever)
            batch = queries[start : start + size]
            if parts is not None and callable(getattr(retriever, "search_parts", None)):
                hits = retriever.search_parts(batch, list(parts[start : start + size]), depth, context)
            else:
                hits = retriever.search(batch, depth, context)
            if not isinstance(hits, Sequence) or len(hits) != len(batch):
                got = len(hits) if isinstance(hits, Sequence) else type(hits).__name__
                raise HarnessError(f"{source} returned {got} rankings for {len(batch)} queries")
            for question, ranking in zip(questions[start : start + size], hits):
                ranking = list(ranking)
                for position, hit in enumerate(ranking):
                    if not isinstance(hit, Hit):
                        raise HarnessError(
                            f"{source}: question {question.id!r}: hit {position} is a {type(hit).__name__}, "
                            "not a harness.api.Hit"
                        )
                check_ranking(
                    [(h.passage_id, h.score) for h in ranking], question=question.id, source=source,
                    depth=depth, known=known,
                )
                rankings.append(ranking)
            bar.update(len(batch))
            start += len(batch)
    return rankings

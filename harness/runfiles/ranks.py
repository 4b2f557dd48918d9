"""A run's first-hit ranks by DPR's protocol: matched on the text the run carries when it carries
one (see :mod:`harness.runfiles.readers`), else on the suite's corpus; every ranking checked first."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from harness.api import Corpus, MatchMode, Question, Suite
from harness.errors import HarnessError, InputFileError
from harness.runfiles.columns import ColumnarRankings
from harness.runfiles.model import Run, RunHit, RunWarning
from harness.runfiles.readers import _gc_paused
from harness.scoring.ranks import ranks_by_part

#: Runs with at least this many (question, passage) pairs are scored in two processes when they
#: carry their texts and the machine has two cores (:func:`harness.scoring.ranks.first_hit_ranks`).
PARALLEL_PAIRS = 200_000


def check_aligned(run: Run, questions: Sequence[Question]) -> None:
    if list(run.rankings) != [q.id for q in questions]:
        raise ValueError("run is not aligned with these questions; read it with read_run(path, questions)")


def _warn(run: Run, n: int) -> None:
    source = f" {run.source}" if run.source else ""
    if run.missing:
        warnings.warn(
            f"run{source}: {len(run.missing)} of {n} questions are missing (counted as no hit; "
            f"first: {run.missing[0]!r})",
            RunWarning,
            stacklevel=3,
        )
    if run.answer_mismatches:
        warnings.warn(
            f"run{source}: {len(run.answer_mismatches)} questions' answers in the file differ from the suite's "
            f"(first: {run.answer_mismatches[0]!r}); scored with the suite's answers",
            RunWarning,
            stacklevel=3,
        )


def first_hit_ranks_for_run(
    run: Run, suite_questions: Sequence[Question], *, mode: MatchMode, corpus: Corpus | None = None
) -> list[int | None]:
    """First-hit rank of each question of ``suite_questions`` (the run must be aligned with them).

    A passage is matched on the text the run carries when it carries one (see the module notes),
    else on its text in ``corpus``. Warns (:class:`RunWarning`) about missing questions and
    answer mismatches.
    """
    check_aligned(run, suite_questions)
    _warn(run, len(suite_questions))
    with _gc_paused():
        return _first_hit_ranks_for_run(run, suite_questions, mode=mode, corpus=corpus)


def _first_hit_ranks_for_run(
    run: Run, suite_questions: Sequence[Question], *, mode: MatchMode, corpus: Corpus | None, processes: int | None = None
) -> list[int | None]:
    from harness.scoring.ranks import first_hit_ranks

    rankings = run.rankings
    columnar = isinstance(rankings, ColumnarRankings)
    if corpus is None:
        for question in suite_questions:
            for passage_id, text in _texts(rankings, question.id, columnar):
                if text is None:
                    raise HarnessError(
                        f"run{' ' + run.source if run.source else ''} carries no text for passage {passage_id!r} "
                        f"(question {question.id!r}) and no corpus was given to look it up"
                    )
    # Keys handed to first_hit_ranks, which looks each distinct key up once: "<id>" for the first
    # text a run carries for passage <id>, (<id>, n) for the n-th other one, ("c", <id>) for a
    # corpus passage. Rankings are generators, so keys are made only for the passages read (up to
    # each first hit), and a carried text (in a columnar run, the raw JSON string, decoded on
    # lookup) is compared (not hashed) with the texts already seen for its passage id.
    first: dict[str, Any] = {}
    others: dict[str, list[Any]] = {}

    def keys(pairs):
        for passage_id, text in pairs:
            if text is None:
                yield ("c", passage_id)
                continue
            known = first.get(passage_id)
            if known is None:
                first[passage_id] = text
            elif known is not text and known != text:
                seen = others.setdefault(passage_id, [])
                for n, other in enumerate(seen, start=1):
                    if other == text:
                        break
                else:
                    seen.append(text)
                    n = len(seen)
                yield (passage_id, n)
                continue
            yield passage_id

    keyed = [keys(_texts(rankings, question.id, columnar)) for question in suite_questions]
    if processes is None:
        # Two processes pay off for large runs that carry their texts (no corpus store to share).
        processes = 1
        if sum(_lengths(rankings, columnar)) >= PARALLEL_PAIRS and all(
            text is not None for question in suite_questions for _pid, text in _texts(rankings, question.id, columnar)
        ):
            processes = min(2, os.cpu_count() or 1)
    # A columnar run's texts are raw JSON until decoded (questions already built hold strings).
    matched = rankings.matched_text if columnar else None

    def lookup(key) -> str:
        if type(key) is str:
            text = first[key]
        elif type(key[1]) is int:
            text = others[key[0]][key[1] - 1]
        else:
            try:
                return corpus.get(key[1]).text  # type: ignore[union-attr]
            except KeyError:
                raise HarnessError(
                    f"run{' ' + run.source if run.source else ''} names passage {key[1]!r}, "
                    f"which is not in corpus {corpus.name!r}"  # type: ignore[union-attr]
                ) from None
        return text if type(text) is str else matched(text)  # type: ignore[misc]

    return first_hit_ranks(suite_questions, keyed, lookup, mode=mode, processes=processes)


def _texts(rankings, qid: str, columnar: bool):
    """``(passage id, text or None)`` of a question's hits; for a columnar run whose hits are not
    built, the text as stored (see :meth:`ColumnarRankings.matched_text`)."""
    columns = rankings.columns(qid) if columnar else None
    if columns is not None:
        return zip(columns.ids, columns.texts)
    return ((hit.passage_id, hit.text) for hit in rankings[qid])


def _columns(rankings, qid: str, columnar: bool) -> tuple[list[str], list]:
    """A question's passage ids and texts (as :func:`_texts` gives them), as two lists."""
    columns = rankings.columns(qid) if columnar else None
    if columns is not None:
        return columns.ids, columns.texts
    hits = rankings[qid]
    return [hit.passage_id for hit in hits], [hit.text for hit in hits]


def _lengths(rankings, columnar: bool) -> list[int]:
    return rankings.lengths() if columnar else [len(hits) for hits in rankings.values()]


def run_depth(run: Run) -> int:
    """The largest number of hits any question of ``run`` has (0 for an empty run)."""
    return max(_lengths(run.rankings, isinstance(run.rankings, ColumnarRankings)), default=0)


def score_run(suite: Suite, run: Run) -> dict[str, dict[str, int | None]]:
    """First-hit ranks per part and question id (as :func:`harness.evaluate.score_suite`), after
    checking every ranking (:func:`harness.scoring.rankings.check_ranking`; passages the run
    carries no text for must all be in the suite's corpus, not only those above the first hit)."""
    from harness.runfiles.stream import unknown_message, unknown_passage
    from harness.scoring.rankings import check_columns, check_ranking, corpus_has

    source = run.source or "run"
    has = corpus_has(suite.corpus)
    rankings = run.rankings
    columnar = isinstance(rankings, ColumnarRankings)
    for qid in rankings:
        columns = rankings.columns(qid) if columnar else None
        try:
            if columns is not None:
                check_columns(columns.ids, columns.scores, question=qid, source=source)
            else:
                hits = rankings[qid]
                check_ranking([(h.passage_id, h.score) for h in hits], question=qid, source=source)
        except HarnessError as exc:
            where = run.lines.get(qid) if run.lines is not None else None
            if where is None:
                raise
            raise InputFileError(where[0], str(exc).removeprefix(f"{source}: "), line=where[1]) from None
        ids, texts = _columns(rankings, qid, columnar)
        position = unknown_passage(ids, texts, has)
        if position is not None:
            where = run.lines.get(qid) if run.lines is not None else None
            file, line = where if where is not None else (source, None)
            problem = unknown_message(position, ids[position], suite.corpus.name)
            raise InputFileError(file, f"question {qid!r}: {problem}", line=line)
    ranks = first_hit_ranks_for_run(run, suite.questions, mode=suite.match, corpus=suite.corpus)
    return ranks_by_part(suite.parts, ranks)


def flag_disagreements(
    run: Run, suite_questions: Sequence[Question], *, mode: MatchMode, corpus: Corpus | None = None
) -> list[tuple[str, int, str, bool, bool]]:
    """Where a file's ``has_answer`` flags differ from the harness's matcher on the same text.

    Returns ``(question id, 0-based position, passage id, file flag, harness flag)`` for every
    flagged passage that disagrees. Pyserini's evaluator trusts the flags, so any row here is a
    place where its numbers and the harness's can differ.
    """
    from harness.scoring.matching import AnswerMatcher, prepare

    check_aligned(run, suite_questions)
    prepared: dict[str, str] = {}
    out = []
    for question in suite_questions:
        matcher = AnswerMatcher(question.answers, mode=mode)
        for position, hit in enumerate(run.rankings[question.id]):
            if hit.has_answer is None:
                continue
            text = hit.text if hit.text is not None else corpus_passage(corpus, hit.passage_id, run).text
            key = text
            if key not in prepared:
                prepared[key] = prepare(text, mode)
            ours = matcher.matches_prepared(prepared[key])
            if ours != hit.has_answer:
                out.append((question.id, position, hit.passage_id, hit.has_answer, ours))
    return out


def corpus_passage(corpus: Corpus | None, passage_id: str, run: Run):
    """The passage ``passage_id`` of ``corpus``, for runs that carry no text."""
    if corpus is None:
        raise HarnessError(f"passage {passage_id!r}: no text in the run and no corpus given")
    try:
        return corpus.get(passage_id)
    except KeyError:
        raise HarnessError(f"passage {passage_id!r} is not in corpus {corpus.name!r}") from None


__all__ = ["check_aligned", "corpus_passage", "first_hit_ranks_for_run", "flag_disagreements", "run_depth", "score_run"]

"""From rankings to first-hit ranks to top-k accuracy (PROTOCOL section 1).

A question's first-hit rank is the 0-based position of the first retrieved passage whose text
contains an answer (:mod:`harness.scoring.matching`), or ``None``. Every number the harness reports is
derived from these ranks.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from harness.api import FirstHitRanks, MatchMode, Part, Question

#: Looks a passage's text up by id (the text only: titles are never matched).
TextLookup = Callable[[str], str]


def first_hit_ranks(
    questions: Sequence[Question],
    rankings: Sequence[Iterable[str]],
    passage_text: TextLookup,
    *,
    mode: MatchMode,
    processes: int = 1,
) -> list[int | None]:
    """The first-hit rank of each question, given its ranked passage ids.

    ``processes > 1`` (Linux and other systems with ``fork``) splits the questions into that many
    contiguous chunks, scores all but the first in forked child processes (which inherit the
    inputs, so nothing is sent to them) and the first here, and joins the ranks in question
    order: the same ranks as one process, and the same error (the first in question order) if a
    lookup fails. Worth it only for large runs whose texts need no locks or open files to look up.

    Each distinct passage is looked up at most once, and a question's ranking is read only up to
    its first hit. In string mode a passage is first screened (:func:`~harness.scoring.matching.screen`,
    an exact pre-filter: lowercase substring tests of the answers' tokens) and tokenised only
    when some answer may match it, so scoring costs about one lowercasing per distinct passage
    read, a few substring searches per (question, passage) checked, and one tokenisation per
    passage that passes a screen.
    """
    if len(questions) != len(rankings):
        raise ValueError(f"{len(questions)} questions but {len(rankings)} rankings")
    processes = min(processes, len(questions))
    if processes > 1 and "fork" in multiprocessing.get_all_start_methods():
        return _forked(questions, rankings, passage_text, mode, processes)
    return _first_hit_ranks(questions, rankings, passage_text, mode)


def _forked(questions, rankings, passage_text, mode, processes) -> list[int | None]:
    bounds = [len(questions) * i // processes for i in range(processes + 1)]
    children = []
    for i in range(1, processes):
        receive, send = multiprocessing.Pipe(duplex=False)
        pid = os.fork()
        if pid == 0:  # child: score chunk i, send (ranks, error) back, exit without cleanup
            code = 0
            try:
                receive.close()
                chunk = slice(bounds[i], bounds[i + 1])
                try:
                    send.send((_first_hit_ranks(questions[chunk], rankings[chunk], passage_text, mode), None))
                except Exception as exc:  # handed to the parent, which raises it in question order
                    send.send((None, exc))
                send.close()
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        send.close()
        children.append((pid, receive))
    try:
        ranks = _first_hit_ranks(questions[: bounds[1]], rankings[: bounds[1]], passage_text, mode)
        for pid, receive in children:
            try:
                part, error = receive.recv()
            except EOFError:
                raise RuntimeError("a scoring process died without a result") from None
            if error is not None:
                raise error
            ranks.extend(part)
        return ranks
    finally:
        for pid, receive in children:
            receive.close()
            os.waitpid(pid, 0)


def _first_hit_ranks(questions, rankings, passage_text, mode) -> list[int | None]:
    from harness.scoring.matching import AnswerMatcher, prepare, screen  # imports `regex`: not at start-up

    texts: dict[str, str] = {}
    screened: dict[str, str] = {}
    prepared: dict[str, str] = {}
    ranks: list[int | None] = []
    use_screen = mode == "string"
    for question, ranking in zip(questions, rankings):
        matcher = AnswerMatcher(question.answers, mode=mode)
        rank = None
        for position, passage_id in enumerate(ranking):
            if use_screen:
                folded = screened.get(passage_id)
                if folded is None:
                    text = texts[passage_id] = passage_text(passage_id)
                    folded = screened[passage_id] = screen(text)
                if not matcher.may_match(folded):
                    continue
            ready = prepared.get(passage_id)
            if ready is None:
                text = texts.get(passage_id)
                if text is None:
                    text = texts[passage_id] = passage_text(passage_id)
                ready = prepared[passage_id] = prepare(text, mode)
            if matcher.matches_prepared(ready):
                rank = position
                break
        ranks.append(rank)
    return ranks


def ranks_by_part(parts: Sequence[Part], ranks: Sequence[int | None]) -> dict[str, dict[str, int | None]]:
    """Split ranks aligned with all questions, part by part, into ``{part: {question id: rank}}``."""
    by_part: dict[str, dict[str, int | None]] = {}
    position = 0
    for part in parts:
        by_part[part.name] = {q.id: ranks[position + i] for i, q in enumerate(part.questions)}
        position += len(part.questions)
    if position != len(ranks):
        raise ValueError(f"{len(ranks)} ranks for {position} questions")
    return by_part


def top_k_accuracy(ranks: FirstHitRanks, k: int) -> float:
    """Fraction of questions whose first-hit rank is below ``k``: ``|{q : rank(q) < k}| / |Q|``."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r < k) / len(ranks)


def macro_average(values: Mapping[str, float]) -> float:
    """Unweighted mean over a suite's parts (EntityQuestions' average over its relations)."""
    if not values:
        raise ValueError("no parts to average")
    return sum(values.values()) / len(values)

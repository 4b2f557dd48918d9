"""Which results to show: the newest result of each suite, question set and configuration, and
the question set a result was made on. The leaderboard, ``harness compare`` and ``harness plot``
choose their results with these.

Results of one configuration are those with one :func:`~harness.results.schema.config_digest`;
the newest is the one with the latest recorded time (``created``). Two such files recorded at the
same time with different contents, or one without a readable time, are refused with an error
naming both (:func:`pick_newest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from harness.errors import HarnessError
from harness.results.report import one_line
from harness.results.schema import Result


def question_set(result: Result) -> str:
    """The fingerprint of the questions ``result`` was made on."""
    return result.questions_fingerprint


def created_at(result: Result) -> datetime | None:
    """When ``result`` was recorded (its ``created``, ISO 8601; without an offset: UTC), or None
    when that is not a readable time."""
    try:
        moment = datetime.fromisoformat(result.created)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _file(result: Result) -> str:
    return one_line(result.path) if result.path is not None else f"a result of {one_line(result.label)}"


def pick_newest(group: Sequence[Result]) -> Result:
    """The newest of results of one configuration, by their recorded time (``created``); ties
    between identical files go to the last file name. Two files recorded at the same time with
    different contents, or a file whose time is not readable, are an error naming both: which
    one is newer cannot be told."""
    if len(group) == 1:
        return group[0]
    times = [(created_at(r), r) for r in group]
    for moment, r in times:
        if moment is None:
            other = next(x for x in group if x is not r)
            raise HarnessError(
                f"{_file(r)} and {_file(other)} hold results of one configuration ({one_line(r.label)} on "
                f"{one_line(r.suite)}) and 'created' {one_line(r.data['created'])!r} is not a time: which is newer "
                f"cannot be told; remove one"
            )
    ordered = sorted(times, key=lambda item: (item[0], str(item[1].path or "")))
    moment, winner = ordered[-1]
    for other_moment, other in ordered[:-1]:
        if other_moment == moment and other.data != winner.data:
            raise HarnessError(
                f"{_file(other)} and {_file(winner)} hold different results of one configuration "
                f"({one_line(winner.label)} on {one_line(winner.suite)}) recorded at the same time "
                f"({one_line(winner.data['created'])}): which is newer cannot be told; remove one"
            )
    return winner


def newest(results: Sequence[Result]) -> tuple[list[Result], list[tuple[Result, Result]]]:
    """The newest result of each suite, question set and configuration (:func:`pick_newest`),
    and each result left out with the one that supersedes it."""
    groups: dict[tuple[str, str, str], list[Result]] = {}
    for r in sorted(results, key=lambda r: (r.created, str(r.path or ""))):
        groups.setdefault((r.suite, question_set(r), r.config_key()), []).append(r)
    chosen: list[Result] = []
    superseded: list[tuple[Result, Result]] = []
    for group in groups.values():
        winner = pick_newest(group)
        chosen.append(winner)
        superseded += [(r, winner) for r in group if r is not winner]
    return chosen, superseded


def latest(results: Sequence[Result]) -> list[Result]:
    """The newest result of each suite, question set and configuration (:func:`newest`)."""
    return newest(results)[0]

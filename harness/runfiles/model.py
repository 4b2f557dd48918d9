"""The run model: a run aligned with a suite's questions (:class:`Run`), each question's ranked
passages (:class:`RunHit`), and the warning a run that scores but is not quite what its author may
expect raises (:class:`RunWarning`). Every reading strategy (:mod:`harness.runfiles.strategy`)
gives a :class:`Run`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.api import Hit, Question

#: The prefix DPR puts before Wikipedia passage ids; readers remove it.
WIKI_PREFIX = "wiki:"


class RunWarning(UserWarning):
    """A run that can be scored but not quite as the file's author may expect."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunHit:
    """One ranked passage of a run; ``title``/``text``/``has_answer`` only when the file carries them.

    ``text`` is the text the reference evaluator of the file's format matches against (for
    pyserini's ``title\\ntext`` that is the second line, see :mod:`harness.runfiles.formats.pyserini_json`).
    """

    passage_id: str
    score: float
    title: str | None = None
    text: str | None = None
    has_answer: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Run:
    """A run aligned with a suite's questions.

    ``rankings`` has one entry per suite question, keyed by question id in suite order, each the
    question's passages best first (empty for a question the file does not have).
    """

    rankings: Mapping[str, tuple[RunHit, ...]]
    #: Suite question ids the file has no entry for (scored as no hit).
    missing: tuple[str, ...] = ()
    #: Suite question ids whose answers in the file differ from the suite's.
    answer_mismatches: tuple[str, ...] = ()
    format: str | None = None
    source: str | None = None
    #: Where each suite question's entry starts, ``{question id: (file, line)}``, where known
    #: (read when a problem with a question's ranking is reported).
    lines: Mapping[str, tuple[str, int]] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_rankings(
        cls, questions: Sequence[Question], rankings: Sequence[Iterable[Hit | RunHit | tuple[str, float]]]
    ) -> Run:
        """A run from in-memory rankings aligned with ``questions`` (hits best first)."""
        if len(questions) != len(rankings):
            raise ValueError(f"{len(questions)} questions but {len(rankings)} rankings")
        out: dict[str, tuple[RunHit, ...]] = {}
        for question, ranking in zip(questions, rankings):
            hits = []
            for hit in ranking:
                if isinstance(hit, RunHit):
                    hits.append(hit)
                elif isinstance(hit, Hit):
                    hits.append(RunHit(passage_id=hit.passage_id, score=float(hit.score)))
                else:
                    passage_id, score = hit
                    hits.append(RunHit(passage_id=str(passage_id), score=float(score)))
            out[question.id] = tuple(hits)
        return cls(rankings=out)

    def passage_ids(self) -> list[list[str]]:
        """Each question's ranked passage ids, in question order."""
        return [[h.passage_id for h in hits] for hits in self.rankings.values()]


__all__ = ["WIKI_PREFIX", "Run", "RunHit", "RunWarning"]

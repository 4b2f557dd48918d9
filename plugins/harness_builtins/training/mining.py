"""The ``retriever`` miner: hard negatives retrieved from the training corpus by any named retriever
(its spec: :mod:`harness_builtins.training.parts.miners.retriever`).

``RetrieverMiner(retriever="bm25")`` is DPR's BM25 negatives; with a dense retriever and its
checkpoint (``RetrieverMiner("dense", {"model": DIR})``) it is ANCE-style dense negatives. For each
example it retrieves the question's top ``depth`` passages and replaces the example's hard
negatives with the ``negatives`` best-ranked ones that contain no answer in title or text and are
not one of the example's positives: the answer-aware rule of
:func:`harness.data.training.hard_negatives`, shared with ``harness data make-training``. Positives
and random negatives are kept as they are. An example for which fewer passages qualify gets fewer
hard negatives (possibly none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness import registry
from harness.api import Corpus, Question, RunContext, TrainingExample
from harness.data.training import AnswerCheck, hard_negatives
from harness.errors import HarnessError
from harness.evaluate import retrieve
from harness.util.progress import task

from harness_builtins.training.parts.miners.retriever import SPEC


class RetrieverMiner:
    """The miner contract ``(examples, corpus, context) -> list[TrainingExample]`` over a named
    retriever (loaded through the registry, with ``options``, at each call: a checkpoint folder
    rewritten between calls is read afresh). ``match`` is how answers are matched (``regex`` for
    CuratedTREC-style answer patterns)."""

    def __init__(
        self,
        retriever: str = "bm25",
        options: Mapping[str, Any] | None = None,
        negatives: int = 1,
        depth: int = 100,
        match: str = "string",
    ):
        given = {"retriever": retriever, "options": options, "negatives": negatives, "depth": depth, "match": match}
        checked = SPEC.options.check(given, where="negative miner 'retriever'")  # an OptionError is a ValueError
        retriever, options, negatives, depth = checked["retriever"], checked["options"], checked["negatives"], checked["depth"]
        if negatives > depth:
            raise ValueError(f"negatives ({negatives}) cannot exceed depth ({depth})")
        self.retriever = retriever
        self.options = dict(options or {})
        self.negatives = negatives
        self.depth = depth
        self.match = match
        registry.resolve("retrievers", retriever, self.options)  # a wrong name or option fails now

    def parameters(self) -> dict[str, Any]:
        """The settings, for logs and checkpoints' training records."""
        return {"retriever": self.retriever, "options": dict(self.options), "negatives": self.negatives,
                "depth": self.depth, "match": self.match}

    def __call__(self, examples: Sequence[TrainingExample], corpus: Corpus, context: RunContext) -> list[TrainingExample]:
        examples = list(examples)
        if not examples:
            return []
        label = "BM25" if self.retriever == "bm25" else self.retriever
        with task(f"mining {label} negatives ({len(examples):,} question{'s' * (len(examples) != 1)}, top {self.depth} of {corpus.name})",
                  enabled=context.progress):
            model = registry.load("retrievers", self.retriever, self.options).value
            model.index(corpus, context)
            questions = [
                Question(id=str(i), text=example.question, answers=tuple(example.answers))
                for i, example in enumerate(examples)
            ]
            rankings = retrieve(model, questions, self.depth, context, name=self.retriever, corpus=corpus)
        out = []
        for example, ranking in zip(examples, rankings):
            passages = (_get(corpus, hit.passage_id, self.retriever) for hit in ranking)
            mined = hard_negatives(
                passages, AnswerCheck(example.answers, match=self.match), count=self.negatives,
                exclude=example.positives,
            )
            out.append(replace(example, hard_negatives=mined))
        return out


def _get(corpus: Corpus, passage_id: str, retriever: str):
    try:
        return corpus.get(passage_id)
    except KeyError:
        raise HarnessError(f"retriever {retriever!r} returned passage {passage_id!r}, not in corpus {corpus.name!r}") from None

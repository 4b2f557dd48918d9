"""UPR: re-rank passages by a sequence-to-sequence model's likelihood of the question given each
passage (Sachan et al. 2022, "Improving Passage Retrieval with Zero-Shot Question Generation"; the
teacher of ART).

By default exactly as UPR's code (branch ``main`` of DevSinghSachan/unsupervised-passage-reranking;
the lines are quoted in :mod:`harness_builtins.common.seq2seq`): the encoder reads ``Passage:
{title} {text}. Please write a question based on this passage.`` (``upr.py`` joins ``"Passage: "``
and the title with a space, so two spaces follow the colon; T5's tokenizers collapse them), at
most 512 tokens, truncated at the end; the decoder is scored on ``Question: {question}`` (at most
128 tokens), with a ``?`` added for NQ and EfficientQA questions only (``question_mark: auto``,
UPR's ``utils/openqa_dataset.py``); a passage's score is the sum of the target tokens'
log-probabilities (minus the summed negative log-likelihood; every candidate shares the target,
so this ranks like the mean). Any Hugging Face sequence-to-sequence model works, by hub id or
directory (T5 lm-adapt, T0, Flan-T5).

Other variants are options: ``-R question_mark=true`` adds ``?`` on every suite, ``false`` on
none; the templates ``-R passage_prompt=...`` and ``-R question_target=...`` (ART's prompt is
``Passage: {title} {text} . Please write a question based on this passage.``; this harness's
earlier default, ``-R passage_prompt="Passage: {title} {text}. Please write a question based on
this passage." -R question_mark=true``; ``-R question_target={question}`` scores the bare
question). Templates and the question mark are part of the recorded parameters and of the cache
key.

``question_mark: auto`` follows the suite being evaluated: the re-ranker reads its name from the
run context (``RunContext.suite``, which ``harness run`` and ``harness score`` set) when it
re-ranks; :meth:`UprReranker.score` and :meth:`UprReranker.score_each` take it as ``suite=``
(none: no ``?``). Once resolved, the recorded ``question_mark`` is the value used (true or false).

The scorer is :func:`harness_builtins.common.seq2seq.question_log_likelihoods` (shared with the
ART trainer's teacher) and, over several model replicas, :func:`~harness_builtins.common.seq2seq.score_questions`.

:class:`UprReranker` is the ``upr`` re-ranker: scores are cached on disk per configuration
(:mod:`~harness_builtins.rerank.cache`), and the model is loaded only when a score is missing.
Its ``device`` option: ``auto`` (every GPU torch sees, one replica each, else the CPU), ``cuda``
(every GPU), ``cpu`` or ``cuda:N`` (that device alone), or a list (``cuda:0,cuda:2``, one replica
per entry). Its recorded parameters include the precision its logits are computed in
(``precision``: bf16 on GPU, fp32 on CPU unless set); its compute block, the device kind and the
number of replicas.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from harness.api import Hit
from harness.errors import HarnessError
from harness.util.models import ModelRef

from harness_builtins.common.devices import default_batch_size, device_kind, resolve_devices, resolve_precision
from harness_builtins.common.seq2seq import (
    UPR_PASSAGE_PROMPT,
    UPR_QUESTION_TARGET,
    load_replicas,
    reference_question_mark,
    score_questions,
)

class UprReranker:
    """The ``upr`` re-ranker (options: see ``harness list rerankers`` and the plugin's docs)."""

    def __init__(
        self,
        *,
        model: Any,
        revision: str | None = None,
        precision: str = "auto",
        max_passage_length: int = 512,
        max_question_length: int = 128,
        question_mark: bool | str = "auto",
        passage_prompt: str = UPR_PASSAGE_PROMPT,
        question_target: str = UPR_QUESTION_TARGET,
        cache: bool = True,
        batch_size: int | None = None,
        device: Any = "auto",
    ):
        self.ref = ModelRef(model, revision)
        #: One model replica per entry (``cuda:0`` .. ``cuda:N-1``, or ``cpu``).
        self.devices = resolve_devices(device)
        self.device = self.devices[0]
        self.precision = resolve_precision(precision, self.device)
        self.batch_size = default_batch_size(batch_size, self.device)
        # the values are checked by their declarations (the plugin's UPR_OPTIONS) when loaded by name
        self.max_passage_length, self.max_question_length = max_passage_length, max_question_length
        #: The option as given: ``auto`` (UPR's rule by suite), true or false.
        self.question_mark_option = question_mark
        #: The question mark used by the last re-ranking (``None`` until ``auto`` met a suite).
        self.question_mark: bool | None = question_mark if isinstance(question_mark, bool) else None
        self.passage_prompt, self.question_target = passage_prompt, question_target
        self.use_cache = cache
        self._model = None
        self._models: list[Any] = []
        self._tokenizer = None
        self._caches: dict[tuple[Path, bool], Any] = {}
        #: (pairs scored by the model, pairs read from the cache) so far.
        self.counts = [0, 0]

    def question_mark_for(self, suite: str | None) -> bool:
        """Whether questions of ``suite`` get a final ``?``: the option when true or false; with
        ``auto``, UPR's rule (:func:`~harness_builtins.common.seq2seq.reference_question_mark`:
        NQ and EfficientQA suites only; no suite, none)."""
        if isinstance(self.question_mark_option, bool):
            return self.question_mark_option
        return reference_question_mark(suite)

    def parameters(self) -> dict[str, Any]:
        """The recorded settings: the scoring configuration and the precision the logits are
        computed in (the log-softmax is float32 in every precision). Where they ran is in
        :meth:`compute`: it does not change a score. ``question_mark`` is the value used once the
        re-ranker has run (``auto`` before it met a suite)."""
        return {
            "model": self.ref.describe(),
            "precision": self.precision,
            "passage_prompt": self.passage_prompt,
            "question_target": self.question_target,
            "question_mark": self.question_mark if self.question_mark is not None else self.question_mark_option,
            "max_passage_length": self.max_passage_length,
            "max_question_length": self.max_question_length,
        }

    def compute(self) -> dict[str, Any]:
        """How the scores were computed (the result's ``compute`` block): device kind, replicas
        and logit precision."""
        return {"score_device": device_kind(self.device), "score_devices": len(self.devices),
                "score_precision": self.precision}

    def cache_config(self, question_mark: bool | None = None) -> dict[str, Any]:
        """Everything a score depends on, with ``question_mark`` as used (default: the option's
        value without a suite); the disk cache is keyed by it."""
        return {
            "scorer": "upr/1",
            "model": self.ref.identity(),
            "precision": self.precision,
            "passage_prompt": self.passage_prompt,
            "question_target": self.question_target,
            "question_mark": self.question_mark_for(None) if question_mark is None else question_mark,
            "max_passage_length": self.max_passage_length,
            "max_question_length": self.max_question_length,
        }

    def _loaded(self):
        if self._model is None:
            self._models, self._tokenizer = load_replicas(self.ref, self.devices, self.precision)
            self._model = self._models[0]
        return self._models, self._tokenizer

    def _cache(self, context, question_mark: bool):
        from harness_builtins.rerank.cache import ScoreCache

        directory = Path(context.cache_dir) / "rerank" / "upr"
        if (directory, question_mark) not in self._caches:
            self._caches[directory, question_mark] = ScoreCache(directory, self.cache_config(question_mark))
        return self._caches[directory, question_mark]

    def score_each(
        self, items: Sequence[tuple[str, Sequence[tuple[str, str]]]], *, suite: str | None = None,
    ) -> Iterator[list[float]]:
        """Yields the scores of each ``(question, passages)`` of ``items`` (``(title, text)``
        passages) in turn, by the model on every device (no cache): :func:`score_questions`;
        ``suite`` decides the question mark under ``question_mark: auto``."""
        if not items:
            return
        models, tokenizer = self._loaded()
        self.counts[0] += sum(len(passages) for _, passages in items)
        yield from score_questions(
            models, tokenizer, items, batch_size=self.batch_size,
            max_passage_length=self.max_passage_length, max_question_length=self.max_question_length,
            question_mark=self.question_mark_for(suite), passage_template=self.passage_prompt,
            target_template=self.question_target,
        )

    def score(self, question: str, passages: Sequence[tuple[str, str]], *, suite: str | None = None) -> list[float]:
        """Scores of ``(title, text)`` passages for ``question``, by the model (no cache)."""
        if not passages:
            self._loaded()
            return []
        with closing(self.score_each([(question, passages)], suite=suite)) as scored:
            return next(scored)

    def rerank(self, questions, candidates, context):
        from harness_builtins.rerank.cache import passage_digest

        suite = getattr(context, "suite", None)
        self.question_mark = question_mark = self.question_mark_for(suite)
        cache = self._cache(context, question_mark) if self.use_cache else None
        keys = [[(c.passage_id, passage_digest(c.passage.title, c.passage.text)) for c in cands] for cands in candidates]
        known = [cache.get(question, ks) if cache is not None else {} for question, ks in zip(questions, keys)]
        todo = [[i for i, key in enumerate(ks) if key not in found] for ks, found in zip(keys, known)]
        for ks, missing in zip(keys, todo):
            self.counts[1] += len(ks) - len(missing)
        pending = [j for j, missing in enumerate(todo) if missing]
        items = [(questions[j], [(candidates[j][i].passage.title, candidates[j][i].passage.text) for i in todo[j]])
                 for j in pending]
        # the questions' batches are scored together (over every device); each question's scores
        # are checked and committed to the cache as soon as they are all done
        with closing(self.score_each(items, suite=suite)) as scored:
            for j, new in zip(pending, scored):
                question, cands = questions[j], candidates[j]
                bad = next((cands[i].passage_id for i, s in zip(todo[j], new) if not math.isfinite(s)), None)
                if bad is not None:
                    raise HarnessError(
                        f"upr: question {question!r}, passage {bad!r}: the model gave a non-finite likelihood "
                        f"(precision {self.precision}; T5 overflows in fp16, try -R precision=bf16 or fp32)"
                    )
                rows = [(keys[j][i][0], keys[j][i][1], s) for i, s in zip(todo[j], new)]
                if cache is not None:
                    cache.put(question, rows)
                known[j].update({(pid, digest): s for pid, digest, s in rows})
        return [[Hit(passage_id=c.passage_id, score=found[key]) for c, key in zip(cands, ks)]
                for cands, ks, found in zip(candidates, keys, known)]

"""UPR: re-rank passages by a sequence-to-sequence model's likelihood of the question given each
passage (Sachan et al. 2022, "Improving Passage Retrieval with Zero-Shot Question Generation"; the
teacher of ART).

As published: the encoder reads ``Passage: {title} {text}. Please write a question based on this
passage.`` (at most 512 tokens, truncated at the end), the decoder is scored on ``Question:
{question}`` (at most 128 tokens; a question without a final ``?`` gets one, as UPR does for NQ),
and a passage's score is the sum of the target tokens' log-probabilities (minus the summed
negative log-likelihood; every candidate shares the target, so this ranks like the mean). Any
Hugging Face sequence-to-sequence model works, by hub id or directory (T5 lm-adapt, T0, Flan-T5).
Both templates are options (``-R passage_prompt=...``, ``-R question_target=...``): UPR's public
code scores the bare question (``-R question_target={question}``), and the ``rerankers`` library
also drops the title; the templates are part of the recorded parameters and of the cache key.

:func:`question_log_likelihoods` is the public scorer (the ART trainer's teacher uses it): the
question is tokenised once, the passages are scored in batches sorted by length (little padding),
under ``torch.inference_mode``, with the model in bf16 on GPU by default; the log-softmax is
always taken in float32. Its scores equal a one-pair-at-a-time loop over the model's logits (up
to float rounding across batch shapes).

:class:`UprReranker` is the ``upr`` re-ranker: scores are cached on disk per configuration
(:mod:`~harness_builtins.rerank.cache`), and the model is loaded only when a score is missing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.api import Hit
from harness.errors import HarnessError

from harness_builtins.rerank.models import (
    ModelRef,
    default_batch_size,
    positive_int,
    resolve_device,
    resolve_precision,
    torch_dtype,
)

#: The encoder input: a passage with UPR's instruction.
PASSAGE_PROMPT = "Passage: {title} {text}. Please write a question based on this passage."
#: The decoder target whose likelihood is the score.
QUESTION_TARGET = "Question: {question}"


def passage_prompt(title: str, text: str, template: str = PASSAGE_PROMPT) -> str:
    return template.format(title=title, text=text)


def question_target(question: str, *, question_mark: bool = True, template: str = QUESTION_TARGET) -> str:
    """The decoder target; with ``question_mark`` a question lacking a final ``?`` gets one."""
    question = question.strip()
    if question_mark and not question.endswith("?"):
        question += "?"
    return template.format(question=question)


def _template(name: str, value: Any, fields: tuple[str, ...]) -> str:
    """``value`` when it is a format string using exactly ``fields``; else a one-line error."""
    import string

    try:
        used = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None} if isinstance(value, str) else None
    except ValueError as exc:
        raise HarnessError(f"{name}: {value!r} is not a valid template ({exc})") from None
    if used != set(fields):
        wanted = " and ".join("{" + f + "}" for f in fields)
        raise HarnessError(f"{name} must be text using exactly {wanted}, got {value!r}")
    return value


def _decoder_inputs(model, labels):
    """The decoder's input ids: the labels shifted right behind the decoder start token."""
    if hasattr(model, "prepare_decoder_input_ids_from_labels"):
        return model.prepare_decoder_input_ids_from_labels(labels=labels)
    start = model.config.decoder_start_token_id
    if start is None:
        raise HarnessError("the model's config has no decoder_start_token_id; is it a sequence-to-sequence model?")
    shifted = labels.new_full(labels.shape, start)
    shifted[:, 1:] = labels[:, :-1]
    return shifted


def question_log_likelihoods(
    model,
    tokenizer,
    question: str,
    passages: Sequence[tuple[str, str]],
    *,
    batch_size: int = 16,
    max_passage_length: int = 512,
    max_question_length: int = 128,
    question_mark: bool = True,
    passage_template: str = PASSAGE_PROMPT,
    target_template: str = QUESTION_TARGET,
) -> list[float]:
    """``log p(target | passage)`` for each ``(title, text)`` of ``passages``, in their order: the
    sum over the target's tokens (as the tokenizer makes them, end-of-sequence included) of their
    log-probabilities under ``model`` (a Hugging Face sequence-to-sequence model, in eval mode, on
    the device and in the dtype it should run in).

    The target (:func:`question_target`) is tokenised once; passages are tokenised, sorted by
    length, and scored ``batch_size`` at a time, each batch padded to its longest passage.
    """
    import torch

    if not passages:
        return []
    device = next(model.parameters()).device
    target = tokenizer(
        question_target(question, question_mark=question_mark, template=target_template),
        max_length=max_question_length, truncation=True, return_tensors="pt",
    ).input_ids.to(device)
    if target.shape[1] == 0:
        raise HarnessError(f"question {question!r} has no tokens to score")
    prompts = [passage_prompt(title, text, passage_template) for title, text in passages]
    encoded = tokenizer(prompts, max_length=max_passage_length, truncation=True)["input_ids"]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    scores = [math.nan] * len(passages)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            width = max(len(encoded[i]) for i in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = torch.tensor(encoded[i])
                mask[row, : len(encoded[i])] = 1
            labels = target.expand(len(chunk), -1)
            logits = model(
                input_ids=ids.to(device), attention_mask=mask.to(device),
                decoder_input_ids=_decoder_inputs(model, labels), use_cache=False,
            ).logits.float()
            # log_softmax gathered at the labels, without materialising the whole log_softmax
            logprobs = logits.gather(2, labels.unsqueeze(2)).squeeze(2) - torch.logsumexp(logits, dim=-1)
            for row, value in zip(chunk, logprobs.sum(dim=1).tolist()):
                scores[row] = value
    return scores


def load_seq2seq(ref: ModelRef, device: str, precision: str, *, who: str = "upr"):
    """``(model, tokenizer)`` for ``ref`` in eval mode on ``device`` in ``precision``; errors
    begin with ``who`` (the user of the model)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(ref.path, revision=ref.revision)
        model = AutoModelForSeq2SeqLM.from_pretrained(ref.path, revision=ref.revision, dtype=torch_dtype(precision))
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HarnessError(f"{who}: cannot load sequence-to-sequence model {ref.name_or_path!r}: {first}") from None
    model.eval().to(device)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


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
        question_mark: bool = True,
        passage_prompt: str = PASSAGE_PROMPT,
        question_target: str = QUESTION_TARGET,
        cache: bool = True,
        batch_size: int | None = None,
        device: str = "auto",
    ):
        self.ref = ModelRef(model, revision)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.batch_size = default_batch_size(batch_size, self.device)
        self.max_passage_length = positive_int("max_passage_length", max_passage_length, 512)
        self.max_question_length = positive_int("max_question_length", max_question_length, 128)
        if not isinstance(question_mark, bool) or not isinstance(cache, bool):
            raise HarnessError("question_mark and cache must be true or false")
        self.question_mark = question_mark
        self.passage_prompt = _template("passage_prompt", passage_prompt, ("title", "text"))
        self.question_target = _template("question_target", question_target, ("question",))
        self.use_cache = cache
        self._model = None
        self._tokenizer = None
        self._caches: dict[Path, Any] = {}
        #: (pairs scored by the model, pairs read from the cache) so far.
        self.counts = [0, 0]

    def parameters(self) -> dict[str, Any]:
        return {
            "model": self.ref.describe(),
            "precision": self.precision,
            "passage_prompt": self.passage_prompt,
            "question_target": self.question_target,
            "question_mark": self.question_mark,
            "max_passage_length": self.max_passage_length,
            "max_question_length": self.max_question_length,
        }

    def cache_config(self) -> dict[str, Any]:
        """Everything a score depends on; the disk cache is keyed by it."""
        return {
            "scorer": "upr/1",
            "model": self.ref.identity(),
            "precision": self.precision,
            "passage_prompt": self.passage_prompt,
            "question_target": self.question_target,
            "question_mark": self.question_mark,
            "max_passage_length": self.max_passage_length,
            "max_question_length": self.max_question_length,
        }

    def _loaded(self):
        if self._model is None:
            self._model, self._tokenizer = load_seq2seq(self.ref, self.device, self.precision)
        return self._model, self._tokenizer

    def _cache(self, context):
        from harness_builtins.rerank.cache import ScoreCache

        directory = Path(context.cache_dir) / "rerank" / "upr"
        if directory not in self._caches:
            self._caches[directory] = ScoreCache(directory, self.cache_config())
        return self._caches[directory]

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """Scores of ``(title, text)`` passages for ``question``, by the model (no cache)."""
        model, tokenizer = self._loaded()
        self.counts[0] += len(passages)
        return question_log_likelihoods(
            model, tokenizer, question, passages, batch_size=self.batch_size,
            max_passage_length=self.max_passage_length, max_question_length=self.max_question_length,
            question_mark=self.question_mark, passage_template=self.passage_prompt, target_template=self.question_target,
        )

    def rerank(self, questions, candidates, context):
        from harness_builtins.rerank.cache import passage_digest

        cache = self._cache(context) if self.use_cache else None
        out = []
        for question, cands in zip(questions, candidates):
            keys = [(c.passage_id, passage_digest(c.passage.title, c.passage.text)) for c in cands]
            known = cache.get(question, keys) if cache is not None else {}
            todo = [i for i, key in enumerate(keys) if key not in known]
            self.counts[1] += len(keys) - len(todo)
            if todo:
                new = self.score(question, [(cands[i].passage.title, cands[i].passage.text) for i in todo])
                bad = next((cands[i].passage_id for i, s in zip(todo, new) if not math.isfinite(s)), None)
                if bad is not None:
                    raise HarnessError(
                        f"upr: question {question!r}, passage {bad!r}: the model gave a non-finite likelihood "
                        f"(precision {self.precision}; T5 overflows in fp16, try -R precision=bf16 or fp32)"
                    )
                scored = [(keys[i][0], keys[i][1], s) for i, s in zip(todo, new)]
                if cache is not None:
                    cache.put(question, scored)
                known.update({(pid, digest): s for pid, digest, s in scored})
            out.append([Hit(passage_id=c.passage_id, score=known[key]) for c, key in zip(cands, keys)])
        return out

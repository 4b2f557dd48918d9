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

:func:`score_questions` scores several questions' passages with one model replica per device:
the batches (each question's, formed exactly as :func:`question_log_likelihoods` forms them) go
from one queue to one thread per replica (torch releases the GIL while its kernels run), and
each question's scores are put back in its passages' order. Since a batch's content does not
depend on the replica that scores it, the scores equal one replica's, bit for bit, on devices of
one model; with one replica no thread is started.

:class:`UprReranker` is the ``upr`` re-ranker: scores are cached on disk per configuration
(:mod:`~harness_builtins.rerank.cache`), and the model is loaded only when a score is missing.
Its ``device`` option: ``auto`` (every GPU torch sees, one replica each, else the CPU), ``cuda``
(every GPU), ``cpu`` or ``cuda:N`` (that device alone), or a list (``cuda:0,cuda:2``, one replica
per entry). Its recorded parameters include the precision its logits are computed in
(``precision``: bf16 on GPU, fp32 on CPU unless set), the device kind (``device``) and the number
of replicas (``devices``).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import closing, nullcontext
from pathlib import Path
from typing import Any

from harness.api import Hit
from harness.errors import HarnessError

from harness_builtins.rerank.models import (
    ModelRef,
    default_batch_size,
    device_kind,
    positive_int,
    resolve_devices,
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


class _Prepared:
    """One question's passages ready to score: the target's token ids (on the CPU), each passage
    prompt's token ids, and the batches (lists of passage indices, shortest passages first)."""

    __slots__ = ("target", "encoded", "batches", "pad")

    def __init__(self, target, encoded: list[list[int]], batches: list[list[int]], pad: int):
        self.target = target
        self.encoded = encoded
        self.batches = batches
        self.pad = pad


def _prepare(
    tokenizer, question: str, passages: Sequence[tuple[str, str]], *, batch_size: int, max_passage_length: int,
    max_question_length: int, question_mark: bool, passage_template: str, target_template: str,
) -> _Prepared:
    target = tokenizer(
        question_target(question, question_mark=question_mark, template=target_template),
        max_length=max_question_length, truncation=True, return_tensors="pt",
    ).input_ids
    if target.shape[1] == 0:
        raise HarnessError(f"question {question!r} has no tokens to score")
    prompts = [passage_prompt(title, text, passage_template) for title, text in passages]
    encoded = tokenizer(prompts, max_length=max_passage_length, truncation=True)["input_ids"]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    return _Prepared(target, encoded, batches, pad)


def _score_batch(model, prepared: _Prepared, chunk: Sequence[int]) -> list[float]:
    """The summed target log-probabilities of the passages ``chunk`` (indices into
    ``prepared.encoded``), in ``chunk``'s order, under ``model`` on its own device."""
    import torch

    device = next(model.parameters()).device
    encoded = prepared.encoded
    with torch.inference_mode():
        target = prepared.target.to(device)
        width = max(len(encoded[i]) for i in chunk)
        ids = torch.full((len(chunk), width), prepared.pad, dtype=torch.long)
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
        return logprobs.sum(dim=1).tolist()


def score_questions(
    models: Sequence[Any],
    tokenizer,
    items: Sequence[tuple[str, Sequence[tuple[str, str]]]],
    *,
    batch_size: int = 16,
    max_passage_length: int = 512,
    max_question_length: int = 128,
    question_mark: bool = True,
    passage_template: str = PASSAGE_PROMPT,
    target_template: str = QUESTION_TARGET,
) -> Iterator[list[float]]:
    """Yields, for each ``(question, passages)`` of ``items`` in turn, the scores of
    :func:`question_log_likelihoods` (in its passages' order), as soon as that question is done.

    ``models`` are replicas of one model (in eval mode, each on its device, in one dtype). With one
    replica the batches are scored in this thread. With several, every question's batches go,
    in order, to one queue that a thread per replica takes batches from; a failure in a replica
    is raised here, and closing the generator (or an exception while it waits) stops the threads
    after the batches they hold. Every batch holds the same passages as with one replica.
    """
    if not models:
        raise ValueError("score_questions needs at least one model")
    options = dict(
        batch_size=batch_size, max_passage_length=max_passage_length, max_question_length=max_question_length,
        question_mark=question_mark, passage_template=passage_template, target_template=target_template,
    )
    prepared = [_prepare(tokenizer, question, passages, **options) if passages else None for question, passages in items]
    results = [[math.nan] * len(passages) for _, passages in items]
    if len(models) == 1:
        for scores, ready in zip(results, prepared):
            for chunk in ready.batches if ready is not None else ():
                for row, value in zip(chunk, _score_batch(models[0], ready, chunk)):
                    scores[row] = value
            yield scores
        return

    queue = deque((j, chunk) for j, ready in enumerate(prepared) if ready is not None for chunk in ready.batches)
    remaining = [len(ready.batches) if ready is not None else 0 for ready in prepared]
    failures: list[BaseException] = []
    stop = threading.Event()
    done = threading.Condition()

    def work(model) -> None:
        import torch

        device = next(model.parameters()).device
        # the thread's current CUDA device is its replica's, for tensors made without a device
        with torch.cuda.device(device) if device.type == "cuda" else nullcontext():
            while True:
                with done:
                    if stop.is_set() or failures or not queue:
                        return
                    j, chunk = queue.popleft()
                try:
                    values = _score_batch(model, prepared[j], chunk)
                except BaseException as exc:
                    with done:
                        failures.append(exc)
                        done.notify_all()
                    return
                with done:
                    for row, value in zip(chunk, values):
                        results[j][row] = value
                    remaining[j] -= 1
                    if remaining[j] == 0:
                        done.notify_all()

    threads = [threading.Thread(target=work, args=(model,), name=f"upr-replica-{n}", daemon=True)
               for n, model in enumerate(models)]
    for thread in threads:
        thread.start()
    try:
        for j in range(len(items)):
            with done:
                while remaining[j] and not failures:
                    done.wait()
                if failures:
                    raise failures[0]
            yield results[j]
    finally:
        stop.set()
        for thread in threads:
            thread.join()


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
    if not passages:
        return []
    (scores,) = score_questions(
        [model], tokenizer, [(question, passages)], batch_size=batch_size, max_passage_length=max_passage_length,
        max_question_length=max_question_length, question_mark=question_mark, passage_template=passage_template,
        target_template=target_template,
    )
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


def load_replicas(ref: ModelRef, devices: Sequence[str], precision: str, *, who: str = "upr"):
    """``(models, tokenizer)``: one replica of ``ref`` per entry of ``devices`` (loaded once on the
    CPU, then copied to each device), each as :func:`load_seq2seq` makes it."""
    import copy

    if len(devices) == 1:
        model, tokenizer = load_seq2seq(ref, devices[0], precision, who=who)
        return [model], tokenizer
    model, tokenizer = load_seq2seq(ref, "cpu", precision, who=who)
    replicas = [copy.deepcopy(model).to(device) for device in devices[1:]]
    return [model.to(devices[0]), *replicas], tokenizer


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
        device: Any = "auto",
    ):
        self.ref = ModelRef(model, revision)
        #: One model replica per entry (``cuda:0`` .. ``cuda:N-1``, or ``cpu``).
        self.devices = resolve_devices(device)
        self.device = self.devices[0]
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
        self._models: list[Any] = []
        self._tokenizer = None
        self._caches: dict[Path, Any] = {}
        #: (pairs scored by the model, pairs read from the cache) so far.
        self.counts = [0, 0]

    def parameters(self) -> dict[str, Any]:
        """The recorded settings: the scoring configuration and the precision the logits are
        computed in (the log-softmax is float32 in every precision). Where they ran is in
        :meth:`compute`: it does not change a score."""
        return {
            "model": self.ref.describe(),
            "precision": self.precision,
            "passage_prompt": self.passage_prompt,
            "question_target": self.question_target,
            "question_mark": self.question_mark,
            "max_passage_length": self.max_passage_length,
            "max_question_length": self.max_question_length,
        }

    def compute(self) -> dict[str, Any]:
        """How the scores were computed (the result's ``compute`` block): device kind, replicas
        and logit precision."""
        return {"score_device": device_kind(self.device), "score_devices": len(self.devices),
                "score_precision": self.precision}

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
            self._models, self._tokenizer = load_replicas(self.ref, self.devices, self.precision)
            self._model = self._models[0]
        return self._models, self._tokenizer

    def _cache(self, context):
        from harness_builtins.rerank.cache import ScoreCache

        directory = Path(context.cache_dir) / "rerank" / "upr"
        if directory not in self._caches:
            self._caches[directory] = ScoreCache(directory, self.cache_config())
        return self._caches[directory]

    def score_each(self, items: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> Iterator[list[float]]:
        """Yields the scores of each ``(question, passages)`` of ``items`` (``(title, text)``
        passages) in turn, by the model on every device (no cache): :func:`score_questions`."""
        if not items:
            return
        models, tokenizer = self._loaded()
        self.counts[0] += sum(len(passages) for _, passages in items)
        yield from score_questions(
            models, tokenizer, items, batch_size=self.batch_size,
            max_passage_length=self.max_passage_length, max_question_length=self.max_question_length,
            question_mark=self.question_mark, passage_template=self.passage_prompt, target_template=self.question_target,
        )

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """Scores of ``(title, text)`` passages for ``question``, by the model (no cache)."""
        if not passages:
            self._loaded()
            return []
        with closing(self.score_each([(question, passages)])) as scored:
            return next(scored)

    def rerank(self, questions, candidates, context):
        from harness_builtins.rerank.cache import passage_digest

        cache = self._cache(context) if self.use_cache else None
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
        with closing(self.score_each(items)) as scored:
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

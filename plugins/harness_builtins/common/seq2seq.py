"""Sequence-to-sequence models: loading them (:func:`load_seq2seq`, :func:`load_replicas`) and the
question-likelihood scorer of UPR and ART (:func:`question_log_likelihoods`,
:func:`score_questions`) with both papers' prompt templates. Users: the ``upr`` re-ranker, the
``art`` loss's teacher, ``harness data generate-questions``.

The scorer: ``log p(target | prompt)`` for each passage, the sum over the target's tokens (as the
tokenizer makes them, end-of-sequence included) of their log-probabilities; the encoder reads
:func:`passage_prompt`, the decoder is scored on :func:`question_target`.

The reference prompts, as the authors' code builds them (checked against the repositories):

- **UPR** (DevSinghSachan/unsupervised-passage-reranking, branch ``main``). ``upr.py``:
  ``ids = "{} {} {}. {}".format(self.args.verbalizer_head, title, text, self.args.verbalizer)``
  with ``--verbalizer-head`` ``"Passage: "`` and ``--verbalizer`` ``"Please write a question
  based on this passage."``, so :data:`UPR_PASSAGE_PROMPT` is ``"Passage:  {title} {text}. Please
  write a question based on this passage."`` (two spaces after the colon: the head's and the
  format's; T5's tokenizers collapse them, so it scores as the one-space form). The whole prompt
  is truncated at 512 tokens (its end is cut). ``utils/openqa_dataset.py``: ``decoder_prompt =
  "Question: {}{}".format(row['question'], self.ques_punc)`` where ``ques_punc`` is ``"?"`` when
  the data file's path names ``nq`` or ``efficientqa`` and ``""`` for ``trivia``, ``webq``,
  ``entity-questions``, ``BEIR`` and ``squad``: :data:`UPR_QUESTION_TARGET` with the question
  mark by suite (:func:`reference_question_mark`). Score: the summed log-likelihood.
- **ART** (DevSinghSachan/art). ``megatron/model/art_model.py`` (``postprocess``): the encoder
  ids are the tokens of ``--verbalizer-head`` (``"Passage: "``), the passage title's, the text's
  (each tokenised apart, ``tools/create_evidence_indexed_dataset_t0.py``) and ``--verbalizer``'s
  (``" . Please write a question based on this passage."``, ``megatron/arguments.py``), then the
  end of sequence. SentencePiece (T0, T5) begins every piece tokenised apart at a word boundary,
  so this is :data:`ART_PASSAGE_PROMPT`, ``"Passage: {title} {text} . Please write a question
  based on this passage."``, tokenised whole (note the space before the period).
  ``tasks/dense_retriever/zero_shot_training/train_data_utils.py``: ``prefixed_query_text =
  "{} {}".format("Question:", raw_sample['question'])``: :data:`ART_QUESTION_TARGET`, never a
  question mark added. Score: the mean over the target's tokens (end of sequence included).
  One difference is left: ART cuts the title and text so that its instruction and end of sequence
  always fit in 512 tokens; here every prompt is cut at its end (UPR's way), which differs only
  for passages of more than about 500 tokens (DPR's 100-word passages have about 150).

The scorer's speed: the question is tokenised once, the passages are scored in batches sorted by
length (little padding), under ``torch.inference_mode``; the log-softmax is always taken in
float32. Its scores equal a one-pair-at-a-time loop over the model's logits (up to float rounding
across batch shapes). :func:`score_questions` scores several questions' passages with one model
replica per device: the batches (each question's, formed exactly as
:func:`question_log_likelihoods` forms them) go from one queue to one thread per replica (torch
releases the GIL while its kernels run), and each question's scores are put back in its
passages' order. Since a batch's content does not depend on the replica that scores it, the
scores equal one replica's, bit for bit, on devices of one model; with one replica no thread is
started.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import Any

from harness.errors import HarnessError
from harness.util.models import ModelRef

from harness_builtins.common.devices import torch_dtype

#: UPR's encoder input (``upr.py`` of UPR's ``main`` branch, see the module notes).
UPR_PASSAGE_PROMPT = "Passage:  {title} {text}. Please write a question based on this passage."
#: UPR's decoder target; UPR adds ``?`` for NQ and EfficientQA only (:func:`reference_question_mark`).
UPR_QUESTION_TARGET = "Question: {question}"
#: ART's encoder input (``megatron/model/art_model.py`` and ``megatron/arguments.py`` of ART).
ART_PASSAGE_PROMPT = "Passage: {title} {text} . Please write a question based on this passage."
#: ART's decoder target, never with an added ``?``.
ART_QUESTION_TARGET = "Question: {question}"
#: The prompt this harness used before following the reference code exactly (UPR's one space
#: after the colon, no space before the period): ``-R passage_prompt=`` / ``-L passage_prompt=``.
PREVIOUS_PASSAGE_PROMPT = "Passage: {title} {text}. Please write a question based on this passage."

#: Suites whose questions UPR ends with ``?`` (by the data file's path: ``nq``, ``efficientqa``).
QUESTION_MARK_SUITES = ("nq", "efficientqa")


def reference_question_mark(suite: str | None) -> bool:
    """Whether UPR adds ``?`` to the questions of ``suite``: for NQ and EfficientQA (a suite named
    ``nq`` or ``efficientqa``, or beginning ``nq-`` / ``efficientqa-``: ``nq-dev``, ``nq-open``,
    ``efficientqa-dev``), not for any other suite (TriviaQA, WebQuestions, EntityQuestions,
    SQuAD, ...) nor when the suite is unknown."""
    if not suite:
        return False
    name = suite.lower()
    return any(name == prefix or name.startswith(prefix + "-") for prefix in QUESTION_MARK_SUITES)


def passage_prompt(title: str, text: str, template: str = UPR_PASSAGE_PROMPT) -> str:
    """The encoder input: ``template`` with the passage's ``{title}`` and ``{text}``."""
    return template.format(title=title, text=text)


def question_target(question: str, *, question_mark: bool = False, template: str = UPR_QUESTION_TARGET) -> str:
    """The decoder target: ``template`` with the (stripped) ``{question}``; with ``question_mark``
    a question lacking a final ``?`` gets one (UPR adds it to NQ's questions, which never have one)."""
    question = question.strip()
    if question_mark and not question.endswith("?"):
        question += "?"
    return template.format(question=question)


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
    question_mark: bool = False,
    passage_template: str = UPR_PASSAGE_PROMPT,
    target_template: str = UPR_QUESTION_TARGET,
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
    question_mark: bool = False,
    passage_template: str = UPR_PASSAGE_PROMPT,
    target_template: str = UPR_QUESTION_TARGET,
) -> list[float]:
    """``log p(target | passage)`` for each ``(title, text)`` of ``passages``, in their order: the
    sum over the target's tokens (as the tokenizer makes them, end-of-sequence included) of their
    log-probabilities under ``model`` (a Hugging Face sequence-to-sequence model, in eval mode, on
    the device and in the dtype it should run in).

    The encoder reads :func:`passage_prompt` with ``passage_template`` (default UPR's), the
    decoder is scored on :func:`question_target` with ``target_template`` and ``question_mark``
    (default: no ``?`` added, as UPR on every suite but NQ and EfficientQA, and ART everywhere).
    The target is tokenised once; passages are tokenised, sorted by length, and scored
    ``batch_size`` at a time, each batch padded to its longest passage.
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
    """``(model, tokenizer)`` for ``ref`` in eval mode on ``device`` in ``precision`` (resolved,
    :mod:`.devices`), its parameters frozen; errors begin with ``who`` (the user of the model)."""
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


__all__ = [
    "UPR_PASSAGE_PROMPT", "UPR_QUESTION_TARGET", "ART_PASSAGE_PROMPT", "ART_QUESTION_TARGET", "PREVIOUS_PASSAGE_PROMPT",
    "QUESTION_MARK_SUITES", "reference_question_mark", "passage_prompt", "question_target",
    "score_questions", "question_log_likelihoods", "load_seq2seq", "load_replicas", "ModelRef",
]

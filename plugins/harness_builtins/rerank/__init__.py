"""Re-rankers of a first stage's top-n (``harness run --rerank NAME``, ``harness score --rerank``).

- ``upr``: question likelihood under a sequence-to-sequence model (UPR, Sachan et al. 2022; ART's
  teacher): :mod:`~harness_builtins.rerank.upr`, whose public scorer is
  :func:`~harness_builtins.rerank.upr.question_log_likelihoods`; it scores on every GPU torch
  sees (one replica each) unless ``-R device=`` names one, and scores are cached on disk in a file
  several processes and machines may share (:mod:`~harness_builtins.rerank.cache`).
- ``late-interaction``: ``m^T [q; p; q*p; q-p]`` over a dual encoder's embeddings, from a
  checkpoint folder (:mod:`~harness_builtins.rerank.late_interaction`, which documents the format).
- ``cross-encoder``: any sentence-transformers ``CrossEncoder`` by hub id or directory
  (:mod:`~harness_builtins.rerank.cross_encoder`).

Registering imports nothing heavy; torch and transformers are imported when a re-ranker loads.
"""

from __future__ import annotations

from harness import hookimpl
from harness.api import RerankerSpec

#: Options every model-backed re-ranker here accepts (``auto``: decided at run time).
RUNTIME_OPTIONS = {
    "batch_size": None,  # passages per forward pass: 32 on GPU, 16 on CPU
    "device": "auto",  # auto | cpu | cuda | cuda:N
}

UPR_OPTIONS = {
    "model": "google/t5-large-lm-adapt",
    "revision": None,
    "precision": "auto",  # auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16 | fp16
    "max_passage_length": 512,
    "max_question_length": 128,
    "question_mark": True,  # end a question with "?" when it lacks one, as UPR does for NQ
    "passage_prompt": "Passage: {title} {text}. Please write a question based on this passage.",
    "question_target": "Question: {question}",
    "cache": True,  # keep scores on disk under the cache folder
    "batch_size": None,  # passages per forward pass and device: 32 on GPU, 16 on CPU
    # auto: every GPU torch sees (one model replica each), else cpu | cuda: every GPU | cpu |
    # cuda:N | a list such as cuda:0,cuda:2: one replica per entry
    "device": "auto",
}

LATE_INTERACTION_OPTIONS = {"path": None, "batch_size": None, "device": "auto"}

CROSS_ENCODER_OPTIONS = {
    "model": "cross-encoder/ms-marco-MiniLM-L6-v2",
    "revision": None,
    "max_length": 512,
    "format": "title_text",  # title_text | text: what the passage side of a pair is
    **RUNTIME_OPTIONS,
}


def _load_upr(**options):
    from harness_builtins.rerank.upr import UprReranker

    return UprReranker(**{**UPR_OPTIONS, **options})


def _load_late_interaction(**options):
    from harness_builtins.rerank.late_interaction import LateInteractionReranker

    return LateInteractionReranker(**{**LATE_INTERACTION_OPTIONS, **options})


def _load_cross_encoder(**options):
    from harness_builtins.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(**{**CROSS_ENCODER_OPTIONS, **options})


@hookimpl
def register_rerankers(register):
    register(RerankerSpec(
        name="upr",
        description="UPR: log p(question | passage) under a seq2seq model (T5 lm-adapt, T0, Flan-T5; -R model=...), cached",
        load=_load_upr,
        options=UPR_OPTIONS,
    ))
    register(RerankerSpec(
        name="late-interaction",
        description="late-interaction head m^T[q; p; q*p; q-p] over a dual encoder's embeddings: -R path=CHECKPOINT",
        load=_load_late_interaction,
        options=LATE_INTERACTION_OPTIONS,
        depth=200,  # as in seed 004
    ))
    register(RerankerSpec(
        name="cross-encoder",
        description="any sentence-transformers CrossEncoder by hub id or directory (-R model=...)",
        load=_load_cross_encoder,
        options=CROSS_ENCODER_OPTIONS,
    ))

"""Re-rankers of a first stage's top-n (``harness run --rerank NAME``, ``harness score --rerank``).

- ``upr``: question likelihood under a sequence-to-sequence model (UPR, Sachan et al. 2022; ART's
  teacher), prompts exactly as UPR's code by default: :mod:`~harness_builtins.rerank.upr`, whose
  scorer, shared with the ART loss, is :func:`harness_builtins.common.seq2seq.question_log_likelihoods`;
  it scores on every GPU torch sees (one replica each) unless ``-R device=`` names one, and scores
  are cached on disk in a file several processes and machines may share
  (:mod:`~harness_builtins.rerank.cache`).
- ``late-interaction``: ``m^T [q; p; q*p; q-p]`` over a dual encoder's embeddings, from a
  checkpoint folder (:mod:`~harness_builtins.rerank.late_interaction`, which documents the format).
- ``cross-encoder``: any sentence-transformers ``CrossEncoder`` by hub id or directory
  (:mod:`~harness_builtins.rerank.cross_encoder`).

Registering imports nothing heavy; torch and transformers are imported when a re-ranker loads.
"""

from __future__ import annotations

from harness import hookimpl
from harness.api import Option, Options, RerankerSpec, boolean, choice, path, positive_int, template, text

from harness_builtins.common.devices import PRECISIONS
from harness_builtins.common.seq2seq import UPR_PASSAGE_PROMPT, UPR_QUESTION_TARGET

#: Upper bounds of the numeric options, far above any use: a typo's extra digits are refused in
#: one line naming the option before a model is loaded.
MAX_BATCH_SIZE = 65_536
MAX_TOKENS = 131_072

#: Options every model-backed re-ranker here accepts (``auto``: decided at run time).
RUNTIME_OPTIONS = Options({
    "batch_size": positive_int(None, max=MAX_BATCH_SIZE, help="passages per forward pass (null: 32 on GPU, 16 on CPU)"),
    "device": text("auto", help="auto | cpu | cuda | cuda:N"),
})

#: What the passage side of a cross-encoder's pair is.
CROSS_ENCODER_FORMATS = ("title_text", "text")

UPR_OPTIONS = Options({
    "model": text("google/t5-large-lm-adapt", help="a sequence-to-sequence model: hub id or local directory"),
    "revision": text(None, help="hub revision"),
    "precision": choice("auto", PRECISIONS, help="auto: bf16 on GPU, fp32 on CPU"),
    "max_passage_length": positive_int(512, max=MAX_TOKENS, help="encoder tokens"),
    "max_question_length": positive_int(128, max=MAX_TOKENS, help="decoder tokens"),
    # the prompts are UPR's code by default (branch main of DevSinghSachan/unsupervised-passage-reranking)
    "question_mark": boolean("auto", literals=("auto",), help=(
        'auto: end a question lacking one with "?" on the NQ and EfficientQA suites only, as UPR\'s '
        'utils/openqa_dataset.py does; true: on every suite (this harness\'s earlier default); false: never')),
    "passage_prompt": template(UPR_PASSAGE_PROMPT, ("title", "text"), help=(
        'the encoder input; UPR\'s upr.py joins "Passage: " and the title with a space (two spaces, which '
        'T5\'s tokenizers collapse); earlier default "Passage: {title} {text}. Please write a question based '
        'on this passage.", ART\'s "Passage: {title} {text} . Please write a question based on this passage."')),
    "question_target": template(UPR_QUESTION_TARGET, ("question",), help=(
        "the decoder target whose log-likelihood is the score (UPR's and ART's; {question} alone scores the bare question)")),
    "cache": boolean(True, help="keep scores on disk under the cache folder"),
    "batch_size": positive_int(None, max=MAX_BATCH_SIZE, help="passages per forward pass and device (null: 32 on GPU, 16 on CPU)"),
    # auto: every GPU torch sees (one model replica each), else cpu | cuda: every GPU | cpu |
    # cuda:N | a list such as cuda:0,cuda:2: one replica per entry (checked when loaded)
    "device": Option("auto", help="auto | cpu | cuda | cuda:N | a list of devices (one replica each)"),
})

LATE_INTERACTION_OPTIONS = Options({"path": path(None, help="a late-interaction checkpoint or harness train output")}) | RUNTIME_OPTIONS

CROSS_ENCODER_OPTIONS = Options({
    "model": text("cross-encoder/ms-marco-MiniLM-L6-v2", help="hub id or local directory"),
    "revision": text(None, help="hub revision"),
    "max_length": positive_int(512, max=MAX_TOKENS, help="tokens per (question, passage) pair"),
    "format": choice("title_text", CROSS_ENCODER_FORMATS, help="what the passage side of a pair is"),
}) | RUNTIME_OPTIONS


def _load_upr(**options):
    from harness_builtins.rerank.upr import UprReranker

    return UprReranker(**{**UPR_OPTIONS, **options})


def _load_late_interaction(**options):
    from harness_builtins.rerank.late_interaction import LateInteractionReranker

    return LateInteractionReranker(**{**LATE_INTERACTION_OPTIONS, **options})


def _load_cross_encoder(**options):
    from harness_builtins.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(**{**CROSS_ENCODER_OPTIONS, **options})


def _model_name(options) -> str:
    text = str(options.get("model") or "")
    return text.split(" (", 1)[0].strip() if text.endswith(")") else text.strip()


def upr_meta(options):
    """UPR's metadata: known for T5 v1.1 LM-adapted models (pre-trained on C4 only, no training
    set); unknown for another model (T0 and Flan-T5 saw task mixtures this does not name)."""
    from harness.api import ModelMeta, Work

    model = _model_name(options)
    if not (model.startswith("google/t5-") and model.endswith("lm-adapt")):
        return None
    return ModelMeta(model=model, license="Apache-2.0", open_weights=True, trained_on=(),
                     reference=Work(authors="Sachan et al.", year=2022, title="Improving Passage Retrieval with Zero-Shot "
                                    "Question Generation", arxiv="2204.07496"),
                     note="T5 v1.1 LM-adapted: pre-trained on C4 only; scores are zero-shot question likelihoods")


def cross_encoder_meta(options):
    """The default cross-encoder's metadata (trained on MS MARCO passage ranking); unknown for another model."""
    from harness.api import ModelMeta

    if _model_name(options) != "cross-encoder/ms-marco-MiniLM-L6-v2":
        return None
    return ModelMeta(model="cross-encoder/ms-marco-MiniLM-L6-v2", license="Apache-2.0", open_weights=True,
                     trained_on=("msmarco",), note="MS MARCO passage ranking")


def late_interaction_meta(options):
    """A late-interaction head's metadata from the training record its checkpoint records, else unknown."""
    from harness import registry
    from harness.api import training_meta

    training = options.get("training")
    if not isinstance(training, dict):
        return None
    known = set(registry.registry("training-data").names()) | set(registry.suites().names())
    return training_meta(training, known)


@hookimpl
def register_rerankers(register):
    register(RerankerSpec(
        name="upr",
        description=(
            "UPR: log p(question | passage) under a seq2seq model (T5 lm-adapt, T0, Flan-T5; -R model=...), "
            "cached (Sachan et al. 2022, arXiv:2204.07496)"
        ),
        load=_load_upr,
        options=UPR_OPTIONS,
        meta=upr_meta,
    ))
    register(RerankerSpec(
        name="late-interaction",
        description=(
            "late-interaction head m^T[q; p; q*p; q-p] over a dual encoder's embeddings: -R path=CHECKPOINT "
            "(Hoang 2022, NTU thesis, ch. 4)"
        ),
        load=_load_late_interaction,
        options=LATE_INTERACTION_OPTIONS,
        meta=late_interaction_meta,
        depth=200,  # as in Hoang 2022, ch. 4
    ))
    register(RerankerSpec(
        name="cross-encoder",
        description="any sentence-transformers CrossEncoder by hub id or directory (-R model=...)",
        load=_load_cross_encoder,
        options=CROSS_ENCODER_OPTIONS,
        meta=cross_encoder_meta,
    ))

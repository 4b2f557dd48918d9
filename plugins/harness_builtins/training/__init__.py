"""Training: the DPR-family trainer (``harness train``), its parts and the seeds' variants.

Registered like any third party's: losses (``dpr``, ``stopgrad``, ``flip``, ``multi-sim``,
``late-interaction``), batch samplers (``random``, ``harder-batches``), the ``retriever``
negative miner, the ``shuffle-words`` augmentation, the variants of :mod:`.variants`, and the
``trained`` encoder is offered by the dense plugin. Registering imports nothing heavy: the parts'
modules (torch) are imported when a part is built.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.api import (
    AugmentationSpec,
    LossSpec,
    Option,
    Options,
    SamplerSpec,
    boolean,
    check_options,
    choice,
    integer,
    non_negative_float,
    positive_float,
    positive_int,
    probability,
    template,
    text,
)

from harness_builtins.common.devices import PRECISIONS
from harness_builtins.common.seq2seq import ART_PASSAGE_PROMPT, ART_QUESTION_TARGET

from .variants import VARIANTS

#: name -> (one-line description, options with their defaults or declarations): what is
#: registered, and what the parts' modules build (:func:`build_part`); kept here so that
#: registering imports no torch.
LOSS_TABLE = {
    "dpr": ("DPR's in-batch NLL: dot-product scores, each question's positive among every passage of the batch (000 §2.3)", {}),
    "stopgrad": ("stop-gradient DPR loss: half through passages with questions detached, half the reverse (000 §5.1)", {}),
    "flip": ("flipped objective: each positive passage picks its question among the batch's questions (000 §5.1)", {}),
    "multi-sim": (
        "DPR NLL + lambda_qq question-question + lambda_pp passage-passage in-batch NLL (004 ch. 5)",
        {"lambda_qq": non_negative_float(0.1), "lambda_pp": non_negative_float(0.1),
         "pp_passages": choice("positives", ("positives", "all"), help="the passage-passage term's anchors")},
    ),
    "late-interaction": (
        "DPR NLL + lambda_late * NLL of a trained head m^T [q; p; q*p; q-p] (004 ch. 4)",
        {"lambda_late": non_negative_float(1.0),
         "dim": positive_int(None, help="the embedding size (null: the model's)"),
         "init": choice("zeros", ("zeros", "uniform"), help="the head's initialisation")},
    ),
    "qsft": ("query-side fine-tuning: -log of the softmax mass on answer-bearing passages among the top k retrieved from the frozen index (000 §5.2)", {}),
    "art": (
        "ART: KL(teacher || student) over the top K retrieved; teacher = softmax of a seq2seq model's mean log-likelihood of the question (-L teacher=MODEL), student = softmax(q.p / sqrt(d)) (001)",
        {"teacher": text(None, help="the sequence-to-sequence teacher: hub id or local directory"),
         "revision": text(None, help="hub revision"),
         "mean": boolean(True, help="the teacher's score is the mean token log-likelihood (false: the sum)"),
         "temperature": positive_float("sqrt", literals=("sqrt",), help="the student's softmax temperature (sqrt: sqrt(d))"),
         "teacher_batch_size": positive_int(32, help="passages per teacher forward pass"),
         "max_passage_length": positive_int(512, help="teacher encoder tokens"),
         "max_question_length": positive_int(128, help="teacher decoder tokens"),
         "precision": choice("auto", PRECISIONS, help="the teacher's precision (auto: bf16 on GPU, fp32 on CPU)"),
         "device": text("auto", help="the teacher's device: auto | cpu | cuda | cuda:N"),
         # the teacher's prompt is ART's code by default (DevSinghSachan/art)
         "question_mark": boolean(False, help=(
             'end a question lacking one with "?" before the teacher scores it; ART never does (true: '
             "this harness's earlier default)")),
         "passage_prompt": template(ART_PASSAGE_PROMPT, ("title", "text"), nullable=True, help=(
             "the teacher's encoder input, ART's (note the space before the period; null: the same); earlier "
             'default "Passage: {title} {text}. Please write a question based on this passage." (UPR\'s, one space)')),
         "question_target": template(ART_QUESTION_TARGET, ("question",), nullable=True, help=(
             "the decoder target whose mean log-likelihood is the teacher's score (ART's; null: the same)"))},
    ),
}

#: Losses that search the in-loop index (``LossSpec.in_loop``).
IN_LOOP_LOSSES = ("qsft", "art")

_DROP_LAST = boolean(False, help="drop a last batch smaller than batch_size")
_UNIQUE_POSITIVES = boolean(True, help="keep examples sharing a positive passage in different batches")

SAMPLER_TABLE = {
    "random": ("DPR's batches: shuffled, cut into batch_size (duplicate positives kept apart)",
               {"drop_last": _DROP_LAST, "unique_positives": _UNIQUE_POSITIVES}),
    "harder-batches": (
        "harder in-batch negatives: batches of one label (e.g. the relation) or one k-means cluster (004 ch. 6)",
        {"by": choice("auto", ("auto", "label", "cluster")),
         "clusters": positive_int(None, help="k-means clusters (null: examples / (4 x batch_size))"),
         "vectors": Option(None, help="[n, d] vectors aligned with the examples, to cluster"),
         "embed": Option(None, help="examples -> [n, d] vectors, to cluster"),
         "normalize": boolean(True, help="cluster unit vectors (cosine)"),
         "seed": integer(0, help="the k-means seed"),
         "backend": choice("auto", ("auto", "sklearn", "numpy"), help="k-means implementation"),
         "drop_last": _DROP_LAST, "unique_positives": _UNIQUE_POSITIVES},
    ),
}

AUGMENTATION_TABLE = {
    "shuffle-words": ("the text's words in random order (000 §4.1)",
                      {"probability": probability(1.0, help="the chance that a text is shuffled")}),
}


def parts(table, classes) -> dict:
    """``name -> (description, class, defaults)`` for a table above and the classes of its parts;
    ``defaults`` is an :class:`~harness.api.Options` (name -> default, with the declarations)."""
    return {name: (description, classes[name], Options(defaults)) for name, (description, defaults) in table.items()}


def build_part(noun: str, parts: dict, name: str, options) -> object:
    """The part ``name`` of ``parts`` (:func:`parts`) built with ``options`` over its defaults;
    ``options`` are checked by the declarations (:class:`~harness.api.OptionError`, a ``ValueError``)."""
    if name not in parts:
        raise ValueError(f"unknown {noun} {name!r}; known: {', '.join(parts)}")
    _, build, defaults = parts[name]
    checked = check_options(defaults, options, where=f"{noun} {name!r}")
    return build(**{**defaults, **checked})


def _build(module: str, function: str, name: str, **options):
    import importlib

    return getattr(importlib.import_module(f"harness_builtins.training.{module}"), function)(name, **options)


@hookimpl
def register_losses(register):
    for name, (description, options) in LOSS_TABLE.items():
        register(LossSpec(name=name, description=description, load=functools.partial(_build, "losses", "build_loss", name),
                          options=options, in_loop=name in IN_LOOP_LOSSES))


@hookimpl
def register_samplers(register):
    for name, (description, options) in SAMPLER_TABLE.items():
        register(SamplerSpec(name=name, description=description, load=functools.partial(_build, "samplers", "build_sampler", name), options=options))


@hookimpl
def register_augmentations(register):
    for name, (description, options) in AUGMENTATION_TABLE.items():
        register(AugmentationSpec(
            name=name, description=description, load=functools.partial(_build, "augmentations", "build_augmentation", name), options=options,
        ))


@hookimpl
def register_miners(register):
    from harness_builtins.training.mining import SPEC

    register(SPEC)


@hookimpl
def register_variants(register):
    for variant in VARIANTS:
        register(variant)


@hookimpl
def register_commands(cli):
    from harness_builtins.training.commands import export_dpr_command, train_command

    cli.add_command(train_command)
    cli.add_command(export_dpr_command)

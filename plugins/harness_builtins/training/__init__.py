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
from harness.api import AugmentationSpec, LossSpec, SamplerSpec

from .variants import VARIANTS

#: name -> (one-line description, options with their defaults): what is registered, and what
#: the parts' modules build (:func:`build_part`); kept here so that registering imports no torch.
LOSS_TABLE = {
    "dpr": ("DPR's in-batch NLL: dot-product scores, each question's positive among every passage of the batch (000 §2.3)", {}),
    "stopgrad": ("stop-gradient DPR loss: half through passages with questions detached, half the reverse (000 §5.1)", {}),
    "flip": ("flipped objective: each positive passage picks its question among the batch's questions (000 §5.1)", {}),
    "multi-sim": (
        "DPR NLL + lambda_qq question-question + lambda_pp passage-passage in-batch NLL (004 ch. 5)",
        {"lambda_qq": 0.1, "lambda_pp": 0.1, "pp_passages": "positives"},
    ),
    "late-interaction": (
        "DPR NLL + lambda_late * NLL of a trained head m^T [q; p; q*p; q-p] (004 ch. 4)",
        {"lambda_late": 1.0, "dim": None, "init": "zeros"},
    ),
    "qsft": ("query-side fine-tuning: -log of the softmax mass on answer-bearing passages among the top k retrieved from the frozen index (000 §5.2)", {}),
    "art": (
        "ART: KL(teacher || student) over the top K retrieved; teacher = softmax of a seq2seq model's mean log-likelihood of the question (-L teacher=MODEL), student = softmax(q.p / sqrt(d)) (001)",
        {"teacher": None, "revision": None, "mean": True, "temperature": "sqrt", "teacher_batch_size": 32,
         "max_passage_length": 512, "max_question_length": 128, "precision": "auto", "device": "auto",
         "question_mark": True, "passage_prompt": None, "question_target": None},
    ),
}

#: Losses that search the in-loop index (``LossSpec.in_loop``).
IN_LOOP_LOSSES = ("qsft", "art")

SAMPLER_TABLE = {
    "random": ("DPR's batches: shuffled, cut into batch_size (duplicate positives kept apart)", {"drop_last": False, "unique_positives": True}),
    "harder-batches": (
        "harder in-batch negatives: batches of one label (e.g. the relation) or one k-means cluster (004 ch. 6)",
        {"by": "auto", "clusters": None, "vectors": None, "embed": None, "normalize": True, "seed": 0,
         "backend": "auto", "drop_last": False, "unique_positives": True},
    ),
}

AUGMENTATION_TABLE = {
    "shuffle-words": ("the text's words in random order (000 §4.1)", {"probability": 1.0}),
}


def parts(table, classes) -> dict:
    """``name -> (description, class, defaults)`` for a table above and the classes of its parts."""
    return {name: (description, classes[name], defaults) for name, (description, defaults) in table.items()}


def build_part(noun: str, parts: dict, name: str, options) -> object:
    """The part ``name`` of ``parts`` (:func:`parts`) built with ``options`` over its defaults."""
    if name not in parts:
        raise ValueError(f"unknown {noun} {name!r}; known: {', '.join(parts)}")
    _, build, defaults = parts[name]
    unknown = set(options) - set(defaults)
    if unknown:
        raise ValueError(f"unknown option(s) for {noun} {name!r}: {', '.join(sorted(unknown))}")
    return build(**{**defaults, **options})


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

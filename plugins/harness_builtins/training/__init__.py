"""Training: the DPR-family trainer (``harness train``), its parts and the seeds' variants.

Registered like any third party's: the parts of :mod:`.parts`, one module each (losses ``dpr``,
``stopgrad``, ``flip``, ``multi-sim``, ``late-interaction``, ``qsft``, ``art``; samplers
``random``, ``harder-batches``; the ``retriever`` negative miner; the ``shuffle-words``
augmentation), the variants of :mod:`.variants`, and the ``trained`` encoder is offered by the
dense plugin. Registering imports nothing heavy: a part's spec names its class lazily, and the
class's module (torch) is imported when the part is built.
"""

from __future__ import annotations

from harness import hookimpl

from .parts import specs
from .variants import VARIANTS


@hookimpl
def register_losses(register):
    for spec in specs("losses").values():
        register(spec)


@hookimpl
def register_samplers(register):
    for spec in specs("samplers").values():
        register(spec)


@hookimpl
def register_augmentations(register):
    for spec in specs("augmentations").values():
        register(spec)


@hookimpl
def register_miners(register):
    for spec in specs("miners").values():
        register(spec)


@hookimpl
def register_variants(register):
    for variant in VARIANTS:
        register(variant)


@hookimpl
def register_commands(cli):
    from harness_builtins.training.commands import export_dpr_command, train_command

    cli.add_command(train_command)
    cli.add_command(export_dpr_command)

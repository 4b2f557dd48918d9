"""The extension points of harness.

Every registry hook has the same shape: it receives a ``register`` callable and calls it once per
thing it offers, with a spec record from :mod:`harness.api`. Specs are cheap metadata; nothing
heavy may be imported or read while registering. Implement hooks with ``@harness.hookimpl`` in a
module exposed through the ``harness`` entry-point group.

Adding a kind of extension is one hookspec here, one record in :mod:`harness.api` and one line in
:data:`harness.registry.KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover - annotations only; click is imported by the command line
    import click

    from harness.api import (
        AugmentationSpec,
        EncoderSpec,
        LossSpec,
        MetricSpec,
        MinerSpec,
        PublishedRun,
        PublishedTable,
        ReleasedEmbeddings,
        RerankerSpec,
        RetrieverSpec,
        RunFormatSpec,
        SamplerSpec,
        SuiteSpec,
        TrainingDataSpec,
        VariantSpec,
    )

hookspec = pluggy.HookspecMarker("harness")


@hookspec
def register_retrievers(register: Callable[[RetrieverSpec], None]) -> None:
    """Offer retrievers: call ``register(RetrieverSpec(...))`` once per retriever.

    Called the first time anything asks for the list of retrievers (``harness list retrievers``,
    ``harness run``). ``RetrieverSpec.load`` is called only when that retriever runs.
    """


@hookspec
def register_suites(register: Callable[[SuiteSpec], None]) -> None:
    """Offer benchmark suites: call ``register(SuiteSpec(...))`` once per suite.

    Called the first time anything asks for the list of suites. ``SuiteSpec.load`` is called
    only when that suite is evaluated.
    """


@hookspec
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    """Offer metrics over first-hit ranks: call ``register(MetricSpec(...))`` once per metric.

    Called the first time anything asks for the list of metrics.
    """


@hookspec
def register_encoders(register: Callable[[EncoderSpec], None]) -> None:
    """Offer dense encoders: call ``register(EncoderSpec(...))`` once per encoder.

    Called the first time anything asks for the list of encoders. ``EncoderSpec.load`` is called
    only when the encoder is used; the dense engine offers each encoder as a retriever of the same
    name.
    """


@hookspec
def register_published(register: Callable[[PublishedTable], None]) -> None:
    """Offer published numbers: call ``register(PublishedTable(...))`` once per paper table.

    Called the first time anything asks for published numbers (``harness list published``,
    ``harness leaderboard``, ``harness reproduce``).
    """


@hookspec
def register_published_runs(register: Callable[[PublishedRun], None]) -> None:
    """Offer published run files: call ``register(PublishedRun(...))`` once per released run.

    Called the first time anything asks for published runs (``harness list runs``, ``harness data
    fetch RUN``, ``harness score --run NAME``, ``harness reproduce --runs``). Nothing is downloaded
    while registering.
    """


@hookspec
def register_embeddings(register: Callable[[ReleasedEmbeddings], None]) -> None:
    """Offer released passage embeddings: call ``register(ReleasedEmbeddings(...))`` once per release.

    Called the first time anything asks for released embeddings (``harness list embeddings``,
    ``harness data fetch NAME``, a dense retriever's ``-o embeddings=NAME``). Nothing is downloaded
    or read while registering.
    """


@hookspec
def register_losses(register: Callable[[LossSpec], None]) -> None:
    """Offer training losses: call ``register(LossSpec(...))`` once per loss (``harness list losses``)."""


@hookspec
def register_samplers(register: Callable[[SamplerSpec], None]) -> None:
    """Offer batch samplers (how training batches are formed): ``register(SamplerSpec(...))``."""


@hookspec
def register_miners(register: Callable[[MinerSpec], None]) -> None:
    """Offer hard-negative miners: ``register(MinerSpec(...))``."""


@hookspec
def register_augmentations(register: Callable[[AugmentationSpec], None]) -> None:
    """Offer training-time input augmentations: ``register(AugmentationSpec(...))``."""


@hookspec
def register_variants(register: Callable[[VariantSpec], None]) -> None:
    """Offer training variants, each a named recipe of parts and settings: ``register(VariantSpec(...))``.

    ``harness train --variant NAME`` runs one; its parts are looked up by name when it runs.
    """


@hookspec
def register_training_data(register: Callable[[TrainingDataSpec], None]) -> None:
    """Offer named training sets: ``register(TrainingDataSpec(...))``.

    ``harness train --data NAME`` calls the spec's ``load()`` (which may download) and reads the
    file it returns.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``harness`` command line: call ``cli.add_command(...)``.

    Called once when the command line starts, so keep imports inside the command functions.
    """


@hookspec
def register_rerankers(register: Callable[[RerankerSpec], None]) -> None:
    """Offer re-rankers: call ``register(RerankerSpec(...))`` once per re-ranker.

    Called the first time anything asks for the list of re-rankers (``harness list rerankers``,
    ``harness run --rerank``). ``RerankerSpec.load`` is called only when that re-ranker runs.
    """


@hookspec
def register_run_formats(register: Callable[[RunFormatSpec], None]) -> None:
    """Offer run formats: call ``register(RunFormatSpec(...))`` once per format.

    Called the first time anything reads a run file (``harness score``, ``harness list
    run-formats``). A format's reader is called only when a file in that format is read.
    """

"""An example harness plugin: one retriever, one encoder, one suite, one command, and a training
loss with a variant that uses it.

harness imports this module through the ``harness`` entry point declared in ``pyproject.toml`` and
calls the hook functions below. Hooks only hand over cheap spec records; the retriever and the
suite are built by the specs' ``load`` functions, which import their modules lazily.
"""

from __future__ import annotations

from harness import hookimpl
from harness.api import (
    EncoderSpec, LossSpec, ModelMeta, Options, Recipe, RetrieverSpec, SuiteSpec, VariantSpec, boolean, integer,
    positive_float,
)

__version__ = "0.1.0"

#: The retriever's options, each with its default and the values it accepts
#: (``harness run -o lowercase=false`` overrides; a value it refuses stops before ``load``).
RETRIEVER_OPTIONS = Options({"lowercase": boolean(True, help="match words in any case")})
ENCODER_OPTIONS = Options({"dim": integer(256, min=2, max=65_536, help="hash buckets: the vectors' width")})
LOSS_OPTIONS = Options({"margin": positive_float(1.0, help="the hinge's margin")})


def load_retriever(**options):
    """``RetrieverSpec.load``: called only when ``example-overlap`` runs, with every declared
    option's value (given or default), already checked and converted."""
    from harness_plugin_example.retriever import OverlapRetriever

    return OverlapRetriever(**options)


def load_encoder(**options):
    """``EncoderSpec.load``: called only when ``example-hashing`` encodes."""
    from harness_plugin_example.encoder import HashingEncoder

    return HashingEncoder(**options)


def load_suite():
    """``SuiteSpec.load``: called only when ``example-capitals`` is evaluated."""
    from harness_plugin_example.suite import capitals_suite

    return capitals_suite()


def load_loss(**options):
    """``LossSpec.load``: called only when a variant trains with ``example-margin`` (imports torch)."""
    from harness_plugin_example.loss import MarginLoss

    return MarginLoss(**options)


@hookimpl
def register_losses(register):
    register(
        LossSpec(
            name="example-margin",
            description="example plugin: hinge loss max(0, margin - s(q, p+) + s(q, p-)) over the batch's passages",
            load=load_loss,
            options=LOSS_OPTIONS,
        )
    )


@hookimpl
def register_variants(register):
    # A variant is a recipe of registered parts: here DPR's recipe with the example loss.
    register(
        VariantSpec(
            name="example-margin",
            description="example plugin: separate encoders trained with the margin loss",
            recipe=Recipe(loss=("example-margin", {"margin": 1.0})),
            reference="the example plugin's docs",
        )
    )


@hookimpl
def register_retrievers(register):
    register(
        RetrieverSpec(
            name="example-overlap",
            description="example plugin: ranks passages by how many distinct question words occur in title + text",
            load=load_retriever,
            options=RETRIEVER_OPTIONS,
            # no weights and no training data: on every suite it is zero-shot
            meta=ModelMeta(model="example-overlap", license="Apache-2.0", trained_on=()),
        )
    )


@hookimpl
def register_encoders(register):
    # The built-in dense engine turns every registered encoder into a retriever of the same name:
    # `harness run --retriever example-hashing -o dim=512 -o index=hnsw --suite ...`.
    register(
        EncoderSpec(
            name="example-hashing",
            description="example plugin: hashed bag-of-words vectors (CRC-32 buckets, L2-normalised)",
            load=load_encoder,
            options=ENCODER_OPTIONS,
        )
    )


@hookimpl
def register_suites(register):
    register(
        SuiteSpec(
            name="example-capitals",
            description="example plugin: 10 questions about the capitals of made-up countries",
            load=load_suite,
            match="string",
            synthetic=True,
        )
    )


@hookimpl
def register_commands(cli):
    import click  # already imported by the harness command line, so this costs nothing

    @cli.command("example-hello")
    @click.option("--name", default="world", show_default=True, help="Whom to greet.")
    def example_hello(name: str) -> None:
        """Say hello from the example plugin (shows how a plugin adds a command)."""
        from harness_plugin_example.suite import capitals_suite  # imports belong inside commands

        suite = capitals_suite()
        click.echo(
            f"hello, {name}, from harness-plugin-example {__version__}: suite {suite.name!r} has "
            f"{len(suite.questions)} questions over {len(suite.corpus)} passages"
        )

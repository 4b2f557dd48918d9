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

    from harness.api import EncoderSpec, MetricSpec, RerankerSpec, RetrieverSpec, SuiteSpec

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

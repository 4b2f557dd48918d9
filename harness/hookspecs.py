"""The extension points of harness.

Every registry hook has the same shape: it receives a ``register`` callable and calls it once per
thing it offers, with a spec record from :mod:`harness.types`. Specs are cheap metadata; nothing
heavy may be imported or read while registering. Implement hooks with ``@harness.hookimpl`` in a
module exposed through the ``harness`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("harness")


@hookspec
def register_retrievers(register: Callable[[Any], None]) -> None:
    """Offer retrievers: call ``register(RetrieverSpec(...))`` once per retriever.

    Called the first time anything asks for the list of retrievers (``harness list retrievers``,
    ``harness run``). ``RetrieverSpec.load`` is called only when that retriever runs.
    """


@hookspec
def register_suites(register: Callable[[Any], None]) -> None:
    """Offer benchmark suites: call ``register(SuiteSpec(...))`` once per suite.

    Called the first time anything asks for the list of suites. ``SuiteSpec.load`` is called
    only when that suite is evaluated.
    """


@hookspec
def register_metrics(register: Callable[[Any], None]) -> None:
    """Offer metrics over first-hit ranks: call ``register(MetricSpec(...))`` once per metric.

    Called the first time anything asks for the list of metrics.
    """


@hookspec
def register_commands(cli: Any) -> None:
    """Add subcommands to the ``harness`` command line: ``cli`` is its :class:`click.Group`.

    Called once when the command line starts, so keep imports inside the command functions.
    """

"""The built-in ``demo`` suite: a SYNTHETIC, entity-centric world in the style of EntityQuestions.

Generated deterministically by code (:mod:`.world`), no downloads: for trying the harness offline.
Its numbers are not comparable to any published benchmark.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.api import Suite, SuiteSpec

from .world import DEFAULT_SEED, DESCRIPTION, Entity, World, generate_world


@functools.cache
def load_demo_suite() -> Suite:
    """The demo suite (generated once per process)."""
    return generate_world(DEFAULT_SEED).suite()


@hookimpl
def register_suites(register):
    register(SuiteSpec(name="demo", description=DESCRIPTION, load=load_demo_suite, match="string", synthetic=True))


__all__ = ["DEFAULT_SEED", "DESCRIPTION", "Entity", "World", "generate_world", "load_demo_suite", "register_suites"]

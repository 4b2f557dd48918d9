"""The built-in ``demo`` suites: a SYNTHETIC, entity-centric world in the style of EntityQuestions.

Generated deterministically by code (:mod:`.world`), no downloads: for trying the harness offline.
Its numbers are not comparable to any published benchmark.

- ``demo``: the test suite, 24 relations.
- ``demo-train`` and ``demo-dev``: training and development questions over the same world and
  corpus for the 12 :data:`~.splits.TRAIN_RELATIONS` only, with subjects disjoint from ``demo``'s
  and from each other's; ``demo`` then has seen and unseen relations.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.api import Suite, SuiteSpec

from .splits import SPLIT_DESCRIPTIONS, TRAIN_RELATIONS
from .world import DEFAULT_SEED, DESCRIPTION, Entity, World, generate_world


@functools.cache
def demo_world() -> World:
    """The default demo world (generated once per process)."""
    return generate_world(DEFAULT_SEED)


@functools.cache
def load_demo_suite() -> Suite:
    """The demo suite (generated once per process)."""
    return demo_world().suite()


@functools.cache
def load_demo_split(split: str) -> Suite:
    """``demo-train`` or ``demo-dev`` (generated once per process); its corpus is the very
    corpus object of :func:`load_demo_suite`."""
    return demo_world().suite(split, corpus=load_demo_suite().corpus)


def load_demo_train_suite() -> Suite:
    return load_demo_split("train")


def load_demo_dev_suite() -> Suite:
    return load_demo_split("dev")


@hookimpl
def register_suites(register):
    register(SuiteSpec(name="demo", description=DESCRIPTION, load=load_demo_suite, match="string", synthetic=True,
                       train=("demo-train",)))
    register(SuiteSpec(name="demo-train", description=SPLIT_DESCRIPTIONS["train"], load=load_demo_train_suite,
                       match="string", synthetic=True, train=("demo-train",)))
    register(SuiteSpec(name="demo-dev", description=SPLIT_DESCRIPTIONS["dev"], load=load_demo_dev_suite,
                       match="string", synthetic=True, train=("demo-train",)))


__all__ = [
    "DEFAULT_SEED",
    "DESCRIPTION",
    "TRAIN_RELATIONS",
    "Entity",
    "World",
    "demo_world",
    "generate_world",
    "load_demo_dev_suite",
    "load_demo_split",
    "load_demo_suite",
    "load_demo_train_suite",
    "register_suites",
]

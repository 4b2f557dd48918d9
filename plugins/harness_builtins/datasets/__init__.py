"""The real benchmark suites, one per spec in ``datasets_spec/`` (NQ, TriviaQA, WebQuestions,
CuratedTREC, SQuAD, EntityQuestions, ...).

Registering reads only the small TOML specs. Loading a suite fetches its question files (with
checksums; see :mod:`harness.download`) and gives it a corpus that is opened, and if need be
downloaded and converted, only when a passage is first needed.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.specs import load_catalog
from harness.types import SuiteSpec


def _load(name: str):
    from harness_builtins.datasets.loading import load_suite

    return load_suite(name)


@hookimpl
def register_suites(register):
    for spec in load_catalog().suites.values():
        register(
            SuiteSpec(
                name=spec.name,
                description=spec.description,
                load=functools.partial(_load, spec.name),
                match=spec.match,
            )
        )

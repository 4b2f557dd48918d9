"""The real benchmark suites, one per spec in the project's ``datasets_spec/suites/`` (NQ,
TriviaQA, WebQuestions, CuratedTREC, SQuAD, EntityQuestions, ...) and in the folders of
``$HARNESS_SPEC_PATH``; DPR's training sets (``training/``, ``harness train --data
biencoder-nq-train``); the ``harness data`` command (fetch, verify, split, where); and the
published numbers of the papers (``published/``, one TOML file per table), shown beside results
and checked by ``harness reproduce``; and the run files the papers' authors released (``runs/``,
one TOML file per run: ``harness list runs``, ``harness score --run NAME``, ``harness reproduce
--runs``); and the passage vectors retrievers' authors released (``embeddings/``, one TOML file
per release: ``harness list embeddings``, ``harness data fetch NAME``, a dense retriever's ``-o
embeddings=NAME``). Every user spec folder has the same layout.

Registering reads only the small TOML specs. Loading a suite fetches its question files (with
checksums; see :mod:`harness.data.download`) and gives it a corpus that is opened, and if need be
downloaded and converted, only when a passage is first needed.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.plugins import strict_mode
from harness.api import SuiteSpec, TrainingDataSpec


def _load(name: str):
    from harness_builtins.datasets.loading import load_suite

    return load_suite(name)


@hookimpl
def register_suites(register):
    from harness_builtins.datasets.catalog import catalog

    for spec in catalog(strict=strict_mode()).suites.values():
        register(
            SuiteSpec(
                name=spec.name,
                description=spec.description,
                load=functools.partial(_load, spec.name),
                match=spec.match,
                train=spec.train,
            )
        )


def _training(name: str):
    from harness_builtins.datasets.loading import training_file

    return training_file(name)


@hookimpl
def register_training_data(register):
    from harness_builtins.datasets.catalog import catalog

    for spec in catalog(strict=strict_mode()).training.values():
        register(TrainingDataSpec(name=spec.name, description=spec.description, load=functools.partial(_training, spec.name)))


@hookimpl
def register_published(register):
    from harness_builtins.datasets.catalog import published_tables

    for table in published_tables(strict=strict_mode()):
        register(table)


@hookimpl
def register_published_runs(register):
    from harness_builtins.datasets.catalog import published_runs

    for run in published_runs(strict=strict_mode()):
        register(run)


@hookimpl
def register_embeddings(register):
    from harness_builtins.datasets.catalog import released_embeddings

    for release in released_embeddings(strict=strict_mode()):
        register(release)


@hookimpl
def register_commands(cli):
    from harness_builtins.datasets.commands import data

    cli.add_command(data)

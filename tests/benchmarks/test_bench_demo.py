"""Speed of the synthetic ``demo`` suite's generation (target: well under a second).

Benchmarks are skipped by default (``--benchmark-skip`` in pyproject's addopts). Run them with::

    pytest tests/benchmarks/test_bench_demo.py --benchmark-only
"""

from __future__ import annotations

import pytest

from harness_builtins.demo import generate_world


@pytest.mark.benchmark
def test_generate_world(benchmark):
    world = benchmark(generate_world)
    assert 4000 <= len(world.passages) <= 8500


@pytest.mark.benchmark
def test_generate_suite_and_fingerprints(benchmark):
    """Everything ``load_demo_suite`` does on a cache miss, plus the fingerprints a run records."""

    def load():
        suite = generate_world().suite()
        return suite.corpus.fingerprint, suite.questions_fingerprint

    corpus_fingerprint, questions_fingerprint = benchmark(load)
    assert corpus_fingerprint.startswith("sha256:") and questions_fingerprint.startswith("sha256:")

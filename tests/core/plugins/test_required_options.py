"""A retriever whose required option is missing is refused by name before any work: the suite is
not loaded (for ``nq``, not downloaded), the model is not built, nothing is written."""

from __future__ import annotations

import time

import pytest

import harness.registry
from harness.cli.main import main
from harness.errors import HarnessError


@pytest.fixture
def suite_loads(monkeypatch):
    """Every suite spec looked up while the test runs (none should be)."""
    looked_up: list[str] = []
    real = harness.registry.suites

    def suites():
        looked_up.append("suites")
        return real()

    monkeypatch.setattr(harness.registry, "suites", suites)
    return looked_up


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["-r", "dense", "-s", "demo"], "retriever 'dense' needs option query_model (hub id or local directory)"),
        (["-r", "dense", "-s", "nq", "-o", "passage_model=x"],
         "retriever 'dense' needs option query_model (hub id or local directory)"),
        (["-r", "st", "-s", "demo"], "retriever 'st' needs option model (hub id or local directory)"),
        (["-r", "trained", "-s", "demo"], "retriever 'trained' needs option path (a harness train output folder)"),
        (["-r", "adapt", "-s", "demo", "-o", "query_encoder=dpr-nq"],
         "retriever 'adapt' needs option passage_encoder (an encoder name or a checkpoint folder)"),
        (["-r", "specialised", "-s", "demo"],
         "retriever 'specialised' needs option path (the output folder of harness train --variant specialised)"),
    ],
    ids=["dense-demo", "dense-nq", "st", "trained", "adapt", "specialised"],
)
def test_a_missing_required_option_is_refused_before_the_suite_is_loaded(capsys, tmp_path, suite_loads, argv, expected):
    for kind in ("retrievers", "suites", "metrics", "rerankers"):  # plugins registered before the clock starts
        harness.registry.registry(kind)
    capsys.readouterr()
    start = time.perf_counter()
    code = main(["run", *argv, "--results-dir", str(tmp_path), "--cache-dir", str(tmp_path / "cache")])
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("harness: warning:")]
    assert code == 2, err
    assert lines == [f"harness: error: {expected}"], err
    assert suite_loads == []
    assert not any(tmp_path.iterdir())
    assert seconds < 0.5, f"refused after {seconds:.2f}s"


def test_the_required_option_given_passes_the_check(suite_loads):
    found = harness.registry.resolve("retrievers", "dense", {"query_model": "some/model"})
    assert found.options == {"query_model": "some/model"}
    assert harness.registry.resolve("encoders", "st", {"model": "m"}).options == {"model": "m"}
    assert harness.registry.resolve("retrievers", "minilm", {}).options == {}  # its model has a default
    with pytest.raises(HarnessError, match=r"^encoder 'dense' needs option query_model"):
        harness.registry.load("encoders", "dense", {"passage_model": "p"})

"""Shared fixtures for the test suite."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

#: The real question sets: ``<repo>/../shared/data`` (tests/ -> repo root -> its parent).
SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to the shared question data (``shared/data/README.md``); skips the test when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared question data not found at {SHARED_DATA} (see shared/data/README.md)")
    return SHARED_DATA


@contextlib.contextmanager
def registries_with_fake_retrievers():
    """The installed plugins plus ``tests/fake_retrievers.py`` (a Java-free retriever)."""
    import harness.registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.registry import KINDS, Registry

    import fake_retrievers

    manager = loaded_plugins().manager
    if not manager.is_registered(fake_retrievers):
        register_plugin(manager, fake_retrievers, "tests-fake")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness.registry, "_cache", {kind: Registry.collect(manager, kind) for kind in KINDS})
        try:
            yield
        finally:
            manager.unregister(fake_retrievers)


@pytest.fixture
def test_registries():
    with registries_with_fake_retrievers():
        yield

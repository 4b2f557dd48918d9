"""Shared fixtures for the test suite."""

from __future__ import annotations

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


@pytest.fixture
def test_registries():
    """The installed plugins plus ``tests/fake_retrievers.py`` (a Java-free retriever)."""
    from fake_retrievers import registries_with_fake_retrievers

    with registries_with_fake_retrievers():
        yield

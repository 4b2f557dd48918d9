"""Where things are, for tests at any depth of the test tree."""

from __future__ import annotations

from pathlib import Path

#: ``tests/``
TESTS = Path(__file__).resolve().parent.parent
#: The repository root.
REPO = TESTS.parent
#: The real question sets: ``<repo>/../shared/data`` (present in this project's CI; see tests/conftest.py).
SHARED_DATA = REPO.parent / "shared" / "data"

"""The real question sets the tests read, wherever a checkout finds them.

The tests that check the protocol against real data read the public question files laid out as in
``../shared/data`` (``dpr-qas/``, ``nq-open/``, ``entityquestions/``; see that folder's README).
They are found, in this order:

1. ``$HARNESS_TEST_DATA`` or ``<repo>/../shared/data``, when the folder is there (this project's CI);
2. a copy fetched earlier into ``<harness cache>/test-data`` (complete when its ``.complete``
   marker is there);
3. fetched now, with harness's own downloader, from the URLs and sha256 sums the built-in suite
   specs pin (the same files a user's ``harness data fetch`` gets), unless ``HARNESS_OFFLINE`` is
   set or the network cannot be reached;
4. otherwise the test is skipped with :data:`SKIP_REASON`, and the run ends with one line saying
   how many tests were skipped for want of data and how to get it (``tests/conftest.py``).
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

import pytest

from helpers.paths import SHARED_DATA

#: The start of the skip reason of every test skipped for want of the real question sets.
SKIP_REASON = "needs the real question sets"
#: Where a fetched copy lives (under harness's cache folder).
FETCHED_NAME = "test-data"
ENV = "HARNESS_TEST_DATA"
HOW_TO_GET = (
    f"point ${ENV} at a copy laid out as ../shared/data, or run the tests once with a network "
    "(they are fetched with harness's downloader into the harness cache's test-data folder)"
)


def local_copy(root: Path, url: str) -> Path:
    """Where the file a spec downloads from ``url`` lies in a folder laid out as ``../shared/data``."""
    name = url.rsplit("/", 1)[1]
    if "/anserini-tools/" in url:
        return root / "dpr-qas" / name
    if "/natural-questions/" in url:
        return root / "nq-open" / name
    return root / "entityquestions" / url.split("/dataset/", 1)[1]


def spec_files() -> dict[str, tuple[str, str | None]]:
    """Every question file the built-in suite and training specs pin: its path in the layout, to
    (url, sha256)."""
    from harness.data.catalog import load_catalog
    from harness_builtins.datasets.catalog import SPEC_DIR

    catalog = load_catalog([SPEC_DIR])
    out: dict[str, tuple[str, str | None]] = {}
    for spec in [*catalog.suites.values(), *catalog.training.values()]:
        for part in getattr(spec, "parts", ()):
            remote = getattr(part, "file", None)
            url = getattr(remote, "url", None)
            if not url or not any(s in url for s in ("/anserini-tools/", "/natural-questions/", "/EntityQuestions/")):
                continue
            out[local_copy(Path("."), url).as_posix()] = (url, getattr(remote, "sha256", None))
    return out


def _fetched_root() -> Path:
    from harness.util.cache import cache_dir

    return cache_dir() / FETCHED_NAME


def _network() -> bool:
    if os.environ.get("HARNESS_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    try:
        socket.create_connection(("raw.githubusercontent.com", 443), timeout=3).close()
    except OSError:
        return False
    return True


def _fetch_all(root: Path) -> None:
    from harness.data.download import RemoteFile, fetch

    for path, (url, sha256) in sorted(spec_files().items()):
        fetch(RemoteFile(url=url, path=path, sha256=sha256), data_dir=root, progress=False)
    templates = "entityquestions/relation_query_templates.json"
    base = next((u for u, _ in spec_files().values() if "/EntityQuestions/" in u), None)
    if base is not None:
        url = base.split("/dataset/", 1)[0] + "/relation_query_templates.json"
        fetch(RemoteFile(url=url, path=templates), data_dir=root, progress=False)
    (root / ".complete").write_text("complete\n", encoding="utf-8")


@functools.cache
def _find() -> Path | None:
    explicit = os.environ.get(ENV)
    if explicit:
        return Path(explicit).expanduser() if Path(explicit).expanduser().is_dir() else None
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    fetched = _fetched_root()
    if (fetched / ".complete").is_file():
        return fetched
    if not _network():
        return None
    from harness.errors import HarnessError

    try:
        _fetch_all(fetched)
    except (HarnessError, OSError):  # a partial fetch resumes next time; these tests skip now
        return None
    return fetched


def real_data_dir() -> Path:
    """The folder of real question sets, or skip the calling test with :data:`SKIP_REASON`."""
    found = _find()
    if found is None:
        pytest.skip(f"{SKIP_REASON} ({HOW_TO_GET})")
    return found


"""Shared fixtures for the test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Fixtures shared across test packages live in ``tests/helpers/``; they are registered here, once,
#: so no test module imports another.
pytest_plugins = [
    "helpers.dense_models",
    "helpers.training_models",
    "helpers.inloop",
    "helpers.released_world",
    "helpers.tool_runs",
    "helpers.registry_fixtures",
]

@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real question sets, laid out as ``../shared/data`` (found or fetched by
    ``helpers.real_data``); skips the test when none can be had."""
    from helpers.real_data import real_data_dir

    return real_data_dir()


_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """``-m core`` selects the core's own tests (``tests/core/``, without slow ones by default)."""
    core = _TESTS / "core"
    for item in items:
        if core in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.core)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line, at the end, when tests were skipped for want of the real question sets."""
    from helpers.real_data import HOW_TO_GET, SKIP_REASON

    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(1 for report in skipped if SKIP_REASON in str(getattr(report, "longrepr", "")))
    if count:
        terminalreporter.write_line(f"{count} tests were skipped for want of the real question sets: {HOW_TO_GET}.")


@pytest.fixture
def test_registries():
    """The installed plugins plus ``tests/helpers/fake_retrievers.py`` (a Java-free retriever)."""
    from helpers.fake_retrievers import registries_with_fake_retrievers

    with registries_with_fake_retrievers():
        yield


#: Settings a user's (or CI's) environment may carry that change what the tests expect; each test
#: starts without them and sets the ones it exercises. HARNESS_CACHE_DIR and HARNESS_JAVA_HOME stay:
#: they say where things are, not how the harness behaves; so does HARNESS_TEST_ARTIFACTS, the
#: folder the browser tests copy their screenshots into (tests/core/board/test_html_board.py).
_BEHAVIOUR_ENV = (
    "HARNESS_STRICT_PLUGINS",
    "HARNESS_DISABLE_PLUGINS",
    "HARNESS_SPEC_PATH",
    "HARNESS_ART_MIRROR",
    "HARNESS_RESULTS_DIR",
    "HARNESS_DATA_DIR",
    "HARNESS_OFFLINE",
    "HARNESS_DEBUG",
    "HARNESS_JVM_OPTIONS",
)


@pytest.fixture(autouse=True)
def _no_behaviour_env(monkeypatch):
    """Tests do not depend on the settings of the shell that runs them (CI exports
    ``HARNESS_STRICT_PLUGINS=1``)."""
    for name in _BEHAVIOUR_ENV:
        monkeypatch.delenv(name, raising=False)


#: The distribution whose plugins the tests run with; other installed plugins are left out.
OWN_DISTRIBUTION = "odqa-harness"


@pytest.fixture(autouse=True, scope="session")
def _own_plugins_only():
    """Tests see this checkout's built-in plugins and nothing else a user may have installed, so
    their expectations (listings, names, numbers) do not depend on the environment. Tests of
    discovery itself pass their own entry points or run ``harness`` in a subprocess."""
    from importlib.metadata import entry_points

    from harness import plugins

    own = [
        ep
        for ep in entry_points(group=plugins.ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.metadata["Name"] == OWN_DISTRIBUTION
    ]
    real = plugins.load_plugins

    def own_only(eps=None, **kwargs):
        return real(own if eps is None else eps, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plugins, "load_plugins", own_only)
        plugins.loaded_plugins.cache_clear()
        yield
    plugins.loaded_plugins.cache_clear()

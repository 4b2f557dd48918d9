"""A third-party plugin as the tutorial shows it: ``load`` receives every declared option resolved
(with or without the merge the tutorial once showed), and an exception from the plugin's own
code is that plugin's failure, in one line naming what ran and the distribution."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import PathDistribution
from pathlib import Path

import pytest

from harness.errors import HarnessError
from helpers.cli_errors import one_line_error, run_cli
from helpers.paths import REPO

#: The plugin's package. Its classes take no defaults of their own: a loader that is not given
#: every option fails, and ``index`` refuses anything but the declared types, as a library would.
PLUGIN = '''
from harness import hookimpl
from harness.api import Hit, Options, RetrieverSpec, Suite, SuiteSpec, boolean, positive_int

OPTIONS = Options({"lowercase": boolean(True), "min_df": positive_int(1, max=100)})
#: A plain dict of declarations, merged the way the tutorial once showed.
MERGED = {"lowercase": boolean(True), "min_df": positive_int(1, max=100)}


class Tfidf:
    def __init__(self, *, lowercase, min_df):
        self.lowercase, self.min_df = lowercase, min_df

    def parameters(self):
        return {"lowercase": self.lowercase, "min_df": self.min_df}

    def index(self, corpus, context):
        if type(self.lowercase) is not bool or type(self.min_df) is not int:
            raise TypeError(f"The 'lowercase' parameter must be bool, got {self.lowercase!r}")
        self.ids = [p.id for p in corpus]

    def search(self, queries, k, context):
        return [[Hit(passage_id=pid, score=float(-i)) for i, pid in enumerate(self.ids[:k])] for _ in queries]


class Broken(Tfidf):
    def index(self, corpus, context):
        vocabulary = {}
        return vocabulary["missing"]


def load_tutorial(**options):
    return Tfidf(**options)


def load_merged(**options):
    return Tfidf(**{**MERGED, **options})


def load_broken(**options):
    return Broken(**options)


def load_failing(**options):
    raise RuntimeError("model file is corrupt")


def tiny():
    return Suite.from_lists(["Who wrote Hamlet?", "Capital of France?"], [["Shakespeare"], ["Paris"]],
                            ["Hamlet is a play by Shakespeare.", "Paris is the capital of France."], name="tiny")


@hookimpl
def register_retrievers(register):
    register(RetrieverSpec(name="tfidf", description="d", load=load_tutorial, options=OPTIONS))
    register(RetrieverSpec(name="tfidf-merged", description="d", load=load_merged, options=MERGED))
    register(RetrieverSpec(name="tfidf-broken", description="d", load=load_broken, options=OPTIONS))
    register(RetrieverSpec(name="tfidf-failing", description="d", load=load_failing, options=OPTIONS))


@hookimpl
def register_suites(register):
    register(SuiteSpec(name="tiny", description="d", load=tiny))


@hookimpl
def register_commands(cli):
    @cli.command("tfidf-stats")
    def stats():
        """Vocabulary statistics."""
        raise LookupError("no vocabulary yet")
'''

DIST = "harness-tfidf"
MODULE = "harness_tfidf_plugin"


def _distribution(root: Path, *, name: str = DIST, version: str = "0.3", module: str = MODULE, entry: str = "tfidf",
                  source: str = PLUGIN) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[harness]\n{entry} = {module}\n")
    (root / module).mkdir()
    (root / module / "__init__.py").write_text(textwrap.dedent(source))
    return info


@pytest.fixture
def tfidf_plugin(tmp_path, monkeypatch):
    """The built-in plugins and the tfidf distribution, loaded through its entry point."""
    from harness import plugins, registry

    info = _distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    real = plugins.load_plugins()  # the tests' own plugins (tests/conftest.py)
    ours = plugins.load_plugins(list(PathDistribution(info).entry_points))
    builtin_infos = real.plugins
    for plugin in ours.plugins:
        real.manager.register(ours.manager.unregister(name=plugin.name), name=plugin.name)
    loaded = plugins.LoadedPlugins(manager=real.manager, plugins=(*builtin_infos, *ours.plugins))
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    yield loaded
    sys.modules.pop(MODULE, None)


@pytest.mark.parametrize("name", ["tfidf", "tfidf-merged"])
def test_load_gets_every_declared_option_resolved(tfidf_plugin, name):
    from harness import registry

    model = registry.load("retrievers", name, {"min_df": "3"}).value
    assert model.parameters() == {"lowercase": True, "min_df": 3}
    assert type(model.lowercase) is bool and type(model.min_df) is int
    model = registry.load("retrievers", name).value  # nothing given: every default
    assert model.parameters() == {"lowercase": True, "min_df": 1}


@pytest.mark.parametrize("name", ["tfidf", "tfidf-merged"])
def test_a_plugin_declared_as_the_tutorial_shows_runs(capsys, tmp_path, tfidf_plugin, name):
    code, out, err = run_cli(capsys, "run", "-r", name, "-s", "tiny", "--k", "1", "-o", "lowercase=false",
                             "--results-dir", str(tmp_path / "results"), "--no-progress")
    assert code == 0, err
    (written,) = (tmp_path / "results").iterdir()
    import json

    assert json.loads(written.read_text())["retriever"]["parameters"] == {"lowercase": False, "min_df": 1}


@pytest.mark.parametrize("name, error", [
    ("tfidf-broken", "KeyError: 'missing'"),
    ("tfidf-failing", "RuntimeError: model file is corrupt"),
])
def test_an_exception_in_a_plugins_code_is_that_plugins_failure(capsys, tmp_path, monkeypatch, tfidf_plugin, name, error):
    code, out, err = run_cli(capsys, "run", "-r", name, "-s", "tiny", "--results-dir", str(tmp_path / "results"))
    line = one_line_error(code, err, status=1)
    assert line == (f"harness: error: retriever '{name}' (plugin {DIST}) failed: {error} "
                    f"(HARNESS_DEBUG=1 shows the traceback)")
    assert "internal error" not in err and not (tmp_path / "results").exists()
    monkeypatch.setenv("HARNESS_DEBUG", "1")
    from harness.cli.main import main

    with pytest.raises((KeyError, RuntimeError)):
        main(["run", "-r", name, "-s", "tiny", "--results-dir", str(tmp_path / "results")])


def test_a_failing_plugin_command_is_that_plugins_failure(capsys, tfidf_plugin):
    code, out, err = run_cli(capsys, "tfidf-stats")
    line = one_line_error(code, err, status=1)
    assert line == (f"harness: error: command 'tfidf-stats' (plugin {DIST}) failed: LookupError: no vocabulary yet "
                    f"(HARNESS_DEBUG=1 shows the traceback)")


def test_from_python_the_exception_is_raised_unchanged_with_a_note(tfidf_plugin):
    from harness import registry
    from harness.evaluate import evaluate

    with pytest.raises(KeyError) as info:
        evaluate("tfidf-broken", "tiny", show_progress=False)
    assert f"retriever 'tfidf-broken' (plugin {DIST}) failed: KeyError: 'missing'" in info.value.__notes__
    with pytest.raises(RuntimeError) as info:
        registry.load("retrievers", "tfidf-failing")
    assert any(f"(plugin {DIST}) failed" in note for note in info.value.__notes__)


def test_a_refused_option_and_the_cores_own_faults_are_not_the_plugins(capsys, tmp_path, monkeypatch, tfidf_plugin):
    code, out, err = run_cli(capsys, "run", "-r", "tfidf", "-s", "tiny", "-o", "min_df=1000")
    one_line_error(code, err, "retriever 'tfidf': option min_df must be an integer from 1 to 100, got 1000")
    from harness import evaluate as evaluate_module

    def cost_record(*args, **kwargs):
        raise ZeroDivisionError("the core's own fault")

    monkeypatch.setattr(evaluate_module, "cost_record", cost_record)
    code, out, err = run_cli(capsys, "run", "-r", "tfidf", "-s", "tiny", "--results-dir", str(tmp_path / "r"), "--no-progress")
    one_line_error(code, err, "harness: internal error: ZeroDivisionError: the core's own fault", status=1)
    assert DIST not in err


def test_a_builtin_plugins_fault_stays_harnesss_internal_error(capsys, tmp_path, monkeypatch):
    from harness_builtins.bm25 import retriever as bm25

    def index(self, corpus, context):
        raise IndexError("a bug in the built-in")

    monkeypatch.setattr(bm25.BM25Retriever, "index", index)
    code, out, err = run_cli(capsys, "run", "-r", "bm25", "-s", "demo", "--results-dir", str(tmp_path), "--no-progress")
    line = one_line_error(code, err, status=1)
    assert line.startswith("harness: internal error: ")
    assert "IndexError: a bug in the built-in" in line


def test_the_tutorials_loader_is_the_one_way():
    guide = (REPO / "docs" / "writing-plugins.md").read_text(encoding="utf-8")
    assert "{**RETRIEVER_OPTIONS, **options}" not in guide and "return OverlapRetriever(**options)" in guide
    example = (REPO / "examples" / "harness-plugin-example" / "src" / "harness_plugin_example" / "__init__.py").read_text()
    assert "{**RETRIEVER_OPTIONS" not in example and "OverlapRetriever(**options)" in example


# --- two copies of one distribution ------------------------------------------------------------


def test_two_installed_copies_of_one_distribution_are_both_named(tmp_path):
    """Two versions of one distribution in two folders on sys.path: Python imports the first and
    importlib.metadata.entry_points() drops the second without a word; harness names both."""
    for folder, version in (("first", "1.0"), ("second", "2.0")):
        _distribution(tmp_path / folder, name="harness-twice", version=version, module=f"twice_{folder}",
                      entry="twice", source="")
    env_path = f"{tmp_path / 'first'}:{tmp_path / 'second'}"
    script = ("from harness.plugins import installed_entry_points\n"
              "used, shadowed = installed_entry_points()\n"
              "print([ep.value for ep in used if ep.name == 'twice'], [(a.value, b.value) for a, b in shadowed])\n")
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                           env={**_env(), "PYTHONPATH": env_path}, timeout=120)
    assert found.stdout.strip() == "['twice_first'] [('twice_second', 'twice_first')]", found.stderr
    shown = subprocess.run([sys.executable, "-m", "harness.cli.main", "plugins"], capture_output=True, text=True, cwd=REPO,
                           env={**_env(), "PYTHONPATH": env_path}, timeout=120)
    lines = [line for line in shown.stdout.splitlines() if line.startswith("twice ")]
    assert len(lines) == 2, shown.stdout
    assert lines[0].startswith("twice  harness-twice 1.0  (twice_first)")
    assert lines[1].startswith("twice  harness-twice 2.0  FAILED TO LOAD: another copy of harness-twice (1.0 at ")
    assert str(tmp_path / "first") in lines[1] and str(tmp_path / "second") in lines[1]
    warning = [line for line in shown.stderr.splitlines() if "harness-twice" in line]
    assert len(warning) == 1 and warning[0].startswith("harness: warning: plugin 'twice' (harness-twice 2.0) failed to load")
    strict = subprocess.run([sys.executable, "-m", "harness.cli.main", "list", "suites"], capture_output=True, text=True,
                            cwd=REPO, env={**_env(), "PYTHONPATH": env_path, "HARNESS_STRICT_PLUGINS": "1"}, timeout=120)
    assert strict.returncode == 2 and "harness-twice 2.0" in strict.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_") or k == "HARNESS_CACHE_DIR"}

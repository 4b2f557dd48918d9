"""Reference data and plugins that fail: skipped alone, named, and never a silent pass.

A malformed published table or result file is left out on its own with one line naming it, the
other files keep working, and ``harness reproduce --check`` never passes because of it. A plugin's
failures read the same in every command: ``harness plugins`` shows them on the plugin's line and
the commands that read a registry warn of them, naming both plugins of a clash.
"""

from __future__ import annotations

import json
import types
from importlib.metadata import PathDistribution
from pathlib import Path

import pytest

from harness import hookimpl
from harness.analysis.published import read_published_table
from harness.api import MetricSpec, PublishedTable, RetrieverSpec
from harness.cli.main import main
from harness.errors import HarnessError, InputFileError
from harness.plugins import LoadedPlugins, PluginError, load_plugins, new_plugin_manager, register_plugin
from harness.registry import Registry, skipped
from harness.results.schema import read_result, read_results, result_filename, validate, write_result

from helpers.result_docs import make_result

TABLE = '''
name = "{name}"
title = "T"
citation = "C"
[[rows]]
system = "BM25"
suite = "s"
retriever = "r"
values = {{ 1 = 50.0, 5 = 55.0 }}
'''

DEEP = 'name = "deep"\nx = ' + "[" * 5000 + "]" * 5000 + "\n"


def _spec_folder(root: Path, tables: dict[str, str]) -> Path:
    (root / "published").mkdir(parents=True)
    for file, text in tables.items():
        (root / "published" / file).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def fresh_registries(monkeypatch):
    """Registries built anew from the installed plugins for this test, and dropped after it."""
    from harness import plugins, registry

    monkeypatch.setattr(registry, "_cache", {})
    plugins.loaded_plugins.cache_clear()
    yield
    plugins.loaded_plugins.cache_clear()


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _hits(*hits: int) -> dict:
    return {"all": {f"q{i}": 0 if h else None for i, h in enumerate(hits)}}


# --- published tables ----------------------------------------------------------------------


def test_deeply_nested_published_toml_is_one_line_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_published_table(path)
    assert str(info.value) == f"{path}: TOML nested too deeply"


def test_a_broken_published_file_is_left_out_alone(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    spec = _spec_folder(tmp_path / "specs", {"deep.toml": DEEP, "p-1.toml": TABLE.format(name="p-1")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    code, out, err = _cli(capsys, "list", "published")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert "p-1" in names and "karpukhin2020-table2" in names  # the user's good table and the built-ins
    (warning,) = [line for line in err.splitlines() if "deep.toml" in line]
    assert warning.startswith("harness: warning: plugin 'datasets'") and "register_published" in warning
    assert "TOML nested too deeply" in warning
    (failure,) = registry.registry("published").failures
    assert "deep.toml" in failure


def test_a_table_name_given_twice_keeps_the_first_and_names_both_files(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    builtin = "karpukhin2020-table2"
    first = _spec_folder(tmp_path / "one", {"p-1.toml": TABLE.format(name="p-1"), f"{builtin}.toml": TABLE.format(name=builtin)})
    second = _spec_folder(tmp_path / "two", {"p-1.toml": TABLE.format(name="p-1").replace('title = "T"', 'title = "later"')})
    monkeypatch.setenv("HARNESS_SPEC_PATH", f"{first}:{second}")
    published = registry.registry("published")
    assert published.get("p-1").title == "T"  # the earlier folder wins
    assert published.get(builtin).source.endswith(f"datasets_spec/published/{builtin}.toml")  # the built-in wins
    assert not published.conflicts
    failures = published.failures
    assert len(failures) == 2
    (own,) = [f for f in failures if str(second / "published" / "p-1.toml") in f]
    assert str(first / "published" / "p-1.toml") in own and "also defined in" in own
    (shadow,) = [f for f in failures if str(first / "published" / f"{builtin}.toml") in f]
    assert f"datasets_spec/published/{builtin}.toml" in shadow


def test_a_broken_published_file_never_turns_a_failing_check_into_a_pass(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    spec = _spec_folder(tmp_path / "specs", {"p-1.toml": TABLE.format(name="p-1")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    results = tmp_path / "results"
    write_result(make_result("r", suite="s", ranks=_hits(1, 1, 0, 0)), results)  # top-1 50 (OK), top-5 50 (drift)
    code, out, err = _cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "1 of 2 comparisons drift" in err

    # a broken file next to it: the drift is still found and still fails the check
    (spec / "published" / "deep.toml").write_text(DEEP, encoding="utf-8")
    registry._cache.clear()
    code, out, err = _cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "DRIFT" in out and "1 of 2 comparisons drift" in err
    assert "deep.toml: TOML nested too deeply" in err

    # no drift left, but a table could not be read: the check is incomplete, not passed
    write_result(make_result("r", suite="s", ranks=_hits(1, 1, 0, 0)), results)
    (spec / "published" / "p-1.toml").write_text(TABLE.format(name="p-1").replace("55.0", "50.0"), encoding="utf-8")
    registry._cache.clear()
    code, out, err = _cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "DRIFT" not in out and "the check is incomplete" in err and "deep.toml" in err
    assert _cli(capsys, "reproduce", "--results-dir", str(results))[0] == 0  # a report without --check
    (spec / "published" / "deep.toml").unlink()
    registry._cache.clear()
    assert _cli(capsys, "reproduce", "--results-dir", str(results), "--check")[0] == 0


def test_a_table_name_two_plugins_register_fails_the_check(tmp_path, monkeypatch, capsys):
    from harness import plugins, registry

    table = read_published_table(_spec_folder(tmp_path, {"p-1.toml": TABLE.format(name="p-1")}) / "published" / "p-1.toml")
    manager = new_plugin_manager()
    for name in ("mine", "theirs"):
        register_plugin(manager, _module(name, register_published=lambda register: register(table)), name)
    loaded = LoadedPlugins(manager=manager, plugins=())
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    results = tmp_path / "results"
    write_result(make_result("r", suite="s", ranks=_hits(1, 0)), results)
    code, out, err = _cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "published table 'p-1' is provided by two plugins: 'mine' and 'theirs'" in err


# --- result files --------------------------------------------------------------------------


def _accuracy(doc: dict) -> dict:
    from harness.evaluate import compute_metrics

    doc["metrics"] = compute_metrics(doc["first_hit_ranks"], doc["k"], ["accuracy"])
    return doc


def _two_parts() -> dict:
    return _accuracy(make_result("r", suite="s", ranks={"a": {"q1": 0, "q2": None}, "b": {"q3": 3, "q4": 0}}, depth=5))


def _set(path: str, value):
    def mutate(doc: dict) -> None:
        *keys, last = path.split("/")
        target = doc
        for key in keys:
            target = target[key]
        target[last] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (_set("metrics/accuracy/parts/a/1", 1.0), "'metrics.accuracy'.parts.a is 1.0 at k=1, but its first-hit ranks give 0.5"),
        (_set("metrics/accuracy/macro/5", 0.9), "'metrics.accuracy'.macro is 0.9 at k=5, but the mean over its parts is 0.75"),
        (_set("metrics/accuracy/parts/b/5", 1.5), "'metrics.accuracy'.parts.b is 1.5 at k=5; a metric is from 0 to 1"),
        (_set("metrics/accuracy/macro/20", 0.5), "'metrics.accuracy'.macro has a value for cutoff '20', which 'k' does not list"),
        (_set("metrics/accuracy/parts/c", {"1": 0.5, "5": 0.5}), "'metrics.accuracy'.parts names part 'c'"),
        (_set("metrics/mrr", {"macro": {"1": -0.5, "5": -0.5}, "parts": {"a": {"1": -0.5, "5": -0.5}, "b": {"1": -0.5, "5": -0.5}}}),
         "'metrics.mrr'.parts.a is -0.5 at k=1; a metric is from 0 to 1"),
        (_set("created", "9999"), "'created' must be a UTC time"),
        (_set("created", "2026-13-01T00:00:00Z"), "'created' must be a UTC time"),
    ],
)
def test_inconsistent_result_files_are_refused(tmp_path, mutate, problem):
    doc = _two_parts()
    validate(doc, source="fine.json")
    mutate(doc)
    with pytest.raises(InputFileError) as info:
        validate(doc, source="x.json")
    assert str(info.value).startswith("x.json: ") and problem in str(info.value) and "\n" not in str(info.value)


def test_a_result_file_named_for_another_configuration_is_refused(tmp_path):
    doc = _two_parts()
    path = write_result(doc, tmp_path)
    read_result(path)
    other = tmp_path / result_filename("s", "r", {"a": 2})
    other.write_text(path.read_text())  # a copy under another configuration's name
    with pytest.raises(InputFileError, match=f"does not match the configuration it holds, which harness names {path.name}"):
        read_result(other)
    mine = tmp_path / "my-copy.json"  # a name of the user's own is not harness's form: accepted
    mine.write_text(path.read_text())
    assert read_result(mine).config_key() == read_result(path).config_key()


def test_a_forged_result_is_named_skipped_and_fails_the_check(tmp_path, monkeypatch, capsys, fresh_registries):
    spec = _spec_folder(tmp_path / "specs", {"p-1.toml": TABLE.format(name="p-1").replace("55.0", "50.0")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    results = tmp_path / "results"
    honest = write_result(_accuracy(make_result("r", suite="s", ranks=_hits(1, 1, 0, 0))), results)
    forged = _accuracy(make_result("r", suite="s", params={"a": 2}, ranks=_hits(1, 1, 0, 0)))
    forged["metrics"]["accuracy"]["parts"]["all"]["1"] = 0.99
    bad = results / result_filename("s", "r", {"a": 2})
    bad.write_text(json.dumps(forged))

    with pytest.raises(InputFileError, match="first-hit ranks give"):
        read_results(results)
    seen = []
    assert [r.path for r in read_results(results, on_error=seen.append)] == [honest]
    assert [e.path for e in seen] == [bad]

    code, out, err = _cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1
    assert honest.name in out and bad.name not in out  # the honest one is compared, the forged one not
    (warning,) = [line for line in err.splitlines() if line.startswith("harness: warning:")]
    assert str(bad) in warning and "first-hit ranks give" in warning
    assert "the check is incomplete" in err
    assert _cli(capsys, "reproduce", "--results-dir", str(results))[0] == 0
    bad.unlink()
    assert _cli(capsys, "reproduce", "--results-dir", str(results), "--check")[0] == 0


# --- plugin failures, the same in every command -------------------------------------------


def _module(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, fn in hooks.items():
        setattr(module, hook, hookimpl(fn))
    return module


def _raising(register):
    raise RuntimeError("boom\nsecond line")


def _wrong_record(register):
    register(MetricSpec(name="x", description="", compute=lambda r, k: 0.0))


def _bm25(register):
    register(RetrieverSpec(name="bm25", description="another bm25", load=lambda: None))


def _fine(register):
    register(RetrieverSpec(name="fine-one", description="works", load=lambda: None))


@pytest.fixture
def broken_plugins(monkeypatch):
    from harness import plugins, registry

    manager = new_plugin_manager()
    infos = []
    for name, fn in (("builtin", _bm25), ("clasher", _bm25), ("raiser", _raising), ("wrong", _wrong_record), ("fine", _fine)):
        register_plugin(manager, _module(name, register_retrievers=fn), name)
        infos.append(plugins.PluginInfo(name=name, distribution=f"dist-{name}", version="1.0", module=name,
                                        hooks=("register_retrievers",)))
    loaded = LoadedPlugins(manager=manager, plugins=tuple(infos))
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    return loaded


def _line(name: str, output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.split(" ", 1)[0] == name]
    return line


def test_plugins_shows_each_failure_on_the_plugins_own_line(capsys, broken_plugins):
    code, out, err = _cli(capsys, "plugins")
    assert code == 0
    raiser = _line("raiser", out)
    assert "dist-raiser 1.0" in raiser and "hooks: register_retrievers" in raiser
    assert raiser.endswith("FAILED IN register_retrievers: RuntimeError: boom second line")
    assert _line("wrong", out).endswith("FAILED IN register_retrievers: registered MetricSpec; expected RetrieverSpec")
    clash = "retriever 'bm25' is provided by two plugins: 'builtin' and 'clasher'"
    assert _line("clasher", out).endswith(f"FAILED IN register_retrievers: {clash}")
    assert _line("builtin", out).endswith("UNUSABLE IN register_retrievers: retriever 'bm25' is also provided by 'clasher'")
    assert "FAILED" not in _line("fine", out)


@pytest.mark.parametrize("args", [["list", "retrievers"], ["run", "-r", "fine-one", "-s", "nope"]], ids=" ".join)
def test_every_command_reading_the_registry_warns_of_the_same_failures(capsys, broken_plugins, args):
    code, out, err = _cli(capsys, *args)
    warnings = [line for line in err.splitlines() if line.startswith("harness: warning: ")]
    assert len(warnings) == 3
    assert any("plugin 'raiser' (dist-raiser 1.0) failed in register_retrievers: RuntimeError: boom second line" in w for w in warnings)
    assert any("plugin 'wrong' (dist-wrong 1.0) failed in register_retrievers: registered MetricSpec" in w for w in warnings)
    assert any("'bm25' is provided by two plugins: 'builtin' and 'clasher'" in w for w in warnings)
    if args[0] == "list":
        assert code == 0 and "bm25  UNUSABLE: provided by 'builtin' and 'clasher'" in out and "fine-one" in out


def test_strict_mode_makes_a_clash_an_error_naming_both(capsys, monkeypatch):
    from harness import plugins, registry

    manager = new_plugin_manager()
    for name in ("builtin", "clasher"):
        register_plugin(manager, _module(name, register_retrievers=_bm25), name)
    loaded = LoadedPlugins(manager=manager, plugins=(), strict=True)
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    for args in (["list", "retrievers"], ["plugins"]):
        code, out, err = _cli(capsys, *args)
        assert code == 2 and out == ""
        (line,) = err.strip().splitlines()
        assert line.startswith("harness: error: plugin 'clasher'")
        assert "retriever 'bm25' is provided by two plugins: 'builtin' and 'clasher'" in line


def test_a_hook_reports_what_it_left_out_and_keeps_the_rest(capsys):
    def partly(register):
        register(PublishedTable(name="kept", title="T", citation="C", rows=()))
        skipped(InputFileError("bad.toml", "invalid TOML"))
        register(PublishedTable(name="after", title="T", citation="C", rows=()))

    manager = new_plugin_manager()
    register_plugin(manager, _module("partly", register_published=partly), "partly")
    loaded = LoadedPlugins(manager=manager, plugins=())
    published = Registry.collect(manager, "published", on_failure=loaded.fail)
    assert published.names() == ["after", "kept"]
    assert published.failures == ("plugin 'partly' failed in register_published: bad.toml: invalid TOML",)
    (failure,) = loaded.failures
    assert failure.stage == "register_published" and failure.error == "bad.toml: invalid TOML"
    strict = LoadedPlugins(manager=manager, plugins=(), strict=True)
    with pytest.raises(PluginError, match="failed in register_published: bad.toml: invalid TOML"):
        Registry.collect(manager, "published", on_failure=strict.fail)
    with pytest.raises(HarnessError, match="plugin 'partly' failed in register_published: bad.toml"):
        Registry.collect(manager, "published")
    skipped(InputFileError("other.toml", "invalid TOML"))  # outside a hook: a warning line
    assert capsys.readouterr().err == "harness: warning: other.toml: invalid TOML; skipped\n"


def _distribution(root: Path, name: str, entry: str, module: str) -> PathDistribution:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[harness]\n{entry} = {module}\n")
    return PathDistribution(info)


def test_one_entry_point_name_from_two_distributions_names_both(tmp_path, capsys, monkeypatch):
    from harness import plugins, registry

    first = _distribution(tmp_path / "a", "alpha-dist", "same", "harness_builtins.metrics")
    second = _distribution(tmp_path / "b", "beta-dist", "same", "harness_builtins.bm25")
    eps = [*first.entry_points, *second.entry_points]
    loaded = load_plugins(eps, strict=False)
    assert [(p.name, p.distribution) for p in loaded.plugins] == [("same", "alpha-dist")]
    (failure,) = loaded.failures
    assert failure.distribution == "beta-dist" and "already taken by alpha-dist 1.0" in failure.error
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    code, out, err = _cli(capsys, "plugins")
    assert code == 0 and "hooks: register_metrics" in out
    (losing,) = [line for line in out.splitlines() if "beta-dist" in line]
    assert losing.startswith("same  beta-dist 1.0  FAILED TO LOAD:") and "alpha-dist" in losing
    with pytest.raises(PluginError, match="beta-dist.*already taken by alpha-dist"):
        load_plugins(eps, strict=True)


@pytest.mark.parametrize("folder, kind", [("runs", "runs"), ("suites", "suites")])
def test_a_deeply_nested_spec_of_another_kind_is_left_out_alone(tmp_path, monkeypatch, capsys, fresh_registries, folder, kind):
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "deep.toml").write_text(DEEP, encoding="utf-8")
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    code, out, err = _cli(capsys, "list", kind)
    assert code == 0 and len(out.splitlines()) > 3  # the built-in ones are all there
    (warning,) = [line for line in err.splitlines() if "deep.toml" in line]
    assert "TOML nested too deeply" in warning and "RecursionError" not in err

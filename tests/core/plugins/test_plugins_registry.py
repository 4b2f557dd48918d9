"""Plugin loading and registries: lazy, once, failures reported, duplicates and typos caught."""

from __future__ import annotations

import types
from importlib.metadata import EntryPoint

import pytest

from harness import hookimpl
from harness.errors import HarnessError, UnknownNameError
from harness.plugins import PluginError, load_plugins, new_plugin_manager, register_plugin
from harness.registry import KINDS, Registry, registry
from harness.api import MetricSpec, RetrieverSpec, SuiteSpec


def _retriever_plugin(*names: str) -> types.ModuleType:
    module = types.ModuleType("fake_plugin_" + "_".join(n.replace("-", "_") for n in names))

    @hookimpl
    def register_retrievers(register):
        for name in names:
            register(RetrieverSpec(name=name, description=f"fake {name}", load=lambda: None))

    module.register_retrievers = register_retrievers
    return module


def test_every_kind_has_a_hookspec_with_a_docstring():
    from harness import hookspecs

    for kind, info in KINDS.items():
        spec = getattr(hookspecs, info.hook)
        assert spec.__doc__ and "register(" in spec.__doc__, kind
    assert hookspecs.register_commands.__doc__


def test_registry_knows_the_provider_of_each_spec():
    manager = new_plugin_manager()
    register_plugin(manager, _retriever_plugin("alpha", "beta"), "first")
    register_plugin(manager, _retriever_plugin("gamma"), "second")
    reg = Registry.collect(manager, "retrievers")
    assert reg.names() == ["alpha", "beta", "gamma"]
    assert reg.entry("gamma").plugin == "second"
    assert reg.get("alpha").description == "fake alpha"


def test_duplicate_name_is_an_error_naming_both_plugins():
    manager = new_plugin_manager()
    register_plugin(manager, _retriever_plugin("bm25"), "mine")
    register_plugin(manager, _retriever_plugin("bm25"), "theirs")
    with pytest.raises(HarnessError) as err:
        Registry.collect(manager, "retrievers")
    assert "'bm25'" in str(err.value) and "'mine'" in str(err.value) and "'theirs'" in str(err.value)


def test_registering_the_wrong_record_type_is_an_error():
    module = types.ModuleType("wrong_record")

    @hookimpl
    def register_suites(register):
        register(MetricSpec(name="x", description="", compute=lambda r, k: 0.0))

    module.register_suites = register_suites
    manager = new_plugin_manager()
    register_plugin(manager, module, "wrong")
    with pytest.raises(HarnessError, match="expected SuiteSpec"):
        Registry.collect(manager, "suites")


def test_unknown_name_suggests_close_matches():
    manager = new_plugin_manager()
    register_plugin(manager, _retriever_plugin("bm25", "dpr-multi", "dpr-nq"), "p")
    reg = Registry.collect(manager, "retrievers")
    with pytest.raises(UnknownNameError) as err:
        reg.get("bm52")
    assert str(err.value) == "unknown retriever 'bm52'; did you mean 'bm25'?"
    with pytest.raises(UnknownNameError, match="available: bm25, dpr-multi, dpr-nq"):
        reg.get("zzzzzz")


def test_misspelled_hook_is_refused_and_left_unregistered():
    module = types.ModuleType("typo")

    @hookimpl
    def register_retreivers(register):  # sic
        pass

    module.register_retreivers = register_retreivers
    manager = new_plugin_manager()
    with pytest.raises(PluginError, match="plugin 'typo'.*register_retreivers"):
        register_plugin(manager, module, "typo")
    assert not manager.is_registered(module)


def _entry_point(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group="harness")


def test_a_plugin_that_fails_to_import_is_reported_and_skipped():
    eps = [_entry_point("broken", "harness_no_such_module_xyz"), _entry_point("metrics", "harness_builtins.metrics")]
    loaded = load_plugins(eps, strict=False)
    assert [p.name for p in loaded.plugins] == ["metrics"]
    (failure,) = loaded.failures
    assert failure.name == "broken"
    assert "ModuleNotFoundError" in failure.error and "harness_no_such_module_xyz" in failure.error


def test_strict_mode_makes_a_broken_plugin_an_error(monkeypatch):
    eps = [_entry_point("broken", "harness_no_such_module_xyz")]
    with pytest.raises(PluginError, match="plugin 'broken'.*failed to load.*ModuleNotFoundError"):
        load_plugins(eps, strict=True)
    monkeypatch.setenv("HARNESS_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError):
        load_plugins(eps)


def test_plugins_can_be_disabled_by_name(monkeypatch):
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "broken, other")
    loaded = load_plugins([_entry_point("broken", "harness_no_such_module_xyz")], strict=True)
    assert loaded.plugins == () and loaded.failures == []


def test_two_entry_points_with_one_name_load_one_and_report_the_other():
    eps = [_entry_point("metrics", "harness_builtins.metrics"), _entry_point("metrics", "harness_builtins.bm25")]
    loaded = load_plugins(eps, strict=False)
    assert [p.module for p in loaded.plugins] == ["harness_builtins.bm25"]  # sorted by value: bm25 first
    (failure,) = loaded.failures
    assert failure.name == "metrics" and "already taken" in failure.error
    with pytest.raises(PluginError, match="plugin name 'metrics' is already taken"):
        load_plugins(eps, strict=True)


def test_the_core_plugin_name_cannot_be_taken():
    loaded = load_plugins([_entry_point("harness", "harness_builtins.metrics")], strict=False)
    assert loaded.plugins == () and "already taken by the harness core" in loaded.failures[0].error


def test_installed_builtins_are_registered_through_entry_points():
    from harness.plugins import loaded_plugins

    names = {p.name: p for p in loaded_plugins().plugins}
    assert {"bm25", "demo", "metrics"} <= set(names)
    assert names["bm25"].distribution == "odqa-harness"
    assert names["bm25"].hooks == ("register_retrievers",)
    assert "bm25" in registry("retrievers")
    assert "demo" in registry("suites")
    assert {"accuracy", "mrr"} <= set(registry("metrics").names())
    assert registry("metrics").entry("accuracy").plugin == "harness"  # the core's own


def test_loading_is_lazy_and_happens_once(monkeypatch):
    from harness import plugins

    calls = []
    real = plugins.load_plugins
    plugins.loaded_plugins.cache_clear()
    monkeypatch.setattr(plugins, "load_plugins", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    try:
        plugins.loaded_plugins()
        plugins.loaded_plugins()
        assert calls == [1]
    finally:
        plugins.loaded_plugins.cache_clear()


def test_specs_are_frozen_keyword_only_records():
    spec = SuiteSpec(name="s", description="d", load=lambda: None)
    with pytest.raises(Exception):
        spec.name = "t"
    with pytest.raises(TypeError):
        SuiteSpec("s", "d", lambda: None)


def test_composed_names_reach_a_spec_that_takes_an_argument():
    module = types.ModuleType("composer")

    @hookimpl
    def register_retrievers(register):
        register(RetrieverSpec(name="fuse", description="", load=lambda **kw: kw, argument="A+B"))
        register(RetrieverSpec(name="plain", description="", load=lambda **kw: kw))

    module.register_retrievers = register_retrievers
    manager = new_plugin_manager()
    register_plugin(manager, module, "composer")
    reg = Registry.collect(manager, "retrievers")
    assert reg.entry("fuse:bm25+dpr").spec.name == "fuse"
    with pytest.raises(HarnessError, match="'plain' takes no ':' argument"):
        reg.entry("plain:x")
    with pytest.raises(HarnessError, match="give fuse:A\\+B"):
        reg.entry("fuse:")
    with pytest.raises(UnknownNameError):
        reg.entry("fusion:a+b")


# --- isolation: a plugin's failure is its own -------------------------------------------------


def _module(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, fn in hooks.items():
        setattr(module, hook, hookimpl(fn))
    return module


def _raising(register):
    raise RuntimeError("boom")


def _failures():
    seen = []
    return seen, lambda plugin, hook, error: seen.append((plugin, hook, str(error)))


def test_a_raising_hook_is_that_plugins_failure_only():
    manager = new_plugin_manager()
    register_plugin(manager, _module("bad", register_retrievers=_raising), "bad")
    register_plugin(manager, _retriever_plugin("good-one"), "good")
    seen, on_failure = _failures()
    reg = Registry.collect(manager, "retrievers", on_failure=on_failure)
    assert reg.names() == ["good-one"]
    assert seen == [("bad", "register_retrievers", "boom")]
    with pytest.raises(HarnessError, match="plugin 'bad' failed in register_retrievers: RuntimeError: boom"):
        Registry.collect(manager, "retrievers")  # without a handler (strict): an error


def test_a_hook_that_raises_midway_contributes_nothing():
    def half(register):
        register(RetrieverSpec(name="half-registered", description="", load=lambda: None))
        raise SystemExit(3)

    manager = new_plugin_manager()
    register_plugin(manager, _module("half", register_retrievers=half), "half")
    seen, on_failure = _failures()
    assert Registry.collect(manager, "retrievers", on_failure=on_failure).names() == []
    assert seen[0][:2] == ("half", "register_retrievers")


def test_a_wrong_record_or_name_is_that_plugins_failure():
    def wrong(register):
        register(MetricSpec(name="x", description="", compute=lambda r, k: 0.0))

    def unnamed(register):
        register(RetrieverSpec(name=" padded ", description="", load=lambda: None))

    manager = new_plugin_manager()
    register_plugin(manager, _module("wrong", register_retrievers=wrong), "wrong")
    register_plugin(manager, _module("unnamed", register_retrievers=unnamed), "unnamed")
    seen, on_failure = _failures()
    Registry.collect(manager, "retrievers", on_failure=on_failure)
    assert sorted(p for p, _, _ in seen) == ["unnamed", "wrong"]
    assert any("expected RetrieverSpec" in e for _, _, e in seen)
    assert any("invalid name" in e for _, _, e in seen)


def test_a_name_two_plugins_register_is_unusable_and_the_rest_works():
    manager = new_plugin_manager()
    register_plugin(manager, _retriever_plugin("bm25", "mine-only"), "mine")
    register_plugin(manager, _retriever_plugin("bm25"), "theirs")
    seen, on_failure = _failures()
    reg = Registry.collect(manager, "retrievers", on_failure=on_failure)
    assert reg.names() == ["mine-only"] and reg.conflicts == {"bm25": ("mine", "theirs")}
    with pytest.raises(HarnessError, match="'bm25' is provided by two plugins: 'mine' and 'theirs'"):
        reg.get("bm25")
    assert seen == [("theirs", "register_retrievers", "retriever 'bm25' is provided by two plugins: 'mine' and 'theirs'")]


def test_failures_reach_loaded_plugins_and_strict_mode_raises():
    from harness.plugins import LoadedPlugins

    manager = new_plugin_manager()
    register_plugin(manager, _module("bad", register_suites=_raising), "bad")
    loaded = LoadedPlugins(manager=manager, plugins=())
    notified = []
    loaded.notify = notified.append
    Registry.collect(manager, "suites", on_failure=loaded.fail)
    (failure,) = loaded.failures
    assert failure.stage == "register_suites" and failure.error == "RuntimeError: boom" and notified == [failure]
    assert failure.describe() == "plugin 'bad' (? ?) failed in register_suites: RuntimeError: boom"
    strict = LoadedPlugins(manager=manager, plugins=(), strict=True)
    with pytest.raises(PluginError, match="failed in register_suites"):
        Registry.collect(manager, "suites", on_failure=strict.fail)


def test_a_plugin_exiting_at_import_is_reported(tmp_path, monkeypatch):
    (tmp_path / "exits_at_import.py").write_text("raise SystemExit(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_plugins([_entry_point("exits", "exits_at_import")], strict=False)
    assert loaded.plugins == () and loaded.failures[0].error == "SystemExit: 1"


def test_accuracy_needs_no_plugin(monkeypatch):
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "metrics")
    loaded = load_plugins([_entry_point("metrics", "harness_builtins.metrics")], strict=True)
    reg = Registry.collect(loaded.manager, "metrics")
    assert reg.names() == ["accuracy"] and reg.entry("accuracy").plugin == "harness"
    assert reg.get("accuracy").compute([0, 3, None, 1], 2) == 0.5


def test_commands_of_a_failing_plugin_are_left_out_and_others_work(monkeypatch):
    import click

    from harness import plugins
    from harness.cli.main import build_cli

    def adds_then_raises(cli):
        cli.add_command(click.Command("half-added", callback=lambda: None))
        raise RuntimeError("commands broke")

    def clashes(cli):
        cli.add_command(click.Command("run", callback=lambda: None))

    def fine(cli):
        cli.add_command(click.Command("fine-command", callback=lambda: None))

    manager = new_plugin_manager()
    for name, fn in (("raiser", adds_then_raises), ("clasher", clashes), ("fine", fine)):
        register_plugin(manager, _module(name, register_commands=fn), name)
    loaded = plugins.LoadedPlugins(manager=manager, plugins=())
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    cli = build_cli()
    assert "fine-command" in cli.commands and "half-added" not in cli.commands
    assert cli.commands["run"].callback.__module__ == "harness.cli.run"
    failures = {f.name: f.error for f in loaded.failures}
    assert failures == {
        "raiser": "RuntimeError: commands broke",
        "clasher": "command 'run' is already defined by 'harness'",
    }


# --- the one loader ---------------------------------------------------------------------------


@pytest.fixture
def loader_registry(monkeypatch):
    import harness.registry

    calls = []

    def load(**options):
        if options.get("size") == "huge":
            raise ValueError("size must be small")
        calls.append(options)
        return options

    module = types.ModuleType("loader_plugin")

    @hookimpl
    def register_retrievers(register):
        register(RetrieverSpec(name="plain", description="", load=load, options={"size": 1, "depth": 2}))
        register(RetrieverSpec(name="fuse", description="", load=load, options={"size": 1}, argument="A+B"))

    module.register_retrievers = register_retrievers
    manager = new_plugin_manager()
    register_plugin(manager, module, "loader")
    monkeypatch.setattr(harness.registry, "_cache", {"retrievers": Registry.collect(manager, "retrievers")})
    return calls


def test_load_resolves_checks_and_loads(loader_registry):
    from harness import registry as reg

    loaded = reg.load("retrievers", "plain", {"size": 3})  # load gets every declared option, defaults filled in
    assert loaded.value == {"size": 3, "depth": 2} and loaded.plugin == "loader" and loaded.argument is None
    assert loaded.options == {"size": 3}  # what was given
    fused = reg.load("retrievers", "fuse:x+y")
    assert fused.value == {"size": 1, "argument": "x+y"} and fused.spec.name == "fuse" and fused.name == "fuse:x+y"
    with pytest.raises(HarnessError, match=r"retriever 'plain' has no option 'sise'; did you mean 'size'\? \(options: depth, size\)"):
        reg.load("retrievers", "plain", {"sise": 3})
    with pytest.raises(HarnessError, match="retriever 'plain': size must be small"):
        reg.load("retrievers", "plain", {"size": "huge"})
    with pytest.raises(UnknownNameError, match="did you mean 'plain'"):
        reg.load("retrievers", "plian")
    assert reg.resolve("retrievers", "plain", {"depth": 1}).options == {"depth": 1}
    assert loader_registry == [{"size": 3, "depth": 2}, {"size": 1, "argument": "x+y"}]  # resolve loaded nothing

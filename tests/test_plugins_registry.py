"""Plugin loading and registries: lazy, once, failures reported, duplicates and typos caught."""

from __future__ import annotations

import types
from importlib.metadata import EntryPoint

import pytest

from harness import hookimpl
from harness.errors import HarnessError, UnknownNameError
from harness.plugins import PluginError, load_plugins, new_plugin_manager, register_plugin
from harness.registry import KINDS, Registry, registry
from harness.types import MetricSpec, RetrieverSpec, SuiteSpec


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


def test_misspelled_hook_is_refused():
    module = types.ModuleType("typo")

    @hookimpl
    def register_retreivers(register):  # sic
        pass

    module.register_retreivers = register_retreivers
    with pytest.raises(PluginError, match="unknown hook.*register_retreivers"):
        register_plugin(new_plugin_manager(), module, "typo")


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
    assert loaded.plugins == () and loaded.failures == ()


def test_two_entry_points_with_one_name_is_an_error():
    eps = [_entry_point("metrics", "harness_builtins.metrics"), _entry_point("metrics", "harness_builtins.bm25")]
    with pytest.raises(PluginError, match="two plugins are named 'metrics'"):
        load_plugins(eps)


def test_installed_builtins_are_registered_through_entry_points():
    from harness.plugins import loaded_plugins

    names = {p.name: p for p in loaded_plugins().plugins}
    assert {"bm25", "demo", "metrics"} <= set(names)
    assert names["bm25"].distribution == "odqa-harness"
    assert names["bm25"].hooks == ("register_retrievers",)
    assert "bm25" in registry("retrievers")
    assert "demo" in registry("suites")
    assert {"accuracy", "mrr"} <= set(registry("metrics").names())


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

"""A plugin's failures read the same in every command: ``harness plugins`` shows them on the plugin's
line, the commands that read a registry warn of them, a clash names both plugins (an error in
strict mode), and a hook keeps what it registered before a failure.
"""

from __future__ import annotations

from importlib.metadata import PathDistribution
from pathlib import Path

import pytest

from harness.api import MetricSpec, PublishedTable, RetrieverSpec
from harness.errors import HarnessError, InputFileError
from harness.plugins import (
    LoadedPlugins,
    PluginError,
    load_plugins,
    new_plugin_manager,
    register_plugin,
)
from harness.registry import Registry, skipped
from helpers.registry_fixtures import DEEP, cli, plugin_module

# --- plugin failures, the same in every command -------------------------------------------




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
        register_plugin(manager, plugin_module(name, register_retrievers=fn), name)
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
    code, out, err = cli(capsys, "plugins")
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
    code, out, err = cli(capsys, *args)
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
        register_plugin(manager, plugin_module(name, register_retrievers=_bm25), name)
    loaded = LoadedPlugins(manager=manager, plugins=(), strict=True)
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    for args in (["list", "retrievers"], ["plugins"]):
        code, out, err = cli(capsys, *args)
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
    register_plugin(manager, plugin_module("partly", register_published=partly), "partly")
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
    code, out, err = cli(capsys, "plugins")
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
    code, out, err = cli(capsys, "list", kind)
    assert code == 0 and len(out.splitlines()) > 3  # the built-in ones are all there
    (warning,) = [line for line in err.splitlines() if "deep.toml" in line]
    assert "TOML nested too deeply" in warning and "RecursionError" not in err

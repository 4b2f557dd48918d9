"""Finding and loading plugins: entry points of the ``harness`` group, lazily and once.

A plugin whose module fails to import, or that implements a hook harness does not define, is
reported (``harness plugins``) and skipped; set ``HARNESS_STRICT_PLUGINS=1`` to make that an error
(for plugin authors and CI). ``HARNESS_DISABLE_PLUGINS=a,b`` skips plugins by name.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

import pluggy

from harness import hookspecs
from harness.errors import HarnessError

ENTRY_POINT_GROUP = "harness"
STRICT_ENV = "HARNESS_STRICT_PLUGINS"
DISABLE_ENV = "HARNESS_DISABLE_PLUGINS"


@dataclass(frozen=True, kw_only=True)
class PluginInfo:
    """A plugin that loaded: its entry-point name, distribution, version and hooks."""

    name: str
    distribution: str
    version: str
    module: str
    hooks: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class PluginFailure:
    """A plugin that was skipped, and why."""

    name: str
    distribution: str
    version: str
    error: str


class PluginError(HarnessError):
    """A plugin failed to load in strict mode."""


@dataclass(frozen=True)
class LoadedPlugins:
    """The plugin manager with every plugin registered, and what failed."""

    manager: pluggy.PluginManager
    plugins: tuple[PluginInfo, ...]
    failures: tuple[PluginFailure, ...]


def strict_mode() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with harness's hookspecs and no plugins (tests start from one)."""
    manager = pluggy.PluginManager("harness")
    manager.add_hookspecs(hookspecs)
    return manager


def _distribution(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?", "?"
    return dist.metadata["Name"] or "?", dist.version or "?"


def _unknown_hooks(plugin: object) -> list[str]:
    known = {name for name in vars(hookspecs) if name.startswith("register_")}
    names = []
    for attr in dir(plugin):
        fn = getattr(plugin, attr, None)
        if callable(fn) and hasattr(fn, "harness_impl") and attr not in known:
            names.append(attr)
    return names


def register_plugin(manager: pluggy.PluginManager, module: object, name: str) -> None:
    """Register ``module`` under ``name``; a hook implementation harness does not define is an error."""
    unknown = _unknown_hooks(module)
    if unknown:
        raise PluginError(f"plugin {name!r} implements unknown hook(s) {', '.join(unknown)}")
    manager.register(module, name=name)


def load_plugins(
    eps: list[EntryPoint] | None = None, *, strict: bool | None = None
) -> LoadedPlugins:
    """Import every plugin of the entry-point group and register it with a new plugin manager."""
    strict = strict_mode() if strict is None else strict
    disabled = {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}
    manager = new_plugin_manager()
    plugins: list[PluginInfo] = []
    failures: list[PluginFailure] = []
    if eps is None:
        eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    seen: dict[str, str] = {}
    for ep in eps:
        dist, version = _distribution(ep)
        if ep.name in disabled:
            continue
        if ep.name in seen:
            raise PluginError(
                f"two plugins are named {ep.name!r}: {seen[ep.name]} and {dist} {version} ({ep.value})"
            )
        seen[ep.name] = f"{dist} {version} ({ep.value})"
        try:
            module = ep.load()
            register_plugin(manager, module, ep.name)
        except Exception as exc:  # a broken plugin must not take the harness down
            if strict:
                raise PluginError(
                    f"plugin {ep.name!r} ({dist} {version}) failed to load: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            failures.append(
                PluginFailure(name=ep.name, distribution=dist, version=version, error=f"{type(exc).__name__}: {exc}")
            )
            continue
        hooks = tuple(sorted(impl.name for impl in manager.get_hookcallers(module) or ()))
        plugins.append(
            PluginInfo(name=ep.name, distribution=dist, version=version, module=ep.value, hooks=hooks)
        )
    return LoadedPlugins(manager=manager, plugins=tuple(plugins), failures=tuple(failures))


@functools.cache
def loaded_plugins() -> LoadedPlugins:
    """The installed plugins, loaded on first use and cached for the life of the process."""
    return load_plugins()

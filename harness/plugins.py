"""Finding and loading plugins: entry points of the ``harness`` group, lazily and once.

Every plugin is isolated from the others. A plugin whose module fails to import (``SystemExit``
included), that implements a hook harness does not define, or whose hook raises later (a
``register_*`` hook, ``register_commands``) is recorded as that plugin's failure, reported by
``harness plugins`` and on stderr, and skipped: everything else keeps working. Set
``HARNESS_STRICT_PLUGINS=1`` (plugin authors, CI) to make any such failure an error.
``HARNESS_DISABLE_PLUGINS=a,b`` blocks plugins by entry-point name (they are not imported).

The core registers its own hook implementations (:mod:`harness.scoring.metrics`: the ``accuracy``
metric; :mod:`harness.runfiles.formats`: the run formats) under the name ``harness``; they cannot
be disabled.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

import pluggy

from harness import hookspecs
from harness.errors import HarnessError

ENTRY_POINT_GROUP = "harness"
STRICT_ENV = "HARNESS_STRICT_PLUGINS"
DISABLE_ENV = "HARNESS_DISABLE_PLUGINS"
#: The name the core's own hook implementations are registered under.
CORE_PLUGIN = "harness"


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
    """A plugin, or one of its hooks, that failed; ``stage`` is ``load`` or the hook's name."""

    name: str
    distribution: str
    version: str
    error: str
    stage: str = "load"

    def describe(self) -> str:
        where = "failed to load" if self.stage == "load" else f"failed in {self.stage}"
        return f"plugin {self.name!r} ({self.distribution} {self.version}) {where}: {self.error}"


class PluginError(HarnessError):
    """A plugin failed in strict mode."""


@dataclass
class LoadedPlugins:
    """The plugin manager with every plugin registered, and what failed so far.

    Failures of hooks called later (registries, commands) are added with :meth:`fail`; ``notify``,
    when set (the command line sets it), is told of each as it happens.
    """

    manager: pluggy.PluginManager
    plugins: tuple[PluginInfo, ...]
    failures: list[PluginFailure] = field(default_factory=list)
    strict: bool = False
    notify: Callable[[PluginFailure], None] | None = None

    def info(self, name: str) -> PluginInfo | None:
        return next((p for p in self.plugins if p.name == name), None)

    def failures_in(self, *stages: str) -> list[PluginFailure]:
        """The failures in any of ``stages`` (``load`` or a hook's name)."""
        return [f for f in self.failures if f.stage in stages]

    def fail(self, plugin: str, stage: str, exc: BaseException | str) -> None:
        """Record that ``plugin`` failed in ``stage``; in strict mode raise :class:`PluginError`."""
        info = self.info(plugin)
        error = _one_line(exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}")
        failure = PluginFailure(
            name=plugin,
            distribution=info.distribution if info else "?",
            version=info.version if info else "?",
            error=error,
            stage=stage,
        )
        if self.strict:
            raise PluginError(failure.describe()) from (exc if isinstance(exc, BaseException) else None)
        if failure not in self.failures:
            self.failures.append(failure)
            if self.notify is not None:
                self.notify(failure)


def strict_mode() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def disabled_plugins() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with harness's hookspecs and the core's own implementations only."""
    from types import SimpleNamespace

    from harness.runfiles import formats as core_run_formats
    from harness.scoring import metrics as core_metrics

    manager = pluggy.PluginManager("harness")
    manager.add_hookspecs(hookspecs)
    core = SimpleNamespace(  # the core's hook implementations, one plugin
        register_metrics=core_metrics.register_metrics, register_run_formats=core_run_formats.register_run_formats
    )
    manager.register(core, name=CORE_PLUGIN)
    return manager


def _distribution(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?", "?"
    return dist.metadata["Name"] or "?", dist.version or "?"


def register_plugin(manager: pluggy.PluginManager, module: object, name: str) -> None:
    """Register ``module`` under ``name``, validated against the hookspecs by pluggy itself.

    A hook implementation that no hookspec defines (a misspelled hook) or whose arguments the
    hookspec does not provide is refused; the module is then left unregistered.
    """
    try:
        manager.register(module, name=name)
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        if manager.is_registered(module):
            manager.unregister(module)
        unknown = re.findall(r"unknown hook '(\w+)'", str(exc))
        if unknown:
            problem = f"implements unknown hook(s) {', '.join(unknown)}"
        else:  # pluggy's message names the hook and the arguments the hookspec does not provide
            problem = " ".join(str(exc).split("\n")[1:]) or str(exc)
        raise PluginError(f"plugin {name!r} {problem}") from None
    except ValueError as exc:  # pluggy: the name or the module is already registered
        raise PluginError(f"plugin {name!r}: {exc}") from None


def load_plugins(eps: list[EntryPoint] | None = None, *, strict: bool | None = None) -> LoadedPlugins:
    """Import every plugin of the entry-point group and register it with a new plugin manager.

    Plugins load in entry-point name order. When two distributions use one entry-point name, the
    first (by distribution name) loads and the other is reported as a failure.
    """
    strict = strict_mode() if strict is None else strict
    manager = new_plugin_manager()
    for name in disabled_plugins():
        manager.set_blocked(name)
    plugins: list[PluginInfo] = []
    loaded = LoadedPlugins(manager=manager, plugins=(), strict=strict)
    if eps is None:
        eps = list(entry_points(group=ENTRY_POINT_GROUP))
    eps = sorted(eps, key=lambda ep: (ep.name, _distribution(ep)[0], ep.value))
    seen: dict[str, str] = {}
    for ep in eps:
        dist, version = _distribution(ep)
        if manager.is_blocked(ep.name):
            continue
        where = f"{dist} {version} ({ep.value})"
        if ep.name == CORE_PLUGIN or ep.name in seen:
            if seen.get(ep.name) == where:  # the same distribution found twice on sys.path
                continue
            owner = "the harness core" if ep.name == CORE_PLUGIN else seen[ep.name]
            _failed(loaded, ep.name, dist, version, f"the plugin name {ep.name!r} is already taken by {owner}")
            continue
        seen[ep.name] = where
        try:
            module = ep.load()
            register_plugin(manager, module, ep.name)
        except (Exception, SystemExit) as exc:  # a broken plugin must not take the harness down
            if isinstance(exc, PluginError):
                message = str(exc).removeprefix(f"plugin {ep.name!r} ")
            else:
                message = f"{type(exc).__name__}: {exc}"
            _failed(loaded, ep.name, dist, version, message, exc)
            continue
        hooks = tuple(sorted(caller.name for caller in manager.get_hookcallers(module) or ()))
        plugins.append(PluginInfo(name=ep.name, distribution=dist, version=version, module=ep.value, hooks=hooks))
    loaded.plugins = tuple(plugins)
    return loaded


def _failed(
    loaded: LoadedPlugins, name: str, dist: str, version: str, error: str, exc: BaseException | None = None
) -> None:
    failure = PluginFailure(name=name, distribution=dist, version=version, error=_one_line(error))
    if loaded.strict:
        raise PluginError(failure.describe()) from exc
    loaded.failures.append(failure)


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"


@functools.cache
def loaded_plugins() -> LoadedPlugins:
    """The installed plugins, loaded on first use and cached for the life of the process."""
    return load_plugins()

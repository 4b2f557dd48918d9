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
from importlib.metadata import EntryPoint

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


def _location(ep: EntryPoint) -> str | None:
    """Where the distribution of ``ep`` is installed (the folder holding its metadata), or None."""
    dist = getattr(ep, "dist", None)
    try:
        return os.fspath(dist.locate_file("")) if dist is not None else None
    except (AttributeError, TypeError, NotImplementedError):
        return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_entry_points() -> tuple[list[EntryPoint], list[tuple[EntryPoint, EntryPoint]]]:
    """Every ``harness`` entry point of every installed distribution, in ``sys.path`` order, and
    the copies that are shadowed: a distribution installed twice (two versions in two folders on
    ``sys.path``) is one that Python imports from the first folder, so its entry points are those
    of the first copy; each later copy of another version or other entry points is returned
    paired with the entry point it is shadowed by (``importlib.metadata.entry_points`` drops
    such copies without a word). Copies of one version with the same entry points are one."""
    from importlib.metadata import distributions

    first: dict[str, tuple[tuple, list[EntryPoint]]] = {}
    used: list[EntryPoint] = []
    shadowed: list[tuple[EntryPoint, EntryPoint]] = []
    for dist in distributions():
        eps = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
        if not eps:
            continue
        name = _normalized(dist.metadata["Name"] or "?")
        # one folder listed twice on sys.path, or the same release's metadata in two places (an
        # editable install's egg-info in the checkout): the same plugins either way
        same = (dist.version, sorted((ep.name, ep.value) for ep in eps))
        if name not in first:
            first[name] = (same, eps)
            used.extend(eps)
            continue
        if first[name][0] == same:
            continue
        winners = {ep.name: ep for ep in first[name][1]}
        for ep in eps:
            shadowed.append((ep, winners.get(ep.name, first[name][1][0])))
    return used, shadowed


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
    first (by distribution name) loads and the other is reported as a failure naming both; a
    second installed copy of one distribution (another folder on ``sys.path``) is reported the
    same way, naming both copies (:func:`installed_entry_points`).
    """
    strict = strict_mode() if strict is None else strict
    manager = new_plugin_manager()
    for name in disabled_plugins():
        manager.set_blocked(name)
    plugins: list[PluginInfo] = []
    loaded = LoadedPlugins(manager=manager, plugins=(), strict=strict)
    shadowed: list[tuple[EntryPoint, EntryPoint]] = []
    if eps is None:
        eps, shadowed = installed_entry_points()
    for ep, used in shadowed:
        if manager.is_blocked(ep.name):
            continue
        dist, version = _distribution(ep)
        _failed(loaded, ep.name, dist, version,
                f"another copy of {dist} ({_distribution(used)[1]} at {_location(used)}) comes first on sys.path "
                f"and is the one used; this copy at {_location(ep)} is ignored (uninstall one of them)")
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


# --- whose code raised ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Culprit:
    """The plugin whose code raised an exception: its entry-point name, its distribution, and
    whether it is one of harness's own built-in plugins (installed by the distribution that
    installed the core)."""

    name: str
    distribution: str
    builtin: bool


def _top_package(module: str) -> str:
    return module.partition(":")[0].partition(".")[0]


@functools.cache
def _core_distributions() -> frozenset[str]:
    """The distribution(s) that installed the ``harness`` package: their plugins are the core's
    own built-ins (read once, when a failure is first reported)."""
    from importlib.metadata import packages_distributions

    try:
        return frozenset(packages_distributions().get("harness", ()))
    except Exception:  # unreadable metadata: no plugin is taken for a built-in
        return frozenset()


def is_builtin(info: PluginInfo) -> bool:
    """Whether ``info`` is one of harness's own plugins (installed with the core)."""
    return info.distribution in _core_distributions()


def _already_loaded() -> LoadedPlugins | None:
    """The plugins when they are loaded already, else None (loading them while an error is being
    reported could fail again)."""
    info = getattr(loaded_plugins, "cache_info", None)
    if info is not None and info().currsize == 0:
        return None
    return loaded_plugins()


def _plugins_by_package() -> dict[str, PluginInfo]:
    """The loaded plugins by the top-level package of their entry-point module."""
    loaded = _already_loaded()
    if loaded is None:
        return {}
    found: dict[str, PluginInfo] = {}
    for info in loaded.plugins:
        top = _top_package(info.module)
        if top and top != "harness":
            found.setdefault(top, info)
    return found


def culprit(exc: BaseException) -> Culprit | None:
    """The installed plugin whose code raised ``exc``: the innermost frame of its traceback that
    runs a module of a loaded plugin's top-level package (harness's built-in plugins share one,
    and the core's distribution). None when no plugin's code is in the traceback: the core raised
    it on its own."""
    packages = _plugins_by_package()
    if not packages:
        return None
    found: PluginInfo | None = None
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__")
        if isinstance(module, str):
            info = packages.get(module.partition(".")[0])
            if info is not None:
                found = info
        tb = tb.tb_next
    if found is None:
        return None
    return Culprit(name=found.name, distribution=found.distribution, builtin=is_builtin(found))


def distribution_of(plugin: str) -> str | None:
    """The distribution that installed the plugin ``plugin`` (an entry-point name), or None when
    it is harness's own (the core, a built-in plugin) or not loaded."""
    loaded = _already_loaded() if plugin != CORE_PLUGIN else None
    if loaded is None:
        return None
    info = loaded.info(plugin)
    if info is None or is_builtin(info):
        return None
    return info.distribution

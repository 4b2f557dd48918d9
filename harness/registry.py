"""Looking up what plugins offer, by kind and name.

One :class:`Registry` per kind of extension; adding a kind means one hookspec in
:mod:`harness.hookspecs` and one line in :data:`KINDS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import pluggy

from harness.errors import HarnessError, UnknownNameError
from harness.types import MetricSpec, RetrieverSpec, SuiteSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Kind:
    """A kind of extension: its hook, the record type it registers, and its singular noun."""

    hook: str
    record: type
    noun: str


#: Every kind of registry extension: ``harness list KIND`` works for each.
KINDS: dict[str, Kind] = {
    "retrievers": Kind("register_retrievers", RetrieverSpec, "retriever"),
    "suites": Kind("register_suites", SuiteSpec, "suite"),
    "metrics": Kind("register_metrics", MetricSpec, "metric"),
}


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered spec and the plugin that provided it."""

    spec: T
    plugin: str


class Registry(Generic[T]):
    """The specs of one kind, by name, from every registered plugin."""

    def __init__(self, kind: str, entries: dict[str, Entry[T]]):
        self.kind = kind
        self._entries = entries

    @classmethod
    def collect(cls, manager: pluggy.PluginManager, kind: str) -> Registry:
        """Call ``kind``'s hook on each plugin separately, so every spec knows its provider."""
        info = KINDS[kind]
        entries: dict[str, Entry] = {}
        for impl in getattr(manager.hook, info.hook).get_hookimpls():
            def register(spec: object, _plugin: str = impl.plugin_name) -> None:
                if not isinstance(spec, info.record):
                    raise HarnessError(
                        f"plugin {_plugin!r} registered {type(spec).__name__} with {info.hook}; "
                        f"expected {info.record.__name__}"
                    )
                name = spec.name
                if name in entries:
                    raise HarnessError(
                        f"{info.noun} {name!r} is provided by two plugins: "
                        f"{entries[name].plugin!r} and {_plugin!r}"
                    )
                entries[name] = Entry(spec, _plugin)

            try:
                impl.function(register=register)
            except HarnessError:
                raise
            except Exception as exc:
                raise HarnessError(
                    f"plugin {impl.plugin_name!r} failed in {info.hook}: {type(exc).__name__}: {exc}"
                ) from exc
        return cls(kind, dict(sorted(entries.items())))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return (entry.spec for entry in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def entry(self, name: str) -> Entry[T]:
        """The entry called ``name``; for ``PREFIX:ARGUMENT`` the entry of a spec ``PREFIX`` that
        takes an argument (see :class:`harness.types.RetrieverSpec`)."""
        if name in self._entries:
            return self._entries[name]
        prefix, colon, argument = name.partition(":")
        if colon and prefix in self._entries:
            entry = self._entries[prefix]
            if getattr(entry.spec, "argument", None) is None:
                raise HarnessError(f"{KINDS[self.kind].noun} {prefix!r} takes no ':' argument (got {name!r})")
            if not argument:
                raise HarnessError(f"{name!r}: give {prefix}:{entry.spec.argument}")
            return entry
        raise UnknownNameError(KINDS[self.kind].noun, name, self._entries) from None

    def get(self, name: str) -> T:
        """The spec called ``name``; an unknown name raises with a "did you mean"."""
        return self.entry(name).spec


_cache: dict[str, Registry] = {}


def registry(kind: str) -> Registry:
    """The registry of ``kind`` built from the installed plugins (built once per process)."""
    if kind not in KINDS:
        raise UnknownNameError("kind of extension", kind, KINDS)
    if kind not in _cache:
        from harness.plugins import loaded_plugins

        _cache[kind] = Registry.collect(loaded_plugins().manager, kind)
    return _cache[kind]


def retrievers() -> Registry[RetrieverSpec]:
    return registry("retrievers")


def suites() -> Registry[SuiteSpec]:
    return registry("suites")


def metrics() -> Registry[MetricSpec]:
    return registry("metrics")

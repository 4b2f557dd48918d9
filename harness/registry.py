"""Looking up what plugins offer, by kind and name, and loading it: the one loader for named things.

One :class:`Registry` per kind of extension; adding a kind means one hookspec in
:mod:`harness.hookspecs`, one record in :mod:`harness.api` and one line in :data:`KINDS`.

>>> from harness import registry
>>> loaded = registry.load("retrievers", "bm25", {"k1": 1.2})   # doctest: +SKIP
>>> loaded.value.search(["who wrote hamlet"], 10, context)      # doctest: +SKIP

:func:`load` resolves ``NAME`` or ``NAME:ARGUMENT`` (a spec with an ``argument``, such as
``hybrid:bm25+dpr-multi``), refuses options the spec does not declare (with a did-you-mean), checks
and coerces the given values with the spec's declarations (:class:`harness.api.Option`: types,
bounds, choices), and calls the spec's ``load`` with every declared option, the given values over
the defaults (:func:`resolved_options`). Every caller that turns a name into an object goes through it.

An exception raised while a named thing's code runs (:func:`running`: loading it, a retriever's
``index`` and ``search``, a command) is marked with what ran; when a plugin's code raised it, the
command line reports it in one line as that plugin's failure, naming its distribution
(:func:`failure_line`).

A plugin whose hook raises, or registers a record of the wrong type, is recorded as that plugin's
failure (:mod:`harness.plugins`) and contributes nothing to that kind; the other plugins' entries
stay usable. A name two plugins register is unusable, with an error naming both, while every
other name works. ``HARNESS_STRICT_PLUGINS=1`` makes both errors at once.

A hook that leaves out one thing it cannot offer (a malformed file among many) and registers the
rest says so with :func:`skipped`: that is recorded as the plugin's failure in that hook too, but
what it did register stays usable. When the thing left out has a name (a suite whose spec file is
broken), :func:`mark_unavailable` records it: asking for that name is then an error naming the
file and its problem, not an "unknown name" with a did-you-mean.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pluggy

from harness.api import (
    AugmentationSpec,
    EncoderSpec,
    LossSpec,
    MetricSpec,
    MinerSpec,
    OptionError,
    Options,
    PublishedRun,
    ReleasedEmbeddings,
    PublishedTable,
    RerankerSpec,
    RetrieverSpec,
    RunFormatSpec,
    SamplerSpec,
    SuiteSpec,
    TrainingDataSpec,
    VariantSpec,
)
from harness.api import check_options as api_check_options
from harness.errors import HarnessError, UnknownNameError, warn

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
    "encoders": Kind("register_encoders", EncoderSpec, "encoder"),
    "published": Kind("register_published", PublishedTable, "published table"),
    "runs": Kind("register_published_runs", PublishedRun, "published run"),
    "embeddings": Kind("register_embeddings", ReleasedEmbeddings, "released embeddings"),
    "losses": Kind("register_losses", LossSpec, "loss"),
    "samplers": Kind("register_samplers", SamplerSpec, "batch sampler"),
    "miners": Kind("register_miners", MinerSpec, "negative miner"),
    "augmentations": Kind("register_augmentations", AugmentationSpec, "augmentation"),
    "variants": Kind("register_variants", VariantSpec, "training variant"),
    "training-data": Kind("register_training_data", TrainingDataSpec, "training data set"),
    "rerankers": Kind("register_rerankers", RerankerSpec, "re-ranker"),
    "run-formats": Kind("register_run_formats", RunFormatSpec, "run format"),
}

#: Told ``(plugin, hook, error)`` when a plugin's hook fails; may raise (strict mode).
FailureHandler = Callable[[str, str, "BaseException | str"], None]

#: While a ``register_*`` hook runs: reports what that plugin's hook left out (see :func:`skipped`).
_skip_reporter: ContextVar[Callable[[str], None] | None] = ContextVar("harness_skip_reporter", default=None)


def skipped(problem: BaseException | str) -> None:
    """Report, from inside a ``register_*`` hook, one thing the hook leaves out because it cannot
    be used (a malformed spec file, a name it already registered from another file), while it goes
    on registering the rest.

    ``problem`` should name the file and what is wrong in one line (an
    :class:`~harness.errors.InputFileError` does). It is recorded as the plugin's failure in that
    hook: ``harness plugins`` lists it on the plugin's line, every command that reads the registry
    warns of it on stderr, ``harness reproduce --check`` fails when published tables were left
    out, and ``HARNESS_STRICT_PLUGINS=1`` makes it an error. Called outside a hook (a plugin's
    function used directly), it is one warning line on stderr.
    """
    text = problem if isinstance(problem, str) else str(problem)
    text = " ".join(text.split())
    report = _skip_reporter.get()
    if report is None:
        warn(f"{text}; skipped")
        return
    report(text)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered spec and the plugin that provided it."""

    spec: T
    plugin: str


class Registry(Generic[T]):
    """The specs of one kind, by name, from every registered plugin."""

    def __init__(
        self, kind: str, entries: dict[str, Entry[T]], conflicts: Mapping[str, tuple[str, ...]] | None = None,
        failures: tuple[str, ...] = (),
    ):
        self.kind = kind
        self._entries = entries
        #: Names registered by more than one plugin, with those plugins (unusable).
        self.conflicts: dict[str, tuple[str, ...]] = dict(conflicts or {})
        #: What went wrong while collecting, one line each (``plugin 'p' failed in HOOK: ...``): hooks
        #: that raised or registered a wrong record, things a hook left out, clashing names. This
        #: registry may lack what those would have registered.
        self.failures: tuple[str, ...] = tuple(failures)

    @classmethod
    def collect(cls, manager: pluggy.PluginManager, kind: str, *, on_failure: FailureHandler | None = None) -> Registry:
        """Call ``kind``'s hook on each plugin separately, so every spec knows its provider.

        Without ``on_failure`` any failure raises :class:`HarnessError`.
        """
        info = KINDS[kind]

        problems: list[str] = []

        def failed(plugin: str, error: BaseException | str) -> None:
            text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            problems.append(f"plugin {plugin!r} failed in {info.hook}: {' '.join(text.split())}")
            if on_failure is not None:
                on_failure(plugin, info.hook, error)
                return
            raise HarnessError(f"plugin {plugin!r} failed in {info.hook}: {text}")

        entries: dict[str, Entry] = {}
        owners: dict[str, list[str]] = {}
        for impl in getattr(manager.hook, info.hook).get_hookimpls():
            plugin = impl.plugin_name
            staged: dict[str, Entry] = {}

            def register(spec: object, _plugin: str = plugin, _staged: dict = staged) -> None:
                if not isinstance(spec, info.record):
                    raise HarnessError(f"registered {type(spec).__name__}; expected {info.record.__name__}")
                name = getattr(spec, "name", None)
                if not isinstance(name, str) or not name.strip() or name != name.strip():
                    raise HarnessError(f"registered a {info.noun} with an invalid name {name!r}")
                if name in _staged:
                    raise HarnessError(f"registered {info.noun} {name!r} twice")
                _staged[name] = Entry(spec, _plugin)

            raised_by_skip: list[BaseException] = []

            def skip(problem: str, _plugin: str = plugin, _raised: list = raised_by_skip) -> None:
                try:
                    failed(_plugin, problem)
                except BaseException as exc:  # strict: the error ends the hook, reported once
                    _raised.append(exc)
                    raise

            token = _skip_reporter.set(skip)
            try:
                impl.function(register=register)
            except (Exception, SystemExit) as exc:
                if raised_by_skip and exc is raised_by_skip[0]:
                    raise
                if isinstance(exc, HarnessError) and not isinstance(exc, UnknownNameError):
                    failed(plugin, str(exc))
                else:
                    failed(plugin, exc)
                continue
            finally:
                _skip_reporter.reset(token)
            if raised_by_skip:  # strict, and the hook swallowed the error: it still ends the collection
                raise raised_by_skip[0]
            for name, entry in staged.items():
                owners.setdefault(name, []).append(plugin)
                entries.setdefault(name, entry)
        conflicts = {name: tuple(plugins) for name, plugins in owners.items() if len(plugins) > 1}
        for name, plugins in conflicts.items():
            del entries[name]
            message = f"{info.noun} {name!r} is provided by two plugins: {plugins[0]!r} and {plugins[1]!r}"
            if on_failure is None:
                raise HarnessError(message)
            for plugin in plugins[1:]:
                problems.append(f"plugin {plugin!r} failed in {info.hook}: {message}")
                on_failure(plugin, info.hook, message)
        return cls(kind, dict(sorted(entries.items())), conflicts, tuple(problems))

    @property
    def noun(self) -> str:
        return KINDS[self.kind].noun

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return (entry.spec for entry in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry[T]]:
        return list(self._entries.values())

    def entry(self, name: str) -> Entry[T]:
        """The entry called ``name``; for ``PREFIX:ARGUMENT`` the entry of a spec ``PREFIX`` that
        takes an argument (see :class:`harness.api.RetrieverSpec`)."""
        if not isinstance(name, str):
            raise HarnessError(f"a {self.noun} name must be text, got {type(name).__name__}")
        if name in self._entries:
            return self._entries[name]
        prefix, colon, argument = name.partition(":")
        for candidate in (name, prefix):
            if candidate in self.conflicts:
                first, second = self.conflicts[candidate][:2]
                raise HarnessError(
                    f"{self.noun} {candidate!r} is provided by two plugins: {first!r} and {second!r}; "
                    f"uninstall one or disable it with HARNESS_DISABLE_PLUGINS"
                )
        if colon and prefix in self._entries:
            entry = self._entries[prefix]
            if getattr(entry.spec, "argument", None) is None:
                raise HarnessError(f"{self.noun} {prefix!r} takes no ':' argument (got {name!r})")
            if not argument:
                raise HarnessError(f"{name!r}: give {prefix}:{entry.spec.argument}")
            return entry
        for candidate in (name, prefix):
            reason = unavailable(self.kind, candidate)
            if reason is not None:
                raise UnavailableNameError(self.noun, candidate, reason)
        raise UnknownNameError(self.noun, name, self._entries) from None

    def get(self, name: str) -> T:
        """The spec called ``name``; an unknown name raises with a "did you mean"."""
        return self.entry(name).spec


_cache: dict[str, Registry] = {}

#: Names of each kind that a plugin knows of but could not offer, with why (:func:`mark_unavailable`).
_unavailable: dict[str, dict[str, str]] = {}


class UnavailableNameError(UnknownNameError):
    """A name a plugin knows of but could not offer (its spec failed to load); the message says why."""

    def __init__(self, kind: str, name: str, reason: str):
        HarnessError.__init__(self, f"{kind} {name!r} is not available: {reason}")
        self.kind, self.name, self.known, self.reason = kind, name, [], reason


def mark_unavailable(kind: str, name: str, reason: str) -> None:
    """Record that ``kind``'s ``name`` exists but could not be loaded, and why (``reason``: the
    spec file and its problem). Plugins call it for what they leave out while they register; a
    later lookup of ``name`` that finds nothing raises :class:`UnavailableNameError` with the
    reason instead of suggesting another name. Forgotten when ``kind``'s registry is built again."""
    if kind not in KINDS:
        raise UnknownNameError("kind of extension", kind, KINDS)
    _unavailable.setdefault(kind, {})[name] = " ".join(str(reason).split())


def unavailable(kind: str, name: str) -> str | None:
    """Why ``kind``'s ``name`` could not be loaded (:func:`mark_unavailable`), or None."""
    return _unavailable.get(kind, {}).get(name)


def registry(kind: str) -> Registry:
    """The registry of ``kind`` built from the installed plugins (built once per process)."""
    if kind not in KINDS:
        raise UnknownNameError("kind of extension", kind, KINDS)
    if kind not in _cache:
        from harness.plugins import loaded_plugins

        _unavailable.pop(kind, None)  # the plugins' hooks record it again
        loaded = loaded_plugins()
        _cache[kind] = Registry.collect(loaded.manager, kind, on_failure=loaded.fail)
    return _cache[kind]


def retrievers() -> Registry[RetrieverSpec]:
    return registry("retrievers")


def suites() -> Registry[SuiteSpec]:
    return registry("suites")


def metrics() -> Registry[MetricSpec]:
    return registry("metrics")


def encoders() -> Registry[EncoderSpec]:
    return registry("encoders")


def rerankers() -> Registry[RerankerSpec]:
    return registry("rerankers")


# --- the one loader ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """A named thing, loaded: the name it was asked for by, its spec, plugin, argument, options."""

    kind: str
    name: str
    spec: T
    plugin: str
    argument: str | None
    options: dict[str, Any] = field(default_factory=dict)
    value: Any = None


def declared_options(spec: object) -> Options:
    """The options a spec declares (``options``; none for specs without that field), as
    :class:`~harness.api.Options` (name -> default, with each name's declaration)."""
    options = getattr(spec, "options", None)
    return Options(options) if isinstance(options, Mapping) else Options()


def check_options(
    kind: str, name: str, known: Mapping[str, Any], options: Mapping[str, Any], *, complete: bool = False
) -> dict[str, Any]:
    """``options`` checked against ``known`` (declared options: plain defaults or
    :class:`~harness.api.Option` objects) and coerced, by :func:`harness.api.check_options`: an
    undeclared name (with a did-you-mean and the declared options) or a value its declaration
    refuses is a one-line :class:`~harness.api.OptionError` naming the ``kind``'s thing ``name``;
    with ``complete`` (``options`` is all it gets), so is a required option that is missing."""
    noun = KINDS[kind].noun if kind in KINDS else kind
    return api_check_options(known, options, where=f"{noun} {name!r}", complete=complete)


def resolve(kind: str, name: str, options: Mapping[str, Any] | None = None) -> Loaded:
    """Find ``name`` (``NAME`` or ``NAME:ARGUMENT``) of ``kind`` and check ``options`` (names and
    values; :attr:`Loaded.options` holds them coerced), without loading anything: an option
    declared required (:attr:`harness.api.Option.required`) that ``options`` lacks is refused here,
    before a caller loads a suite or a model for nothing."""
    entry = registry(kind).entry(name)
    argument = name.partition(":")[2] if getattr(entry.spec, "name", name) != name else None
    checked = check_options(kind, name, declared_options(entry.spec), options or {}, complete=True)
    return Loaded(kind=kind, name=name, spec=entry.spec, plugin=entry.plugin, argument=argument, options=checked)


def resolved_options(spec: object, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every option ``spec`` declares, with its value: ``options`` (already checked, see
    :func:`check_options`) over the declared defaults. What a spec's ``load`` receives, so a
    loader never merges defaults itself and never sees an :class:`~harness.api.Option`. A required
    option that ``options`` lacks is left out (:func:`resolve` refuses it first); a list or
    mapping default is copied, so a loader that changes it changes nothing shared."""
    declared = declared_options(spec)
    values: dict[str, Any] = {}
    for option_name, default in declared.items():
        if not declared.declaration(option_name).required:
            values[option_name] = copy.deepcopy(default) if isinstance(default, (list, dict)) else default
    values.update(options or {})
    return values


def load(kind: str, name: str, options: Mapping[str, Any] | None = None) -> Loaded:
    """Resolve ``name``, check ``options`` and call the spec's ``load`` with every declared option
    (:func:`resolved_options`: the given values over the defaults; with ``argument=`` for
    ``NAME:ARGUMENT``); :attr:`Loaded.value` is what it returned, :attr:`Loaded.options` the
    options given, checked. An option value the loader rejects (``TypeError`` or ``ValueError``)
    is a one-line error naming the thing (and a plugin's distribution); any other exception in
    the loader is marked as raised there (:func:`running`)."""
    found = resolve(kind, name, options)
    load_fn = getattr(found.spec, "load", None)
    if not callable(load_fn):
        raise HarnessError(f"{KINDS[kind].noun} {name!r} is not loaded by name")
    kwargs = resolved_options(found.spec, found.options)
    if found.argument is not None:
        kwargs["argument"] = found.argument
    try:
        with running(kind, name, found.plugin):
            value = load_fn(**kwargs)
    except OptionError:  # already one line naming what it checked
        raise
    except HarnessError:
        raise
    except (TypeError, ValueError) as exc:
        raise HarnessError(f"{describe_thing(kind, name, found.plugin)}: {exc}") from exc
    return Loaded(
        kind=kind, name=name, spec=found.spec, plugin=found.plugin, argument=found.argument,
        options=found.options, value=value,
    )


# --- whose code failed -----------------------------------------------------------------------------

#: The attribute :func:`running` sets on an exception: ``(kind's noun, name, plugin)`` of the
#: innermost named thing that was running when it was raised.
RUNNING_ATTRIBUTE = "harness_running"


def describe_thing(kind: str, name: str, plugin: str | None = None) -> str:
    """``retriever 'tfidf'``, followed by ``(plugin harness-tfidf)`` when ``plugin`` (an
    entry-point name) comes from another distribution than harness's own."""
    noun = KINDS[kind].noun if kind in KINDS else kind
    text = f"{noun} {name!r}"
    if plugin is not None:
        from harness.plugins import distribution_of

        dist = distribution_of(plugin)
        if dist is not None:
            text += f" (plugin {dist})"
    return text


@contextmanager
def running(kind: str, name: str, plugin: str | None = None) -> Iterator[None]:
    """Mark an exception raised while the block runs (other than a
    :class:`~harness.errors.HarnessError`, which already says what is wrong) as raised while
    ``kind``'s ``name`` (provided by ``plugin``) ran: the innermost such block records itself on
    the exception, and when a plugin's code raised it (:func:`harness.plugins.culprit`), adds a
    note naming the thing and the plugin's distribution (a traceback shows it). The command line
    reports it in one line as that plugin's failure (:func:`failure_line`). The exception itself
    is raised unchanged."""
    try:
        yield
    except HarnessError:
        raise
    except Exception as exc:
        if getattr(exc, RUNNING_ATTRIBUTE, None) is None:
            noun = KINDS[kind].noun if kind in KINDS else kind
            try:
                setattr(exc, RUNNING_ATTRIBUTE, (noun, name, plugin))
            except (AttributeError, TypeError):  # an exception type without attributes
                pass
            else:
                line = failure_line(exc)
                if line is not None:
                    exc.add_note(line[0])
        raise


def failure_line(exc: BaseException) -> tuple[str, bool] | None:
    """One line saying which plugin's code raised ``exc`` and what it was running, and whether the
    plugin is another distribution's (True) or one of harness's own built-in plugins (False); None
    when no plugin's code is in its traceback (a fault of the core's own code).

    ``retriever 'tfidf' (plugin harness-tfidf) failed: ValueError: ...``; when the plugin whose
    code raised is not the one that provides the thing (a plugin's encoder on the built-in dense
    engine): ``plugin 'example' (harness-plugin-example) failed in retriever 'example-hashing': ...``;
    with nothing known to be running (a plugin's command): ``plugin 'example'
    (harness-plugin-example) failed: ...``."""
    from harness.plugins import culprit

    found = culprit(exc)
    if found is None:
        return None
    error = " ".join(f"{type(exc).__name__}: {exc}".split())
    context = getattr(exc, RUNNING_ATTRIBUTE, None)
    if not (isinstance(context, tuple) and len(context) == 3):
        context = None
    if context is not None and context[2] == found.name:
        noun, name, _ = context
        return f"{noun} {name!r} (plugin {found.distribution}) failed: {error}", not found.builtin
    where = f" in {context[0]} {context[1]!r}" if context is not None else ""
    return f"plugin {found.name!r} ({found.distribution}) failed{where}: {error}", not found.builtin

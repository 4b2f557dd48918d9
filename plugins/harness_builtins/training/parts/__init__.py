"""The training parts this plugin registers: one module per part, under ``losses/``,
``samplers/``, ``miners/`` and ``augmentations/``.

Each module holds the part's spec, ``SPEC``: its name, description, options and citation, and a
lazy ``load`` (:class:`Lazy`) naming the class that builds it. The specs are cheap metadata:
importing them imports no torch; the class's module (``training/losses.py``, ``samplers.py``,
``mining.py``, ``augmentations.py``) is imported when a part is built. A new part is a new module
here with its ``SPEC`` (found by :func:`specs`) and its class.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from harness.api import Options, check_options

#: The kinds of parts, each a subpackage here, with the noun errors use.
KINDS = {"losses": "loss", "samplers": "sampler", "miners": "negative miner", "augmentations": "augmentation"}


class Lazy:
    """A spec's ``load``: ``Lazy("package.module:Class", OPTIONS)(**options)`` imports the module
    when called and returns ``Class(**{**defaults, **options})``, the declared defaults of
    ``OPTIONS`` (name -> default or :class:`~harness.api.Option`) under the options given (already
    checked by the registry, or by :func:`build`)."""

    def __init__(self, target: str, options: Mapping[str, Any] | None = None) -> None:
        module, _, attribute = target.partition(":")
        if not module or not attribute:
            raise ValueError(f"a lazy target is 'package.module:attribute', got {target!r}")
        self.target = target
        self.defaults = dict(Options(options or {}))

    def resolve(self) -> Any:
        """The class (or function) the target names, its module imported."""
        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __call__(self, **options: Any) -> Any:
        return self.resolve()(**{**self.defaults, **options})

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


def specs(kind: str) -> dict[str, Any]:
    """name -> spec of every part of ``kind`` (a key of :data:`KINDS`): the ``SPEC`` of each module
    of that subpackage, in name order. Two modules giving one name is an error."""
    package = importlib.import_module(f"{__name__}.{kind}")
    found: dict[str, Any] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        spec = importlib.import_module(f"{package.__name__}.{info.name}").SPEC
        if spec.name in found:
            raise ValueError(f"{KINDS[kind]} {spec.name!r} is declared twice (module {info.name!r} and another)")
        found[spec.name] = spec
    return dict(sorted(found.items()))


def build(kind: str, name: str, **options: Any) -> Any:
    """The part ``name`` of ``kind`` built with ``options`` over its defaults, the options checked by
    its declarations first (:class:`~harness.api.OptionError`, a ``ValueError``), as the registry
    does; an unknown name is a ``ValueError``."""
    known = specs(kind)
    if name not in known:
        raise ValueError(f"unknown {KINDS[kind]} {name!r}; known: {', '.join(known)}")
    spec = known[name]
    return spec.load(**check_options(spec.options, options, where=f"{KINDS[kind]} {name!r}"))

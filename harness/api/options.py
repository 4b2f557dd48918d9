"""Options: what a spec's ``load`` accepts, declared once with types and bounds, and the one check
every given value goes through.

A spec's ``options`` maps each option's name to its default, or to an :class:`Option` that also
says what values are allowed::

    RetrieverSpec(name="bm25", ..., options={
        "k1": non_negative_float(0.9, help="term frequency saturation"),
        "b": probability(0.4, help="length normalisation"),
        "legacy": True,            # a plain default: only the name and default are declared
    })

The spec keeps them as an :class:`Options` mapping: ``spec.options["k1"]`` is still the default
(``0.9``), ``spec.options.declaration("k1")`` the :class:`Option`. :func:`harness.registry.load`
(and ``resolve``) checks given values with :func:`check_options` before calling ``load``, which
receives them coerced (``"2"`` for an integer option arrives as ``2``); a bad value is one line,
``retriever 'bm25': option b must be a number from 0 to 1, got 1.5`` (a :class:`OptionError`,
which the command line reports with exit status 2).

Values as ``-o KEY=VALUE`` gives them (:func:`harness.cli.common.parse_options`: JSON when the text
parses as JSON, else the text) and as Python callers give them are treated alike:

- ``int``: an integer, or a text of ASCII digits (``"12"``), converted. ``True``/``False`` and
  floats (``2.0``, ``1e3``) are not integers. An integer option without a ``max`` still refuses
  values beyond 64 bits (:data:`INT_LIMIT`), which no library it reaches could hold.
- ``float``: any finite number (integers included) or a text that is one, returned as a float.
  ``True``/``False`` are not numbers.
- ``bool``: ``true``/``false``, ``1``/``0`` and the texts ``true``, ``false``, ``yes``, ``no``,
  ``on``, ``off``, ``1``, ``0`` (any case).
- ``str``: text. A value ``-o`` parsed from text (a number, a list: :func:`typed`) is the text as
  typed (``-o revision=6e35`` is ``"6e35"``, not a number); an integer from Python becomes its
  digits; ``true``/``false`` are not text; a path (:func:`path`) also accepts an ``os.PathLike``.
- ``list`` / ``dict``: a list (or tuple) / a mapping, as given.
- ``None`` (no type): anything, unchecked (what a plain default declares).

``None`` (``null`` on the command line) is accepted when ``nullable`` or when the default is
``None``; ``literals`` are words accepted besides the typed values (``"auto"``), matched in any
case; ``choices`` restricts the (coerced) value to a list.

A ``required`` option has no default: :func:`harness.registry.resolve` (and so ``load`` and
``harness run``) refuses a name whose required options are not given, in one line, before any
work (``retriever 'dense' needs option query_model (hub id or local directory)``), and ``null`` is
not a value for it.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import string
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from harness.errors import HarnessError

#: The value types an :class:`Option` may declare (``None``: any value).
TYPES: tuple[type, ...] = (int, float, bool, str, list, dict)

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


#: The largest magnitude an integer option accepts when its declaration sets no ``max``: a signed
#: 64-bit integer's, what numpy, faiss and torch hold at most.
INT_LIMIT = 2**63 - 1


class _Typed:
    """A value ``-o KEY=VALUE`` parsed from its text (a number, a list, a mapping) that keeps the
    text as typed (``text``): a text option takes the text, any other the value. Made by
    :func:`typed`; the checks return plain values, so it never reaches a loader."""

    __slots__ = ()
    text: str

    def __repr__(self) -> str:
        return repr(_plain(self))

    def __reduce__(self):
        return (_plain_copy, (_plain(self),))


class TypedInt(_Typed, int):
    pass


class TypedFloat(_Typed, float):
    pass


class TypedList(_Typed, list):
    pass


class TypedMapping(_Typed, dict):
    pass


def _plain_copy(value: Any) -> Any:
    return value


def _plain(value: Any) -> Any:
    """``value`` without the text it was typed as (a :func:`typed` value as its plain type)."""
    if isinstance(value, TypedInt):
        return int(value)
    if isinstance(value, TypedFloat):
        return float(value)
    if isinstance(value, TypedList):
        return list(value)
    if isinstance(value, TypedMapping):
        return dict(value)
    return value


def typed(value: Any, text: str) -> Any:
    """``value`` parsed from ``text`` (``-o`` parses JSON), keeping ``text`` for a text option:
    an integer, number, list or mapping comes back as an equal value of a subclass with ``.text``;
    anything else (text, ``true``/``false``, ``null``) as it is."""
    kind = {int: TypedInt, float: TypedFloat, list: TypedList, dict: TypedMapping}.get(type(value))
    if kind is None:
        return value
    out = kind(value)
    out.text = text
    return out


class OptionError(HarnessError, ValueError):
    """A given option that its declaration refuses (or that is not declared): one line naming the
    thing and the option. ``option`` is its name; ``unknown`` says it is not declared at all.

    A :class:`~harness.errors.HarnessError` (exit status 2 on the command line) and a
    ``ValueError`` (code that catches bad parameters as ``ValueError`` keeps working)."""

    def __init__(self, message: str, *, option: str | None = None, unknown: bool = False):
        super().__init__(message)
        self.option, self.unknown = option, unknown


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _number_text(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


@dataclass(frozen=True)
class Option:
    """One option's declaration: its default and the values it accepts.

    ``type``: one of :data:`TYPES` or ``None`` (any value); ``min``/``max``: inclusive bounds of a
    number (``min_exclusive``: ``> min``); ``choices``: the allowed values; ``nullable``: ``None``
    is allowed (always so when ``default`` is ``None``); ``literals``: words accepted besides the
    typed values (``("auto",)``); ``fields``: for text, the ``{field}`` names a ``str.format``
    template must use, exactly; ``kind``: a name for the type in messages and listings
    (``"path"``); ``help``: one line for listings and documentation; ``required``: the option
    has no default and must be given a value (``default`` stays ``None``, and ``None`` is not
    accepted as a value).
    """

    default: Any = None
    _: KW_ONLY
    type: type | None = None
    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    literals: tuple[str, ...] = ()
    fields: tuple[str, ...] | None = None
    kind: str | None = None
    help: str = ""
    required: bool = False

    def __post_init__(self) -> None:
        if self.type is not None and self.type not in TYPES:
            raise TypeError(f"Option type must be one of {', '.join(t.__name__ for t in TYPES)} or None, got {self.type!r}")
        if (self.min is not None or self.max is not None) and self.type not in (int, float):
            raise TypeError("Option min and max need type=int or type=float")
        if self.fields is not None and self.type is not str:
            raise TypeError("Option fields need type=str")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
            if not self.choices:
                raise TypeError("Option choices must not be empty")
        if isinstance(self.literals, str):
            object.__setattr__(self, "literals", (self.literals,))
        object.__setattr__(self, "literals", tuple(self.literals))
        if any(not isinstance(word, str) for word in self.literals):
            raise TypeError("Option literals must be text")
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))
        if self.required:
            if self.default is not None:
                raise TypeError(f"a required Option has no default, got {self.default!r}")
            if self.nullable:
                raise TypeError("a required Option cannot be nullable")
            return
        if self.default is None:
            object.__setattr__(self, "nullable", True)
        try:
            self.check(self.default, "default")
        except OptionError:
            raise TypeError(f"Option default {self.default!r} is not {self.describe()}") from None

    # ----------------------------------------------------------------------------- describing

    def describe(self) -> str:
        """What the option accepts, as in error messages: ``an integer >= 1``, ``true or false``,
        ``one of flat, hnsw, ivfpq``, ``a number >= 0 or auto`` ..."""
        if self.type is None and self.choices is None:
            return self.kind or "any value"
        extra = [*self.literals, *(["null"] if self.nullable else [])]
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in (*self.choices, *extra))
        if self.type is bool:
            words = ["true", "false", *extra]
            return ", ".join(words[:-1]) + " or " + words[-1]
        base = self._base()
        return base if not extra else ", ".join([base, *extra[:-1]]) + " or " + extra[-1]

    def _base(self) -> str:
        if self.kind is not None and self.type is not str:
            return self.kind
        if self.type is int or self.type is float:
            noun = "an integer" if self.type is int else "a number"
            low = None if self.min is None else _number_text(self.min)
            high = None if self.max is None else _number_text(self.max)
            if low is not None and high is not None and not self.min_exclusive:
                return f"{noun} from {low} to {high}"
            bounds = []
            if low is not None:
                bounds.append(f"{'>' if self.min_exclusive else '>='} {low}")
            if high is not None:
                bounds.append(f"<= {high}")
            return " ".join([noun, " and ".join(bounds)]) if bounds else noun
        if self.type is str:
            if self.fields is not None:
                used = ", ".join("{" + f + "}" for f in self.fields) or "no {field}"
                return f"text using exactly {used}"
            return "a path" if self.kind == "path" else (f"a {self.kind}" if self.kind else "text")
        if self.type is list:
            return "a list"
        return "a mapping"

    def summary(self) -> str:
        """``an integer >= 1 (default 32): passages per batch``: for listings (``(required)`` for
        a required option)."""
        text = f"{self.describe()} ({'required' if self.required else f'default {self.default!r}'})"
        return f"{text}: {self.help}" if self.help else text

    # ----------------------------------------------------------------------------- checking

    def check(self, value: Any, name: str, where: str = "") -> Any:
        """``value`` coerced to the declared type; else an :class:`OptionError`:
        ``WHERE: option NAME must be DESCRIPTION, got VALUE``."""
        accepted, coerced = self._coerce(value)
        if not accepted:
            prefix = f"{where}: " if where else ""
            if isinstance(value, _Typed):  # as typed, unquoted like any number
                shown = value.text.strip() if len(value.text.strip()) <= 80 else value.text.strip()[:77] + "..."
            else:
                shown = _short(value)
            wanted = self.describe()
            if self._too_wide(value):
                wanted += f" (at most {INT_LIMIT:,} in magnitude)"
            raise OptionError(f"{prefix}option {name} must be {wanted}, got {shown}", option=name)
        return _plain(coerced)

    def _too_wide(self, value: Any) -> bool:
        return (self.type is int and self.max is None and isinstance(value, int) and not isinstance(value, bool)
                and abs(value) > INT_LIMIT)

    def _coerce(self, value: Any) -> tuple[bool, Any]:
        if value is None:
            return self.nullable, None
        if self.literals and isinstance(value, str):
            folded = value.strip().lower()
            for word in self.literals:
                if folded == word.lower():
                    return True, word
        ok, value = self._typed(value)
        if not ok:
            return False, value
        if self.choices is not None and value not in self.choices:
            return False, value
        return True, value

    def _typed(self, value: Any) -> tuple[bool, Any]:
        kind = self.type
        if kind is None:
            return True, value
        if kind is bool:
            if isinstance(value, bool):
                return True, value
            if isinstance(value, int) and value in (0, 1):
                return True, bool(value)
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                return True, value.strip().lower() in _TRUE
            return False, value
        if kind is int:
            if isinstance(value, bool):
                return False, value
            if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
                value = int(value.strip())
            if not isinstance(value, int):
                return False, value
            value = int(value)
            if self._too_wide(value):
                return False, value
            return self._within(value), value
        if kind is float:
            if isinstance(value, bool):
                return False, value
            if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
                value = float(value.strip())
            if not isinstance(value, (int, float)):
                return False, value
            try:
                value = float(value)
            except OverflowError:  # an integer beyond any float
                return False, value
            return math.isfinite(value) and self._within(value), value
        if kind is str:
            if isinstance(value, _Typed):
                value = value.text  # the text as typed after -o KEY=
            elif self.kind == "path" and isinstance(value, os.PathLike):
                value = os.fspath(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                return False, value
            if self.fields is not None and _fields(value) != set(self.fields):
                return False, value
            return True, value
        if kind is list:
            return (True, list(value)) if isinstance(value, (list, tuple)) else (False, value)
        if kind is dict:
            return (True, dict(value)) if isinstance(value, Mapping) else (False, value)
        return False, value  # pragma: no cover - TYPES is checked in __post_init__

    def _within(self, value: float) -> bool:
        if self.min is not None and (value <= self.min if self.min_exclusive else value < self.min):
            return False
        return self.max is None or value <= self.max


def _fields(template: str) -> set[str] | None:
    """The ``{field}`` names a ``str.format`` template uses (``None``: not a valid template)."""
    try:
        return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError:
        return None


# --------------------------------------------------------------------------------- the kinds


def integer(default: Any = None, *, min: int | None = None, max: int | None = None, nullable: bool = False,
            literals: tuple[str, ...] = (), help: str = "") -> Option:
    """An integer, optionally bounded (inclusive)."""
    return Option(default, type=int, min=min, max=max, nullable=nullable, literals=literals, help=help)


def positive_int(default: Any = None, *, max: int | None = None, nullable: bool = False,
                 literals: tuple[str, ...] = (), help: str = "") -> Option:
    """An integer >= 1 (``max``: an upper bound)."""
    return integer(default, min=1, max=max, nullable=nullable, literals=literals, help=help)


def non_negative_int(default: Any = 0, *, max: int | None = None, nullable: bool = False, help: str = "") -> Option:
    """An integer >= 0."""
    return integer(default, min=0, max=max, nullable=nullable, help=help)


def number(default: Any = None, *, min: float | None = None, max: float | None = None, min_exclusive: bool = False,
           nullable: bool = False, literals: tuple[str, ...] = (), help: str = "") -> Option:
    """A finite number (a float), optionally bounded."""
    return Option(default, type=float, min=min, max=max, min_exclusive=min_exclusive, nullable=nullable,
                  literals=literals, help=help)


def non_negative_float(default: Any = None, *, nullable: bool = False, literals: tuple[str, ...] = (), help: str = "") -> Option:
    """A finite number >= 0."""
    return number(default, min=0, nullable=nullable, literals=literals, help=help)


def positive_float(default: Any = None, *, nullable: bool = False, literals: tuple[str, ...] = (), help: str = "") -> Option:
    """A finite number > 0."""
    return number(default, min=0, min_exclusive=True, nullable=nullable, literals=literals, help=help)


def probability(default: Any = None, *, nullable: bool = False, help: str = "") -> Option:
    """A number from 0 to 1."""
    return number(default, min=0, max=1, nullable=nullable, help=help)


def boolean(default: Any = False, *, nullable: bool = False, literals: tuple[str, ...] = (), help: str = "") -> Option:
    """``true`` or ``false``."""
    return Option(default, type=bool, nullable=nullable, literals=literals, help=help)


def choice(default: Any, choices: tuple[Any, ...] | list[Any], *, nullable: bool = False, help: str = "") -> Option:
    """One of ``choices`` (texts, or values of one type)."""
    kinds = {type(c) for c in choices}
    kind = kinds.pop() if len(kinds) == 1 and next(iter(kinds)) in TYPES else None
    return Option(default, type=kind, choices=tuple(choices), nullable=nullable, help=help)


def text(default: Any = None, *, nullable: bool = False, literals: tuple[str, ...] = (), help: str = "",
         required: bool = False) -> Option:
    """Text (a model id, a device name, a label ...); ``required``: no default, a value must be given."""
    return Option(default, type=str, nullable=nullable, literals=literals, help=help, required=required)


def template(default: Any, fields: tuple[str, ...] | list[str], *, nullable: bool = False, help: str = "") -> Option:
    """A ``str.format`` template that uses exactly ``fields`` (``"{title} {text}"``)."""
    return Option(default, type=str, fields=tuple(fields), nullable=nullable, help=help)


def path(default: Any = None, *, nullable: bool = False, help: str = "", required: bool = False) -> Option:
    """A file or folder (text or an ``os.PathLike``, given as text); ``required``: no default, a
    value must be given."""
    return Option(default, type=str, kind="path", nullable=nullable, help=help, required=required)


# --------------------------------------------------------------------------------- a set of options


class Options(dict):
    """A spec's options: a read-only ``dict`` of name -> **default** (as ``options`` always was:
    ``json.dumps``, ``.copy()``, ``isinstance(..., dict)`` work as before), that also keeps each
    name's :class:`Option` (:meth:`declaration`).

    Built from a mapping whose values are plain defaults (which declare only the name and the
    default: any value is accepted) or :class:`Option` objects. ``a | b`` merges (``b`` wins);
    ``dict(options)``, ``{**options}`` and ``.copy()`` give the defaults as a plain dict.
    """

    def __init__(self, declared: Mapping[str, Any] | None = None):
        if isinstance(declared, Options):
            found = dict(declared._declared)
        else:
            if declared is None:
                declared = {}
            if not isinstance(declared, Mapping):
                raise TypeError(f"options must be a mapping of option names to defaults or Option declarations, got {type(declared).__name__}")
            found = {}
            for name, value in declared.items():
                if not isinstance(name, str):
                    raise TypeError(f"option names must be text, got {name!r}")
                found[name] = value if isinstance(value, Option) else Option(value)
        self._declared: dict[str, Option] = found
        super().__init__({name: option.default for name, option in found.items()})

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a spec's options are read-only; build new ones with Options({...}) or options | {...}")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self):
        return (Options, (self._declared,))

    def __repr__(self) -> str:
        return f"Options({dict(self)!r})"

    def declaration(self, name: str) -> Option:
        """The :class:`Option` declared for ``name`` (``KeyError`` when none is)."""
        return self._declared[name]

    @property
    def declarations(self) -> dict[str, Option]:
        """Every name's :class:`Option` (a copy)."""
        return dict(self._declared)

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the options that must be given a value (:attr:`Option.required`)."""
        return tuple(name for name, option in self._declared.items() if option.required)

    def __or__(self, other: Mapping[str, Any]) -> Options:
        if not isinstance(other, Mapping):
            return NotImplemented
        return Options({**self._declared, **_declarations(other)})

    def __ror__(self, other: Mapping[str, Any]) -> Options:
        if not isinstance(other, Mapping):
            return NotImplemented
        return Options({**_declarations(other), **self._declared})

    def check(self, given: Mapping[str, Any] | None, *, where: str = "", complete: bool = False) -> dict[str, Any]:
        """:func:`check_options` with these declarations."""
        return check_options(self, given, where=where, complete=complete)

    def describe(self) -> dict[str, str]:
        """``name -> "an integer >= 1 (default 32): help"`` for every option, for listings."""
        return {name: option.summary() for name, option in self._declared.items()}


def _declarations(options: Mapping[str, Any]) -> dict[str, Option]:
    return Options(options)._declared


def check_options(
    declared: Mapping[str, Any], given: Mapping[str, Any] | None, *, where: str = "", complete: bool = False
) -> dict[str, Any]:
    """``given`` checked against ``declared`` (an :class:`Options`, or a mapping of names to plain
    defaults or :class:`Option` objects) and coerced, as a new dict of the given names only
    (defaults are not filled in). ``complete``: ``given`` is everything the thing will get, so
    each required option (:attr:`Option.required`) must be among it
    (``retriever 'dense' needs option query_model (hub id or local directory)``).

    A name ``declared`` lacks, or a value its :class:`Option` refuses, raises :class:`OptionError`
    with one line that starts with ``where`` (e.g. ``retriever 'bm25'``):
    ``retriever 'bm25' has no option 'k'; did you mean 'k1'? (options: b, k1)`` or
    ``retriever 'bm25': option k1 must be a number >= 0, got -1``.
    """
    options = declared if isinstance(declared, Options) else Options(declared)
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        prefix = f"{where}: " if where else ""
        raise OptionError(f"{prefix}options must be a mapping of names to values, got {type(given).__name__}")
    out: dict[str, Any] = {}
    for key, value in given.items():
        if not isinstance(key, str) or key not in options:
            message = f"{where} has no option {key!r}" if where else f"no option {key!r}"
            close = difflib.get_close_matches(str(key), list(options), n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
            message += f" (options: {', '.join(sorted(options)) or 'none'})"
            raise OptionError(message, option=str(key), unknown=True)
        out[key] = options.declaration(key).check(value, key, where)
    missing = [name for name in options.required if name not in out] if complete else []
    if missing:
        wanted = "; ".join(f"{name} ({options.declaration(name).help or options.declaration(name).describe()})"
                           for name in missing)
        noun = "option" if len(missing) == 1 else "options"
        message = f"{where} needs {noun} {wanted}" if where else f"needs {noun} {wanted}"
        raise OptionError(message, option=missing[0])
    return out


__all__ = [
    "INT_LIMIT", "TYPES", "Option", "OptionError", "Options", "check_options", "typed",
    "integer", "positive_int", "non_negative_int", "number", "non_negative_float", "positive_float",
    "probability", "boolean", "choice", "text", "template", "path",
]

"""Spec files as typed records: a TOML table decoded into a :class:`msgspec.Struct`, with every
problem of the file found at once.

Each kind of spec declares its keys and their types once, as a ``msgspec.Struct`` (the suite,
corpus and training specs in :mod:`harness.data.catalog`, released embeddings in
:mod:`harness.data.embeddings`, published runs in :mod:`harness.runfiles.published`, published
tables in :mod:`harness.analysis.published`). :func:`decode` converts the file's table with
``msgspec.convert(..., type=)`` key by key, so a file with several problems (a missing key, a
value of the wrong type, a key no spec has) reports each of them, not the first; the readers add
the checks types cannot say (a URL's scheme, a name's spelling, a path inside the data folder) to
the same :class:`Problems`, which is raised as one line naming the file.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from harness.errors import InputFileError

#: Problems listed in one message at most (the rest are counted).
MOST_SHOWN = 12


class Problems:
    """The problems found in one file, each a short phrase; :meth:`raise_any` raises them
    together as one :class:`InputFileError` naming the file."""

    def __init__(self, source: object):
        self.source = source
        self.items: list[str] = []

    def add(self, problem: str) -> None:
        problem = " ".join(problem.split())
        if problem not in self.items:
            self.items.append(problem)

    def __bool__(self) -> bool:
        return bool(self.items)

    def message(self) -> str:
        shown = self.items[:MOST_SHOWN]
        more = len(self.items) - len(shown)
        return "; ".join(shown) + (f"; and {more} more problem{'s' if more > 1 else ''}" if more > 0 else "")

    def raise_any(self) -> None:
        if self.items:
            raise InputFileError(self.source, self.message())


class SpecRecord(msgspec.Struct, kw_only=True):
    """Base of the spec records: ``MESSAGES`` gives, per key, what a value of the wrong type is
    told (``'KEY' must be ...``) where the type's name alone would say too little, or a function
    of the value giving the whole message."""

    MESSAGES: ClassVar[Mapping[str, Any]] = {}


def _unwrap(kind: Any) -> Any:
    """``kind`` without ``None`` in a union (``str | None`` -> ``str``) and without ``Annotated``."""
    if typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return kind


def _struct(kind: Any) -> type[SpecRecord] | None:
    kind = _unwrap(kind)
    return kind if isinstance(kind, type) and issubclass(kind, msgspec.Struct) else None


def type_name(kind: Any) -> str:
    """How a message names a field's type: ``str``, ``int``, ``list``, ``str or int``."""
    kind = _unwrap(kind)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(kind) if a is not type(None))
    if origin is not None:
        kind = origin
    if kind is typing.Any:
        return "a value"
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return "table"
    return getattr(kind, "__name__", str(kind))


def _element_name(kind: Any) -> str | None:
    """``int`` for ``list[int]`` (what a list's elements must be), else None."""
    kind = _unwrap(kind)
    if typing.get_origin(kind) in (list, tuple):
        args = [a for a in typing.get_args(kind) if a is not Ellipsis]
        return type_name(args[0]) if args else None
    return None


def decode(data: Any, record: type[SpecRecord], problems: Problems, *, prefix: str = "", where: str = "") -> Any:
    """``data`` (a TOML table) as a ``record``, each problem added to ``problems``: a key the
    record does not have (``unknown key 'x'``), a required key missing (``missing key 'x'``), a
    value ``msgspec.convert`` refuses for the key's type (``'x' must be int, got str``). A table
    nested in the record (a suite's ``parts``) is decoded the same way, its keys named
    ``parts[0].'url'``. A key with a problem is None in the record, so that the reader's own
    checks of the other keys still run (they skip None); None when ``data`` is not a table.
    ``where`` starts each message (``rows[0]: ``). A nested table whose key has a message in
    ``MESSAGES`` is reported by that message alone."""
    if not isinstance(data, Mapping):
        problems.add(where + (f"'{prefix.rstrip('.')}' must be a table" if prefix else "the file must be a table"))
        return None
    fields = {f.encode_name: f for f in msgspec.structs.fields(record)}
    for key in data:
        if key not in fields:
            problems.add(f"{where}unknown key {prefix}{key!r}")
    values: dict[str, Any] = {}
    for key, field in fields.items():
        if key not in data:
            if field.required:
                problems.add(f"{where}missing key {prefix}{key!r}")
                values[field.name] = None
            continue
        value = data[key]
        nested = _struct(field.type)
        inner = _unwrap(field.type)
        listed = _struct(typing.get_args(inner)[0]) if typing.get_origin(inner) in (list, tuple) and typing.get_args(inner) else None
        if nested is not None and isinstance(value, Mapping) and key in record.MESSAGES:
            inside = Problems(problems.source)
            values[field.name] = decode(value, nested, inside, prefix=f"{prefix}{key}.")
            if inside:
                problems.add(f"{where}{_type_message(record, key, field.type, value, prefix)}")
                values[field.name] = None
        elif nested is not None and isinstance(value, Mapping):
            values[field.name] = decode(value, nested, problems, prefix=f"{prefix}{key}.", where=where)
        elif listed is not None and isinstance(value, list):
            values[field.name] = [decode(item, listed, problems, prefix=f"{prefix}{key}[{index}].", where=where)
                                  for index, item in enumerate(value)]
        else:
            try:
                values[field.name] = msgspec.convert(value, field.type, strict=True)
            except msgspec.ValidationError:
                problems.add(where + _type_message(record, key, field.type, value, prefix))
                values[field.name] = None
    return record(**values)


def _type_message(record: type[SpecRecord], key: str, kind: Any, value: Any, prefix: str) -> str:
    told = record.MESSAGES.get(key)
    if callable(told):
        return told(value)
    if told is not None:
        return f"{prefix}{key!r} {told}"
    element = _element_name(kind)
    if element is not None and isinstance(value, list):
        bad = next((v for v in value if not _converts(v, typing.get_args(_unwrap(kind))[0])), None)
        return f"{prefix}{key!r} must be a list of {element}, got a {type(bad).__name__} in it"
    return f"{prefix}{key!r} must be {type_name(kind)}, got {type(value).__name__}"


def _converts(value: Any, kind: Any) -> bool:
    try:
        msgspec.convert(value, kind, strict=True)
    except msgspec.ValidationError:
        return False
    return True


__all__ = ["MOST_SHOWN", "Problems", "SpecRecord", "decode", "type_name"]

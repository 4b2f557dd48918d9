"""Parsing JSON from files users hand the harness: every failure one :class:`InputFileError`."""

from __future__ import annotations

import json
from typing import Any

from harness.errors import InputFileError


def loads(text: str | bytes, *, source: object, line: int | None = None) -> Any:
    """``json.loads(text)``; invalid JSON and nesting too deep to parse are one-line errors naming
    ``source`` and the line (``line`` for one line of a JSON-lines file, else the parser's)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputFileError(source, f"invalid JSON: {exc.msg} (column {exc.colno})", line=where) from None
    except RecursionError:
        raise InputFileError(source, "JSON nested too deeply", line=line) from None

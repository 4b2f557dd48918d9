"""Parsing JSON from files users hand the harness: every failure one :class:`InputFileError`."""

from __future__ import annotations

import json
from pathlib import Path
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


def read_text(path, *, what: str = "file", prefix: str | None = None) -> str:
    """The UTF-8 text of the small file at ``path`` (a leading byte-order mark dropped): an
    unreadable file, and bytes that are not UTF-8 (``FILE:LINE: PREFIXnot UTF-8 text (byte N of
    the line)``, the true line of the first bad byte), are one-line errors naming ``what`` it should
    have been (``prefix``: ``"unreadable WHAT: "`` unless given)."""
    prefix = f"unreadable {what}: " if prefix is None else prefix
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputFileError(path, f"unreadable {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputFileError(path, f"{prefix}not UTF-8 text (byte {column} of the line)", line=line) from None


def load_file(path, *, what: str = "file") -> Any:
    """The JSON value in the file at ``path``; unreadable bytes (:func:`read_text`) and invalid
    JSON are one-line errors naming the file and the line (``what`` says what it should have been)."""
    return loads(read_text(path, what=what), source=path)


def iter_array(stream, *, source: object, chunk_size: int = 1 << 20, lines: bool = False):
    """The elements of one top-level JSON array read from a text ``stream``, one at a time.

    Memory stays at about one element plus ``chunk_size`` characters, whatever the file's size (DPR's
    training files hold gigabytes in one array). Anything but an array of JSON values, and text after
    its end, is an :class:`InputFileError` naming ``source`` and the line. With ``lines`` it yields
    ``(line, element)``, the line the element starts on.
    """
    decoder = json.JSONDecoder()
    buffer = ""
    line = 1  # line number at the buffer's start
    eof = False

    def fill() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        data = stream.read(chunk_size)
        if not data:
            eof = True
            return False
        buffer += data
        return True

    def skip_space(pos: int) -> int:
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                pos += 1
            if pos < len(buffer) or not fill():
                return pos

    def fail(pos: int, problem: str):
        raise InputFileError(source, problem, line=line + buffer.count("\n", 0, pos))

    pos = skip_space(0)
    if pos < len(buffer) and buffer[pos] == "\ufeff":
        pos = skip_space(pos + 1)
    if pos >= len(buffer) or buffer[pos] != "[":
        fail(pos, "expected a JSON array")
    pos = skip_space(pos + 1)
    if pos < len(buffer) and buffer[pos] == "]":
        pos += 1
    else:
        while True:
            while True:
                try:
                    value, end = decoder.raw_decode(buffer, pos)
                except json.JSONDecodeError as exc:
                    if fill():
                        continue
                    fail(exc.pos, f"invalid JSON: {exc.msg}")
                except RecursionError:
                    fail(pos, "JSON nested too deeply")
                if end == len(buffer) and fill():
                    continue  # a number may go on in the next chunk
                break
            yield (line + buffer.count("\n", 0, pos), value) if lines else value
            pos = skip_space(end)
            if pos >= len(buffer):
                fail(pos, "the array is not closed")
            if buffer[pos] == "]":
                pos += 1
                break
            if buffer[pos] != ",":
                fail(pos, "expected ',' or ']' between array elements")
            pos = skip_space(pos + 1)
            if pos < len(buffer) and buffer[pos] == "]":
                fail(pos, "trailing comma in the array")
            # drop what has been read, so the buffer holds about one element
            line += buffer.count("\n", 0, pos)
            buffer = buffer[pos:]
            pos = 0
    pos = skip_space(pos)
    if pos < len(buffer):
        fail(pos, "text after the end of the JSON array")

"""Reading passage sources for the corpus store: DPR's TSV (``id\ttext\ttitle``, CSV-quoted) and
JSONL (``{"id", "title", "text"}``), plain or gzipped, streamed row by row with the line each row
starts on, so that every problem is reported as ``file:line: problem``.

Text is decoded in large chunks, so the line being read when the decoder fails is not the line of
the bad byte; :func:`not_utf8` finds that line by scanning the file's bytes again (only then)."""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import io
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.util import jsonio
from harness.errors import InputFileError

#: Source formats :func:`harness.data.corpus_store.build_store` reads.
FORMATS: tuple[str, ...] = ("dpr-tsv", "jsonl")

#: The header DPR's passage file starts with.
DPR_TSV_HEADER: tuple[str, ...] = ("id", "text", "title")

_GZIP_MAGIC = b"\x1f\x8b"
_SCAN_CHUNK = 1 << 20


def first_bad_utf8(path: str | Path) -> tuple[int, int] | None:
    """``(line, byte)``, both 1-based, of the first byte of ``path`` (its content, when gzipped)
    that is not valid UTF-8, or None when there is none (or the file cannot be read again). Lines
    end at ``\\n``; memory stays at one chunk whatever the file's size."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return None
    with raw:
        try:
            compressed = raw.read(2) == _GZIP_MAGIC
            raw.seek(0)
            stream: Any = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
            pending = b""  # the bytes of an incomplete character at the end of the previous chunk
            offset = 0  # bytes of the file before ``pending``
            newlines = 0  # line ends before ``offset``
            line_start = 0  # where the current line starts
            while True:
                chunk = stream.read(_SCAN_CHUNK)
                data = pending + chunk
                try:
                    _, used = codecs.utf_8_decode(data, "strict", not chunk)
                except UnicodeDecodeError as exc:
                    bad = exc.start
                    last = data.rfind(b"\n", 0, bad)
                    if last >= 0:
                        line_start = offset + last + 1
                    return newlines + data.count(b"\n", 0, bad) + 1, offset + bad - line_start + 1
                newlines += data.count(b"\n", 0, used)
                last = data.rfind(b"\n", 0, used)
                if last >= 0:
                    line_start = offset + last + 1
                pending, offset = data[used:], offset + used
                if not chunk:
                    return None
        except (OSError, EOFError, zlib.error):
            return None


def not_utf8(path: str | Path, *, line: int | None = None) -> InputFileError:
    """The error for a file whose bytes are not all UTF-8: ``file:LINE: not UTF-8 text (byte N of
    the line)`` with the true line of the first bad byte (``line``, the reader's guess, only when
    the file cannot be scanned again)."""
    found = first_bad_utf8(path)
    if found is None:
        return InputFileError(path, "not UTF-8 text", line=line)
    return InputFileError(path, f"not UTF-8 text (byte {found[1]} of the line)", line=found[0])



class Source:
    """An open source file: text stream plus the raw file for progress (bytes read so far)."""

    def __init__(self, path: Path, *, newline: str | None):
        self.path = path
        try:
            self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise InputFileError(path, f"cannot read corpus file: {exc.strerror or exc}") from None
        magic = self.raw.read(2)
        self.raw.seek(0)
        self.compressed = magic == _GZIP_MAGIC
        binary: Any = gzip.GzipFile(fileobj=self.raw, mode="rb") if self.compressed else self.raw
        self.text = io.TextIOWrapper(binary, encoding="utf-8-sig", newline=newline)
        with contextlib.suppress(AttributeError):
            self.text._CHUNK_SIZE = 1 << 20  # type: ignore[attr-defined]  # fewer, larger reads

    def position(self) -> int:
        try:
            return self.raw.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.text.close()
        self.raw.close()


def source_rows(source: Source, format: str) -> Iterator[tuple[int, str, str, str]]:
    """``(line, id, title, text)`` for every passage of ``source``; ``line`` is where the row starts."""
    path = source.path
    try:
        if format == "dpr-tsv":
            yield from _tsv_rows(path, source.text)
        else:
            yield from _jsonl_rows(path, source.text)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputFileError(path, f"corrupt gzip stream: {exc}") from None


def _tsv_rows(path: Path, stream: io.TextIOBase) -> Iterator[tuple[int, str, str, str]]:
    reader = csv.reader(stream, delimiter="\t")
    previous = 0  # reader.line_num after the previous row: the row starts on the next line
    try:
        header = next(reader, None)
        if header is None:
            raise InputFileError(path, "empty file; expected the header id<TAB>text<TAB>title", line=1)
        if tuple(header) != DPR_TSV_HEADER:
            raise InputFileError(
                path, f"expected the header id<TAB>text<TAB>title (DPR passage file), got {header!r:.200}", line=1
            )
        previous = reader.line_num
        for row in reader:
            line, previous = previous + 1, reader.line_num
            if len(row) != 3:
                if not row:
                    continue
                span = f" (the row runs over lines {line}-{previous}: a stray quote?)" if previous > line else ""
                raise InputFileError(
                    path, f"expected 3 tab-separated columns (id, text, title), got {len(row)}{span}", line=line
                )
            passage_id, text, title = row
            # DPR's reader (CsvCtxSrc) strips '"' from both ends of the text; its evaluation,
            # and so every published number, sees the stripped text.
            text = text.strip('"')
            if not passage_id:
                raise InputFileError(path, "empty passage id", line=line)
            yield line, passage_id, title, text
    except csv.Error as exc:
        raise InputFileError(path, f"bad CSV: {exc}", line=previous + 1) from None
    except UnicodeDecodeError:
        raise not_utf8(path, line=previous + 1) from None


def _jsonl_rows(path: Path, stream: io.TextIOBase) -> Iterator[tuple[int, str, str, str]]:
    line = 0
    try:
        for line, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            record = jsonio.loads(raw, source=path, line=line)
            if not isinstance(record, dict):
                raise InputFileError(path, 'expected an object {"id", "title", "text"}', line=line)
            passage_id = record.get("id")
            if isinstance(passage_id, int) and not isinstance(passage_id, bool):
                passage_id = str(passage_id)
            elif not isinstance(passage_id, str):
                what = (
                    "missing"
                    if passage_id is None
                    else f"must be a string or integer, got {type(passage_id).__name__}"
                )
                raise InputFileError(path, f'"id" {what}', line=line)
            if not passage_id:
                raise InputFileError(path, "empty passage id", line=line)
            text = record.get("text")
            if not isinstance(text, str):
                if text is None and "contents" in record:
                    problem = 'missing "text" ("contents" is not read: give "title" and "text")'
                elif text is None:
                    problem = 'missing "text"'
                else:
                    problem = f'"text" must be a string, got {type(text).__name__}'
                raise InputFileError(path, problem, line=line)
            title = record.get("title", "")
            if not isinstance(title, str):
                raise InputFileError(path, f'"title" must be a string, got {type(title).__name__}', line=line)
            yield line, passage_id, title, text
    except UnicodeDecodeError:
        raise not_utf8(path, line=line + 1) from None


def line_of_rows(path: Path, format: str, rows: Iterable[int]) -> dict[int, int]:
    """The start line of the given 0-based rows (a second pass, used only to report duplicates)."""
    wanted = set(rows)
    found: dict[int, int] = {}
    source = Source(path, newline="" if format == "dpr-tsv" else None)
    try:
        for row, (line, *_rest) in enumerate(source_rows(source, format)):
            if row in wanted:
                found[row] = line
                if len(found) == len(wanted):
                    break
    finally:
        source.close()
    return found

"""Opening a run file for reading: plain, gzip compressed, or one member of a ``.tar.gz``,
decompressed while it is read (:func:`open_stream`; the tar member is read in place, nothing is
extracted), the compression told by the file's first bytes (:func:`detect_compression`), and a
message's name for what is read (:func:`source_name`: the file, or ``ARCHIVE (member NAME)``).
One member per part (``member = "{part}"``, :data:`PER_PART`): each ``.json`` member of the
``.tar.gz`` belongs to the suite part whose name is a token of its file name (``P17`` in
``entity-questions/P17.test.json``, never in ``P170.json``; :func:`part_of_member`), and
:func:`iter_part_members` gives the members in archive order in one pass; a member naming no part
or two, or two members of one part, is an error. Every problem is one
:class:`~harness.errors.InputFileError` naming the file.
"""

from __future__ import annotations

import gzip
import re
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness.errors import InputFileError

COMPRESSIONS = ("gzip", "tar.gz")
#: ``member`` value of a ``.tar.gz`` holding one ``.json`` file per suite part.
PER_PART = "{part}"


def detect_compression(path: str | Path) -> str | None:
    """``"gzip"`` or ``"tar.gz"`` from the file's first bytes, or None for a plain file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
            if magic != b"\x1f\x8b":
                return None
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as inner:
                head = inner.read(512)
    except OSError as exc:
        if isinstance(exc, (gzip.BadGzipFile, EOFError)) or "gzip" in str(exc).lower():
            raise InputFileError(path, "not a valid gzip file") from None
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    except EOFError:
        raise InputFileError(path, "truncated gzip file") from None
    return "tar.gz" if len(head) >= 262 and head[257:262] == b"ustar" else "gzip"


def source_name(path: str | Path, member: str | None) -> str:
    """How messages name a run: the file, or ``ARCHIVE (member NAME)``."""
    return f"{path} (member {member})" if member else str(path)


@contextmanager
def open_stream(path: str | Path, compression: str | None, member: str | None = None, *, only: bool = False) -> Iterator[IO[bytes]]:
    """The run's bytes, decompressed as they are read: the file itself, its gzip content, or the
    regular-file member ``member`` of a tar archive (the first ``.json`` member when None). With
    ``only``, once the member has been read (the block ends without an error) the rest of the
    archive is read too, and another ``.json`` member makes the choice ambiguous: an error naming
    the members (a stream cannot go back, so this is found after the first one is read, and
    before anything is made of it)."""
    path = Path(path)
    if compression not in (None, *COMPRESSIONS):
        raise ValueError(f"unknown compression {compression!r}; known: {', '.join(COMPRESSIONS)}")
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    try:
        if compression is None:
            yield raw
        elif compression == "gzip":
            with gzip.GzipFile(fileobj=raw) as body:
                yield body
        else:
            try:
                archive = tarfile.open(fileobj=raw, mode="r|gz")
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
            with archive:
                chosen = None if member == PER_PART else member
                name, body = _tar_member(archive, path, chosen)
                yield body
                if only and chosen is None:
                    _no_other_json(archive, path, name)
    finally:
        raw.close()


def part_of_member(member: str, parts: Sequence[str]) -> list[str]:
    """The parts whose name is a token of ``member``'s file name (``P17`` in ``x/P17.test.json``,
    not in ``P170.json``): letters and digits on neither side."""
    base = member.rsplit("/", 1)[-1]
    return [p for p in parts if re.search(rf"(?<![A-Za-z0-9]){re.escape(p)}(?![A-Za-z0-9])", base)]


def iter_part_members(path: str | Path, parts: Sequence[str]) -> Iterator[tuple[str, str, IO[bytes]]]:
    """``(member name, part, body)`` for each ``.json`` member of the ``.tar.gz`` at ``path``, in
    archive order, read in one pass (each body only until the next member is asked for)."""
    path = Path(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None
    seen: dict[str, str] = {}
    names: list[str] = []
    with raw:
        try:
            archive = tarfile.open(fileobj=raw, mode="r|gz")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
        with archive:
            members = iter(archive)
            while True:
                try:
                    info = next(members, None)
                except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                    raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
                if info is None:
                    break
                name = info.name.removeprefix("./")
                names.append(name)
                if not (info.isreg() and name.endswith(".json")):
                    continue
                found = part_of_member(name, parts)
                if len(found) != 1:
                    what = "names no part" if not found else f"names parts {', '.join(found)}"
                    raise InputFileError(
                        path, f"member {name!r} {what} of the suite (one .json member per part, named with the part: "
                        f"{', '.join(parts[:4])}{', ...' if len(parts) > 4 else ''})",
                    )
                part = found[0]
                if part in seen:
                    raise InputFileError(path, f"members {seen[part]!r} and {name!r} are both part {part}")
                seen[part] = name
                body = archive.extractfile(info)
                if body is None:  # a regular file always has a body
                    raise InputFileError(path, f"member {name!r} cannot be read")
                yield name, part, body
    if not seen:
        listed = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
        raise InputFileError(path, f"the archive has no .json member (members: {listed or 'none'})")


def _no_other_json(archive: tarfile.TarFile, path: Path, first: str) -> None:
    """Read the rest of ``archive``: a second ``.json`` member is an error naming them all."""
    first = first.removeprefix("./")
    others = []
    try:
        while (info := archive.next()) is not None:  # the members after the one read
            name = info.name.removeprefix("./")
            if info.isreg() and name.endswith(".json"):
                others.append(name)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
    if others:
        listed = ", ".join(repr(n) for n in [first, *others][:6]) + (", ..." if len(others) > 5 else "")
        raise InputFileError(
            path, f"the archive has {len(others) + 1} .json members ({listed}): which one is the run is ambiguous; "
            "name it (harness score --member NAME; a published run's 'member')",
        )


def _tar_member(archive: tarfile.TarFile, path: Path, member: str | None) -> tuple[str, IO[bytes]]:
    seen = []
    try:
        for info in archive:
            name = info.name.removeprefix("./")
            seen.append(name)
            wanted = name == member if member else name.endswith(".json")
            if wanted:
                if not info.isreg():
                    raise InputFileError(path, f"member {name!r} is not a regular file")
                body = archive.extractfile(info)
                if body is None:  # a regular file always has a body
                    raise InputFileError(path, f"member {name!r} cannot be read")
                return name, body
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise InputFileError(path, f"not a readable .tar.gz archive: {exc}") from None
    what = f"member {member!r}" if member else ".json member"
    listed = ", ".join(repr(n) for n in seen[:5]) + (", ..." if len(seen) > 5 else "")
    raise InputFileError(path, f"the archive has no {what} (members: {listed or 'none'})")


__all__ = ["COMPRESSIONS", "PER_PART", "detect_compression", "iter_part_members", "open_stream", "part_of_member", "source_name"]

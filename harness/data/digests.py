"""The sha256 of files in the data folder, and the records kept beside them.

Each file :func:`harness.data.download.fetch` makes available gets a sidecar, ``.NAME.verified``,
recording its digest with its size, modification time, inode and status-change time, so that a
large file is re-hashed only when one of those changed; for a file with no pinned checksum the
first recorded digest stays the reference (see :mod:`harness.data.download`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from harness.data.remote import _SHA256, CHUNK, ChecksumError
from harness.util.atomic import write_text_atomic
from harness.util.progress import progress as progress_bar

def sha256_file(path: str | os.PathLike, *, progress: bool = False) -> str:
    """The sha256 hex digest of a file, read in chunks (with an optional progress bar)."""
    path = Path(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f, progress_bar(
        total=os.fstat(f.fileno()).st_size, enabled=progress, unit="B", unit_scale=True,
        unit_divisor=1024, desc=f"checking {path.name}",
    ) as bar:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def _record_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.verified")


def recorded_if_current(path: Path, st: os.stat_result) -> str | None:
    """The digest recorded for ``path`` if the record matches its current size and mtime."""
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
        current = (record["size"], record["mtime_ns"], record["ctime_ns"], record["inode"]) == (
            st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
        )
        if current and _SHA256.fullmatch(record["sha256"]):
            return record["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def recorded_sha256(path: str | os.PathLike) -> str | None:
    """The sha256 recorded when ``path`` was last fetched or verified (even if the file changed
    since), or None. ``harness data verify`` checks files with no pinned checksum against it."""
    try:
        record = json.loads(_record_path(Path(path)).read_text(encoding="utf-8"))
        digest = record["sha256"]
        return digest if isinstance(digest, str) and _SHA256.fullmatch(digest) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def first_record(path: Path) -> str | None:
    """The digest recorded for ``path`` (a file with no pinned checksum) when it first arrived, or
    None when there is no record; a record that cannot be read is a :class:`ChecksumError`, since
    nothing else says what the file should hold."""
    record_path = _record_path(path)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        digest = record["sha256"]
        if isinstance(digest, str) and _SHA256.fullmatch(digest):
            return digest
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    raise ChecksumError(
        f"{record_path}: the record of the sha256 of {path.name} (no checksum is pinned for it) is damaged, "
        f"so the file cannot be checked; delete {path} and {record_path.name} to download it again"
    )


def changed_error(path: Path, recorded: str, found: str, url: str | None = None) -> ChecksumError:
    source = f" from {url}" if url else ""
    return ChecksumError(
        f"{path} changed after it was first downloaded: its sha256 is {found}, but {recorded} was recorded then "
        f"(in {_record_path(path).name}; no checksum is pinned for it), so it is not used; delete it and run again "
        f"to download it afresh{source} (or delete {_record_path(path).name} too to accept the file as it is now)"
    )


def remember(path: Path, digest: str, *, trusted: bool) -> None:
    """Record that ``path`` (as it is now) has ``digest``; best effort (the folder may be read-only).

    ``trusted``: ``digest`` was checked against a pinned checksum or comes from a fresh download,
    so it replaces any record. Otherwise a record of another digest is never overwritten: that is
    a :class:`ChecksumError` (the callers compare with the record first; this is the last guard)."""
    if not trusted:
        earlier = first_record(path)
        if earlier is not None and earlier != digest:
            raise changed_error(path, earlier, digest)
    try:
        st = path.stat()
        record = {"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
                  "inode": st.st_ino}
        write_text_atomic(_record_path(path), json.dumps(record) + "\n")
    except OSError:
        pass


def distrust(path: Path) -> None:
    """``path`` failed a check: keep its recorded digest (the reference for a file with no pinned
    checksum) but drop the stat fields, so that no later use skips hashing it."""
    record_path = _record_path(path)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        digest = json.loads(record_path.read_text(encoding="utf-8"))["sha256"]
        if isinstance(digest, str) and _SHA256.fullmatch(digest):
            write_text_atomic(record_path, json.dumps({"sha256": digest}) + "\n")
            return
    with contextlib.suppress(OSError):
        record_path.unlink()


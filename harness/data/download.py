"""Downloading benchmark files into the data folder, verified, resumable and never half-written.

:func:`fetch` makes a :class:`RemoteFile` (a URL, where the file goes under the data folder, and
its pinned sha256 and size when known) available locally and returns a :class:`FetchResult`.
Its guarantees:

- **Nothing half-written at the final path, ever.** Bytes go to ``NAME.part`` next to the final
  path; only after the whole file is checked is it renamed into place (``os.replace``, atomic).
- **Checksummed before anything uses it.** The sha256 (and the size, when known) of a download is
  compared with the pinned values *before* the rename; a mismatch deletes the download and raises
  :class:`ChecksumError` naming the expected and the actual digest. A file found at the final path
  that was not put there by :func:`fetch` (copied in by hand, say) is hashed before its first
  use. **What a run re-checks:** files up to :data:`REHASH_BYTES` (64 MiB: every question file) are
  re-hashed on every use. Larger ones (corpora: the 13 GB Wikipedia file) get a sidecar,
  ``.NAME.verified``, recording the digest with the file's size, modification time, inode and
  status-change time (``ctime``), and are re-hashed whenever any of those differs. An edit in place
  that keeps the size and restores the modification time still changes the ``ctime`` (the kernel
  sets it on every write and on ``utime``), so it is caught too. :func:`verify` (``harness data
  verify``) always re-hashes every file; a file found bad keeps its recorded digest but loses the
  stat fields that let a later use skip the hash.
- **No pinned checksum?** Some upstream files publish none. Then the computed sha256 is returned
  (``FetchResult.sha256``, with ``verified=False``) and a warning is logged so it can be recorded.
  The digest of the first download (or of the first use of a file put there by hand) is recorded
  in ``.NAME.verified`` and stays the reference: every later use and :func:`verify` compare the
  file with it, so a file changed afterwards is a :class:`ChecksumError` naming the recorded and
  the found digest, never re-recorded as the good one. Only a fresh download replaces the record
  (delete the file to get one); a damaged record of such a file is an error too.
- **Streamed and resumable.** The body is copied in 1 MiB chunks (constant memory). An existing
  ``NAME.part`` is continued with ``Range: bytes=N-``: a ``206`` whose ``Content-Range`` starts at
  ``N`` is appended; a server that ignores ``Range`` (``200``) or answers an inconsistent range
  restarts the file from zero; a ``416`` (nothing left to send) means the partial may already be
  complete, so it is verified. The ``.part`` file is locked while in use (POSIX ``flock``), so two
  processes fetching the same file do not interleave: the second waits and then uses the result.
- **Retries.** Connection errors, timeouts, 5xx, 408 and 429 are retried with exponential backoff,
  resuming from what is on disk; after ``attempts`` failed tries in a row without progress (3 by
  default) the partial is kept and :class:`DownloadError` says how to resume. Other HTTP errors
  (404, 403, ...) fail at once, naming the URL.
- **Offline mode.** ``HARNESS_OFFLINE=1`` (or ``offline=True``) never touches the network: a file
  missing from the data folder raises :class:`OfflineError` naming the URL to fetch it from and the
  exact path to save it at. ``HF_HUB_OFFLINE`` does not imply it.
- ``http://``, ``https://`` and ``file://`` URLs (local mirrors) are supported; ``urllib`` only.

The data folder is ``$HARNESS_DATA_DIR``, else ``harness.util.cache.cache_dir() / "data"`` (which moves
with ``$HARNESS_CACHE_DIR``); see :func:`data_dir`.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from harness.util.atomic import write_text_atomic
from harness.util.cache import cache_dir
from harness.errors import HarnessError, warn
from harness.util.progress import progress as progress_bar

try:  # POSIX; on other systems concurrent fetches of one file are simply not coordinated
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

DATA_ENV = "HARNESS_DATA_DIR"
OFFLINE_ENV = "HARNESS_OFFLINE"

#: Failed tries in a row (without any bytes received) before giving up.
ATTEMPTS = 3
#: First retry delay in seconds; doubled for each further failure in a row (capped at 30 s).
BACKOFF_S = 1.0
#: Hard bound on tries for one fetch, even when every try makes some progress.
MAX_TRIES = 100
#: Socket timeout (connect and each read) in seconds.
TIMEOUT_S = 60.0
CHUNK = 1 << 20

_USER_AGENT = "odqa-harness (urllib)"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_UNSATISFIED_RANGE = re.compile(r"bytes\s+\*/(\d+)", re.IGNORECASE)
_RETRY_STATUS = {408, 425, 429}
_FALSE = {"", "0", "false", "no", "off"}


class DownloadError(HarnessError):
    """A file could not be downloaded (HTTP error, network failure, unwritable data folder)."""


class ChecksumError(DownloadError):
    """A file's sha256 or size is not the pinned one; the download has been discarded."""


class OfflineError(DownloadError):
    """Offline mode is on and the file is not in the data folder; says where to get it and put it."""


@dataclass(frozen=True, kw_only=True)
class RemoteFile:
    """A file to download: ``url``, ``path`` (relative, ``/``-separated, under the data folder),
    and its pinned ``sha256`` (lowercase hex) and ``size`` in bytes when known."""

    url: str
    path: str
    sha256: str | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        scheme = urllib.parse.urlsplit(self.url).scheme.lower()
        if scheme not in ("http", "https", "file"):
            raise ValueError(f"RemoteFile.url must be an http(s):// or file:// URL, got {self.url!r}")
        relative = PurePosixPath(self.path)
        if (
            not self.path
            or "\\" in self.path
            or relative.is_absolute()
            or any(part in ("", ".", "..") for part in self.path.split("/"))
        ):
            raise ValueError(f"RemoteFile.path must be a relative path without '..', got {self.path!r}")
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"RemoteFile.sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        if self.size is not None and (isinstance(self.size, bool) or self.size < 0):
            raise ValueError(f"RemoteFile.size must be a non-negative int, got {self.size!r}")


@dataclass(frozen=True, kw_only=True)
class FetchResult:
    """A file ready to use: where it is, its sha256, whether this call downloaded it, and whether
    the sha256 was checked against a pinned one (``False``: none is pinned; record ``sha256``)."""

    path: Path
    sha256: str
    downloaded: bool
    verified: bool


def data_dir() -> Path:
    """``$HARNESS_DATA_DIR``, else ``harness.util.cache.cache_dir() / "data"``."""
    if explicit := os.environ.get(DATA_ENV):
        return Path(explicit).expanduser()
    return cache_dir() / "data"


_default_data_dir = data_dir  # ``data_dir`` is also a parameter name below


def is_offline() -> bool:
    """Whether ``$HARNESS_OFFLINE`` asks for offline mode (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in _FALSE


def locate(remote: RemoteFile, data_dir: str | os.PathLike | None = None) -> Path:
    """Where ``remote`` lives (or will live) under ``data_dir`` (default :func:`data_dir`)."""
    base = Path(data_dir) if data_dir is not None else _default_data_dir()
    return base.joinpath(*PurePosixPath(remote.path).parts)


def partial_path(final: Path) -> Path:
    """The ``NAME.part`` file a download of ``final`` is written to before verification."""
    return final.with_name(final.name + ".part")


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


def verify(path: str | os.PathLike, *, sha256: str | None, size: int | None = None, progress: bool = False) -> None:
    """Re-hash ``path`` and compare with ``sha256`` and ``size``; raise :class:`ChecksumError` if
    they differ (or :class:`DownloadError` if the file is missing). Always reads the whole file.

    Also refreshes the file's verification record (``.NAME.verified``) on success and drops it on
    failure, so that :func:`fetch` notices a file that went bad in place."""
    path = Path(path)
    try:
        actual_size = path.stat().st_size
    except FileNotFoundError:
        raise DownloadError(f"{path} is missing") from None
    first = _first_record(path) if sha256 is None else None
    if size is not None and actual_size != size:
        _distrust(path)
        raise ChecksumError(
            f"{path} has {actual_size} bytes, expected {size}: it is corrupt or incomplete; "
            "delete it and download it again"
        )
    actual = sha256_file(path, progress=progress)
    if sha256 is not None and actual != sha256.lower():
        _distrust(path)
        raise ChecksumError(
            f"{path} does not match its pinned checksum (expected sha256 {sha256}, got {actual}): "
            "it is corrupt or not the right file; delete it and download it again"
        )
    if first is not None and actual != first:
        _distrust(path)
        raise _changed(path, first, actual)
    _remember(path, actual, trusted=sha256 is not None)


def fetch(
    remote: RemoteFile,
    *,
    data_dir: str | os.PathLike | None = None,
    offline: bool | None = None,
    progress: bool = True,
    attempts: int = ATTEMPTS,
    timeout: float = TIMEOUT_S,
    warn_unpinned: bool = True,
) -> FetchResult:
    """Make ``remote`` available under the data folder, downloading it if needed (see the module
    docstring for the guarantees), and return where it is and its sha256.

    ``offline`` defaults to ``$HARNESS_OFFLINE``; ``attempts`` bounds failed tries in a row;
    ``timeout`` is the socket timeout in seconds; ``warn_unpinned=False``: no warning for a
    download without a pinned sha256 (the caller checks another published checksum next)."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    final = locate(remote, data_dir)
    if final.is_file():
        return _use_local(remote, final, progress)
    if is_offline() if offline is None else offline:
        raise OfflineError(offline_message(remote, final, how=f"{OFFLINE_ENV}=1" if offline is None else "offline=True"))
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"cannot create the data folder {final.parent}: {exc}") from None
    part = partial_path(final)
    with _locked_partial(part) as partial:
        try:
            if final.is_file():  # another process finished it while we waited for the lock
                return _use_local(remote, final, progress)
            try:
                _download(remote, partial, progress=progress, attempts=attempts, timeout=timeout)
            except ChecksumError:
                raise
            except DownloadError as exc:
                raise DownloadError(f"{exc}; {_elsewhere(remote, final)}") from None
            digest = partial.digest()
            if remote.size is not None and partial.size != remote.size:
                raise ChecksumError(
                    f"{remote.url} gave {partial.size} bytes, expected {remote.size}; the download was deleted. "
                    "Run again to download it afresh; if this persists the file at that URL has changed "
                    "(please report it)"
                )
            if remote.sha256 is not None and digest != remote.sha256:
                raise ChecksumError(
                    f"checksum mismatch for {remote.url}: expected sha256 {remote.sha256}, got {digest}; "
                    "the download was deleted. Run again to download it afresh; if this persists the file "
                    "at that URL has changed (please report it)"
                )
            partial.file.flush()
            os.fsync(partial.file.fileno())
            if os.name == "nt":  # pragma: no cover - an open file cannot be renamed there
                partial.file.close()
            os.replace(part, final)
        except ChecksumError:
            _unlink(part)
            raise
        except OSError as exc:
            raise DownloadError(f"cannot write {final}: {exc}") from None
        finally:
            partial.discard_if_empty()
    _remember(final, digest, trusted=True)  # a fresh download: its digest is the one to keep
    if remote.sha256 is None and warn_unpinned:
        warn(f"no checksum is pinned for {remote.url}; its sha256 is {digest} (record it to pin the file)")
    return FetchResult(path=final, sha256=digest, downloaded=True, verified=remote.sha256 is not None)


#: The command that lists every file a run needs and the data folder lacks (``harness.data.needs``).
LISTING = "harness data missing"


def size_text(size: int | None) -> str:
    """A size for messages: ``13.0 GB``, ``296.9 kB`` (decimal units), or that none is published."""
    if size is None:
        return "size not published"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def offline_message(remote: RemoteFile, final: Path, *, how: str = f"{OFFLINE_ENV}=1", listing: str = LISTING) -> str:
    """The one line saying that offline mode is on and ``remote`` is not at ``final``: the URL to
    download, its size and sha256 when published, where to save it, and the listing of every file."""
    pin = f", sha256 {remote.sha256}" if remote.sha256 else ""
    return (
        f"offline mode ({how}) and {remote.path} is not in the data folder: download {remote.url} "
        f"and save it as {final} ({size_text(remote.size)}{pin}), or unset {OFFLINE_ENV} "
        f"(`{listing}` lists every file a run needs)"
    )


def _elsewhere(remote: RemoteFile, final: Path) -> str:
    """How to bring a file that could not be downloaded here: where to save it, and offline mode."""
    pin = f", sha256 {remote.sha256}" if remote.sha256 else ""
    return (
        f"to fetch it on another machine, save it as {final} ({size_text(remote.size)}{pin}) and run with "
        f"{OFFLINE_ENV}=1; `{LISTING}` lists every file a run needs, with URLs, sizes and checksums"
    )


# -- files already in the data folder ------------------------------------------------------------


#: Files up to this size are re-hashed on every use; larger ones when their stat record changed.
REHASH_BYTES = 64 << 20


def _use_local(remote: RemoteFile, final: Path, show: bool) -> FetchResult:
    """A file at the final path: check its size, and its sha256 unless it is large and recorded as
    good with the same size, times and inode (see the module notes). Without a pinned checksum the
    digest recorded when the file first arrived is the reference."""
    st = final.stat()
    if remote.size is not None and st.st_size != remote.size:
        raise ChecksumError(
            f"{final} has {st.st_size} bytes, expected {remote.size}: it is corrupt or not the right file; "
            f"delete it and run again to download it from {remote.url}"
        )
    first = _first_record(final) if remote.sha256 is None else None
    expected = remote.sha256 or first
    digest = _recorded(final, st) if st.st_size > REHASH_BYTES else None
    if digest is None or (expected is not None and digest != expected):
        digest = sha256_file(final, progress=show)
        if remote.sha256 is not None and digest != remote.sha256:
            _distrust(final)
            raise ChecksumError(
                f"{final} does not match its pinned checksum (expected sha256 {remote.sha256}, got {digest}): "
                f"it is corrupt or not the right file; delete it and run again to download it from {remote.url}"
            )
        if first is not None and digest != first:
            _distrust(final)
            raise _changed(final, first, digest, remote.url)
        _remember(final, digest, trusted=remote.sha256 is not None)
    return FetchResult(path=final, sha256=digest, downloaded=False, verified=remote.sha256 is not None)


def _record_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.verified")


def _recorded(path: Path, st: os.stat_result) -> str | None:
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


def _first_record(path: Path) -> str | None:
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


def _changed(path: Path, recorded: str, found: str, url: str | None = None) -> ChecksumError:
    source = f" from {url}" if url else ""
    return ChecksumError(
        f"{path} changed after it was first downloaded: its sha256 is {found}, but {recorded} was recorded then "
        f"(in {_record_path(path).name}; no checksum is pinned for it), so it is not used; delete it and run again "
        f"to download it afresh{source} (or delete {_record_path(path).name} too to accept the file as it is now)"
    )


def _remember(path: Path, digest: str, *, trusted: bool) -> None:
    """Record that ``path`` (as it is now) has ``digest``; best effort (the folder may be read-only).

    ``trusted``: ``digest`` was checked against a pinned checksum or comes from a fresh download,
    so it replaces any record. Otherwise a record of another digest is never overwritten: that is
    a :class:`ChecksumError` (the callers compare with the record first; this is the last guard)."""
    if not trusted:
        earlier = _first_record(path)
        if earlier is not None and earlier != digest:
            raise _changed(path, earlier, digest)
    try:
        st = path.stat()
        record = {"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
                  "inode": st.st_ino}
        write_text_atomic(_record_path(path), json.dumps(record) + "\n")
    except OSError:
        pass


def _distrust(path: Path) -> None:
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


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# -- the partial download ------------------------------------------------------------------------


class _Partial:
    """The locked ``.part`` file (opened for appending) and a running sha256 of its content."""

    def __init__(self, path: Path, file: IO[bytes]):
        self.path, self.file = path, file
        self.size = 0
        self._hash = hashlib.sha256()

    def rehash(self, bar: Any) -> None:
        """Hash what is already on disk (a download being resumed)."""
        self._hash, self.size = hashlib.sha256(), 0
        self.file.seek(0)
        while chunk := self.file.read(CHUNK):
            self._hash.update(chunk)
            self.size += len(chunk)
            bar.update(len(chunk))

    def append(self, chunk: bytes) -> None:
        try:
            self.file.write(chunk)
        except OSError as exc:
            raise DownloadError(f"cannot write {self.path}: {exc}") from None
        self._hash.update(chunk)
        self.size += len(chunk)

    def restart(self, bar: Any) -> None:
        """Throw away what was downloaded and start again from byte 0."""
        self.file.seek(0)
        self.file.truncate(0)
        self._hash, self.size = hashlib.sha256(), 0
        bar.reset(total=bar.total)

    def digest(self) -> str:
        return self._hash.hexdigest()

    def matches(self, remote: RemoteFile) -> bool:
        """Whether the partial is a complete, correct copy as far as what is pinned can tell."""
        return (remote.size is None or self.size == remote.size) and (
            remote.sha256 is None or self.digest() == remote.sha256
        )

    def discard_if_empty(self) -> None:
        """Delete the ``.part`` file if it is (still ours and) empty: nothing worth resuming."""
        with contextlib.suppress(OSError):
            if not self.file.closed and os.path.samestat(os.fstat(self.file.fileno()), os.stat(self.path)):
                if os.fstat(self.file.fileno()).st_size == 0:
                    self.path.unlink()


@contextlib.contextmanager
def _locked_partial(part: Path) -> Iterator[_Partial]:
    """Open (creating) and exclusively lock ``part``, waiting for another process holding it."""
    while True:
        try:
            f = open(part, "a+b")
        except OSError as exc:
            raise DownloadError(f"cannot write {part}: {exc}") from None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    log.warning("waiting for another process downloading %s", part)
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                current = os.path.samestat(os.fstat(f.fileno()), os.stat(part))
            except FileNotFoundError:
                current = False
        except BaseException:
            f.close()
            raise
        if current:
            break
        f.close()  # the other process renamed or deleted it meanwhile: open the path afresh
    try:
        yield _Partial(part, f)
    finally:
        f.close()


# -- transfers -----------------------------------------------------------------------------------


class _Retry(Exception):
    """A transient failure (network, timeout, 5xx): try again, resuming from what is on disk."""


@dataclass(kw_only=True)
class _Response:
    """What a server sent: status, first byte of the body within the file, body length, file size."""

    status: int
    body: Any = None
    start: int | None = 0
    length: int | None = None
    total: int | None = None

    def close(self) -> None:
        if self.body is not None:
            self.body.close()


def _download(remote: RemoteFile, partial: _Partial, *, progress: bool, attempts: int, timeout: float) -> None:
    """Complete ``partial`` (resuming it), retrying transient failures; it is verified by the caller."""
    name = PurePosixPath(remote.path).name
    bar_options = dict(unit="B", unit_scale=True, unit_divisor=1024, desc=name)
    with progress_bar(total=remote.size, enabled=progress, **bar_options) as bar:
        partial.rehash(bar)
        failures = tries = 0
        while True:
            tries += 1
            before = partial.size
            try:
                _attempt(remote, partial, bar, timeout)
                return
            except _Retry as exc:
                reason = str(exc)
            failures = 1 if partial.size > before else failures + 1
            if failures >= attempts or tries >= MAX_TRIES:
                kept = f"; {partial.size} bytes are kept in {partial.path}, run again to resume" if partial.size else ""
                raise DownloadError(
                    f"could not download {remote.url} after {tries} attempt{'s' if tries > 1 else ''}: {reason}{kept}"
                ) from None
            delay = min(BACKOFF_S * 2 ** (failures - 1), 30.0)
            log.info("download of %s failed (%s); retrying in %.1f s", remote.url, reason, delay)
            time.sleep(delay)


def _attempt(remote: RemoteFile, partial: _Partial, bar: Any, timeout: float) -> None:
    """One request: append the rest of the file to ``partial``, or raise :class:`_Retry`."""
    if remote.size is not None and partial.size >= remote.size:
        if partial.matches(remote):
            return  # complete already (e.g. interrupted between download and rename)
        partial.restart(bar)
    offset = partial.size
    response = _open(remote.url, offset, timeout)
    try:
        if response.status == 416:
            if offset == 0:
                raise DownloadError(f"cannot download {remote.url}: HTTP 416 Range Not Satisfiable")
            if response.total in (None, offset) and partial.matches(remote):
                return  # the partial was complete
            partial.restart(bar)
            raise _Retry(f"the server cannot resume at byte {offset} (HTTP 416); starting over")
        if response.status == 206 and response.start != offset:
            partial.restart(bar)
            raise _Retry(f"the server sent an inconsistent Content-Range for bytes {offset}-; starting over")
        if response.status != 206 and offset:
            log.info("%s does not support resuming (HTTP %s to a range request); starting over",
                     remote.url, response.status)
            partial.restart(bar)
        start = partial.size
        total = response.total
        if total is not None and remote.size is not None and total != remote.size:
            raise ChecksumError(
                f"{remote.url} is {total} bytes, expected {remote.size}: the file at that URL has changed "
                "(please report it); nothing was kept"
            )
        if total is not None and bar.total != total:
            bar.total = total
            bar.refresh()
        goal = total if total is not None else (start + response.length if response.length is not None else None)
        while True:
            try:
                chunk = response.body.read(CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                raise _Retry(_describe(exc)) from None
            if not chunk:
                break
            if (remote.size is not None and partial.size + len(chunk) > remote.size) or (
                goal is not None and partial.size + len(chunk) > goal
            ):
                raise ChecksumError(
                    f"{remote.url} sent more bytes than expected ({goal if goal is not None else remote.size}); "
                    "the download was deleted. Run again; if this persists the file at that URL has changed"
                )
            partial.append(chunk)
            bar.update(len(chunk))
        want = goal if goal is not None else remote.size
        if want is not None and partial.size < want:
            raise _Retry(f"the connection closed after {partial.size} of {want} bytes")
    finally:
        response.close()


def _open(url: str, offset: int, timeout: float) -> _Response:
    """Request ``url`` from byte ``offset`` on (a ``Range`` request when ``offset > 0``)."""
    if urllib.parse.urlsplit(url).scheme.lower() == "file":
        return _open_file(url, offset)
    headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        body = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        status, reason, response_headers = exc.code, exc.reason, exc.headers
        exc.close()
        if status == 416:
            match = _UNSATISFIED_RANGE.search(response_headers.get("Content-Range", "") if response_headers else "")
            return _Response(status=416, total=int(match.group(1)) if match else None)
        if status >= 500 or status in _RETRY_STATUS:
            raise _Retry(f"HTTP {status} {reason}") from None
        raise DownloadError(f"cannot download {url}: HTTP {status} {reason}") from None
    except (OSError, http.client.HTTPException) as exc:  # URLError, refused, DNS, timeouts, TLS
        raise _Retry(_describe(exc)) from None
    status = body.status
    length = _int(body.headers.get("Content-Length"))
    if status == 206:
        match = _CONTENT_RANGE.fullmatch(body.headers.get("Content-Range", "").strip())
        if not match:
            return _Response(status=206, body=body, start=None)
        start, end, total = int(match.group(1)), int(match.group(2)), match.group(3)
        if length is not None and end - start + 1 != length:
            return _Response(status=206, body=body, start=None)
        return _Response(status=206, body=body, start=start, length=end - start + 1,
                         total=None if total == "*" else int(total))
    if status != 200:
        body.close()
        raise DownloadError(f"cannot download {url}: unexpected HTTP {status}")
    return _Response(status=200, body=body, start=0, length=length, total=length)


def _open_file(url: str, offset: int) -> _Response:
    """A ``file://`` URL: the local file, from ``offset`` on (a local mirror resumes too)."""
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise DownloadError(f"cannot download {url}: only local file:// URLs are supported")
    path = urllib.request.url2pathname(parts.path)
    try:
        body = open(path, "rb")
    except FileNotFoundError:
        raise DownloadError(f"cannot download {url}: no such file") from None
    except OSError as exc:
        raise DownloadError(f"cannot download {url}: {exc}") from None
    total = os.fstat(body.fileno()).st_size
    if offset > total:
        body.close()
        return _Response(status=416, total=total)
    if offset:
        body.seek(offset)
        return _Response(status=206, body=body, start=offset, length=total - offset, total=total)
    return _Response(status=200, body=body, start=0, length=total, total=total)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _describe(exc: BaseException) -> str:
    """A short description of a network failure for one-line messages."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc.reason, str):
        exc = exc.reason  # type: ignore[assignment]
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())

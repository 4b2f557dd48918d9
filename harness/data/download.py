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

import os
from pathlib import Path, PurePosixPath

from harness.data.digests import (
    changed_error,
    distrust,
    first_record,
    recorded_if_current,
    remember,
    recorded_sha256,
    sha256_file,
)
from harness.data.remote import (
    CHUNK,
    DATA_ENV,
    OFFLINE_ENV,
    ChecksumError,
    DownloadError,
    FetchResult,
    OfflineError,
    RemoteFile,
    size_text,
)
from harness.data.transfer import ATTEMPTS, BACKOFF_S, TIMEOUT_S, download_into, locked_partial, unlink_quietly
from harness.errors import warn
from harness.util.cache import cache_dir

_FALSE = {"", "0", "false", "no", "off"}


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
    first = first_record(path) if sha256 is None else None
    if size is not None and actual_size != size:
        distrust(path)
        raise ChecksumError(
            f"{path} has {actual_size} bytes, expected {size}: it is corrupt or incomplete; "
            "delete it and download it again"
        )
    actual = sha256_file(path, progress=progress)
    if sha256 is not None and actual != sha256.lower():
        distrust(path)
        raise ChecksumError(
            f"{path} does not match its pinned checksum (expected sha256 {sha256}, got {actual}): "
            "it is corrupt or not the right file; delete it and download it again"
        )
    if first is not None and actual != first:
        distrust(path)
        raise changed_error(path, first, actual)
    remember(path, actual, trusted=sha256 is not None)


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
    with locked_partial(part) as partial:
        try:
            if final.is_file():  # another process finished it while we waited for the lock
                return _use_local(remote, final, progress)
            try:
                download_into(remote, partial, progress=progress, attempts=attempts, timeout=timeout)
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
            unlink_quietly(part)
            raise
        except OSError as exc:
            raise DownloadError(f"cannot write {final}: {exc}") from None
        finally:
            partial.discard_if_empty()
    remember(final, digest, trusted=True)  # a fresh download: its digest is the one to keep
    if remote.sha256 is None and warn_unpinned:
        warn(f"no checksum is pinned for {remote.url}; its sha256 is {digest} (record it to pin the file)")
    return FetchResult(path=final, sha256=digest, downloaded=True, verified=remote.sha256 is not None)


#: The command that lists every file a run needs and the data folder lacks (``harness.data.needs``).
LISTING = "harness data missing"


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
    first = first_record(final) if remote.sha256 is None else None
    expected = remote.sha256 or first
    digest = recorded_if_current(final, st) if st.st_size > REHASH_BYTES else None
    if digest is None or (expected is not None and digest != expected):
        digest = sha256_file(final, progress=show)
        if remote.sha256 is not None and digest != remote.sha256:
            distrust(final)
            raise ChecksumError(
                f"{final} does not match its pinned checksum (expected sha256 {remote.sha256}, got {digest}): "
                f"it is corrupt or not the right file; delete it and run again to download it from {remote.url}"
            )
        if first is not None and digest != first:
            distrust(final)
            raise changed_error(final, first, digest, remote.url)
        remember(final, digest, trusted=remote.sha256 is not None)
    return FetchResult(path=final, sha256=digest, downloaded=False, verified=remote.sha256 is not None)



__all__ = [
    "ATTEMPTS", "BACKOFF_S", "CHUNK", "DATA_ENV", "LISTING", "OFFLINE_ENV", "REHASH_BYTES", "TIMEOUT_S", "ChecksumError",
    "DownloadError", "FetchResult", "OfflineError", "RemoteFile", "data_dir", "fetch", "is_offline", "locate",
    "offline_message", "partial_path", "recorded_sha256", "sha256_file", "size_text", "verify",
]

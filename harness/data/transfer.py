"""Bytes from a URL into a locked ``NAME.part`` file: streamed in chunks, resumed with ``Range``,
retried with backoff, hashed as they arrive (the guarantees are listed in
:mod:`harness.data.download`, which verifies the result and renames it into place)."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
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

from harness.data.remote import CHUNK, ChecksumError, DownloadError, RemoteFile
from harness.util.progress import progress as progress_bar

try:  # POSIX; on other systems concurrent fetches of one file are simply not coordinated
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: Failed tries in a row (without any bytes received) before giving up.
ATTEMPTS = 3


#: First retry delay in seconds; doubled for each further failure in a row (capped at 30 s).
BACKOFF_S = 1.0


#: Hard bound on tries for one fetch, even when every try makes some progress.
MAX_TRIES = 100


#: Socket timeout (connect and each read) in seconds.
TIMEOUT_S = 60.0


_USER_AGENT = "odqa-harness (urllib)"


_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)


_UNSATISFIED_RANGE = re.compile(r"bytes\s+\*/(\d+)", re.IGNORECASE)


_RETRY_STATUS = {408, 425, 429}


def unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


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
def locked_partial(part: Path) -> Iterator[_Partial]:
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


def download_into(remote: RemoteFile, partial: _Partial, *, progress: bool, attempts: int, timeout: float) -> None:
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


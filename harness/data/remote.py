"""What a download is: the file to fetch (:class:`RemoteFile`), what :func:`harness.data.download.fetch`
returns (:class:`FetchResult`), the errors a download raises, and sizes as messages show them."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.errors import HarnessError

DATA_ENV = "HARNESS_DATA_DIR"


OFFLINE_ENV = "HARNESS_OFFLINE"


CHUNK = 1 << 20


_SHA256 = re.compile(r"[0-9a-f]{64}")


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


def size_text(size: int | None) -> str:
    """A size for messages: ``13.0 GB``, ``296.9 kB`` (decimal units), or that none is published."""
    if size is None:
        return "size not published"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


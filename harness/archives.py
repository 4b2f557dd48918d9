"""Unpacking downloaded archives safely: nothing lands outside the target, nothing half-done.

- :func:`extract` unpacks a ``.zip`` or a ``.tar`` (plain, ``.gz``, ``.bz2``, ``.xz``; the format
  is read from the content, not the name) into a folder. Every member is checked first and the
  archive is refused, naming it and the offending member, if any member has an absolute path, a
  ``..`` component, a drive letter or a NUL; is a symlink or hard link pointing outside the folder;
  or is a device, FIFO or other special file. Tar files are additionally extracted with the
  standard library's ``filter="data"`` (which re-checks each member against the real file system,
  following links already created). Zip members are written one by one with the same real-path
  check, so a link created earlier cannot redirect a later member outside either.
- Extraction happens in a temporary folder next to the target, renamed into place at the end: the
  target either does not exist or holds the whole archive. A refused or corrupt archive leaves
  nothing behind.
- :func:`gunzip` streams a single ``.gz`` file (e.g. the 13 GB ``psgs_w100.tsv.gz``) to a file in
  constant memory, through a temporary name renamed into place once the whole stream (and gzip's
  own CRC and length check) has been read.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from harness.errors import HarnessError, InputFileError
from harness.progress import progress as progress_bar

CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")


class ArchiveError(InputFileError):
    """An archive that is corrupt, of an unknown format, or has a member that is not safe to extract."""

    def __init__(self, archive: object, problem: str, *, member: str | None = None):
        self.member = member
        super().__init__(archive, f"member {member!r} {problem}" if member is not None else problem)


def extract(archive: str | os.PathLike, target: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Unpack the zip or tar file ``archive`` into the folder ``target`` (created; its parents too).

    Raises :class:`ArchiveError` for an unsafe member or a corrupt archive (nothing is extracted)
    and :class:`HarnessError` if ``target`` exists and ``overwrite`` is false."""
    archive, target = Path(archive), Path(target)
    if not archive.is_file():
        raise ArchiveError(archive, "no such file")
    if os.path.lexists(target) and not overwrite:
        raise HarnessError(f"{target} already exists; remove it to extract {archive} again")
    if zipfile.is_zipfile(archive):
        unpack = _extract_zip
    elif _is_tarfile(archive):
        unpack = _extract_tar
    else:
        raise ArchiveError(archive, "is not a zip or tar archive")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        unpack(archive, staging)
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def gunzip(source: str | os.PathLike, target: str | os.PathLike, *, progress: bool = True) -> Path:
    """Decompress the gzip file ``source`` to ``target`` in chunks, via a temporary file renamed
    into place once complete. Raises :class:`ArchiveError` for a corrupt or truncated file."""
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise ArchiveError(source, "no such file")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with (
            os.fdopen(fd, "wb") as out,
            open(source, "rb") as raw,
            gzip.GzipFile(fileobj=raw, mode="rb") as gz,
            progress_bar(
                total=os.fstat(raw.fileno()).st_size, enabled=progress, unit="B", unit_scale=True,
                unit_divisor=1024, desc=f"unpacking {source.name}",
            ) as bar,
        ):
            done = 0
            while True:
                try:
                    chunk = gz.read(CHUNK)
                except EOFError:
                    raise ArchiveError(source, "is truncated (the gzip stream ends early)") from None
                except (gzip.BadGzipFile, zlib.error) as exc:
                    raise ArchiveError(source, f"is not a valid gzip file ({exc})") from None
                if not chunk:
                    break
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise HarnessError(f"cannot write {target}: {exc}") from None
                position = raw.tell()
                bar.update(position - done)
                done = position
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


# -- checks --------------------------------------------------------------------------------------


def _check_name(archive: Path, name: str) -> str:
    """The member's name as a relative ``/`` path; refuses anything that could leave the folder."""
    if not name or "\x00" in name:
        raise ArchiveError(archive, "has an empty or invalid name", member=name)
    normalized = name.replace("\\", "/")
    if normalized.startswith("/") or _DRIVE.match(normalized):
        raise ArchiveError(archive, "has an absolute path", member=name)
    if ".." in normalized.split("/"):
        raise ArchiveError(archive, "has a '..' component (it would escape the target folder)", member=name)
    return normalized


def _check_link(archive: Path, name: str, link: str, *, hard: bool) -> None:
    """Refuse a link whose target is absolute or leaves the folder (lexically; extraction also
    checks the real path). Symlinks are relative to their folder, hard links to the archive root."""
    normalized = link.replace("\\", "/")
    kind = "hard link" if hard else "symlink"
    if not link or "\x00" in link:
        raise ArchiveError(archive, f"is a {kind} with an empty or invalid target", member=name)
    if normalized.startswith("/") or _DRIVE.match(normalized):
        raise ArchiveError(archive, f"is a {kind} to an absolute path ({link!r})", member=name)
    base = "" if hard else posixpath.dirname(name.replace("\\", "/"))
    resolved = posixpath.normpath(posixpath.join(base, normalized))
    if resolved == ".." or resolved.startswith("../"):
        raise ArchiveError(archive, f"is a {kind} pointing outside the target folder ({link!r})", member=name)


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


# -- zip -----------------------------------------------------------------------------------------


def _zip_mode(info: zipfile.ZipInfo) -> int:
    """The Unix mode stored by Unix zip tools (0 when the archive has none)."""
    return (info.external_attr >> 16) if info.create_system == 3 else 0


def _extract_zip(archive: Path, staging: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            links: dict[str, str] = {}
            for info in infos:  # check every member before writing anything
                name = _check_name(archive, info.filename)
                mode = _zip_mode(info)
                kind = stat.S_IFMT(mode)
                if kind == stat.S_IFLNK:
                    if info.file_size > 4096:
                        raise ArchiveError(archive, "is a symlink with an implausible target", member=info.filename)
                    links[info.filename] = zf.read(info).decode("utf-8", "surrogateescape")
                    _check_link(archive, name, links[info.filename], hard=False)
                elif kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise ArchiveError(archive, "is a device, FIFO or other special file", member=info.filename)
            root = os.path.realpath(staging)
            for info in infos:
                name = _check_name(archive, info.filename).rstrip("/")
                if not name or name == ".":
                    continue
                dest = os.path.join(root, *name.split("/"))
                if not _inside(root, os.path.realpath(os.path.dirname(dest))):
                    raise ArchiveError(
                        archive, "would be written outside the target folder (through a link)", member=info.filename
                    )
                if info.filename in links:
                    link = links[info.filename]
                    pointee = os.path.join(os.path.dirname(dest), *link.replace("\\", "/").split("/"))
                    if not _inside(root, os.path.realpath(pointee)):
                        raise ArchiveError(
                            archive, f"is a symlink pointing outside the target folder ({link!r})", member=info.filename
                        )
                    _remove_existing(dest)
                    os.symlink(link, dest)
                elif info.is_dir():
                    if os.path.islink(dest):
                        raise ArchiveError(archive, "is a folder where a symlink was extracted", member=info.filename)
                    os.makedirs(dest, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    _remove_existing(dest)
                    with zf.open(info) as src, open(dest, "xb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
                    if _zip_mode(info) & 0o111:
                        os.chmod(dest, 0o755)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
        raise ArchiveError(archive, f"is corrupt or unsupported ({exc})") from None


def _remove_existing(dest: str) -> None:
    """A later member with the same name replaces the earlier one (never writing through a link)."""
    if os.path.islink(dest) or os.path.isfile(dest):
        os.unlink(dest)
    elif os.path.isdir(dest):
        raise IsADirectoryError(dest)


# -- tar -----------------------------------------------------------------------------------------


def _is_tarfile(archive: Path) -> bool:
    try:
        return tarfile.is_tarfile(archive)
    except (OSError, EOFError, zlib.error):
        return False


def _extract_tar(archive: Path, staging: Path) -> None:
    try:
        with tarfile.open(archive, "r:*") as tf:
            members = tf.getmembers()
            for member in members:  # check every member before writing anything
                name = _check_name(archive, member.name)
                if member.issym():
                    _check_link(archive, name, member.linkname, hard=False)
                elif member.islnk():
                    _check_link(archive, name, member.linkname, hard=True)
                elif not (member.isfile() or member.isdir()):
                    raise ArchiveError(archive, "is a device, FIFO or other special file", member=member.name)
            if hasattr(tarfile, "data_filter"):
                tf.extractall(staging, members=members, filter="data")
            else:  # pragma: no cover - Python < 3.11.4: our own checks only
                tf.extractall(staging, members=members)
    except tarfile.FilterError as exc:  # the real-path re-check of filter="data"
        member = exc.tarinfo.name if getattr(exc, "tarinfo", None) is not None else None
        raise ArchiveError(archive, f"is not safe to extract ({exc})", member=member) from None
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise ArchiveError(archive, f"is corrupt or unsupported ({exc})") from None


# -- moving into place ---------------------------------------------------------------------------


def _move_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an existing ``target`` (``overwrite``) is moved aside first."""
    if not os.path.lexists(target):
        os.replace(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    os.rmdir(old)
    os.replace(target, old)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(old, target)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()

"""Unpacking downloaded tar archives (``.tar``, ``.tar.gz``, ``.tar.bz2``, ``.tar.xz``) safely.

:func:`extract_tar` reads the archive once, as a stream, and writes only what it has checked:

- **Only regular files and directories.** Symbolic links and hard links are refused, whether they
  point inside the target or not (the archives the harness downloads hold none, and a link is the
  usual way out of the target); so are character and block devices, FIFOs and any other member
  type.
- **Only names inside the target.** An absolute name (``/etc/x``, ``C:\\x``), a ``..`` component,
  a backslash, a NUL or an empty name is refused. ``./a`` and ``a`` are the same name.
- **No name clashes.** The same name twice, a file where a directory was (``a`` then ``a/b``), or a
  directory where a file was (``a/b`` then ``a``) is refused, so a later member can never
  overwrite or redirect an earlier one.
- **Nothing from the archive but the bytes.** Owners, permission bits, times and extended headers
  are ignored: files get ``0666 & ~umask`` and directories ``0777 & ~umask``, like any file the
  harness writes (tarfile's own ``extract``, and its ``filter`` argument, are not used).
- **Whole or not at all.** Members go into a temporary sibling of the target
  (:func:`harness.util.atomic.atomic_dir`), renamed into place once the last member is written; on
  any refusal, read error or interrupt the temporary folder is removed and the target is untouched.

Every refusal is one :class:`~harness.errors.InputFileError` line naming the archive and the
member, e.g. ``ckpt.tar.gz: member '../x' is refused: its name leaves the target folder``.
"""

from __future__ import annotations

import os
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from harness.errors import HarnessError, InputFileError
from harness.util.atomic import apply_umask, atomic_dir

__all__ = ["extract_tar"]

_CHUNK = 1 << 20


def _member_kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "directory"
    if member.issym():
        return "symbolic link"
    if member.islnk():
        return "hard link"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "FIFO"
    return "special member"


_IMPLIED = "folder (implied by a longer name)"


def _refuse(archive: Path, name: str, why: str) -> InputFileError:
    return InputFileError(archive, f"member {name!r} is refused: {why}")


def _clean_name(archive: Path, raw: str, kind: str) -> tuple[str, ...]:
    """The member's path components, or a refusal: absolute, ``..``, backslashes, NULs, or empty
    (except a directory: ``./``, the archive's own root, gives no components)."""
    if "\x00" in raw:
        raise _refuse(archive, raw, "its name contains a NUL byte")
    if "\\" in raw:
        raise _refuse(archive, raw, "its name contains a backslash")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":" and raw[0].isalpha()):
        raise _refuse(archive, raw, "its name is an absolute path")
    parts = tuple(p for p in PurePosixPath(raw).parts if p != ".")
    if any(p == ".." for p in parts):
        raise _refuse(archive, raw, "its name leaves the target folder ('..')")
    if not parts and kind != "directory":
        raise _refuse(archive, raw, "its name is empty")
    return parts


def extract_tar(archive: str | os.PathLike, target: str | os.PathLike, *, replace: bool = False) -> Path:
    """Unpack the tar archive ``archive`` (compressed or not) into the new folder ``target``.

    ``target`` must not exist (or be an empty folder) unless ``replace``; it appears, complete,
    only when every member was checked and written (see the module notes). Returns ``target``.
    """
    archive, target = Path(archive), Path(target)
    if not archive.is_file():
        raise InputFileError(archive, "no such file")
    if not replace and target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise HarnessError(f"{target}: already exists (extracting {archive.name} would replace it)")
    with atomic_dir(target, replace=True) as tmp:
        _extract_into(archive, tmp)
    return target


def _extract_into(archive: Path, root: Path) -> None:
    seen: dict[tuple[str, ...], str] = {}  # every name written or implied, and its kind
    try:
        with tarfile.open(archive, mode="r|*") as tar:
            for member in tar:
                _extract_member(archive, tar, member, root, seen)
    except HarnessError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as exc:
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise InputFileError(
            archive, f"not a readable tar archive, or truncated ({type(exc).__name__}: {problem[:160]}); "
            "delete it to download it again"
        ) from None
    for directory in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        apply_umask(directory, directory=True)


def _extract_member(archive: Path, tar: tarfile.TarFile, member: tarfile.TarInfo, root: Path,
                    seen: dict[tuple[str, ...], str]) -> None:
    raw = member.name
    kind = _member_kind(member)
    if kind not in ("file", "directory"):
        _clean_name(archive, raw, kind)
        extra = f" to {member.linkname!r}" if member.issym() or member.islnk() else ""
        raise _refuse(archive, raw, f"it is a {kind}{extra} (only files and folders are extracted)")
    parts = _clean_name(archive, raw, kind)
    if not parts:  # the archive's own root, "./"
        return
    earlier = seen.get(parts)
    if earlier is not None and not (earlier == _IMPLIED and kind == "directory"):
        if earlier == _IMPLIED:
            raise _refuse(archive, raw, "a folder of that name holds earlier members of the archive")
        raise _refuse(archive, raw, f"the name was already used by a {earlier} of the archive")
    for i in range(1, len(parts)):
        if seen.get(parts[:i]) == "file":
            raise _refuse(archive, raw, f"{'/'.join(parts[:i])!r} is a file of the archive, not a folder")
    for i in range(1, len(parts)):
        seen.setdefault(parts[:i], _IMPLIED)
    seen[parts] = kind
    path = root.joinpath(*parts)
    if os.path.commonpath([root, path]) != str(root):  # belt and braces: never outside
        raise _refuse(archive, raw, "its name leaves the target folder")
    try:
        if kind == "directory":
            path.mkdir(parents=True, exist_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        out = open(path, "xb")
    except OSError as exc:
        raise HarnessError(f"cannot extract {archive}: {' '.join(str(exc).split())}") from None
    with out:
        source = tar.extractfile(member)
        if source is None:  # pragma: no cover - isreg() members always have data
            raise _refuse(archive, raw, "it has no data")
        with source:
            while chunk := source.read(_CHUNK):  # read errors: the archive's fault (caller)
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise HarnessError(f"cannot extract {archive} into {root.parent}: {' '.join(str(exc).split())}") from None
    apply_umask(path)

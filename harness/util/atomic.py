"""Files and folders written whole or not at all, with the permissions the umask gives, and caches
that can tell whether they were finished.

One mechanism for everything the harness writes:

- :func:`write_text_atomic`: a temporary sibling file, then
  ``os.replace``; the file gets ``0666 & ~umask`` like any ``open(..., "w")`` (not ``mkstemp``'s
  0600).
- :func:`atomic_dir`: build a folder under a temporary sibling name, rename it into place when
  the build finished; on any error *or interrupt* (Ctrl-C) the temporary folder is removed.
- Temporary names carry the writer's process id (``.NAME.PID.RANDOM.tmp``), so a later run
  recognises what a killed process (``kill -9``) left behind and :func:`remove_stale` deletes it.
- :func:`mark_complete` writes, last of all, a manifest of every file's size;
  :func:`check_complete` compares a cache folder with it (a cheap ``stat`` per file), so a
  truncated, emptied or half-deleted cache is recognised when opened instead of failing deep
  inside Lucene, numpy or Arrow.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

#: The manifest :func:`mark_complete` writes into a finished folder.
COMPLETE_FILE = ".harness-complete.json"
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")
_umask: int | None = None


def umask() -> int:
    """The process's umask (read once; ``os.umask`` can only be read by setting it)."""
    global _umask
    if _umask is None:
        current = os.umask(0o022)
        os.umask(current)
        _umask = current
    return _umask


def apply_umask(path: str | os.PathLike, *, directory: bool = False) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would have: 0666 (0777) less the umask."""
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


def temp_name(target: Path) -> Path:
    """A fresh temporary sibling of ``target``: ``.NAME.PID.RANDOM.tmp``."""
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OSError:
        return False
    return True


def remove_stale(parent: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Delete the temporary files and folders under ``parent`` (those of target ``name`` only,
    when given) whose writing process is gone; returns what was removed."""
    parent = Path(parent)
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if not match or (name is not None and match.group("name") != name) or pid_alive(int(match.group("pid"))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` via a temporary sibling and ``os.replace``."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and ``os.replace``."""
    with atomic_file(path) as f:
        f.write(data)
    return Path(path)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through, piece by piece: a temporary sibling (created
    0666 & ~umask, like any file), flushed to disk and renamed into place when the block ends;
    removed when it raises, so ``path`` is complete or untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    try:
        with open(tmp, "xb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a written file's data to disk (before it is renamed into place)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """Yield an empty temporary folder to build ``target`` in; rename it to ``target`` when the
    block ends normally, remove it when the block raises or is interrupted.

    Leftovers of killed builds of the same target are removed first. If ``target`` appeared
    meanwhile (another process built the same thing), theirs is kept and ours discarded, unless
    ``replace``: then the old folder is swapped out and deleted.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target.parent, target.name)
    tmp = temp_name(target)
    tmp.mkdir()
    apply_umask(tmp, directory=True)
    try:
        yield tmp
        if replace and (target.exists() or target.is_symlink()):
            old = temp_name(target)
            os.rename(target, old)
            try:
                os.rename(tmp, target)
            except BaseException:
                os.rename(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.rename(tmp, target)
            except OSError:
                if not target.exists():
                    raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def mark_complete(directory: str | os.PathLike, **extra: object) -> None:
    """Record, as the last step of a build, the size of every file under ``directory``."""
    directory = Path(directory)
    files = {
        p.relative_to(directory).as_posix(): p.stat().st_size
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != COMPLETE_FILE
    }
    write_text_atomic(directory / COMPLETE_FILE, json.dumps({"files": files, **extra}, indent=1, sort_keys=True))


def check_complete(directory: str | os.PathLike) -> str | None:
    """``None`` when ``directory`` holds exactly the files of its manifest at their sizes, else
    what is wrong (one line)."""
    directory = Path(directory)
    try:
        manifest = json.loads((directory / COMPLETE_FILE).read_text(encoding="utf-8"))
        files = manifest["files"]
        if not isinstance(files, dict):
            raise TypeError
    except FileNotFoundError:
        return "it was never finished (no completion record)"
    except (OSError, ValueError, KeyError, TypeError):
        return f"its completion record {COMPLETE_FILE} is unreadable"
    for name, size in files.items():
        try:
            actual = (directory / name).stat().st_size
        except OSError:
            return f"{name} is missing"
        if actual != size:
            return f"{name} has {actual} bytes, {size} were written"
    return None


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike, busy: str, *, sidecar: bool = False) -> Iterator[None]:
    """Hold an exclusive, non-blocking ``flock`` on ``path`` for the block; when another process
    holds it, :class:`~harness.errors.HarnessError` with the one line ``busy``.

    ``path`` is a folder (locked itself, left in place), or with ``sidecar`` a lock file created
    for the block and removed at its end, while still held. A lock taken on a sidecar that its
    previous holder removed meanwhile is taken again on the file there now, so two processes never
    both believe they hold it. The lock is the kernel's: a killed holder releases it."""
    import fcntl

    from harness.errors import HarnessError

    path = Path(path)
    while True:
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o666) if sidecar else os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise HarnessError(f"{path}: cannot open it to lock it: {exc.strerror or exc}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(handle)
            raise HarnessError(busy) from None
        if not sidecar:
            break
        try:
            if os.path.samestat(os.fstat(handle), os.stat(path)):
                break
        except FileNotFoundError:
            pass
        os.close(handle)
    try:
        yield
    finally:
        if sidecar:
            with contextlib.suppress(OSError):
                path.unlink()
        os.close(handle)

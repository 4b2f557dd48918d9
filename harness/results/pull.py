"""Results from elsewhere: a results repository fetched (a git URL or folder, or a Hugging Face
dataset), every result file in it validated (:mod:`harness.results.validation`), and the valid
ones kept in a results folder under their canonical names, where ``harness compare`` and
``harness leaderboard --results-dir`` read them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.results.report import one_line
from harness.results.validation import ValidationContext, ValidationReport, validate_file

#: A Hugging Face dataset id (``owner/name``), or any id after ``hf:``.
_HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
HF_PREFIX = "hf:"


@dataclass
class PullReport:
    """What :func:`pull_results` did: the files kept (their path in the source, where they went),
    those refused (with their problems) and those left for a newer file of their configuration."""

    kept: list[tuple[str, Path]] = field(default_factory=list)
    refused: list[tuple[str, list[str]]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)


def source_kind(source: str) -> str:
    """``"folder"`` (a local folder that is not a git repository), ``"git"`` (a URL, or a local
    repository) or ``"hf"`` (a Hugging Face dataset id: ``owner/name`` that is no local path, or ``hf:ID``)."""
    if source.startswith(HF_PREFIX):
        return "hf"
    path = Path(source)
    if path.exists():
        if not path.is_dir():
            raise HarnessError(f"{source}: not a folder, a git repository or a Hugging Face dataset id")
        return "git" if _is_git(path) else "folder"
    if "://" in source or source.startswith("git@") or source.endswith(".git"):
        return "git"
    if _HF_ID.fullmatch(source):
        return "hf"
    raise HarnessError(f"{source}: no such folder, and neither a git URL nor a Hugging Face dataset id (owner/name)")


def _is_git(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


@contextmanager
def fetched(source: str) -> Iterator[Path]:
    """The files of ``source`` in a folder, for the block's duration (a clone or a snapshot is
    removed after it)."""
    kind = source_kind(source)
    if kind == "folder":
        yield Path(source)
        return
    with tempfile.TemporaryDirectory(prefix="harness-pull-") as scratch:
        if kind == "git":
            yield _clone(source, Path(scratch) / "repository")
        else:
            yield _snapshot(source.removeprefix(HF_PREFIX), Path(scratch) / "snapshot")


def _clone(source: str, into: Path) -> Path:
    git = shutil.which("git")
    if git is None:
        raise HarnessError(f"cannot fetch {source}: git is not installed")
    url = Path(source).resolve().as_uri() if Path(source).exists() else source  # file:// clones shallowly
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run([git, "clone", "--quiet", "--depth", "1", "--", url, str(into)], capture_output=True,
                          text=True, env=environment, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise HarnessError(f"cannot clone {source}: {one_line(said[-1] if said else f'git exited with {done.returncode}')}")
    return into


def _snapshot(repo_id: str, into: Path) -> Path:
    if not _HF_ID.fullmatch(repo_id):
        raise HarnessError(f"{repo_id!r} is not a Hugging Face dataset id (owner/name)")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=repo_id, repo_type="dataset", allow_patterns=["*.json"], local_dir=into))
    except Exception as exc:  # the hub's errors: not found, offline, refused
        raise HarnessError(f"cannot download Hugging Face dataset {repo_id}: {one_line(exc)}") from None


def _result_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.json")
                  if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts))


def pull_results(source: str, results_dir: str | Path, *, board: str | Path | None = None) -> PullReport:
    """Fetch ``source``, validate every ``*.json`` in it (against ``board``, a results folder, when
    given) and copy the valid ones into ``results_dir`` under their canonical names (each written
    whole); of several files of one configuration the newest (``created``) is kept. A file already
    in ``results_dir`` is replaced only when the pulled one loses nothing of it."""
    from harness.results.schema import check_results_dir, read_result, replacement_loss
    from harness.util.atomic import write_bytes_atomic

    results_dir = check_results_dir(results_dir, flag="DIR")
    report = PullReport()
    context = ValidationContext(board=Path(board) if board is not None else None)
    with fetched(source) as root:
        chosen: dict[str, tuple[str, ValidationReport]] = {}
        for path in _result_files(root):
            name = path.relative_to(root).as_posix()
            checked = validate_file(path, context)
            if not checked.ok:
                report.refused.append((name, checked.problems))
                continue
            canonical = checked.target.canonical_name
            if canonical in chosen:
                other_name, other = chosen[canonical]
                if other.target.result.created > checked.target.result.created:
                    report.superseded.append((name, other_name))
                    continue
                report.superseded.append((other_name, name))
            chosen[canonical] = (name, checked)
        results_dir.mkdir(parents=True, exist_ok=True)
        for canonical, (name, checked) in sorted(chosen.items()):
            destination = results_dir / canonical
            if destination.is_file():
                try:
                    loss = replacement_loss(read_result(destination).data, checked.target.data)
                except HarnessError:
                    loss = None
                if loss:
                    report.refused.append((name, [f"{destination} holds this configuration with {loss}; not replaced"]))
                    continue
            write_bytes_atomic(destination, checked.target.path.read_bytes())
            report.kept.append((name, destination))
    return report


__all__ = ["HF_PREFIX", "PullReport", "fetched", "pull_results", "source_kind"]

"""Published runs as data: their spec files, fetching, scoring by name and checking against the
published row each should reproduce (``harness score --run NAME``, ``harness reproduce --runs``).

A **run spec** is ``runs/NAME.toml`` in a spec folder (the built-in ``datasets_spec/`` and those
of ``$HARNESS_SPEC_PATH``); ``datasets_spec/README.md`` documents its keys. It becomes a
:class:`harness.api.PublishedRun`. The file is fetched like any benchmark file
(:func:`harness.data.download.fetch`: resumable, checksummed; with no pinned ``sha256`` the digest
of the first download is recorded) and kept as published, compressed or not; it is read as a
stream (:mod:`harness.runfiles.stream`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.api import PublishedRow, PublishedRun, PublishedTable
import msgspec

from harness.data.catalog import _PINNED, check_choice, check_described, check_location, described, load_toml
from harness.data.specs import Problems, SpecRecord, decode
from harness.errors import HarnessError, InputFileError
from harness.runfiles.registered import format_names
from harness.runfiles.archives import COMPRESSIONS, PER_PART

#: ``harness score --run published:NAME`` always means the published run NAME, even where a file
#: of that name exists.
PREFIX = "published:"

class _Reproduces(SpecRecord, kw_only=True):
    """The published row a run reproduces: its table's name and the row's system."""

    table: str
    system: str


class _RunRecord(SpecRecord, kw_only=True):
    """The keys of a ``runs/NAME.toml`` spec (``datasets_spec/README.md``)."""

    MESSAGES = {"k": "must be a list of positive integers"}

    name: str
    description: str
    suite: str
    format: str
    url: str
    path: str
    sha256: str | None = None
    size: int | None = None
    compression: str | None = None
    member: str | None = None
    depth: int | None = None
    k: list[int] = msgspec.field(default_factory=list)
    retriever: str = ""
    checkpoint: str = ""
    license: str = ""
    citation: str = ""
    homepage: str = ""
    version: str = ""
    reproduces: _Reproduces | None = None


def read_run_spec(path: str | Path) -> PublishedRun:
    """The :class:`PublishedRun` of a ``runs/NAME.toml`` spec; every problem of the file is in one
    :class:`InputFileError` naming it and the keys."""
    path = Path(path)
    problems = Problems(path)
    record = decode(load_toml(path), _RunRecord, problems)
    if record is None:
        problems.raise_any()
    check_described(record, problems)
    check_choice(record.compression, COMPRESSIONS, "compression", problems)
    member = record.member
    if member is not None and record.compression != "tar.gz":
        problems.add("'member' is only for compression = \"tar.gz\" (the file to read inside the archive)")
    elif member is not None and (not member or member.startswith("/") or ".." in member.split("/")):
        problems.add(f"'member' must be a relative name inside the archive, got {member!r}")
    elif member is not None and "{" in member and member != PER_PART:
        problems.add(f"'member' is a file name inside the archive, or \"{PER_PART}\" for one .json member per suite part; got {member!r}")
    check_location(record, problems)
    check_choice(record.format, tuple(format_names()), "format", problems)
    if record.url is not None and _PINNED.search(record.url) and record.sha256 is None:
        problems.add("'sha256' is required: the URL is pinned to a commit")
    if record.suite is not None and not re.match(r"^[a-z0-9][a-z0-9._-]*$", record.suite):
        problems.add(f"'suite' must be a suite name, got {record.suite!r}")
    depth = record.depth
    if depth is not None and depth < 1:
        problems.add("'depth' must be positive")
    if record.k is not None and not all(x >= 1 for x in record.k):
        problems.add("'k' must be a list of positive integers")
    elif record.k is not None and depth is not None and depth >= 1 and any(x > depth for x in record.k):
        problems.add(f"'k' asks for cutoffs deeper than 'depth' ({depth})")
    problems.raise_any()
    common = described(record, path)
    common.pop("source")
    reproduces = record.reproduces
    return PublishedRun(
        **common,
        suite=record.suite,
        format=record.format,
        url=record.url,
        path=record.path,
        sha256=record.sha256,
        size=record.size,
        compression=record.compression,
        member=member,
        depth=depth,
        k=tuple(sorted(set(record.k))),
        retriever=record.retriever,
        checkpoint=record.checkpoint,
        table=reproduces.table if reproduces is not None else "",
        system=reproduces.system if reproduces is not None else "",
        version=record.version,
        source=str(path),
    )


def read_run_specs(dirs: Iterable[Path], *, on_error: Callable[[InputFileError], None] | None = None) -> list[PublishedRun]:
    """Every ``runs/*.toml`` of ``dirs``, in order; a malformed file or a name defined twice is an
    :class:`InputFileError`, or handed to ``on_error`` and left out."""
    runs: dict[str, PublishedRun] = {}
    for folder in dirs:
        for path in sorted((Path(folder) / "runs").glob("*.toml")):
            try:
                run = read_run_spec(path)
                if run.name in runs:
                    raise InputFileError(path, f"published run {run.name!r} is also defined in {runs[run.name].source}")
            except InputFileError as error:
                if on_error is None:
                    raise
                on_error(error)
                continue
            runs[run.name] = run
    return list(runs.values())


def remote_file(run: PublishedRun):
    """The :class:`harness.data.download.RemoteFile` of a published run."""
    from harness.data.download import RemoteFile

    return RemoteFile(url=run.url, path=run.path, sha256=run.sha256, size=run.size)


def fetch_run(run: PublishedRun, *, progress: bool = True):
    """Download ``run``'s file into the data folder if it is not there (see
    :func:`harness.data.download.fetch`); offline, an error names the URL and the path."""
    from harness.data.download import fetch

    return fetch(remote_file(run), progress=progress)


def published_run(name: str) -> PublishedRun:
    """The registered published run ``name`` (an unknown name says what is known)."""
    from harness import registry

    return registry.registry("runs").get(name)


def resolve_run_argument(value: str, warn: Callable[[str], None] | None = None) -> PublishedRun | None:
    """What ``harness score --run VALUE`` names: ``published:NAME`` is the published run NAME; an
    existing file is that file (None), with a warning when a published run has the same name; a
    registered run name is that run; anything else is an error naming both readings."""
    from harness import registry

    if value.startswith(PREFIX):
        return published_run(value[len(PREFIX) :])
    runs = registry.registry("runs")
    if Path(value).is_file():
        if value in runs and warn is not None:
            warn(f"--run {value}: the file {value} is scored; write --run {PREFIX}{value} for the published run of that name")
        return None
    if value in runs:
        return runs.get(value)
    if Path(value).exists():
        raise HarnessError(f"--run {value}: not a file")
    close = [n for n in runs.names() if n.startswith(value.split("-")[0])][:3]
    hint = f" (published runs like it: {', '.join(close)})" if close else " (see `harness list runs`)"
    raise HarnessError(f"--run {value}: no such file, and no published run of that name{hint}")


def score_published_run(
    run: PublishedRun,
    *,
    suite: str | None = None,
    name: str | None = None,
    k: Sequence[int] | None = None,
    progress: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """Fetch ``run`` (if need be) and score it on its suite with the DPR protocol
    (:func:`harness.runfiles.score.score_file`); the row is named after the run, ``k`` defaults to
    the spec's cutoffs. ``suite``, when given, must be the run's."""
    from harness.runfiles.score import score_file

    if suite is not None and suite != run.suite:
        raise HarnessError(f"published run {run.name!r} answers suite {run.suite!r}, not {suite!r}")
    fetched = fetch_run(run, progress=progress)
    return score_file(
        run.suite, fetched.path, format=run.format, compression=run.compression, member=run.member,
        name=name or run.name, k=k if k else (list(run.k) or None), show_progress=progress,
        parameters={"published_run": run.name, "url": run.url}, **options,
    )


def row_to_check(run: PublishedRun, tables: Sequence[PublishedTable], label: str) -> PublishedTable | None:
    """The published table of ``run`` cut to the one row it reproduces, that row attached to the
    result label ``label`` (so :func:`harness.analysis.published.checks` compares them); None
    where the run names no row or the row is not found."""
    if not run.table:
        return None
    table = next((t for t in tables if t.name == run.table), None)
    if table is None:
        return None
    rows = [r for r in table.rows if r.system == run.system and r.suite == run.suite and r.part is None]
    if not rows:
        return None
    row: PublishedRow = dataclasses.replace(rows[0], retriever=label)
    return dataclasses.replace(table, rows=(row,))


@dataclasses.dataclass(frozen=True)
class Reproduced:
    """What :func:`reproduce_runs` did for one run: its result file, or why there is none."""

    run: PublishedRun
    path: Path | None = None
    error: str | None = None
    table: PublishedTable | None = None


def reproduce_runs(
    runs: Sequence[PublishedRun],
    results_dir: str | Path,
    tables: Sequence[PublishedTable],
    *,
    progress: bool = True,
    warn: Callable[[str], None] | None = None,
    on_done: Callable[[Reproduced], None] | None = None,
) -> list[Reproduced]:
    """Fetch, score and record each run (result files in ``results_dir``, as ``harness score``
    writes them), each with the published row it should reproduce. A run that cannot be fetched
    (offline and not in the data folder, a failed download) or scored is reported, not raised,
    and the others go on."""
    from harness.results.schema import write_result

    done = []
    for run in runs:
        table = None
        try:
            result = score_published_run(run, progress=progress, warn=warn)
            path = write_result(result, results_dir, replace=True)
            table = row_to_check(run, tables, run.name)
            if run.table and table is None and warn is not None:
                warn(f"published run {run.name!r}: no row {run.system!r} on suite {run.suite!r} in published table {run.table!r}")
            item = Reproduced(run, path=path, table=table)
        except HarnessError as exc:
            item = Reproduced(run, error=str(exc))
        done.append(item)
        if on_done is not None:
            on_done(item)
    return done


def runs_by_name(names: Sequence[str]) -> list[PublishedRun]:
    """The registered runs ``names`` (all when empty), each name checked before any work."""
    from harness import registry

    found = registry.registry("runs")
    return [found.get(n) for n in names] if names else list(found)


def format_runs(runs: Iterable[PublishedRun]) -> Mapping[str, str]:
    """A one-line summary per run, for listings: suite, depth, format, what it reproduces."""
    out = {}
    for run in runs:
        bits = [f"suite {run.suite}", f"top-{run.depth}" if run.depth else "", run.format]
        if run.table:
            bits.append(f"reproduces {run.table}: {run.system}")
        out[run.name] = ", ".join(b for b in bits if b)
    return out


__all__ = [
    "PREFIX", "Reproduced", "fetch_run", "format_runs", "published_run", "read_run_spec", "read_run_specs", "remote_file",
    "reproduce_runs", "resolve_run_argument", "row_to_check", "runs_by_name", "score_published_run",
]

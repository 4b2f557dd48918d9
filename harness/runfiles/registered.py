"""The registered run formats (``register_run_formats``; the core's are in
:mod:`harness.runfiles.formats`): lookup by name or alias, and detection from a file's beginning."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO

from harness.api import RunFormatSpec
from harness.errors import HarnessError, InputFileError


def _registry():
    from harness import registry

    return registry.registry("run-formats")


def format_names() -> list[str]:
    """Every registered format's name, sorted."""
    return _registry().names()


def spellings() -> dict[str, str]:
    """Every accepted spelling, names and aliases, with the format it means."""
    out: dict[str, str] = {}
    for spec in _registry():
        out[spec.name] = spec.name
        for alias in spec.aliases:
            out.setdefault(alias, spec.name)
    return out


def run_format(name: str | RunFormatSpec) -> RunFormatSpec:
    """The format called ``name`` (or one of its aliases); an unknown name is a one-line error
    listing the known spellings."""
    if isinstance(name, RunFormatSpec):
        return name
    registry = _registry()
    if name in registry:
        return registry.get(name)
    known = spellings()
    if name in known:
        return registry.get(known[name])
    raise HarnessError(f"unknown run format {name!r}; known: {', '.join(sorted(known))}")


def _head(path: Path, compression: str | None, member: str | None) -> str:
    from harness.runfiles.archives import open_stream

    if compression is not None:
        with open_stream(path, compression, member) as body:
            return body.read(65536).decode("utf-8-sig", errors="replace")
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            return f.read(65536)
    except OSError as exc:
        raise InputFileError(path, f"cannot read run file: {exc.strerror or exc}") from None


def looks_like(path: str | Path, name: str, compression: str | None = None, member: str | None = None) -> bool:
    """Whether the file's beginning is what format ``name``'s ``sniff`` recognises (True for a
    format that is never detected, whose files look like another's)."""
    spec = run_format(name)
    if spec.sniff is None:
        return True
    path = Path(path)
    stripped = _head(path, compression, member).lstrip()
    if not stripped:
        return True
    reopen = None
    if compression is None:
        from harness.runfiles.archives import open_stream

        def reopen():
            return open_stream(path, None, None)

    return bool(spec.sniff(stripped, reopen))


def detect_format(path: str | Path, compression: str | None = None, member: str | None = None) -> str:
    """The name of the first format (in ``sniff_order``) whose ``sniff`` recognises the file's
    beginning; a compressed file is looked at decompressed, and is refused when the format it is
    recognised as is not detected compressed (``sniff_compressed``)."""
    path = Path(path)
    stripped = _head(path, compression, member).lstrip()
    if not stripped:
        raise InputFileError(path, "empty run file")
    reopen: Callable[[], AbstractContextManager[IO[bytes]]] | None = None
    if compression is None:
        from harness.runfiles.archives import open_stream

        def reopen():
            return open_stream(path, None, None)

    specs = sorted((s for s in _registry() if s.sniff is not None), key=lambda s: (s.sniff_order, s.name))
    for spec in specs:
        if spec.sniff(stripped, reopen):
            if compression is not None and not spec.sniff_compressed:
                raise InputFileError(path, f"a compressed {spec.name} run is not supported: decompress it first")
            return spec.name
    raise InputFileError(
        path,
        "cannot tell the run format: expected a TREC run (qid Q0 docid rank score tag), a Tevatron run "
        "(qid<TAB>docid<TAB>score) or JSON (DPR, pyserini, ranx, FlashRAG, Rankify)",
    )


__all__ = ["detect_format", "format_names", "looks_like", "run_format", "spellings"]

"""Released passage embeddings as data: their spec files, fetching every part, and lookup by name.

An **embeddings spec** is ``embeddings/NAME.toml`` in a spec folder (the built-in ``datasets_spec/``
and those of ``$HARNESS_SPEC_PATH``); ``datasets_spec/README.md`` documents its keys. It becomes a
:class:`harness.api.ReleasedEmbeddings`. Each of its parts is fetched like any benchmark file
(:func:`harness.data.download.fetch`: resumable, locked, checksummed, never half-written), in the
order the spec lists them. Where the publisher gives an MD5 (pyserini's index tables) instead of a
sha256, the fetched file is also checked against it; the result of that check is recorded beside
the file (``.NAME.md5``, keyed by the file's sha256) so a 60 GB part is not hashed twice.

Nothing here imports a plugin: the dense engine reads the records through the registry
(:func:`released_embeddings`, :func:`matching_releases`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.api.embeddings import (
    EMBEDDING_DTYPES,
    EMBEDDING_FORMATS,
    PART_COMPRESSIONS,
    EmbeddingsPart,
    ReleasedEmbeddings,
)
from harness.data.catalog import check_choice, check_described, check_location, described, load_toml
from harness.data.specs import Problems, SpecRecord, decode
from harness.errors import InputFileError

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_MD5 = re.compile(r"^[0-9a-f]{32}$")
#: Bytes of one stored vector component once imported (the float32 store).
_FLOAT32 = 4


class _PartRecord(SpecRecord, kw_only=True):
    """One part's keys in an embeddings spec."""

    url: str
    path: str
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    compression: str | None = None


class _EmbeddingsRecord(SpecRecord, kw_only=True):
    """The keys of an ``embeddings/NAME.toml`` spec (``datasets_spec/README.md``)."""

    name: str
    description: str
    corpus: str
    encoder: str
    format: str
    parts: list[_PartRecord]
    rows: int
    dim: int
    id_prefix: str = ""
    disk: int | None = None
    dtype: str = "float32"
    license: str = ""
    citation: str = ""
    homepage: str = ""
    version: str = ""
    reproduces: str = ""


#: Bounds far above any release (DPR's Wikipedia: 21M rows of 768; a 1 PB download), so a spec
#: claiming more is a typo, refused before any size is computed from it.
_MOST = {"rows": 10**12, "dim": 1 << 16, "disk": 1 << 50}


def _positive(value: int | None, key: str, problems: Problems) -> bool:
    """Whether ``value`` (when given) is positive and within :data:`_MOST`; else a problem."""
    if value is not None and value <= 0:
        problems.add(f"{key!r} must be positive, got {_short_int(value)}")
        return False
    most = _MOST.get(key)
    if value is not None and most is not None and value > most:
        problems.add(f"{key!r} must be at most {most:,}, got {_short_int(value)}")
        return False
    return True


def _short_int(value: int) -> str:
    """An integer for a message: its digits, or for a long one its first digits and length."""
    digits = str(value) if value.bit_length() < 4000 else None
    if digits is not None and len(digits) <= 30:
        return digits
    return f"an integer of {len(digits)} digits" if digits is not None else "an integer of over 1,200 digits"


def _part(record: _PartRecord, problems: Problems, prefix: str) -> EmbeddingsPart:
    check_location(record, problems, prefix=prefix)
    if record.md5 is not None and not _MD5.match(record.md5):
        problems.add(f"{prefix}'md5' must be 32 lowercase hex digits")
    check_choice(record.compression, PART_COMPRESSIONS, "compression", problems, prefix=prefix)
    return EmbeddingsPart(
        url=record.url, path=record.path, sha256=record.sha256, size=record.size, md5=record.md5,
        compression=record.compression,
    )


#: The archive kinds each format's reader opens (a part of another format is read as it is).
_FORMAT_COMPRESSIONS = {"faiss-flat": PART_COMPRESSIONS, "contriever-pickle": ("tar",)}


def _check_layout(problems: Problems, layout: str, dtype: str, parts: list[EmbeddingsPart]) -> None:
    """What the format's reader can read: the archives it opens, and a faiss flat index's float32
    vectors in one archive (pyserini's) or as its two files ``index`` and ``docid``."""
    allowed = _FORMAT_COMPRESSIONS.get(layout, ())
    for index, part in enumerate(parts):
        if part.compression is not None and part.compression not in allowed:
            what = f"one of {', '.join(allowed)}" if allowed else "left out (its parts are read as they are)"
            problems.add(f"'parts[{index}].compression' {part.compression!r} is not read by format {layout!r}: "
                         f"it must be {what}")
    if layout != "faiss-flat":
        return
    if dtype != "float32":
        problems.add(f"'dtype' must be float32 for format 'faiss-flat' (a faiss flat index stores float32), got {dtype!r}")
    names = sorted(part.path.rsplit("/", 1)[-1] for part in parts)
    one_archive = len(parts) == 1 and parts[0].compression is not None
    two_files = names == ["docid", "index"] and all(part.compression is None for part in parts)
    if not (one_archive or two_files):
        problems.add("'parts' of format 'faiss-flat' must be one archive (compression = \"tar.gz\" or \"tar\", as "
                     "pyserini ships it) or two files whose paths end in /index and /docid")


def read_embeddings_spec(path: str | Path) -> ReleasedEmbeddings:
    """The :class:`ReleasedEmbeddings` of an ``embeddings/NAME.toml`` spec; every problem of the
    file is in one :class:`InputFileError` naming it and the keys."""
    path = Path(path)
    problems = Problems(path)
    record = decode(load_toml(path), _EmbeddingsRecord, problems)
    if record is None:
        problems.raise_any()
    check_described(record, problems)
    for key in ("corpus", "encoder"):
        value = getattr(record, key)
        if value is not None and not _NAME.match(value):
            problems.add(f"{key!r} must be a {'corpus' if key == 'corpus' else 'encoder preset'} name, got {value!r}")
    if record.parts is not None and not record.parts:
        problems.add("'parts' must list at least one part")
    parts = [_part(part, problems, f"parts[{index}].") for index, part in enumerate(record.parts or ()) if part is not None]
    seen: dict[str, int] = {}
    for index, part in enumerate(parts):
        if part.path in seen:
            problems.add(f"'parts[{index}].path' is also the path of parts[{seen[part.path]}] ({part.path})")
        seen[part.path] = index
    if record.id_prefix is not None and any(c.isspace() for c in record.id_prefix):
        problems.add(f"'id_prefix' must not contain white space, got {record.id_prefix!r}")
    check_choice(record.format, EMBEDDING_FORMATS, "format", problems)
    check_choice(record.dtype, EMBEDDING_DTYPES, "dtype", problems)
    for key in ("rows", "dim", "disk"):
        _positive(getattr(record, key), key, problems)
    if not problems:
        _check_layout(problems, record.format, record.dtype, parts)
    problems.raise_any()
    common = described(record, path)
    common.pop("source")
    return ReleasedEmbeddings(
        **common,
        corpus=record.corpus,
        encoder=record.encoder,
        format=record.format,
        parts=tuple(parts),
        rows=record.rows,
        dim=record.dim,
        id_prefix=record.id_prefix,
        disk=record.disk,
        dtype=record.dtype,
        version=record.version,
        reproduces=record.reproduces,
        source=str(path),
    )


def read_embeddings_specs(
    dirs: Iterable[Path], *, on_error: Callable[[InputFileError], None] | None = None
) -> list[ReleasedEmbeddings]:
    """Every ``embeddings/*.toml`` of ``dirs``, in order; a malformed file or a name defined twice
    is an :class:`InputFileError`, or handed to ``on_error`` and left out (the earlier file wins)."""
    found: dict[str, ReleasedEmbeddings] = {}
    for folder in dirs:
        for path in sorted((Path(folder) / "embeddings").glob("*.toml")):
            try:
                spec = read_embeddings_spec(path)
                if spec.name in found:
                    raise InputFileError(path, f"released embeddings {spec.name!r} are also defined in {found[spec.name].source}")
            except InputFileError as error:
                if on_error is None:
                    raise
                on_error(error)
                continue
            found[spec.name] = spec
    return list(found.values())


# -- sizes -----------------------------------------------------------------------------------------


def download_bytes(spec: ReleasedEmbeddings) -> int | None:
    """The bytes of every part together, or None when a part's size is not known."""
    sizes = [part.size for part in spec.parts]
    return None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]


def store_bytes(spec: ReleasedEmbeddings) -> int:
    """The bytes of the release's vectors as a float32 store (``rows x dim x 4``)."""
    return spec.rows * spec.dim * _FLOAT32


def vector_bytes(spec: ReleasedEmbeddings) -> int:
    """The bytes of the release's vectors as its download stores them (``rows x dim x`` the size
    of its ``dtype``): what a download of unpublished size holds at least."""
    return spec.rows * spec.dim * (2 if spec.dtype == "float16" else _FLOAT32)


def disk_at_least(spec: ReleasedEmbeddings) -> int:
    """A lower bound of :func:`disk_needed` when a part's size is unknown: the stored vectors plus
    the float32 store."""
    return vector_bytes(spec) + store_bytes(spec)


def disk_needed(spec: ReleasedEmbeddings) -> int | None:
    """What the release needs on disk once fetched and imported: its ``disk`` when the spec states
    it, else the downloads plus the float32 store (None when a part's size is unknown)."""
    if spec.disk is not None:
        return spec.disk
    downloads = download_bytes(spec)
    return None if downloads is None else downloads + store_bytes(spec)


def gigabytes(value: int | None) -> str:
    """``value`` bytes as ``12.3 GB`` (decimal, as the publishers list sizes); ``?`` when unknown."""
    return "?" if value is None else f"{value / 1e9:.1f} GB"


# -- fetching --------------------------------------------------------------------------------------


def remote_file(part: EmbeddingsPart):
    """The :class:`harness.data.download.RemoteFile` of one part."""
    from harness.data.download import RemoteFile

    return RemoteFile(url=part.url, path=part.path, sha256=part.sha256, size=part.size)


def part_path(part: EmbeddingsPart) -> Path:
    """Where ``part`` lives (or will live) in the data folder."""
    from harness.data.download import locate

    return locate(remote_file(part))


def _md5_record(path: Path) -> Path:
    return path.with_name(f".{path.name}.md5")


def md5_file(path: Path, *, progress: bool = False) -> str:
    """The MD5 hex digest of ``path``, read in chunks (``hashlib``)."""
    from harness.data.download import CHUNK
    from harness.util.progress import progress as progress_bar

    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f, progress_bar(
        total=path.stat().st_size, enabled=progress, unit="B", unit_scale=True, unit_divisor=1024,
        desc=f"md5 {path.name}",
    ) as bar:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def check_md5(part: EmbeddingsPart, path: Path, sha256: str, *, downloaded: bool, progress: bool = False) -> None:
    """Check the fetched file of ``part`` (whose sha256 is ``sha256``) against the publisher's MD5.

    A file whose sha256 was already found to have that MD5 is not hashed again. A mismatch is a
    :class:`harness.data.download.ChecksumError` naming the file; a file this fetch downloaded is
    deleted (with its records), as :func:`harness.data.download.fetch` does for a bad sha256."""
    from harness.data.download import ChecksumError
    from harness.util.atomic import write_text_atomic

    if part.md5 is None:
        return
    record = _md5_record(path)
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
        if known.get("sha256") == sha256 and known.get("md5") == part.md5:
            return
    except (OSError, ValueError, AttributeError):
        pass
    found = md5_file(path, progress=progress)
    if found != part.md5:
        if downloaded:
            for stale in (path, record, path.with_name(f".{path.name}.verified")):
                stale.unlink(missing_ok=True)
            what = "the download was deleted; run again to download it afresh"
        else:
            what = f"delete it and run again to download it from {part.url}"
        raise ChecksumError(f"{path} does not match its published checksum (expected md5 {part.md5}, got {found}): {what}")
    try:
        write_text_atomic(record, json.dumps({"md5": found, "sha256": sha256}) + "\n")
    except OSError:
        pass


def fetch_embeddings(spec: ReleasedEmbeddings, *, progress: bool = True, on_part: Callable[[int, Any], None] | None = None) -> list[Path]:
    """Fetch every part of ``spec`` into the data folder, in order (each resumable and checked
    against its sha256, size and publisher MD5; see :func:`harness.data.download.fetch`), and
    return their paths. A failure is raised as the download error it is, naming the release, the
    part and its target path. ``on_part(index, FetchResult)`` is called as each part is ready."""
    from harness.data.download import DownloadError, fetch

    paths = []
    count = len(spec.parts)
    for index, part in enumerate(spec.parts):
        target = part_path(part)
        try:
            result = fetch(remote_file(part), progress=progress, warn_unpinned=part.md5 is None)  # md5: checked next
            check_md5(part, result.path, result.sha256, downloaded=result.downloaded, progress=progress)
        except DownloadError as exc:
            raise type(exc)(f"released embeddings {spec.name!r}, part {index + 1}/{count} ({target}): {exc}") from None
        if on_part is not None:
            on_part(index, result)
        paths.append(result.path)
    return paths


# -- lookup ----------------------------------------------------------------------------------------


def released_embeddings(name: str) -> ReleasedEmbeddings:
    """The registered release ``name`` (an unknown name says which are known, or which spec
    failed to load)."""
    from harness import registry

    return registry.registry("embeddings").get(name)


def matching_releases(corpus_name: str, encoder_name: str) -> list[ReleasedEmbeddings]:
    """Every registered release of ``corpus_name`` made by ``encoder_name``'s passage side (what
    a run about to encode that corpus with that encoder could load instead), by name."""
    from harness import registry

    found = [spec for spec in registry.registry("embeddings") if spec.corpus == corpus_name and spec.encoder == encoder_name]
    return sorted(found, key=lambda spec: spec.name)


def size_text(spec: ReleasedEmbeddings) -> str:
    """The download's size, or ``>=`` the bytes of its vectors when the publisher gives none."""
    size = download_bytes(spec)
    return gigabytes(size) if size is not None else f">={gigabytes(vector_bytes(spec))}"


def disk_text(spec: ReleasedEmbeddings) -> str:
    """The disk the release needs, or ``>=`` its lower bound when a part's size is unknown."""
    disk = disk_needed(spec)
    return gigabytes(disk) if disk is not None else f">={gigabytes(disk_at_least(spec))}"


def listing_rows(specs: Iterable[ReleasedEmbeddings]) -> list[tuple[str, ...]]:
    """One row per release for ``harness list embeddings``: name, encoder, corpus, rows, download
    size, disk needed (``>=`` a lower bound where the publisher gives no size), description."""
    return [
        (spec.name, spec.encoder, spec.corpus, f"{spec.rows:,}", size_text(spec), disk_text(spec), spec.description)
        for spec in specs
    ]


__all__ = [
    "check_md5", "disk_at_least", "disk_needed", "disk_text", "size_text", "vector_bytes", "download_bytes", "fetch_embeddings", "gigabytes", "listing_rows", "matching_releases",
    "md5_file", "part_path", "read_embeddings_spec", "read_embeddings_specs", "released_embeddings", "remote_file",
    "store_bytes",
]

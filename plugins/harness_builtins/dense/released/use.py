"""What a dense retriever does with ``-o embeddings=NAME``: the release looked up and checked to
be the retriever's encoder preset's when the retriever is built (:func:`resolve_release`, before
any suite or corpus is read), then, at indexing, checked to be for the suite's corpus, fetched,
imported once (reused after), checked against the encoder (the verdict kept with the import, see
:func:`release_cache`), and said on stderr; and the hint, when a corpus is about to be encoded,
that a matching release exists."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.api import Corpus, ReleasedEmbeddings
from harness.data.embeddings import fetch_embeddings, matching_releases, released_embeddings
from harness.errors import HarnessError, UnknownNameError

#: The file of an imported release's folder keeping the check's passing verdicts.
CHECKS_FILE = "checks.json"


def released(name: str) -> ReleasedEmbeddings:
    """The registered release called ``name`` (an unknown name: the registry's one-line error)."""
    return released_embeddings(name)


def resolve_release(name: Any, preset: str | None, *, option: str = "-o embeddings") -> ReleasedEmbeddings:
    """The release ``name`` given to ``option``, checked before any work: a non-empty release name
    (not a path), registered, whose vectors are the passage side of encoder preset ``preset``. Each
    problem is one :class:`HarnessError` line naming the option."""
    if not isinstance(name, str) or not name.strip():
        raise HarnessError(f"{option}: empty; give a released embeddings name (harness list embeddings) or leave it out")
    if name != name.strip() or "/" in name or os.sep in name or name.startswith(("~", ".")):
        raise HarnessError(f"{option}={name}: takes a released embeddings name (harness list embeddings), not a path "
                           f"or file; a new release is declared by an embeddings/NAME.toml spec in $HARNESS_SPEC_PATH")
    try:
        spec = released(name)
    except UnknownNameError as exc:  # unknown, or its spec failed to load: the registry says which
        raise HarnessError(f"{option}={name}: {exc}") from None
    if preset is None or spec.encoder != preset:
        raise HarnessError(f"{option}={name}: released embeddings {name!r} are the passage vectors of encoder "
                           f"{spec.encoder!r}; this retriever's passage encoder is {preset or 'not a named encoder preset'!r}: "
                           f"use -r {spec.encoder} (or -r adapt -o passage_encoder={spec.encoder})")
    return spec


def matching(corpus_name: str, encoder_name: str | None) -> list[ReleasedEmbeddings]:
    """The registered releases for this corpus and encoder preset."""
    if not encoder_name:
        return []
    return list(matching_releases(corpus_name, encoder_name))


def fetch(spec: ReleasedEmbeddings, *, progress: bool) -> list[Path]:
    """Every part of ``spec``, downloaded (resumable, checksummed) or found; local paths in order."""
    return [Path(p) for p in fetch_embeddings(spec, progress=progress)]


def say(message: str) -> None:
    """One line on stderr (what the run does, not a warning)."""
    print(f"harness: {message}", file=sys.stderr, flush=True)


def hint_release(corpus: Corpus, encoder_name: str | None) -> None:
    """Say, in one line, that released vectors of this corpus and encoder exist (before encoding)."""
    try:
        found = matching(corpus.name, encoder_name)
    except HarnessError:
        return
    if found:
        names = ", ".join(s.name for s in found)
        say(f"encoding corpus {corpus.name!r} with {encoder_name!r}: its released vectors exist ({names}); "
            f"-o embeddings={found[0].name} searches them without encoding a passage")


def _check_key(identity: str, digest: str, sample: int, seed: int) -> str:
    blob = json.dumps({"encoder": identity, "digest": digest, "sample": sample, "seed": seed}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def recorded_check(cache: Any, key: str) -> dict[str, Any] | None:
    """The passing verdict kept with the import for ``key`` (None when there is none)."""
    try:
        found = json.loads((Path(cache.path) / CHECKS_FILE).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return dict(found) if isinstance(found, dict) and "min_cosine" in found else None


def record_check(cache: Any, key: str, verdict: dict[str, Any]) -> None:
    """Keep a passing verdict with the import (written whole; a read-only cache keeps none)."""
    from harness.util.atomic import write_text_atomic

    path = Path(cache.path) / CHECKS_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    known[key] = verdict
    try:
        write_text_atomic(path, json.dumps(known, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass


def release_cache(name: str, corpus: Corpus, encoder: Any, preset: str | None, root: Path, *, check: int,
                  progress: bool) -> tuple[Any, dict[str, Any]]:
    """The imported cache of release ``name`` for ``corpus``, and the record of its use (what the
    result keeps: release, digest, mapping, check, import figures).

    **The check's verdict is kept with the import** (``checks.json`` in its folder), keyed by the
    passage encoder's identity, the release's digest, the sample size and the seed: a later run
    asking the same question reuses the passing verdict (recorded with ``"cached": true``) instead
    of loading the passage model again. A failed check raises and is not kept; a skipped one
    (the model could not be loaded) is tried again next time."""
    from harness_builtins.dense.encoders import sides
    from harness_builtins.dense.released.check import SEED, check_release
    from harness_builtins.dense.released.importer import find_import, import_release, release_digest

    spec = resolve_release(name, preset)
    if spec.corpus != corpus.name:
        raise HarnessError(f"-o embeddings={name}: released embeddings {name!r} are for corpus {spec.corpus!r}; this "
                           f"suite's corpus is {corpus.name!r}")
    passage = sides(encoder)[1]
    identity = passage.identity()
    cache = find_import(root, corpus, spec)  # imported already, its checksums pinned: nothing to fetch
    if cache is None:
        paths = fetch(spec, progress=progress)
        cache = import_release(spec, paths, corpus, identity, root, progress=progress,
                               digest=release_digest(spec, paths))
    digest = cache.release["digest"]
    mapping = dict(cache.release["mapping"])
    say(f"searching released embeddings {spec.name!r} ({spec.format}, {len(cache):,} vectors of {spec.dim}, "
        f"digest {digest[:12]}) instead of encoding corpus {corpus.name!r}")
    if mapping["missing"]:
        shown = ", ".join(mapping["missing_ids"][:10])
        more = f" and {mapping['missing'] - 10} more" if mapping["missing"] > 10 else ""
        say(f"{mapping['missing']:,} passages of corpus {corpus.name!r} are not in release {spec.name!r} and can "
            f"never be retrieved: {shown}{more}")
    key = _check_key(identity, digest, check, SEED)
    checked = recorded_check(cache, key) if check > 0 else None
    if checked is not None:
        checked["cached"] = True
    else:
        checked = check_release(cache, corpus, passage, sample=check, seed=SEED, name=spec.name, encoder_name=preset)
        if "skipped" not in checked:
            record_check(cache, key, checked)
    if "skipped" in checked and check:
        say(f"released embeddings {spec.name!r} not checked against {preset!r}: {checked['skipped']}")
    record = {
        "name": spec.name,
        "digest": digest,
        "format": spec.format,
        "version": spec.version,
        "rows": len(cache),
        "in_place": bool(cache.release.get("in_place")),
        "mapping": mapping,
        "check": checked,
    }
    imported = getattr(cache, "imported", None)
    if imported is not None and imported.rows:
        record["import"] = {"rows": imported.rows, "seconds": round(imported.seconds, 3),
                            "mb_per_s": round(imported.mb_per_s, 1)}
    return cache, record

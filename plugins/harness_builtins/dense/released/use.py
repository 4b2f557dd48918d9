"""What a dense retriever does with ``-o embeddings=NAME``: the release looked up, checked to be
for the suite's corpus and the retriever's encoder preset, fetched, imported once (reused after),
checked against the encoder, and said on stderr; and the hint, when a corpus is about to be
encoded, that a matching release exists."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.api import Corpus, ReleasedEmbeddings
from harness.errors import HarnessError


def released(name: str) -> ReleasedEmbeddings:
    """The registered release called ``name`` (an unknown name: the registry's one-line error)."""
    try:
        from harness.data.embeddings import released_embeddings
    except ImportError:
        from harness import registry

        return registry.registry("embeddings").get(name)
    return released_embeddings(name)


def matching(corpus_name: str, encoder_name: str | None) -> list[ReleasedEmbeddings]:
    """The registered releases for this corpus and encoder preset."""
    if not encoder_name:
        return []
    try:
        from harness.data.embeddings import matching_releases
    except ImportError:
        from harness import registry

        return [s for s in registry.registry("embeddings") if s.corpus == corpus_name and s.encoder == encoder_name]
    return list(matching_releases(corpus_name, encoder_name))


def fetch(spec: ReleasedEmbeddings, *, progress: bool) -> list[Path]:
    """Every part of ``spec``, downloaded (resumable, checksummed) or found; local paths in order."""
    from harness.data.embeddings import fetch_embeddings

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


def release_cache(name: str, corpus: Corpus, encoder: Any, preset: str | None, root: Path, *, check: int,
                  progress: bool) -> tuple[Any, dict[str, Any]]:
    """The imported cache of release ``name`` for ``corpus``, and the record of its use (what the
    result keeps: release, digest, mapping, check, import figures)."""
    from harness_builtins.dense.encoders import sides
    from harness_builtins.dense.released.check import check_release
    from harness_builtins.dense.released.importer import find_import, import_release, release_digest

    spec = released(name)
    if spec.corpus != corpus.name:
        raise HarnessError(f"released embeddings {name!r} are for corpus {spec.corpus!r}; this suite's corpus is "
                           f"{corpus.name!r}")
    if preset is None or spec.encoder != preset:
        raise HarnessError(f"released embeddings {name!r} are encoder {spec.encoder!r}'s passage vectors; this "
                           f"retriever is {preset or 'not a named encoder preset'!r}: use -r {spec.encoder}")
    passage = sides(encoder)[1]
    cache = find_import(root, corpus, spec)  # imported already, its checksums pinned: nothing to fetch
    if cache is None:
        paths = fetch(spec, progress=progress)
        cache = import_release(spec, paths, corpus, passage.identity(), root, progress=progress,
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
    checked = check_release(cache, corpus, passage, sample=check, name=spec.name, encoder_name=preset)
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

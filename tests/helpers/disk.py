"""Watching a folder's size while a job writes into it (peak disk use of in-loop re-indexing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.inloop import HashEncoder


class Versioned(HashEncoder):
    """The hash encoder as a passage side that training changes: version ``v`` is another index."""

    def __init__(self, version: int) -> None:
        self.version = version

    def identity(self) -> str:
        return f"hash-encoder-6-v{self.version}"

    def encode_passages(self, passages):
        return super().encode_passages(passages) + np.float32(self.version)


def watch_disk(root: Path, seen: list, encoded: list | None = None):
    """``encode_corpus_distributed`` recording the index folders under ``root`` when each build
    starts encoding and after every shard it writes (and, in ``encoded``, who encoded what); the
    version of a :class:`Versioned` encoder, else its identity, names the build."""
    from harness_builtins.dense import distributed

    original = distributed.encode_corpus_distributed

    def folders() -> list[str]:
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []

    def wrapper(encoder, corpus, where, **options):
        identity = encoder.identity()
        version = int(identity.rsplit("-v", 1)[1]) if isinstance(encoder, Versioned) else identity
        seen.append({"version": version, "shard": None, "folders": folders()})
        result = original(encoder, corpus, where, **options,
                          on_shard=lambda shard: seen.append({"version": version, "shard": shard, "folders": folders()}))
        if encoded is not None:
            encoded.append({rank: list(shards) for rank, shards in result.encoded.items()})
        return result

    return wrapper


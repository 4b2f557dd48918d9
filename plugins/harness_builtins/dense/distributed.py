"""Corpus encoding scaled out with ``torch.distributed``: several GPUs or machines fill ONE
embedding cache (:mod:`harness_builtins.dense.embeddings`), which a normal single-process
:meth:`DenseRetriever.index() <harness_builtins.dense.retriever.DenseRetriever.index>` then finds
complete and turns into a faiss index without encoding anything.

Launch (any launcher that sets ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``)::

    torchrun --nproc_per_node 4 -m harness_builtins.dense.distributed \\
        --retriever dpr-multi --suite nq --cache-dir /shared/cache [-o batch_size=256 ...]

Without a launcher (no ``WORLD_SIZE`` in the environment) it runs as one process.

How the work is split and merged:

1. Rank 0 opens or creates the cache's ``meta.json`` exactly as :func:`~harness_builtins.dense.
   embeddings.embed_corpus` would (same directory, key and layout; an existing cache keeps its
   shard size), removes shard temporaries left by a crashed run, and, before any rank writes,
   decides the to-do list as ``embed_corpus`` resumes (:func:`~harness_builtins.dense.embeddings.
   resume_shards`: missing and damaged shards, the damaged ones deleted; the vector width learnt
   from finished shards). It sends the meta and the to-do list to every rank.
2. Rank ``r`` encodes every ``world_size``-th shard of the to-do list from the ``r``-th (in a
   fresh run shard ``i`` goes to rank ``i % world_size``) into the SAME directory with the cache's
   temp + rename (ids first, vectors last), so a shard is written once, by one rank, and a restart,
   with any world size, redoes only the shards that are missing or damaged. A rank reads only its
   shards' rows when the corpus has positional access (a corpus store), else it streams the
   corpus and reads past the other passages.
3. All ranks exchange their outcome (a collective, so one rank's error stops them all with its
   message instead of a hang); rank 0 checks every shard (rows, ids, dtype, width) and writes the
   final ``meta.json`` with ``complete: true``. A second collective releases the other ranks.

The cache directory must be shared by all ranks (one machine, or a shared file system).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.api import Corpus

from harness_builtins.dense.embeddings import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_SHARD_SIZE,
    META_FILE,
    _build_shards,
    _write_json_atomic,
    cache_key,
    cache_path,
    open_meta,
    resume_shards,
    shard_states,
)
from harness_builtins.dense.encoders import Encoder
from harness_builtins.dense.options import INDEX_OPTIONS

_STAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass
class DistributedResult:
    """What :func:`encode_corpus_distributed` did (the same on every rank)."""

    path: Path
    passages: int
    shards: int
    shard_size: int
    world_size: int
    #: rank -> the shard indices it encoded in this run.
    encoded: dict[int, list[int]] = field(default_factory=dict)
    #: shards found complete on disk before this run.
    skipped: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "cache": str(self.path),
            "passages": self.passages,
            "shards": self.shards,
            "shard_size": self.shard_size,
            "world_size": self.world_size,
            "encoded": {str(r): s for r, s in sorted(self.encoded.items())},
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


def shard_owner(shard: int, world_size: int) -> int:
    """The rank that encodes ``shard`` in a fresh run (see :func:`rank_shards`)."""
    return shard % world_size


def rank_shards(todo: Sequence[int], rank: int, world_size: int) -> list[int]:
    """The shards of the to-do list that ``rank`` encodes: every ``world_size``-th from the
    ``rank``-th, so each is encoded by exactly one rank."""
    return sorted(todo)[rank::world_size]


# --- process group -----------------------------------------------------------------------------


class _Group:
    """Rank, world size and the two collectives used here; a one-process stand-in without torch.distributed."""

    def __init__(self, dist: Any | None):
        self.dist = dist
        self.rank = dist.get_rank() if dist else 0
        self.world_size = dist.get_world_size() if dist else 1

    def gather(self, obj: Any) -> list[Any]:
        if self.dist is None:
            return [obj]
        out: list[Any] = [None] * self.world_size
        self.dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        if self.dist is None:
            return obj
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]


def init_process_group(backend: str | None = None) -> bool:
    """Join the launcher's process group (``env://``) when there is one and none is joined yet:
    ``nccl`` when CUDA is available, else ``gloo``. Returns whether this call initialised it."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized() or "WORLD_SIZE" not in os.environ:
        return False
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    return True


def _current_group() -> _Group:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return _Group(None)
    return _Group(dist if dist.is_available() and dist.is_initialized() else None)


# --- the cache, prepared by rank 0 -----------------------------------------------------------------


def _prepare(identity: str, corpus: Corpus, path: Path, shard_size: int) -> tuple[dict[str, Any], list[int]]:
    """``embed_corpus``'s opening (:func:`open_meta`, :func:`resume_shards`) before any rank
    writes, plus: every shard temporary is removed, and a complete cache missing a shard is
    reopened. Returns the meta and the shards to encode."""
    meta = open_meta(identity, corpus, path, shard_size)
    count = len(corpus)
    if meta.get("passages") != count:
        raise HarnessError(f"{path}: meta.json says {meta.get('passages')} passages, the corpus has {count}; delete it")
    # No rank of this job is writing yet, and one job builds a cache at a time: every shard
    # temporary here is a crashed run's (on any machine; a pid check would only see this one's).
    for tmp in [*path.glob(".emb-*.tmp"), *path.glob(".ids-*.tmp"), *path.glob(".f32-*.tmp")]:
        tmp.unlink(missing_ok=True)
    todo = resume_shards(path, meta)
    if meta.get("complete") and todo:
        meta["complete"] = False  # a shard was deleted or damaged: redo it
        meta.pop("finished", None)
        for stale in path.glob("index-*"):
            stale.unlink()  # built from the old vectors
        _write_json_atomic(path / META_FILE, meta)
    return meta, todo


def _finalize(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Check every shard on disk and mark the cache complete (rank 0)."""
    states = shard_states(path, meta)
    if states.missing:
        raise HarnessError(f"{path}: shard {states.missing[0]} is missing after every rank finished")
    if states.damaged:
        shard, problem = next(iter(states.damaged.items()))
        raise HarnessError(f"{path}: shard {shard} is damaged after every rank finished: {problem}")
    if not meta.get("complete") or meta.get("dim") != states.dim:
        meta = {**meta, "dim": states.dim, "complete": True, "finished": datetime.now(timezone.utc).strftime(_STAMP)}
        _write_json_atomic(path / META_FILE, meta)
    return meta


# --- encoding one rank's shards ----------------------------------------------------------------------


def _encode_shards(
    encoder: Encoder,
    corpus: Corpus,
    path: Path,
    meta: dict[str, Any],
    todo: list[int],
    *,
    chunk_size: int,
    progress: bool,
    on_shard: Callable[[int], None] | None,
) -> list[int]:
    """Encode the shards in ``todo`` with the cache's own shard loop, never writing ``meta.json``
    (a rank learns a width the meta lacks from its own vectors; rank 0 records it at the end)."""
    done: list[int] = []

    def finished(shard: int) -> None:
        done.append(shard)
        if on_shard is not None:
            on_shard(shard)

    _build_shards(encoder, corpus, path, dict(meta), chunk_size=chunk_size, progress=progress,
                  on_shard=finished, todo=todo, record_dim=False)
    return done


def _outcome(fn: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, fn()
    except HarnessError as exc:
        return False, str(exc)
    except Exception as exc:  # reported to every rank, then re-raised here
        return False, f"{type(exc).__name__}: {exc}"


def encode_corpus_distributed(
    encoder: Encoder | Callable[[], Encoder],
    corpus: Corpus,
    root: str | os.PathLike,
    *,
    shard_size: int = DEFAULT_SHARD_SIZE,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: bool = True,
    on_shard: Callable[[int], None] | None = None,
) -> DistributedResult:
    """Fill the embedding cache of ``encoder`` x ``corpus`` under ``root`` (the directory
    :func:`~harness_builtins.dense.embeddings.embed_corpus` uses) with every rank of the current
    process group (joined from the launcher's environment when not yet; one process without one).

    ``encoder`` may be a zero-argument factory. Call it on every rank with the same arguments; it
    returns on every rank once rank 0 has marked the cache complete. ``on_shard(i)`` is called on
    the rank that wrote shard ``i``. Errors on any rank raise :class:`HarnessError` on all ranks.
    """
    shard_size = INDEX_OPTIONS.declaration("shard_size").check(shard_size, "shard_size")
    started = time.perf_counter()
    init_process_group()
    group = _current_group()
    if isinstance(encoder, type) or not isinstance(encoder, Encoder):  # a factory (a class passes the protocol check)
        encoder = encoder()
        if not isinstance(encoder, Encoder):
            raise HarnessError(f"the encoder factory gave a {type(encoder).__name__}, which is not an Encoder")
    identity = encoder.identity()
    path = cache_path(root, corpus, identity)

    prepared = group.broadcast(_outcome(lambda: _prepare(identity, corpus, path, shard_size)) if group.rank == 0 else None)
    if not prepared[0]:
        raise HarnessError(prepared[1])
    meta: dict[str, Any] = prepared[1][0]
    todo: list[int] = prepared[1][1]
    if group.rank != 0 and meta["key"] != cache_key(identity, corpus.fingerprint, meta["dtype"]):
        raise HarnessError(f"rank {group.rank}: its encoder or corpus differs from rank 0's")

    skipped = sorted(set(range(meta["shards"])) - set(todo))
    assigned = rank_shards(todo, group.rank, group.world_size)
    mine = _outcome(
        lambda: _encode_shards(
            encoder, corpus, path, meta, assigned, chunk_size=chunk_size, progress=progress and group.rank == 0, on_shard=on_shard
        )
        if assigned
        else []
    )
    outcomes = group.gather(mine)  # the barrier: every rank has written its shards (or failed)
    failed = [(rank, message) for rank, (ok, message) in enumerate(outcomes) if not ok]
    if failed:
        raise HarnessError("; ".join(f"rank {rank}: {message}" for rank, message in failed))

    final = group.broadcast(_outcome(lambda: _finalize(path, meta)) if group.rank == 0 else None)
    if not final[0]:
        raise HarnessError(final[1])
    return DistributedResult(
        path=path,
        passages=meta["passages"],
        shards=meta["shards"],
        shard_size=meta["shard_size"],
        world_size=group.world_size,
        encoded={rank: list(shards) for rank, (_, shards) in enumerate(outcomes)},
        skipped=skipped,
        seconds=time.perf_counter() - started,
    )


# --- command line ------------------------------------------------------------------------------


def _local_device(options: dict[str, Any]) -> dict[str, Any]:
    """Pin each rank to its own GPU (``LOCAL_RANK``) unless the user named one."""
    import torch

    device = options.get("device", "auto")
    if torch.cuda.is_available() and device in (None, "", "auto", "cuda") and "LOCAL_RANK" in os.environ:
        return {**options, "device": f"cuda:{int(os.environ['LOCAL_RANK'])}"}
    return options


def load_retriever(name: str, options: dict[str, Any]):
    """The named dense retriever, loaded by the registry exactly as ``harness run`` loads it."""
    from harness import registry

    from harness_builtins.dense.retriever import DenseRetriever

    model = registry.load("retrievers", name, options).value
    if not isinstance(model, DenseRetriever):
        raise HarnessError(f"retriever {name!r} is not a dense retriever")
    return model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness_builtins.dense.distributed",
        description="Encode a suite's corpus for a dense retriever on every rank of a torchrun job, into one embedding cache.",
    )
    parser.add_argument("--retriever", "-r", required=True, help="dense retriever preset (e.g. dpr-multi)")
    parser.add_argument("--suite", "-s", required=True, help="suite whose corpus to encode")
    parser.add_argument("--option", "-o", dest="options", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: $HARNESS_CACHE_DIR or ~/.cache/harness")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    parser.add_argument("--summary", type=Path, default=None, help="rank 0 also writes the summary here (JSON)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    try:
        from harness import registry
        from harness.util.cache import cache_dir as default_cache_dir
        from harness.cli.common import parse_options

        from harness_builtins.dense.retriever import CACHE_SUBDIR

        options = parse_options(tuple(args.options))
        retriever = load_retriever(args.retriever, _local_device(options))
        if args.threads:
            import torch

            torch.set_num_threads(max(1, args.threads))
        suite = registry.suites().get(args.suite).load()
        root = (args.cache_dir if args.cache_dir is not None else default_cache_dir()) / CACHE_SUBDIR
        result = encode_corpus_distributed(
            retriever.encoder,
            suite.corpus,
            root,
            shard_size=retriever.shard_size,
            chunk_size=retriever.chunk_size,
            progress=not args.no_progress,
        )
    except HarnessError as exc:
        print(f"error (rank {rank}): {exc}", file=sys.stderr)
        return 1
    finally:
        _destroy()
    if rank == 0:
        summary = {"suite": args.suite, "retriever": args.retriever, **result.summary()}
        if args.summary is not None:
            args.summary.write_text(json.dumps(summary, indent=1), encoding="utf-8")
        encoded = sum(len(s) for s in result.encoded.values())
        print(
            f"{result.path}: {result.shards} shards of {result.passages} passages complete "
            f"({encoded} encoded by {result.world_size} ranks, {len(result.skipped)} already there) in {result.seconds:.1f}s"
        )
    return 0


def _destroy() -> None:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # pragma: no cover - best effort at exit
        pass


if __name__ == "__main__":
    sys.exit(main())

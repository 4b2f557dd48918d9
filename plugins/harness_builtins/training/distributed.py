"""Training under ``torchrun``: the process group, rank-0-first preparation, equal rounds of
batches, and an all-gather with gradient that accepts a different row count on each rank.

**Equal rounds.** Under DDP every process must take the same number of steps, or the collectives
of one step (the embeddings' all-gather, DDP's gradient all-reduce) wait for a process that has
finished its epoch. accelerate hands batch ``i`` of the batch sampler to process ``i mod W``; a
sampler that yields ``n`` batches with ``n mod W != 0`` gives some processes one step more (1,000
examples, batch 16, 8 processes: steps ``[8, 8, 8, 8, 8, 8, 8, 7]``). Instead, the variant's
sampler makes the epoch's *global* batches (of ``W x B`` questions: duplicate positives kept
apart and categories kept together over the whole global batch, as one process of batch ``W x B``
would have them) and :func:`split` cuts each into ``W`` consecutive slices, ``ceil`` or
``floor`` of its size over ``W``, one per process: every process takes one step per global batch,
and the gathered round is the global batch in its order, the epoch's short last batch included.
A global batch of fewer examples than processes is filled up to one example per process with the
epoch's first examples (DPR pads its last shard the same way). One process (``W = 1``) gets the
sampler's batches unchanged.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any
from datetime import timedelta

def launched_world() -> int:
    """The number of processes ``torchrun`` (or ``accelerate launch``) started, 1 without one."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def group() -> tuple[int, int]:
    """``(rank, world)`` of the process group, ``(0, 1)`` without one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def rank() -> int:
    return group()[0]


def barrier() -> None:
    """Wait for every process of the group (none without one)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def init_process_group(*, cpu: bool, timeout_seconds: int) -> None:
    """Start the process group of a ``torchrun`` launch before any work, through accelerate's
    shared state (the one the trainer uses: the same backend, ``gloo`` on CPU), with
    ``timeout_seconds`` for every collective. Nothing without a launcher."""
    if launched_world() == 1:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return
    from accelerate import PartialState

    PartialState(cpu=cpu, backend="gloo" if cpu else None, timeout=timedelta(seconds=timeout_seconds))


def broadcast(value: Any) -> Any:
    """Rank 0's ``value`` on every process (itself without a group)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


@contextlib.contextmanager
def rank_zero_first(doing: str = "preparing the data") -> Iterator[bool]:
    """Rank 0 runs the body first (downloads, caches, mining: anything written to shared files),
    the other processes wait for it, then run the body themselves (reading what rank 0 wrote).
    Yields whether this process is rank 0. When rank 0's body fails, every other process stops
    with one line saying so, naming what rank 0 was ``doing`` (rank 0 raises its own error)."""
    first = rank() == 0
    if first:
        try:
            yield True
        except BaseException as exc:
            broadcast(f"{type(exc).__name__}: {exc}"[:300])
            raise
        broadcast(None)
        return
    failed = broadcast(None)
    if failed is not None:
        from harness.errors import HarnessError

        raise HarnessError(f"rank 0 failed while {doing} ({failed}); this process stops too")
    yield False


def split(batches: list[list[int]], world: int) -> list[list[int]]:
    """The epoch's global ``batches`` (lists of example indices) cut into ``world`` consecutive
    slices each, slice ``r`` of batch ``j`` at position ``j * world + r`` (process ``r``'s ``j``-th
    step; see the module notes); unchanged for one process."""
    if world <= 1:
        return [list(b) for b in batches]
    first = [i for b in batches for i in b]
    out = []
    for batch in batches:
        batch = list(batch)
        while len(batch) < world:
            batch += first[: world - len(batch)]
        share, extra = divmod(len(batch), world)
        start = 0
        for r in range(world):
            end = start + share + (r < extra)
            out.append(batch[start:end])
            start = end
    return out


def all_gather_rows(tensor):
    """Every process's ``tensor`` (``[n_r, ...]``, ``n_r`` may differ) concatenated in rank order,
    with gradient to this process's rows (``torch.distributed.nn.all_gather`` on copies padded to
    the largest ``n_r``, padding cut off). One process: the tensor itself."""
    import torch
    import torch.distributed as dist

    _, world = group()
    if world == 1:
        return tensor
    from torch.distributed.nn.functional import all_gather

    count = torch.tensor([tensor.shape[0]], dtype=torch.long, device=tensor.device)
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    width = max(sizes)
    if width != tensor.shape[0]:
        pad = tensor.new_zeros((width - tensor.shape[0], *tensor.shape[1:]))
        tensor = torch.cat([tensor, pad], 0)
    gathered = all_gather(tensor)
    return torch.cat([g[:n] for g, n in zip(gathered, sizes)], 0)

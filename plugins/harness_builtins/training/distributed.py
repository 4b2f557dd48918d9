"""Training under ``torchrun``: the process group, rank-0-first preparation, equal rounds of
batches, and an all-gather with gradient that accepts a different row count on each rank.

**Equal rounds.** Under DDP every process must take the same number of steps, or the collectives
of one step (the embeddings' all-gather, DDP's gradient all-reduce) wait for a process that has
finished its epoch. accelerate hands batch ``i`` of the batch sampler to process ``i mod W``; a
sampler that yields ``n`` batches with ``n mod W != 0`` gives some processes one step more (1,000
examples, batch 16, 8 processes: steps ``[8, 8, 8, 8, 8, 8, 8, 7]``). :func:`rounds` keeps the
sampler's batches in rounds of ``W``, one batch per process, and splits the examples of the
``n mod W`` batches left over (the epoch's short batch among them) over the ``W`` processes in
order, ``ceil(r/W)`` or ``floor(r/W)`` each: every process takes ``ceil(n/W)`` steps. Batches of
one round may differ in size (:func:`all_gather_rows` gathers any row counts), so the global batch
of every round is, in rank order, what one process with batch ``W x B`` sees, the epoch's last short
batch included. When fewer examples than processes are left over, the round is filled up to one
example per process with the epoch's first examples (DPR pads its last shard the same way). One
process (``W = 1``) gets the sampler's batches unchanged.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import timedelta

def launched_world() -> int:
    """The number of processes ``torchrun`` (or ``accelerate launch``) started, 1 without one."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def local_rank() -> int:
    try:
        return int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        return 0


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


@contextlib.contextmanager
def rank_zero_first() -> Iterator[bool]:
    """Rank 0 runs the body first (downloads, caches, mining: anything written to shared files),
    the other processes wait for it, then run the body themselves (reading what rank 0 wrote).
    Yields whether this process is rank 0."""
    first = rank() == 0
    if not first:
        barrier()
    try:
        yield first
    finally:
        if first:
            barrier()


def rounds(batches: list[list[int]], world: int) -> list[list[int]]:
    """The epoch's ``batches`` (lists of example indices) as rounds of ``world`` batches, batch
    ``i`` for process ``i mod world`` (see the module notes); unchanged for one process."""
    if world <= 1 or not batches:
        return [list(b) for b in batches]
    whole = len(batches) - len(batches) % world
    out = [list(b) for b in batches[:whole]]
    rest = [i for b in batches[whole:] for i in b]
    if not rest:
        return out
    first = [i for b in batches for i in b]
    while len(rest) < world:
        rest = rest + first[: world - len(rest)]
    share, extra = divmod(len(rest), world)
    start = 0
    for r in range(world):
        end = start + share + (r < extra)
        out.append(rest[start:end])
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

"""Helpers for tests that spawn processes joined by a ``gloo`` group."""

from __future__ import annotations

import socket
from datetime import timedelta


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close_group(timeout_seconds: float = 120.0) -> None:
    """Wait for every process of the group, then destroy it. A process that tears its gloo
    group down while a peer still has traffic in flight can abort the peer ("terminate called
    without an active exception"); the barrier makes every process leave together. A peer that
    died shows as the barrier's error, which is left to the test's own checks."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=timeout_seconds))
    except RuntimeError:
        pass
    dist.destroy_process_group()

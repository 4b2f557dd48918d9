"""Progress bars for long steps (tqdm on stderr; silent when disabled)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def progress(iterable: Iterable[T] | None = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), or a no-op when disabled."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not enabled, dynamic_ncols=True, leave=False, **kwargs)

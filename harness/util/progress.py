"""Progress bars for long steps (tqdm on stderr; silent when disabled).

``--no-progress`` switches every bar of the process off (:func:`set_progress`), including bars of
steps that receive no ``enabled`` argument, such as downloads started by a suite's ``load()``;
``HARNESS_NO_PROGRESS=1`` does the same from the environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")

NO_PROGRESS_ENV = "HARNESS_NO_PROGRESS"
_enabled = True


def set_progress(enabled: bool) -> None:
    """Turn every progress bar of this process on or off."""
    global _enabled
    _enabled = bool(enabled)


def progress_enabled() -> bool:
    """Whether bars are shown at all (:func:`set_progress` and ``$HARNESS_NO_PROGRESS``)."""
    return _enabled and os.environ.get(NO_PROGRESS_ENV, "").strip().lower() not in {"1", "true", "yes", "on"}


def progress(iterable: Iterable[T] | None = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), or a no-op when disabled."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not (enabled and progress_enabled()), dynamic_ncols=True, leave=False, **kwargs)

"""Progress for long steps: tqdm bars on a terminal, a few plain lines otherwise, silent when disabled.

``--no-progress`` switches every bar of the process off (:func:`set_progress`), including bars of
steps that receive no ``enabled`` argument, such as downloads started by a suite's ``load()``;
``HARNESS_NO_PROGRESS=1`` does the same from the environment.

When stderr is not a terminal (a log file, a pipe, CI), no bar is drawn: a step writes no ``\\r``
and no escape code, only plain lines on stderr: one every :data:`PLAIN_INTERVAL_S` seconds while
it runs, and one when it ends (none for a step shorter than :data:`PLAIN_MIN_S`).
:func:`quiet_third_party_progress` switches off the bars of Hugging Face's libraries (hub,
transformers, datasets) for the same reason.

:func:`note` writes one line on stderr without breaking a bar being drawn (training's loss lines);
:func:`task` announces a step that has no bar of its own (``mining BM25 negatives ...``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

NO_PROGRESS_ENV = "HARNESS_NO_PROGRESS"
_enabled = True

#: Without a terminal, a running step writes a plain line at most this often (seconds).
PLAIN_INTERVAL_S = 30.0
#: Without a terminal, a step that ends sooner than this (seconds) writes nothing.
PLAIN_MIN_S = 1.0


def set_progress(enabled: bool) -> None:
    """Turn every progress bar of this process on or off (off also switches off the bars of
    Hugging Face's libraries: :func:`quiet_third_party_progress`)."""
    global _enabled
    _enabled = bool(enabled)
    if not _enabled:
        quiet_third_party_progress()


def progress_enabled() -> bool:
    """Whether bars are shown at all (:func:`set_progress` and ``$HARNESS_NO_PROGRESS``)."""
    return _enabled and os.environ.get(NO_PROGRESS_ENV, "").strip().lower() not in {"1", "true", "yes", "on"}


def stderr_is_tty() -> bool:
    """Whether stderr is a terminal (bars are drawn only there)."""
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):  # replaced by an object without isatty, or closed
        return False


def progress(iterable: Iterable[T] | None = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``) on a terminal, a
    :class:`PlainProgress` when stderr is not one, or a no-op when disabled."""
    shown = enabled and progress_enabled()
    if shown and not stderr_is_tty():
        return PlainProgress(iterable, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not shown, dynamic_ncols=True, leave=False, **kwargs)


def note(message: str) -> None:
    """One line on stderr; on a terminal written above any bar being drawn (``tqdm.write``)."""
    if stderr_is_tty():
        from tqdm.auto import tqdm

        tqdm.write(message, file=sys.stderr)
        return
    _plain(message)


@contextlib.contextmanager
def task(label: str, *, enabled: bool = True) -> Iterator[None]:
    """Announce a step with no bar of its own: ``LABEL ...`` when it starts and ``LABEL: done
    in S`` when it ends (nothing when progress is disabled)."""
    shown = enabled and progress_enabled()
    if shown:
        note(f"{label} ...")
    started = time.monotonic()
    yield
    if shown:
        note(f"{label}: done in {_duration(time.monotonic() - started)}")


def quiet_third_party_progress() -> None:
    """Switch off the bars of huggingface_hub, transformers and datasets (each one already imported
    now, and, through their environment switches, each one imported later), and
    sentence-transformers' model-card bar, which follows no switch."""
    import functools

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        with contextlib.suppress(Exception):
            from huggingface_hub.utils import disable_progress_bars

            disable_progress_bars()
    if "transformers" in sys.modules:
        with contextlib.suppress(Exception):
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
    if "datasets" in sys.modules:
        with contextlib.suppress(Exception):
            import datasets

            datasets.disable_progress_bars()
    if "sentence_transformers" in sys.modules:
        with contextlib.suppress(ImportError, AttributeError):
            from sentence_transformers.base import model_card

            if not isinstance(model_card.tqdm, functools.partial):
                model_card.tqdm = functools.partial(model_card.tqdm, disable=True)


def _plain(message: str) -> None:
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or gone: progress is never worth a failure
        pass


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


class PlainProgress:
    """The part of tqdm's interface the harness uses, for a stderr that is not a terminal: no bar,
    a plain line every :data:`PLAIN_INTERVAL_S` seconds while the step runs (``search: 400/1,000 q
    (40%), 30.2 s``) and one when it ends (``search: 1,000 q in 41.0 s``), none for a step shorter
    than :data:`PLAIN_MIN_S`."""

    disable = False

    def __init__(self, iterable: Iterable[Any] | None = None, desc: str | None = None, total: float | None = None,
                 unit: str = "it", unit_scale: bool | float = False, unit_divisor: int = 1000, initial: float = 0,
                 postfix: Any = None, **_ignored: Any):
        self.iterable = iterable
        if total is None and iterable is not None:
            with contextlib.suppress(TypeError, AttributeError):
                total = len(iterable)  # type: ignore[arg-type]
        self.desc, self.total, self.unit = desc or "working", total, unit
        self.unit_scale, self.unit_divisor = unit_scale, unit_divisor
        self.n = initial
        self.postfix = "" if postfix is None else str(postfix)
        self.start_t = self._last = time.monotonic()
        self._lines = 0
        self._closed = False

    # -- tqdm's interface -----------------------------------------------------------------------

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("this progress has no iterable")
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __len__(self) -> int:
        return int(self.total) if self.total is not None else 0

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(finished=kind is None)

    def update(self, n: float = 1) -> bool | None:
        self.n += n or 0
        now = time.monotonic()
        complete = bool(self.total) and self.n >= self.total  # the closing line says it
        if now - self._last >= PLAIN_INTERVAL_S and not complete:
            self._last = now
            self._lines += 1
            _plain(self._line(now, running=True))
            return True
        return None

    def close(self, finished: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        now = time.monotonic()
        if finished and (self._lines or now - self.start_t >= PLAIN_MIN_S):
            _plain(self._line(now, running=False))

    def reset(self, total: float | None = None) -> None:
        self.n = 0
        if total is not None:
            self.total = total

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or self.desc

    set_description_str = set_description

    def set_postfix(self, ordered_dict: Any = None, refresh: bool = True, **kwargs: Any) -> None:
        items = dict(ordered_dict or {}, **kwargs)
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def refresh(self, *args: Any, **kwargs: Any) -> None:
        pass

    def clear(self, *args: Any, **kwargs: Any) -> None:
        pass

    def display(self, *args: Any, **kwargs: Any) -> None:
        pass

    def unpause(self) -> None:
        pass

    @staticmethod
    def write(s: str, file: Any = None, end: str = "\n", nolock: bool = False) -> None:
        try:
            (file or sys.stderr).write(s + end)
            (file or sys.stderr).flush()
        except (OSError, ValueError):
            pass

    # -- the lines --------------------------------------------------------------------------------

    def _number(self, value: float) -> str:
        if self.unit_scale:
            from tqdm import tqdm

            return tqdm.format_sizeof(value, self.unit, self.unit_divisor)
        return f"{int(value):,}" if float(value).is_integer() else f"{value:,.1f}"

    def _amount(self, value: float, total: float | None = None) -> str:
        """``1,000 q``, ``400/1,000 q``, ``5.00MB/10.0MB``."""
        shown = self._number(value) if total is None else f"{self._number(value)}/{self._number(total)}"
        return shown if self.unit_scale else f"{shown} {self.unit}"

    def _line(self, now: float, *, running: bool) -> str:
        elapsed = _duration(now - self.start_t)
        extra = f" ({self.postfix})" if self.postfix else ""
        if not running:
            return f"{self.desc}: {self._amount(self.n)} in {elapsed}{extra}"
        if self.total and self.total > 0:
            done = f"{self._amount(self.n, self.total)} ({100 * self.n / self.total:.0f}%)"
        else:
            done = self._amount(self.n)
        return f"{self.desc}: {done}, {elapsed}{extra}"

"""What every ``harness`` command, built-in or a plugin's, parses the same way.

Plugins' commands (``register_commands``) use these so that ``-o``, ``--k`` and ``--no-progress``
mean the same everywhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from harness.api import MAX_K
from harness.api.options import typed
from harness.errors import HarnessError

F = TypeVar("F", bound=Callable[..., Any])


def parse_k_option(values: tuple[str, ...]) -> list[int] | None:
    """``--k 1,5,20 --k 100`` → [1, 5, 20, 100]; anything that is not a positive integer of ASCII
    digits up to :data:`MAX_K` is an error."""
    if not values:
        return None
    ks: list[int] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not (item.isascii() and item.isdigit()) or int(item) < 1:
                raise HarnessError(f"--k: {item!r} is not a positive integer (example: --k 1,5,20,100)")
            if len(item) > 6 or int(item) > MAX_K:
                raise HarnessError(f"--k: {item} is deeper than harness retrieves (at most {MAX_K})")
            ks.append(int(item))
    return ks


def _reject_constant(name: str) -> object:
    raise ValueError(name)


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def parse_options(values: tuple[str, ...] | list[str], flag: str = "--option") -> dict[str, object]:
    """``-o k1=1.2 -o name=x`` → {"k1": 1.2, "name": "x"}; values are JSON when they parse as JSON
    (numbers, true/false/null, lists), else text. A number, list or mapping keeps the text it was
    typed as (:func:`harness.api.options.typed`), so an option declared as text gets that text
    (``-o revision=6e35`` is ``"6e35"``). Not-a-number and infinite values (``NaN``,
    ``Infinity``, ``1e999``) are errors, as is a key given twice."""
    options: dict[str, object] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise HarnessError(f"{flag}: expected KEY=VALUE, got {value!r}")
        if key in options:
            raise HarnessError(f"{flag}: {key!r} is given twice")
        try:
            parsed = json.loads(raw, parse_constant=_reject_constant)
        except ValueError as exc:
            if raw.strip() in ("NaN", "Infinity", "-Infinity") or str(exc) in ("NaN", "Infinity", "-Infinity"):
                raise HarnessError(f"{flag}: {key}={raw} is not a finite number") from None
            parsed = raw
        except RecursionError:
            raise HarnessError(f"{flag}: the value of {key!r} is nested too deeply") from None
        if not _finite(parsed):
            raise HarnessError(f"{flag}: {key}={raw} is not a finite number")
        options[key] = typed(parsed, raw)  # a text option takes the text as typed (revision=6e35)
    return options


def _switch_progress(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    # every command sets it, so one in-process command's --no-progress does not carry to the next
    from harness.util.progress import set_progress

    set_progress(not value)
    return value


def no_progress_option(command: F) -> F:
    """The ``--no-progress`` flag (parameter ``no_progress``) every long-running command takes;
    it also switches off the bars of steps the command does not reach directly (downloads)."""
    return click.option(
        "--no-progress", is_flag=True, callback=_switch_progress, help="Hide progress bars."
    )(command)


def rerank_options(command: F) -> F:
    """``--rerank NAME``, ``--rerank-depth N`` and ``--rerank-option/-R KEY=VALUE`` (parameters
    ``rerank``, ``rerank_depth``, ``rerank_option``): a second stage that re-ranks the first
    stage's top N; its options are kept apart from the retriever's ``-o``."""
    from harness.api import DEFAULT_RERANK_DEPTH

    command = click.option(
        "--rerank-option", "-R", "rerank_option", multiple=True, metavar="KEY=VALUE",
        help="A re-ranker option, e.g. -R model=google/t5-large-lm-adapt (repeatable).",
    )(command)
    command = click.option(
        "--rerank-depth", type=click.IntRange(min=1, max=MAX_K), default=None,
        help=f"How many of the first stage's hits are re-ranked (default: the re-ranker's, usually {DEFAULT_RERANK_DEPTH}).",
    )(command)
    return click.option(
        "--rerank", default=None, metavar="NAME", help="Re-rank with this re-ranker (see `harness list rerankers`).",
    )(command)


"""What every ``harness`` command, built-in or a plugin's, parses the same way.

Plugins' commands (``register_commands``) use these so that ``-o``, ``--k`` and ``--no-progress``
mean the same everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from harness.errors import HarnessError

F = TypeVar("F", bound=Callable[..., Any])


def parse_k_option(values: tuple[str, ...]) -> list[int] | None:
    """``--k 1,5,20 --k 100`` → [1, 5, 20, 100]; anything that is not a positive integer is an error."""
    if not values:
        return None
    ks: list[int] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not (item.isascii() and item.isdigit()) or int(item) < 1:
                raise HarnessError(f"--k: {item!r} is not a positive integer (example: --k 1,5,20,100)")
            ks.append(int(item))
    return ks


def parse_options(values: tuple[str, ...] | list[str], flag: str = "--option") -> dict[str, object]:
    """``-o k1=1.2 -o name=x`` → {"k1": 1.2, "name": "x"}; values are JSON when they parse as JSON."""
    options: dict[str, object] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep or not key.strip():
            raise HarnessError(f"{flag}: expected KEY=VALUE, got {value!r}")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


def _switch_progress(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        from harness.util.progress import set_progress

        set_progress(False)
    return value


def no_progress_option(command: F) -> F:
    """The ``--no-progress`` flag (parameter ``no_progress``) every long-running command takes;
    it also switches off the bars of steps the command does not reach directly (downloads)."""
    return click.option(
        "--no-progress", is_flag=True, callback=_switch_progress, help="Hide progress bars."
    )(command)

"""``harness list`` and ``harness plugins``: what is installed. Never loads a model or a data set."""

from __future__ import annotations

import click

from harness.registry import KINDS, registry


@click.command("list")
@click.argument("kind", type=click.Choice(sorted(KINDS)))
def list_command(kind: str) -> None:
    """List installed retrievers, suites or metrics, one per line."""
    entries = [(_usage(spec), spec) for spec in registry(kind)]
    width = max((len(usage) for usage, _ in entries), default=0)
    for usage, spec in entries:
        marker = " [synthetic]" if getattr(spec, "synthetic", False) else ""
        click.echo(f"{usage:<{width}}  {spec.description}{marker}")


def _usage(spec) -> str:
    """``name``, or ``name:ARGUMENT`` for a spec used with an argument."""
    argument = getattr(spec, "argument", None)
    return f"{spec.name}:{argument}" if argument else spec.name


@click.command("plugins")
def plugins_command() -> None:
    """List installed plugins with their versions and hooks, and any that failed to load."""
    from harness.plugins import loaded_plugins

    loaded = loaded_plugins()
    for p in loaded.plugins:
        click.echo(f"{p.name}  {p.distribution} {p.version}  ({p.module})  hooks: {', '.join(p.hooks) or '-'}")
    for f in loaded.failures:
        click.echo(f"{f.name}  {f.distribution} {f.version}  FAILED TO LOAD: {f.error}")
    if not loaded.plugins and not loaded.failures:
        click.echo("no plugins installed")

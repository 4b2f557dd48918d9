"""``harness list`` and ``harness plugins``: what is installed. Never loads a model or a data set."""

from __future__ import annotations

import click

from harness.registry import KINDS, registry


@click.command("list")
@click.argument("kind", type=click.Choice(sorted(KINDS)))
def list_command(kind: str) -> None:
    """List what is installed of KIND (retrievers, suites, training-data, variants, ...), one per
    line with its description."""
    found = registry(kind)
    entries = [(_usage(spec), spec) for spec in found]
    width = max((len(usage) for usage, _ in entries), default=0)
    for usage, spec in entries:
        marker = " [synthetic]" if getattr(spec, "synthetic", False) else ""
        click.echo(f"{usage:<{width}}  {spec.description}{marker}")
    for name, plugins in sorted(found.conflicts.items()):
        click.echo(f"{name}  UNUSABLE: provided by {' and '.join(repr(p) for p in plugins)}")


def _usage(spec) -> str:
    """``name``, or ``name:ARGUMENT`` for a spec used with an argument."""
    argument = getattr(spec, "argument", None)
    return f"{spec.name}:{argument}" if argument else spec.name


@click.command("plugins")
def plugins_command() -> None:
    """List installed plugins with their versions and hooks, and every failure: plugins that did
    not load and hooks that raised (each plugin's registrations are collected to find them)."""
    from harness.plugins import loaded_plugins

    loaded = loaded_plugins()
    loaded.notify = None  # listed below instead of warned about
    for kind in KINDS:
        registry(kind)
    for p in loaded.plugins:
        click.echo(f"{p.name}  {p.distribution} {p.version}  ({p.module})  hooks: {', '.join(p.hooks) or '-'}")
    for f in loaded.failures:
        stage = "FAILED TO LOAD" if f.stage == "load" else f"FAILED IN {f.stage}"
        click.echo(f"{f.name}  {f.distribution} {f.version}  {stage}: {f.error}")
    if not loaded.plugins and not loaded.failures:
        click.echo("no plugins installed")

"""``harness list`` and ``harness plugins``: what is installed. Never loads a model or a data set."""

from __future__ import annotations

import click

from harness.registry import KINDS, registry


@click.command("list")
@click.argument("kind", type=click.Choice(sorted(KINDS)))
def list_command(kind: str) -> None:
    """List what is installed of KIND (retrievers, suites, training-data, variants, ...), one per
    line with its description (embeddings: name, encoder, corpus, rows, size and disk as columns)."""
    found = registry(kind)
    if kind == "embeddings":
        _table(found)
    else:
        _described(found)
    for name, plugins in sorted(found.conflicts.items()):
        click.echo(f"{name}  UNUSABLE: provided by {' and '.join(repr(p) for p in plugins)}")


def _described(found) -> None:
    entries = [(_usage(spec), spec) for spec in found]
    width = max((len(usage) for usage, _ in entries), default=0)
    for usage, spec in entries:
        marker = " [synthetic]" if getattr(spec, "synthetic", False) else ""
        click.echo(f"{usage:<{width}}  {spec.description}{marker}")


def _table(found) -> None:
    """Released embeddings as columns: name, encoder preset, corpus, rows, download size, disk
    needed once imported, then the description."""
    from harness.data.embeddings import listing_rows

    rows = listing_rows(found)
    if not rows:
        return
    header = ("name", "encoder", "corpus", "rows", "size", "disk", "description")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header) - 1)]
    right = {3, 4, 5}
    for row in (header, *rows):
        cells = [f"{c:>{w}}" if i in right else f"{c:<{w}}" for i, (c, w) in enumerate(zip(row, widths))]
        click.echo("  ".join(cells) + "  " + row[-1])


def _usage(spec) -> str:
    """``name``, or ``name:ARGUMENT`` for a spec used with an argument."""
    argument = getattr(spec, "argument", None)
    return f"{spec.name}:{argument}" if argument else spec.name


@click.command("plugins")
def plugins_command() -> None:
    """List installed plugins with their versions and hooks, and every failure on the failing
    plugin's line: a plugin that did not load (the reason), and each hook that raised, registered
    a wrong record, a name another plugin registers, or left something out (the hook and the
    error). Every registry is collected to find them."""
    from harness.plugins import loaded_plugins

    loaded = loaded_plugins()
    loaded.notify = None  # listed below instead of warned about
    clashes: dict[str, list[str]] = {}  # the first plugin of a clash: its failure is the other's
    for kind, info in KINDS.items():
        for name, owners in registry(kind).conflicts.items():
            others = " and ".join(repr(o) for o in owners[1:])
            clashes.setdefault(owners[0], []).append(
                f"  UNUSABLE IN {info.hook}: {info.noun} {name!r} is also provided by {others}"
            )
    lines: list[tuple[str, str, str]] = []
    shown = set()
    for p in loaded.plugins:
        failures = [f for f in loaded.failures if (f.name, f.distribution) == (p.name, p.distribution) and f.stage != "load"]
        shown.update(id(f) for f in failures)
        line = f"{p.name}  {p.distribution} {p.version}  ({p.module})  hooks: {', '.join(p.hooks) or '-'}"
        line += "".join(f"  FAILED IN {f.stage}: {f.error}" for f in failures) + "".join(clashes.get(p.name, ()))
        lines.append((p.name, p.distribution, line))
    unlisted: dict[tuple[str, str, str], list] = {}
    for f in loaded.failures:
        if id(f) not in shown:
            unlisted.setdefault((f.name, f.distribution, f.version), []).append(f)
    for (name, distribution, version), failures in unlisted.items():
        problems = "  ".join(
            ("FAILED TO LOAD" if f.stage == "load" else f"FAILED IN {f.stage}") + f": {f.error}" for f in failures
        )
        lines.append((name, distribution, f"{name}  {distribution} {version}  {problems}"))
    for _, _, line in sorted(lines, key=lambda item: item[:2]):
        click.echo(line)
    if not lines:
        click.echo("no plugins installed")

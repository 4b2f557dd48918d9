"""``harness reproduce``: compare result files with the published numbers they should reproduce."""

from __future__ import annotations

from pathlib import Path

import click

from harness.util.paths import default_results_dir


@click.command("reproduce")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Result files to check (default: leaderboard/results, or $HARNESS_RESULTS_DIR).")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=0.02, show_default=True, help="Largest allowed |ours - published|, as a fraction (0.02 = 2 points).")
@click.option("--check", is_flag=True, help="Exit 1 when any comparison is outside the tolerance.")
def reproduce(results_dir: Path | None, tolerance: float, check: bool) -> None:
    """Compare each result with the published numbers of its suite and retriever.

    Lists every comparison (OK or DRIFT) and the published rows a harness retriever should
    reproduce that have no result yet. Published tables come from plugins (`harness list published`).
    """
    from harness import registry
    from harness.analysis.published import checks, format_checks
    from harness.results.schema import read_results

    from harness.errors import HarnessError

    folder = results_dir or default_results_dir()
    if not folder.is_dir():
        raise HarnessError(f"--results-dir {folder}: no such folder")
    tables = list(registry.registry("published"))
    results = read_results(folder)
    done, missing = checks(tables, results)
    click.echo(format_checks(done, missing, tolerance), nl=False)
    drift = [c for c in done if not c.within(tolerance)]
    if check and drift:
        click.echo(f"{len(drift)} of {len(done)} comparisons drift by more than {100 * tolerance:g} points", err=True)
        raise click.exceptions.Exit(1)

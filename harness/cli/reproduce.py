"""``harness reproduce``: compare result files with the published numbers they should reproduce."""

from __future__ import annotations

from pathlib import Path

import click

from harness.util.paths import default_results_dir


@click.command("reproduce")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Result files to check, and where --runs/--run record theirs (default: $HARNESS_RESULTS_DIR, else results/ in the current directory; leaderboard/results for the committed leaderboard's).")
@click.option("--tolerance", type=click.FloatRange(0, 100), default=None, metavar="POINTS", help="Largest allowed |ours - published| in percentage points for every row, replacing the tables' rules (2 = two points). Before, this was a fraction: a value below 1 is read as points, so an old --tolerance 0.02 is now stricter, never looser.")
@click.option("--check", is_flag=True, help="Exit 1 when any comparison is outside its allowed difference, when nothing was compared (no result file, or none of a published row; see --allow-unpublished), or when the check is incomplete: a result file or a published table could not be read (each named in a warning), or a plugin that could provide published tables failed.")
@click.option("--allow-unpublished", is_flag=True, help="With --check, pass a folder whose results are all of configurations no table publishes (a board of synthetic suites); a folder with no result file still fails.")
@click.option("--runs", "published_runs", is_flag=True, help="First fetch, score and record every published run (`harness list runs`), then check each against its published row.")
@click.option("--run", "run_names", multiple=True, metavar="NAME", help="Like --runs, for the published run NAME only (repeatable).")
@click.option("--no-progress", is_flag=True, help="Hide progress bars (--runs).")
def reproduce(
    results_dir: Path | None, tolerance: float | None, check: bool, published_runs: bool = False,
    run_names: tuple[str, ...] = (), no_progress: bool = False, allow_unpublished: bool = False,
) -> None:
    """Compare each result with the published numbers of its suite and retriever.

    Lists every comparison (OK or DRIFT) and the published rows a harness retriever should
    reproduce that have no result yet. Published tables come from plugins (`harness list published`).

    With --runs, a published run that cannot be fetched or scored is named with its problem,
    the others are still scored and compared, and the command exits 1. With --check, nothing
    compared exits 1 too (a check pointed at the wrong folder must not pass): a folder with no
    result file, or one whose results are of no published row unless --allow-unpublished says
    that is expected.

    A result file that cannot be read or is inconsistent, a published table left out (malformed,
    or a name given twice), and a plugin that failed to load or to register its tables are each
    named in a warning and skipped alone; with --check any of them fails the command (exit 1),
    as the comparisons they would have made are missing.

    \b
    Allowed |ours - published|, in percentage points, by the table's kind:
      reproduction  (pyserini's reproductions, our own earlier results): 0.02,
                    pyserini's two-click check
      paper         (numbers printed in papers, theses, slides, READMEs): half a unit of the
                    last printed digit (81.6 allows 0.05) plus the table's stated allowance
    """
    from harness import registry
    from harness.analysis.published import checks, format_checks
    from harness.errors import HarnessError, InputFileError, warn
    from harness.plugins import loaded_plugins
    from harness.results.schema import read_results

    folder = results_dir or default_results_dir()
    reproduced = None
    if published_runs or run_names:  # the published runs are fetched, scored and recorded first
        reproduced = _reproduce_runs(folder, run_names, not no_progress)
    if not folder.is_dir():
        raise HarnessError(f"--results-dir {folder}: no such folder")
    published = registry.registry("published")
    # what may be missing from the comparisons: plugins that did not load (their tables are
    # unknown), and whatever the published tables' hooks failed on or left out (named as it happened)
    incomplete = [f.describe() for f in loaded_plugins().failures_in("load")] + list(published.failures)
    if reproduced is not None:  # with --runs, each run's result against its own published row
        tables, results = reproduced[:2]
        incomplete += registry.registry("runs").failures
    else:
        unreadable: list[InputFileError] = []

        def skip(error: InputFileError) -> None:
            warn(f"{error}; this result is not compared")
            unreadable.append(error)

        tables, results = list(published), read_results(folder, on_error=skip)
        incomplete += [str(error) for error in unreadable]
    done, missing = checks(tables, results)
    click.echo(format_checks(done, missing, tolerance), nl=False)
    drift = [c for c in done if not c.within(tolerance)]
    if check and drift:
        bound = "their tables' allowed difference" if tolerance is None else f"{tolerance:g} points"
        click.echo(f"{len(drift)} of {len(done)} comparisons drift by more than {bound}", err=True)
    if check and incomplete:
        more = f" and {len(incomplete) - 1} more (see the warnings)" if len(incomplete) > 1 else ""
        click.echo(f"the check is incomplete, what could not be read is not compared: {incomplete[0]}{more}", err=True)
    empty = not results and not incomplete  # nothing to compare at all: the wrong folder, say
    unpublished = bool(results) and not done and not allow_unpublished
    if check and not done:
        if empty:
            click.echo(f"nothing was compared: {folder} holds no result file", err=True)
        else:
            allowed = " (allowed by --allow-unpublished)" if allow_unpublished else " (--allow-unpublished passes such a folder)"
            click.echo(f"nothing was compared: none of the {len(results)} result(s) in {folder} is of a published row{allowed}", err=True)
    if reproduced is not None and reproduced[2]:  # a published run could not be scored
        raise click.exceptions.Exit(1)
    if check and (drift or incomplete or empty or unpublished):
        raise click.exceptions.Exit(1)


def _reproduce_runs(folder: Path, names: tuple[str, ...], progress: bool):
    """``--runs``: fetch, score and record the published runs ``names`` (all when empty), one line
    each; the tables cut to the rows they reproduce, and their results. Each run is checked on its
    own: one that cannot be fetched or scored (offline and not downloaded, a malformed file, even
    an internal error) is named with its problem, the others are scored and compared, and the
    command exits 1 at the end."""
    from harness import registry
    from harness.results.schema import check_results_dir, read_result
    from harness.runfiles.published import Reproduced, reproduce_runs, runs_by_name

    chosen = runs_by_name(names)  # every name checked before any work
    check_results_dir(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def warn(message: str) -> None:
        click.echo(f"harness: warning: {message}", err=True)

    def report(item) -> None:
        if item.error is not None:
            click.echo(f"harness: published run {item.run.name}: {item.error}", err=True)
        else:
            click.echo(f"published run {item.run.name}: result written to {item.path}")

    tables = list(registry.registry("published"))
    done = []
    for run in chosen:  # each run on its own: one that fails, whatever the failure, stops no other
        try:
            done += reproduce_runs([run], folder, tables, progress=progress, warn=warn, on_done=report)
        except Exception as exc:  # noqa: BLE001 - an internal error of one run is reported with the run's name
            item = Reproduced(run, error=f"internal error: {type(exc).__name__}: {exc}")
            report(item)
            done.append(item)
    failed = [item for item in done if item.error is not None]
    if failed:
        click.echo(f"{len(failed)} of {len(done)} published runs could not be scored (see above)", err=True)
    tables = [item.table for item in done if item.table is not None]
    results = [read_result(item.path) for item in done if item.path is not None]
    return tables, results, failed

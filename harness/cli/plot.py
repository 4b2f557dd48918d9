"""``harness plot``: draw top-k curves, per-part bars, popularity buckets or a heatmap from results."""

from __future__ import annotations

from pathlib import Path

import click

from harness.util.paths import default_results_dir


@click.command("plot")
@click.argument("kind", type=click.Choice(["topk", "parts", "buckets", "matrix"]))
@click.argument("results", nargs=-1)
@click.option("--suite", default=None, help="The suite whose results to draw (all of them when no RESULTS are named); required for names.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where results are read (default: $HARNESS_RESULTS_DIR, else results/ in the current directory; leaderboard/results for the committed leaderboard's).")
@click.option("--k", "k", type=click.IntRange(1, 10_000), default=20, show_default=True, help="The cutoff of parts, buckets and matrix plots.")
@click.option("--rows", default="retriever", show_default=True, help="matrix: what the rows are: retriever (each configuration's label, as compare shows it), suite or a parameter (dotted when nested).")
@click.option("--columns", default="suite", show_default=True, help="matrix: what the columns are.")
@click.option("--output", "output_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder to write the images to.")
@click.option("--format", "formats", type=click.Choice(["png", "svg"]), multiple=True, help="Image formats (default: png and svg).")
def plot(kind, results, suite, results_dir, k, rows, columns, output_dir, formats):
    """Draw KIND from RESULTS (result files, or labels and retriever names with --suite), or from
    every result of --suite (every result, for matrix). Systems are labelled as `harness compare`
    labels them (a trained checkpoint by variant, training data and digest); two results that would
    be one series or one matrix cell are refused, naming both files.

    \b
    topk     top-k accuracy for k = 1 .. depth, one line per system
    parts    top-k per part, grouped bars (e.g. EntityQuestions relations); a grid beyond 10 systems
    buckets  top-k per popularity bucket, rare to frequent (suites whose parts are bucket0, bucket1, ...)
    matrix   heatmap of top-k, e.g. --rows query_model --columns passage_model on one suite
    """
    from harness.analysis import plots
    from harness.analysis.compare import find_result
    from harness.errors import HarnessError
    from harness.results.selection import latest
    from harness.results.schema import read_results

    folder = results_dir or default_results_dir()
    pool = read_results(folder) if (not results or suite) else []
    if results:
        chosen = [find_result(ref, suite=suite, results=pool) for ref in results]
    else:
        chosen = [r for r in latest(pool) if suite is None or r.suite == suite]
        if kind != "matrix" and suite is None:
            raise HarnessError("name the suite to draw with --suite (or name result files)")
        if not chosen:
            raise HarnessError(f"no results{' of suite ' + suite if suite else ''} in {folder}")
    if kind == "topk":
        figure = plots.topk_plot(chosen)
    elif kind in ("parts", "buckets"):
        figure = plots.parts_plot(chosen, k, kind=kind)
    else:
        figure = plots.matrix_plot(chosen, k, rows=rows, columns=columns)
    from harness.util.filenames import file_stem

    stem = f"matrix-top{k}" if kind == "matrix" else f"{file_stem(chosen[0].suite)}-{kind}" + (f"-top{k}" if kind != "topk" else "")
    for path in plots.write_plot(figure, output_dir / stem, formats or plots.FORMATS):
        click.echo(f"wrote {path}")

"""``harness run``: evaluate a retriever on a suite, print the table, write the result file."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import no_progress_option, parse_k_option, parse_options, rerank_options
from harness.util.paths import default_results_dir


def save_rankings(evaluation, stem: Path, *, tag: str) -> list[Path]:
    """Write an evaluation's rankings as ``STEM.trec`` and ``STEM.dpr.json`` (DPR's results format,
    with passage titles, texts and has_answer flags)."""
    from harness.runfiles.writers import write_dpr_json, write_trec
    from harness.runfiles.readers import Run

    suite = evaluation.suite
    run = Run.from_rankings(suite.questions, evaluation.rankings)
    tag = "".join(c if not c.isspace() else "_" for c in tag) or "harness"
    return [
        write_trec(stem.parent / f"{stem.name}.trec", run, tag=tag),
        write_dpr_json(stem.parent / f"{stem.name}.dpr.json", run, suite.questions, suite.corpus, mode=suite.match),
    ]


@click.command("run")
@click.option("--retriever", "-r", required=True, help="Retriever name (see `harness list retrievers`).")
@click.option("--suite", "-s", required=True, help="Suite name (see `harness list suites`).")
@click.option("--k", "k_values", multiple=True, metavar="K[,K...]", help="Cutoffs for top-k (default: the suite's, usually 1,5,20,100).")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="A retriever option, e.g. -o k1=1.2 (repeatable).")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric name (default: accuracy; repeatable).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where to write the result file (default: $HARNESS_RESULTS_DIR, else results/ in the current directory; give leaderboard/results to add the run to the committed leaderboard).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where indexes are cached (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads for indexing and search (default: all cores).")
@click.option("--replace", is_flag=True, help="Replace a result file of this configuration even when it covers more (other cutoffs, deeper, another question set).")
@click.option("--save-run", is_flag=True, help="Also write the ranking as a TREC run and a DPR results JSON.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True, help="Where --save-run writes.")
@rerank_options
@no_progress_option
def run(
    retriever, suite, k_values, options, metrics, results_dir, cache_dir, threads, replace, save_run, runs_dir,
    rerank, rerank_depth, rerank_option, no_progress,
) -> None:
    """Evaluate RETRIEVER on SUITE with the DPR protocol and record the result.

    Example: harness run --retriever bm25 --suite demo

    With --rerank NAME the retriever's top --rerank-depth hits are re-ranked (see `harness list
    rerankers`); -R KEY=VALUE sets the re-ranker's options, -o the retriever's.
    """
    options = parse_options(options)
    reranker_options = parse_options(rerank_option, flag="--rerank-option")
    from harness.evaluate import run_evaluation
    from harness.scoring.metrics import DEFAULT_METRIC
    from harness.results.report import format_result_table
    from harness.results.schema import check_results_dir, write_result

    results_dir = check_results_dir(results_dir or default_results_dir())  # before any work
    if save_run:
        check_results_dir(runs_dir, flag="--runs-dir")
    evaluation = run_evaluation(
        retriever,
        suite,
        k=parse_k_option(k_values),
        options=options,
        metrics=list(metrics) or [DEFAULT_METRIC],
        cache_dir=cache_dir,
        threads=threads,
        show_progress=not no_progress,
        rerank=rerank,
        rerank_options=reranker_options,
        rerank_depth=rerank_depth,
    )
    result = evaluation.result
    click.echo(format_result_table(result))  # shown even when the result cannot be written
    path = write_result(result, results_dir, replace=replace)
    if save_run:
        tag = retriever if rerank is None else f"{retriever}+{rerank}"
        for saved in save_rankings(evaluation, runs_dir / path.stem, tag=tag):
            click.echo(f"run written to {saved}")
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in result["timings"].items())
    click.echo(f"\ntimings: {timings}")
    click.echo(f"result written to {path}")

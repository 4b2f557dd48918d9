"""``harness score``: score another system's run file and record it like ``harness run``."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import no_progress_option, parse_k_option, parse_options, rerank_options
from harness.util.paths import default_results_dir


class _FormatOption(click.Option):
    """``--format``, whose help lists the registered run formats (read when help is shown)."""

    def get_help_record(self, ctx):
        from harness.runfiles.registered import spellings

        self.help = f"Run format: {', '.join(sorted(spellings()))} (default: detected from the file; `harness list run-formats`)."
        return super().get_help_record(ctx)


@click.command("score")
@click.option("--suite", "-s", default=None, help="Suite the run answers (see `harness list suites`); a published run's own by default.")
@click.option("--run", "run_file", required=True, metavar="FILE|NAME", help="The run file, or a published run's name (`harness list runs`; published:NAME always means the published run).")
@click.option("--format", "fmt", cls=_FormatOption, default=None, metavar="FORMAT", help="Run format (default: detected from the file).")
@click.option("--member", default=None, metavar="NAME", help="The member of a .tar.gz run to read (default: its one .json member).")
@click.option("--name", default=None, help="Name for the leaderboard row (default: the file name, or the published run's name).")
@click.option("--k", "k_values", multiple=True, metavar="K[,K...]", help="Cutoffs for top-k (default: the suite's).")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric name (default: accuracy; repeatable).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where to write the result file (default: $HARNESS_RESULTS_DIR, else results/ in the current directory; give leaderboard/results to add the run to the committed leaderboard).")
@click.option("--replace", is_flag=True, help="Replace a result file of this configuration even when it covers more.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where a re-ranker caches scores (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@rerank_options
@no_progress_option
def score(
    suite, run_file, fmt, member, name, k_values, metrics, results_dir, replace, cache_dir, rerank, rerank_depth, rerank_option,
    no_progress,
) -> None:
    """Score RUN on SUITE with the DPR protocol and record the result.

    Formats (`harness list run-formats`; plugins add more): TREC (qid Q0 docid rank score tag),
    DPR results JSON, pyserini DPR-run JSON, UPR's and Rankify's released runs, and other tools'
    runs: Tevatron (qid TAB docid TAB score), ranx JSON, FlashRAG's saved items, Rankify's saved
    documents (rankify-dataset; its re-ranked contexts: rankify-reranked); gzip and .tar.gz files
    are read as a stream. Passage text
    carried by the file is scored directly; otherwise passages are looked up in the suite's
    corpus. With --rerank NAME each question's top --rerank-depth passages are re-ranked first
    (-R KEY=VALUE sets the re-ranker's options).

    --run NAME scores a published run (fetched into the data folder if need be) on its suite. An
    existing file of that name wins (with a warning); --run published:NAME always means the run.
    """
    from harness.results.report import format_result_table
    from harness.results.schema import check_results_dir, write_result
    from harness.runfiles.score import score_file
    from harness.scoring.metrics import DEFAULT_METRIC

    def warn(message: str) -> None:
        click.echo(f"harness: warning: {message}", err=True)

    reranker_options = parse_options(rerank_option, flag="--rerank-option")
    results_dir = check_results_dir(results_dir or default_results_dir())  # before any work
    from harness.errors import HarnessError
    from harness.runfiles.published import resolve_run_argument, score_published_run

    published = resolve_run_argument(run_file, warn)
    options = dict(
        metrics=list(metrics) or [DEFAULT_METRIC], warn=warn, rerank=rerank, rerank_options=reranker_options,
        rerank_depth=rerank_depth, cache_dir=cache_dir,
    )
    if published is not None:
        if fmt is not None:
            raise HarnessError(f"--format: published run {published.name!r} has its format in its spec ({published.format})")
        if member is not None:
            raise HarnessError(f"--member: published run {published.name!r} has its member in its spec")
        result = score_published_run(
            published, suite=suite, name=name, k=parse_k_option(k_values), progress=not no_progress, **options
        )
    else:
        if suite is None:
            raise click.UsageError("--suite is required with a run file")
        result = score_file(
            suite, Path(run_file), format=fmt, member=member, name=name, k=parse_k_option(k_values), show_progress=not no_progress, **options
        )
    click.echo(format_result_table(result))  # shown even when the result cannot be written
    path = write_result(result, results_dir, replace=replace)
    click.echo(f"result written to {path}")

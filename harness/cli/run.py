"""``harness run``: evaluate a retriever on a suite, print the table, write the result file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.errors import HarnessError
from harness.paths import default_results_dir


def parse_k_option(values: tuple[str, ...]) -> list[int] | None:
    """``--k 1,5,20 --k 100`` → [1, 5, 20, 100]; anything that is not a positive integer is an error."""
    if not values:
        return None
    ks: list[int] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item.isdigit() or int(item) < 1:
                raise HarnessError(f"--k: {item!r} is not a positive integer (example: --k 1,5,20,100)")
            ks.append(int(item))
    return ks


def parse_options(values: tuple[str, ...]) -> dict[str, object]:
    """``-o k1=1.2 -o name=x`` → {"k1": 1.2, "name": "x"}; values are JSON when they parse as JSON."""
    options: dict[str, object] = {}
    for value in values:
        key, sep, raw = value.partition("=")
        if not sep or not key.strip():
            raise HarnessError(f"--option: expected KEY=VALUE, got {value!r}")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw
    return options


def save_rankings(evaluation, stem: Path, *, tag: str) -> list[Path]:
    """Write an evaluation's rankings as ``STEM.trec`` and ``STEM.dpr.json`` (DPR's results format,
    with passage titles, texts and has_answer flags)."""
    from harness.run_writers import write_dpr_json, write_trec
    from harness.runs import Run

    suite = evaluation.suite
    run = Run.from_rankings(suite.questions, evaluation.rankings)
    tag = "".join(c if not c.isspace() else "_" for c in tag) or "harness"
    return [
        write_trec(stem.parent / f"{stem.name}.trec", run, tag=tag),
        write_dpr_json(stem.parent / f"{stem.name}.dpr.json", run, suite.questions, suite.corpus, mode=suite.match),
    ]


@click.command("run")
@click.option("--retriever", "-r", default=None, help="Retriever name (see `harness list retrievers`).")
@click.option("--suite", "-s", required=True, help="Suite name (see `harness list suites`).")
@click.option("--k", "k_values", multiple=True, metavar="K[,K...]", help="Cutoffs for top-k (default: the suite's, usually 1,5,20,100).")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="A retriever option, e.g. -o k1=1.2 (repeatable).")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric name (default: accuracy; repeatable).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where to write the result file (default: leaderboard/results, or $HARNESS_RESULTS_DIR).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where indexes are cached (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads for indexing and search (default: all cores).")
@click.option("--query-encoder", default=None, help="Encoder adaptation: this model's question encoder (with --passage-encoder; a dense preset or a directory).")
@click.option("--passage-encoder", default=None, help="Encoder adaptation: this model's passage encoder (with --query-encoder).")
@click.option("--save-run", is_flag=True, help="Also write the ranking as a TREC run and a DPR results JSON.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True, help="Where --save-run writes.")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def run(retriever, suite, k_values, options, metrics, results_dir, cache_dir, threads, query_encoder, passage_encoder, save_run, runs_dir, no_progress) -> None:
    """Evaluate RETRIEVER on SUITE with the DPR protocol and record the result.

    Example: harness run --retriever bm25 --suite demo
    """
    options = parse_options(options)
    if query_encoder or passage_encoder:
        # Sugar for the dense plugin's `adapt` retriever.
        if retriever or not (query_encoder and passage_encoder):
            raise HarnessError("--query-encoder and --passage-encoder go together, instead of --retriever")
        retriever = "adapt"
        options.update(query_encoder=query_encoder, passage_encoder=passage_encoder)
    if not retriever:
        raise HarnessError("--retriever is required (see `harness list retrievers`)")
    from harness.evaluate import run_evaluation
    from harness.report import format_result_table
    from harness.results import write_result

    evaluation = run_evaluation(
        retriever,
        suite,
        k=parse_k_option(k_values),
        options=options,
        metrics=list(metrics) or ["accuracy"],
        cache_dir=cache_dir,
        threads=threads,
        show_progress=not no_progress,
    )
    result = evaluation.result
    path = write_result(result, results_dir or default_results_dir())
    click.echo(format_result_table(result))
    if save_run:
        for saved in save_rankings(evaluation, runs_dir / path.stem, tag=retriever):
            click.echo(f"run written to {saved}")
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in result["timings"].items())
    click.echo(f"\ntimings: {timings}")
    click.echo(f"result written to {path}")

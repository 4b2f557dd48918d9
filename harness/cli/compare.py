"""``harness compare``: confidence intervals and paired significance tests from result files."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.cli.common import parse_k_option
from harness.util.paths import default_results_dir


@click.command("compare")
@click.argument("results", nargs=-1, required=True)
@click.option("--suite", default=None, help="The suite, when RESULTS are retriever names looked up in --results-dir.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where names are looked up (default: $HARNESS_RESULTS_DIR, else results/ in the current directory; leaderboard/results for the committed leaderboard's).")
@click.option("--baseline", default=None, help="Compare every other system with this one only (its result file, or its label as shown), instead of every pair.")
@click.option("--k", "k_values", multiple=True, help="Cutoffs (default: those of the first result).")
@click.option("--mrr-k", type=int, default=None, help="Cutoff of the MRR test (default: the deepest --k).")
@click.option("--seed", type=click.IntRange(min=0, max=2**32 - 1), default=0, show_default=True, help="Seed of the resampling; the same seed gives the same numbers.")
@click.option("--resamples", type=click.IntRange(1, 1_000_000), default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--permutations", type=click.IntRange(1, 1_000_000), default=10_000, show_default=True, help="Randomisation-test permutations.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True, help="Confidence level of the intervals.")
@click.option("--by-part", is_flag=True, help="Also print each part's intervals, and each pair's per-part differences with their paired tests (suites with parts).")
@click.option("--seen-from", "seen_from", multiple=True, type=click.Path(dir_okay=False, path_type=Path), help="Training data (DPR JSON, JSONL or question files): also report accuracy on questions seen and unseen in it.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON instead of tables.")
def compare_command(results, suite, results_dir, baseline, k_values, mrr_k, seed, resamples, permutations, confidence, by_part, seen_from, as_json):
    """Compare RESULTS (result files, or labels and retriever names with --suite) on one suite.
    A re-ranked result may be named by its two stages alone (`bm25 » upr`, `bm25+upr`) when one
    configuration of them is there.

    Each system's top-k gets a bootstrap confidence interval (questions resampled within each part),
    each pair an exact McNemar test per cutoff and a paired randomisation test of MRR, Holm-corrected
    across every test made. Results of different question sets are refused.
    """
    from harness.analysis.compare import compare, format_comparison, load_systems

    systems = load_systems(results, suite=suite, results_dir=results_dir or default_results_dir())
    comparison = compare(
        systems, ks=parse_k_option(k_values), baseline=baseline, mrr_k=mrr_k, seed=seed,
        resamples=resamples, permutations=permutations, confidence=confidence, by_part=by_part,
    )
    seen = None
    if seen_from:
        from harness.analysis.seen import format_seen, seen_unseen

        seen = seen_unseen(systems, list(seen_from), ks=comparison.ks)
    from harness.analysis.ceiling import ceiling_of, format_ceiling

    ceilings = [c for c in (ceiling_of(s.result, comparison.ks, s.label) for s in systems) if c is not None]
    if as_json:
        data = comparison.to_json()
        if seen is not None:
            data["seen_unseen"] = seen.to_json()
        if ceilings:
            data["rerank_ceiling"] = [c.to_json() for c in ceilings]
        click.echo(json.dumps(data, indent=1))
        return
    click.echo(format_comparison(comparison, by_part=by_part), nl=False)
    if ceilings:
        click.echo("\n" + format_ceiling(ceilings), nl=False)
    if seen is not None:
        click.echo("\n" + format_seen(seen), nl=False)

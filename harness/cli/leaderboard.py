"""``harness leaderboard``: regenerate (or check) the markdown leaderboard from result files."""

from __future__ import annotations

from pathlib import Path

import click

from harness.errors import HarnessError
from harness.util.paths import LEADERBOARD_FILE, default_results_dir


@click.command("leaderboard")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Result files to read (default: leaderboard/results, or $HARNESS_RESULTS_DIR).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=LEADERBOARD_FILE, show_default=True, help="The markdown file to write.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when OUTPUT differs from what the results give.")
def leaderboard(results_dir: Path | None, output: Path, check: bool) -> None:
    """Regenerate the markdown leaderboard from result files."""
    from harness.util.atomic import write_text_atomic
    from harness.results.leaderboard import render
    from harness.results.schema import read_results

    results_dir = results_dir or default_results_dir()
    results = read_results(results_dir)
    markdown = render(results, output_dir=output.parent.resolve(), results_dir=results_dir.resolve())
    if check:
        try:
            current = output.read_text(encoding="utf-8")
        except OSError:
            raise HarnessError(f"{output}: cannot read the leaderboard to check it") from None
        if current != markdown:
            click.echo(f"{output} is out of date with {results_dir}: run `harness leaderboard`", err=True)
            raise click.exceptions.Exit(1)
        click.echo(f"{output} is up to date ({len(results)} result files)")
        return
    write_text_atomic(output, markdown)
    click.echo(f"wrote {output} from {len(results)} result files")

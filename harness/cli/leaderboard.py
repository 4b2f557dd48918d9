"""``harness leaderboard``: regenerate (or check) the markdown leaderboard, its plots and the
HTML board from result files (:func:`harness.board.build_board`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.errors import HarnessError
from harness.util.paths import LEADERBOARD_FILE, LEADERBOARD_RESULTS


@click.command("leaderboard")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help=f"Result files to read (default: the committed board's {LEADERBOARD_RESULTS}; $HARNESS_RESULTS_DIR does not change it).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help=f"The markdown file to write (default: {LEADERBOARD_FILE}; required with another results folder).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when OUTPUT, its plots or its HTML board differ from what the results give.")
@click.option("--force", is_flag=True, help="Write even when rows of the current OUTPUT would disappear.")
def leaderboard(results_dir: Path | None, output: Path | None, check: bool, force: bool) -> None:
    """Regenerate the markdown leaderboard, its plots and the HTML board from result files.

    By default it builds (or checks) the project's committed board, leaderboard/README.md, from
    leaderboard/results. Runs do not go there by default (`harness run` and `harness score` write
    to results/, or $HARNESS_RESULTS_DIR): to add a run to the committed board, give it
    `--results-dir leaderboard/results`, then run `harness leaderboard`. For a board of your own
    results elsewhere, pass both options, e.g.
    `harness leaderboard --results-dir results --output results/README.md`.

    The HTML board (sortable, filterable, each row opening into its parts; no network needed to
    view it) is written into html/ next to OUTPUT; --check compares it too.

    The leaderboard never loses rows silently: when results that OUTPUT shows are gone from the
    results folder, nothing is written and the missing ones are named (--force writes anyway).
    """
    from harness.board import build_board
    from harness.results.report import one_line

    results_dir = results_dir or LEADERBOARD_RESULTS
    if output is None:
        if results_dir.resolve() != LEADERBOARD_RESULTS.resolve():
            raise HarnessError(
                f"results folder {results_dir} is not the project's leaderboard/results: name the markdown "
                f"file to write with --output (the project's {LEADERBOARD_FILE} is left alone)"
            )
        output = LEADERBOARD_FILE
    board = build_board(results_dir, output)
    for old, new in sorted(board.superseded, key=lambda pair: str(pair[0].path)):
        click.echo(
            f"harness: note: {one_line(old.path)} is not shown: {one_line(new.path)} holds the same configuration "
            f"and is newer by its recorded time ('created')", err=True,
        )
    counts = f"{len(board.results)} result files"
    if check:
        problems = board.check()
        if problems:
            click.echo(problems[0], err=True)
            raise click.exceptions.Exit(1)
        note = board.plots_note()
        click.echo(
            f"{output} is up to date ({counts}, {len(board.plots)} plots, {len(board.pages)} HTML pages)"
            + (f"; {note}" if note else "")
        )
        return
    board.write(force=force)
    click.echo(
        f"wrote {output}, {len(board.plots)} plots in {board.plot_dir} and {len(board.pages)} HTML pages in "
        f"{board.html_dir} from {counts}"
    )

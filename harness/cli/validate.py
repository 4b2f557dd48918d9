"""``harness validate``: result files checked by recomputation (:mod:`harness.results.validation`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.util.paths import LEADERBOARD_RESULTS

BOARD_HELP = (f"The board's results folder a configuration is compared with (default: the committed {LEADERBOARD_RESULTS}, "
              "when there).")


def board_option(function):
    function = click.option("--no-board", is_flag=True, help="Compare with no board.")(function)
    return click.option("--board", type=click.Path(file_okay=False, path_type=Path), default=None, help=BOARD_HELP)(function)


def board_folder(board: Path | None, no_board: bool) -> Path | None:
    if no_board:
        return None
    return board if board is not None else LEADERBOARD_RESULTS


@click.command("validate")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@board_option
def validate_command(results: tuple[Path, ...], board: Path | None, no_board: bool) -> None:
    """Check RESULT files (a folder: its *.json) by recomputation: the schema; the suite's
    questions fingerprint, parts and question ids against the suite as its spec pins it; every
    metric, per part and macro, recomputed from the first-hit ranks; the file name against the
    configuration; the versions and machine recorded; no control characters or texts over 2,000
    characters; at most 10 MB; and a configuration already on the board with numbers more than
    0.02 points apart, naming both files.

    Prints one line per problem (FILE: FIELD ...) and exits 2 when any file has one.
    """
    from harness.errors import HarnessError
    from harness.results.validation import result_paths, validate_files

    paths = result_paths(results)
    if not paths:
        raise HarnessError(f"no result files in {', '.join(map(str, results))}")
    reports = validate_files(paths, board=board_folder(board, no_board))
    bad = [report for report in reports if not report.ok]
    for report in bad:
        for line in report.lines():
            click.echo(line)
    if bad:
        raise HarnessError(f"{len(bad)} of {len(reports)} result files have problems (named above)")
    click.echo(f"{len(reports)} result file{'s' if len(reports) != 1 else ''} valid")

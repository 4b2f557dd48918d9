"""``harness results``: result files from elsewhere (``pull``, :mod:`harness.results.pull`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.validate import BOARD_HELP


@click.group("results")
def results_group() -> None:
    """Result files from elsewhere."""


@results_group.command("pull")
@click.argument("source")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--board", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=BOARD_HELP.replace("(default: the committed leaderboard/results, when there)", "(default: none)"))
def pull_command(source: str, directory: Path, board: Path | None) -> None:
    """Fetch the results repository SOURCE (a git URL or local repository, cloned shallowly; a
    local folder; or a Hugging Face dataset id, owner/name or hf:ID), validate every *.json in it
    as `harness validate` does, and copy the valid ones into DIR under their canonical names;
    the others are named with their problems. Then `harness compare --results-dir DIR` and
    `harness leaderboard --results-dir DIR --output DIR/README.md` read them.
    """
    from harness.errors import HarnessError
    from harness.results.pull import pull_results
    from harness.results.report import one_line

    report = pull_results(source, directory, board=board)
    for name, problems in report.refused:
        for problem in problems:
            click.echo(f"refused {name}: {one_line(problem)}", err=True)
    for older, newer in report.superseded:
        click.echo(f"left out {older}: {newer} holds the same configuration and is newer ('created')", err=True)
    for name, destination in report.kept:
        click.echo(f"kept {name} as {destination}")
    found = len(report.kept) + len(report.refused) + len(report.superseded)
    if not report.kept:
        raise HarnessError(f"{source}: no valid result file ({found} *.json files found, {len(report.refused)} refused)")
    click.echo(f"{len(report.kept)} of {found} result files kept in {directory}"
               + (f"; {len(report.refused)} refused (named above)" if report.refused else ""))

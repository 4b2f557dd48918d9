"""``harness leaderboard``: regenerate (or check) the markdown leaderboard, its plots and the
HTML board from result files."""

from __future__ import annotations

import re
from pathlib import Path

import click

from harness.errors import HarnessError
from harness.util.paths import LEADERBOARD_FILE, LEADERBOARD_RESULTS

#: The leaderboard's plots live in this folder next to the markdown file.
PLOT_DIR = "plots"
#: The HTML board (:mod:`harness.results.html`) lives in this folder next to the markdown file.
HTML_DIR = "html"

#: A link to a result file; its text is the file's name as markdown writes it (escapes included).
_LINK = re.compile(r"\[((?:\\.|[^\[\]\\\n])+?\.json)\]\(")


def _plot_svgs(plots: dict, plot_dir: Path) -> dict[str, list[tuple[str, str]]]:
    """Each suite's plots as ``(stem, SVG text)``, read from the plot folder (the files the
    plot check compared, or that were just written)."""
    svgs: dict[str, list[tuple[str, str]]] = {}
    for stem, plot in plots.items():
        path = plot_dir / f"{stem}.svg"
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HarnessError(f"{path}: cannot read the plot: {getattr(exc, 'strerror', None) or exc}") from None
        svgs.setdefault(plot.suite, []).append((stem, text))
    return svgs


def _rows(markdown: str) -> set[str]:
    """The result files a leaderboard links to (one per row), by their names as the markdown writes them."""
    return set(_LINK.findall(markdown))


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
    from harness import registry
    from harness.analysis.plots import drawn_with, standard_plots, sync_plot_dir
    from harness.results.html import INDEX, page_names, render_html, sync_html_dir
    from harness.results.leaderboard import newest, render, sections
    from harness.results.report import one_line
    from harness.results.schema import read_results
    from harness.util.atomic import write_text_atomic

    results_dir = results_dir or LEADERBOARD_RESULTS
    if output is None:
        if results_dir.resolve() != LEADERBOARD_RESULTS.resolve():
            raise HarnessError(
                f"results folder {results_dir} is not the project's leaderboard/results: name the markdown "
                f"file to write with --output (the project's {LEADERBOARD_FILE} is left alone)"
            )
        output = LEADERBOARD_FILE
    if not results_dir.is_dir():
        raise HarnessError(f"--results-dir {results_dir}: no such folder")
    results = read_results(results_dir)
    chosen, superseded = newest(results)
    for old, new in sorted(superseded, key=lambda pair: str(pair[0].path)):
        click.echo(
            f"harness: note: {one_line(old.path)} is not shown: {one_line(new.path)} holds the same configuration "
            f"and is newer by its recorded time ('created')", err=True,
        )
    plots = standard_plots(chosen)
    plot_dir = output.parent / PLOT_DIR
    images: dict[str, list[str]] = {}
    for stem, plot in plots.items():
        images.setdefault(plot.suite, []).append(f"{PLOT_DIR}/{stem}.svg")
    html_dir = output.parent / HTML_DIR
    published = list(registry.registry("published"))
    board = sections(results, published)
    markdown = render(
        results, output_dir=output.parent.resolve(), results_dir=results_dir.resolve(),
        published=published, plots=images, board=board, html=f"{HTML_DIR}/{INDEX}",
        pages={suite: f"{HTML_DIR}/{name}" for suite, name in page_names([s.suite for s in board]).items()},
    )
    try:
        current = output.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{output}: cannot read the leaderboard: {getattr(exc, 'strerror', None) or exc}") from None
    if check:
        if current is None:
            raise HarnessError(f"{output}: no leaderboard to check; run `harness leaderboard`")
        if current != markdown:
            click.echo(f"{output} is out of date with {results_dir}: run `harness leaderboard`", err=True)
            raise click.exceptions.Exit(1)
        problems = sync_plot_dir(plots, plot_dir, check=True)
        if problems:
            click.echo(f"{plot_dir} is out of date: {'; '.join(problems)}: run `harness leaderboard`", err=True)
            raise click.exceptions.Exit(1)
        pages = render_html(board, output_dir=html_dir.resolve(), plots=_plot_svgs(plots, plot_dir))
        problems = sync_html_dir(pages, html_dir, check=True)
        if problems:
            click.echo(f"{html_dir} is out of date: {'; '.join(problems)}: run `harness leaderboard`", err=True)
            raise click.exceptions.Exit(1)
        import matplotlib

        version = drawn_with(plot_dir)
        note = (
            f"; plots drawn with matplotlib {version}, here {matplotlib.__version__}: their data and files checked, not a fresh drawing"
            if plots and version != matplotlib.__version__ else ""
        )
        click.echo(f"{output} is up to date ({len(results)} result files, {len(plots)} plots, {len(pages)} HTML pages){note}")
        return
    from harness.results.report import markdown_text

    # a row whose file is still there was superseded by a newer result of its configuration (the
    # section's note names it): not lost
    present = {markdown_text(p.name) for p in results_dir.glob("*.json")}
    lost = sorted(_rows(current) - _rows(markdown) - present) if current is not None else []
    if lost and not force:
        shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        raise HarnessError(
            f"{output} would lose {len(lost)} row(s) whose result files are not in {results_dir}: {shown}; "
            f"nothing written (--force writes anyway)"
        )
    sync_plot_dir(plots, plot_dir, check=False)
    pages = render_html(board, output_dir=html_dir.resolve(), plots=_plot_svgs(plots, plot_dir))
    sync_html_dir(pages, html_dir, check=False)
    write_text_atomic(output, markdown)
    click.echo(
        f"wrote {output}, {len(plots)} plots in {plot_dir} and {len(pages)} HTML pages in {html_dir} "
        f"from {len(results)} result files"
    )

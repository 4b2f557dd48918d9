"""A board built from a folder of result files: its markdown, its plots and its HTML pages, checked
against the files next to the markdown or written there (:func:`build_board`).

The plots live in ``plots/`` and the HTML board in ``html/`` next to the markdown file. A board
never loses rows silently: :meth:`Board.write` refuses when rows the current markdown shows have
no result file any more (``force`` writes anyway).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.api import PublishedTable
from harness.errors import HarnessError
from harness.results.schema import Result

#: The board's plots live in this folder next to the markdown file.
PLOT_DIR = "plots"
#: The HTML board (:mod:`harness.board.html`) lives in this folder next to the markdown file.
HTML_DIR = "html"

#: A link to a result file; its text is the file's name as markdown writes it (escapes included).
_LINK = re.compile(r"\[((?:\\.|[^\[\]\\\n])+?\.json)\]\(")


def _rows(markdown: str) -> set[str]:
    """The result files a leaderboard links to (one per row), by their names as the markdown writes them."""
    return set(_LINK.findall(markdown))


@dataclass
class Board:
    """The board of ``results`` (read from ``results_dir``) written to ``output`` (the markdown
    file), as :func:`build_board` computed it: ``superseded`` holds each result left out with the
    newer one of its configuration shown instead; ``pages`` the HTML pages after :meth:`check` or
    :meth:`write` (they embed the plots as the plot folder holds them)."""

    results_dir: Path
    output: Path
    results: list[Result]
    superseded: list[tuple[Result, Result]]
    plots: dict
    sections: list
    markdown: str
    pages: dict[str, str] = field(default_factory=dict)
    #: The real suites' published rows (:func:`harness.board.sections.literature`).
    literature: list = field(default_factory=list)

    @property
    def plot_dir(self) -> Path:
        return self.output.parent / PLOT_DIR

    @property
    def html_dir(self) -> Path:
        return self.output.parent / HTML_DIR

    def current(self) -> str | None:
        """The markdown file as it is now, or None when there is none."""
        try:
            return self.output.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise HarnessError(f"{self.output}: cannot read the leaderboard: {getattr(exc, 'strerror', None) or exc}") from None

    def check(self) -> list[str]:
        """Write nothing; what is out of date (empty when the markdown, its plots and its HTML board
        are what the results give). The markdown is compared first, then the plots, then the pages:
        the first that differs is reported. No markdown file at all is an error."""
        from harness.analysis.plots import sync_plot_dir
        from harness.board.html import sync_html_dir

        current = self.current()
        if current is None:
            raise HarnessError(f"{self.output}: no leaderboard to check; run `harness leaderboard`")
        if current != self.markdown:
            return [f"{self.output} is out of date with {self.results_dir}: run `harness leaderboard`"]
        problems = sync_plot_dir(self.plots, self.plot_dir, check=True)
        if problems:
            return [f"{self.plot_dir} is out of date: {'; '.join(problems)}: run `harness leaderboard`"]
        self.pages = self._render_pages()
        problems = sync_html_dir(self.pages, self.html_dir, check=True)
        if problems:
            return [f"{self.html_dir} is out of date: {'; '.join(problems)}: run `harness leaderboard`"]
        return []

    def plots_note(self) -> str:
        """After a check: a note when the plots were drawn with another matplotlib than this one's
        (their data and digests were checked, not a fresh drawing), else empty."""
        import matplotlib

        from harness.analysis.plots import drawn_with

        version = drawn_with(self.plot_dir)
        if self.plots and version != matplotlib.__version__:
            return (f"plots drawn with matplotlib {version}, here {matplotlib.__version__}: their data and files "
                    "checked, not a fresh drawing")
        return ""

    def lost_rows(self) -> list[str]:
        """Rows the current markdown shows whose result files are no longer in the results folder
        (by their names as the markdown writes them). A row whose file is still there was superseded
        by a newer result of its configuration (the section's note names it): not lost."""
        from harness.results.report import markdown_text

        current = self.current()
        if current is None:
            return []
        present = {markdown_text(p.name) for p in self.results_dir.glob("*.json")}
        return sorted(_rows(current) - _rows(self.markdown) - present)

    def write(self, *, force: bool = False) -> None:
        """Write the plots, the HTML pages and the markdown (each file only when it changed, each
        atomically); refused, with nothing written, when rows would be lost (:meth:`lost_rows`) and
        not ``force``."""
        from harness.analysis.plots import MANIFEST, plot_files, sync_plot_dir
        from harness.board.html import MANIFEST as HTML_MANIFEST
        from harness.board.html import sync_html_dir
        from harness.util.atomic import write_text_atomic

        lost = self.lost_rows()
        if lost and not force:
            shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
            raise HarnessError(
                f"{self.output} would lose {len(lost)} row(s) whose result files are not in {self.results_dir}: {shown}; "
                f"nothing written (--force writes anyway)"
            )
        # everything is drawn and rendered, and every place it goes is checked, before the first file is written
        files = plot_files(self.plots)
        self.pages = self._render_pages(files)
        _require_writable(
            {self.plot_dir: [*files, MANIFEST], self.html_dir: [*self.pages, HTML_MANIFEST], self.output.parent: [self.output.name]}
        )
        try:
            sync_plot_dir(self.plots, self.plot_dir, check=False, rendered=files)
            sync_html_dir(self.pages, self.html_dir, check=False)
            write_text_atomic(self.output, self.markdown)
        except OSError as exc:
            where = exc.filename or self.output.parent
            raise HarnessError(f"{where}: cannot write the board: {exc.strerror or exc}") from None

    def _plot_svgs(self, files: dict[str, bytes] | None = None) -> dict[str, list[tuple[str, str]]]:
        """Each suite's plots as ``(stem, SVG text)``: from ``files`` (the plot files about to be
        written, :func:`~harness.analysis.plots.plot_files`), else read from the plot folder (the
        files the plot check compared)."""
        svgs: dict[str, list[tuple[str, str]]] = {}
        for stem, plot in self.plots.items():
            path = self.plot_dir / f"{stem}.svg"
            try:
                data = files[path.name] if files is not None else path.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise HarnessError(f"{path}: cannot read the plot: {getattr(exc, 'strerror', None) or exc}") from None
            svgs.setdefault(plot.suite, []).append((stem, text))
        return svgs

    def _render_pages(self, files: dict[str, bytes] | None = None) -> dict[str, str]:
        from harness.board.html import render_html

        return render_html(self.sections, output_dir=self.html_dir.resolve(), plots=self._plot_svgs(files),
                           literature=self.literature)


def _require_writable(targets: dict[Path, list[str]]) -> None:
    """A one-line error naming the path, before anything is written, unless each folder is one
    (or can be made in its nearest existing parent, a writable folder) and none of its files to
    write is anything but a file."""
    import os

    for folder, names in targets.items():
        probe = folder
        while not os.path.lexists(probe) and probe.parent != probe:
            probe = probe.parent
        if not probe.is_dir():
            what = "is not a folder" if probe == folder else f"cannot be made: {probe} is not a folder"
            raise HarnessError(f"{folder}: {what}; the board writes its files there: nothing written")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise HarnessError(f"{probe}: not writable; the board writes its files there: nothing written")
        if probe != folder:
            continue
        for name in names:
            path = folder / name
            if os.path.lexists(path) and not path.is_file():
                raise HarnessError(f"{path}: exists and is not a file; the board writes a file there: nothing written")


def _variant_descriptions() -> dict[str, str]:
    """Each registered training variant's description, by name."""
    from harness import registry

    return {spec.name: spec.description for spec in registry.registry("variants")}


def build_board(results_dir: Path, output: Path, *, published: Sequence[PublishedTable] | None = None) -> Board:
    """The board of the result files in ``results_dir``, to be written to the markdown file
    ``output`` (plots and HTML pages next to it): sections from the newest result of each
    configuration, the markdown, and the standard plots. ``published``: the published tables to
    show (default: every registered one, ``register_published``)."""
    from harness.analysis.plots import standard_plots
    from harness.board.html import INDEX, page_names
    from harness.board.markdown import render
    from harness.board.sections import sections
    from harness.results.schema import read_results
    from harness.results.selection import newest

    if not results_dir.is_dir():
        raise HarnessError(f"--results-dir {results_dir}: no such folder")
    if published is None:
        from harness import registry

        published = list(registry.registry("published"))
    results = read_results(results_dir)
    chosen, superseded = newest(results)
    plots = standard_plots(chosen)
    images: dict[str, list[str]] = {}
    for stem, plot in plots.items():
        images.setdefault(plot.suite, []).append(f"{PLOT_DIR}/{stem}.svg")
    board = sections(results, published, variants=_variant_descriptions())
    markdown = render(
        results, output_dir=output.parent.resolve(), results_dir=results_dir.resolve(),
        published=published, plots=images, board=board, html=f"{HTML_DIR}/{INDEX}",
        pages={suite: f"{HTML_DIR}/{name}" for suite, name in page_names([s.suite for s in board]).items()},
    )
    from harness.board.sections import literature

    return Board(results_dir, output, results, superseded, plots, board, markdown, literature=literature(published, board))

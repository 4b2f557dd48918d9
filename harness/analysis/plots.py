"""Plots from result files (matplotlib, headless, byte-for-byte reproducible).

- ``topk``: top-k accuracy against k = 1 .. depth, one line per system (macro average over parts);
- ``parts``: top-k accuracy per part, grouped bars per system (EntityQuestions relations);
  with more than :data:`BARS_MAX` systems it is drawn as an annotated grid (systems x parts)
  instead, since that many bars per part cannot be told apart;
- ``buckets``: top-k accuracy per part in the suite's part order, one line per system: the
  entity-popularity plot of the EntityQuestions paper (Figure 1) for the popularity suites, whose
  parts are the buckets from rare to frequent (``bucket0``, ``bucket1``, ...); a suite whose parts
  are not popularity buckets is refused;
- ``matrix``: a heatmap of top-k accuracy, rows and columns chosen by ``retriever`` (each
  configuration's label), ``suite`` or a parameter (dotted for nested ones): the
  encoder-adaptation matrix (question encoder x passage encoder, or trained-on x evaluated-on).
  Two results that would fill one cell are refused with their files, never merged.

Systems are named by :func:`harness.results.labels.unique_labels`, as ``harness compare`` and the
leaderboard name them (a trained checkpoint by its variant, training data and configuration
digest); two results that would be drawn under one name are refused with both files. Plots of
synthetic suites say so in the title and in a line above it.

Every figure is drawn from a small data record (:class:`Plot`); its digest is what
``harness leaderboard --check`` compares when the installed matplotlib differs from the one that
drew the committed files. Files are written with fixed metadata (no dates, a fixed SVG hash salt),
so the same data and matplotlib version give the same bytes.

Names from result files (series, parts, titles, axis names) are drawn as written
(:func:`shown`): on one line, a ``$`` as a dollar sign rather than the start of mathtext.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.results.labels import part_title, require_distinct, unique_labels
from harness.results.report import one_line
from harness.results.schema import Result, config_digest
from harness.util.atomic import write_text_atomic
from harness.util.filenames import file_stem

KINDS = ("topk", "parts", "buckets", "matrix")
FORMATS = ("png", "svg")

_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: The most systems a ``parts`` plot draws as grouped bars (one distinct colour each); more are a grid.
BARS_MAX = 10
#: Parts whose names say they are entity-popularity buckets (the EntityQuestions popularity suites).
_BUCKET = re.compile(r"bucket[ _-]?\d+", re.IGNORECASE)
#: The line above the title of a plot of synthetic data.
SYNTHETIC_NOTE = "SYNTHETIC DATA: generated questions, not comparable with published benchmarks"

_STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "harness",
    "svg.fonttype": "path",
    "path.simplify": False,
}


@dataclass(frozen=True)
class Plot:
    """What a figure shows: its kind, title, axis labels and series (JSON-serialisable)."""

    kind: str
    title: str
    data: Mapping[str, Any]
    #: The suite shown, for plots of one suite.
    suite: str = ""

    def digest(self) -> str:
        blob = json.dumps([self.kind, self.title, self.data], sort_keys=True, ensure_ascii=False)
        return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def labels(results: Sequence[Result]) -> list[str]:
    """Each result's label (:func:`harness.results.labels.unique_labels`: a trained checkpoint by
    its variant, training data and digest; a name several configurations share with the digest),
    the one ``harness compare`` and the leaderboard show."""
    return unique_labels(results)


def _series_labels(results: Sequence[Result]) -> list[str]:
    """:func:`labels`, refusing (one line, both files) two results that would be one series."""
    names = labels(results)
    require_distinct(results, names, what="drawn")
    return names


def _synthetic(results: Sequence[Result]) -> list[str]:
    return sorted({r.suite for r in results if r.record.suite.synthetic})


def _title(suite: str, synthetic: bool, what: str) -> str:
    return f"{suite}{' (synthetic data)' if synthetic else ''}: {what}"


def _one_suite(results: Sequence[Result]) -> str:
    suites = sorted({r.suite for r in results})
    if len(suites) != 1:
        raise HarnessError(f"this plot shows one suite; the results are of {', '.join(suites)}")
    sets = {r.questions_fingerprint for r in results}
    if len(sets) > 1:
        raise HarnessError(f"the results of {suites[0]} were made on {len(sets)} different question sets")
    return suites[0]


def _round(x: float) -> float:
    return round(100 * x, 4)


def topk_plot(results: Sequence[Result]) -> Plot:
    suite = _one_suite(results)
    series = {}
    for label, r in zip(_series_labels(results), results):
        series[label] = [_round(r.accuracy(k)[1]) for k in range(1, r.depth + 1)]
    synthetic = _synthetic(results)
    data: dict[str, Any] = {"series": series}
    if synthetic:
        data["synthetic"] = synthetic
    return Plot("topk", _title(suite, bool(synthetic), "top-k accuracy"), data, suite)


def parts_plot(results: Sequence[Result], k: int, kind: str = "parts") -> Plot:
    suite = _one_suite(results)
    shallow = [r for r in results if r.depth < k]
    if shallow:
        raise HarnessError(f"top-{k} is deeper than {shallow[0].retriever}'s depth ({shallow[0].depth})")
    parts = results[0].part_names
    if kind == "buckets":
        _require_buckets(suite, results[0].data["suite"], parts)
    series = {label: [_round(r.accuracy(k)[0][p]) for p in parts] for label, r in zip(_series_labels(results), results)}
    what = "by popularity bucket (rare to frequent)" if kind == "buckets" else "by part"
    synthetic = _synthetic(results)
    data: dict[str, Any] = {"k": k, "parts": parts, "series": series}
    if synthetic:
        data["synthetic"] = synthetic
    return Plot(kind, _title(suite, bool(synthetic), f"top-{k} accuracy {what}"), data, suite)


def _require_buckets(suite: str, record: Mapping[str, Any], parts: Sequence[str]) -> None:
    """A one-line error unless the suite's parts are entity-popularity buckets (``bucket0`` ..,
    as the EntityQuestions popularity suites name them)."""
    if len(parts) > 1 and all(_BUCKET.fullmatch(p) for p in parts):
        return
    listed = ", ".join(one_line(p) for p in parts[:4]) + (", …" if len(parts) > 4 else "")
    raise HarnessError(
        f"suite {one_line(suite)} has no popularity buckets (its parts are {listed}); the buckets plot is for "
        f"suites whose parts are entity-popularity buckets (bucket0, bucket1, …, e.g. "
        f"entityquestions-popularity-random-p19): draw its parts with `harness plot parts`"
    )


def _axis_value(result: Result, key: str, label: str) -> str:
    if key in ("retriever", "label"):
        return label
    if key == "suite":
        return result.suite
    value: Any = result.parameters
    for step in key.split("."):
        if not isinstance(value, Mapping) or step not in value:
            raise HarnessError(f"result {result.path or result.retriever} has no parameter {key!r}")
        value = value[step]
    return str(value)


def _file(result: Result, label: str) -> str:
    return one_line(result.path) if result.path is not None else f"a result of {one_line(label)}"


def matrix_plot(results: Sequence[Result], k: int, *, rows: str = "retriever", columns: str = "suite") -> Plot:
    """Top-k of each (row, column) cell; ``retriever`` rows or columns are the configurations'
    labels (:func:`labels`), so trained checkpoints of one retriever are rows of their own. Two
    results in one cell are refused, naming both files."""
    cells: dict[tuple[str, str], float] = {}
    owner: dict[tuple[str, str], tuple[Result, str]] = {}
    for r, label in zip(results, labels(results)):
        accuracy = r.accuracy(k)
        if accuracy is None:
            raise HarnessError(f"top-{k} is deeper than {r.retriever}'s depth on {r.suite} ({r.depth})")
        cell = (_axis_value(r, rows, label), _axis_value(r, columns, label))
        if cell in owner:
            other, other_label = owner[cell]
            raise HarnessError(
                f"{_file(other, other_label)} and {_file(r, label)} would fill one cell of the matrix "
                f"({one_line(rows)} {one_line(cell[0])!r}, {one_line(columns)} {one_line(cell[1])!r}): choose --rows/--columns "
                f"that tell them apart, or name the results to draw"
            )
        owner[cell] = (r, label)
        cells[cell] = _round(accuracy[1])
    row_names = sorted({a for a, _ in cells})
    column_names = sorted({b for _, b in cells})
    values = [[cells.get((a, b)) for b in column_names] for a in row_names]
    synthetic = _synthetic(results)
    data: dict[str, Any] = {"k": k, "rows": rows, "columns": columns,
                            "row_names": row_names, "column_names": column_names, "values": values}
    title = f"top-{k} accuracy"
    if synthetic:
        data["synthetic"] = synthetic
        title += f" (synthetic data: {', '.join(synthetic)})"
    return Plot("matrix", title, data)


#: Legend entries, titles and tick labels longer than this many characters are drawn on several lines.
WRAP = 60


def shown(text: object, width: int | None = None) -> str:
    """``text`` as matplotlib should draw it literally: one line (:func:`one_line`), every ``$``
    escaped (matplotlib reads text between two dollar signs as mathtext, and fails on bad
    mathtext), and a leading ``_`` preceded by a space (a legend leaves out labels starting with
    one). With ``width``: a longer text is broken into lines of at most ``width`` characters (the
    figure keeps its shape however long a name is)."""
    text = one_line(text)
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) if width and len(text) > width else [text]
    lines = [line.replace("$", r"\$") for line in lines]
    if lines[0].startswith("_"):
        lines[0] = " " + lines[0]
    return "\n".join(lines)


#: Qualitative palettes whose colours are taken in turn (each colour once): tab10's ten, then
#: tab20's lighter ten, then tab20b's and tab20c's twenty each.
_PALETTES = (("tab10", range(10)), ("tab20", range(1, 20, 2)), ("tab20b", range(20)), ("tab20c", range(20)))


def _colour(i: int) -> tuple[float, ...]:
    """Series ``i``'s colour, never another series' colour: the :data:`_PALETTES` colours in turn
    (60 distinct ones), beyond them hues spaced by the golden ratio (each hue once)."""
    import matplotlib

    for name, indices in _PALETTES:
        if i < len(indices):
            return tuple(matplotlib.colormaps[name](indices[i]))
        i -= len(indices)
    hue = (0.5 + i * 0.6180339887498949) % 1.0
    return (*matplotlib.colors.hsv_to_rgb((hue, 0.85, 0.75 if i % 2 else 0.55)), 1.0)


def _style(i: int) -> dict[str, Any]:
    """Series ``i``'s look: a colour no other series has (:func:`_colour`), with a line style and
    a marker that change from one series to the next, so neighbouring colours differ in both."""
    linestyle = _LINESTYLES[0] if i < 10 else _LINESTYLES[i % len(_LINESTYLES)]
    return {"color": _colour(i), "linestyle": linestyle, "marker": _MARKERS[i % len(_MARKERS)]}


def _heatmap(fig, ax, grid_values, row_names, column_names, *, label: str, annotate: bool = True, fontsize: int = 8):
    """An annotated heatmap of percentages (None: no value) with a colour bar named ``label``."""
    grid = [[math.nan if v is None else v for v in row] for row in grid_values]
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(column_names)), [shown(c, WRAP) for c in column_names], rotation=60 if len(column_names) > 8 else 30, ha="right")
    ax.set_yticks(range(len(row_names)), [shown(r, WRAP) for r in row_names])
    if annotate:
        for i, row in enumerate(grid_values):
            for j, v in enumerate(row):
                text = "–" if v is None else f"{v:.1f}"
                ax.text(j, i, text, ha="center", va="center", color="white" if v is None or v < 60 else "black", fontsize=fontsize)
    fig.colorbar(image, ax=ax, label=label)


def draw(plot: Plot):
    """The matplotlib figure of ``plot`` (Agg, never shown); every name in it through :func:`shown`.

    Figures use matplotlib's constrained layout, legends sit outside the axes (right of them), and
    plots of synthetic data carry :data:`SYNTHETIC_NOTE` above the title."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    with plt.rc_context(_STYLE):
        d = plot.data
        legend = True
        if plot.kind == "topk":
            n = len(d["series"])
            fig = Figure(figsize=(6.4 if n <= 6 else 8.4, max(4.2, 0.19 * n + 0.8)), layout="constrained")
            ax = fig.add_subplot()
            for i, (label, ys) in enumerate(d["series"].items()):
                style = _style(i)
                ax.plot(range(1, len(ys) + 1), ys, label=shown(label, WRAP), linewidth=1.5, color=style["color"],
                        linestyle=style["linestyle"], marker=style["marker"], markersize=3,
                        markevery=max(1, len(ys) // 5) if len(ys) > 1 else None)
            ax.set_xlabel("k (passages retrieved)")
            ax.set_ylabel("top-k accuracy (%)")
            ax.set_xlim(1, max(len(ys) for ys in d["series"].values()))
            ax.set_ylim(0, 102)
            ax.set_yticks(range(0, 101, 20))
        elif plot.kind == "parts" and len(d["series"]) > BARS_MAX:
            # too many systems for bars a reader can match to a legend: one row per system
            parts, names = d["parts"], list(d["series"])
            width = max(6.4, 0.42 * len(parts) + 0.065 * max(len(n) for n in names) + 2.5)
            fig = Figure(figsize=(min(24.0, width), max(3.0, 0.3 * len(names) + 2.0)), layout="constrained")
            ax = fig.add_subplot()
            _heatmap(fig, ax, [d["series"][n] for n in names], names, [part_title(p) for p in parts], label=f"top-{d['k']} accuracy (%)",
                     annotate=len(parts) <= 40, fontsize=6)
            ax.set_xlabel("part")
            legend = False
        elif plot.kind in ("parts", "buckets"):
            parts = d["parts"]
            bars = len(parts) * (len(d["series"]) if plot.kind == "parts" else 1)
            ticks = [shown(part_title(p), WRAP) for p in parts]
            # rotated tick labels take height of their own: the axes keep theirs
            longest = max((len(line) for t in ticks for line in t.split("\n")), default=0) if len(parts) > 8 else 0
            fig = Figure(figsize=(min(14.0, max(6.4, 0.12 * bars + 4.0)), 4.4 + 0.06 * max(0, longest - 8)), layout="constrained")
            ax = fig.add_subplot()
            if plot.kind == "buckets":
                for i, (label, ys) in enumerate(d["series"].items()):
                    style = _style(i)
                    ax.plot(range(len(parts)), ys, label=shown(label, WRAP), linewidth=1.5, **style)
            else:
                width = 0.8 / max(1, len(d["series"]))
                for i, (label, ys) in enumerate(d["series"].items()):
                    ax.bar([x + i * width - 0.4 + width / 2 for x in range(len(parts))], ys, width, label=shown(label, WRAP),
                           color=_style(i)["color"])
            ax.set_xticks(range(len(parts)), ticks, rotation=60 if len(parts) > 8 else 0, ha="right" if len(parts) > 8 else "center")
            ax.set_ylabel(f"top-{d['k']} accuracy (%)")
            if plot.kind == "buckets":
                ax.set_xlabel("entity popularity bucket (rare to frequent)")
            ax.set_ylim(0, 102)
            ax.set_yticks(range(0, 101, 20))
            ax.set_xlim(-0.6, len(parts) - 0.4)
        elif plot.kind == "matrix":
            rows, cols = d["row_names"], d["column_names"]
            longest = max((len(r) for r in rows), default=0)
            fig = Figure(figsize=(max(4.5, 1.1 * len(cols) + 2.5 + 0.06 * longest), max(3.0, 0.5 * len(rows) + 1.8)),
                         layout="constrained")
            ax = fig.add_subplot()
            _heatmap(fig, ax, d["values"], rows, cols, label=f"top-{d['k']} accuracy (%)")
            ax.set_xlabel(shown(d["columns"]))
            ax.set_ylabel(shown(d["rows"]))
            legend = False
        else:
            raise HarnessError(f"unknown plot kind {plot.kind!r}; choose from {', '.join(KINDS)}")
        ax.set_title(shown(plot.title, WRAP))
        if d.get("synthetic"):
            fig.suptitle(SYNTHETIC_NOTE, color="#a00000", fontsize=9, fontweight="bold")
        if legend:
            # outside the axes: it never hides a curve, a bar or a tick
            # (far enough right that the last x tick label, "100", stays clear of it)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.04, 1.0), borderaxespad=0)
    return fig


def render_bytes(plot: Plot, fmt: str) -> bytes:
    """The figure's file content in ``fmt`` (png or svg), with no date or software stamp."""
    import matplotlib.pyplot as plt

    if fmt not in FORMATS:
        raise HarnessError(f"unknown image format {fmt!r}; choose from {', '.join(FORMATS)}")
    buffer = io.BytesIO()
    metadata = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
    with warnings.catch_warnings(), plt.rc_context(_STYLE):
        # a layout that cannot fit every label is still drawn whole (below): not worth a warning
        warnings.filterwarnings("ignore", message=r".*layout not applied", category=UserWarning)
        fig = draw(plot)
        # the whole drawing, whatever sticks out of the figure (a long colour-bar or axis label)
        fig.savefig(buffer, format=fmt, metadata=metadata, bbox_inches="tight", pad_inches=0.1)
    return buffer.getvalue()


def write_plot(plot: Plot, base: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``base.png`` / ``base.svg`` atomically (each drawn before the first is written); returns
    the paths. A file that cannot be written is one line naming it."""
    from harness.util.atomic import write_bytes_atomic

    drawn = [(base.with_name(f"{base.name}.{fmt}"), render_bytes(plot, fmt)) for fmt in formats]
    written = []
    for path, content in drawn:
        try:
            written.append(write_bytes_atomic(path, content))
        except OSError as exc:
            raise HarnessError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    return written


#: How many configurations a leaderboard's per-part bar chart shows (bars get too thin beyond).
PARTS_SHOWN = 6


def standard_plots(results: Sequence[Result]) -> dict[str, Plot]:
    """The leaderboard's plots, by file stem (``SUITE-topk``, ``SUITE-parts``: the suite's name as a
    file name, one to one, :func:`~harness.util.filenames.file_stem`): each suite's top-k curves (one question set per
    suite; suites with several question sets get none) and, for suites with several parts, top-20
    (else the deepest reported cutoff) by part, for the :data:`PARTS_SHOWN` configurations best
    at that cutoff (the leaderboard's per-part table has every one)."""
    by_suite: dict[str, list[Result]] = {}
    for r in results:
        by_suite.setdefault(r.suite, []).append(r)
    plots: dict[str, Plot] = {}
    for suite, group in sorted(by_suite.items()):
        if len({r.questions_fingerprint for r in group}) > 1:
            continue
        group = sorted(group, key=lambda r: (r.retriever, config_digest(r.retriever, r.parameters)))
        stem = file_stem(suite)
        plots[f"{stem}-topk"] = topk_plot(group)
        if len(group[0].part_names) > 1:
            depth = min(r.depth for r in group)
            ks = sorted({k for r in group for k in r.ks if k <= depth})
            k = 20 if 20 in ks else (ks[-1] if ks else depth)
            best = sorted(group, key=lambda r: -r.accuracy(k)[1])[:PARTS_SHOWN]
            plots[f"{stem}-parts"] = parts_plot([r for r in group if r in best], k)
    return plots


def manifest(plots: Mapping[str, Plot], files: Mapping[str, bytes]) -> str:
    """The JSON record of a plot folder: matplotlib's version, each plot's data digest and each
    file's digest."""
    import matplotlib

    record = {
        "matplotlib": matplotlib.__version__,
        "plots": {stem: p.digest() for stem, p in sorted(plots.items())},
        "files": {name: "sha256:" + hashlib.sha256(content).hexdigest() for name, content in sorted(files.items())},
    }
    return json.dumps(record, indent=1) + "\n"


def write_manifest(path: Path, text: str) -> None:
    write_text_atomic(path, text)


MANIFEST = "plots.json"


def plot_files(plots: Mapping[str, Plot], fmt: str = "svg") -> dict[str, bytes]:
    """Each plot's file as :func:`sync_plot_dir` writes it: ``STEM.fmt`` -> its bytes."""
    return {f"{stem}.{fmt}": render_bytes(p, fmt) for stem, p in plots.items()}


def sync_plot_dir(
    plots: Mapping[str, Plot], directory: Path, *, check: bool, fmt: str = "svg", rendered: Mapping[str, bytes] | None = None
) -> list[str]:
    """Make ``directory`` hold exactly ``plots`` as ``STEM.fmt`` plus :data:`MANIFEST`, or with
    ``check`` write nothing and return what differs (empty when up to date). ``rendered``: the
    plots' files as :func:`plot_files` gave them (drawn here when not given).

    The check compares the plotted data always, and the files' bytes when the installed matplotlib
    is the one that drew them; with another matplotlib it checks the files against the digests the
    manifest recorded instead (a note says so), since font rendering may differ between versions.
    """
    import matplotlib

    rendered = dict(rendered) if rendered is not None else plot_files(plots, fmt)
    if not check:
        for name, content in rendered.items():
            path = directory / name
            if not path.is_file() or path.read_bytes() != content:
                from harness.util.atomic import write_bytes_atomic

                write_bytes_atomic(path, content)
        # only files an earlier run drew (its manifest lists them) are removed: the folder may be shared
        for name in _recorded_files(directory):
            if name not in rendered and "/" not in name and name.endswith(f".{fmt}"):
                (directory / name).unlink(missing_ok=True)
        if plots or (directory / MANIFEST).exists():
            write_manifest(directory / MANIFEST, manifest(plots, rendered))
        return []
    problems: list[str] = []
    try:
        recorded = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{directory / MANIFEST} is missing"] if plots else []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [f"{directory / MANIFEST}: unreadable ({exc})"]
    if not isinstance(recorded, dict) or not isinstance(recorded.get("plots"), dict) or not isinstance(recorded.get("files"), dict):
        return [f"{directory / MANIFEST}: not a plot manifest"]
    wanted = {stem: p.digest() for stem, p in plots.items()}
    if recorded["plots"] != wanted:
        changed = sorted(set(wanted) ^ set(recorded["plots"]) | {s for s in wanted if recorded["plots"].get(s) != wanted[s]})
        problems.append(f"plots with other data: {', '.join(changed)}")
    same_version = recorded.get("matplotlib") == matplotlib.__version__
    recorded_files = set(recorded["files"])
    if recorded_files != set(rendered):
        problems.append(f"plot files differ from the plots: {', '.join(sorted(recorded_files ^ set(rendered)))}")
    for name, content in rendered.items():
        path = directory / name
        if not path.is_file():
            problems.append(f"{path} is missing")
            continue
        actual = path.read_bytes()
        if same_version and actual != content:
            problems.append(f"{path} differs from a fresh drawing")
        elif "sha256:" + hashlib.sha256(actual).hexdigest() != recorded["files"].get(name):
            problems.append(f"{path} was changed after it was drawn")
    return problems


def _recorded_files(directory: Path) -> list[str]:
    try:
        files = json.loads((directory / MANIFEST).read_text(encoding="utf-8")).get("files", {})
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return []
    return [name for name in files if isinstance(name, str)] if isinstance(files, dict) else []


def drawn_with(directory: Path) -> str | None:
    """The matplotlib version the manifest of ``directory`` records, if readable."""
    try:
        version = json.loads((directory / MANIFEST).read_text(encoding="utf-8")).get("matplotlib")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None

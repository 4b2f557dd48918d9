"""``harness submit``: validated result files into a board's results folder under their canonical
names, the board regenerated, and what to commit and the pull request's text printed."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from harness.cli.validate import BOARD_HELP
from harness.errors import HarnessError
from harness.util.paths import LEADERBOARD_RESULTS

#: The disclosure a submission answers: the pull-request template's checklist
#: (``.github/PULL_REQUEST_TEMPLATE.md`` holds the same lines).
DISCLOSURE = (
    "- [ ] Training data seen: I list every data set the model (retriever and re-ranker) was trained or tuned on, "
    "as far as its publisher says (unknown: say so).",
    "- [ ] No suite's test questions were seen in training, tuning or model selection.",
    "- [ ] Any suite's train or dev split seen in training or tuning is named here (e.g. nq-train, trivia-dev, "
    "demo-train): rows on that suite are in-domain, not zero-shot.",
    "- [ ] Hyper-parameters were not chosen on the test questions of the suites submitted.",
    "- [ ] The result files are unedited output of `harness run` or `harness score`, and `harness validate` "
    "passes on them.",
)


def _command(data: Mapping[str, Any]) -> tuple[str, bool]:
    """The command recorded in the result, else the one its configuration gives (and False)."""
    recorded = data.get("command")
    if isinstance(recorded, str) and recorded:
        return recorded, True
    if isinstance(recorded, list) and recorded and all(isinstance(x, str) for x in recorded):
        return shlex.join(recorded), True
    words = ["harness", "run", "--retriever", data["retriever"]["name"], "--suite", data["suite"]["name"],
             "--k", ",".join(map(str, data["k"]))]
    for metric in data["metrics"]:
        if metric != "accuracy":
            words += ["--metric", metric]
    reranker = data.get("reranker")
    if reranker:
        words += ["--rerank", reranker["name"], "--rerank-depth", str(reranker["depth"])]
    return shlex.join(words), False


def pull_request_text(results: Sequence[Any]) -> str:
    """The pull request's text for :class:`harness.results.schema.Result` s ``results``: what was
    run, the command, the numbers, and the disclosure checklist."""
    from harness.results.labels import result_label
    from harness.results.report import format_parameters, markdown_text

    def text(value: object) -> str:
        return markdown_text(value)

    suites = sorted({r.suite for r in results})
    lines = [f"Results: {', '.join(text(s) for s in suites)}", "", "## What was run", ""]
    for result in results:
        data = result.data
        suite = data["suite"]
        lines.append(f"### {text(result_label(result))} on {text(suite['name'])}")
        lines.append("")
        count = sum(part["questions"] for part in suite["parts"])
        lines.append(f"- suite: {text(suite['name'])}{' (synthetic)' if suite['synthetic'] else ''}, "
                     f"{count:,} questions in {len(suite['parts'])} parts, questions {text(suite['questions_fingerprint'][:19])}")
        lines.append(f"- retriever: {text(data['retriever']['name'])} (plugin {text(data['retriever'].get('plugin', ''))}): "
                     f"{text(format_parameters(data['retriever']['parameters']))}")
        if data.get("reranker"):
            reranker = data["reranker"]
            lines.append(f"- re-ranker: {text(reranker['name'])}, top {reranker['depth']}: "
                         f"{text(format_parameters(reranker['parameters']))}")
        accuracy = data["metrics"].get("accuracy")
        if accuracy:
            cells = ", ".join(f"top-{k} {100 * v:.2f}" for k, v in sorted(accuracy["macro"].items(), key=lambda x: int(x[0])))
            lines.append(f"- accuracy (macro): {cells}")
        versions = data["versions"]
        machine = data["machine"]
        accelerators = ", ".join(f"{a.get('count', 1)}x {a.get('name')}" for a in machine.get("accelerators") or []
                                 if isinstance(a, Mapping)) or "no accelerator"
        lines.append(f"- harness {text(versions.get('harness'))}, Python {text(versions.get('python'))}, "
                     f"{text(machine.get('platform'))}, {machine.get('cpu_count')} CPUs, {text(accelerators)}")
        command, recorded = _command(data)
        lines.append(f"- file: {text(result.path.name if result.path else '')}")
        lines += ["", "Command" + ("" if recorded else " (the result records none; this is its configuration's)") + ":",
                  "", "```", command.replace("```", "'''"), "```", ""]
    lines += ["## Disclosure", "", *DISCLOSURE, ""]
    return "\n".join(lines)


@click.command("submit")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--board", type=click.Path(file_okay=False, path_type=Path), default=None, help=BOARD_HELP.replace("compared with", "added to"))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="The board's markdown file (default: README.md beside the results folder: leaderboard/README.md for the committed board).")
def submit_command(results: tuple[Path, ...], board: Path | None, output: Path | None) -> None:
    """Validate RESULT files (as `harness validate` does, against the board), copy them into the
    board's results folder under their canonical names, regenerate the board, and print what to
    commit and the pull request's text (what was run, the command, the disclosure checklist).

    Nothing is copied when any file has a problem; a file of a configuration the board holds
    replaces it only when it loses nothing (cutoffs, depth, metrics, question set).
    """
    from harness.board import build_board
    from harness.results.report import one_line
    from harness.results.schema import check_results_dir, read_result, replacement_loss
    from harness.results.validation import result_paths, validate_files
    from harness.util.atomic import write_bytes_atomic

    board = board if board is not None else LEADERBOARD_RESULTS
    output = output if output is not None else board.parent / "README.md"
    paths = result_paths(results)
    if not paths:
        raise HarnessError(f"no result files in {', '.join(map(str, results))}")
    check_results_dir(board, flag="--board")
    reports = validate_files(paths, board=board)
    bad = [report for report in reports if not report.ok]
    for report in bad:
        for line in report.lines():
            click.echo(line, err=True)
    if bad:
        raise HarnessError(f"{len(bad)} of {len(reports)} result files have problems (named above); nothing submitted")

    chosen: dict[str, Path] = {}
    copies: list[tuple[Path, bytes, bytes | None]] = []  # (destination, new bytes, former bytes)
    for report in reports:
        target = report.target
        name = target.canonical_name
        if name in chosen:
            raise HarnessError(f"{chosen[name]} and {target.path} hold the same configuration ({name}); submit one")
        chosen[name] = target.path
        destination = board / name
        new = target.path.read_bytes()
        former = destination.read_bytes() if destination.is_file() else None
        if former == new:
            click.echo(f"{destination} is already on the board")
            continue
        if former is not None:
            try:
                old = read_result(destination).data
            except HarnessError:
                old = None
            loss = replacement_loss(old, target.data) if old is not None else None
            if loss:
                raise HarnessError(f"{destination} holds this configuration with {one_line(loss)}; not replacing it "
                                   f"(remove it first if that is meant)")
        copies.append((destination, new, former))

    written: list[tuple[Path, bytes | None]] = []
    try:
        for destination, new, former in copies:
            write_bytes_atomic(destination, new)
            written.append((destination, former))
        built = build_board(board, output)
        built.write()
    except BaseException:
        for destination, former in reversed(written):  # the board folder as it was
            if former is None:
                destination.unlink(missing_ok=True)
            else:
                write_bytes_atomic(destination, former)
        raise
    for destination, _, former in copies:
        click.echo(f"{'replaced' if former is not None else 'added'} {destination}")
    click.echo(f"wrote {output}, {len(built.plots)} plots in {built.plot_dir} and {len(built.pages)} HTML pages in "
               f"{built.html_dir}")
    click.echo("")
    click.echo("Commit:")
    click.echo("")
    touched = [str(board / name) for name in chosen]
    click.echo("    " + shlex.join(["git", "add", *touched, str(output), str(built.plot_dir), str(built.html_dir)]))
    click.echo("")
    click.echo("Pull request text:")
    click.echo("")
    click.echo(pull_request_text([read_result(board / name) for name in chosen]))

"""Validating a result file by recomputation: what ``harness validate``, ``harness submit`` and
``harness results pull`` accept.

A result file is trusted for nothing it can be checked for. :func:`validate_file` reads one file
and runs every check of :data:`CHECKS` on it; each check is a function ``(ValidationTarget,
ValidationContext) -> list[str]`` returning its problems, one line each naming the field, so a
further check is one more function in the list. The checks:

- size: a file is at most :data:`MAX_RESULT_BYTES` (10 MB; a full NQ result with every first-hit
  rank is about 70 kB), checked before it is read;
- the schema (:func:`harness.results.records.validate`, which also holds the ``accuracy`` metric
  to the ranks);
- text: no text in the document (a value or a key, anywhere) holds a control character, a
  surrogate or a character that reorders text, or is longer than :data:`MAX_TEXT` characters;
  markup is left to the board, which escapes every text it shows (:mod:`harness.board`);
- identity: a file named as harness names results (``SUITE--RETRIEVER--DIGEST.json``) holds the
  configuration its name says (the name recomputed from the configuration);
- suite: the suite is installed here and its questions, as its spec's pinned files give them
  (loaded, and downloaded if need be, as ``harness run`` does), have the recorded questions
  fingerprint: a result computed on another revision of the questions or answers is refused,
  naming both fingerprints; the parts and every part's question ids are the suite's (a result
  with questions left out is refused, even with its counts and metrics edited to match);
- metrics: every metric, per part and macro-averaged, recomputed from the first-hit ranks by the
  installed metric (:func:`harness.results.build.compute_metrics`);
- records: ``versions`` names harness, Python and the plugin of each stage with its version;
  ``machine`` names the platform and the CPU count;
- board: a result of the same configuration and questions already on the board (``board``, the
  committed ``leaderboard/results`` by default) whose numbers differ by more than
  :data:`BOARD_TOLERANCE_POINTS` anywhere is named with both files.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, InputFileError
from harness.results.records import dotted, long_integer_problem, validate
from harness.results.report import one_line
from harness.results.schema import Result, _former_filename, read_results, result_filename
from harness.util import jsonio

#: The largest result file accepted, in bytes (10 MB). A result of EntityQuestions' 22,075
#: questions with every first-hit rank and a re-ranker's first-stage ranks is under 2 MB.
MAX_RESULT_BYTES = 10 * 1024 * 1024
#: The longest text accepted anywhere in a result (a name, a parameter's value, a description, a
#: question id), in characters.
MAX_TEXT = 2000
#: How far, in points (percent), a result's numbers may lie from those of the same configuration
#: already on the board.
BOARD_TOLERANCE_POINTS = 0.02
#: Slack when comparing recorded metric values with what the ranks give (a float in JSON is exact).
_SLACK = 1e-9
#: How many question ids a problem line names before it counts the rest.
_SHOWN = 3
#: Characters that reorder the text around them (bidirectional overrides and isolates).
_REORDERING = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
#: A file name in harness's own form, ``SUITE--RETRIEVER--DIGEST.json``.
_HARNESS_NAME = re.compile(r".+--.+--[0-9a-f]{8}\.json")


@dataclass
class ValidationTarget:
    """One file being validated: its path, its document and the :class:`Result` the schema passed."""

    path: Path
    data: Mapping[str, Any]
    result: Result

    @property
    def canonical_name(self) -> str:
        """The file name harness gives this configuration (:func:`result_filename`)."""
        return canonical_name(self.data)


@dataclass
class ValidationContext:
    """What the checks share across files: the board's results, and each suite loaded once."""

    board: Path | None = None
    _board_results: list[Result] | None = None
    _suites: dict[str, Any] = field(default_factory=dict)

    def board_results(self) -> list[Result]:
        """The board's valid result files (none without a board folder)."""
        if self._board_results is None:
            if self.board is None or not self.board.is_dir():
                self._board_results = []
            else:
                self._board_results = read_results(self.board, on_error=lambda error: None)
        return self._board_results

    def suite(self, name: str) -> Any:
        """The installed suite ``name`` loaded (a :class:`harness.api.Suite`), or the text of why not."""
        if name not in self._suites:
            self._suites[name] = _load_suite(name)
        return self._suites[name]


@dataclass
class ValidationReport:
    """What validating one file found: its problems (none: valid) and, when the schema passed,
    the :class:`ValidationTarget`."""

    path: Path
    problems: list[str]
    target: ValidationTarget | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """One line per problem: ``FILE: PROBLEM``."""
        return [f"{self.path}: {one_line(problem)}" for problem in self.problems]


Check = Callable[[ValidationTarget, ValidationContext], list[str]]


def canonical_name(data: Mapping[str, Any]) -> str:
    """The file name harness gives the configuration of result document ``data``."""
    return result_filename(
        data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"], data.get("reranker")
    )


# -- reading ---------------------------------------------------------------------------------------


def _read(path: Path) -> tuple[ValidationTarget | None, list[str]]:
    """The file's document, checked for size and schema; else the problem that stops there."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return None, [f"cannot read result file: {exc.strerror or exc}"]
    if not path.is_file():
        return None, ["not a file"]
    if size > MAX_RESULT_BYTES:
        return None, [f"the file is {size:,} bytes, more than the {MAX_RESULT_BYTES:,} bytes (10 MB) a result file may have"]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"cannot read result file: {getattr(exc, 'strerror', None) or exc}"]
    try:
        data = jsonio.loads(text, source=path)
        validate(data, source=path)
    except InputFileError as error:
        return None, [error.problem if error.line is None else f"line {error.line}: {error.problem}"]
    except ValueError:  # an integer of more digits than Python converts
        return None, [long_integer_problem(text) or "an integer of more digits than a number can have"]
    except RecursionError:
        return None, ["the document is nested too deeply to read"]
    return ValidationTarget(path, data, Result(data, path)), []


def validate_file(path: str | Path, context: ValidationContext | None = None,
                  checks: Sequence[Check] | None = None) -> ValidationReport:
    """Every problem of result file ``path``: its size and schema first (a file that fails
    either is not checked further), then each of ``checks`` (default :data:`CHECKS`)."""
    path = Path(path)
    context = context if context is not None else ValidationContext()
    target, problems = _read(path)
    if target is None:
        return ValidationReport(path, problems)
    for check in CHECKS if checks is None else checks:
        problems.extend(check(target, context))
    return ValidationReport(path, problems, target)


def validate_files(paths: Iterable[str | Path], *, board: str | Path | None = None,
                   checks: Sequence[Check] | None = None) -> list[ValidationReport]:
    """:func:`validate_file` for each of ``paths``, sharing the board (``board``, a results
    folder; None: none) and the loaded suites."""
    context = ValidationContext(board=Path(board) if board is not None else None)
    return [validate_file(path, context, checks) for path in paths]


def result_paths(arguments: Iterable[str | Path]) -> list[Path]:
    """The files named: a folder stands for its ``*.json`` files (sorted)."""
    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            paths.extend(sorted(p for p in path.glob("*.json")))
        else:
            paths.append(path)
    return paths


# -- the checks ------------------------------------------------------------------------------------


def _strings(value: Any, steps: list[str | int]) -> Iterable[tuple[list[str | int], str, bool]]:
    """Every text in ``value``: (where, text, whether it is a key)."""
    if isinstance(value, str):
        yield steps, value, False
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(key, str):
                yield [*steps, key], key, True
            yield from _strings(inner, [*steps, key])
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _strings(inner, [*steps, index])


def _where(steps: list[str | int]) -> str:
    text = dotted(steps)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def check_text(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """No control character, surrogate or text-reordering character anywhere, and no text longer
    than :data:`MAX_TEXT`: names a board shows stay one plain line."""
    problems = []
    for steps, text, is_key in _strings(target.data, []):
        what = f"the key at {_where(steps)}" if is_key else _where(steps)
        if len(text) > MAX_TEXT:
            problems.append(f"{what} is {len(text):,} characters long; a text in a result file is at most {MAX_TEXT:,}")
            continue
        bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cs") or c in _REORDERING), None)
        if bad is not None:
            problems.append(f"{what} holds the control character U+{ord(bad):04X}; a text in a result file is one plain line")
    return problems


def check_identity(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """A file named as harness names results holds the configuration its name says."""
    name = target.path.name
    if not _HARNESS_NAME.fullmatch(name):
        return []
    data = target.data
    expected = target.canonical_name
    former = _former_filename(data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"],
                              data.get("reranker"))
    if name in (expected, former):
        return []
    return [f"the file name does not match the configuration it holds ('suite', 'retriever', 'reranker'), which "
            f"harness names {expected}"]


def _load_suite(name: str) -> Any:
    from harness import registry

    suites = registry.suites()
    if name not in suites:
        return f"'suite.name' {name[:80]!r} is not a suite installed here, so its questions cannot be checked"
    try:
        return suites.get(name).load()
    except HarnessError as exc:
        return f"suite {name!r} cannot be loaded to check its questions: {one_line(exc)}"
    except Exception as exc:  # a plugin's suite that fails to load fails this file's check, not the others'
        return f"suite {name!r} failed to load, so its questions cannot be checked: {type(exc).__name__}: {one_line(exc)}"


def _ids(ids: Iterable[str]) -> str:
    ids = list(ids)
    shown = ", ".join(repr(i[:40]) for i in ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN:,} more" if len(ids) > _SHOWN else "")


def check_suite(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """The suite is installed, its questions fingerprint is the recorded one, and its parts and
    question ids are those of the ranks."""
    record = target.result.record
    suite = context.suite(record.suite.name)
    if isinstance(suite, str):
        return [suite]
    problems = []
    if record.suite.questions_fingerprint != suite.questions_fingerprint:
        problems.append(
            f"'suite.questions_fingerprint' is {record.suite.questions_fingerprint[:80]}, but suite {suite.name!r} "
            f"here (its questions and answers as its spec pins them) is {suite.questions_fingerprint}: the result was "
            f"computed on another revision of the data"
        )
    if record.suite.match != suite.match:
        problems.append(f"'suite.match' is {record.suite.match!r}, but suite {suite.name!r} is scored with {suite.match!r}")
    if bool(record.suite.synthetic) != bool(suite.synthetic):
        problems.append(f"'suite.synthetic' is {record.suite.synthetic}, but suite {suite.name!r} "
                        f"{'is' if suite.synthetic else 'is not'} synthetic")
    ours = {part.name: part for part in suite.parts}
    recorded = [part.name for part in record.suite.parts]
    if recorded != list(ours):
        missing = [name for name in ours if name not in recorded]
        extra = [name for name in recorded if name not in ours]
        what = "; ".join(x for x in (f"lacks {_ids(missing)}" if missing else "",
                                    f"has {_ids(extra)}, which it does not" if extra else "") if x)
        problems.append(f"'suite.parts' are not suite {suite.name!r}'s parts, in order ({what or 'another order'})")
    for name, ranks in record.first_hit_ranks.items():
        part = ours.get(name)
        if part is None:
            continue
        expected = [q.id for q in part.questions]
        known = set(expected)
        missing = [qid for qid in expected if qid not in ranks]
        extra = [qid for qid in ranks if qid not in known]
        if missing:
            problems.append(f"'first_hit_ranks.{name}' lacks {len(missing):,} of the part's {len(expected):,} "
                            f"questions: {_ids(missing)}")
        if extra:
            problems.append(f"'first_hit_ranks.{name}' has {len(extra):,} questions the part does not: {_ids(extra)}")
    return problems


def check_metrics(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """Every metric, per part and macro-averaged, is what the installed metric gives from the ranks."""
    from harness import registry
    from harness.results.build import compute_metrics

    record = target.result.record
    installed = registry.metrics()
    problems = []
    for metric, values in record.metrics.items():
        if metric not in installed:
            problems.append(f"'metrics.{metric[:40]}' is a metric not installed here, so its values cannot be recomputed")
            continue
        expected = compute_metrics(record.first_hit_ranks, record.k, [metric])[metric]
        for part, by_k in expected["parts"].items():
            for k, value in by_k.items():
                problems.extend(_differs(f"'metrics.{metric}.parts.{part}'", k, values.parts[part][k], value))
        for k, value in expected["macro"].items():
            problems.extend(_differs(f"'metrics.{metric}.macro'", k, values.macro[k], value))
    return problems


def _differs(where: str, k: str, recorded: float, computed: float) -> list[str]:
    if abs(recorded - computed) <= _SLACK:
        return []
    return [f"{where} is {recorded!r} at k={k}, but the first-hit ranks give {computed!r}"]


def check_records(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """``versions`` names harness, Python and each stage's plugin with its version; ``machine``
    names the platform and the CPU count."""
    data = target.data
    versions, machine = data["versions"], data["machine"]
    problems = []
    for key in ("harness", "python"):
        value = versions.get(key)
        if not isinstance(value, str) or not value:
            problems.append(f"'versions.{key}' is missing: a result records the versions it was computed with")
    plugins = versions.get("plugins")
    if not isinstance(plugins, Mapping):
        problems.append("'versions.plugins' is missing: a result records its plugins' versions")
        plugins = {}
    for stage in ("retriever", "reranker"):
        block = data.get(stage)
        plugin = block.get("plugin") if isinstance(block, Mapping) else None
        if not plugin:
            continue
        entry = plugins.get(plugin)
        if not (isinstance(entry, Mapping) and isinstance(entry.get("version"), str) and entry["version"]):
            problems.append(f"'versions.plugins' has no version of {stage} plugin {plugin[:40]!r}")
    if not isinstance(machine.get("platform"), str) or not machine.get("platform"):
        problems.append("'machine.platform' is missing: a result records the machine it ran on")
    count = machine.get("cpu_count")
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 1):
        problems.append("'machine.cpu_count' is missing: a result records the machine it ran on")
    return problems


def _numbers(result: Result) -> dict[str, float]:
    """Every recorded number: ``metrics.M.macro`` and ``metrics.M.parts.P`` at each k."""
    out: dict[str, float] = {}
    for metric, values in result.record.metrics.items():
        for k, value in values.macro.items():
            out[f"'metrics.{metric}.macro' at k={k}"] = value
        for part, by_k in values.parts.items():
            for k, value in by_k.items():
                out[f"'metrics.{metric}.parts.{part}' at k={k}"] = value
    return out


def check_board(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """A result of this configuration and question set on the board agrees within
    :data:`BOARD_TOLERANCE_POINTS` on every number both record."""
    name = target.canonical_name
    mine = _numbers(target.result)
    problems = []
    for other in context.board_results():
        if other.path is None or other.path.resolve() == target.path.resolve():
            continue
        if canonical_name(other.data) != name or other.suite != target.result.suite:
            continue
        if other.questions_fingerprint != target.result.questions_fingerprint:
            continue
        theirs = _numbers(other)
        worst = max(((abs(mine[key] - theirs[key]) * 100, key) for key in mine.keys() & theirs.keys()), default=None)
        if worst is not None and worst[0] > BOARD_TOLERANCE_POINTS and not math.isclose(worst[0], BOARD_TOLERANCE_POINTS):
            key = worst[1]
            problems.append(
                f"the board's {other.path} holds this configuration with other numbers: {key} is "
                f"{100 * theirs[key]:.4f} there and {100 * mine[key]:.4f} here, {worst[0]:.4f} points apart "
                f"(at most {BOARD_TOLERANCE_POINTS} allowed)"
            )
    return problems


#: The checks every file that passes the schema goes through, in order.
def check_meta(target: ValidationTarget, context: ValidationContext) -> list[str]:
    """A recorded ``model`` block is what harness writes (each field of the right kind, the
    training sets as a list of names). A retriever that declares no training sets is valid: the
    board shows its rows' domain as unknown, never guessed (:mod:`harness.results.meta`)."""
    from harness.results.meta import metadata_problems

    return metadata_problems(target.result, unknown_training=False)


CHECKS: list[Check] = [check_text, check_identity, check_suite, check_metrics, check_records, check_meta, check_board]


__all__ = [
    "BOARD_TOLERANCE_POINTS", "CHECKS", "Check", "MAX_RESULT_BYTES", "MAX_TEXT", "ValidationContext",
    "ValidationReport", "ValidationTarget", "canonical_name", "check_board", "check_identity", "check_metrics",
    "check_meta", "check_records", "check_suite", "check_text", "result_paths", "validate_file", "validate_files",
]

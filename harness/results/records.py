"""The result document as a typed record: ``harness-result/1`` declared once as ``msgspec``
Structs, checked by ``msgspec.convert(..., type=ResultRecord)``.

The types say what each key holds (:class:`ResultRecord` and the Structs it nests); what types
cannot say is code here (:func:`validate`): ranges (ranks within ``depth``, cutoffs within it),
the parts named alike in ``suite.parts``, ``first_hit_ranks``, ``first_stage_ranks`` and every
metric, the metrics agreeing with the ranks, the time format of ``created``. A problem is one
:class:`InputFileError` naming the file and the field (``'first_hit_ranks.test.q7' must be null
or an integer in [0, 100)``): msgspec's ``$.a[...].b`` paths are named by their keys here.

The document itself stays the ``dict`` a result file holds (:class:`harness.results.schema.Result`
keeps it as ``data``, and writes it byte for byte as before); :attr:`Result.record` is this typed
view of it.
"""

from __future__ import annotations

import json
import math
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from harness.api import MATCH_MODES, MAX_K
from harness.errors import InputFileError
from harness.results.cost import check_cost
from harness.scoring.ranks import macro_average, top_k_accuracy

SCHEMA = "harness-result/1"

Ranks = dict[str, dict[str, int | None]]


class CorpusRecord(msgspec.Struct):
    """``suite.corpus``: its name, and its size and fingerprint when the run opened it."""

    name: str
    passages: int | None = None
    fingerprint: str | None = None


class PartRecord(msgspec.Struct):
    """One of ``suite.parts``: its name and how many questions it has."""

    name: str
    questions: int


class SuiteRecord(msgspec.Struct, kw_only=True):
    """``suite``: what was scored."""

    name: str
    description: str = ""
    synthetic: bool = False
    match: str
    questions_fingerprint: str
    parts: list[PartRecord]
    corpus: CorpusRecord


class StageRecord(msgspec.Struct, kw_only=True):
    """``retriever``: the first stage's name, plugin and parameters."""

    name: str
    plugin: str = ""
    parameters: dict[str, Any]


class RerankerRecord(StageRecord, kw_only=True):
    """``reranker``: the second stage, how deep it re-ranked, and the most it had to re-rank."""

    depth: int
    reranked: int | UnsetType = UNSET


class MetricRecord(msgspec.Struct):
    """One of ``metrics``: the value at each cutoff, macro-averaged and per part."""

    macro: dict[str, float]
    parts: dict[str, dict[str, float]]


class TiesRecord(msgspec.Struct, forbid_unknown_fields=True):
    """``ties``: the questions with equal scores across each cutoff, and those whose hit it decides."""

    tied: dict[str, int]
    decided: dict[str, int]


class ResultRecord(msgspec.Struct, kw_only=True):
    """A result document (schema ``harness-result/1``, :mod:`harness.results.schema`)."""

    schema: str
    created: str
    suite: SuiteRecord
    retriever: StageRecord
    reranker: RerankerRecord | UnsetType = UNSET
    matcher: str
    k: list[int]
    depth: int
    first_hit_ranks: Ranks
    metrics: dict[str, MetricRecord]
    timings: dict[str, float]
    versions: dict[str, Any]
    machine: dict[str, Any]
    compute: dict[str, Any] | UnsetType = UNSET
    ties: TiesRecord | UnsetType = UNSET
    cost: Any = UNSET
    first_stage_ranks: Ranks | UnsetType = UNSET


def record_of(data: Mapping[str, Any]) -> ResultRecord:
    """The typed record of a result document that :func:`validate` passed."""
    return msgspec.convert(data, type=ResultRecord, strict=True)


# -- naming a field from msgspec's path ----------------------------------------------------------

_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)
_MISSING = re.compile(r"Object missing required field `(?P<field>[^`]*)`")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+|\.\.\.)\]")


def _value_type(kind: Any) -> Any:
    """The type of a dict's values (``dict[str, X]`` -> X), through ``X | None`` and UNSET."""
    if typing.get_origin(kind) in (typing.Union, type(int | str)):
        args = [a for a in typing.get_args(kind) if a not in (type(None), UnsetType)]
        kind = args[0] if len(args) == 1 else kind
    return kind


def _field_type(kind: Any, name: str) -> Any:
    kind = _value_type(kind)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        for field in msgspec.structs.fields(kind):
            if field.encode_name == name:
                return field.type
    return Any


def converts(value: Any, kind: Any) -> bool:
    """Whether ``value`` converts to ``kind`` strictly (msgspec's own check, no coercion)."""
    try:
        msgspec.convert(value, type=kind, strict=True)
    except msgspec.ValidationError:
        return False
    return True


def field_path(data: Any, path: str) -> list[str | int]:
    """The keys and indexes of msgspec's ``path`` (``$.metrics[...].macro[...]``) in ``data``: a
    ``[...]`` (a dict's key msgspec does not name) is the first key of that dict whose value
    does not convert to the dict's value type."""
    steps: list[str | int] = []
    value, kind = data, ResultRecord
    for name, index in _STEP.findall(path[1:]):
        if name:
            steps.append(name)
            kind = _field_type(kind, name)
            value = value.get(name) if isinstance(value, Mapping) else None
        elif index == "...":
            kind = _value_type(kind)
            inner = typing.get_args(kind)[1] if typing.get_origin(kind) is dict else Any
            bad = next((k for k, v in value.items() if not converts(v, inner)), None) if isinstance(value, Mapping) else None
            if bad is None:
                break
            steps.append(bad)
            value, kind = value[bad], inner
        else:
            steps.append(int(index))
            kind = _value_type(kind)
            inner = typing.get_args(kind)[0] if typing.get_origin(kind) is list else Any
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
            kind = inner
    return steps


def dotted(steps: list[str | int]) -> str:
    """``suite.parts[1]``, ``first_hit_ranks.test.q7``: how messages name a field."""
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _top_kind(key: str) -> str:
    kind = _field_type(ResultRecord, key)
    origin = typing.get_origin(kind) or kind
    names = {dict: "dict", list: "list", str: "str", int: "int"}
    if isinstance(origin, type) and issubclass(origin, msgspec.Struct):
        return "dict"
    return names.get(origin, getattr(origin, "__name__", "value"))


def _described(steps: list[str | int], depth: Any) -> str:
    """What the field at ``steps`` must be, as the message about a value of the wrong type says."""
    where = dotted(steps)
    head, rest = steps[0], steps[1:]
    span = f"[0, {depth})" if isinstance(depth, int) and not isinstance(depth, bool) else "[0, 'depth')"
    if not rest:
        if head == "reranker":
            return "'reranker' must be a JSON object"
        if head == "compute":
            return "'compute' must be a JSON object"
        if head == "ties":
            return _TIES
        if head == "first_stage_ranks":
            return "'first_stage_ranks' must have exactly the parts of 'suite.parts', in order"
        return f"{where!r} must be a JSON {_top_kind(str(head))}"
    if head == "suite":
        key = rest[0]
        if key == "parts":
            if len(rest) == 1:
                return "'suite.parts' must be a non-empty list"
            return f"'suite.parts[{rest[1]}]' must be {{\"name\": text, \"questions\": count}}"
        if key == "corpus":
            if rest[1:] == ["passages"]:
                return "'suite.corpus.passages' must be a count or null"
            if rest[1:] == ["fingerprint"]:
                return "'suite.corpus.fingerprint' must be a string or null"
            return "'suite.corpus' must be an object with a 'name'"
        return {
            "name": "'suite.name' must be a non-empty string",
            "description": "'suite.description' must be a string",
            "synthetic": "'suite.synthetic' must be true or false",
            "match": f"'suite.match' must be one of {', '.join(MATCH_MODES)}",
            "questions_fingerprint": "'suite.questions_fingerprint' must be a string",
        }.get(str(key), f"{where!r} has the wrong type")
    if head in ("retriever", "reranker"):
        key = rest[0]
        if key == "name":
            return f"'{head}.name' must be a non-empty string"
        if key == "plugin":
            return f"'{head}.plugin' must be a string"
        if key == "parameters":
            return f"'{head}.parameters' must be a JSON object"
        if key == "depth":
            return f"'reranker.depth' must be an integer from 1 to {MAX_K}"
        if key == "reranked":
            return "'reranker.reranked' must be an integer from 0 to 'reranker.depth'"
    if head == "k":
        return "'k' must be a non-empty list of integers from 1 to 'depth'"
    if head in ("first_hit_ranks", "first_stage_ranks"):
        if len(rest) == 1:
            if head == "first_stage_ranks":
                return f"'first_stage_ranks.{rest[0]}' must have the questions of 'first_hit_ranks.{rest[0]}', in order"
            return f"'first_hit_ranks.{rest[0]}' must be a non-empty JSON object"
        return f"'{head}.{rest[0]}.{rest[1]}' must be null or an integer in {span}"
    if head == "metrics":
        metric = f"'metrics.{rest[0]}'"
        if len(rest) >= 2 and rest[1] == "macro":
            return f"{metric}.macro must give a finite number for every k"
        if len(rest) >= 3 and rest[1] == "parts":
            return f"{metric}.parts.{rest[2]} must give a finite number for every k"
        return f"{metric} must be {{\"macro\": {{k: value}}, \"parts\": {{part: {{k: value}}}}}}"
    if head == "timings":
        return "'timings' must map stages to seconds"
    if head == "ties":
        return _TIES
    return f"{where!r} has the wrong type"


_TIES = ("'ties' must be {\"tied\": {k: count}, \"decided\": {k: count}}, each decided count at most its "
         "tied count")


def _problem(error: msgspec.ValidationError, data: Mapping[str, Any]) -> str:
    """msgspec's complaint about ``data`` as harness names the field."""
    found = _AT.match(str(error))
    what, path = found.group("what"), found.group("path") or "$"
    steps = field_path(data, path)
    missing = _MISSING.fullmatch(what)
    if missing is not None:
        steps = [*steps, missing.group("field")]
        if steps[0] in ("ties", "metrics") or steps[:2] in (["suite", "corpus"],) or (
                steps[0] == "suite" and len(steps) > 2 and steps[1] == "parts"):
            return _described(steps, data.get("depth"))
        return f"missing key {dotted(steps)!r}"
    if what.startswith("Object contains unknown field"):
        return _described(steps or ["ties"], data.get("depth"))
    if what in ("Number out of range", "Integer value out of range"):
        return f"{dotted(steps)!r} is a number too large for a float"
    if not steps:
        return "expected a JSON object at the top level"
    return _described(steps, data.get("depth"))


# -- validation ------------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: float) -> bool:
    return math.isfinite(value)


def _too_large(value: Any, steps: list[str | int]) -> list[str | int] | None:
    """The first place in ``value`` (a free-form block: ``cost``) of an integer too large for a float."""
    if _is_int(value) and value.bit_length() > 1023:
        return steps
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        found = _too_large(inner, [*steps, key])
        if found is not None:
            return found
    return None


def validate(data: Any, *, source: object) -> ResultRecord:
    """The typed record of result document ``data``; any problem raises :class:`InputFileError`
    naming ``source`` and the first problem found.

    Every field any reader of results uses is checked for presence and type here, so a file that
    passes can be rendered, compared and scored without further checks.
    """
    def need(cond: bool, problem: str) -> None:
        if not cond:
            raise InputFileError(source, problem)

    need(isinstance(data, dict), "expected a JSON object at the top level")
    need(data.get("schema") == SCHEMA, f"expected \"schema\": \"{SCHEMA}\", got {str(data.get('schema'))[:40]!r}")
    try:
        record = record_of(data)
    except msgspec.ValidationError as error:
        raise InputFileError(source, _problem(error, data)) from None
    suite, retriever, depth = record.suite, record.retriever, record.depth
    need(suite.name != "", "'suite.name' must be a non-empty string")
    need(suite.match in MATCH_MODES, f"'suite.match' must be one of {', '.join(MATCH_MODES)}")
    need(bool(suite.parts), "'suite.parts' must be a non-empty list")
    for i, part in enumerate(suite.parts):
        need(part.name != "" and part.questions >= 0, f"'suite.parts[{i}]' must be {{\"name\": text, \"questions\": count}}")
    part_names = [p.name for p in suite.parts]
    need(len(set(part_names)) == len(part_names), "'suite.parts' names a part twice")
    need(suite.corpus.passages is None or suite.corpus.passages >= 0, "'suite.corpus.passages' must be a count or null")
    need(retriever.name != "", "'retriever.name' must be a non-empty string")
    if record.ties is not UNSET:
        ties = record.ties
        need(all(n >= 0 for n in (*ties.tied.values(), *ties.decided.values()))
             and all(n <= ties.tied.get(k, 0) for k, n in ties.decided.items()), _TIES)
    need(1 <= depth <= MAX_K, f"'depth' must be from 1 to {MAX_K}")
    reranker = record.reranker
    if reranker is not UNSET:
        need(reranker.name != "", "'reranker.name' must be a non-empty string")
        need(1 <= reranker.depth <= MAX_K, f"'reranker.depth' must be an integer from 1 to {MAX_K}")
        need(reranker.reranked is UNSET or 0 <= reranker.reranked <= reranker.depth,
             "'reranker.reranked' must be an integer from 0 to 'reranker.depth'")
    ks = record.k
    need(bool(ks) and all(1 <= k <= depth for k in ks), "'k' must be a non-empty list of integers from 1 to 'depth'")
    need(len(set(ks)) == len(ks), "'k' lists a cutoff twice")
    ranks = record.first_hit_ranks
    need(list(ranks) == part_names, "'first_hit_ranks' must have exactly the parts of 'suite.parts', in order")
    for part in suite.parts:
        by_question = ranks[part.name]
        need(bool(by_question), f"'first_hit_ranks.{part.name}' must be a non-empty JSON object")
        for qid, rank in by_question.items():
            need(rank is None or 0 <= rank < depth,
                 f"'first_hit_ranks.{part.name}.{qid}' must be null or an integer in [0, {depth})")
        need(len(by_question) == part.questions,
             f"'first_hit_ranks.{part.name}' has {len(by_question)} questions, 'suite.parts' says {part.questions}")
    first = record.first_stage_ranks
    if first is not UNSET:
        need(reranker is not UNSET, "'first_stage_ranks' is only for a re-ranked result (one with 'reranker')")
        need(list(first) == part_names, "'first_stage_ranks' must have exactly the parts of 'suite.parts', in order")
        for part in part_names:
            need(list(first[part]) == list(ranks[part]),
                 f"'first_stage_ranks.{part}' must have the questions of 'first_hit_ranks.{part}', in order")
            for qid, rank in first[part].items():
                need(rank is None or 0 <= rank < depth,
                     f"'first_stage_ranks.{part}.{qid}' must be null or an integer in [0, {depth})")
    if record.cost is not UNSET:
        large = _too_large(record.cost, ["cost"])
        need(large is None, f"{dotted(large or [])!r} is a number too large for a float")
        problem = check_cost(record.cost)
        need(problem is None, problem or "")
    keys = [str(k) for k in ks]
    for metric, values in record.metrics.items():
        where = f"'metrics.{metric}'"
        need(all(k in values.macro and _finite(values.macro[k]) for k in keys),
             f"{where}.macro must give a finite number for every k")
        for part in part_names:
            by_k = values.parts.get(part)
            need(by_k is not None and all(k in by_k and _finite(by_k[k]) for k in keys),
                 f"{where}.parts.{part} must give a finite number for every k")
    need(all(_finite(v) for v in record.timings.values()), "'timings' must map stages to seconds")
    _check_consistency(record, need)
    return record


#: Slack when comparing recorded metric values with what the ranks give: JSON keeps a float exactly,
#: so only another writer's arithmetic can differ, and by far less than this.
_SLACK = 1e-9
_CREATED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _check_consistency(record: ResultRecord, need: Callable[[bool, str], None]) -> None:
    """Checks that the parts of a result agree with each other, so that a hand-edited or forged
    file is refused rather than compared: ``created`` is a UTC time (the newest result of a
    configuration wins by it); every metric gives a value for exactly the cutoffs of ``k`` and the
    parts of ``suite.parts``, each in [0, 1] (:class:`harness.api.MetricSpec`), with ``macro`` the
    mean over parts; and the ``accuracy`` metric, the core's own, is what ``first_hit_ranks`` give."""
    created = record.created
    need(bool(_CREATED.fullmatch(created)) and _valid_time(created),
         f"'created' must be a UTC time YYYY-MM-DDTHH:MM:SSZ, got {created[:40]!r}")
    keys = {str(k) for k in record.k}
    part_names = [p.name for p in record.suite.parts]
    ranks = record.first_hit_ranks
    for metric, values in record.metrics.items():
        where = f"'metrics.{metric}'"
        for extra in sorted(set(values.macro) - keys)[:1]:
            need(False, f"{where}.macro has a value for cutoff {extra[:20]!r}, which 'k' does not list")
        for extra in sorted(set(values.parts) - set(part_names))[:1]:
            need(False, f"{where}.parts names part {extra[:40]!r}, which 'suite.parts' does not list")
        for part in part_names:
            for extra in sorted(set(values.parts[part]) - keys)[:1]:
                need(False, f"{where}.parts.{part} has a value for cutoff {extra[:20]!r}, which 'k' does not list")
        for k in sorted(keys, key=int):
            by_part = {part: values.parts[part][k] for part in part_names}
            for part, value in by_part.items():
                need(0 <= value <= 1, f"{where}.parts.{part} is {value!r} at k={k}; a metric is from 0 to 1")
                if metric == "accuracy":
                    actual = top_k_accuracy(list(ranks[part].values()), int(k))
                    need(abs(value - actual) <= _SLACK,
                         f"{where}.parts.{part} is {value!r} at k={k}, but its first-hit ranks give {actual!r}")
            mean = macro_average(by_part)
            need(abs(values.macro[k] - mean) <= _SLACK,
                 f"{where}.macro is {values.macro[k]!r} at k={k}, but the mean over its parts is {mean!r}")


def _valid_time(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


# -- integers of more digits than Python converts ---------------------------------------------------


class _LongInteger:
    """An integer literal of more digits than ``int()`` converts (4,300), kept as its text."""

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def long_integer_problem(text: str) -> str | None:
    """Where the JSON ``text`` has an integer of more digits than Python converts, named as a
    field (``'timings.search' is an integer of 5001 digits``); None when it has none."""
    def parse_int(literal: str) -> Any:
        try:
            return int(literal)
        except ValueError:
            return _LongInteger(literal)

    try:
        data = json.loads(text, parse_int=parse_int)
    except (ValueError, RecursionError):
        return None

    def find(value: Any, steps: list[str | int]) -> tuple[list[str | int], _LongInteger] | None:
        if isinstance(value, _LongInteger):
            return steps, value
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, inner in items:
            found = find(inner, [*steps, key])
            if found is not None:
                return found
        return None

    found = find(data, [])
    if found is None:
        return None
    steps, number = found
    where = repr(dotted(steps)) if steps else "the document"
    return f"{where} is an integer of {number.digits:,} digits, more than a number in a result file can have"


__all__ = [
    "CorpusRecord", "MetricRecord", "PartRecord", "RerankerRecord", "ResultRecord", "SCHEMA", "StageRecord",
    "SuiteRecord", "TiesRecord", "dotted", "field_path", "long_integer_problem", "record_of", "validate",
]

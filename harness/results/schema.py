"""The result file: one JSON document per (suite, retriever configuration) run.

Schema ``harness-result/1`` (every key is required unless marked optional)::

    {
      "schema": "harness-result/1",
      "created": "2026-11-21T09:30:00Z",                  # UTC, when the run finished
      "suite": {"name", "description", "synthetic", "match", "questions_fingerprint",
                "parts": [{"name", "questions"}],
                "corpus": {"name", "passages", "fingerprint"}},
      "retriever": {"name", "plugin", "parameters": {...}},
      "reranker": {"name", "plugin", "parameters": {...}, "depth",    # optional: a second stage
                   "reranked"},                             # optional: the most it re-ranked, if less
      "matcher": "dpr-has-answer/1",
      "k": [1, 5, 20, 100],
      "depth": 100,                                         # passages retrieved per question
      "first_hit_ranks": {part: {question_id: rank or null}},
      "metrics": {metric: {"macro": {k: value}, "parts": {part: {k: value}}}},
      "timings": {stage: seconds},
      "versions": {"harness", "python", "plugins": {...}, "packages": {...}},
      "machine": {...}
      "compute": {"world_size", "retriever": {...}, "reranker": {...}}   # optional: how it ran
      "ties": {"tied": {k: n}, "decided": {k: n}}         # optional: ties at the cutoffs
      "cost": {"device_kind", "device_count", "gpu_hours", ...}  # optional: what it cost
      "first_stage_ranks": {part: {question_id: rank or null}}  # optional, re-ranked: before it
    }

``ties`` (:mod:`harness.scoring.ties`) counts, at each k, the questions whose final ranking has
equal scores across the cutoff (``tied``) and those whose top-k hit that tie order decides
(``decided``): the accuracy at k depends on tie order by at most ``decided / n``.

Everything in ``metrics`` is derived from ``first_hit_ranks``; readers that need another k up to
``depth`` recompute it from the ranks.

A re-ranked run is a chain: ``retriever`` is the first stage (its parameters as without
re-ranking), ``reranker`` the re-ranker that re-ordered its top ``reranker.depth`` hits (at most
``depth``). A question whose first stage had fewer hits has only those re-ranked: when no
question had ``reranker.depth``, ``reranker.reranked`` is the most any question had
(``min(depth, hits)``, the largest over the questions), and labels show it. The configuration, and so
the leaderboard row and the file name, covers both stages (``reranked`` aside: it is what the
configuration did, not part of it); results without ``reranker`` keep the keys and file names they
always had. A re-ranked result keeps its first stage's first-hit ranks (``first_stage_ranks``, same
questions): the re-ranker's ceiling is the share of questions whose first stage had an answer in
its top ``reranker.depth`` (:mod:`harness.analysis.ceiling`).

``cost`` (:mod:`harness.results.cost`) is what the run cost: devices, GPU-hours, peak host and GPU
memory, index and embedding bytes, passages encoded and questions searched per second.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.util.atomic import write_text_atomic
from harness.api import MATCH_MODES, MAX_K
from harness.results.cost import check_cost
from harness.util import jsonio
from harness.errors import HarnessError, InputFileError
from harness.scoring.ranks import macro_average, top_k_accuracy

SCHEMA = "harness-result/1"


@dataclass(frozen=True)
class Result:
    """A parsed result document; ``data`` is the JSON object, validated."""

    data: Mapping[str, Any]
    path: Path | None = None

    @property
    def suite(self) -> str:
        return self.data["suite"]["name"]

    @property
    def retriever(self) -> str:
        return self.data["retriever"]["name"]

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.data["retriever"]["parameters"]

    @property
    def reranker(self) -> Mapping[str, Any] | None:
        """The second stage's block (name, plugin, parameters, depth), or None."""
        return self.data.get("reranker")

    @property
    def label(self) -> str:
        """The configuration's retriever (chain) name: ``bm25``, or ``bm25 » upr(t5-large-lm-adapt)``.
        What compare, plot and the leaderboard show is :func:`harness.results.labels.result_label`,
        which adds a trained checkpoint's variant, training data and digest to this."""
        return chain_label(self.retriever, self.reranker)

    @property
    def depth(self) -> int:
        return self.data["depth"]

    @property
    def ranks(self) -> Mapping[str, Mapping[str, int | None]]:
        return self.data["first_hit_ranks"]

    def accuracy(self, k: int) -> tuple[dict[str, float], float] | None:
        """Top-k accuracy per part and its macro average, from the ranks; None when k > depth."""
        if k > self.depth:
            return None
        parts = {name: top_k_accuracy(list(ranks.values()), k) for name, ranks in self.ranks.items()}
        return parts, macro_average(parts)

    def config_key(self) -> str:
        """A short digest of the retriever's name and parameters (and the re-ranker's block): one
        leaderboard row each."""
        return config_digest(self.retriever, self.parameters, self.reranker)


def config_digest(retriever: str, parameters: Mapping[str, Any], reranker: Mapping[str, Any] | None = None) -> str:
    if reranker is not None:
        reranker = {key: value for key, value in reranker.items() if key != "reranked"}
    chain = [retriever, parameters] if reranker is None else [retriever, parameters, reranker]
    blob = json.dumps(chain, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]


#: Parameters whose value names a re-ranker in a chain's label, in order of preference.
_LABEL_KEYS = ("model", "path", "checkpoint")


def chain_label(retriever: str, reranker: Mapping[str, Any] | None) -> str:
    """``RETRIEVER``, or ``RETRIEVER » RERANKER(MODEL, top-N)`` for a re-ranked run: MODEL is the
    last part of the re-ranker's ``model`` (or ``path``) parameter without a content digest, N how
    many first-stage hits it re-ranked (two depths are two configurations): ``top-5 of 100 asked``
    when no question had more than 5 hits to re-rank (``reranked``)."""
    if not reranker:
        return retriever
    parameters = reranker.get("parameters") or {}
    short = ""
    for key in _LABEL_KEYS:
        value = parameters.get(key)
        if isinstance(value, str) and value:
            value = re.sub(r"\s*\([^()]*\)$", "", value).rstrip("/")
            short = value.rsplit("/", 1)[-1]
            break
    depth = f"top-{reranker['depth']}" if "depth" in reranker else ""
    reranked = reranker.get("reranked")
    if depth and isinstance(reranked, int) and reranked < reranker["depth"]:
        depth = f"top-{reranked} of {reranker['depth']} asked"
    inside = ", ".join(x for x in (short, depth) if x)
    return f"{retriever} » {reranker['name']}" + (f"({inside})" if inside else "")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def result_filename(
    suite: str, retriever: str, parameters: Mapping[str, Any], reranker: Mapping[str, Any] | None = None
) -> str:
    """``SUITE--RETRIEVER--DIGEST.json`` (``SUITE--RETRIEVER+RERANKER--DIGEST.json`` for a chain):
    a later run of the same configuration replaces it."""
    name = _slug(retriever) if not reranker else f"{_slug(retriever)}+{_slug(reranker['name'])}"
    return f"{_slug(suite)}--{name}--{config_digest(retriever, parameters, reranker)}.json"


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def write_result(data: Mapping[str, Any], results_dir: str | Path, *, replace: bool = False) -> Path:
    """Validate and write a result document atomically; returns its path.

    A result file of the same suite and configuration is replaced, except (unless ``replace``)
    when it covers more (a cutoff the new one lacks, a deeper retrieval) or another question set:
    that is an error naming both, never a silent loss.
    """
    validate(data, source="<new result>")
    name = result_filename(
        data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"], data.get("reranker")
    )
    path = Path(results_dir) / name
    if not replace and path.exists():
        try:
            old = read_result(path).data
        except InputFileError:
            old = None  # unreadable: nothing to lose
        if old is not None:
            problem = replacement_loss(old, data)
            if problem:
                raise HarnessError(
                    f"{path} holds a result of this configuration with {problem}; not replacing it "
                    f"(replace it explicitly, or write elsewhere with --results-dir)"
                )
    return write_text_atomic(path, dumps(data))


def replacement_loss(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """What replacing result ``old`` by ``new`` would lose, or None."""
    if old["suite"]["questions_fingerprint"] != new["suite"]["questions_fingerprint"]:
        return "another question set (questions fingerprint differs)"
    lost = sorted(set(old["k"]) - set(new["k"]))
    if lost:
        return f"cutoffs {', '.join(map(str, lost))} that the new one lacks (k={','.join(map(str, new['k']))})"
    if old["depth"] > new["depth"]:
        return f"a deeper retrieval ({old['depth']} passages per question, the new one {new['depth']})"
    lost_metrics = sorted(set(old["metrics"]) - set(new["metrics"]))
    if lost_metrics:
        return f"metrics the new one lacks ({', '.join(lost_metrics)})"
    return None


def check_results_dir(results_dir: str | Path, *, flag: str = "--results-dir") -> Path:
    """``results_dir`` when files can be written there (it exists as a writable folder, or can be
    created in its nearest existing parent); else a one-line error, before any work is done.
    Nothing is created here."""
    path = Path(results_dir)
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise HarnessError(f"{flag} {path}: {probe} is a broken symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        what = "exists and is not a directory" if probe == path else f"{probe} is not a directory"
        raise HarnessError(f"{flag} {path}: {what}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise HarnessError(f"{flag} {path}: {probe} is not writable")
    return path


def _require(cond: bool, source: object, problem: str) -> None:
    if not cond:
        raise InputFileError(source, problem)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def validate(data: Any, *, source: object) -> None:
    """Raise :class:`InputFileError` naming ``source`` and the first problem found.

    Every field any reader of results uses is checked for presence and type here, so a file that
    passes can be rendered, compared and scored without further checks.
    """
    def need(cond: bool, problem: str) -> None:
        _require(cond, source, problem)

    need(isinstance(data, dict), "expected a JSON object at the top level")
    need(data.get("schema") == SCHEMA, f"expected \"schema\": \"{SCHEMA}\", got {str(data.get('schema'))[:40]!r}")
    for key, kind in (
        ("suite", dict), ("retriever", dict), ("matcher", str), ("k", list), ("depth", int),
        ("first_hit_ranks", dict), ("metrics", dict), ("timings", dict), ("versions", dict),
        ("machine", dict), ("created", str),
    ):
        need(key in data, f"missing key {key!r}")
        need(isinstance(data[key], kind) and not isinstance(data[key], bool), f"{key!r} must be a JSON {kind.__name__}")
    suite, retriever = data["suite"], data["retriever"]
    for key in ("name", "match", "parts", "questions_fingerprint", "corpus"):
        need(key in suite, f"missing key 'suite.{key}'")
    need(_text(suite["name"]), "'suite.name' must be a non-empty string")
    need(isinstance(suite.get("description", ""), str), "'suite.description' must be a string")
    need(isinstance(suite.get("synthetic", False), bool), "'suite.synthetic' must be true or false")
    need(suite["match"] in MATCH_MODES, f"'suite.match' must be one of {', '.join(MATCH_MODES)}")
    need(isinstance(suite["questions_fingerprint"], str), "'suite.questions_fingerprint' must be a string")
    parts = suite["parts"]
    need(isinstance(parts, list) and parts, "'suite.parts' must be a non-empty list")
    for i, part in enumerate(parts):
        need(isinstance(part, dict) and _text(part.get("name")) and _is_int(part.get("questions"))
             and part["questions"] >= 0, f"'suite.parts[{i}]' must be {{\"name\": text, \"questions\": count}}")
    part_names = [p["name"] for p in parts]
    need(len(set(part_names)) == len(part_names), "'suite.parts' names a part twice")
    corpus = suite["corpus"]
    need(isinstance(corpus, dict) and isinstance(corpus.get("name"), str), "'suite.corpus' must be an object with a 'name'")
    need(corpus.get("passages") is None or (_is_int(corpus["passages"]) and corpus["passages"] >= 0),
         "'suite.corpus.passages' must be a count or null")
    need(corpus.get("fingerprint") is None or isinstance(corpus["fingerprint"], str),
         "'suite.corpus.fingerprint' must be a string or null")
    for key in ("name", "parameters"):
        need(key in retriever, f"missing key 'retriever.{key}'")
    need(_text(retriever["name"]), "'retriever.name' must be a non-empty string")
    need(isinstance(retriever.get("plugin", ""), str), "'retriever.plugin' must be a string")
    need(isinstance(retriever["parameters"], dict), "'retriever.parameters' must be a JSON object")
    need(isinstance(data.get("compute", {}), dict), "'compute' must be a JSON object")
    ties = data.get("ties", {"tied": {}, "decided": {}})
    need(isinstance(ties, dict) and set(ties) == {"tied", "decided"}
         and all(isinstance(ties[key], dict) and all(isinstance(k, str) and _is_int(n) and n >= 0 for k, n in ties[key].items())
                 for key in ("tied", "decided"))
         and all(n <= ties["tied"].get(k, 0) for k, n in ties["decided"].items()),
         "'ties' must be {\"tied\": {k: count}, \"decided\": {k: count}}, each decided count at most its tied count")
    depth = data["depth"]
    need(1 <= depth <= MAX_K, f"'depth' must be from 1 to {MAX_K}")
    if "reranker" in data:
        reranker = data["reranker"]
        need(isinstance(reranker, dict), "'reranker' must be a JSON object")
        for key in ("name", "parameters", "depth"):
            need(key in reranker, f"missing key 'reranker.{key}'")
        need(_text(reranker["name"]), "'reranker.name' must be a non-empty string")
        need(isinstance(reranker.get("plugin", ""), str), "'reranker.plugin' must be a string")
        need(isinstance(reranker["parameters"], dict), "'reranker.parameters' must be a JSON object")
        need(_is_int(reranker["depth"]) and 1 <= reranker["depth"] <= MAX_K,
             f"'reranker.depth' must be an integer from 1 to {MAX_K}")
        need("reranked" not in reranker or (_is_int(reranker["reranked"]) and 0 <= reranker["reranked"] <= reranker["depth"]),
             "'reranker.reranked' must be an integer from 0 to 'reranker.depth'")
    ks = data["k"]
    need(bool(ks) and all(_is_int(k) and 1 <= k <= depth for k in ks), "'k' must be a non-empty list of integers from 1 to 'depth'")
    need(len(set(ks)) == len(ks), "'k' lists a cutoff twice")
    ranks = data["first_hit_ranks"]
    need(list(ranks) == part_names, "'first_hit_ranks' must have exactly the parts of 'suite.parts', in order")
    for part, count in zip(part_names, (p["questions"] for p in parts)):
        by_question = ranks[part]
        need(isinstance(by_question, dict) and by_question, f"'first_hit_ranks.{part}' must be a non-empty JSON object")
        for qid, rank in by_question.items():
            ok = rank is None or (_is_int(rank) and 0 <= rank < depth)
            need(ok, f"'first_hit_ranks.{part}.{qid}' must be null or an integer in [0, {depth})")
        need(len(by_question) == count, f"'first_hit_ranks.{part}' has {len(by_question)} questions, 'suite.parts' says {count}")
    if "first_stage_ranks" in data:
        first = data["first_stage_ranks"]
        need("reranker" in data, "'first_stage_ranks' is only for a re-ranked result (one with 'reranker')")
        need(isinstance(first, dict) and list(first) == part_names,
             "'first_stage_ranks' must have exactly the parts of 'suite.parts', in order")
        for part in part_names:
            by_question = first[part]
            need(isinstance(by_question, dict) and list(by_question) == list(ranks[part]),
                 f"'first_stage_ranks.{part}' must have the questions of 'first_hit_ranks.{part}', in order")
            for qid, rank in by_question.items():
                need(rank is None or (_is_int(rank) and 0 <= rank < depth),
                     f"'first_stage_ranks.{part}.{qid}' must be null or an integer in [0, {depth})")
    if "cost" in data:
        problem = check_cost(data["cost"])
        need(problem is None, problem or "")
    keys = [str(k) for k in ks]
    for metric, values in data["metrics"].items():
        where = f"'metrics.{metric}'"
        need(isinstance(values, dict) and isinstance(values.get("macro"), dict) and isinstance(values.get("parts"), dict),
             f"{where} must be {{\"macro\": {{k: value}}, \"parts\": {{part: {{k: value}}}}}}")
        need(all(k in values["macro"] and _is_number(values["macro"][k]) for k in keys),
             f"{where}.macro must give a finite number for every k")
        for part in part_names:
            by_k = values["parts"].get(part)
            need(isinstance(by_k, dict) and all(k in by_k and _is_number(by_k[k]) for k in keys),
                 f"{where}.parts.{part} must give a finite number for every k")
    need(all(isinstance(k, str) and _is_number(v) for k, v in data["timings"].items()), "'timings' must map stages to seconds")
    _check_consistency(data, need)


#: Slack when comparing recorded metric values with what the ranks give: JSON keeps a float exactly,
#: so only another writer's arithmetic can differ, and by far less than this.
_SLACK = 1e-9
_CREATED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _check_consistency(data: Mapping[str, Any], need: Callable[[bool, str], None]) -> None:
    """Checks that the parts of a result agree with each other, so that a hand-edited or forged
    file is refused rather than compared: ``created`` is a UTC time (the newest result of a
    configuration wins by it); every metric gives a value for exactly the cutoffs of ``k`` and the
    parts of ``suite.parts``, each in [0, 1] (:class:`harness.api.MetricSpec`), with ``macro`` the
    mean over parts; and the ``accuracy`` metric, the core's own, is what ``first_hit_ranks`` give."""
    created = data["created"]
    need(bool(_CREATED.fullmatch(created)) and _valid_time(created),
         f"'created' must be a UTC time YYYY-MM-DDTHH:MM:SSZ, got {created[:40]!r}")
    keys = {str(k) for k in data["k"]}
    part_names = [p["name"] for p in data["suite"]["parts"]]
    ranks = data["first_hit_ranks"]
    for metric, values in data["metrics"].items():
        where = f"'metrics.{metric}'"
        for extra in sorted(set(values["macro"]) - keys)[:1]:
            need(False, f"{where}.macro has a value for cutoff {extra[:20]!r}, which 'k' does not list")
        for extra in sorted(set(values["parts"]) - set(part_names))[:1]:
            need(False, f"{where}.parts names part {extra[:40]!r}, which 'suite.parts' does not list")
        for part in part_names:
            for extra in sorted(set(values["parts"][part]) - keys)[:1]:
                need(False, f"{where}.parts.{part} has a value for cutoff {extra[:20]!r}, which 'k' does not list")
        for k in sorted(keys, key=int):
            by_part = {part: values["parts"][part][k] for part in part_names}
            for part, value in by_part.items():
                need(0 <= value <= 1, f"{where}.parts.{part} is {value!r} at k={k}; a metric is from 0 to 1")
                if metric == "accuracy":
                    actual = top_k_accuracy(list(ranks[part].values()), int(k))
                    need(abs(value - actual) <= _SLACK,
                         f"{where}.parts.{part} is {value!r} at k={k}, but its first-hit ranks give {actual!r}")
            mean = macro_average(by_part)
            need(abs(values["macro"][k] - mean) <= _SLACK,
                 f"{where}.macro is {values['macro'][k]!r} at k={k}, but the mean over its parts is {mean!r}")


def _valid_time(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


def read_result(path: str | Path) -> Result:
    """Read and validate a result file; any problem raises :class:`InputFileError` naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read result file: {getattr(exc, 'strerror', None) or exc}") from None
    data = jsonio.loads(text, source=path)
    validate(data, source=path)
    _check_file_name(data, path)
    return Result(data, path)


#: A file name in harness's own form, ``SUITE--RETRIEVER--DIGEST.json`` (see :func:`result_filename`).
_HARNESS_NAME = re.compile(r".+--.+--[0-9a-f]{8}\.json")


def _check_file_name(data: Mapping[str, Any], path: Path) -> None:
    """A file named as harness names results must hold the configuration its name says: the name
    is what a later run of that configuration replaces, so a renamed or forged file would sit in
    another configuration's place. Files named otherwise (``a.json``) are the user's choice."""
    if not _HARNESS_NAME.fullmatch(path.name):
        return
    expected = result_filename(
        data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"], data.get("reranker")
    )
    _require(path.name == expected, path,
             f"the file name does not match the configuration it holds, which harness names {expected}")


def read_results(
    results_dir: str | Path, *, on_error: Callable[[InputFileError], None] | None = None
) -> list[Result]:
    """Every ``*.json`` result in ``results_dir`` (sorted by file name). A file that cannot be
    read or fails validation raises :class:`InputFileError`; with ``on_error`` it is handed to it
    and left out instead, and the other files are read."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    results = []
    for path in sorted(results_dir.glob("*.json")):
        try:
            results.append(read_result(path))
        except InputFileError as error:
            if on_error is None:
                raise
            on_error(error)
    return results

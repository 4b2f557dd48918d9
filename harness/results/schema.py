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
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.util.atomic import write_text_atomic
from harness.util import jsonio
from harness.errors import HarnessError, InputFileError
from harness.results.report import one_line
from harness.results.records import SCHEMA, ResultRecord, long_integer_problem, record_of, validate
from harness.scoring.ranks import macro_average, top_k_accuracy


@dataclass(frozen=True)
class Result:
    """A parsed result document; ``data`` is the JSON object, validated, and :attr:`record` its
    typed view (:class:`harness.results.records.ResultRecord`)."""

    data: Mapping[str, Any]
    path: Path | None = None

    @property
    def record(self) -> ResultRecord:
        """The document as typed attributes: ``result.record.suite.questions_fingerprint``."""
        record = self.__dict__.get("_record")
        if record is None:
            record = record_of(self.data)
            object.__setattr__(self, "_record", record)
        return record

    @property
    def suite(self) -> str:
        return self.record.suite.name

    @property
    def retriever(self) -> str:
        return self.record.retriever.name

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.record.retriever.parameters

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
        return self.record.depth

    @property
    def ranks(self) -> Mapping[str, Mapping[str, int | None]]:
        return self.record.first_hit_ranks

    @property
    def created(self) -> str:
        """When the run finished (UTC, ``YYYY-MM-DDTHH:MM:SSZ``)."""
        return self.record.created

    @property
    def ks(self) -> list[int]:
        """The cutoffs the result reports."""
        return self.record.k

    @property
    def questions_fingerprint(self) -> str:
        return self.record.suite.questions_fingerprint

    @property
    def part_names(self) -> list[str]:
        return [part.name for part in self.record.suite.parts]

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
    a later run of the same configuration replaces it. SUITE is the suite's name as a file name,
    one to one (:func:`~harness.util.filenames.file_stem`: a name that is not a safe file name gets
    a digest of it); RETRIEVER and RERANKER are their names' letters, digits, ``.``, ``_`` and
    ``-``, at most :data:`~harness.util.filenames.STEM_MAX` characters each (DIGEST, of the whole
    configuration, tells names apart), so a long name never makes the file name too long."""
    from harness.util.filenames import STEM_MAX, file_stem

    name = _slug(retriever)[:STEM_MAX]
    if reranker:
        name += f"+{_slug(reranker['name'])[:STEM_MAX]}"
    return f"{file_stem(suite)}--{name}--{config_digest(retriever, parameters, reranker)}.json"


def _former_filename(
    suite: str, retriever: str, parameters: Mapping[str, Any], reranker: Mapping[str, Any] | None = None
) -> str:
    """The name :func:`result_filename` gave before suite names became file names one to one
    (the suite's slug alone); files so named are still read as harness's own."""
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
        if old is not None and old["suite"]["name"] != data["suite"]["name"]:
            raise HarnessError(
                f"{path} holds a result of suite {one_line(old['suite']['name'])!r} (named as harness named results "
                f"of it before), not of {one_line(data['suite']['name'])!r}; not replacing it (move it, or write "
                f"elsewhere with --results-dir)"
            )
        if old is not None:
            problem = replacement_loss(old, data)
            if problem:
                raise HarnessError(
                    f"{path} holds a result of this configuration with {problem}; not replacing it "
                    f"(replace it explicitly, or write elsewhere with --results-dir)"
                )
    try:
        return write_text_atomic(path, dumps(data))
    except OSError as exc:
        raise HarnessError(f"{path}: cannot write the result: {exc.strerror or exc}") from None


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


def read_result(path: str | Path) -> Result:
    """Read and validate a result file; any problem raises :class:`InputFileError` naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read result file: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = jsonio.loads(text, source=path)
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise InputFileError(path, long_integer_problem(text) or "an integer of more digits than a number can have") from None
    record = validate(data, source=path)
    _check_file_name(data, path)
    result = Result(data, path)
    object.__setattr__(result, "_record", record)
    return result


#: A file name in harness's own form, ``SUITE--RETRIEVER--DIGEST.json`` (see :func:`result_filename`).
_HARNESS_NAME = re.compile(r".+--.+--[0-9a-f]{8}\.json")


def _check_file_name(data: Mapping[str, Any], path: Path) -> None:
    """A file named as harness names results must hold the configuration its name says: the name
    is what a later run of that configuration replaces, so a renamed or forged file would sit in
    another configuration's place. Files named otherwise (``a.json``) are the user's choice."""
    if not _HARNESS_NAME.fullmatch(path.name):
        return
    configuration = (data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"], data.get("reranker"))
    expected = result_filename(*configuration)
    _require(path.name in (expected, _former_filename(*configuration)), path,
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

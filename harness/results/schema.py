"""The result file: one JSON document per (suite, retriever configuration) run.

Schema ``harness-result/1`` (every key is required unless marked optional)::

    {
      "schema": "harness-result/1",
      "created": "2026-11-21T09:30:00Z",                  # UTC, when the run finished
      "suite": {"name", "description", "synthetic", "match", "questions_fingerprint",
                "parts": [{"name", "questions"}],
                "corpus": {"name", "passages", "fingerprint"}},
      "retriever": {"name", "plugin", "parameters": {...}},
      "matcher": "dpr-has-answer/1",
      "k": [1, 5, 20, 100],
      "depth": 100,                                         # passages retrieved per question
      "first_hit_ranks": {part: {question_id: rank or null}},
      "metrics": {metric: {"macro": {k: value}, "parts": {part: {k: value}}}},
      "timings": {stage: seconds},
      "versions": {"harness", "python", "plugins": {...}, "packages": {...}},
      "machine": {...}
    }

Everything in ``metrics`` is derived from ``first_hit_ranks``; readers that need another k up to
``depth`` recompute it from the ranks.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.util.atomic import write_text_atomic
from harness.errors import InputFileError
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
        """A short digest of the retriever's name and parameters: one leaderboard row each."""
        return config_digest(self.retriever, self.parameters)


def config_digest(retriever: str, parameters: Mapping[str, Any]) -> str:
    blob = json.dumps([retriever, parameters], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def result_filename(suite: str, retriever: str, parameters: Mapping[str, Any]) -> str:
    """``SUITE--RETRIEVER--DIGEST.json``: a later run of the same configuration replaces it."""
    return f"{_slug(suite)}--{_slug(retriever)}--{config_digest(retriever, parameters)}.json"


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def write_result(data: Mapping[str, Any], results_dir: str | Path) -> Path:
    """Validate and write a result document atomically; returns its path."""
    validate(data, source="<new result>")
    name = result_filename(data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"])
    return write_text_atomic(Path(results_dir) / name, dumps(data))


def _require(cond: bool, source: object, problem: str) -> None:
    if not cond:
        raise InputFileError(source, problem)


def validate(data: Any, *, source: object) -> None:
    """Raise :class:`InputFileError` naming ``source`` and the first problem found."""
    _require(isinstance(data, dict), source, "expected a JSON object at the top level")
    _require(data.get("schema") == SCHEMA, source, f"expected \"schema\": \"{SCHEMA}\", got {data.get('schema')!r}")
    for key, kind in (
        ("suite", dict), ("retriever", dict), ("matcher", str), ("k", list), ("depth", int),
        ("first_hit_ranks", dict), ("metrics", dict), ("timings", dict), ("versions", dict),
        ("machine", dict), ("created", str),
    ):
        _require(key in data, source, f"missing key {key!r}")
        _require(isinstance(data[key], kind), source, f"{key!r} must be a JSON {kind.__name__}")
    suite, retriever = data["suite"], data["retriever"]
    for key in ("name", "match", "parts", "questions_fingerprint", "corpus"):
        _require(key in suite, source, f"missing key 'suite.{key}'")
    _require(isinstance(suite["name"], str) and suite["name"] != "", source, "'suite.name' must be a non-empty string")
    for key in ("name", "parameters"):
        _require(key in retriever, source, f"missing key 'retriever.{key}'")
    _require(isinstance(retriever["name"], str) and retriever["name"] != "", source, "'retriever.name' must be a non-empty string")
    _require(isinstance(retriever["parameters"], dict), source, "'retriever.parameters' must be a JSON object")
    depth = data["depth"]
    _require(depth >= 1, source, "'depth' must be at least 1")
    _require(all(isinstance(k, int) and 1 <= k for k in data["k"]), source, "'k' must be a list of positive integers")
    ranks = data["first_hit_ranks"]
    _require(len(ranks) > 0, source, "'first_hit_ranks' has no parts")
    for part, by_question in ranks.items():
        _require(isinstance(by_question, dict) and by_question, source, f"'first_hit_ranks.{part}' must be a non-empty JSON object")
        for qid, rank in by_question.items():
            ok = rank is None or (isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank < depth)
            _require(ok, source, f"'first_hit_ranks.{part}.{qid}' must be null or an integer in [0, {depth})")


def read_result(path: str | Path) -> Result:
    """Read and validate a result file; any problem raises :class:`InputFileError` naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read result file: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    validate(data, source=path)
    return Result(data, path)


def read_results(results_dir: str | Path) -> list[Result]:
    """Every ``*.json`` result in ``results_dir`` (sorted by file name)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    return [read_result(p) for p in sorted(results_dir.glob("*.json"))]

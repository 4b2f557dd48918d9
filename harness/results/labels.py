"""How a result is named wherever it is shown: ``harness compare``'s tables, ``harness plot``'s
legends and rows, and the leaderboard's rows. One function, :func:`result_label`, for all of them.

- an untrained configuration is its retriever's name (a re-ranked one its chain,
  :func:`~harness.results.schema.chain_label`): ``bm25``, ``bm25 » upr(t5-large, top-100)``;
- a trained one (its parameters, at any depth, carry the ``training`` record ``harness train``
  writes into a checkpoint, or a ``variant``) adds the variant, the training data and the
  configuration's short digest: ``trained: qsft on demo-train (d8249d57)``;
  ``specialised on demo-train (e6be578e)`` when the variant is the retriever's own name.

Names may still repeat (two ``bm25`` configurations with other parameters): :func:`unique_labels`
adds the configuration digest to those, and :func:`require_distinct` refuses, with one line naming
both files, two results that would still be drawn or compared under one name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from harness.errors import HarnessError
from harness.results.report import one_line
from harness.results.schema import Result, chain_label, config_digest

#: A content digest a recorded name carries: ``demo-train (sha256:57dc9efebf7d)``.
_DIGEST = re.compile(r"\s*\((?:sha256:|dir:)[^()]*\)\s*$")
#: How many training data sets a label names before ``+N more``.
_DATA_SHOWN = 3


def training_record(parameters: Any) -> Mapping[str, Any] | None:
    """The ``training`` record a trained checkpoint's result carries in its parameters (the first
    found, depth first: a hybrid's trained component has it under its own parameters), or None."""
    if isinstance(parameters, Mapping):
        training = parameters.get("training")
        if isinstance(training, Mapping):
            return training
        values = parameters.values()
    elif isinstance(parameters, (list, tuple)):
        values = parameters
    else:
        return None
    for value in values:
        found = training_record(value)
        if found is not None:
            return found
    return None


def training_variant(parameters: Any) -> str | None:
    """The variant that made a trained checkpoint (its training record's, else a top-level
    ``variant`` parameter), or None."""
    training = training_record(parameters)
    if training is not None and isinstance(training.get("variant"), str) and training["variant"]:
        return training["variant"]
    if isinstance(parameters, Mapping) and isinstance(parameters.get("variant"), str) and parameters["variant"]:
        return parameters["variant"]
    return None


def training_data(training: Mapping[str, Any] | None) -> str:
    """The training data's names, without their digests and folders: ``demo-train``,
    ``nq-train.json+trivia-train.json``; empty when the record names none."""
    if not training:
        return ""
    data = training.get("data")
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, (list, tuple)):
        return ""
    names = []
    for entry in data:
        if isinstance(entry, Mapping):
            entry = entry.get("data") or entry.get("path")
        if not isinstance(entry, str) or not entry.strip():
            continue
        name = _DIGEST.sub("", entry).strip().rstrip("/\\")
        name = PurePath(name.replace("\\", "/")).name or name
        if name not in names:
            names.append(name)
    if len(names) > _DATA_SHOWN:
        return "+".join(names[:_DATA_SHOWN]) + f"+{len(names) - _DATA_SHOWN} more"
    return "+".join(names)


def describe(
    retriever: str, parameters: Mapping[str, Any], reranker: Mapping[str, Any] | None = None, *, digest: str | None = None
) -> str:
    """The label of a configuration (see the module docstring); ``digest`` is its configuration
    digest (default: :func:`~harness.results.schema.config_digest` of the three)."""
    variant = training_variant(parameters)
    training = training_record(parameters)
    if variant is None and training is None:
        return chain_label(retriever, reranker)
    if digest is None:
        digest = config_digest(retriever, parameters, reranker)
    name = retriever if not variant or variant == retriever else f"{retriever}: {variant}"
    data = training_data(training)
    if data:
        name += f" on {data}"
    return chain_label(f"{name} ({digest})", reranker)


def result_label(result: Result) -> str:
    """The label of ``result``: :func:`describe` of its configuration."""
    return describe(result.retriever, result.parameters, result.reranker, digest=result.config_key())


def unique_labels(results: Sequence[Result]) -> list[str]:
    """Each result's :func:`result_label`; where one label covers several configurations, each of
    those gets its configuration digest too (``bm25 (4566dfd2)``). Results of one configuration
    (another suite, a second file) keep one label."""
    base = [result_label(r) for r in results]
    keys = [r.config_key() for r in results]
    configs: dict[str, set[str]] = {}
    for label, key in zip(base, keys):
        configs.setdefault(label, set()).add(key)
    return [
        label if len(configs[label]) == 1 or f"({key})" in label else f"{label} ({key})"
        for label, key in zip(base, keys)
    ]


def _file(result: Result) -> str:
    return one_line(result.path) if result.path is not None else f"a result of {one_line(result_label(result))}"


def require_distinct(results: Sequence[Result], labels: Sequence[str], *, what: str = "shown") -> None:
    """A one-line error naming both files when two of ``results`` would be ``what`` under one
    label (two files of one configuration: name one of them)."""
    seen: dict[str, Result] = {}
    for result, label in zip(results, labels):
        if label in seen:
            other = seen[label]
            raise HarnessError(
                f"{_file(other)} and {_file(result)} would both be {what} as {one_line(label)!r}: "
                f"they hold one configuration; name only one of them"
            )
        seen[label] = result


def training_seeds(results: Sequence[Result]) -> tuple[int, ...]:
    """The distinct training seeds of ``results``, ascending: each result's training record's
    ``seed`` (:func:`~harness.results.labels.training_record` of its parameters: the ``seed`` that
    ``harness train`` recorded for the checkpoint, which the trained retrievers copy into their
    ``training`` parameters); a result without a training record, or whose record has no integer
    seed, adds none."""
    found = set()
    for result in results:
        training = training_record(result.parameters)
        seed = training.get("seed") if training is not None else None
        if isinstance(seed, int) and not isinstance(seed, bool):
            found.add(seed)
    return tuple(sorted(found))


def training_data_entries(parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``data`` entries of a trained checkpoint's training record, as recorded (an entry given
    as an object by its ``data`` or ``path``)."""
    training = training_record(parameters)
    data = training.get("data") if training is not None else None
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, (list, tuple)):
        return ()
    entries = [entry.get("data") or entry.get("path") if isinstance(entry, Mapping) else entry for entry in data]
    return tuple(entry for entry in entries if isinstance(entry, str) and entry)


def trained_parts(parameters: Any) -> frozenset[str]:
    """The categories a trained checkpoint's data held (``training.seen`` anywhere in a result's
    parameters, as ``harness train`` records them), empty for anything else."""
    if isinstance(parameters, Mapping):
        training = parameters.get("training")
        if isinstance(training, Mapping) and isinstance(training.get("seen"), list):
            return frozenset(x for x in training["seen"] if isinstance(x, str))
        return frozenset().union(*(trained_parts(v) for v in parameters.values()))
    if isinstance(parameters, (list, tuple)):
        return frozenset().union(*(trained_parts(v) for v in parameters))
    return frozenset()


#: The English names Wikidata gives the relations EntityQuestions asks about (its questions are
#: grouped by relation id: the parts of its suites and of the demo suite). EntityQuestions'
#: data has only each relation's question template, not its name.
WIKIDATA_RELATIONS: Mapping[str, str] = {
    "P17": "country",
    "P19": "place of birth",
    "P20": "place of death",
    "P26": "spouse",
    "P30": "continent",
    "P36": "capital",
    "P40": "child",
    "P50": "author",
    "P69": "educated at",
    "P106": "occupation",
    "P112": "founded by",
    "P127": "owned by",
    "P131": "located in the administrative territorial entity",
    "P136": "genre",
    "P159": "headquarters location",
    "P170": "creator",
    "P175": "performer",
    "P176": "manufacturer",
    "P264": "record label",
    "P276": "location",
    "P407": "language of work or name",
    "P413": "position played on team / speciality",
    "P495": "country of origin",
    "P740": "location of formation",
    "P800": "notable work",
}
#: A part named by a relation id, with an optional ``_suffix`` (``P19_similar``).
_RELATION_PART = re.compile(r"(P\d+)(?:_\w+)?")


def relation_name(part: str) -> str | None:
    """The Wikidata name of the relation a part is named by (``P17`` -> ``country``,
    ``P19_similar`` -> ``place of birth``), or None for any other part."""
    match = _RELATION_PART.fullmatch(part)
    return WIKIDATA_RELATIONS.get(match.group(1)) if match else None


def part_title(part: str) -> str:
    """A part as a reader is shown it: a relation id with its name beside it (``P17 country``),
    any other part as it is named."""
    name = relation_name(part)
    return f"{part} {name}" if name else part

"""A result's model metadata and its domain on its suite: in-domain, zero-shot or unknown.

A result made since model metadata exists carries it (its ``model`` block: ``{"retriever": META,
"reranker": META}``, each :meth:`harness.api.ModelMeta.to_json` or null; :func:`model_block`
makes it when a run is recorded). For a result without one, it is derived from what the result
records, the same way: the spec its retriever is registered under declares it
(:func:`harness.api.meta_of` of the recorded parameters), and a trained checkpoint's training
record names what it saw. A retriever not installed here is unknown.

The suite's training split comes from its spec (:attr:`harness.api.SuiteSpec.train`); a re-ranked
chain is in-domain when either stage was trained on it (:func:`harness.api.combine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.api import Domain, ModelMeta, combine, domain, meta_of, training_meta
from harness.results.labels import training_record
from harness.results.schema import Result

#: The key of the result document that holds the model block.
MODEL_KEY = "model"


def _known_sets() -> set[str]:
    from harness import registry

    return set(registry.registry("training-data").names()) | set(registry.suites().names())


def stage_meta(kind: str, name: str, parameters: Mapping[str, Any]) -> ModelMeta | None:
    """The metadata of one stage (``kind``: ``retrievers`` or ``rerankers``) from its name and
    recorded parameters: the registered spec's declaration (a ``NAME:ARGUMENT`` name by its
    ``NAME``), else, for a checkpoint ``harness train`` wrote, its training record; None when
    neither says."""
    from harness import registry

    found = registry.registry(kind)
    base = name.split(":", 1)[0]
    meta = None
    if base in found:
        options = dict(parameters)
        if ":" in name:
            options.setdefault("argument", name.split(":", 1)[1])
        try:
            meta = meta_of(found.get(base).meta, options)
        except Exception:  # a declaration that cannot read these recorded parameters: unknown, never a crash
            meta = None
    if meta is None:
        training = training_record(parameters)
        if training is not None:
            try:
                meta = training_meta(training, _known_sets())
            except (TypeError, ValueError, AttributeError):
                meta = None
    return meta


def model_block(retriever: str, parameters: Mapping[str, Any], reranker: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``model`` block a result records: each stage's metadata as JSON (null when unknown)."""
    first = stage_meta("retrievers", retriever, parameters)
    block: dict[str, Any] = {"retriever": None if first is None else first.to_json()}
    if reranker is not None:
        second = stage_meta("rerankers", str(reranker.get("name", "")), reranker.get("parameters") or {})
        block["reranker"] = None if second is None else second.to_json()
    return block


def _recorded(block: Any, key: str) -> tuple[bool, ModelMeta | None]:
    if not isinstance(block, Mapping) or key not in block:
        return False, None
    value = block[key]
    if value is None:
        return True, None
    try:
        return True, ModelMeta.from_json(value)
    except (KeyError, TypeError, ValueError, AttributeError):
        return True, None


def result_meta(result: Result) -> ModelMeta | None:
    """``result``'s model metadata: its recorded ``model`` block, else derived (module docstring);
    a re-ranked chain's combines both stages'."""
    block = result.data.get(MODEL_KEY)
    has_first, first = _recorded(block, "retriever")
    if not has_first:
        first = stage_meta("retrievers", result.retriever, result.parameters)
    reranker = result.reranker
    if not reranker:
        return first
    has_second, second = _recorded(block, "reranker")
    if not has_second:
        second = stage_meta("rerankers", str(reranker.get("name", "")), reranker.get("parameters") or {})
    return combine([first, second])


def suite_train(suite: str) -> tuple[str, ...] | None:
    """The suite's own training split(s) as its spec names them; None when the suite is not
    installed or its spec does not say."""
    from harness import registry

    suites = registry.suites()
    return suites.get(suite).train if suite in suites else None


def result_domain(result: Result) -> Domain:
    """Whether ``result`` is in-domain, zero-shot or unknown on its suite (:func:`harness.api.domain`)."""
    return domain(result_meta(result), suite_train(result.suite))


_TEXT_FIELDS = ("model", "similarity", "license", "revision", "note")
_INT_FIELDS = ("parameters", "embedding_size", "max_tokens")


def _meta_problems(value: Any, where: str) -> list[str]:
    """What is wrong with one recorded :meth:`ModelMeta.to_json` object, each naming its field."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [f"'{where}' must be a JSON object or null"]
    problems = [f"'{where}.{key}' is not a model metadata field" for key in value
                if key not in ModelMeta.__dataclass_fields__]
    for key in _TEXT_FIELDS:
        if value.get(key) is not None and not isinstance(value[key], str):
            problems.append(f"'{where}.{key}' must be text or null")
    for key in _INT_FIELDS:
        item = value.get(key)
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or item < 0):
            problems.append(f"'{where}.{key}' must be a non-negative integer or null")
    for key in ("open_weights", "trained_on_complete"):
        if value.get(key) is not None and not isinstance(value[key], bool):
            problems.append(f"'{where}.{key}' must be true, false or null")
    trained = value.get("trained_on")
    if trained is not None and (not isinstance(trained, list) or not all(isinstance(n, str) for n in trained)):
        problems.append(f"'{where}.trained_on' must be a list of training set names or null")
    reference = value.get("reference")
    if reference is not None and not (
        isinstance(reference, Mapping) and isinstance(reference.get("authors"), str) and isinstance(reference.get("title"), str)
        and isinstance(reference.get("year"), int) and not isinstance(reference.get("year"), bool)
        and (reference.get("arxiv") is None or isinstance(reference.get("arxiv"), str))
    ):
        problems.append(f"'{where}.reference' must be an object with text authors and title, an integer year and an arXiv id or null")
    if not problems:
        try:
            ModelMeta.from_json(value)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"'{where}': {' '.join(str(exc).split())}")
    return problems


def metadata_problems(result: Result, *, unknown_training: bool = True) -> list[str]:
    """The problems of ``result``'s model metadata, each one line naming its field: a recorded
    ``model`` block that is not what :func:`model_block` writes, and (unless ``unknown_training``
    is false) a first stage whose metadata, recorded or derived (:func:`result_meta`), says nothing
    of the training sets it saw (declare ``meta=`` on the spec, with ``trained_on``). Empty when it
    is all there."""
    problems: list[str] = []
    block = result.data.get(MODEL_KEY)
    if block is not None:
        if not isinstance(block, Mapping):
            return [f"'{MODEL_KEY}' must be a JSON object"]
        problems += [f"'{MODEL_KEY}.{key}' is not a stage (retriever, reranker)" for key in block if key not in ("retriever", "reranker")]
        for key in ("retriever", "reranker"):
            if key in block:
                problems += _meta_problems(block[key], f"{MODEL_KEY}.{key}")
        if problems:
            return problems
    has_first, first = _recorded(block, "retriever")
    if not has_first:
        first = stage_meta("retrievers", result.retriever, result.parameters)
    if unknown_training and (first is None or first.trained_on is None):
        problems.append(f"'{MODEL_KEY}.retriever.trained_on': the training sets retriever {result.retriever!r} saw are "
                        "unknown (its spec declares no meta=ModelMeta(trained_on=...))")
    return problems


__all__ = ["MODEL_KEY", "metadata_problems", "model_block", "result_domain", "result_meta", "stage_meta", "suite_train"]

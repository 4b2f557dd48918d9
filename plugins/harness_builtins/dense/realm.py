"""REALM-style embedder: BERT, its tanh pooler, then a 128-d projection (Linear + LayerNorm).

transformers 5 removed REALM (last shipped in 4.x as ``models/deprecated/realm``); this module
rebuilds the *embedder* (the retriever half) on ``transformers.BertModel`` and reads the hub
checkpoints' state dicts directly.

What the reference code shows
-----------------------------
Read: huggingface/transformers ``src/transformers/models/deprecated/realm/modeling_realm.py``
(@0d977a91c80dfba9c1ce37c75ef8d186573992b6) and the pre-deprecation
``src/transformers/models/realm/modeling_realm.py`` (@007026860b7815ae233e2342a763aefa7955cfd5,
``load_tf_weights_in_realm``), ``configuration_realm.py`` (@15ea02a2add1672acbeee158a9448720d6093de1),
``retrieval_realm.py`` (@0b07a74c673bdf8fbd472a1c7df139b357495414); google-research/language
``language/orqa/models/ict_model.py`` (@2fbedd1eb58e15fd3dec294c0422802f9056a5fe),
``language/orqa/models/orqa_model.py`` and ``language/orqa/predict/encode_blocks.py`` and
``language/orqa/utils/bert_utils.py`` (@1bb9da6a38767fb864b43fdb75808d67fcee28bb),
``language/realm/featurization.py`` (@7beecc7d5cbc1daa5a7ee677b138750e5f43e89b).

* ``RealmEmbedder.forward``: ``pooler_output = realm_outputs[1]`` (the BERT pooler: dense +
  tanh on the first token's last hidden state), then ``RealmScorerProjection``:
  ``LayerNorm(Linear(hidden -> retriever_proj_size=128)(pooler_output))``. The original TF
  module (``ict_model.module_fn``) is the same: ``pooled_output`` -> ``tf.layers.dense(128)``
  -> ``LayerNormalization``. So the projection is applied to the **pooler output**, not to the
  raw CLS state. Similarity is the inner product (``einsum("BD,QD->QB")``).
* LayerNorm epsilon of the projection: transformers uses ``config.layer_norm_eps`` (1e-12);
  the TF original used Keras' default 1e-3. We follow transformers (the weights we load are its
  port) and expose ``projection_eps`` to choose 1e-3. It only rescales each vector by
  ``~1 - 5e-4/var``: rankings are unaffected in practice.
* BERT: post-LayerNorm, ``hidden_act="gelu_new"`` (RealmConfig's default; the tanh GELU of the
  original BERT TF code), ``layer_norm_eps=1e-12``; RealmBertModel's parameter names equal
  ``BertModel``'s.
* Inputs (ORQA/REALM featurisation): a question is ``[CLS] q [SEP]``, segment ids 0, no
  truncation in ORQA's ``retrieve`` (capped here at the model's positions); a block is
  ``[CLS] title [SEP] body [SEP]``, segment ids 0 for ``[CLS] title [SEP]`` and 1 for
  ``body [SEP]``, 288 tokens, the title truncated first to 285 and the body filling the rest
  (``bert_utils.pad_or_truncate_pair``, ``featurize_document_tf``). Lower-cased WordPiece
  (``RealmTokenizer`` is ``BertTokenizer``).

Checkpoint key layout (transformers 4.x REALM)
----------------------------------------------
=================================  ==========================================================
checkpoint key                     harness module key
=================================  ==========================================================
``{p}realm.<BertModel key>``       ``bert.<BertModel key>`` (embeddings, encoder, pooler)
``{p}cls.dense.{weight,bias}``     ``projection.{weight,bias}``  (768 -> 128)
``{p}cls.LayerNorm.{weight,bias}`` ``layer_norm.{weight,bias}``
``{p}cls.predictions.*``           ignored (the MLM head RealmScorerProjection also carries)
``{p}realm.embeddings.position_ids`` / ``token_type_ids``   ignored (buffers)
=================================  ==========================================================

with the prefix ``{p}`` found per checkpoint:

* ``google/realm-cc-news-pretrained-embedder`` (``RealmEmbedder``): ``p = ""``; one embedder,
  used for questions and blocks (REALM pre-training shares them: ``share_embedders``).
* ``google/realm-orqa-{nq,wq}-openqa`` (``RealmForOpenQA``): ``embedder.*`` is the
  **fine-tuned question embedder**; ``reader.*`` (the span reader) is ignored; ``block_emb``
  (13,353,718 x 128 float32, about 6.8 GB) holds the blocks' embeddings precomputed by the
  **frozen pre-trained** embedder, and ``block_records.npy`` their text. Both describe REALM's
  own 13.35M 288-token block corpus, not DPR's ``psgs_w100``, so the harness cannot use them:
  it never reads ``block_emb`` (memory-mapped / lazily opened) and re-embeds the benchmark's
  corpus instead. To reproduce ORQA's pairing, encode passages with the pre-trained embedder:
  ``RealmEncoder.from_pretrained(orqa_dir, passage_path=cc_news_embedder_dir)``. Without
  ``passage_path`` the fine-tuned ``embedder.*`` embeds both sides (an approximation).
* ``RealmScorer`` checkpoints: ``query_embedder.*`` (if saved separately) for questions,
  ``embedder.*`` for blocks.
* ``*-encoder`` / ``*-reader`` checkpoints have no ``cls.dense``: not retrievers; refused.

A directory written by :func:`.convert.convert_realm` (``query_encoder/``, ``passage_encoder/``,
each a ``RealmEmbedder`` layout) is read the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from harness.errors import InputFileError

from harness_builtins.common.devices import resolve_device
from harness_builtins.dense.checkpoints import (
    load_bert_tokenizer,
    open_state_dict,
    read_json,
    tokenizer_digest,
    weights_digest,
)
from harness_builtins.dense.pipeline import LazyFeatures, Packed, compute_precision, encode_batches, encoder_precision

REALM_FORMAT = "harness.realm-encoder"
REALM_FORMAT_VERSION = 1
#: REALM / ORQA block length (``block_seq_len``, ``candidate_seq_len``).
REALM_BLOCK_MAX_LENGTH = 288

#: ``RealmConfig`` defaults (transformers 4.x), used for fields a ``config.json`` omits.
REALM_CONFIG_DEFAULTS: dict[str, Any] = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "retriever_proj_size": 128,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu_new",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
}

_IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")


def bert_config_from_realm(config: Mapping[str, Any]):
    """A ``BertConfig`` with a REALM config's encoder settings (RealmConfig defaults filled in)."""
    from transformers import BertConfig

    c = {**REALM_CONFIG_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    return BertConfig(
        vocab_size=c["vocab_size"],
        hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        hidden_act=c["hidden_act"],
        hidden_dropout_prob=c["hidden_dropout_prob"],
        attention_probs_dropout_prob=c["attention_probs_dropout_prob"],
        max_position_embeddings=c["max_position_embeddings"],
        type_vocab_size=c["type_vocab_size"],
        initializer_range=c["initializer_range"],
        layer_norm_eps=c["layer_norm_eps"],
        pad_token_id=0,
    )


class RealmEmbedderModel(nn.Module):
    """``RealmEmbedder`` on ``BertModel``: ``LayerNorm(Linear(BERT pooler output))``."""

    def __init__(self, bert_config: Any, *, projection_size: int = 128, projection_eps: float | None = None):
        super().__init__()
        from transformers import BertModel

        self.bert = BertModel(bert_config, add_pooling_layer=True)
        self.projection = nn.Linear(bert_config.hidden_size, projection_size)
        eps = bert_config.layer_norm_eps if projection_eps is None else projection_eps
        self.layer_norm = nn.LayerNorm(projection_size, eps=eps)

    @property
    def dim(self) -> int:
        return self.projection.out_features

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        pooled = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).pooler_output
        return self.layer_norm(self.projection(pooled))


def _module_key(rest: str) -> str | None:
    """The harness module key for a checkpoint key (its embedder prefix removed); None: ignored."""
    if rest.startswith("realm."):
        sub = rest[len("realm."):]
        if sub.endswith(_IGNORED_SUFFIXES):
            return None
        return "bert." + sub
    if rest.startswith("cls.predictions."):
        return None
    if rest.startswith("cls.dense."):
        return "projection." + rest[len("cls.dense."):]
    if rest.startswith("cls.LayerNorm."):
        return "layer_norm." + rest[len("cls.LayerNorm."):]
    return "<unexpected>"


def find_realm_embedder_prefix(keys: Sequence[str] | set[str], role: str, where: object) -> str:
    """The key prefix of the ``role`` ("query" or "passage") embedder in a REALM state dict."""
    keys = set(keys)
    candidates = ["query_embedder.", "embedder.", ""] if role == "query" else ["embedder.", "", "query_embedder."]
    for p in candidates:
        if f"{p}realm.embeddings.word_embeddings.weight" in keys and f"{p}cls.dense.weight" in keys:
            return p
    for p in candidates:
        if f"{p}realm.embeddings.word_embeddings.weight" in keys:
            raise InputFileError(
                where,
                f"missing key {p + 'cls.dense.weight'!r}: no retrieval projection (a REALM reader or "
                "knowledge-augmented encoder, not an embedder)",
            )
    raise InputFileError(
        where, "no REALM embedder keys (expected 'embedder.realm.*' and 'embedder.cls.dense.*', or 'realm.*' and 'cls.dense.*')"
    )


@dataclass
class ExtractedRealmEmbedder:
    """One embedder read from a REALM checkpoint, with the harness module's key names."""

    directory: Path
    weights_source: Path
    prefix: str
    config: dict
    state_dict: dict[str, torch.Tensor]

    def realm_layout_state_dict(self) -> dict[str, torch.Tensor]:
        """The same weights under ``RealmEmbedder`` key names (``realm.*``, ``cls.*``)."""
        return {realm_key(key): value for key, value in self.state_dict.items()}


def realm_key(module_key: str) -> str:
    """The ``RealmEmbedder`` checkpoint key of a :class:`RealmEmbedderModel` key."""
    for ours, theirs in (("bert.", "realm."), ("projection.", "cls.dense."), ("layer_norm.", "cls.LayerNorm.")):
        if module_key.startswith(ours):
            return theirs + module_key[len(ours):]
    raise KeyError(module_key)


def _resolve_realm_dir(path: Path, role: str) -> Path:
    if path.is_file():
        return path.parent
    if not path.is_dir():
        raise InputFileError(path, "no such file or directory")
    sub = path / f"{role}_encoder"
    if sub.is_dir():
        return sub
    return path


def extract_realm_embedder(path: str | os.PathLike, *, role: str = "query") -> ExtractedRealmEmbedder:
    """Read the ``role`` embedder of the REALM checkpoint at ``path`` (directory or weight file)."""
    if role not in ("query", "passage"):
        raise ValueError(f"role must be 'query' or 'passage', not {role!r}")
    path = Path(path)
    directory = _resolve_realm_dir(path, role)
    config = read_json(directory / "config.json")
    if config.get("model_type") not in (None, "realm"):
        raise InputFileError(directory / "config.json", f"model_type is {config.get('model_type')!r}, not 'realm'")
    weights = open_state_dict(path if path.is_file() else directory)
    where = weights.source
    prefix = find_realm_embedder_prefix(list(weights.keys()), role, where)

    full = {**REALM_CONFIG_DEFAULTS, **config}
    with torch.device("meta"):  # shapes only; no weights allocated
        skeleton = RealmEmbedderModel(bert_config_from_realm(full), projection_size=int(full["retriever_proj_size"]))
    expected = skeleton.state_dict()

    mapped: dict[str, torch.Tensor] = {}
    for key in weights.keys():
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix):]
        if not (rest.startswith("realm.") or rest.startswith("cls.")):
            continue  # other parts of the checkpoint: reader.*, block_emb, query_embedder.*
        target = _module_key(rest)
        if target is None:
            continue
        if target == "<unexpected>" or target not in expected:
            raise InputFileError(where, f"unexpected key {key!r}")
        tensor = weights[key]
        if tuple(tensor.shape) != tuple(expected[target].shape):
            raise InputFileError(
                where, f"key {key!r} has shape {tuple(tensor.shape)}, config.json implies {tuple(expected[target].shape)}"
            )
        mapped[target] = tensor.detach().to(torch.float32).clone()
    for target in expected:
        if target not in mapped:
            raise InputFileError(where, f"missing key {prefix + realm_key(target)!r}")
    return ExtractedRealmEmbedder(directory, where, prefix, config, mapped)


def load_realm(
    path_or_dir: str | os.PathLike, *, role: str = "query", projection_eps: float | None = None
) -> RealmEmbedderModel:
    """The ``role`` embedder of a local REALM checkpoint (``config.json`` + weights) as a module.

    ``path_or_dir`` is a hub-style REALM directory (``pytorch_model.bin``, ``model.safetensors``
    or a sharded index), a weight file inside one, or a :func:`.convert.convert_realm` output.
    """
    extracted = extract_realm_embedder(path_or_dir, role=role)
    return _module_from_extracted(extracted, projection_eps)


def _module_from_extracted(extracted: ExtractedRealmEmbedder, projection_eps: float | None) -> RealmEmbedderModel:
    full = {**REALM_CONFIG_DEFAULTS, **extracted.config}
    model = RealmEmbedderModel(
        bert_config_from_realm(full),
        projection_size=int(full["retriever_proj_size"]),
        projection_eps=projection_eps,
    )
    model.load_state_dict(extracted.state_dict, strict=True)
    model.eval()
    return model


def _version_key(*modules: nn.Module) -> tuple:
    return tuple((id(t), t._version) for m in modules for t in m.state_dict().values())


class RealmEncoder:
    """Questions and passages to REALM's 128-d embeddings; score = inner product.

    Questions: ``[CLS] q [SEP]`` (segment 0). Passages ``(title, text)``: ``[CLS] title [SEP]
    text [SEP]`` (segments 0 / 1), at most 288 tokens, title kept first (ORQA's block format).
    Encoding runs on :func:`.pipeline.encode_batches` (length-sorted batches, tokenised in the
    background) under ``precision`` (``auto``: fp16 autocast on GPU, fp32 on CPU);
    ``batch_size`` defaults to 128 on GPU, 32 on CPU.
    """

    def __init__(
        self,
        query_model: RealmEmbedderModel,
        passage_model: RealmEmbedderModel,
        query_tokenizer: Any,
        passage_tokenizer: Any | None = None,
        *,
        query_max_length: int | None = None,
        passage_max_length: int = REALM_BLOCK_MAX_LENGTH,
        batch_size: int | None = None,
        device: str | torch.device | None = None,
        precision: str | None = "auto",
    ):
        self.device = torch.device(resolve_device(device))
        self.precision = encoder_precision(precision, str(self.device))
        self.query_model = query_model.to(self.device).eval()
        self.passage_model = passage_model.to(self.device).eval()
        self.query_tokenizer = query_tokenizer
        self.passage_tokenizer = passage_tokenizer if passage_tokenizer is not None else query_tokenizer
        max_positions = query_model.bert.config.max_position_embeddings
        self.query_max_length = min(query_max_length or max_positions, max_positions)
        self.passage_max_length = min(passage_max_length, passage_model.bert.config.max_position_embeddings)
        if self.query_max_length < 2 or self.passage_max_length < 3:
            raise ValueError("max lengths must leave room for [CLS] and [SEP]")
        if query_model.dim != passage_model.dim:
            raise ValueError(f"query and passage embedders differ in size ({query_model.dim} vs {passage_model.dim})")
        self.batch_size = batch_size or (128 if self.device.type == "cuda" else 32)
        self._identity: tuple[tuple, str] | None = None

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike,
        *,
        passage_path: str | os.PathLike | None = None,
        projection_eps: float | None = None,
        **kwargs: Any,
    ) -> RealmEncoder:
        """Load both embedders: from ``path`` (query side, and passage side unless
        ``passage_path`` names another checkpoint; see the module docstring)."""
        query = extract_realm_embedder(path, role="query")
        passage = extract_realm_embedder(passage_path if passage_path is not None else path, role="passage")
        query_model = _module_from_extracted(query, projection_eps)
        if (passage.weights_source, passage.prefix) == (query.weights_source, query.prefix):
            passage_model = query_model
        else:
            passage_model = _module_from_extracted(passage, projection_eps)
        query_tok = load_bert_tokenizer(query.directory)
        passage_tok = query_tok if passage.directory == query.directory else load_bert_tokenizer(passage.directory)
        return cls(query_model, passage_model, query_tok, passage_tok, **kwargs)

    @property
    def dim(self) -> int:
        return self.query_model.dim

    # -- inputs ------------------------------------------------------------------------------

    def query_inputs(self, questions: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        tok = self.query_tokenizer
        ids = tok(list(questions), add_special_tokens=False)["input_ids"] if questions else []
        body = self.query_max_length - 2
        return [([tok.cls_token_id, *q[:body], tok.sep_token_id], [0] * (min(len(q), body) + 2)) for q in ids]

    def passage_inputs(self, passages: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        tok = self.passage_tokenizer
        if not passages:
            return []
        titles = tok([p[0] for p in passages], add_special_tokens=False)["input_ids"]
        texts = tok([p[1] for p in passages], add_special_tokens=False)["input_ids"]
        n = self.passage_max_length
        out = []
        for title, text in zip(titles, texts):
            title = title[: n - 3]
            text = text[: max(n - 3 - len(title), 0)]
            ids = [tok.cls_token_id, *title, tok.sep_token_id, *text, tok.sep_token_id]
            segments = [0] * (len(title) + 2) + [1] * (len(text) + 1)
            out.append((ids, segments))
        return out

    # -- encoding ----------------------------------------------------------------------------

    def _encode(self, model: RealmEmbedderModel, items: list[Any], inputs: Any) -> np.ndarray:
        """Embeddings of ``items``, built into (token ids, segment ids) by ``inputs`` window by window."""

        def forward(batch: dict[str, torch.Tensor]) -> torch.Tensor:
            return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])

        def pack(start: int, stop: int) -> Packed:
            pairs = inputs(items[start:stop])
            return Packed.from_features([{"input_ids": ids, "token_type_ids": segments} for ids, segments in pairs])

        return encode_batches(forward, LazyFeatures(len(items), pack), dim=model.dim, batch_size=self.batch_size,
                              device=str(self.device), precision=self.precision)

    def encode_queries(self, questions: Sequence[str]) -> np.ndarray:
        """``float32 [len(questions), 128]``."""
        return self._encode(self.query_model, list(questions), self.query_inputs)

    def encode_passages(self, passages: Sequence[tuple[str, str]]) -> np.ndarray:
        """``float32 [len(passages), 128]`` for ``(title, text)`` pairs."""
        return self._encode(self.passage_model, list(passages), self.passage_inputs)

    def identity(self) -> str:
        """``RealmEncoder@<sha256>`` over both embedders' weights, tokenizers and input settings."""
        key = (self.precision, str(self.device)) + _version_key(self.query_model, self.passage_model)
        if self._identity is None or self._identity[0] != key:
            extra = {
                "format": REALM_FORMAT,
                "query_max_length": self.query_max_length,
                "passage_max_length": self.passage_max_length,
                "projection_eps": [self.query_model.layer_norm.eps, self.passage_model.layer_norm.eps],
                "hidden_act": [self.query_model.bert.config.hidden_act, self.passage_model.bert.config.hidden_act],
                "tokenizers": [tokenizer_digest(self.query_tokenizer), tokenizer_digest(self.passage_tokenizer)],
            }
            precision = compute_precision(self.precision, str(self.device))
            if precision != "fp32":  # fp32 keys stay those of the encoder before it had a precision
                extra["precision"] = precision
            digest = weights_digest(self.query_model.state_dict(), self.passage_model.state_dict(), extra=extra)
            self._identity = (key, f"{type(self).__module__}.{type(self).__qualname__}@{digest}")
        return self._identity[1]

    def parameters(self) -> dict[str, Any]:
        """The identity, and the precision the encoders run with (``tf32``: fp32 on CUDA)."""
        return {"encoder": self.identity(), "precision": compute_precision(self.precision, str(self.device))}


def load_realm_encoder(*, query_model: str | None = None, passage_model: str | None = None, revision: str | None = None,
                       max_length: int | None = None, batch_size: int | None = None, device: str | None = "auto",
                       precision: str | None = "auto") -> RealmEncoder:
    """The ``realm`` encoder: ``RealmEncoder.from_pretrained(query checkpoint, passage_path=block
    embedder)``, each a hub id (fetched with ``huggingface_hub``) or a directory."""
    from harness.errors import HarnessError

    from harness_builtins.dense.hub import hub_snapshot

    if not query_model:
        raise HarnessError("encoder 'realm' needs -o query_model=REALM_CHECKPOINT")
    kwargs: dict[str, Any] = {"device": resolve_device(device)}
    if batch_size:
        kwargs["batch_size"] = batch_size
    if max_length:
        kwargs["passage_max_length"] = max_length
    if precision not in (None, "auto"):
        kwargs["precision"] = precision
    return RealmEncoder.from_pretrained(
        hub_snapshot(query_model, revision),
        passage_path=hub_snapshot(passage_model, revision) if passage_model else None,
        **kwargs,
    )

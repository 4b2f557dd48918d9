"""The built-in encoders: transformers and sentence-transformers models behind the
:class:`harness.api.Encoder` protocol (which REALM's and ART's encoders, and any plugin's, also
implement).

Models are loaded from a hub id or a local directory through one code path
(:func:`~harness_builtins.dense.hub.load_transformers_model`), lazily, on the first ``encode_*`` call; building
an encoder and asking its :meth:`~harness.api.Encoder.identity` loads no weights.

Input formats (PROTOCOL section 5):

- ``dpr``: passages as the tokenizer's pair encoding of ``(title, text)``, i.e.
  ``[CLS] title [SEP] text [SEP]``, with **all token-type ids 0** (DPR zeroes the segment ids; the
  HF tokenizer would give the text segment 1); an empty title gives ``[CLS] text [SEP]`` (DPR's
  ``if title:``). Truncation is ``longest_first``, as DPR's ``tokenizer.encode(..., truncation=True)``.
- ``title_text``: ``title + " " + text`` as one segment (Contriever's ``generate_passage_embeddings``).
- ``text``: the text alone.

Questions are always the question text alone, with no normalisation beyond what the harness applied.

Poolings: ``cls`` (last hidden state at [CLS]; for DPR checkpoints this is DPR's own pooler output,
which is the [CLS] vector, projected only when the checkpoint has ``projection_dim > 0``, never
the tanh pooler), ``mean`` (mean of the last hidden states over non-pad tokens), ``pooler`` (the
model's ``pooler_output``; BERT's tanh pooler).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.api import Encoder, PassageInput, choice, positive_int
from harness.errors import HarnessError
from harness.util.models import ModelRef

from harness_builtins.common.devices import resolve_device
from harness_builtins.dense.pipeline import (
    LazyFeatures,
    Packed,
    autocast_for,
    matmul_precision,
    compute_precision,
    encode_batches,
    encoder_precision,
)

from harness_builtins.dense.hub import load_transformers_model
from harness_builtins.dense.options import BATCH_SIZE, FORMATS, MAX_LENGTH, POOLINGS, ST_FORMATS

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The options' declarations (:mod:`.presets`) check the constructors' arguments too.
_POOLING = choice("cls", POOLINGS)
_FORMAT = choice("dpr", FORMATS)
_ST_FORMAT = choice("title_text", ST_FORMATS)
_LENGTH = positive_int(256)


def encoder_parameters(encoder: Encoder) -> dict[str, Any]:
    """``encoder.parameters()`` when it has one, else ``{"encoder": encoder.identity()}``."""
    method = getattr(encoder, "parameters", None)
    return dict(method()) if callable(method) else {"encoder": encoder.identity()}


def passage_string(title: str, text: str, format: str) -> str:
    """A passage as one string (``title_text`` or ``text`` formats)."""
    return f"{title} {text}" if format == "title_text" else text


# --- transformers ---------------------------------------------------------------------------------

class _DeviceSettings:
    """``device``, ``precision`` and the default batch size, resolved on first use (imports torch)."""

    _device_option: str | None
    _precision_option: str | None
    _device: str | None
    _precision: str | None
    batch_size: int | None

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = resolve_device(self._device_option)
        return self._device

    @property
    def precision(self) -> str:
        if self._precision is None:
            self._precision = encoder_precision(self._precision_option, self.device)
        return self._precision

    def _batch_size(self) -> int:
        return self.batch_size or (128 if self.device.startswith("cuda") else 32)


class TransformersEncoder(_DeviceSettings):
    """One transformers model encoding both questions and passages (Contriever's shared encoder);
    pair two with :class:`DualEncoder` for separate question and passage encoders (DPR).

    Batches are formed in length order (longest first, padded to the batch's longest input, not to
    ``max_length``) and results are returned in input order; tokenising and padding run in
    background threads while the model runs (:func:`encode_batches`). On GPU the forward pass runs
    under fp16 (or bf16) autocast, or with TF32 matmuls in fp32; pooling is always done in fp32.
    """

    def __init__(
        self,
        model: str | os.PathLike | ModelRef,
        *,
        revision: str | None = None,
        pooling: str = "cls",
        format: str = "dpr",
        max_length: int = 256,
        batch_size: int | None = None,
        device: str | None = "auto",
        precision: str | None = "auto",
        role: str | None = None,
    ):
        self.ref = model if isinstance(model, ModelRef) else ModelRef(model, revision)
        self.pooling = _POOLING.check(pooling, "pooling")
        self.format = _FORMAT.check(format, "format")
        self.max_length = _LENGTH.check(max_length, "max_length")
        self.batch_size = BATCH_SIZE.check(batch_size, "batch_size")
        self._device_option, self._precision_option = device, precision
        self.role = role
        self._model = None
        self._tokenizer = None
        self._backend: Any = None  # the tokenizer's Rust tokenizer, truncating; False: not used
        self._device: str | None = None
        self._precision: str | None = None
        #: Called with each batch's (rows, padded length) as it is encoded (tests, diagnostics).
        self.on_batch: Callable[[int, int], None] | None = None

    def identity(self) -> str:
        return json.dumps(
            {
                "backend": "transformers",
                "model": self.ref.identity(),
                "pooling": self.pooling,
                "format": self.format,
                "max_length": self.max_length,
                "precision": compute_precision(self.precision, self.device),
            },
            sort_keys=True,
        )

    def parameters(self) -> dict[str, Any]:
        return {
            "model": self.ref.describe(),
            "pooling": self.pooling,
            "format": self.format,
            "max_length": self.max_length,
            "precision": compute_precision(self.precision, self.device),
        }

    # -- loading

    def load(self) -> None:
        """Load the weights now (otherwise they load on the first ``encode_*`` call)."""
        if self._model is not None:
            return
        model, tokenizer = load_transformers_model(
            self.ref, role=self.role, allow_missing_pooler=self.pooling != "pooler"
        )
        if self.pooling == "pooler" and not _has_pooler(model):
            raise HarnessError(f"{self.ref.name_or_path}: pooling 'pooler' but the model has no pooler")
        self._model = model.to(self.device)
        self._tokenizer = tokenizer

    @property
    def model(self):
        self.load()
        return self._model

    @property
    def tokenizer(self):
        self.load()
        return self._tokenizer

    # -- encoding

    def tokenize_queries(self, queries: Sequence[str]) -> list[dict[str, list[int]]]:
        return self._tokenize(list(queries), None)

    def tokenize_passages(self, passages: Sequence[PassageInput]) -> list[dict[str, list[int]]]:
        if self.format == "dpr":
            titles = [title for title, _ in passages]
            texts = [text for _, text in passages]
            return self._tokenize(texts, titles)
        return self._tokenize([passage_string(t, x, self.format) for t, x in passages], None)

    def _tokenize(self, texts: list[str], titles: list[str] | None) -> list[dict[str, list[int]]]:
        """Unpadded features per input; with ``titles``, DPR's (title, text) pairs, token types 0."""
        tokenizer = self.tokenizer
        kwargs = dict(truncation=True, max_length=self.max_length, padding=False, return_attention_mask=False)
        features: list[dict[str, list[int]] | None] = [None] * len(texts)
        if titles is None:
            singles = list(range(len(texts)))
            pairs: list[int] = []
        else:
            singles = [i for i, t in enumerate(titles) if not t]
            pairs = [i for i, t in enumerate(titles) if t]
        for rows, encoded in (
            (singles, tokenizer([texts[i] for i in singles], **kwargs) if singles else None),
            (pairs, tokenizer([titles[i] for i in pairs], [texts[i] for i in pairs], **kwargs) if pairs else None),  # type: ignore[index]
        ):
            if encoded is None:
                continue
            keys = [k for k in encoded.keys() if k != "token_type_ids"]
            for j, i in enumerate(rows):
                feature = {k: encoded[k][j] for k in keys}
                if "token_type_ids" in encoded:  # DPR: every segment id is 0
                    feature["token_type_ids"] = [0] * len(feature["input_ids"])
                features[i] = feature
        return features  # type: ignore[return-value]

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        items = list(queries)
        return self.encode_features(LazyFeatures(len(items), lambda start, stop: self._pack(items[start:stop])))

    def encode_passages(self, passages: Sequence[PassageInput]) -> np.ndarray:
        if self.format == "dpr":  # DPR's ``if title:``: an empty title gives the text alone
            items: list[Any] = [(title, text) if title else text for title, text in passages]
        else:
            items = [passage_string(title, text, self.format) for title, text in passages]
        return self.encode_features(LazyFeatures(len(items), lambda start, stop: self._pack(items[start:stop])))

    def _pack(self, items: list[Any]) -> Packed:
        """Tokens of tokenizer inputs (strings, or ``(title, text)`` pairs), the same as
        :meth:`_tokenize` gives: straight from the Rust tokenizer when the tokenizer has one that
        gives the same tokens (checked once, on the first inputs), else through transformers."""
        if self._backend is None:
            self._backend = _truncating_backend(self.tokenizer, self.max_length) or False
            if self._backend and not self._same_tokens(self._backend, items[:16]):
                self._backend = False
        if not self._backend:
            return Packed.from_features(self._tokenize_items(items))
        return self._backend_pack(self._backend, items)

    def _backend_pack(self, backend: Any, items: list[Any]) -> Packed:
        encodings = getattr(backend, "encode_batch_fast", backend.encode_batch)(items)
        zeros = ("token_type_ids",) if "token_type_ids" in self.tokenizer.model_input_names else ()
        return Packed.from_lists([encoding.ids for encoding in encodings], zeros=zeros)

    def _same_tokens(self, backend: Any, items: list[Any]) -> bool:
        fast, reference = self._backend_pack(backend, items), Packed.from_features(self._tokenize_items(items))
        return (
            set(fast.columns) == set(reference.columns)
            and np.array_equal(fast.lengths, reference.lengths)
            and all(np.array_equal(fast.column(key), reference.column(key)) for key in reference.columns)
        )

    def _tokenize_items(self, items: list[Any]) -> list[dict[str, list[int]]]:
        if not any(isinstance(item, tuple) for item in items):
            return self._tokenize(items, None)
        titles = [item[0] if isinstance(item, tuple) else "" for item in items]
        return self._tokenize([item[1] if isinstance(item, tuple) else item for item in items], titles)

    def encode_features(
        self, features: Sequence[dict[str, list[int]]] | LazyFeatures, *, sort: bool = True
    ) -> np.ndarray:
        """Vectors for tokenised inputs (or :class:`LazyFeatures`), batched in length order,
        returned in input order."""
        model = self.model
        # DPR encoders return only their pooled [CLS] vector unless asked for the hidden states
        extra = {"output_hidden_states": True} if _is_dpr(model) and self.pooling == "mean" else {}
        return encode_batches(
            lambda batch: model(**batch, return_dict=True, **extra),
            features,
            dim=self.dim,
            batch_size=self._batch_size(),
            device=self.device,
            precision=self.precision,
            pad_id=self.tokenizer.pad_token_id or 0,
            sort=sort,
            pool=lambda outputs, batch: self._pool(outputs, batch["attention_mask"]),
            on_batch=self.on_batch,
        )

    def _pool(self, outputs: Any, mask: torch.Tensor) -> torch.Tensor:
        dpr = _is_dpr(self._model)
        if self.pooling == "mean":
            hidden = (outputs.hidden_states[-1] if dpr else outputs.last_hidden_state).float()
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        if self.pooling == "cls" and not dpr:
            return outputs.last_hidden_state[:, 0].float()
        # DPR's pooler output is its [CLS] vector (projected if projection_dim > 0); elsewhere
        # ``pooler`` is the model's own pooler (BERT: tanh(dense([CLS]))).
        return outputs.pooler_output.float()

    @property
    def dim(self) -> int:
        model = self.model
        if _is_dpr(model):
            return int(model.config.projection_dim or model.config.hidden_size)
        return int(model.config.hidden_size)


def _is_dpr(model: Any) -> bool:
    return getattr(getattr(model, "config", None), "model_type", None) == "dpr"


def _has_pooler(model: Any) -> bool:
    return _is_dpr(model) or getattr(model, "pooler", None) is not None


def _truncating_backend(tokenizer: Any, max_length: int) -> Any:
    """A copy of a fast tokenizer's Rust tokenizer that truncates as ``tokenizer(...,
    truncation=True, max_length=max_length)`` does and never pads; None for other tokenizers."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return None
    try:
        from tokenizers import Tokenizer

        copy = Tokenizer.from_str(backend.to_str())
        copy.enable_truncation(max_length, strategy="longest_first", direction=getattr(tokenizer, "truncation_side", "right"))
        copy.no_padding()
    except Exception:  # a tokenizer the copy cannot reproduce is used through transformers
        return None
    return copy


# --- sentence-transformers ----------------------------------------------------------------------


class SentenceTransformerEncoder(_DeviceSettings):
    """A sentence-transformers model through its own ``encode_query`` / ``encode_document``, so its
    prompts, pooling and normalisation apply exactly as the model defines them. Passages are
    ``title + " " + text`` (``title_text``, the BEIR convention) or the text alone (``text``).
    """

    def __init__(
        self,
        model: str | os.PathLike | ModelRef,
        *,
        revision: str | None = None,
        format: str = "title_text",
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = "auto",
        precision: str | None = "auto",
    ):
        self.ref = model if isinstance(model, ModelRef) else ModelRef(model, revision)
        self.format = _ST_FORMAT.check(format, "format")
        self.max_length = MAX_LENGTH.check(max_length, "max_length")
        self.batch_size = BATCH_SIZE.check(batch_size, "batch_size")
        self._device_option, self._precision_option = device, precision
        self._model = None
        self._identity: str | None = None
        self._device: str | None = None
        self._precision: str | None = None

    def identity(self) -> str:
        """What the passage embeddings depend on
        (:func:`~harness_builtins.dense.passage_identity.passage_identity`): the passage side's
        weights and configuration, not where the model came from, so every model that shares them
        (a checkpoint and one trained from it with its passage side frozen) shares one cache."""
        from harness_builtins.dense.passage_identity import passage_identity

        if self._identity is None:
            self._identity = passage_identity(self.model, format=self.format, precision=compute_precision(self.precision, self.device))
        return self._identity

    def parameters(self) -> dict[str, Any]:
        return {
            "model": self.ref.describe(),
            "backend": "sentence-transformers",
            "format": self.format,
            "max_length": self.max_length if self.max_length is not None else "model default",
            "precision": compute_precision(self.precision, self.device),
        }

    def load(self) -> None:
        if self._model is not None:
            return
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(self.ref.path, device=self.device, revision=self.ref.revision)
        except OSError as exc:
            raise HarnessError(f"cannot load sentence-transformers model {self.ref.name_or_path!r}: {exc}") from None
        if self.max_length is not None:
            model.max_seq_length = self.max_length
        model.eval()
        self._model = model

    @property
    def model(self):
        self.load()
        return self._model

    def _encode(self, method: str, texts: list[str]) -> np.ndarray:
        model = self.model
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
        encode = getattr(model, method, model.encode)  # encode_query / encode_document (ST >= 5)
        with autocast_for(self.device, self.precision), matmul_precision(self.device, self.precision):
            vectors = encode(
                texts, batch_size=self._batch_size(), show_progress_bar=False, convert_to_numpy=True
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self._encode("encode_query", list(queries))

    def encode_passages(self, passages: Sequence[PassageInput]) -> np.ndarray:
        if self.format == "dpr":  # DPR's "[CLS] title [SEP] text [SEP]": the separator is a special token
            sep = self.model.tokenizer.sep_token
            return self._encode("encode_document", [f"{t} {sep} {x}" for t, x in passages])
        return self._encode("encode_document", [passage_string(t, x, self.format) for t, x in passages])


# --- pairs ----------------------------------------------------------------------------------------


class DualEncoder:
    """Questions through one encoder, passages through another (DPR's two towers, or encoder
    adaptation: the question encoder of one model with the passage encoder of another)."""

    def __init__(self, query: Encoder, passage: Encoder):
        self.query = query
        self.passage = passage

    def identity(self) -> str:
        return self.passage.identity()

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self.query.encode_queries(queries)

    def encode_passages(self, passages: Sequence[PassageInput]) -> np.ndarray:
        return self.passage.encode_passages(passages)

    def parameters(self) -> dict[str, Any]:
        return side_parameters(self.query, self.passage)


def side_parameters(query: Encoder, passage: Encoder) -> dict[str, Any]:
    """Flat parameters of a (query, passage) pair: ``query_model``, ``passage_model``, then each
    setting once when both sides agree, else prefixed ``query_`` / ``passage_``."""
    q, p = encoder_parameters(query), encoder_parameters(passage)
    out: dict[str, Any] = {}
    for side, params in (("query", q), ("passage", p)):
        for key in ("model", "encoder"):
            if key in params:
                out[f"{side}_{key}"] = params[key]
    for key in dict.fromkeys([*q, *p]):
        if key in ("model", "encoder"):
            continue
        if key in q and key in p and q[key] == p[key]:
            out[key] = q[key]
        else:
            if key in q:
                out[f"query_{key}"] = q[key]
            if key in p:
                out[f"passage_{key}"] = p[key]
    return out


def sides(encoder: Encoder) -> tuple[Encoder, Encoder]:
    """``(query side, passage side)`` of an encoder: a :class:`DualEncoder`'s two, or the encoder twice."""
    if isinstance(encoder, DualEncoder):
        return encoder.query, encoder.passage
    return encoder, encoder


def is_sentence_transformers_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local sentence-transformers model directory (has ``modules.json``)."""
    return (Path(path).expanduser() / "modules.json").is_file()

"""Encoders: what the dense engine needs from a model, and the :class:`EncoderSpec` plugins register.

An encoder turns questions and ``(title, text)`` passages into vectors whose inner product is the
retrieval score. A plugin that registers an :class:`EncoderSpec` gets the whole dense engine of
the built-in ``dense`` plugin for it: a retriever of the same name with the embedding cache
(float16 shards on disk, resumable), faiss indexes (exact, HNSW, IVF-PQ), hybrid and rank fusion
(``hybrid:bm25+NAME``), the encoder-adaptation matrix and distributed encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.api.models import MetaDeclaration
from harness.api.options import Options

if TYPE_CHECKING:  # pragma: no cover - numpy is imported by encoders, not by registering them
    import numpy as np

#: A passage as encoders receive it: ``(title, text)``.
PassageInput = tuple[str, str]


@runtime_checkable
class Encoder(Protocol):
    """A question encoder and a passage encoder whose vectors are compared by inner product.

    - ``encode_queries(queries)``: a ``(len(queries), dim)`` float32 array, row ``i`` for
      ``queries[i]``.
    - ``encode_passages(passages)``: the same for ``(title, text)`` pairs. The engine calls it on
      chunks of a streamed corpus (a few thousand passages at a time), never on the whole corpus.
    - ``identity()``: a string that changes whenever ``encode_passages`` could return different
      vectors (weights, formatting, pooling, max length, precision). The embedding cache is keyed by
      it, so it must not depend on anything else (no absolute paths of movable files, no batch
      size), and it should describe the passage side only: a pair of encoders that shares its
      passage side with another shares its cached corpus embeddings.

    Optional: ``parameters() -> dict`` with the settings to record in results (flat, JSON-able;
    keys such as ``query_model``, ``passage_model``, ``pooling``, ``format``, ``max_length``);
    the engine records ``{"encoder": identity()}`` when it is absent.
    """

    def identity(self) -> str: ...

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, passages: Sequence[PassageInput]) -> np.ndarray: ...


@dataclass(frozen=True, kw_only=True)
class EncoderSpec:
    """An encoder a plugin offers. ``load(**options)`` returns an :class:`Encoder`.

    ``options`` documents the keyword options ``load`` accepts, with their defaults or
    :class:`~harness.api.Option` declarations (model locations, pooling, batch size, device...). The dense engine registers a retriever called
    ``name`` whose options are these plus the engine's own (index kind and parameters, shard size);
    ``harness run --retriever NAME -o key=value`` sets either. ``meta``: the model's metadata
    (:class:`~harness.api.ModelMeta`, or a function of the options returning one), which the
    retriever the dense engine makes of it declares.
    """

    name: str
    description: str
    load: Callable[..., Encoder]
    options: Mapping[str, Any] = field(default_factory=dict)
    meta: MetaDeclaration = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", Options(self.options))

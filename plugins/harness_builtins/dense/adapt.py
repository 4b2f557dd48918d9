"""Encoder adaptation for one pair: the question encoder of one model with the passage encoder of
another (Li & Lin), as a retriever: ``harness run -r adapt -o query_encoder=dpr-nq -o
passage_encoder=dpr-multi --suite nq``.

Each side is any model :func:`~harness_builtins.dense.matrix.resolve_model` accepts (a registered
encoder's name or a model directory), loaded with its own settings (pooling, input format, max
length); the passage side's index and embedding cache settings are used.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError

from harness_builtins.dense.encoders import DualEncoder, sides
from harness_builtins.dense.matrix import resolve_model
from harness_builtins.dense.retriever import DenseRetriever


def build_adapted(query_encoder: str | None = None, passage_encoder: str | None = None, **engine: Any) -> DenseRetriever:
    if not query_encoder or not passage_encoder:
        raise HarnessError("adapt needs both -o query_encoder=ENCODER_OR_DIR and -o passage_encoder=ENCODER_OR_DIR")
    # the passage side's release (-o embeddings) is searched; the question side only encodes questions
    query_side = resolve_model(query_encoder).build({k: v for k, v in engine.items() if k != "embeddings"})
    passage_side = resolve_model(passage_encoder).build(engine)
    query = sides(query_side.encoder)[0]
    passage = sides(passage_side.encoder)[1]
    return DenseRetriever(
        DualEncoder(query, passage),
        index=passage_side.index_config,
        shard_size=passage_side.shard_size,
        chunk_size=passage_side.chunk_size,
        embeddings=passage_side.embeddings,
        embeddings_check=passage_side.embeddings_check,
        preset=passage_side.preset,
    )

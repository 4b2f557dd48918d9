"""The retriever of FiD's "Distilling Knowledge from Reader to Retriever" (DKRR), as pyserini
publishes and searches it (``castorini/dkrr-dpr-nq-retriever``, ``castorini/dkrr-dpr-tqa-retriever``).

One BERT encodes both sides and the vector is the **mean of the last hidden states over the
non-padding tokens** (FiD's ``Retriever.embed_text`` with its masks, pyserini's
``DkrrDprQueryEncoder._mean_pooling``); there is no projection head in the released models (pyserini
loads them as a plain ``BertModel``). Inputs are worded as FiD words them:

- passages: ``"title: " + title + " context: " + text`` (FiD's ``TextDataset`` with
  ``title_prefix='title:'``, ``passage_prefix='context:'``), truncated to 200 tokens
  (``passage_maxlength``), as ``generate_passage_embeddings.py`` encoded Wikipedia for pyserini's
  index;
- questions: ``"question: " + question`` (pyserini's ``--query-prefix question:``, joined with one
  space), not truncated by pyserini (its tokenizer call pads to 40 tokens without
  ``truncation=True``), so the question side here keeps up to 512 tokens.

Padding changes nothing here: the masked mean ignores padding positions, so the length-sorted,
unpadded batches of :class:`~harness_builtins.dense.encoders.TransformersEncoder` give the same
vectors as pyserini's padding to 40 tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.api import PassageInput

from harness_builtins.dense.encoders import TransformersEncoder
from harness_builtins.dense.pipeline import LazyFeatures

#: FiD's prefixes: ``TextDataset(title_prefix='title:', passage_prefix='context:')`` and pyserini's
#: ``--query-prefix question:``.
TITLE_PREFIX, PASSAGE_PREFIX, QUESTION_PREFIX = "title:", "context:", "question:"


def fid_passage(title: str, text: str) -> str:
    """A passage as FiD's ``TextDataset`` words it."""
    return f"{TITLE_PREFIX} {title} {PASSAGE_PREFIX} {text}"


def fid_question(question: str) -> str:
    """A question as pyserini's ``DkrrDprQueryEncoder`` words it (``f'{prefix} {query}'``)."""
    return f"{QUESTION_PREFIX} {question}"


#: The tokenizer pyserini's ``DkrrDprQueryEncoder`` and FiD's ``generate_passage_embeddings.py``
#: use (``bert-base-uncased``), not one shipped with the retriever's weights.
TOKENIZER = "bert-base-uncased"


class FidRetrieverEncoder(TransformersEncoder):
    """A mean-pooled BERT whose inputs carry FiD's prefixes (see the module notes); its tokenizer
    comes from ``tokenizer`` (default :data:`TOKENIZER`)."""

    def __init__(self, model: Any, *, tokenizer: Any = None, **options: Any):
        from harness.util.models import ModelRef

        super().__init__(model, pooling="mean", format="text", **options)
        self.tokenizer_ref = tokenizer if isinstance(tokenizer, ModelRef) else ModelRef(tokenizer or TOKENIZER)

    def load(self) -> None:
        if self._model is not None:
            return
        from harness_builtins.dense.hub import load_transformers_model

        model, tokenizer = load_transformers_model(self.ref, tokenizer=self.tokenizer_ref)
        self._model = model.to(self.device)
        self._tokenizer = tokenizer

    def identity(self) -> str:
        record = json.loads(super().identity())
        record["format"] = "fid"
        record["question_prefix"] = QUESTION_PREFIX
        record["tokenizer"] = self.tokenizer_ref.identity()
        return json.dumps(record, sort_keys=True)

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "format": "fid"}

    def tokenize_queries(self, queries: Sequence[str]) -> list[dict[str, list[int]]]:
        return super().tokenize_queries([fid_question(q) for q in queries])

    def tokenize_passages(self, passages: Sequence[PassageInput]) -> list[dict[str, list[int]]]:
        return self._tokenize([fid_passage(t, x) for t, x in passages], None)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return super().encode_queries([fid_question(q) for q in queries])

    def encode_passages(self, passages: Sequence[PassageInput]) -> np.ndarray:
        items = [fid_passage(title, text) for title, text in passages]
        return self.encode_features(LazyFeatures(len(items), lambda start, stop: self._pack(items[start:stop])))


def load_fid_encoder(
    *, model: str, revision: str | None = None, tokenizer: str | None = None, max_length: int = 200,
    query_max_length: int = 512, batch_size: int | None = None, device: str | None = "auto",
    precision: str | None = "auto",
):
    """The DKRR dual encoder: the same model on both sides, questions up to ``query_max_length``
    tokens, passages up to ``max_length``, both tokenized by ``tokenizer`` (default
    :data:`TOKENIZER`)."""
    from harness.util.models import ModelRef

    from harness_builtins.dense.encoders import DualEncoder

    engine = {"batch_size": batch_size, "device": device, "precision": precision}
    ref, words = ModelRef(model, revision), ModelRef(tokenizer or TOKENIZER)
    return DualEncoder(
        FidRetrieverEncoder(ref, tokenizer=words, max_length=query_max_length, **engine),
        FidRetrieverEncoder(ref, tokenizer=words, max_length=max_length, **engine),
    )

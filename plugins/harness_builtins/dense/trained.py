"""Checkpoints written by ``harness train``: the ``trained`` encoder (``-o path=OUTPUT``).

A checkpoint directory holds ``model/`` (a sentence-transformers model; separate question and
passage encoders as a ``Router``) and ``harness_training.json`` (schema ``harness-training/1``: the
variant, its recipe and settings, the initial model, the training data's fingerprints, the seed).
Passages are formatted as the record says they were in training, and results carry the record's
summary, so the leaderboard shows which variant produced a row.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError
from harness.results.checkpoint import Checkpoint


class TrainedEncoder:
    """A ``harness train`` checkpoint as an encoder (its sentence-transformers model)."""

    def __init__(self, path: str, *, specialised: bool = False, **engine: Any):
        from harness_builtins.dense.encoders import ModelRef, SentenceTransformerEncoder

        self.checkpoint = Checkpoint.read(path)
        self.record = self.checkpoint.record
        if not specialised and self.checkpoint.per_label:
            raise HarnessError(f"{path} holds one question encoder per label (variant {self.record['variant']}): "
                               f"evaluate it with --retriever specialised -o path={path}")
        self.inner = SentenceTransformerEncoder(ModelRef(str(self.checkpoint.model_dir)), format=self.checkpoint.format, **engine)

    def identity(self) -> str:
        return self.inner.identity()

    def parameters(self) -> dict[str, Any]:
        return {"variant": self.record["variant"], **self.inner.parameters(), "training": self.checkpoint.summary()}

    def training_compute(self) -> dict[str, Any] | None:
        """The checkpoint's batch geometry (processes, batch per device and global, accumulation)
        for a result's ``compute`` block."""
        return self.checkpoint.distributed

    def encode_queries(self, queries):
        return self.inner.encode_queries(queries)

    def encode_passages(self, passages):
        return self.inner.encode_passages(passages)


def load_trained_encoder(*, path: str | None = None, batch_size: int | None = None, device: str | None = "auto", precision: str | None = "auto"):
    if not path:
        raise HarnessError("encoder 'trained' needs the checkpoint directory: -o path=OUTPUT_OF_HARNESS_TRAIN")
    return TrainedEncoder(path, batch_size=batch_size, device=device, precision=precision)

"""Checkpoints written by ``harness train``: the ``trained`` encoder (``-o path=OUTPUT``).

A checkpoint directory holds ``model/`` (a sentence-transformers model; separate question and
passage encoders as a ``Router``) and ``harness_training.json`` (schema ``harness-training/1``: the
variant, its recipe and settings, the initial model, the training data's fingerprints, the seed).
Passages are formatted as the record says they were in training, and results carry the record's
summary, so the leaderboard shows which variant produced a row.
"""

from __future__ import annotations

from typing import Any

from harness.errors import HarnessError, InputFileError
from harness.results.checkpoint import RECORD_FILE, Checkpoint


class TrainedEncoder:
    """A ``harness train`` checkpoint as an encoder (its sentence-transformers model).

    The record is checked when the encoder is made (a value the encoder cannot take is one line
    naming the record and its key); the weights are loaded when first needed, after the model's
    ``modules.json`` is checked to name only sentence-transformers' classes, and a folder that
    does not load is one line naming it. The parameters identify the model by its contents
    (:func:`harness.util.models.directory_digest`) and its training by what decided it
    (:func:`training_summary`), never by the folders its files were in."""

    def __init__(self, path: str, *, specialised: bool = False, **engine: Any):
        from harness_builtins.dense.encoders import ModelRef, SentenceTransformerEncoder
        from harness_builtins.dense.options import ST_FORMATS

        self.checkpoint = Checkpoint.read(path)
        self.record = self.checkpoint.record
        if not specialised and self.checkpoint.per_label:
            raise HarnessError(f"{path} holds one question encoder per label (variant {self.record['variant']}): "
                               f"evaluate it with --retriever specialised -o path={path}")
        if self.checkpoint.format not in ST_FORMATS:
            raise InputFileError(self.checkpoint.path / RECORD_FILE, f"'format': must be one of {', '.join(ST_FORMATS)} "
                                 f"(how passages were written in training), got {self.checkpoint.format!r}")
        self.inner = SentenceTransformerEncoder(ModelRef(str(self.checkpoint.model_dir)), format=self.checkpoint.format, **engine)
        self._loaded = False

    def load(self) -> None:
        """Load the model (see the class notes); any failure is one line naming the folder."""
        if self._loaded:
            return
        from harness_builtins.common.trained_models import foreign_module

        model_dir = self.checkpoint.model_dir
        problem = foreign_module(model_dir)
        if problem is not None:
            raise HarnessError(f"{model_dir}: cannot load the trained model: {problem}")
        try:
            self.inner.load()
        except HarnessError:
            raise
        except Exception as exc:  # transformers, safetensors and json raise their own types for damaged files
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise HarnessError(f"{model_dir}: cannot load the trained model ({type(exc).__name__}: {text}); "
                               "the checkpoint is damaged") from None
        self._loaded = True

    def identity(self) -> str:
        self.load()
        return self.inner.identity()

    def parameters(self) -> dict[str, Any]:
        return {"variant": self.record["variant"], **self.inner.parameters(), "training": training_summary(self.checkpoint)}

    def training_compute(self) -> dict[str, Any] | None:
        """The checkpoint's batch geometry (processes, batch per device and global, accumulation)
        for a result's ``compute`` block."""
        return self.checkpoint.distributed

    def encode_queries(self, queries):
        self.load()
        return self.inner.encode_queries(queries)

    def encode_passages(self, passages):
        self.load()
        return self.inner.encode_passages(passages)


def training_summary(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's :meth:`~harness.results.checkpoint.Checkpoint.summary` with every place
    taken out: a local initial model by its name and content digest (recorded by ``harness train``
    as ``initial_model_digest``; for older records computed when the folder is there), a training
    file by its own name and fingerprint."""
    from harness_builtins.common.trained_models import data_name, describe_model

    record = checkpoint.record
    summary = dict(checkpoint.summary())
    digest = record.get("initial_model_digest")
    summary["initial_model"] = describe_model(record["initial_model"], digest if isinstance(digest, str) and digest else None)
    summary["data"] = [f"{data_name(str(d.get('data', d.get('path'))))} ({str(d.get('fingerprint', ''))[:19]})"
                       for d in record["data"] if isinstance(d, dict)]
    return summary


def load_trained_encoder(*, path: str | None = None, batch_size: int | None = None, device: str | None = "auto", precision: str | None = "auto"):
    if not path:
        raise HarnessError("encoder 'trained' needs the checkpoint directory: -o path=OUTPUT_OF_HARNESS_TRAIN")
    return TrainedEncoder(path, batch_size=batch_size, device=device, precision=precision)

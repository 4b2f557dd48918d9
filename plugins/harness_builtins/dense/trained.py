"""Checkpoints written by ``harness train``: the ``trained`` encoder (``-o path=OUTPUT``).

A checkpoint directory holds ``model/`` (a sentence-transformers model; separate question and
passage encoders as a ``Router``) and ``harness_training.json`` (schema ``harness-training/1``: the
variant, its recipe and settings, the initial model, the training data's fingerprints, the seed).
Passages are formatted as the record says they were in training, and results carry the record's
summary, so the leaderboard shows which variant produced a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import HarnessError, InputFileError
from harness.util import jsonio

RECORD = "harness_training.json"
SCHEMA = "harness-training/1"


def read_training_record(path: str | Path) -> dict[str, Any]:
    """The record of a checkpoint directory; a one-line error when it is not one."""
    directory = Path(path).expanduser()
    record_path = directory / RECORD
    if not directory.is_dir():
        raise HarnessError(f"-o path={path}: no such checkpoint directory")
    if not record_path.is_file():
        raise HarnessError(f"{directory} is not a finished harness train checkpoint (no {RECORD}); an interrupted run resumes with harness train --resume")
    record = jsonio.load_file(record_path, what="training record")
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise InputFileError(record_path, f"not a {SCHEMA} training record")
    for key, kind in (("variant", str), ("format", str), ("initial_model", str), ("data", list), ("seed", int)):
        if not isinstance(record.get(key), kind):
            raise InputFileError(record_path, f"'{key}' is missing or not a {kind.__name__}")
    if not (directory / "model" / "modules.json").is_file():
        raise HarnessError(f"{directory}/model is not a sentence-transformers model directory")
    return record


def training_summary(record: dict[str, Any]) -> dict[str, Any]:
    """What results record of the checkpoint's making (flat enough for the leaderboard);
    ``seen`` lists the categories of the training data (a suite's parts), when it has any."""
    summary = {
        "variant": record["variant"],
        "initial_model": record["initial_model"],
        "data": [f"{d.get('data', d.get('path'))} ({str(d.get('fingerprint', ''))[:19]})" for d in record["data"]],
        "seed": record["seed"],
        "steps": record.get("steps"),
    }
    seen = sorted({label for d in record["data"] if isinstance(d, dict) for label in d.get("labels") or () if isinstance(label, str)})
    if seen:
        summary["seen"] = seen
    return summary


class TrainedEncoder:
    """A ``harness train`` checkpoint as an encoder (its sentence-transformers model)."""

    def __init__(self, path: str, *, specialised: bool = False, **engine: Any):
        from harness_builtins.dense.encoders import ModelRef, SentenceTransformerEncoder

        self.record = read_training_record(path)
        if not specialised and isinstance(self.record.get("labels"), dict):
            raise HarnessError(f"{path} holds one question encoder per label (variant {self.record['variant']}): "
                               f"evaluate it with --retriever specialised -o path={path}")
        self.inner = SentenceTransformerEncoder(ModelRef(str(Path(path).expanduser() / "model")), format=self.record["format"], **engine)

    def identity(self) -> str:
        return self.inner.identity()

    def parameters(self) -> dict[str, Any]:
        return {"variant": self.record["variant"], **self.inner.parameters(), "training": training_summary(self.record)}

    def encode_queries(self, queries):
        return self.inner.encode_queries(queries)

    def encode_passages(self, passages):
        return self.inner.encode_passages(passages)


def load_trained_encoder(*, path: str | None = None, batch_size: int | None = None, device: str | None = "auto", precision: str | None = "auto"):
    if not path:
        raise HarnessError("encoder 'trained' needs the checkpoint directory: -o path=OUTPUT_OF_HARNESS_TRAIN")
    return TrainedEncoder(path, batch_size=batch_size, device=device, precision=precision)

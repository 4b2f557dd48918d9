"""The training checkpoint: the folder ``harness train`` writes, with one writer and one reader of
its record.

A finished checkpoint ``OUT``::

    OUT/model/                  the trained encoders, a sentence-transformers directory
    OUT/harness_training.json   the record (schema ``harness-training/1``, below)
    OUT/loss.safetensors        the loss's own parameters, when it has some (a scoring head)
    OUT/specialised.json        a per-label run: label -> folder (schema ``harness-specialised/1``)
    OUT/labels/LABEL/           a per-label run: one finished checkpoint per label
    OUT/stages/pretrain/        a two-stage run: the finished pre-training stage
    OUT/train_log.jsonl         one line per logging step
    OUT/checkpoints/            the trainer's resumable checkpoints
    OUT/mined.json              the training data with mined hard negatives, when mined

The record (every key required unless marked optional)::

    {
      "schema": "harness-training/1",
      "variant": "dpr",                 # the registered variant
      "initial_model": "bert-base-uncased",
      "data": [{"data", "path", "weight", "examples", "fingerprint", "labels"}],
      "format": "title_text",           # how passages were written for the passage encoder
      "seed": 42,
      "recipe": {...},                  # written: the variant's parts and their options
      "settings": {...},                # written: every setting of the run
      "steps": 1234,                    # written: optimizer steps (summed over labels)
      "distributed": {"world_size", "per_device_batch", "global_batch",
                      "gradient_accumulation", "examples_per_step"},   # optional
      "labels": {label: {"folder", ...}},   # optional: a per-label run
      ...                               # optional: examples, miner, in_loop, pretraining,
                                        # train_loss, loss_state, seconds, versions, reference
    }

Keys marked "written" are in every record ``harness train`` writes; a reader accepts a record
without them. ``write_checkpoint_record`` checks a record and writes it atomically; ``Checkpoint.read`` is the
one way to open a finished checkpoint (one-line errors naming the file), used by every reader: the
``trained`` and ``specialised`` retrievers, the late-interaction re-ranker and ``export-dpr``.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from harness.errors import HarnessError, InputFileError
from harness.results.records import converts

SCHEMA = "harness-training/1"
RECORD_FILE = "harness_training.json"
MODEL_DIR = "model"
LOSS_STATE_FILE = "loss.safetensors"
LOG_FILE = "train_log.jsonl"
CHECKPOINTS_DIR = "checkpoints"
MINED_FILE = "mined.json"
PRETRAIN_DIR = "stages/pretrain"
LABELS_DIR = "labels"
LABEL_MAP_FILE = "specialised.json"
LABEL_MAP_SCHEMA = "harness-specialised/1"

class LabelEntry(msgspec.Struct):
    """One label of a per-label run: its checkpoint's folder, inside this one."""

    folder: str


class LossEntry(msgspec.Struct):
    """The recipe's loss: its registered name (and its options, not read here)."""

    name: str


class RecipeEntry(msgspec.Struct):
    """The variant's parts and their options; readers need the loss's name."""

    loss: LossEntry | None = None


class TrainingRecord(msgspec.Struct, kw_only=True):
    """The record of a finished checkpoint (schema ``harness-training/1``, above): what the readers
    need, typed; the record's other keys are kept in :attr:`Checkpoint.record`."""

    schema: str
    variant: str
    initial_model: str
    data: list[dict[str, Any]]
    format: str
    seed: int
    recipe: RecipeEntry | None = None
    settings: dict[str, Any] | None = None
    steps: int | None = None
    labels: dict[str, LabelEntry] | None = None
    distributed: dict[str, Any] | None = None
    loss_state: str | None = None


def _outer(kind: Any) -> type:
    """The JSON kind of a field's type: ``str``, ``int``, ``list`` or ``dict``."""
    args = [a for a in typing.get_args(kind) if a is not type(None)] if typing.get_origin(kind) in (typing.Union, types.UnionType) else [kind]
    kind = typing.get_origin(args[0]) or args[0]
    return dict if isinstance(kind, type) and issubclass(kind, msgspec.Struct) else kind


_FIELDS = {f.encode_name: f for f in msgspec.structs.fields(TrainingRecord)}
#: Keys ``harness train`` always writes; a reader accepts a record without them (hand-made ones).
_WRITTEN = ("recipe", "settings", "steps")
#: Keys every record has, and their types (what the readers need).
REQUIRED: Mapping[str, type] = {k: _outer(f.type) for k, f in _FIELDS.items() if f.required}
WRITTEN: Mapping[str, type] = {k: _outer(_FIELDS[k].type) for k in _WRITTEN}
#: Optional keys the readers use, and their types when present (``null`` counts as absent).
OPTIONAL: Mapping[str, type] = {k: _outer(f.type) for k, f in _FIELDS.items() if not f.required and k not in _WRITTEN}


def _a(kind: type) -> str:
    return f"a{'n' if kind.__name__[0] in 'aeiou' else ''} {kind.__name__}"


def _problems(record: Any, *, writing: bool = False) -> list[str]:
    """Every problem of ``record`` (each key checked against :class:`TrainingRecord`'s type)."""
    if not isinstance(record, dict):
        return ["not a JSON object"]
    if record.get("schema") != SCHEMA:
        return [f"not a {SCHEMA} training record (schema {record.get('schema')!r})"]
    out = []
    for key, kind in {**REQUIRED, **WRITTEN}.items():
        value = record.get(key)
        if value is None and key in WRITTEN and not writing:
            continue
        if not converts(value, kind):
            out.append(f"'{key}' is missing or not {_a(kind)}")
        elif kind is str and not value.strip():
            out.append(f"'{key}' is empty")
    for key, kind in OPTIONAL.items():
        value = record.get(key)
        if value is not None and not converts(value, kind):
            out.append(f"'{key}' is not {_a(kind)}")
    data = record.get("data")
    if isinstance(data, list):
        out += [f"'data'[{i}] is not an object" for i, entry in enumerate(data) if not isinstance(entry, dict)][:1]
    recipe = record.get("recipe")
    if isinstance(recipe, dict) and not converts(recipe, RecipeEntry):
        out.append("'recipe'.'loss' is not an object with a \"name\"")
    labels = record.get("labels")
    if isinstance(labels, dict):
        for label, entry in labels.items():
            if not label or not converts(entry, LabelEntry) or not entry["folder"]:
                out.append(f"'labels'.{label!r} is not an object {{\"folder\": ...}} naming a folder")
                break
            if not writing and not _inside(entry["folder"]):
                out.append(f"'labels'.{label!r}: its folder {entry['folder']!r} is outside the checkpoint")
                break
    state = record.get("loss_state")
    if isinstance(state, str) and not writing and not _inside(state):
        out.append(f"'loss_state': {state!r} is outside the checkpoint")
    return out


def _inside(relative: str) -> bool:
    """Whether ``relative`` names something inside a checkpoint folder (relative, no ``..``, not
    the folder itself); symbolic links are checked where the path is opened."""
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts and "\\" not in relative


def _read_record(path: Path) -> Any:
    """The JSON value of record ``path``: unreadable bytes, bytes that are not UTF-8 and invalid
    JSON are one-line errors naming the file and the line."""
    from harness.util import jsonio

    return jsonio.load_file(path, what="training record")


def write_checkpoint_record(directory: str | Path, record: Mapping[str, Any]) -> Path:
    """Check ``record`` (the keys above) and write ``directory/harness_training.json``
    atomically; a per-label record also writes the label map. Returns the record's path."""
    from harness.util.atomic import write_text_atomic

    record = {"schema": SCHEMA, **record}
    problems = _problems(record, writing=True)
    if problems:
        raise HarnessError(f"training record for {directory}: {'; '.join(problems)}")
    directory = Path(directory)
    if isinstance(record.get("labels"), dict):
        folders = {label: entry["folder"] for label, entry in record["labels"].items()}
        write_text_atomic(directory / LABEL_MAP_FILE,
                          json.dumps({"schema": LABEL_MAP_SCHEMA, "labels": folders}, indent=1) + "\n")
    path = directory / RECORD_FILE
    write_text_atomic(path, json.dumps(record, indent=1, default=str) + "\n")
    return path


def is_finished(directory: str | Path) -> bool:
    """Whether ``directory`` holds a finished checkpoint's record (not checked further)."""
    return (Path(directory) / RECORD_FILE).is_file()


def _check_model(record_path: Path, model_dir: Path) -> None:
    """``model_dir`` is a sentence-transformers directory: ``modules.json``, a JSON list of modules,
    each an object whose ``path`` is inside the folder."""
    from harness.util import jsonio

    modules_file = model_dir / "modules.json"
    if not model_dir.is_dir():
        raise InputFileError(record_path, f"the checkpoint's model folder {model_dir} is missing "
                             "(it holds the trained encoders)")
    if not modules_file.is_file():
        raise InputFileError(record_path, f"the checkpoint's model folder {model_dir} is not a sentence-transformers "
                             "model directory (no modules.json)")
    modules = jsonio.load_file(modules_file, what="sentence-transformers modules list")
    if not isinstance(modules, list) or not all(
            isinstance(m, dict) and isinstance(m.get("path", ""), str) and (not m.get("path") or _inside(m["path"]))
            for m in modules):
        raise InputFileError(modules_file, "expected a JSON list of modules, each an object whose \"path\" is a "
                             "folder inside the model")


@dataclass(frozen=True)
class Checkpoint:
    """A finished ``harness train`` output: its folder and its checked record."""

    path: Path
    record: Mapping[str, Any]

    @classmethod
    def read(cls, directory: str | Path, *, model: bool = True) -> Checkpoint:
        """Open a finished checkpoint; with ``model`` its ``model/`` must be a sentence-transformers
        directory. Any problem is one line naming the folder or file (and the record's key)."""
        path = Path(directory).expanduser()
        if not path.is_dir():
            raise HarnessError(f"{directory}: no such checkpoint directory")
        record_path = path / RECORD_FILE
        if not record_path.is_file():
            raise HarnessError(f"{path} is not a finished harness train checkpoint (no {RECORD_FILE}); "
                               "an interrupted run resumes with harness train --resume")
        record = _read_record(record_path)
        problems = _problems(record)
        if problems:
            raise InputFileError(record_path, "; ".join(problems))
        if model:
            _check_model(record_path, path / MODEL_DIR)
        return cls(path=path, record=record)

    @property
    def typed(self) -> TrainingRecord:
        """The record as typed attributes (:class:`TrainingRecord`)."""
        typed = self.__dict__.get("_typed")
        if typed is None:
            typed = msgspec.convert(self.record, type=TrainingRecord, strict=True)
            object.__setattr__(self, "_typed", typed)
        return typed

    @property
    def variant(self) -> str:
        return self.typed.variant

    @property
    def format(self) -> str:
        return self.typed.format

    @property
    def model_dir(self) -> Path:
        return self.path / MODEL_DIR

    @property
    def loss_name(self) -> str | None:
        """The registered loss the checkpoint was trained with."""
        recipe = self.typed.recipe
        return recipe.loss.name if recipe is not None and recipe.loss is not None else None

    @property
    def loss_state(self) -> Path | None:
        """The loss's saved parameters, when it had some (a file inside the checkpoint)."""
        name = self.typed.loss_state
        if not name:
            return None
        file = (self.path / name).resolve()
        if self.path.resolve() not in file.parents:
            raise InputFileError(self.path / RECORD_FILE, f"'loss_state': {name!r} is outside {self.path}")
        return self.path / name

    @property
    def per_label(self) -> bool:
        return self.typed.labels is not None

    def label_folders(self) -> dict[str, Path]:
        """``label -> checkpoint folder`` of a per-label run (each inside this folder, and there)."""
        if not self.per_label:
            raise HarnessError(f"{self.path} has one question encoder (variant {self.variant}), not one per label")
        root = self.path.resolve()
        out = {}
        for label, entry in (self.typed.labels or {}).items():
            folder = (root / entry.folder).resolve()
            if root not in folder.parents:
                raise InputFileError(self.path / RECORD_FILE, f"'labels'.{label!r}: its folder {entry.folder!r} "
                                     f"is outside {self.path}")
            if not folder.is_dir():
                raise InputFileError(self.path / RECORD_FILE, f"'labels'.{label!r}: its folder {entry.folder!r} "
                                     f"is missing from {self.path}")
            out[label] = folder
        return out

    def seen_labels(self) -> list[str]:
        """The categories of the training data (a suite's parts, a file's labels)."""
        return sorted({label for d in self.typed.data
                       for label in d.get("labels") or () if isinstance(label, str)})

    @property
    def distributed(self) -> dict[str, Any] | None:
        """How the training was spread: processes, batch per device and global, accumulation."""
        block = self.typed.distributed
        return dict(block) if block is not None else None

    def summary(self) -> dict[str, Any]:
        """What results record of the checkpoint's making (flat enough for the leaderboard; part of
        a result's configuration). The weights' digest names the model, so how the training was
        spread over processes (:attr:`distributed`) goes to a result's ``compute`` block instead."""
        summary = {
            "variant": self.variant,
            "initial_model": self.typed.initial_model,
            "data": [f"{d.get('data', d.get('path'))} ({str(d.get('fingerprint', ''))[:19]})" for d in self.typed.data],
            "seed": self.typed.seed,
            "steps": self.typed.steps,
        }
        seen = self.seen_labels()
        if seen:
            summary["seen"] = seen
        return summary

"""The trainer: a variant's recipe run by sentence-transformers' ``SentenceTransformerTrainer``.

Why that trainer (and not a loop of our own): it brings what users of DPR's, Tevatron's and
sentence-transformers' trainers ask for, maintained upstream: resumable checkpoints (model,
optimizer, scheduler, RNG states), bf16, gradient accumulation, DDP and FSDP through
``torchrun`` / ``accelerate launch``, multi-dataset batching, TensorBoard logging, and asymmetric
question / passage encoders through ``Router``. The harness adds what DPR's recipe needs on top:

- **the loss on embeddings** (:class:`EmbeddingLoss`): every question and passage of the batch is
  encoded, the embeddings are gathered over devices *with* gradient (so every device's examples are
  negatives for every question, and the gradient equals one process with the global batch), and the
  variant's loss (a registered ``LossSpec``) sees ``questions [B, d]``, ``passages [N, d]`` (the B
  positives first, then each hard-negative column) and ``positive = arange(B)``;
- **batches** from the variant's sampler, reproducible per (seed, epoch), so a resumed run sees the
  batches an uninterrupted one would;
- **augmentations** applied when an example is read, seeded by (seed, epoch, example);
- **frozen sides**: the frozen route's parameters get ``requires_grad = False`` (bit-identical
  after training);
- **the record** of everything that made the checkpoint (``harness_training.json``).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.api import Recipe, TrainingExample
from harness.errors import HarnessError

#: Dataset column names; the loss reads them in this order.
QUESTION, POSITIVE = "question", "positive"


def negative_column(i: int) -> str:
    return f"negative_{i + 1}"


FORMATS = ("title_text", "text", "dpr")


def passage_text(title: str, text: str, format: str, sep: str = "[SEP]") -> str:
    """A passage as the encoder reads it: ``title_text`` is ``title + " " + text`` (the BEIR /
    sentence-transformers convention the harness's ``st`` retriever uses), ``text`` the text alone,
    ``dpr`` ``title [SEP] text``: tokenised as one sequence, DPR's ``[CLS] title [SEP] text [SEP]``
    with the tokenizer's own separator (a special token, never split)."""
    if format == "title_text":
        return f"{title} {text}" if title else text
    if format == "text":
        return text
    if format == "dpr":
        return f"{title} {sep} {text}"
    raise HarnessError(f"passage format must be one of {', '.join(FORMATS)}, got {format!r}")


@dataclass
class TrainSettings:
    """Everything ``harness train`` takes besides the variant's recipe."""

    variant: str
    data: list[tuple[Path, float]]
    model: str
    output: Path
    learning_rate: float = 2e-5
    batch_size: int = 16
    epochs: float = 1.0
    max_steps: int = -1
    warmup_ratio: float = 0.0
    #: Warm-up in optimizer steps (overrides ``warmup_ratio`` when set; seed 000's QSFT: 100).
    warmup_steps: int | None = None
    weight_decay: float = 0.0
    seed: int = 42
    hard_negatives: int | None = None
    max_question_length: int = 64
    max_passage_length: int = 256
    format: str = "title_text"
    pooling: str = "cls"
    mixture: str = "proportional"
    save_steps: int = 500
    logging_steps: int = 10
    gradient_accumulation: int = 1
    question_marker: str | None = None
    #: The suite whose corpus a variant's miner or in-loop index searches (default: the first
    #: --data suite name).
    corpus: str | None = None
    #: Passages per shard of the in-loop index (the unit each training process embeds and holds).
    index_shard_size: int = 100_000
    #: Overrides of the recipe's in-loop retrieval: passages retrieved per question, and steps
    #: between re-embeddings of the corpus (0: never).
    retrieve_k: int | None = None
    refresh_every: int | None = None
    #: Train on the examples of this label only (set per label by a split-by-label recipe).
    only_label: str | None = None
    #: Data, epochs and steps of a two-stage recipe's pre-training stage (epochs and steps
    #: default to the main stage's).
    pretrain_data: list[tuple[Path, float]] = field(default_factory=list)
    pretrain_epochs: float | None = None
    pretrain_max_steps: int | None = None
    #: The finished pre-training stage this run starts from (set by the two-stage driver).
    pretrained_from: str | None = None
    resume: bool = False
    progress: bool = True
    loss_options: dict[str, Any] = field(default_factory=dict)
    sampler_options: dict[str, Any] = field(default_factory=dict)
    miner_options: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        def positive(name: str, value: float) -> None:
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                flag = "--lr" if name == "learning_rate" else f"--{name.replace('_', '-')}"
                raise HarnessError(f"{flag} must be a positive number, got {value!r}")

        for name in ("learning_rate", "batch_size", "epochs", "max_question_length", "max_passage_length",
                     "save_steps", "logging_steps", "gradient_accumulation"):
            positive(name, getattr(self, name))
        for name in ("warmup_ratio", "weight_decay"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= (1 if name == "warmup_ratio" else 10)):
                raise HarnessError(f"--{name.replace('_', '-')} out of range: {value!r}")
        if self.warmup_steps is not None and (isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int) or self.warmup_steps < 0):
            raise HarnessError(f"--warmup-steps must be 0 or more, got {self.warmup_steps!r}")
        positive("index_shard_size", self.index_shard_size)
        for name in ("retrieve_k", "refresh_every"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "retrieve_k" else 0)):
                raise HarnessError(f"--{name.replace('_', '-')} must be a {'positive' if name == 'retrieve_k' else 'non-negative'} integer, got {value!r}")
        if self.max_steps != -1 and self.max_steps < 1:
            raise HarnessError(f"--max-steps must be a positive number, got {self.max_steps}")
        if self.hard_negatives is not None and self.hard_negatives < 0:
            raise HarnessError(f"--hard-negatives must be 0 or more, got {self.hard_negatives}")
        if self.mixture not in ("proportional", "round_robin"):
            raise HarnessError(f"--mixture must be proportional or round_robin, got {self.mixture!r}")
        if self.pooling not in ("cls", "mean"):
            raise HarnessError(f"--pooling must be cls or mean, got {self.pooling!r}")
        passage_text("", "", self.format)
        if not self.data:
            raise HarnessError("no training data: give --data FILE (a DPR training JSON, or several with weights)")
        for path, weight in [*self.data, *self.pretrain_data]:
            positive("data weight", weight)
        if self.pretrain_epochs is not None:
            positive("pretrain_epochs", self.pretrain_epochs)
        if self.pretrain_max_steps is not None and (isinstance(self.pretrain_max_steps, bool) or self.pretrain_max_steps < 1):
            raise HarnessError(f"--pretrain-max-steps must be a positive number, got {self.pretrain_max_steps}")


def file_fingerprint(path: Path) -> str:
    """sha256 of a training file's bytes (recorded with the checkpoint)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def mixture(
    datasets: Sequence[list[TrainingExample]], weights: Sequence[float], seed: int, mode: str = "proportional"
) -> list[list[TrainingExample]]:
    """Each dataset resized to ``weight x size`` examples, where ``size`` is its own size
    (``proportional``: weight 1 keeps it as it is, 0.5 a seeded half, 2 two copies) or the smallest
    dataset's size (``round_robin``: every dataset contributes alike, as when batches alternate
    between them until the smallest runs out). Whole copies first, then a seeded sample of the rest."""
    smallest = min((len(d) for d in datasets), default=0)
    out = []
    for i, (examples, weight) in enumerate(zip(datasets, weights)):
        size = len(examples) if mode == "proportional" else smallest
        target = round(weight * size)
        whole, rest = divmod(target, len(examples)) if examples else (0, 0)
        rng = random.Random(f"{seed}:mixture:{i}")
        out.append(list(examples) * whole + rng.sample(list(examples), rest))
    return out


class AugmentingColumns:
    """The dataset's text columns, with the variant's augmentations applied as examples are read.

    An example read in epoch ``e`` is augmented with ``random.Random(f"{seed}:{e}:{index}")``: the
    same text for the same (seed, epoch, example), however batches are formed or resumed.
    """

    def __init__(self, question_augmentations: Sequence[Callable], passage_augmentations: Sequence[Callable], seed: int,
                 *, labels: bool = False):
        self.question_augmentations = list(question_augmentations)
        self.passage_augmentations = list(passage_augmentations)
        self.seed = seed
        self.epoch = 0
        #: Hand each example's index to the loss as its ``label`` (in-loop losses look up answers).
        self.labels = labels

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        out = {}
        indices = batch["index"]
        for column, values in batch.items():
            if column == "index":
                if self.labels:
                    out["label"] = list(values)
                continue
            chain = self.question_augmentations if column == QUESTION else self.passage_augmentations
            if not chain:
                out[column] = values
                continue
            texts = []
            for index, text in zip(indices, values):
                rng = random.Random(f"{self.seed}:{self.epoch}:{index}:{column}")
                for augment in chain:
                    text = augment(text, rng)
                texts.append(text)
            out[column] = texts
        return out


def columns(examples: Sequence[TrainingExample], *, hard_negatives: int, format: str, sep: str = "[SEP]") -> dict[str, list]:
    """The dataset columns: question, positive (the first positive), ``negative_1..h`` (the first
    ``h`` hard negatives) and ``index``. Examples without a positive, or with fewer than ``h`` hard
    negatives, are left out (DPR drops them too) and counted by the caller."""
    data: dict[str, list] = {QUESTION: [], POSITIVE: [], "index": []}
    for i in range(hard_negatives):
        data[negative_column(i)] = []
    for example in examples:
        if not example.positives or len(example.hard_negatives) < hard_negatives:
            continue
        data["index"].append(len(data["index"]))
        data[QUESTION].append(example.question)
        p = example.positives[0]
        data[POSITIVE].append(passage_text(p.title, p.text, format, sep))
        for i in range(hard_negatives):
            n = example.hard_negatives[i]
            data[negative_column(i)].append(passage_text(n.title, n.text, format, sep))
    return data


def settings_record(settings: TrainSettings) -> dict[str, Any]:
    record = asdict(settings)
    record["data"] = [{"path": str(p), "weight": w} for p, w in settings.data]
    record["pretrain_data"] = [{"path": str(p), "weight": w} for p, w in settings.pretrain_data]
    record["output"] = str(settings.output)
    return record


def recipe_record(recipe: Recipe) -> dict[str, Any]:
    def part(p):
        return None if p is None else {"name": p[0], "options": dict(p[1])}

    return {
        "loss": part(recipe.loss),
        "sampler": part(recipe.sampler),
        "miner": part(recipe.miner),
        "hard_negatives": recipe.hard_negatives,
        "question_augmentations": [part(p) for p in recipe.question_augmentations],
        "passage_augmentations": [part(p) for p in recipe.passage_augmentations],
        "shared_encoder": recipe.shared_encoder,
        "question_marker": recipe.question_marker,
        "frozen": recipe.frozen,
        "retrieval": None if recipe.retrieval is None else asdict(recipe.retrieval),
        "split_by_label": recipe.split_by_label,
        "pretrain": recipe.pretrain,
        "defaults": dict(recipe.defaults),
    }

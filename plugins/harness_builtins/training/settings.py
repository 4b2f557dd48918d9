"""What ``harness train`` takes besides a variant's recipe: :class:`TrainSettings`, every scalar
setting declared once (:data:`SETTINGS`, the options mechanism every part uses: the ``train``
command's flags take their types and bounds from it), and the records of the settings and the
recipe written with a checkpoint (``harness_training.json``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.api import Recipe
from harness.errors import HarnessError

#: How a passage is turned into the text the encoder reads (:func:`~.data.passage_text`).
FORMATS = ("title_text", "text", "dpr")


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
    #: ``--pooling`` as given: None is the model's own (a sentence-transformers model's ``Pooling``),
    #: else CLS; a sentence-transformers model refuses one that differs from its own.
    pooling: str | None = None
    mixture: str = "proportional"
    save_steps: int = 500
    #: Checkpoints kept while training: the newest N (the trainer deletes older ones as it saves;
    #: 2 leaves the one before the newest for a resume should the newest be damaged); 0 keeps all.
    save_total_limit: int = 2
    #: Keep ``OUTPUT/checkpoints/checkpoint-*`` once the stage has finished (by default they are
    #: deleted when ``OUTPUT/model`` and the record are written: a finished stage resumes nothing).
    keep_checkpoints: bool = False
    logging_steps: int = 10
    gradient_accumulation: int = 1
    #: Questions per optimizer step over all processes and accumulated steps; when set, the batch
    #: per device is this / (processes x accumulation) (ART's 64 whatever the GPU count).
    global_batch_size: int | None = None
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
    #: In-loop losses that re-encode retrieved passages with gradient (ART): passages per
    #: activation-checkpointed chunk (0: all at once).
    passage_chunk_size: int = 64
    #: Train on the examples of this label only (set per label by a split-by-label recipe).
    only_label: str | None = None
    #: Data, epochs and steps of a two-stage recipe's pre-training stage (epochs and steps
    #: default to the main stage's).
    pretrain_data: list[tuple[Path, float]] = field(default_factory=list)
    pretrain_epochs: float | None = None
    pretrain_max_steps: int | None = None
    #: The finished pre-training stage this run starts from (set by the two-stage driver).
    pretrained_from: str | None = None
    #: Under ``torchrun``: seconds a process waits at a collective (rank 0's data preparation and
    #: mining included) before the run fails.
    distributed_timeout: int = 3 * 3600
    resume: bool = False
    progress: bool = True
    loss_options: dict[str, Any] = field(default_factory=dict)
    sampler_options: dict[str, Any] = field(default_factory=dict)
    miner_options: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Every setting against its declaration (:data:`SETTINGS`, the options mechanism every
        part uses), then what relates settings to each other; one-line errors naming the flag."""
        from harness.api import OptionError

        for name, option in SETTINGS.items():
            value = getattr(self, name)
            if name == "max_steps" and value == -1:
                continue
            try:
                option.check(value, name)
            except OptionError:
                flag = "--lr" if name == "learning_rate" else f"--{name.replace('_', '-')}"
                raise HarnessError(f"{flag} must be {option.describe().removesuffix(' or null').removesuffix(', null')}, got {value!r}") from None
        if not self.data:
            raise HarnessError("no training data: give --data FILE (a DPR training JSON, or several with weights)")
        weight = _positive_number()
        for path, value in [*self.data, *self.pretrain_data]:
            try:
                weight.check(value, "weight")
            except OptionError:
                raise HarnessError(f"--data {path}: the weight must be {weight.describe()}, got {value!r}") from None


#: The largest --data weight: a dataset repeated a thousand times is already far past any mixture
#: the seeds use (weights are relative sizes, not counts).
MAX_WEIGHT = 1000.0


def _positive_number():
    from harness.api import number

    return number(1.0, min=0, min_exclusive=True, max=MAX_WEIGHT)


def _declare() -> dict[str, Any]:
    """The settings' declarations: type and bounds of each (``None`` where a setting may be unset)."""
    from harness.api import choice, non_negative_int, number, positive_int, probability

    def positive():
        return number(1.0, min=0, min_exclusive=True)

    return {
        "learning_rate": positive(), "epochs": positive(), "batch_size": positive_int(16),
        "max_question_length": positive_int(64), "max_passage_length": positive_int(256),
        "save_steps": positive_int(500), "save_total_limit": non_negative_int(2), "logging_steps": positive_int(10), "gradient_accumulation": positive_int(1),
        "warmup_ratio": probability(0.0), "weight_decay": number(0.0, min=0, max=10),
        "warmup_steps": non_negative_int(None, nullable=True), "index_shard_size": positive_int(100_000),
        "global_batch_size": positive_int(None, nullable=True), "distributed_timeout": positive_int(3 * 3600),
        "passage_chunk_size": non_negative_int(64), "retrieve_k": positive_int(None, nullable=True),
        "refresh_every": non_negative_int(None, nullable=True), "max_steps": positive_int(1),
        "hard_negatives": non_negative_int(None, nullable=True), "seed": non_negative_int(42, max=2**32 - 1),
        "mixture": choice("proportional", ("proportional", "round_robin")), "pooling": choice(None, ("cls", "mean"), nullable=True),
        "format": choice("title_text", FORMATS),
        "pretrain_epochs": number(None, min=0, min_exclusive=True, nullable=True),
        "pretrain_max_steps": positive_int(None, nullable=True),
    }


#: name -> :class:`harness.api.options.Option` of every scalar setting (checked by ``check``).
SETTINGS = _declare()


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

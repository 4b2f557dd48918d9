"""One stage's training: the model, the dataset, the loss and the batches handed to
sentence-transformers' ``SentenceTransformerTrainer``, and the checkpoints it leaves.

- :class:`EpochBatches` is the trainer's batch sampler: the variant's sampler run with
  ``random.Random(f"{seed}:{epoch}")`` (the same batches in any process and any resumed run) for
  the global batch, split into one slice per process under ``torchrun``
  (:func:`~.distributed.split`), the epoch told by
  :class:`EpochClock` at every epoch's start (not left to a wrapper that may not pass it on).
- :class:`LogCallback` writes ``train_log.jsonl``; :class:`ConsoleCallback` shows the steps and
  one line per logging step on stderr (the trainer's own callbacks, which print on stdout, are
  removed); :class:`InLoopCallback` builds, refreshes, saves and restores the in-loop index.
- :class:`HarnessTrainer` stops at the first non-finite loss or gradient norm
  (:class:`Diverged`, one line naming the optimizer step), on every process together, so no
  non-finite weights are trained on or saved as the final model (the trainer's own
  ``logging_nan_inf_filter`` would otherwise leave them out of the logged mean loss and go on).
- What a stage leaves beside its checkpoints and which one ``--resume`` continues from are
  :mod:`~harness_builtins.training.resume`'s.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.errors import HarnessError
from harness.results.checkpoint import CHECKPOINTS_DIR, LOG_FILE, MODEL_DIR

from harness.util.atomic import write_text_atomic

from harness_builtins.training.data import QUESTION, AugmentingColumns, Prepared, columns
from harness_builtins.training.distributed import group, rank, split
from harness_builtins.training.plan import RUN_FILE, run_settings
from harness_builtins.training.resume import (
    LOSS_SUM_FILE, loss_sum, mean_loss, restore_in_loop, resume_checkpoint, truncate_log, write_in_loop_state,
)
from harness_builtins.training.settings import TrainSettings
from harness_builtins.training.model import EmbeddingLoss, build_model, freeze, freeze_unused, router_mapping

from sentence_transformers import SentenceTransformerTrainer
from transformers import TrainerCallback


def _part(kind: str, part, overrides: dict | None = None):
    name, options = part
    return registry.load(kind, name, {**dict(options), **(overrides or {})}).value


def with_model_defaults(kind: str, part, overrides: dict, model) -> dict:
    """Options a part can only get from the model being trained, when neither the recipe nor the
    user set them: a loss's ``dim`` (its head's input size) and a sampler's ``embed`` (questions to
    vectors with the current question encoder, for clustering)."""
    declared = registry.registry(kind).get(part[0]).options
    given = {**dict(part[1]), **overrides}
    out = dict(overrides)
    if "dim" in declared and given.get("dim") is None:
        out["dim"] = model.get_embedding_dimension()
    if "embed" in declared and given.get("embed") is None and given.get("vectors") is None:
        def embed(examples):
            encode = getattr(model, "encode_query", model.encode)
            return encode([e.question for e in examples], convert_to_numpy=True, show_progress_bar=False)

        out["embed"] = embed
    return out


class EpochBatches:
    """The variant's sampler as the trainer's ``batch_sampler``: an epoch's global batches from
    ``random.Random(f"{seed}:{epoch}")`` (``per_device`` x processes questions), each split into
    one slice per process (:func:`~.distributed.split`).

    It has no ``batch_size`` attribute on purpose: accelerate would then hold back a round whose
    batches are not all that long, and slices of one global batch may differ by one."""

    def __init__(self, sampler, examples, per_device: int, seed: int):
        self.sampler, self.examples, self.per_device, self.seed = sampler, examples, per_device, seed
        self.epoch = 0
        self._cache: tuple[int, int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def batches(self, epoch: int | None = None) -> list[list[int]]:
        """Every process's batches of ``epoch`` (default: the current one), batch ``i`` for
        process ``i mod world``."""
        epoch = self.epoch if epoch is None else epoch
        world = group()[1]
        if self._cache is not None and self._cache[:2] == (epoch, world):
            return self._cache[2]
        made = self.sampler(self.examples, self.per_device * world, random.Random(f"{self.seed}:{epoch}"))
        for batch in made:
            if not batch or any(not (0 <= i < len(self.examples)) for i in batch):
                raise HarnessError("the batch sampler returned an empty batch or an index out of range")
        out = split(made, world)
        self._cache = (epoch, world, out)
        return out

    def __iter__(self):
        return iter(self.batches())

    def __len__(self) -> int:
        return len(self.batches())


class EpochClock(TrainerCallback):
    """Tells the batches and the augmentations which epoch starts: ``global_step // steps per
    epoch``, as the trainer counts epochs (so a run resumed mid-epoch goes on with that epoch)."""

    def __init__(self, batches: EpochBatches, augmenter: AugmentingColumns, accumulation: int):
        self.batches, self.augmenter, self.accumulation = batches, augmenter, accumulation

    def on_epoch_begin(self, args, state, control, **kwargs):
        per_rank = len(self.batches) // group()[1]  # rounds: a multiple of the world size
        steps = max(per_rank // self.accumulation + int(per_rank % self.accumulation > 0), 1)
        epoch = state.global_step // steps
        self.batches.set_epoch(epoch)
        self.augmenter.epoch = epoch


class LogCallback(TrainerCallback):
    """One JSON line per logging step in ``train_log.jsonl`` (rank 0): step, epoch, the trainer's
    logs, each loss part, examples per second."""

    def __init__(self, path: Path, loss) -> None:
        self.path, self.loss = path, loss
        self.last = time.monotonic()
        self.last_step = 0

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        now = time.monotonic()
        steps = state.global_step - self.last_step
        record = {"step": state.global_step, "epoch": state.epoch, **logs, **{f"loss/{k}": v for k, v in self.loss.take_parts().items()}}
        if steps > 0 and now > self.last:
            world = max(1, args.world_size)
            record["examples_per_second"] = round(steps * args.per_device_train_batch_size * args.gradient_accumulation_steps * world / (now - self.last), 3)
        self.last, self.last_step = now, state.global_step
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


class ConsoleCallback(TrainerCallback):
    """What training shows (rank 0, on stderr: stdout stays clean for the command's output), in
    place of the trainer's own printing callbacks: a bar of optimizer steps
    (:func:`harness.util.progress.progress`: on a terminal only, plain lines otherwise) and one
    line per logging step, ``step 40/60  epoch 0.67  loss 0.4321  lr 1.2e-05``, then
    ``trained 60 steps in 12.3 s  mean loss 0.4321``. ``--no-progress`` shows none of it
    (``train_log.jsonl`` has every logging step)."""

    def __init__(self, progress: bool) -> None:
        from harness.util.progress import progress_enabled

        self.progress, self.bar, self.done = progress and progress_enabled(), None, 0

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            from harness.util.progress import progress

            self.bar = progress(total=state.max_steps, desc="training", unit="steps", enabled=self.progress)
            self.done = 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.done)
            self.done = state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self.progress or not state.is_world_process_zero or not logs:
            return
        from harness.util.progress import note

        if "train_runtime" in logs:  # the trainer's summary, the last log of the run
            self._close(quiet=True)
            line = f"trained {state.global_step} steps in {float(logs['train_runtime']):.1f} s"
            if isinstance(logs.get("train_loss"), (int, float)):
                line += f"  mean loss {logs['train_loss']:.4f}"
            note(line)
            return
        parts = [f"step {state.global_step}/{state.max_steps}"]
        if isinstance(state.epoch, (int, float)):
            parts.append(f"epoch {state.epoch:.2f}")
        for key, label, spec in (("loss", "loss", ".4f"), ("learning_rate", "lr", ".2g"), ("grad_norm", "grad norm", ".3g")):
            if isinstance(logs.get(key), (int, float)):
                parts.append(f"{label} {format(logs[key], spec)}")
        note("  ".join(parts))

    def on_train_end(self, args, state, control, **kwargs):
        self._close(quiet=False)

    def _close(self, quiet: bool) -> None:
        from harness.util.progress import PlainProgress

        if self.bar is not None:
            if isinstance(self.bar, PlainProgress):
                self.bar.close(finished=not quiet)  # the summary line says it
            else:
                self.bar.close()
            self.bar = None


class InLoopCallback(TrainerCallback):
    """The in-loop index: restored from the checkpoint resumed (else built) when training starts,
    rebuilt every ``refresh_every`` steps, its state saved beside every checkpoint."""

    def __init__(self, index, loss_module, model, checkpoints: Path, refresh_every: int | None, resume_from: Path | None):
        self.index, self.loss_module, self.model = index, loss_module, model
        self.checkpoints, self.refresh_every, self.resume_from = checkpoints, refresh_every, resume_from

    def on_train_begin(self, args, state, control, **kwargs):
        if not restore_in_loop(self.resume_from, self.index, self.loss_module):  # after a resumed run's weights are loaded
            self.index.build(self.model, state.global_step)

    def before_save(self, folder: Path) -> None:
        """Called by :class:`HarnessTrainer` before the trainer writes a checkpoint's files."""
        write_in_loop_state(folder, self.index, self.loss_module)

    def on_save(self, args, state, control, **kwargs):
        # the checkpoint is complete: the index it searches stays until a newer one's
        if hasattr(self.index, "pin"):
            self.index.pin()

    def on_step_end(self, args, state, control, **kwargs):
        every = self.refresh_every
        if every and state.global_step % every == 0 and state.global_step < state.max_steps:
            self.index.build(self.model, state.global_step)


class Diverged(HarnessError):
    """Training met a non-finite loss or gradient norm."""


class HarnessTrainer(SentenceTransformerTrainer):
    """The sentence-transformers trainer with the variant's batches (:class:`EpochBatches`) and a
    divergence guard: every micro-batch's loss and every optimizer step's gradient norm (computed
    after the gradients are reduced over processes, so alike on every process) must be finite.
    Under ``torchrun`` the verdict is all-reduced at each optimizer step before the optimizer
    runs, so every process stops at the same step with the same line."""

    def __init__(self, *args, batches: EpochBatches, loss_before: float = 0.0, **kwargs):
        self.harness_batches = batches
        self.harness_bad_loss: float | None = None
        #: The summed step losses of the steps before the checkpoint this run resumed from.
        self.harness_loss_before = loss_before
        super().__init__(*args, **kwargs)

    def _run_epoch(self, *args, **kwargs):
        # resumed from the checkpoint of the last step: the trainer would run one more step
        # before looking at max_steps
        if 0 < self.state.max_steps <= self.state.global_step:
            self.control.should_training_stop = True
            return None
        return super()._run_epoch(*args, **kwargs)

    def _save_checkpoint(self, model, trial):
        # What a resume reads beside the trainer's files goes into the folder first: the trainer
        # writes its state last, and that file makes the checkpoint complete, so a run killed
        # while saving leaves either a complete checkpoint with these or an incomplete one.
        folder = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
        if self.is_world_process_zero():  # the summed step losses so far: a resumed run's mean covers every step
            total = self.harness_loss_before + self._total_loss_scalar + float(self._tr_loss.item())
            folder.mkdir(parents=True, exist_ok=True)
            write_text_atomic(folder / LOSS_SUM_FILE, json.dumps({"step": self.state.global_step, "loss_sum": total}))
        for callback in self.callback_handler.callbacks:
            if isinstance(callback, InLoopCallback):
                callback.before_save(folder)
        super()._save_checkpoint(model, trial)

    def get_batch_sampler(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
        return self.harness_batches

    def training_step(self, model, inputs, num_items_in_batch=None):
        import torch

        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.harness_bad_loss is None and not bool(torch.isfinite(loss.detach()).all()):
            self.harness_bad_loss = float(loss.detach().float().reshape(-1)[0])
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        import math

        import torch

        norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        value = float(norm.item() if hasattr(norm, "item") else norm) if norm is not None else 0.0
        bad = self.harness_bad_loss is not None or not math.isfinite(value)
        if group()[1] > 1:
            import torch.distributed as dist

            flag = torch.tensor([1.0 if bad else 0.0], device=self.args.device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            bad = bool(flag.item() > 0)
        if bad:
            step = self.state.global_step + 1
            what = (f"the loss is {self.harness_bad_loss}" if self.harness_bad_loss is not None
                    else f"the gradient norm is {value}" if not math.isfinite(value) else "another process's loss is not finite")
            raise Diverged(
                f"training diverged at optimizer step {step}: {what} (learning rate {self._learning_rate_now()}); "
                "the step was not taken and no final model was written: lower --lr or the loss weights"
                + (", or --resume from the last checkpoint" if step > 1 else ""))
        return norm

    def _learning_rate_now(self) -> str:
        try:
            return f"{self._get_learning_rate():.3g}"
        except Exception:  # no scheduler yet: the configured rate
            return f"{self.args.learning_rate:.3g}"


def check_finite(model, step: int) -> None:
    """Refuse weights with a non-finite value (all-reduced under ``torchrun``: every process
    raises alike), naming the first such parameter of this process."""
    import torch

    bad = next((name for name, param in model.named_parameters() if not bool(torch.isfinite(param.detach()).all())), None)
    flag = bad is not None
    if group()[1] > 1:
        import torch.distributed as dist

        device = next(model.parameters()).device
        tensor = torch.tensor([1.0 if flag else 0.0], device=device if device.type != "meta" else "cpu")
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        flag = bool(tensor.item() > 0)
    if flag:
        where = f"the weight {bad}" if bad else "another process's weights"
        raise Diverged(f"training diverged: after optimizer step {step} {where} is not finite; no final model was written")


def _has_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True


def training_arguments(settings: TrainSettings, recipe, text_columns: list[str], checkpoints: Path):
    """The trainer's arguments for ``settings`` (bf16 on a GPU that has it, gloo on CPU)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainingArguments

    cuda = torch.cuda.is_available()
    marker = settings.question_marker or recipe.question_marker
    return SentenceTransformerTrainingArguments(
        output_dir=str(checkpoints),
        per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation,
        learning_rate=settings.learning_rate,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        # an int counts steps, a float below 1 is a share of the steps
        warmup_steps=settings.warmup_steps if settings.warmup_steps is not None else float(settings.warmup_ratio),
        weight_decay=settings.weight_decay,
        seed=settings.seed,
        data_seed=settings.seed,
        bf16=cuda and torch.cuda.is_bf16_supported(),
        use_cpu=not cuda,
        ddp_backend="gloo" if not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1 else None,
        ddp_timeout=settings.distributed_timeout,
        # each column is a separate forward of the model (and of one Router side): with unused
        # parameters searched for after every forward, the other side's would be marked twice
        ddp_find_unused_parameters=False,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=settings.save_total_limit or None,
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        report_to=["tensorboard"] if _has_tensorboard() else "none",
        disable_tqdm=True,  # the trainer's bar prints its logs on stdout: ConsoleCallback shows them
        router_mapping=router_mapping(text_columns, recipe.shared_encoder),
        prompts={QUESTION: marker} if marker else None,
        dataloader_drop_last=False,
        remove_unused_columns=False,
    )


@dataclass
class Fitted:
    """What a stage's training left: the model and loss module, the trainer's state and result,
    the examples trained on, the in-loop record and the batch geometry."""

    model: Any
    loss_module: Any
    steps: int
    train_loss: float | None
    #: The steps ``train_loss`` is the mean of (all of them, unless resumed from a checkpoint
    #: that recorded no loss sum).
    train_loss_steps: int
    kept: int
    in_loop: dict[str, Any] | None
    distributed: dict[str, Any]


def _model_and_data(settings: TrainSettings, recipe, prepared: Prepared):
    """The model to train (seeded, frozen as the recipe says) and the dataset's columns."""
    import torch

    torch.manual_seed(settings.seed)
    start = str(Path(settings.pretrained_from) / MODEL_DIR) if settings.pretrained_from else settings.model
    model = build_model(start, shared=recipe.shared_encoder, pooling=settings.pooling,
                        max_question_length=settings.max_question_length, max_passage_length=settings.max_passage_length)
    sep = getattr(model.tokenizer, "sep_token", None) or "[SEP]"
    if prepared.in_loop:
        data = {QUESTION: [e.question for e in prepared.usable], "index": list(range(len(prepared.usable)))}
    else:
        data = columns(prepared.examples, hard_negatives=prepared.hard_negatives, format=settings.format, sep=sep)
    freeze_unused(model)
    if recipe.frozen:
        freeze(model, recipe.frozen)
    return model, data, sep


def searched_suite(name: str):
    """The suite an in-loop index searches, and its corpus size. Opening a corpus may download it
    and build its store: rank 0 does that alone while the others wait, then they open what it wrote."""
    from harness_builtins.training.distributed import rank_zero_first

    with rank_zero_first(f"opening {name}'s corpus"):
        searched = registry.load("suites", name, {}).value
        return searched, len(searched.corpus)


def _in_loop_loss(settings: TrainSettings, prepared: Prepared, model, loss_module, sep: str):
    from harness.util.cache import cache_dir

    from harness_builtins.training.inloop import InLoopIndex, in_loop_loss

    searched, size = searched_suite(prepared.corpus_suite)
    if prepared.in_loop.k > size:
        raise HarnessError(f"--retrieve-k {prepared.in_loop.k} is more than the {size:,} passages of {prepared.corpus_suite}'s "
                           f"corpus; give at most {size:,}")
    index = InLoopIndex(searched.corpus, root=cache_dir() / "dense", format=settings.format, sep=sep,
                        shard_size=settings.index_shard_size, progress=settings.progress)
    loss = in_loop_loss(model, loss_module, index, prepared.usable, k=prepared.in_loop.k, format=settings.format, sep=sep,
                        match=searched.match, passage_chunk_size=settings.passage_chunk_size or None)
    return index, loss


def batch_geometry(settings: TrainSettings) -> dict[str, int]:
    """Questions per device and step, processes, accumulation; the in-batch group (questions whose
    passages are each other's negatives: per device x processes) and examples per optimizer step
    (x accumulation: accumulated steps add no in-batch negatives)."""
    _, world = group()
    return {"world_size": world, "per_device_batch": settings.batch_size, "gradient_accumulation": settings.gradient_accumulation,
            "global_batch": settings.batch_size * world, "examples_per_step": settings.batch_size * world * settings.gradient_accumulation}


def fit(settings: TrainSettings, prepared: Prepared) -> Fitted:
    """Train one stage (see the module notes) and return what it left."""
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    recipe = registry.registry("variants").get(settings.variant).recipe
    output = Path(settings.output)
    checkpoints = output / CHECKPOINTS_DIR
    question_aug = [_part("augmentations", p) for p in recipe.question_augmentations]
    passage_aug = [_part("augmentations", p) for p in recipe.passage_augmentations]
    model, data, sep = _model_and_data(settings, recipe, prepared)
    loss_module = _part("losses", recipe.loss, with_model_defaults("losses", recipe.loss, settings.loss_options, model))
    sampler = _part("samplers", recipe.sampler, with_model_defaults("samplers", recipe.sampler, settings.sampler_options, model))
    dataset = Dataset.from_dict(data)
    augmenter = AugmentingColumns(question_aug, passage_aug, settings.seed, labels=prepared.in_loop is not None)
    dataset.set_transform(augmenter)
    index = None
    if prepared.in_loop:
        index, loss = _in_loop_loss(settings, prepared, model, loss_module, sep)
    else:
        loss = EmbeddingLoss.create(model, loss_module)
    output.mkdir(parents=True, exist_ok=True)
    log_path = output / LOG_FILE
    resume_from = resume_checkpoint(checkpoints) if settings.resume else None
    batches = EpochBatches(sampler, prepared.usable, settings.batch_size, settings.seed)
    callbacks = [EpochClock(batches, augmenter, settings.gradient_accumulation), LogCallback(log_path, loss),
                 ConsoleCallback(settings.progress)]
    if index is not None:
        callbacks.append(InLoopCallback(index, loss_module, model, checkpoints, prepared.in_loop.refresh_every, resume_from))
    args = training_arguments(settings, recipe, [c for c in data if c != "index"], checkpoints)
    before = loss_sum(resume_from)  # now: the checkpoint may be rotated away before training ends
    trainer = HarnessTrainer(model=model, args=args, train_dataset=dataset, loss=loss, callbacks=callbacks, batches=batches,
                             loss_before=before[1] if before else 0.0)
    for printing in (PrinterCallback, ProgressCallback):  # they print the logs on stdout: ConsoleCallback shows them on stderr
        trainer.remove_callback(printing)
    if resume_from is not None:
        truncate_log(log_path, int(resume_from.name.split("-")[1]))
    elif trainer.is_world_process_zero():  # a fresh start: the settings a --resume must match
        if log_path.exists():
            log_path.unlink()
        write_text_atomic(output / RUN_FILE, json.dumps(run_settings(settings), indent=1) + "\n")
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    train_loss, covered = mean_loss(getattr(result, "training_loss", None), trainer.state.global_step, resume_from, before)
    in_loop_record = _in_loop_record(prepared, index, loss_module)  # every process: a collective
    if index is not None:
        index.discard()
    model = final_model(trainer, model, lambda: _model_and_data(settings, recipe, prepared)[0])
    check_finite(model, trainer.state.global_step)
    return Fitted(model=model, loss_module=loss_module, steps=trainer.state.global_step,
                  train_loss=train_loss, train_loss_steps=covered, kept=len(data[QUESTION]), in_loop=in_loop_record,
                  distributed=batch_geometry(settings))


def final_model(trainer, model, rebuild):
    """The trained model rank 0 saves. Under FSDP each process holds a shard of the weights: every
    process takes part in gathering the full state dict (accelerate's ``get_state_dict``, a
    collective) and rank 0 loads it into a model built afresh (``rebuild()``); otherwise the model
    trained, as it is."""
    if not getattr(trainer, "is_fsdp_enabled", False):
        return model
    state = trainer.accelerator.get_state_dict(trainer.model)
    if rank() != 0:
        return model
    full = rebuild()
    full.load_state_dict(state)
    return full


def _in_loop_record(prepared: Prepared, index, loss_module) -> dict[str, Any] | None:
    """What the in-loop retrieval did: its settings, each (re-)embedding of the corpus (step,
    cache, seconds, passages/s) and, for a loss that skips questions, how many it skipped
    (summed over processes)."""
    if prepared.in_loop is None:
        return None
    record: dict[str, Any] = {"k": prepared.in_loop.k, "refresh_every": prepared.in_loop.refresh_every,
                              "corpus": prepared.corpus_suite, "passages": len(index), "builds": index.builds}
    if hasattr(loss_module, "skipped"):
        counts = [int(loss_module.skipped), int(loss_module.seen)]
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, counts)
            counts = [sum(c[0] for c in gathered), sum(c[1] for c in gathered)]
        record["questions_skipped"], record["questions_seen"] = counts
    return record

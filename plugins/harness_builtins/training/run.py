"""``train(settings)``: a run as a straight path: plan, then for each stage data and fit, then the
checkpoint written.

The output is a :mod:`harness.results.checkpoint` folder (``OUT/model``, ``OUT/harness_training.json``,
``OUT/train_log.jsonl``, ``OUT/checkpoints/``, ...). ``OUT/model`` and the record are written only
when training finishes (a temporary folder renamed into place; the record last); an interrupted
run leaves its checkpoints, and ``--resume`` goes on from the last one. Under ``torchrun`` the
process group starts first (``--distributed-timeout`` for every wait), every process trains, and
rank 0 writes.
"""

from __future__ import annotations

import contextlib
import platform
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from harness import __version__, registry
from harness.errors import HarnessError
from harness.results.checkpoint import CHECKPOINTS_DIR, LOSS_STATE_FILE, MINED_FILE, MODEL_DIR, Checkpoint, is_finished, write_checkpoint_record
from harness.util.atomic import atomic_dir, exclusive_lock, write_bytes_atomic, write_text_atomic

from harness_builtins.training.distributed import barrier, init_process_group, rank, rank_zero_first
from harness_builtins.training.settings import TrainSettings, recipe_record, settings_record
from harness_builtins.training.model import mark_similarity
from harness_builtins.training.plan import RUN_FILE, Plan, Stage, check_output_folder, make_plan, preflight, run_settings


def versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"harness": __version__, "python": platform.python_version()}
    for package in ("torch", "transformers", "sentence-transformers", "accelerate"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def _quiet() -> None:
    """No bars from huggingface_hub, transformers, datasets or sentence-transformers' model card
    (:func:`harness.util.progress.quiet_third_party_progress`, with each of them imported)."""
    import huggingface_hub.utils  # noqa: F401
    import transformers.utils.logging  # noqa: F401
    import datasets  # noqa: F401
    import sentence_transformers  # noqa: F401

    from harness.util.progress import quiet_third_party_progress

    quiet_third_party_progress()


def train(settings: TrainSettings) -> Path:
    """Train ``settings.variant`` and write ``settings.output`` (see the module notes)."""
    started = time.monotonic()
    settings.check()
    preflight(settings)  # a wrong model, data or output refused before torch and the data's mining
    import torch

    init_process_group(cpu=not torch.cuda.is_available(), timeout_seconds=settings.distributed_timeout)
    from harness.util.progress import stderr_is_tty

    if not settings.progress or not stderr_is_tty():  # no bars, or no terminal to draw them on
        _quiet()
    with output_lock(Path(settings.output)):
        plan = make_plan(settings)
        for stage in plan.stages:
            if not is_finished(stage.output):
                run_stage(stage)
                barrier()  # rank 0 wrote what the next stage starts from or reads
        if plan.labels is not None:
            assemble_labels(plan, started)
            barrier()
    return Path(settings.output)


@contextlib.contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output folder (rank 0; :func:`harness.util.atomic.exclusive_lock`
    on the folder itself) while the run writes into it: a second training into the same folder stops
    with one line, on every process of its launch. The folder is created for the lock once it passed
    :func:`~.plan.check_output_folder`, and removed again when the run leaves it empty."""
    with contextlib.ExitStack() as held:
        with rank_zero_first("taking the output folder") as first:
            if first:
                check_output_folder(output)
                created = not output.exists()
                try:
                    output.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise HarnessError(f"--output {output}: cannot create it: {exc.strerror or exc}") from None
                if created:  # last out (the lock released after): only when the run left it empty
                    held.callback(_remove_if_empty, output)
                held.enter_context(exclusive_lock(output, f"--output {output} is being written by another training "
                                                          "(it holds the folder's lock); wait for it to end, or choose another --output"))
        yield


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def run_stage(stage: Stage) -> None:
    """One stage: its data (rank 0 first), its training, and on rank 0 its checkpoint."""
    from harness_builtins.training.data import prepare
    from harness_builtins.training.fit import fit

    started = time.monotonic()
    settings = stage.settings
    before = _listing(stage.output)
    mark_started(stage)
    try:
        prepared = prepare(settings)
        fitted = fit(settings, prepared)
    except BaseException:
        _undo_start(stage, before)
        raise
    if rank() != 0:
        return
    output = Path(settings.output)
    with atomic_dir(output / MODEL_DIR, replace=True) as tmp:
        mark_similarity(fitted.model).save(str(tmp))
    state = {k: v for k, v in fitted.loss_module.state_dict().items()}
    if state:
        from safetensors.torch import save

        write_bytes_atomic(output / LOSS_STATE_FILE, save({k: v.contiguous() for k, v in state.items()}))
    variant = registry.registry("variants").get(settings.variant)
    write_checkpoint_record(output, {
        **_common(settings, variant, prepared.records, fitted.model),
        "examples": {"read": prepared.read, "after_mixture": len(prepared.examples), "trained_on": fitted.kept,
                     "left_out": len(prepared.examples) - fitted.kept},
        "hard_negatives": prepared.hard_negatives,
        "miner": prepared.miner,
        "in_loop": fitted.in_loop,
        "pretraining": _pretraining_record(settings.pretrained_from),
        "distributed": fitted.distributed,
        "steps": fitted.steps,
        "train_loss": fitted.train_loss,
        "train_loss_steps": fitted.train_loss_steps,
        "loss_state": LOSS_STATE_FILE if state else None,
        "seconds": round(time.monotonic() - started, 3),
        "versions": versions(),
    })
    if not settings.keep_checkpoints:
        _remove_checkpoints(output)


def mark_started(stage: Stage) -> None:
    """A stage starting afresh (no checkpoint to resume) writes its settings (``RUN_FILE``, rank 0)
    before anything else (mined data, checkpoints), so whatever a stopped run leaves in its folder
    sits beside the record that makes the folder a harness training's own and that ``--resume``
    checks against."""
    import json

    checkpoints = stage.output / CHECKPOINTS_DIR
    if rank() != 0 or (checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*"))):
        return
    stage.output.mkdir(parents=True, exist_ok=True)
    write_text_atomic(stage.output / RUN_FILE, json.dumps(run_settings(stage.settings), indent=1) + "\n")


def _listing(folder: Path) -> set[str] | None:
    try:
        return {p.name for p in folder.iterdir()}
    except OSError:
        return None


def _undo_start(stage: Stage, before: set[str] | None) -> None:
    """A stage that failed or was stopped before training wrote anything of its own (no log, no
    checkpoint: a refusal while its data was read or its model built) leaves its folder as it
    found it: the settings and mined data it wrote are removed (rank 0). Once training has
    written, everything stays, beside the settings that make the folder a harness training's own."""
    if rank() != 0:
        return
    now = _listing(stage.output)
    if now is None:
        return
    added = now - (before or set())
    if not added <= {RUN_FILE, MINED_FILE}:
        return
    for name in added:
        with contextlib.suppress(OSError):
            (stage.output / name).unlink()
    if before is None:
        _remove_if_empty(stage.output)


def _remove_checkpoints(output: Path) -> None:
    """A finished stage's checkpoints deleted once its model and record are written, said on one line."""
    from harness.util.progress import note

    from harness_builtins.training.resume import remove_checkpoints

    removed, size = remove_checkpoints(output / CHECKPOINTS_DIR)
    if removed:
        note(f"training finished: removed {removed} checkpoint{'s' if removed != 1 else ''} ({size / 1e6:,.0f} MB) "
             f"from {output / CHECKPOINTS_DIR} (--keep-checkpoints keeps them)")


def _common(settings: TrainSettings, variant, records: list[dict[str, Any]], model) -> dict[str, Any]:
    """The record's common part; its ``settings.pooling`` is the pooling ``model`` uses (read from
    its ``Pooling`` modules: a sentence-transformers initial model pools by its own), not the
    option as given."""
    from harness_builtins.training.model import pooling_of

    record = settings_record(settings)
    record["pooling"] = pooling_of(model)
    return {"variant": settings.variant, "reference": variant.reference, "recipe": recipe_record(variant.recipe),
            "settings": record, "initial_model": settings.model, "initial_model_digest": _initial_digest(settings.model),
            "data": records, "format": settings.format, "seed": settings.seed}


def _initial_digest(model: str) -> str | None:
    """The content digest of a local initial model folder (what results show instead of its path:
    the checkpoint may be evaluated where that folder is not); None for a hub id or a packaged
    model's short name, which name their model themselves."""
    from harness_builtins.common.trained_models import model_digest

    return model_digest(model) if Path(model).expanduser().is_dir() else None


def _pretraining_record(stage: str | None) -> dict[str, Any] | None:
    """The pre-training stage a two-stage run started from: its folder, variant, data and steps."""
    if stage is None:
        return None
    record = Checkpoint.read(stage).record
    return {"output": stage, "variant": record["variant"], "data": record["data"], "steps": record.get("steps"),
            "train_loss": record.get("train_loss"), "seconds": record.get("seconds")}


def assemble_labels(plan: Plan, started: float) -> None:
    """A per-label run's top level (rank 0): ``OUT/model`` (the starting model: the shared passage
    encoder, and the question encoder of labels without their own) and the record naming each
    label's folder (and ``OUT/specialised.json``)."""
    if rank() != 0:
        return
    import torch

    from harness_builtins.training.model import build_model

    settings = plan.settings
    runs = {label: Checkpoint.read(Path(settings.output) / folder).record for label, folder in plan.labels.items()}
    torch.manual_seed(settings.seed)  # as each label's run: any newly initialised weights are theirs
    model = build_model(settings.model, shared=False, pooling=settings.pooling,
                        max_question_length=settings.max_question_length, max_passage_length=settings.max_passage_length)
    output = Path(settings.output)
    with atomic_dir(output / MODEL_DIR, replace=True) as tmp:
        mark_similarity(model).save(str(tmp))
    variant = registry.registry("variants").get(settings.variant)
    write_checkpoint_record(output, {
        **_common(settings, variant, plan.data or [], model),
        "labels": {label: {"folder": plan.labels[label], "steps": r.get("steps"), "examples": r.get("examples"),
                           "in_loop": r.get("in_loop"), "train_loss": r.get("train_loss")} for label, r in runs.items()},
        "distributed": next(iter(runs.values())).get("distributed"),
        "steps": sum(int(r.get("steps") or 0) for r in runs.values()),
        "seconds": round(time.monotonic() - started, 3), "versions": versions(),
    })

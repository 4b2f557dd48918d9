"""The plan of a ``harness train`` run: its settings checked once and its stages expanded up front.

A variant's recipe may ask for more than one training: a **pre-training stage** (two-stage
recipes, e.g. ``synthetic-pretrain``: the ``pretrain`` variant on ``--pretrain-data`` into
``OUT/stages/pretrain``, then the recipe on ``--data`` starting from its model) or **one training
per label** (``split_by_label`` recipes, e.g. ``specialised``: the recipe on each label's examples
into ``OUT/labels/LABEL``, then ``OUT/model`` and the record assembled from them). ``make_plan``
turns a run into a flat list of :class:`Stage` s that :func:`~.run.train` runs in order: a stage
whose output is finished is skipped, an unfinished one resumes with ``--resume``.

Everything that can be wrong with a run's settings is found here, before any stage starts:
values out of range, options a recipe does not take, data that names nothing, an initial model
that is neither a model directory nor a hub model, a finished or unfinished output, and several
GPUs without ``torchrun`` (the trainer would fall back to ``DataParallel``, which splits each batch
over the GPUs and loses the in-batch negatives of the others' questions).

Outputs are never clobbered: ``--output`` must be new, empty, or a harness training's own folder,
known by a record harness wrote there, never by names alone (:func:`check_output_folder`); each stage's settings are written to ``RUN_FILE`` when it starts,
and ``--resume`` refuses settings that change what is trained (:func:`check_resumed_settings`).
:func:`~.run.train` holds a lock on the output folder for the whole run, so a second training into
it stops with one line.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.errors import HarnessError
from harness.results.checkpoint import CHECKPOINTS_DIR, LABELS_DIR, PRETRAIN_DIR, RECORD_FILE, is_finished

from harness_builtins.training.distributed import launched_world, rank
from harness_builtins.training.settings import TrainSettings


@dataclass(frozen=True)
class Stage:
    """One training: its settings (output, data, variant, label, start) and its role: ``pretrain``
    (the first of two stages), ``label`` (one label of a per-label run) or ``main``."""

    role: str
    settings: TrainSettings

    @property
    def output(self) -> Path:
        return Path(self.settings.output)


@dataclass(frozen=True)
class Plan:
    """The stages of a run in order, and for a per-label run the label -> folder map its
    assembly writes."""

    settings: TrainSettings
    stages: tuple[Stage, ...]
    labels: dict[str, str] | None = None
    #: A per-label run: each ``--data`` entry's record, all labels read.
    data: list[dict[str, Any]] | None = None


def resolve_settings(*, variant: str, given: dict[str, Any], **fixed: Any) -> TrainSettings:
    """The settings of a run: what the user gave, else the variant's defaults, else the engine's."""
    spec = registry.registry("variants").get(variant)
    known = set(TrainSettings.__dataclass_fields__)
    unknown = sorted(set(spec.recipe.defaults) - known)
    if unknown:
        raise HarnessError(f"variant {variant!r} has a default for an unknown setting {unknown[0]!r}")
    defaults = dict(spec.recipe.defaults)
    if "warmup_ratio" in given and "warmup_steps" not in given:
        defaults.pop("warmup_steps", None)  # the user's warm-up, not the variant's in steps
    if "batch_size" in given and "global_batch_size" in given:
        raise HarnessError("give --batch-size (per device) or --global-batch-size (over all processes), not both")
    if "batch_size" in given:
        defaults.pop("global_batch_size", None)  # the user's batch per device, not the variant's global one
    values = {**defaults, **given, **fixed}
    data = [(Path(p), w) for p, w in values.pop("data")]
    values["pretrain_data"] = [(Path(p), w) for p, w in values.pop("pretrain_data", ())]
    return TrainSettings(variant=variant, data=data, **values)


def refuse_data_parallel() -> None:
    """Several visible GPUs without a launcher: a one-line error naming ``torchrun``."""
    import torch

    if launched_world() > 1 or "LOCAL_RANK" in os.environ or not torch.cuda.is_available():
        return  # a launcher's process (torchrun --nproc_per_node 1 included) uses one GPU
    count = torch.cuda.device_count()
    if count > 1:
        raise HarnessError(
            f"{count} GPUs are visible but harness train runs as one process: launch it with "
            f"torchrun --nproc_per_node {count} -m harness.cli.main train ... (one process per GPU; DataParallel would "
            "split each batch and lose the other GPUs' in-batch negatives), or pick one GPU with CUDA_VISIBLE_DEVICES=0"
        )


def check_recipe(settings: TrainSettings) -> None:
    """The settings against the variant's recipe: in-loop flags only for in-loop recipes, the
    loss's kind matching the recipe's retrieval, pre-training data only for two-stage recipes."""
    recipe = registry.registry("variants").get(settings.variant).recipe
    if settings.pretrain_data and recipe.pretrain is None:
        raise HarnessError(f"--pretrain-data applies to two-stage variants (synthetic-pretrain); {settings.variant!r} is one stage")
    if recipe.pretrain is not None and not settings.pretrain_data and settings.pretrained_from is None:
        raise HarnessError(f"variant {settings.variant!r} pre-trains first: give --pretrain-data FILE "
                           "(e.g. questions made by harness data generate-questions)")
    if recipe.pretrain is not None and recipe.split_by_label:
        raise HarnessError(f"variant {settings.variant!r} both pre-trains and splits by label; a recipe does one or the other")
    if recipe.retrieval is None and (settings.retrieve_k is not None or settings.refresh_every is not None):
        raise HarnessError(f"--retrieve-k and --refresh-every apply to in-loop variants (qsft, art); {settings.variant!r} is not one")
    loss_spec = registry.registry("losses").get(recipe.loss[0])
    if (recipe.retrieval is not None) != loss_spec.in_loop:
        raise HarnessError(
            f"variant {settings.variant!r}: loss {loss_spec.name!r} "
            f"{'searches an in-loop index' if loss_spec.in_loop else 'takes in-batch passages'}, "
            f"but the recipe {'has no' if recipe.retrieval is None else 'has an'} in-loop retrieval"
        )
    if recipe.split_by_label and (recipe.frozen != "passage" or recipe.shared_encoder):
        raise HarnessError(f"variant {settings.variant!r} splits by label: its recipe must freeze the passage side of separate encoders")
    # the parts' options against their declarations, before any data is read or model loaded
    parts = [("losses", recipe.loss, settings.loss_options), ("samplers", recipe.sampler, settings.sampler_options)]
    parts += [("augmentations", part, {}) for part in (*recipe.question_augmentations, *recipe.passage_augmentations)]
    if recipe.miner is not None:
        parts.append(("miners", recipe.miner, {k: v for k, v in settings.miner_options.items()}))
    elif settings.miner_options:
        raise HarnessError(f"--miner-option applies to variants that mine hard negatives (dense-negatives); {settings.variant!r} does not")
    for kind, (name, options), given in parts:
        registry.resolve(kind, name, {**dict(options), **given})


#: A stage's settings, written to its output when it starts (what ``--resume`` must match).
RUN_FILE = "harness_run.json"
#: Settings a resumed run may change: how it runs, not what it trains.
RESUMABLE = frozenset({"resume", "progress", "distributed_timeout", "logging_steps", "save_steps", "save_total_limit",
                       "keep_checkpoints", "output"})
#: Keys every ``RUN_FILE`` holds (:func:`run_settings`): a file of that name without them is not ours.
_RUN_KEYS = ("variant", "data", "model", "output")


def _harness_record(folder: Path) -> bool:
    """Whether ``folder`` holds a record a harness training wrote: a ``RUN_FILE`` (a JSON object
    of a stage's settings) or a training record (schema ``harness-training/1``). A name alone is
    not enough: a user's ``train_log.jsonl`` or ``checkpoints/`` makes no folder ours."""
    import json

    from harness.results.checkpoint import SCHEMA

    for name, ours in ((RUN_FILE, lambda d: all(k in d for k in _RUN_KEYS)), (RECORD_FILE, lambda d: d.get("schema") == SCHEMA)):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and ours(data):
            return True
    return False


def is_training_folder(folder: Path) -> bool:
    """Whether a harness training wrote ``folder``: its own record (:func:`_harness_record`), or
    the record of a stage inside it (``stages/pretrain``, ``labels/LABEL``) when it was stopped
    before its own was written."""
    if _harness_record(folder) or _harness_record(folder / PRETRAIN_DIR):
        return True
    labels = folder / LABELS_DIR
    try:
        return labels.is_dir() and any(_harness_record(d) for d in labels.iterdir() if d.is_dir())
    except OSError:
        return False


def _has_checkpoints(folder: Path) -> bool:
    checkpoints = folder / CHECKPOINTS_DIR
    try:
        return checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*"))
    except OSError:
        return False


def _missing_run_file(folder: Path) -> str:
    """The one line refusing checkpoints whose settings were not recorded."""
    return (f"--output {folder} holds checkpoints ({folder / CHECKPOINTS_DIR}) but not {folder / RUN_FILE}, the settings "
            "they were trained with: without it a --resume cannot be checked against them (data, model, lr, seed); "
            "train into another --output, or delete the checkpoints to start over")


def check_output_folder(output: Path) -> None:
    """``--output`` must be a folder that does not exist yet, an empty one, or one a harness
    training wrote (:func:`is_training_folder`: a record harness wrote is there): never a file,
    under a file, or a folder of someone's other files (which the model, log and checkpoints
    would overwrite or delete), whatever their names. Nothing is written or removed here."""
    if output.exists() and not output.is_dir():
        raise HarnessError(f"--output {output} is a file, not a folder")
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise HarnessError(f"--output {output}: {parent} is a file, not a folder")
            break
    if not output.is_dir():
        return
    try:
        names = sorted(p.name for p in output.iterdir())
    except OSError as exc:
        raise HarnessError(f"--output {output}: cannot list it: {exc.strerror or exc}") from None
    if not names or is_training_folder(output):
        return
    if _has_checkpoints(output):
        raise HarnessError(_missing_run_file(output))
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    raise HarnessError(f"--output {output} holds files no harness training wrote ({shown}) and no record of one "
                       f"({RUN_FILE} or {RECORD_FILE}); choose a new or empty folder")


def run_settings(settings: TrainSettings) -> dict[str, Any]:
    """The settings of a stage as ``RUN_FILE`` records them (JSON values, paths made absolute)."""
    import json

    from harness_builtins.training.settings import settings_record

    record = settings_record(settings)
    for key in ("data", "pretrain_data"):
        record[key] = [{**item, "path": os.path.abspath(item["path"]) if os.path.exists(item["path"]) else item["path"]}
                       for item in record[key]]
    record["output"] = os.path.abspath(record["output"])
    return json.loads(json.dumps(record, default=str))


def check_resumed_settings(stage: Stage) -> None:
    """A stage resumed with ``--resume`` must train what it started training: every setting but
    :data:`RESUMABLE` equal to the ones its ``RUN_FILE`` recorded. Without that record the
    settings cannot be checked: refused, naming it."""
    import json

    path = stage.output / RUN_FILE
    if not path.is_file():
        raise HarnessError(_missing_run_file(stage.output))
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(before, dict):
            raise ValueError("not a JSON object")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HarnessError(f"{path}: cannot read the settings of the run to resume ({exc}); "
                           "remove the folder to start over") from None
    now = run_settings(stage.settings)
    if before.get("pooling") == "cls" and now.get("pooling") is None:
        # runs before --pooling defaulted to the model's own wrote "cls" when it was not given; they
        # built what None builds (CLS for a transformers model, a sentence-transformers model's own)
        before["pooling"] = None
    changed = [key for key in sorted(set(now) | set(before)) if key not in RESUMABLE and now.get(key) != before.get(key)]
    if changed:
        shown = "; ".join(f"{key}: {json.dumps(before.get(key))} -> {json.dumps(now.get(key))}" for key in changed[:4])
        raise HarnessError(f"--resume of {stage.output} with other settings than it started with ({shown}); "
                           "resume with the same settings, or train into another --output")


def _check_output(stage: Stage) -> None:
    """An unfinished stage's output may hold checkpoints only when the run resumes, with the
    settings it started with."""
    checkpoints = stage.output / CHECKPOINTS_DIR
    if checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*")):
        if not stage.settings.resume:
            raise HarnessError(f"{stage.output} holds checkpoints of an unfinished run: add --resume to continue it, "
                               "or choose another --output")
        check_resumed_settings(stage)


def label_dir(label: str) -> str:
    """A folder name for a label: itself when it is a plain name, else a cleaned name and a digest."""
    import hashlib
    import re

    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", label):
        return label
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:40].strip("._") + "-" + hashlib.sha256(label.encode()).hexdigest()[:8]


def per_device_batch(settings: TrainSettings) -> TrainSettings:
    """``settings`` with the batch per device of a ``--global-batch-size``: global / (processes x
    accumulation), which must divide."""
    if settings.global_batch_size is None:
        return settings
    from harness_builtins.training.distributed import group

    world = max(group()[1], launched_world())
    share = world * settings.gradient_accumulation
    if settings.global_batch_size % share:
        raise HarnessError(f"--global-batch-size {settings.global_batch_size} does not divide over {world} process(es) x "
                           f"{settings.gradient_accumulation} accumulated step(s); give a multiple of {share} or --batch-size")
    return dataclasses.replace(settings, batch_size=settings.global_batch_size // share)


def preflight(settings: TrainSettings) -> None:
    """What can be checked in seconds, before torch is imported and before anything is read,
    mined or loaded: the output folder, the recipe's options, every ``--data`` entry (and the
    suite searched), the initial model and its pooling. :func:`make_plan` runs it again."""
    check_output_folder(Path(settings.output))
    check_recipe(settings)
    from harness_builtins.training.data import check_data

    check_data(settings)
    if settings.pretrained_from is None:  # a later stage starts from the first stage's model, pooled as asked
        from harness_builtins.training.model import check_model, check_pooling

        check_model(settings.model)
        check_pooling(settings.model, settings.pooling)


def make_plan(settings: TrainSettings) -> Plan:
    """Check ``settings`` and expand its stages (see the module notes)."""
    settings.check()
    settings = per_device_batch(settings)
    refuse_data_parallel()
    preflight(settings)
    output = Path(settings.output)
    if is_finished(output):
        raise HarnessError(f"{output} already holds a trained checkpoint (finished); choose another --output")
    recipe = registry.registry("variants").get(settings.variant).recipe
    if settings.gradient_accumulation > 1 and recipe.retrieval is None and rank() == 0:
        from harness.errors import warn

        warn(f"--gradient-accumulation {settings.gradient_accumulation}: each question's in-batch negatives are the "
             f"passages of its own step ({settings.batch_size} per process); accumulation adds examples per update, not negatives")
    stages: list[Stage] = []
    labels = records = None
    if recipe.pretrain is not None and settings.pretrained_from is None:
        first = output / PRETRAIN_DIR
        stages.append(Stage("pretrain", dataclasses.replace(
            settings, variant=recipe.pretrain, data=list(settings.pretrain_data), pretrain_data=[], output=first,
            epochs=settings.pretrain_epochs or settings.epochs, max_steps=settings.pretrain_max_steps or settings.max_steps,
        )))
        check_recipe(stages[-1].settings)
        stages.append(Stage("main", dataclasses.replace(settings, pretrained_from=str(first))))
    elif recipe.split_by_label and settings.only_label is None:
        from harness_builtins.training.data import data_labels

        found, records = data_labels(settings, in_loop=recipe.retrieval is not None)
        if not found:
            raise HarnessError(f"variant {settings.variant!r} trains one question encoder per label, and the training data has "
                               "none: use a suite of several parts (e.g. demo-train) or files with 'label' fields")
        labels = {label: f"{LABELS_DIR}/{label_dir(label)}" for label in found}
        if len(set(labels.values())) != len(labels):
            raise HarnessError("two labels map to one folder name; rename them")
        stages.extend(Stage("label", dataclasses.replace(settings, output=output / folder, only_label=label))
                      for label, folder in labels.items())
    else:
        stages.append(Stage("main", settings))
    for stage in stages:
        if not is_finished(stage.output):
            _check_output(stage)
    return Plan(settings=settings, stages=tuple(stages), labels=labels, data=records)

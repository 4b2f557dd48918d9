"""``train(settings)``: run a variant and write a checkpoint directory.

The output directory::

    OUT/model/                  the trained encoders, a sentence-transformers directory
                                (``SentenceTransformer("OUT/model")``; ``harness run --retriever
                                trained -o path=OUT``)
    OUT/loss.safetensors        the loss's own parameters, when it has some (a scoring head)
    OUT/harness_training.json   the record: variant, recipe, settings, initial model, data
                                fingerprints, seed, versions, steps, timings
    OUT/train_log.jsonl         one line per logging step: step, epoch, loss, each loss part,
                                learning rate, examples/s
    OUT/checkpoints/            the trainer's checkpoints (``--resume`` continues from the last)
    OUT/mined.json              for variants with a miner: the training data with the mined
                                hard negatives, in DPR's format

``OUT/model`` and the record are written only when training finishes (a temporary folder renamed
into place); an interrupted run leaves its checkpoints, and ``--resume`` goes on from the last one.
"""

from __future__ import annotations

import json
import os
import platform
import random
import time
from pathlib import Path
from typing import Any

from harness import __version__, registry
from harness.errors import HarnessError
from harness.util.atomic import atomic_dir, write_bytes_atomic, write_text_atomic

from harness_builtins.training.engine import (
    QUESTION,
    AugmentingColumns,
    TrainSettings,
    columns,
    file_fingerprint,
    mixture,
    recipe_record,
    settings_record,
)
from harness_builtins.training.model import EmbeddingLoss, build_model, freeze, freeze_unused, router_mapping

RECORD = "harness_training.json"
LOG = "train_log.jsonl"
MODEL_DIR = "model"
CHECKPOINTS = "checkpoints"
LOSS_STATE = "loss.safetensors"
MINED = "mined.json"
RECORD_SCHEMA = "harness-training/1"


def _with_model_defaults(kind: str, part, overrides: dict, model) -> dict:
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


def _part(kind: str, part, overrides: dict | None = None):
    name, options = part
    merged = {**dict(options), **(overrides or {})}
    return registry.load(kind, name, merged).value


class _BatchSampler:
    """The variant's sampler as the trainer's ``batch_sampler``: an epoch's batches from
    ``random.Random(f"{seed}:{epoch}")``, so any process and any resumed run sees the same ones."""

    def __init__(self, sampler, examples, batch_size: int, seed: int):
        self.sampler, self.examples, self.batch_size, self.seed = sampler, examples, batch_size, seed
        self.epoch = 0
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        batches = self.sampler(self.examples, self.batch_size, random.Random(f"{self.seed}:{self.epoch}"))
        for batch in batches:
            if not batch or any(not (0 <= i < len(self.examples)) for i in batch):
                raise HarnessError("the batch sampler returned an empty batch or an index out of range")
        self._cache = (self.epoch, batches)
        return batches

    def __iter__(self):
        return iter(self._batches())

    def __len__(self) -> int:
        return len(self._batches())


def _versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"harness": __version__, "python": platform.python_version()}
    for package in ("torch", "transformers", "sentence-transformers", "accelerate"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


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
    values = {**defaults, **given, **fixed}
    data = [(Path(p), w) for p, w in values.pop("data")]
    values["pretrain_data"] = [(Path(p), w) for p, w in values.pop("pretrain_data", ())]
    return TrainSettings(variant=variant, data=data, **values)


def _training_file(name: Path, settings: TrainSettings) -> Path:
    """A training file: ``name`` itself; for a training set's name (``harness list
    training-data``), its file, fetched if need be; for a suite name, its questions turned into
    DPR training data by BM25 distant supervision (the best-ranked answer-bearing passage is the
    positive, the best-ranked passages without an answer the hard negatives), made once and kept
    in the cache folder."""
    if Path(name).is_file():
        return Path(name)
    sets = registry.registry("training-data")
    if str(name) in sets:
        return Path(sets.get(str(name)).load())
    suite = str(name)
    if suite not in registry.suites():
        raise HarnessError(
            f"--data {name}: no such file, and no training set or suite of that name "
            "(harness list training-data, harness list suites)"
        )
    from harness.data.training import suite_training_examples, write_training_examples
    from harness.evaluate import make_context
    from harness.util.cache import cache_dir

    negatives = max(1, settings.hard_negatives or 1)
    target = cache_dir() / "training-data" / f"{suite}--bm25--{negatives}.json"
    if not target.is_file():
        loaded_suite = registry.load("suites", suite, {}).value
        retriever = registry.load("retrievers", "bm25", {}).value
        context = make_context(loaded_suite, show_progress=settings.progress)
        examples, _ = suite_training_examples(loaded_suite, retriever, name="bm25", context=context, negatives=negatives)
        write_training_examples(target, examples)
    return target


def _suite_questions(suite) -> list:
    """A loaded suite's questions as in-loop training examples: question, answers and (for a suite
    of several parts) the part's name as label; no passages (the loop retrieves them)."""
    from harness.api import TrainingExample

    several = len(suite.parts) > 1
    return [TrainingExample(question=q.text, answers=tuple(q.answers), positives=(), label=part.name if several else None)
            for part in suite.parts for q in part.questions]


def _read_data(settings: TrainSettings, *, in_loop: bool = False) -> tuple[list, list[dict[str, Any]]]:
    """Each ``--data`` entry's examples and its record. With ``in_loop`` a suite name gives its
    questions as they are (:func:`_suite_questions`), not distant supervision."""
    from harness.data.training import read_training_examples

    datasets, records = [], []
    for name, weight in settings.data:
        if in_loop and not Path(name).is_file() and str(name) not in registry.registry("training-data") and str(name) in registry.suites():
            suite = registry.load("suites", str(name), {}).value
            examples = [e for e in _suite_questions(suite) if settings.only_label is None or e.label == settings.only_label]
            datasets.append(examples)
            records.append({"data": str(name), "path": None, "weight": weight, "examples": len(examples),
                            "fingerprint": suite.questions_fingerprint,
                            "labels": sorted({e.label for e in examples if e.label is not None})})
            continue
        path = _training_file(name, settings)
        examples = [e for e in read_training_examples(path) if settings.only_label is None or e.label == settings.only_label]
        if not examples:
            raise HarnessError(f"--data {path}: no training examples" + (f" labelled {settings.only_label!r}" if settings.only_label else ""))
        datasets.append(examples)
        # The categories trained on (a suite's parts, a file's "label"s): the leaderboard splits
        # a multi-part suite into the parts seen in training and the rest.
        labels = sorted({e.label for e in examples if e.label is not None})
        records.append({"data": str(name), "path": str(path), "weight": weight, "examples": len(examples),
                        "fingerprint": file_fingerprint(Path(path)), "labels": labels})
    return datasets, records


def _mine(recipe, settings: TrainSettings, datasets: list, hard_negatives: int) -> tuple[list, dict[str, Any]]:
    """The variant's miner replaces every example's hard negatives, retrieving from the corpus of
    ``settings.corpus`` (or of the first ``--data`` that is a suite name)."""
    from harness.evaluate import make_context

    corpus_suite = _corpus_suite(settings, "mines hard negatives")
    name, options = recipe.miner
    options = {**dict(options), "negatives": hard_negatives, **settings.miner_options}
    miner = registry.load("miners", name, options).value
    suite = registry.load("suites", corpus_suite, {}).value
    context = make_context(suite, show_progress=settings.progress)
    mined = [miner(examples, suite.corpus, context) for examples in datasets]
    parameters = miner.parameters() if hasattr(miner, "parameters") else options
    return mined, {"name": name, "options": _jsonable_options(parameters), "corpus": corpus_suite}


def _corpus_suite(settings: TrainSettings, why: str) -> str:
    """The suite whose corpus a miner or the in-loop index searches: ``--corpus``, else the first
    ``--data`` that is a suite name."""
    found = settings.corpus or next((str(n) for n, _ in settings.data if not Path(n).is_file() and str(n) in registry.suites()), None)
    if found is None:
        raise HarnessError(f"variant {settings.variant!r} {why}: name the suite whose corpus to search with --corpus SUITE")
    registry.suites().get(found)
    return found


def _jsonable_options(options: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(options, default=str))


def train(settings: TrainSettings) -> Path:
    """Train ``settings.variant`` and write ``settings.output`` (see the module docstring)."""
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from transformers import TrainerCallback

    started = time.monotonic()
    settings.check()
    if not settings.progress:
        from huggingface_hub.utils import disable_progress_bars
        from transformers.utils import logging as hf_logging

        import datasets

        disable_progress_bars()
        hf_logging.disable_progress_bar()
        datasets.disable_progress_bars()
    variant = registry.registry("variants").get(settings.variant)
    recipe = variant.recipe
    output = Path(settings.output)
    if (output / RECORD).exists():
        raise HarnessError(f"{output} already holds a trained checkpoint (finished); choose another --output")
    checkpoints = output / CHECKPOINTS
    if checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*")) and not settings.resume:
        raise HarnessError(f"{output} holds checkpoints of an unfinished run: add --resume to continue it, or choose another --output")

    if recipe.split_by_label and settings.only_label is None:
        return _train_per_label(settings, variant, started)
    if recipe.pretrain is not None and settings.pretrained_from is None:
        return _train_two_stages(settings, variant)
    if settings.pretrain_data and recipe.pretrain is None:
        raise HarnessError(f"--pretrain-data applies to two-stage variants (synthetic-pretrain); {settings.variant!r} is one stage")

    question_aug = [_part("augmentations", p) for p in recipe.question_augmentations]
    passage_aug = [_part("augmentations", p) for p in recipe.passage_augmentations]
    hard_negatives = recipe.hard_negatives if settings.hard_negatives is None else settings.hard_negatives

    loss_spec = registry.registry("losses").get(recipe.loss[0])
    in_loop = recipe.retrieval
    if in_loop is not None:
        import dataclasses

        refresh = in_loop.refresh_every if settings.refresh_every is None else (settings.refresh_every or None)
        in_loop = dataclasses.replace(in_loop, k=settings.retrieve_k or in_loop.k, refresh_every=refresh)
    elif settings.retrieve_k is not None or settings.refresh_every is not None:
        raise HarnessError(f"--retrieve-k and --refresh-every apply to in-loop variants (qsft, art); {settings.variant!r} is not one")
    if (in_loop is not None) != loss_spec.in_loop:
        raise HarnessError(
            f"variant {settings.variant!r}: loss {loss_spec.name!r} {'searches an in-loop index' if loss_spec.in_loop else 'takes in-batch passages'}, "
            f"but the recipe {'has no' if in_loop is None else 'has an'} in-loop retrieval"
        )
    corpus_suite = _corpus_suite(settings, "retrieves inside the training loop") if in_loop else None
    datasets, data_records = _read_data(settings, in_loop=in_loop is not None)
    miner_record = None
    if recipe.miner is not None:
        from harness.data.training import write_training_examples

        datasets, miner_record = _mine(recipe, settings, datasets, hard_negatives)
        output.mkdir(parents=True, exist_ok=True)
        write_training_examples(output / MINED, (e for group in datasets for e in group))
    examples = [e for group in mixture(datasets, [w for _, w in settings.data], settings.seed, settings.mixture) for e in group]
    if in_loop:
        usable = [e for e in examples if e.question.strip()]
        if not usable:
            raise HarnessError("no training question to retrieve for")
    else:
        usable = [e for e in examples if e.positives and len(e.hard_negatives) >= hard_negatives]
        if not usable:
            raise HarnessError(f"no training example has a positive and {hard_negatives} hard negative(s)")

    torch.manual_seed(settings.seed)
    model = build_model(
        str(Path(settings.pretrained_from) / MODEL_DIR) if settings.pretrained_from else settings.model, shared=recipe.shared_encoder, pooling=settings.pooling,
        max_question_length=settings.max_question_length, max_passage_length=settings.max_passage_length,
    )
    sep = getattr(model.tokenizer, "sep_token", None) or "[SEP]"
    if in_loop:
        data = {QUESTION: [e.question for e in usable], "index": list(range(len(usable)))}
    else:
        data = columns(examples, hard_negatives=hard_negatives, format=settings.format, sep=sep)
    kept = len(data[QUESTION])
    freeze_unused(model)
    if recipe.frozen:
        freeze(model, recipe.frozen)
    loss_module = _part("losses", recipe.loss, _with_model_defaults("losses", recipe.loss, settings.loss_options, model))
    sampler = _part("samplers", recipe.sampler, _with_model_defaults("samplers", recipe.sampler, settings.sampler_options, model))

    dataset = Dataset.from_dict(data)
    augmenter = AugmentingColumns(question_aug, passage_aug, settings.seed, labels=in_loop is not None)
    dataset.set_transform(augmenter)
    text_columns = [c for c in data if c != "index"]

    index = None
    if in_loop:
        from harness.util.cache import cache_dir

        from harness_builtins.training.inloop import InLoopIndex, in_loop_loss

        searched = registry.load("suites", corpus_suite, {}).value
        index = InLoopIndex(searched.corpus, root=cache_dir() / "dense", format=settings.format, sep=sep,
                            shard_size=settings.index_shard_size, progress=settings.progress)
        loss = in_loop_loss(model, loss_module, index, usable, k=in_loop.k, format=settings.format, sep=sep, match=searched.match)
    else:
        loss = EmbeddingLoss.create(model, loss_module)
    log_path = output / LOG
    output.mkdir(parents=True, exist_ok=True)

    class _Log(TrainerCallback):
        def __init__(self) -> None:
            self.last = time.monotonic()
            self.last_step = 0

        def on_epoch_begin(self, args, state, control, **kwargs):
            augmenter.epoch = int(round(state.epoch or 0))

        def on_train_begin(self, args, state, control, **kwargs):
            if index is not None:  # after a resumed run's weights are loaded
                if not _restore_in_loop(resume_from, index, loss_module):
                    index.build(model, state.global_step)

        def on_save(self, args, state, control, **kwargs):
            if index is not None:
                _save_in_loop(checkpoints / f"checkpoint-{state.global_step}", index, loss_module)

        def on_step_end(self, args, state, control, **kwargs):
            every = in_loop.refresh_every if in_loop else None
            if every and state.global_step % every == 0 and state.global_step < state.max_steps:
                index.build(model, state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            now = time.monotonic()
            steps = state.global_step - self.last_step
            record = {"step": state.global_step, "epoch": state.epoch, **logs, **{f"loss/{k}": v for k, v in loss.take_parts().items()}}
            if steps > 0 and now > self.last:
                world = max(1, args.world_size)
                record["examples_per_second"] = round(steps * args.per_device_train_batch_size * args.gradient_accumulation_steps * world / (now - self.last), 3)
            self.last, self.last_step = now, state.global_step
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    cuda = torch.cuda.is_available()
    args = SentenceTransformerTrainingArguments(
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
        # each column is a separate forward of the model (and of one Router side): with unused
        # parameters searched for after every forward, the other side's would be marked twice
        ddp_find_unused_parameters=False,
        save_strategy="steps",
        save_steps=settings.save_steps,
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        report_to=["tensorboard"] if _has_tensorboard() else "none",
        disable_tqdm=not settings.progress,
        router_mapping=router_mapping(text_columns, recipe.shared_encoder),
        prompts={QUESTION: marker} if (marker := settings.question_marker or recipe.question_marker) else None,
        dataloader_drop_last=False,
        remove_unused_columns=False,
    )
    class _Trainer(SentenceTransformerTrainer):
        def get_batch_sampler(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
            return _BatchSampler(sampler, usable, batch_size, settings.seed)

    trainer = _Trainer(
        model=model, args=args, train_dataset=dataset, loss=loss, callbacks=[_Log()],
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # the log goes to train_log.jsonl, not stdout
    resume_from = last_complete_checkpoint(checkpoints) if settings.resume else None
    if resume_from is not None:
        _truncate_log(log_path, int(resume_from.name.split("-")[1]))
    elif log_path.exists() and trainer.is_world_process_zero():
        log_path.unlink()
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    in_loop_record = _in_loop_record(in_loop, corpus_suite, index, loss_module)  # every process: a collective
    if index is not None:
        index.discard()
    if not trainer.is_world_process_zero():
        return output

    with atomic_dir(output / MODEL_DIR, replace=True) as tmp:
        model.save(str(tmp))
    state = {k: v for k, v in loss_module.state_dict().items()}
    if state:
        from safetensors.torch import save

        write_bytes_atomic(output / LOSS_STATE, save({k: v.contiguous() for k, v in state.items()}))
    record = {
        "schema": RECORD_SCHEMA,
        "variant": settings.variant,
        "reference": variant.reference,
        "recipe": recipe_record(recipe),
        "settings": settings_record(settings),
        "initial_model": settings.model,
        "data": data_records,
        "examples": {"read": sum(len(d) for d in datasets), "after_mixture": len(examples), "trained_on": kept,
                     "left_out": len(examples) - kept},
        "hard_negatives": hard_negatives,
        "miner": miner_record,
        "in_loop": in_loop_record,
        "pretraining": _pretraining_record(settings.pretrained_from),
        "format": settings.format,
        "seed": settings.seed,
        "steps": trainer.state.global_step,
        "train_loss": getattr(result, "training_loss", None),
        "loss_state": LOSS_STATE if state else None,
        "seconds": round(time.monotonic() - started, 3),
        "versions": _versions(),
    }
    write_text_atomic(output / RECORD, json.dumps(record, indent=1, default=str) + "\n")
    return output


STAGE_DIR = "stages/pretrain"


def _train_two_stages(settings: TrainSettings, variant) -> Path:
    """A two-stage recipe: the ``pretrain`` variant on ``--pretrain-data`` into
    ``OUT/stages/pretrain`` (skipped when finished, resumed with ``--resume``), then this recipe on
    ``--data`` starting from its model, into ``OUT``."""
    import dataclasses

    if not settings.pretrain_data:
        raise HarnessError(f"variant {settings.variant!r} pre-trains first: give --pretrain-data FILE "
                           "(e.g. questions made by harness data generate-questions)")
    stage = Path(settings.output) / STAGE_DIR
    if not (stage / RECORD).exists():
        train(dataclasses.replace(
            settings, variant=variant.recipe.pretrain, data=list(settings.pretrain_data), pretrain_data=[], output=stage,
            epochs=settings.pretrain_epochs or settings.epochs, max_steps=settings.pretrain_max_steps or settings.max_steps,
        ))
        _barrier()  # rank 0 writes the model the second stage starts from
    return train(dataclasses.replace(settings, pretrained_from=str(stage)))


def _pretraining_record(stage: str | None) -> dict[str, Any] | None:
    """The pre-training stage a two-stage run started from: its folder, variant, data and steps."""
    if stage is None:
        return None
    record = json.loads((Path(stage) / RECORD).read_text(encoding="utf-8"))
    return {"output": stage, "variant": record["variant"], "data": record["data"], "steps": record.get("steps"),
            "train_loss": record.get("train_loss"), "seconds": record.get("seconds")}


def _label_dir(label: str) -> str:
    """A folder name for a label: itself when it is a plain name, else a cleaned name and a digest."""
    import hashlib
    import re

    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", label):
        return label
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:40].strip("._") + "-" + hashlib.sha256(label.encode()).hexdigest()[:8]


def _train_per_label(settings: TrainSettings, variant, started: float) -> Path:
    """A split-by-label recipe: the recipe once per label of the data, into ``OUT/labels/LABEL``
    (a finished label is skipped; an interrupted one resumes with ``--resume``), then ``OUT/model``
    (the starting model: the shared passage encoder, and the question encoder of labels without
    their own), ``OUT/specialised.json`` (label -> folder) and the record."""
    import dataclasses

    from harness_builtins.dense.specialised import MAP_FILE, SCHEMA

    recipe = variant.recipe
    if recipe.frozen != "passage" or recipe.shared_encoder:
        raise HarnessError(f"variant {settings.variant!r} splits by label: its recipe must freeze the passage side of separate encoders")
    datasets, data_records = _read_data(settings, in_loop=recipe.retrieval is not None)
    labels = sorted({e.label for group in datasets for e in group if e.label is not None})
    if not labels:
        raise HarnessError(f"variant {settings.variant!r} trains one question encoder per label, and the training data has "
                           "none: use a suite of several parts (e.g. demo-train) or files with 'label' fields")
    output = Path(settings.output)
    folders = {label: f"labels/{_label_dir(label)}" for label in labels}
    if len(set(folders.values())) != len(folders):
        raise HarnessError("two labels map to one folder name; rename them")
    runs = {}
    for label in labels:
        sub = output / folders[label]
        if not (sub / RECORD).exists():
            train(dataclasses.replace(settings, output=sub, only_label=label))
            _barrier()  # rank 0 writes the record the others read
        runs[label] = json.loads((sub / RECORD).read_text(encoding="utf-8"))
    if _rank() != 0:
        _barrier()
        return output
    import torch

    torch.manual_seed(settings.seed)  # as each label's run: any newly initialised weights are theirs
    model = build_model(settings.model, shared=False, pooling=settings.pooling,
                        max_question_length=settings.max_question_length, max_passage_length=settings.max_passage_length)
    with atomic_dir(output / MODEL_DIR, replace=True) as tmp:
        model.save(str(tmp))
    write_text_atomic(output / MAP_FILE, json.dumps({"schema": SCHEMA, "labels": folders}, indent=1) + "\n")
    record = {
        "schema": RECORD_SCHEMA, "variant": settings.variant, "reference": variant.reference,
        "recipe": recipe_record(recipe), "settings": settings_record(settings), "initial_model": settings.model,
        "data": data_records, "format": settings.format, "seed": settings.seed,
        "labels": {label: {"folder": folders[label], "steps": r.get("steps"), "examples": r.get("examples"),
                           "in_loop": r.get("in_loop"), "train_loss": r.get("train_loss")} for label, r in runs.items()},
        "steps": sum(int(r.get("steps") or 0) for r in runs.values()),
        "seconds": round(time.monotonic() - started, 3), "versions": _versions(),
    }
    write_text_atomic(output / RECORD, json.dumps(record, indent=1, default=str) + "\n")
    _barrier()
    return output


def _in_loop_state_file(checkpoint: Path) -> Path:
    return checkpoint / f"in_loop_state-rank{_rank()}.json"


def _save_in_loop(checkpoint: Path, index, loss_module) -> None:
    """Beside a checkpoint, this process's in-loop state: the index it searches (and the builds so
    far) and the loss's counts, so that a resumed run goes on with the same index, not one
    re-embedded by the checkpoint's weights, and counts every step once."""
    if checkpoint.is_dir():
        counts = {"skipped": int(loss_module.skipped), "seen": int(loss_module.seen)} if hasattr(loss_module, "skipped") else None
        write_text_atomic(_in_loop_state_file(checkpoint), json.dumps({"index": index.state(), "counts": counts}) + "\n")


def _restore_in_loop(checkpoint: Path | None, index, loss_module) -> bool:
    """Whether every process took up its checkpoint's in-loop state (:func:`_save_in_loop`); when
    any cannot (no state, embeddings deleted), all of them embed the corpus anew."""
    state = None
    if checkpoint is not None and _in_loop_state_file(checkpoint).is_file():
        try:
            state = json.loads(_in_loop_state_file(checkpoint).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = None
    ok = isinstance(state, dict) and isinstance(state.get("index"), dict) and index.restore(state["index"])
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        flags = [None] * dist.get_world_size()
        dist.all_gather_object(flags, bool(ok))
        ok = all(flags)
    if ok and isinstance(state.get("counts"), dict) and hasattr(loss_module, "skipped"):
        loss_module.skipped, loss_module.seen = int(state["counts"]["skipped"]), int(state["counts"]["seen"])
    return bool(ok)


def _rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def _barrier() -> None:
    """Wait for every process of the group (none without one)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def _in_loop_record(in_loop, corpus_suite: str | None, index, loss_module) -> dict[str, Any] | None:
    """What the in-loop retrieval did: its settings, each (re-)embedding of the corpus (step,
    cache, seconds, passages/s) and, for a loss that skips questions, how many it skipped
    (summed over processes)."""
    if in_loop is None:
        return None
    record: dict[str, Any] = {"k": in_loop.k, "refresh_every": in_loop.refresh_every, "corpus": corpus_suite,
                              "passages": len(index), "builds": index.builds}
    if hasattr(loss_module, "skipped"):
        counts = [int(loss_module.skipped), int(loss_module.seen)]
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, counts)
            counts = [sum(c[0] for c in gathered), sum(c[1] for c in gathered)]
        record["questions_skipped"], record["questions_seen"] = counts
    return record


#: Files the trainer writes into every checkpoint (the model's own files besides).
_CHECKPOINT_FILES = ("trainer_state.json", "optimizer.pt", "scheduler.pt")


def last_complete_checkpoint(checkpoints: Path) -> Path | None:
    """The newest ``checkpoint-N`` holding the trainer state, optimizer and scheduler; a
    checkpoint cut short by a kill is skipped (with a warning), so a resume never reads it."""
    from harness.errors import warn

    found = []
    for path in checkpoints.glob("checkpoint-*") if checkpoints.is_dir() else []:
        step = path.name.removeprefix("checkpoint-")
        if step.isdigit() and path.is_dir():
            found.append((int(step), path))
    for step, path in sorted(found, reverse=True):
        if all((path / name).is_file() for name in _CHECKPOINT_FILES):
            try:
                state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                state = None
            if isinstance(state, dict) and state.get("global_step") == step:
                return path
        warn(f"{path} is incomplete (cut short?); resuming from an earlier checkpoint")
    return None


def _truncate_log(log_path: Path, step: int) -> None:
    """Keep the log lines up to ``step``: a resumed run logs the steps after it again."""
    if not log_path.exists():
        return
    kept = []
    for line in log_path.read_text(encoding="utf-8").splitlines():
        try:
            if json.loads(line).get("step", 0) <= step:
                kept.append(line)
        except ValueError:
            break  # a line cut short by the kill, and anything after it
    write_text_atomic(log_path, "".join(k + "\n" for k in kept))


def _has_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True

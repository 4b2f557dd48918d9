"""A stage's training data: ``--data`` entries read (files, named training sets, suites), hard
negatives mined, datasets mixed, examples kept, and the dataset the trainer reads: its columns
(question, positive, hard negatives; passages as the encoder reads them, :func:`passage_text`)
with the variant's augmentations applied as examples are read (:class:`AugmentingColumns`).

Under ``torchrun`` rank 0 prepares first (downloads, BM25 distant supervision, mining: anything
written to shared files) while the other processes wait; they then read what it wrote. The mined
examples are written once, by rank 0, to ``OUT/mined.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import registry
from harness.api import TrainingExample
from harness.errors import HarnessError
from harness.results.checkpoint import MINED_FILE

from harness_builtins.training.distributed import rank_zero_first
from harness_builtins.training.settings import FORMATS, TrainSettings

#: Dataset column names; the loss reads them in this order.
QUESTION, POSITIVE = "question", "positive"


def negative_column(i: int) -> str:
    return f"negative_{i + 1}"


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


@dataclass
class Prepared:
    """What a stage trains on: ``examples`` (after the mixture), ``usable`` (those the recipe can
    train on), each ``--data`` entry's record, the miner's record, the hard negatives per question,
    the in-loop retrieval (``None`` for in-batch recipes) and the suite whose corpus it searches."""

    examples: list
    usable: list
    records: list[dict[str, Any]]
    read: int
    hard_negatives: int
    miner: dict[str, Any] | None = None
    in_loop: Any = None
    corpus_suite: str | None = None


def training_file(name: Path, settings: TrainSettings) -> Path:
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


def suite_questions(suite) -> list:
    """A loaded suite's questions as in-loop training examples: question, answers and (for a suite
    of several parts) the part's name as label; no passages (the loop retrieves them)."""
    several = len(suite.parts) > 1
    return [TrainingExample(question=q.text, answers=tuple(q.answers), positives=(), label=part.name if several else None)
            for part in suite.parts for q in part.questions]


def _is_suite_name(name: Path) -> bool:
    return not Path(name).is_file() and str(name) not in registry.registry("training-data") and str(name) in registry.suites()


def read_data(settings: TrainSettings, *, in_loop: bool = False) -> tuple[list, list[dict[str, Any]]]:
    """Each ``--data`` entry's examples and its record. With ``in_loop`` a suite name gives its
    questions as they are (:func:`suite_questions`), not distant supervision."""
    from harness.data.training import read_training_examples

    datasets: list = [None] * len(settings.data)
    records: list = [None] * len(settings.data)
    # files and training sets first: a problem in one is found before a suite's BM25 mining
    order = sorted(range(len(settings.data)), key=lambda i: _is_suite_name(settings.data[i][0]))
    for i in order:
        name, weight = settings.data[i]
        if in_loop and _is_suite_name(name):
            suite = registry.load("suites", str(name), {}).value
            examples = [e for e in suite_questions(suite) if settings.only_label is None or e.label == settings.only_label]
            datasets[i] = examples
            records[i] = {"data": str(name), "path": None, "weight": weight, "examples": len(examples),
                          "fingerprint": suite.questions_fingerprint,
                          "labels": sorted({e.label for e in examples if e.label is not None})}
            continue
        path = training_file(name, settings)
        examples = [e for e in read_training_examples(path) if settings.only_label is None or e.label == settings.only_label]
        if not examples:
            raise HarnessError(f"--data {path}: no training examples" + (f" labelled {settings.only_label!r}" if settings.only_label else ""))
        datasets[i] = examples
        # The categories trained on (a suite's parts, a file's "label"s): the leaderboard splits
        # a multi-part suite into the parts seen in training and the rest.
        labels = sorted({e.label for e in examples if e.label is not None})
        records[i] = {"data": str(name), "path": str(path), "weight": weight, "examples": len(examples),
                      "fingerprint": file_fingerprint(Path(path)), "labels": labels}
    return datasets, records


def check_data(settings: TrainSettings) -> None:
    """Every ``--data`` and ``--pretrain-data`` entry names a readable file, a training set or a
    suite, and the suite a miner or in-loop index searches exists: checked before anything is
    read, mined or loaded (one line naming the entry)."""
    import os

    for flag, entries in (("--data", settings.data), ("--pretrain-data", settings.pretrain_data)):
        for name, _ in entries:
            path = Path(name)
            if path.is_file():
                if not os.access(path, os.R_OK):
                    raise HarnessError(f"{flag} {name}: cannot read it (permission denied)")
                continue
            if path.is_dir():
                raise HarnessError(f"{flag} {name} is a folder; give a training file (a DPR training JSON, .json.gz or "
                                   ".jsonl), a training set's name or a suite's name")
            if str(name) in registry.registry("training-data") or str(name) in registry.suites():
                continue
            raise HarnessError(f"{flag} {name}: no such file, and no training set or suite of that name "
                               "(harness list training-data, harness list suites)")
    recipe = registry.registry("variants").get(settings.variant).recipe
    if recipe.miner is not None:
        corpus_suite(settings, "mines hard negatives")
    elif recipe.retrieval is not None:
        corpus_suite(settings, "retrieves inside the training loop")


def data_labels(settings: TrainSettings, *, in_loop: bool) -> tuple[list[str], list[dict[str, Any]]]:
    """The labels of a run's training data, sorted, and each ``--data`` entry's record (rank 0
    reads first)."""
    with rank_zero_first():
        datasets, records = read_data(settings, in_loop=in_loop)
    return sorted({e.label for group in datasets for e in group if e.label is not None}), records


def corpus_suite(settings: TrainSettings, why: str) -> str:
    """The suite whose corpus a miner or the in-loop index searches: ``--corpus``, else the first
    ``--data`` that is a suite name."""
    found = settings.corpus or next((str(n) for n, _ in settings.data if not Path(n).is_file() and str(n) in registry.suites()), None)
    if found is None:
        raise HarnessError(f"variant {settings.variant!r} {why}: name the suite whose corpus to search with --corpus SUITE")
    registry.suites().get(found)
    return found


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(options, default=str))


def mine(recipe, settings: TrainSettings, datasets: list, hard_negatives: int) -> tuple[list, dict[str, Any]]:
    """The variant's miner replaces every example's hard negatives, retrieving from the corpus of
    ``settings.corpus`` (or of the first ``--data`` that is a suite name)."""
    from harness.evaluate import make_context

    suite_name = corpus_suite(settings, "mines hard negatives")
    name, options = recipe.miner
    options = {**dict(options), "negatives": hard_negatives, **settings.miner_options}
    miner = registry.load("miners", name, options).value
    suite = registry.load("suites", suite_name, {}).value
    context = make_context(suite, show_progress=settings.progress)
    mined = [miner(examples, suite.corpus, context) for examples in datasets]
    parameters = miner.parameters() if hasattr(miner, "parameters") else options
    return mined, {"name": name, "options": _jsonable(parameters), "corpus": suite_name}


def _mined_everywhere(recipe, settings: TrainSettings, datasets: list, hard_negatives: int, first: bool) -> tuple[list, dict[str, Any]]:
    """Rank 0 mines and writes ``OUT/mined.json`` while the others wait; then every process (rank
    0 too, under ``torchrun``) reads the file back and cuts it into the datasets by the sizes rank 0 sends, so all
    train on the same examples. A failure on rank 0 stops every process."""
    from harness.data.training import read_training_examples, write_training_examples

    from harness_builtins.training.distributed import broadcast

    output = Path(settings.output)
    message: Any = None
    if first:
        try:
            datasets, record = mine(recipe, settings, datasets, hard_negatives)
            output.mkdir(parents=True, exist_ok=True)
            write_training_examples(output / MINED_FILE, (e for group in datasets for e in group))
            message = ("ok", [len(g) for g in datasets], record)
        except BaseException as exc:
            broadcast(("failed", f"{type(exc).__name__}: {exc}"[:300], None))
            raise
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return datasets, record  # one process: the mined examples as they are
    status, sizes, record = broadcast(message)
    if status != "ok":
        raise HarnessError(f"rank 0 failed while mining hard negatives ({sizes}); this process stops too")
    examples = list(read_training_examples(output / MINED_FILE))
    if len(examples) != sum(sizes):
        raise HarnessError(f"{output / MINED_FILE}: {len(examples)} examples read back, {sum(sizes)} mined "
                           "(the miner returned examples the training format cannot hold, e.g. without a positive)")
    out, start = [], 0
    for size in sizes:
        out.append(examples[start : start + size])
        start += size
    return out, record


def prepare(settings: TrainSettings) -> Prepared:
    """The stage's examples (see :class:`Prepared`), rank 0 first under ``torchrun``."""
    recipe = registry.registry("variants").get(settings.variant).recipe
    hard_negatives = recipe.hard_negatives if settings.hard_negatives is None else settings.hard_negatives
    in_loop = recipe.retrieval
    if in_loop is not None:
        refresh = in_loop.refresh_every if settings.refresh_every is None else (settings.refresh_every or None)
        in_loop = dataclasses.replace(in_loop, k=settings.retrieve_k or in_loop.k, refresh_every=refresh)
    searched = corpus_suite(settings, "retrieves inside the training loop") if in_loop else None
    from harness_builtins.training.distributed import rank

    with rank_zero_first():
        datasets, records = read_data(settings, in_loop=in_loop is not None)
    miner_record = None
    if recipe.miner is not None:  # rank 0 mines while the others wait at the broadcast
        datasets, miner_record = _mined_everywhere(recipe, settings, datasets, hard_negatives, rank() == 0)
    read = sum(len(d) for d in datasets)
    examples = [e for group in mixture(datasets, [w for _, w in settings.data], settings.seed, settings.mixture) for e in group]
    if in_loop:
        usable = [e for e in examples if e.question.strip()]
        if not usable:
            raise HarnessError("no training question to retrieve for")
    else:
        usable = [e for e in examples if e.positives and len(e.hard_negatives) >= hard_negatives]
        if not usable:
            raise HarnessError(f"no training example has a positive and {hard_negatives} hard negative(s)")
    return Prepared(examples=examples, usable=usable, records=records, read=read, hard_negatives=hard_negatives,
                    miner=miner_record, in_loop=in_loop, corpus_suite=searched)

"""Training runs that take minutes: a killed run resumed, and two processes under torchrun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.training_models import weights

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

HARNESS = [sys.executable, "-m", "harness.cli.main"]


def _args(tiny: Path, data: Path, output: Path, *extra: str) -> list[str]:
    return [
        "train", "--variant", "dpr", "--data", str(data), "--model", str(tiny), "--output", str(output),
        "--batch-size", "4", "--max-question-length", "16", "--max-passage-length", "32", "--logging-steps", "1",
        "--no-progress", *extra,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


def _written(path: Path) -> bool:
    """Whether ``path`` exists and, for a JSON file the trainer writes in place, parses whole."""
    if not path.exists():
        return False
    if path.suffix != ".json":
        return True
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def _kill_when(process: subprocess.Popen, path: Path, timeout: float = 300) -> None:
    """SIGKILL ``process`` as soon as ``path`` is written (it must not end first)."""
    deadline = time.monotonic() + timeout
    while not _written(path):
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_one(tiny, data, tmp_path):  # noqa: F811
    whole = tmp_path / "whole"
    assert subprocess.run(HARNESS + _args(tiny, data, whole, "--max-steps", "12", "--save-steps", "2"), env=_env()).returncode == 0
    cut = tmp_path / "cut"
    process = subprocess.Popen(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2"), env=_env())
    _kill_when(process, cut / "checkpoints" / "checkpoint-4" / "trainer_state.json")
    assert not (cut / "harness_training.json").exists()
    # a finished checkpoint is never resumed over; an unfinished one is not started afresh
    again = subprocess.run(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2"), env=_env(), capture_output=True, text=True)
    assert again.returncode == 2 and "add --resume" in again.stderr
    other = subprocess.run(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2", "--resume", "--lr", "1e-4"),
                           env=_env(), capture_output=True, text=True)
    assert other.returncode == 2 and "other settings than it started with (learning_rate: 2e-05 -> 0.0001)" in other.stderr
    resumed = subprocess.run(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2", "--resume"), env=_env())
    assert resumed.returncode == 0
    a, b = weights(whole), weights(cut)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    steps = [line for line in (cut / "train_log.jsonl").read_text().splitlines() if '"loss":' in line]
    assert len(steps) == 12  # the steps logged twice around the kill are kept once
    # the recorded mean loss covers all 12 steps, not only the 8 after the resume
    whole_record, cut_record = (json.loads((d / "harness_training.json").read_text()) for d in (whole, cut))
    assert cut_record["train_loss_steps"] == 12
    assert cut_record["train_loss"] == pytest.approx(whole_record["train_loss"], rel=1e-6)


def test_two_processes_under_torchrun_train_like_one_with_the_global_batch(tiny, data, tmp_path):  # noqa: F811
    one = tmp_path / "one"
    assert subprocess.run(HARNESS + _args(tiny, data, one, "--max-steps", "2").__add__([]), env=_env()).returncode == 0
    # the per-device batch halves: 2 processes x 2 questions = the single process's 4
    two = tmp_path / "two"
    args = _args(tiny, data, two, "--max-steps", "2")
    args[args.index("--batch-size") + 1] = "2"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "harness.cli.main", *args]
    assert subprocess.run(command, env=_env()).returncode == 0
    # before the first update both see the same weights: the same loss and the same gradient
    # (its norm after DDP's averaging); Adam then moves every weight by about the learning rate
    # whatever the gradient's size, so float-level differences of near-zero gradients may move a
    # weight the other way: the weights agree to a few learning rates
    first = [json.loads(line) for line in (one / "train_log.jsonl").read_text().splitlines()][0]
    other = [json.loads(line) for line in (two / "train_log.jsonl").read_text().splitlines()][0]
    assert first["step"] == other["step"] == 1
    assert other["loss"] == pytest.approx(first["loss"], rel=1e-5)
    assert other["grad_norm"] == pytest.approx(first["grad_norm"], rel=1e-4)
    a, b = weights(one), weights(two)
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst < 4 * 2e-5, worst


def test_dpr_on_demo_train_beats_its_initial_checkpoint_on_demo_dev(tmp_path):
    """End to end offline: a small random BERT (hidden 64, mean pooling) trained with ``dpr`` on
    ``demo-train`` (BM25-mined, made by ``harness train --data demo-train``) against the same
    architecture untrained, on ``demo-dev`` top-20 (measured: 1.1 -> 32.5)."""
    import json

    from helpers.dense_models import save_tokenizer
    from transformers import BertConfig, BertModel

    from harness.cli.main import main

    model = tmp_path / "small"
    save_tokenizer(model)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
    BertModel(config, add_pooling_layer=False).save_pretrained(model)
    out = tmp_path / "dpr"
    assert main([
        "train", "--variant", "dpr", "--data", "demo-train", "--model", str(model), "--output", str(out),
        "--pooling", "mean", "--epochs", "3", "--batch-size", "32", "--lr", "2e-4", "--warmup-ratio", "0.1",
        "--max-passage-length", "128", "--max-question-length", "32", "--no-progress", "--logging-steps", "50",
    ]) == 0
    results = tmp_path / "results"
    assert main(["run", "--retriever", "trained", "-o", f"path={out}", "--suite", "demo-dev", "--k", "20",
                 "--results-dir", str(results), "--no-progress"]) == 0
    assert main(["run", "--retriever", "dense", "-o", f"query_model={model}", "-o", "pooling=mean", "-o", "format=title_text",
                 "-o", "max_length=128", "--suite", "demo-dev", "--k", "20", "--results-dir", str(results), "--no-progress"]) == 0
    top20 = {}
    for path in results.glob("*.json"):
        result = json.loads(path.read_text())
        top20[result["retriever"]["name"]] = result["metrics"]["accuracy"]["macro"]["20"]
    assert top20["trained"] > top20["dense"] + 0.15, top20


def test_dense_negatives_are_mined_by_a_trained_checkpoint(tiny, tmp_path):  # noqa: F811
    import json

    from harness.cli.main import main
    from harness.data.training import AnswerCheck, read_training_examples, write_training_examples

    mined = tmp_path / "bm25.json"
    assert main(["data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "--output", str(mined), "--no-progress"]) == 0
    subset = tmp_path / "subset.json"
    bm25 = list(read_training_examples(mined))[:48]
    write_training_examples(subset, bm25)
    first = tmp_path / "first"
    common = ["--model", str(tiny), "--max-steps", "2", "--batch-size", "8", "--max-question-length", "16",
              "--max-passage-length", "32", "--no-progress"]
    assert main(["train", "--variant", "dpr", "--data", str(subset), "--output", str(first), *common]) == 0
    second = tmp_path / "second"
    assert main(["train", "--variant", "dense-negatives", "--data", str(subset), "--corpus", "demo-train",
                 "-M", json.dumps({"path": str(first)}).join(["options=", ""]), "--output", str(second), *common]) == 0
    record = json.loads((second / "harness_training.json").read_text())
    assert record["miner"]["name"] == "retriever" and record["miner"]["options"]["retriever"] == "trained"
    assert record["miner"]["corpus"] == "demo-train"
    dense = list(read_training_examples(second / "mined.json"))
    assert [e.question for e in dense] == [e.question for e in bm25]
    assert all(not AnswerCheck(e.answers).anywhere(n) for e in dense for n in e.hard_negatives)
    assert any(d.hard_negatives != b.hard_negatives for d, b in zip(dense, bm25))


@pytest.fixture(scope="module")
def demo_subset(tmp_path_factory) -> Path:
    """64 BM25-mined demo-train examples (labelled by relation)."""
    from harness.cli.main import main
    from harness.data.training import read_training_examples, write_training_examples

    folder = tmp_path_factory.mktemp("demo-train")
    mined = folder / "bm25.json"
    assert main(["data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "--output", str(mined), "--no-progress"]) == 0
    subset = folder / "subset.json"
    examples = list(read_training_examples(mined))
    write_training_examples(subset, examples[:: len(examples) // 64][:64])
    return subset


BUILT_IN_VARIANTS = ["dpr", "shared", "stopgrad", "flip", "fix-passage", "fix-question", "shuffle-question",
                     "shuffle-passage", "shuffle-both", "multi-sim", "harder-batches", "late-interaction"]


@pytest.mark.parametrize("variant", BUILT_IN_VARIANTS)
def test_every_variant_trains_on_demo_and_its_checkpoint_runs(variant, tiny, demo_subset, tmp_path):  # noqa: F811
    """Each built-in variant end to end on demo data: a few steps on demo-train examples, then
    the checkpoint on demo-dev, whose result names the variant and the 12 relations trained on
    (dense-negatives, which needs a trained checkpoint to mine with, is the test above)."""
    import json

    from harness import registry
    from harness.cli.main import main

    assert variant in registry.registry("variants")
    out = tmp_path / variant
    assert main(["train", "--variant", variant, "--data", str(demo_subset), "--model", str(tiny), "--output", str(out),
                 "--max-steps", "3", "--batch-size", "8", "--max-question-length", "16", "--max-passage-length", "32",
                 "--no-progress"]) == 0
    record = json.loads((out / "harness_training.json").read_text())
    assert record["variant"] == variant and record["steps"] == 3
    results = tmp_path / "results"
    assert main(["run", "--retriever", "trained", "-o", f"path={out}", "--suite", "demo-dev", "--k", "20",
                 "--results-dir", str(results), "--no-progress"]) == 0
    (result,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    training = result["retriever"]["parameters"]["training"]
    assert training["variant"] == variant
    dev_parts = {p["name"] for p in result["suite"]["parts"]}
    assert set(training["seen"]) <= dev_parts and len(training["seen"]) >= 6


def test_qsft_under_torchrun_shards_the_in_loop_index(tiny, tmp_path):  # noqa: F811
    """Two gloo processes: each embeds and holds its own shards of the demo index (the cache they
    fill together is byte for byte a single process's), QSFT's counts are summed over both, and
    the passage side stays as it was."""
    qsft = ["train", "--variant", "qsft", "--data", "demo-dev", "--corpus", "demo", "--model", str(tiny),
            "--batch-size", "2", "--max-question-length", "16", "--max-passage-length", "32", "--logging-steps", "1",
            "--no-progress", "--pooling", "mean", "--max-steps", "3", "--retrieve-k", "50", "--index-shard-size", "2000"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert subprocess.run(HARNESS + qsft + ["--output", str(one)], env={**_env(), "HARNESS_CACHE_DIR": str(tmp_path / "c1")}).returncode == 0
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "harness.cli.main",
               *qsft, "--output", str(two)]
    assert subprocess.run(command, env={**_env(), "HARNESS_CACHE_DIR": str(tmp_path / "c2")}).returncode == 0
    record = json.loads((two / "harness_training.json").read_text())["in_loop"]
    assert record["questions_seen"] == 3 * 2 * 2 and record["passages"] == 7903
    assert [b["step"] for b in record["builds"]] == [0] and not record["builds"][0]["reused"]
    (c1,), (c2,) = list((tmp_path / "c1" / "dense").iterdir()), list((tmp_path / "c2" / "dense").iterdir())
    assert c1.name == c2.name
    files = sorted(p.name for p in c1.glob("*.npy"))
    assert len([f for f in files if f.startswith("emb-")]) == 4
    assert all((c1 / f).read_bytes() == (c2 / f).read_bytes() for f in files)
    a, b = weights(one), weights(two)
    assert all(torch.equal(a[k], b[k]) for k in a if "document" in k)


def test_a_killed_art_run_resumes_with_the_index_it_was_searching(tiny, tmp_path):  # noqa: F811
    """ART re-embedding every 2 steps, killed after a checkpoint: the resumed run searches the
    index saved with the checkpoint (not one re-embedded by the checkpoint's weights), so it makes
    the same embeddings at the same steps and ends with the weights of an uninterrupted run."""
    from helpers.rerank_models import tiny_t5

    teacher = tiny_t5(tmp_path / "t5")
    art = ["train", "--variant", "art", "--data", "demo-dev", "--corpus", "demo", "--model", str(tiny),
           "--batch-size", "2", "--max-question-length", "16", "--max-passage-length", "32", "--logging-steps", "1",
           "--no-progress", "--pooling", "mean", "--max-steps", "8", "--save-steps", "3", "--refresh-every", "2",
           "--retrieve-k", "4", "-L", f"teacher={teacher}", "-L", "device=cpu"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert subprocess.run(HARNESS + art + ["--output", str(whole)], env={**_env(), "HARNESS_CACHE_DIR": str(tmp_path / "c1")}).returncode == 0
    env = {**_env(), "HARNESS_CACHE_DIR": str(tmp_path / "c2")}
    process = subprocess.Popen(HARNESS + art + ["--output", str(cut)], env=env)
    # checkpoint 3 comes between the embeddings of steps 2 and 4: the resumed run must search step 2's
    # (the trainer state, written last, makes the checkpoint complete; the in-loop state is in it)
    _kill_when(process, cut / "checkpoints" / "checkpoint-3" / "trainer_state.json")
    assert (cut / "checkpoints" / "checkpoint-3" / "in_loop_state-rank0.json").is_file()
    assert subprocess.run(HARNESS + art + ["--output", str(cut), "--resume"], env=env).returncode == 0
    builds = {name: json.loads((run / "harness_training.json").read_text())["in_loop"]["builds"] for name, run in (("whole", whole), ("cut", cut))}
    assert [b["step"] for b in builds["whole"]] == [0, 2, 4, 6]
    assert [b["cache"] for b in builds["cut"]] == [b["cache"] for b in builds["whole"]]
    a, b = weights(whole), weights(cut)
    assert all(torch.equal(a[k], b[k]) for k in a)

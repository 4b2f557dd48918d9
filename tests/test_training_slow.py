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

from test_training_engine import data, tiny, train, weights  # noqa: F401 - fixtures

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


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_one(tiny, data, tmp_path):  # noqa: F811
    whole = tmp_path / "whole"
    assert subprocess.run(HARNESS + _args(tiny, data, whole, "--max-steps", "12", "--save-steps", "2"), env=_env()).returncode == 0
    cut = tmp_path / "cut"
    process = subprocess.Popen(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2"), env=_env())
    deadline = time.monotonic() + 300
    while not (cut / "checkpoints" / "checkpoint-4" / "trainer_state.json").exists():
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (cut / "harness_training.json").exists()
    # a finished checkpoint is never resumed over; an unfinished one is not started afresh
    again = subprocess.run(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2"), env=_env(), capture_output=True, text=True)
    assert again.returncode == 2 and "add --resume" in again.stderr
    resumed = subprocess.run(HARNESS + _args(tiny, data, cut, "--max-steps", "12", "--save-steps", "2", "--resume"), env=_env())
    assert resumed.returncode == 0
    a, b = weights(whole), weights(cut)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    steps = [line for line in (cut / "train_log.jsonl").read_text().splitlines() if '"loss":' in line]
    assert len(steps) == 12  # the steps logged twice around the kill are kept once


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

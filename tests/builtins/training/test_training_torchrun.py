"""``harness train`` under torchrun, on CPU with two gloo processes: whole epochs whose example count
does not divide by batch x processes end on every process (no hang at the epoch's end), each epoch
has new batches, two processes of batch B train like one of batch 2B, rank 0 prepares the data
while the others wait, and the record states the batch geometry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import TESTS

from harness.api import Passage, TrainingExample

from helpers.gloo_group import close_group, free_port  # noqa: E402

torch = pytest.importorskip("torch")

HERE = TESTS / "helpers"
#: 19 examples: batch 4 over 2 processes leaves 3 examples after two full rounds, batch 8 in one
#: process a short last batch of 3.
COUNT = 19


def _examples() -> list[TrainingExample]:
    return [TrainingExample(
        question=f"which number is written on door {i}?", answers=(f"n{i}",),
        positives=(Passage(id=f"p{i}", title=f"Door {i}", text=f"Door {i} shows the number n{i}."),),
        hard_negatives=(Passage(id=f"x{i}", title=f"Door {i + 50}", text=f"Door {i + 50} shows the number n{i + 50}."),),
    ) for i in range(COUNT)]


@pytest.fixture(scope="module")
def odd_data(tmp_path_factory) -> Path:
    from harness.data.training import write_training_examples

    path = tmp_path_factory.mktemp("odd") / "train.json"
    write_training_examples(path, _examples())
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


def _args(tiny: Path, data: Path, output: Path, batch: int) -> list[str]:
    return ["train", "--variant", "dpr", "--data", str(data), "--model", str(tiny), "--output", str(output),
            "--epochs", "2", "--batch-size", str(batch), "--max-question-length", "16", "--max-passage-length", "32",
            "--logging-steps", "1", "--save-steps", "1000", "--no-progress", "--distributed-timeout", "120"]


def _trace(directory: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (directory / f"rank{rank}.jsonl").read_text().splitlines()]


def _losses(output: Path) -> list[float]:
    lines = [json.loads(line) for line in (output / "train_log.jsonl").read_text().splitlines()]
    return [line["loss"] for line in lines if "loss" in line]


def test_two_processes_finish_uneven_epochs_with_new_batches_like_one_with_the_global_batch(tiny, odd_data, tmp_path):  # noqa: F811
    one, one_trace = tmp_path / "one", tmp_path / "one-trace"
    done = subprocess.run([sys.executable, str(HERE / "torchrun_train.py"), str(one_trace), *_args(tiny, odd_data, one, 8)],
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    two, two_trace = tmp_path / "two", tmp_path / "two-trace"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(HERE / "torchrun_train.py"), str(two_trace), *_args(tiny, odd_data, two, 4)]
    done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    single, rank0, rank1 = _trace(one_trace, 0), _trace(two_trace, 0), _trace(two_trace, 1)
    # equal steps on both processes: 19 examples = 2 rounds of 2 x 4, then 3 split 2 + 1
    assert len(rank0) == len(rank1) == len(single) == 6
    assert [len(b["indices"]) for b in rank0] == [4, 4, 2] * 2
    assert [len(b["indices"]) for b in rank1] == [4, 4, 1] * 2
    for epoch in (0, 1):
        seen = [i for b in rank0 + rank1 if b["epoch"] == epoch for i in b["indices"]]
        assert sorted(seen) == list(range(COUNT))  # every example once per epoch, none padded
    # each epoch has its own batches
    assert [b["indices"] for b in rank0[:3]] != [b["indices"] for b in rank0[3:]]
    # the global batch of each step is the single process's batch of 8, in the same order
    assert [a["indices"] + b["indices"] for a, b in zip(rank0, rank1)] == [s["indices"] for s in single]
    assert [b["epoch"] for b in single] == [0, 0, 0, 1, 1, 1]

    record = json.loads((two / "harness_training.json").read_text())
    assert record["steps"] == 6
    assert record["distributed"] == {"world_size": 2, "per_device_batch": 4, "gradient_accumulation": 1,
                                     "global_batch": 8, "examples_per_step": 8}
    assert json.loads((one / "harness_training.json").read_text())["distributed"]["world_size"] == 1
    # the same losses step by step (the first exactly up to float sums; later ones after updates
    # that differ by float rounding)
    a, b = _losses(one), _losses(two)
    assert len(a) == len(b) == 6
    assert b[0] == pytest.approx(a[0], rel=1e-5)
    assert b == pytest.approx(a, rel=1e-3)


def test_global_batches_split_give_every_process_the_same_number_of_batches():
    from harness_builtins.training.distributed import split

    # accelerate alone, batches of 16 to process i mod 8: [8, 8, 8, 8, 8, 8, 8, 7] steps
    per_device = [list(range(i * 16, min(i * 16 + 16, 1000))) for i in range(63)]
    assert [len(per_device[r::8]) for r in range(8)] == [8] * 7 + [7]
    # the sampler's global batches of 8 x 16, each split over the 8 processes
    global_batches = [list(range(i * 128, min(i * 128 + 128, 1000))) for i in range(8)]
    out = split(global_batches, 8)
    assert [len(out[r::8]) for r in range(8)] == [8] * 8
    assert out[:8] == [list(range(i * 16, i * 16 + 16)) for i in range(8)]
    assert [len(b) for b in out[56:]] == [13] * 8  # the last 104: 13 per process
    assert [i for b in out for i in b] == list(range(1000))  # in order, each once
    assert split([[0, 1, 2, 3, 4]], 2) == [[0, 1, 2], [3, 4]]
    # fewer examples than processes: filled with the epoch's first examples
    assert split([[0, 1, 2]], 4) == [[0], [1], [2], [0]]
    assert split([[0]], 3) == [[0], [0], [0]]
    # one process: the sampler's batches as they are
    assert split([[0, 1, 2], [3]], 1) == [[0, 1, 2], [3]]


def _rank_zero_fails(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from harness.errors import HarnessError
    from harness_builtins.training.distributed import rank_zero_first

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        try:
            with rank_zero_first():
                if rank == 0:
                    raise OSError("download failed")
                Path(out, "body-ran").write_text("1")
        except (OSError, HarnessError) as exc:
            Path(out, f"error{rank}.txt").write_text(str(exc))
    finally:
        close_group()


def test_a_failure_on_rank_0_while_preparing_stops_the_others_with_one_line(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank_zero_fails, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    assert (tmp_path / "error0.txt").read_text() == "download failed"
    assert (tmp_path / "error1.txt").read_text() == (
        "rank 0 failed while preparing the data (OSError: download failed); this process stops too")
    assert not (tmp_path / "body-ran").exists()


def _rank_zero_first(rank: int, world: int, port: int, out: str) -> None:
    import time

    import torch.distributed as dist

    from harness_builtins.training import data as training_data
    from harness_builtins.training.distributed import rank_zero_first

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        with rank_zero_first() as first:
            if first:
                time.sleep(0.5)
            with open(Path(out) / "order.txt", "a") as f:
                f.write(f"{rank}\n")
        mined_by = []

        def fake_mine(recipe, settings, datasets, hard_negatives):
            mined_by.append(rank)
            return [[e for e in group] for group in datasets], {"name": "fake"}

        training_data.mine = fake_mine

        class Settings:
            output = Path(out) / "run"

        datasets = [_examples()[:5], _examples()[5:]] if rank == 0 else []
        got, record = training_data._mined_everywhere(None, Settings, datasets, 1, rank == 0)
        with open(Path(out) / f"mined{rank}.json", "w") as f:
            json.dump({"sizes": [len(g) for g in got], "record": record, "mined_by": mined_by,
                       "first": got[1][0].question}, f)

        from types import SimpleNamespace

        from harness_builtins.training import fit

        def fake_open(kind, name, options):  # the in-loop index's suite: rank 0 opens it first
            if rank == 0:
                time.sleep(0.5)
            with open(Path(out) / "opened.txt", "a") as f:
                f.write(f"{rank}\n")
            return SimpleNamespace(value=SimpleNamespace(corpus=[0] * 7))

        fit.registry.load = fake_open
        assert fit.searched_suite("demo")[1] == 7
    finally:
        close_group()


def test_rank_zero_prepares_first_and_mines_alone(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_rank_zero_first, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    assert (tmp_path / "order.txt").read_text().split() == ["0", "1"]
    assert (tmp_path / "opened.txt").read_text().split() == ["0", "1"]
    zero, one = (json.loads((tmp_path / f"mined{r}.json").read_text()) for r in (0, 1))
    assert zero["mined_by"] == [0] and one["mined_by"] == []  # both read the file back
    assert zero["sizes"] == one["sizes"] == [5, COUNT - 5]
    assert one["record"] == {"name": "fake"} and one["first"] == _examples()[5].question
    assert (tmp_path / "run" / "mined.json").is_file()


def test_several_gpus_without_torchrun_are_refused(monkeypatch):
    from harness.errors import HarnessError
    from harness_builtins.training.plan import refuse_data_parallel

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    with pytest.raises(HarnessError, match=r"torchrun --nproc_per_node 4") as error:
        refuse_data_parallel()
    assert "\n" not in str(error.value)
    monkeypatch.setenv("WORLD_SIZE", "4")
    refuse_data_parallel()  # one process per GPU: fine


@pytest.mark.parametrize("layout", [["optimizer.pt"], ["optimizer.bin"], ["optimizer_0/__0_0.distcp"], ["optimizer_0_rank0.bin"]])
def test_a_checkpoint_is_complete_with_the_optimizer_ddp_or_fsdp_writes(tmp_path, layout):
    from harness_builtins.training.resume import last_complete_checkpoint

    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    for name in [*layout, "scheduler.pt"]:
        (checkpoint / name).parent.mkdir(parents=True, exist_ok=True)
        (checkpoint / name).write_bytes(b"x")
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    assert last_complete_checkpoint(tmp_path) == checkpoint


def test_resume_without_a_complete_checkpoint_is_an_error_not_a_restart(tmp_path):
    from harness.errors import HarnessError
    from harness_builtins.training.resume import resume_checkpoint

    assert resume_checkpoint(tmp_path / "none") is None  # nothing written yet: start
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    with pytest.raises(HarnessError, match="no complete checkpoint to resume from"):
        resume_checkpoint(tmp_path)


def test_a_global_batch_is_shared_over_processes_and_accumulated_steps(monkeypatch, tmp_path):
    """ART's batch of 64 is global (4 per GPU on the paper's 16): the batch per device follows the
    process count; a batch per device given by the user wins over the variant's global one."""
    from harness.errors import HarnessError
    from harness_builtins.training.plan import per_device_batch, resolve_settings

    art = resolve_settings(variant="art", given={}, data=[("demo-train", 1.0)], model="m", output=tmp_path)
    assert art.global_batch_size == 64
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert per_device_batch(art).batch_size == 64
    monkeypatch.setenv("WORLD_SIZE", "16")
    assert per_device_batch(art).batch_size == 4
    monkeypatch.setenv("WORLD_SIZE", "8")
    import dataclasses

    assert per_device_batch(dataclasses.replace(art, gradient_accumulation=2)).batch_size == 4
    with pytest.raises(HarnessError, match="does not divide over 8 process"):
        per_device_batch(dataclasses.replace(art, gradient_accumulation=3))
    mine = resolve_settings(variant="art", given={"batch_size": 8}, data=[("demo-train", 1.0)], model="m", output=tmp_path)
    assert mine.global_batch_size is None and per_device_batch(mine).batch_size == 8
    with pytest.raises(HarnessError, match="not both"):
        resolve_settings(variant="art", given={"batch_size": 8, "global_batch_size": 64}, data=[("demo-train", 1.0)],
                         model="m", output=tmp_path)


def test_accumulation_says_it_adds_no_in_batch_negatives(tiny, tmp_path, capsys):  # noqa: F811
    """Accumulated steps add examples to an update, not negatives to a question: an in-batch variant
    says so once on stderr; without accumulation, or for an in-loop variant (whose negatives are
    retrieved, not in the batch), nothing is said."""
    from harness_builtins.training.plan import make_plan, resolve_settings

    def plan(variant: str, **given) -> str:
        make_plan(resolve_settings(variant=variant, given=given, data=[("demo-train", 1.0)], model=str(tiny),
                                   output=tmp_path / f"{variant}-{len(given)}"))
        return capsys.readouterr().err

    err = plan("dpr", gradient_accumulation=2, batch_size=4)
    assert err == ("harness: warning: --gradient-accumulation 2: each question's in-batch negatives are the passages of "
                   "its own step (4 per process); accumulation adds examples per update, not negatives\n")
    assert plan("dpr", batch_size=4) == ""
    assert plan("qsft", gradient_accumulation=2, batch_size=4) == ""


def test_under_fsdp_rank_0_saves_the_gathered_full_weights():
    """FSDP shards the weights over processes: the model written is a fresh one loaded with the
    state dict every process gathered (here a stand-in trainer whose gather returns new weights)."""
    from harness_builtins.training.fit import final_model

    trained, fresh = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    full = {"weight": torch.ones(2, 2), "bias": torch.zeros(2)}

    class Accelerator:
        def get_state_dict(self, model):
            return full

    class Trainer:
        is_fsdp_enabled, accelerator, model = True, Accelerator(), trained

    saved = final_model(Trainer(), trained, lambda: fresh)
    assert saved is fresh and torch.equal(saved.weight, full["weight"])
    Trainer.is_fsdp_enabled = False
    assert final_model(Trainer(), trained, lambda: fresh) is trained


def test_torchrun_with_one_process_on_a_multi_gpu_machine_is_not_refused(monkeypatch):
    from harness_builtins.training.plan import refuse_data_parallel

    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    refuse_data_parallel()


def _kill_tree(process: subprocess.Popen, path: Path, timeout: float = 600) -> None:
    """SIGKILL ``process`` (torchrun) and every worker it started once ``path`` exists."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    parent = psutil.Process(process.pid)
    for child in parent.children(recursive=True) + [parent]:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait()


@pytest.mark.slow
def test_two_processes_killed_mid_epoch_resume_to_the_uninterrupted_weights(tiny, odd_data, tmp_path):  # noqa: F811
    """Two gloo processes over 3 epochs of 19 examples (the last step of each epoch uneven: 2 + 1),
    killed after the checkpoint of step 4 (mid-epoch 2 of 3 steps each), restarted with --resume: the same batches
    after the checkpoint and the uninterrupted run's weights."""
    from helpers.training_models import weights

    def command(output: Path, trace: Path, *extra: str) -> list[str]:
        args = _args(tiny, odd_data, output, 4)
        args[args.index("--epochs") + 1] = "3"
        args[args.index("--save-steps") + 1] = "2"
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                str(HERE / "torchrun_train.py"), str(trace), *args, *extra]

    whole = tmp_path / "whole"
    done = subprocess.run(command(whole, tmp_path / "whole-trace"), env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cut = tmp_path / "cut"
    process = subprocess.Popen(command(cut, tmp_path / "cut-trace"), env={**_env(), "TRACE_PAUSE": "0.5"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    _kill_tree(process, cut / "checkpoints" / "checkpoint-4" / "trainer_state.json")
    assert not (cut / "harness_training.json").exists()
    done = subprocess.run(command(cut, tmp_path / "resumed-trace", "--resume"), env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):  # after the checkpoint, the batches of the uninterrupted run (in epoch 2)
        resumed = _trace(tmp_path / "resumed-trace", rank)
        assert resumed == _trace(tmp_path / "whole-trace", rank)[4:]
        assert [b["epoch"] for b in resumed] == [1, 1, 2, 2, 2]  # steps 5-9: the rest of epoch 2, then epoch 3
    a, b = weights(whole), weights(cut)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((cut / "harness_training.json").read_text())["steps"] == 9


def test_two_processes_stop_together_at_the_first_non_finite_step(tiny, odd_data, tmp_path):  # noqa: F811
    """Diverging under torchrun: the verdict is all-reduced, so both processes stop at the same
    optimizer step with the same line (none waits for a collective the other never joins), and
    no model is written."""
    out, trace = tmp_path / "diverged", tmp_path / "trace"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(HERE / "torchrun_train.py"), str(trace), *_args(tiny, odd_data, out, 4), "--lr", "1e30",
               "--warmup-steps", "0"]
    done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.startswith("harness: error: ")]
    assert len(lines) == 2 and lines[0] == lines[1], done.stderr[-3000:]
    assert lines[0].startswith("harness: error: training diverged at optimizer step 2: ")
    assert not (out / "model").exists() and not (out / "harness_training.json").exists()

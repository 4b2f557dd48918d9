"""What ``harness train`` may write into, keep and resume from: outputs that hold someone's other
files, sit under a file or are being written by another training are refused with one line;
``--resume`` refuses other settings; a resumed run's recorded mean loss covers every step; the
newest two checkpoints are kept while training and none once it has finished."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.cli.main import main
from helpers.training_models import train

torch = pytest.importorskip("torch")


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_an_output_holding_other_files_is_refused_and_left_untouched(tiny, data, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "mine"
    (out / "model").mkdir(parents=True)
    (out / "model" / "notes.txt").write_text("my notes")
    (out / "train_log.txt").write_text("keep me")
    assert train(tiny, data, out, "dpr") == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: --output {out} holds files no harness training wrote (model, train_log.txt)")
    assert (out / "model" / "notes.txt").read_text() == "my notes" and sorted(p.name for p in out.iterdir()) == ["model", "train_log.txt"]


def test_an_output_that_is_or_sits_under_a_file_is_one_line(tiny, data, tmp_path, capsys):  # noqa: F811
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert train(tiny, data, afile, "dpr") == 2
    assert "is a file" in _one_line(capsys)
    assert train(tiny, data, afile / "out", "dpr") == 2
    assert _one_line(capsys) == f"harness: error: --output {afile / 'out'}: {afile} is a file, not a folder"
    assert afile.read_text() == "x"


def test_a_second_training_into_a_folder_being_written_stops_with_one_line(tiny, data, tmp_path, capsys):  # noqa: F811
    import fcntl

    out = tmp_path / "busy"
    out.mkdir()
    handle = os.open(out, os.O_RDONLY)
    fcntl.flock(handle, fcntl.LOCK_EX)  # what a running training holds
    try:
        assert train(tiny, data, out, "dpr") == 2
        assert "is being written by another training" in _one_line(capsys)
        assert list(out.iterdir()) == []
    finally:
        os.close(handle)
    assert train(tiny, data, out, "dpr") == 0  # released: the folder is free again
    assert (out / "harness_training.json").is_file() and (out / "harness_run.json").is_file()


def test_a_run_refused_before_writing_leaves_no_folder(tiny, data, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "never"
    assert train(tiny, data, out, "dpr", "-L", "temperature=-1") == 2
    capsys.readouterr()
    assert not out.exists()


def _interrupted(tiny, data, out):  # noqa: F811
    """A finished 3-step run with a checkpoint at every step, its record and model removed: what a
    run killed after its last checkpoint leaves."""
    assert train(tiny, data, out, "dpr", "--save-steps", "1", "--save-total-limit", "0", "--keep-checkpoints") == 0
    record = json.loads((out / "harness_training.json").read_text())
    (out / "harness_training.json").unlink()
    shutil.rmtree(out / "model")
    return record


def test_resume_refuses_other_settings_and_keeps_the_whole_runs_mean_loss(tiny, data, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "cut"
    before = _interrupted(tiny, data, out)
    capsys.readouterr()
    assert train(tiny, data, out, "dpr", "--save-steps", "1", "--resume", "--lr", "3e-5", "--seed", "7") == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: --resume of {out} with other settings than it started with "
                           "(learning_rate: 2e-05 -> 3e-05; seed: 42 -> 7)"), line
    # how it runs may change: logging, saving, progress
    assert train(tiny, data, out, "dpr", "--save-steps", "2", "--logging-steps", "2", "--resume", "--keep-checkpoints") == 0
    after = json.loads((out / "harness_training.json").read_text())
    assert after["steps"] == before["steps"] == 3
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    # nothing was left to train (no step beyond --max-steps); the trainer's own mean would be 0
    # over 0 steps
    assert after["train_loss"] == pytest.approx(before["train_loss"], rel=1e-6)
    assert after["train_loss_steps"] == 3


def test_only_the_checkpoints_a_resume_needs_are_kept(tiny, data, tmp_path, capsys):  # noqa: F811
    """While training the newest two (the one before the newest, should the newest be damaged);
    once the model and record are written none (a finished run resumes nothing), said on one
    line; --keep-checkpoints keeps them, --save-total-limit 0 keeps every one."""
    kept = tmp_path / "kept"
    assert train(tiny, data, kept, "dpr", "--save-steps", "1", "--keep-checkpoints") == 0
    assert sorted(p.name for p in (kept / "checkpoints").iterdir()) == ["checkpoint-2", "checkpoint-3"]
    capsys.readouterr()
    done = tmp_path / "done"
    assert train(tiny, data, done, "dpr", "--save-steps", "1") == 0
    assert not (done / "checkpoints").exists()
    assert sorted(p.name for p in done.iterdir()) == ["harness_run.json", "harness_training.json", "model", "train_log.jsonl"]
    notes = [line for line in capsys.readouterr().err.splitlines() if "checkpoint" in line]
    assert len(notes) == 1 and notes[0].startswith("training finished: removed 2 checkpoints (") and \
        notes[0].endswith(f"MB) from {done / 'checkpoints'} (--keep-checkpoints keeps them)"), notes
    # the finished model is what every reader opens: it loads without its checkpoints
    from harness.results.checkpoint import Checkpoint

    assert Checkpoint.read(done).record["steps"] == 3


def test_removing_a_finished_stages_checkpoints_leaves_other_files(tmp_path):
    from harness_builtins.training.resume import remove_checkpoints

    checkpoints = tmp_path / "checkpoints"
    for name in ("checkpoint-1", "checkpoint-20"):
        (checkpoints / name / "sub").mkdir(parents=True)
        (checkpoints / name / "sub" / "w.bin").write_bytes(b"x" * 10)
        (checkpoints / name / "optimizer.pt").write_bytes(b"y" * 5)
    (checkpoints / "runs" / "Nov25").mkdir(parents=True)  # the trainer's TensorBoard logs
    (checkpoints / "runs" / "Nov25" / "events").write_bytes(b"z")
    assert remove_checkpoints(checkpoints) == (2, 30)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["runs"]
    (checkpoints / "runs" / "Nov25" / "events").unlink()
    (checkpoints / "runs" / "Nov25").rmdir()
    (checkpoints / "runs").rmdir()
    (checkpoints / "checkpoint-3").mkdir()
    assert remove_checkpoints(checkpoints) == (1, 0) and not checkpoints.exists()
    assert remove_checkpoints(checkpoints) == (0, 0)


def test_the_whole_runs_mean_loss_from_a_checkpoint_sum():
    from harness_builtins.training.resume import LOSS_SUM_FILE, loss_sum, mean_loss

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "checkpoint-4"
        checkpoint.mkdir()
        assert mean_loss(2.0, 10, checkpoint) == (2.0, 6)  # no sum recorded: the resumed steps' mean, and how many
        (checkpoint / LOSS_SUM_FILE).write_text(json.dumps({"step": 4, "loss_sum": 12.0}))
        assert mean_loss(2.0, 10, checkpoint) == ((12.0 + 2.0 * 6) / 10, 10)
        (checkpoint / LOSS_SUM_FILE).write_text(json.dumps({"step": 3, "loss_sum": 12.0}))  # another checkpoint's
        assert mean_loss(2.0, 10, checkpoint) == (2.0, 6)
        assert mean_loss(1.5, 10, None) == (1.5, 10)
        # the sum read when the run resumed counts, though the checkpoint was rotated away since
        (checkpoint / LOSS_SUM_FILE).write_text(json.dumps({"step": 4, "loss_sum": 12.0}))
        record = loss_sum(checkpoint)
        shutil.rmtree(checkpoint)
        assert mean_loss(2.0, 10, checkpoint) == (2.0, 6)
        assert mean_loss(2.0, 10, checkpoint, record) == ((12.0 + 2.0 * 6) / 10, 10)


def test_a_length_beyond_the_models_positions_is_refused_before_anything_is_written(tiny, data, tmp_path, capsys):  # noqa: F811
    """The tiny BERT has 128 positions: --max-passage-length 129 is one line naming the flag and
    the limit, and no output is left (128 itself trains)."""
    out = tmp_path / "long"
    assert train(tiny, data, out, "dpr", "--max-passage-length", "129") == 2
    assert _one_line(capsys) == f"harness: error: --max-passage-length 129 is more than {tiny} takes (128 tokens); give at most 128"
    assert not out.exists()
    assert train(tiny, data, out, "dpr", "--max-passage-length", "128", "--max-steps", "1") == 0


def test_option_values_out_of_range_are_one_line(tiny, data, tmp_path, capsys):  # noqa: F811
    for extra, message in [(("--max-steps", "-1"), "Invalid value for '--max-steps': -1 is not in the range x>=1."),
                           (("--seed", "-1"), "Invalid value for '--seed': -1 is not in the range 0<=x<=4294967295."),
                           (("-S", "drop_last=maybe"), "batch sampler 'random': option drop_last must be true or false, got 'maybe'")]:
        assert train(tiny, data, tmp_path / "x", "dpr", *extra) == 2
        assert message in _one_line(capsys)
    assert main(["train", "--variant", "dpr", "--data", f"{data}:1e15", "--model", str(tiny), "--output", str(tmp_path / "x")]) == 2
    assert _one_line(capsys) == f"harness: error: --data {data}: the weight must be a number > 0 and <= 1000, got 1000000000000000.0"
    assert not (tmp_path / "x").exists()


def test_a_checkpoint_holds_its_loss_sum_before_it_is_complete(tiny, data, tmp_path, monkeypatch):  # noqa: F811
    """The trainer's state file, written last, makes a checkpoint complete (what ``--resume``
    continues from): the summed losses are in the folder before it, so a run killed while saving
    cannot leave a complete checkpoint whose resumed mean loss would miss the earlier steps."""
    from transformers.trainer_callback import TrainerState

    from harness_builtins.training.resume import LOSS_SUM_FILE

    seen = []
    original = TrainerState.save_to_json

    def save_to_json(self, path):
        folder = Path(path).parent
        if folder.name.startswith("checkpoint-"):
            seen.append((folder.name, (folder / LOSS_SUM_FILE).is_file()))
        return original(self, path)

    monkeypatch.setattr(TrainerState, "save_to_json", save_to_json)
    assert train(tiny, data, tmp_path / "out", "dpr", "--save-steps", "1") == 0
    assert seen == [("checkpoint-1", True), ("checkpoint-2", True), ("checkpoint-3", True)]


def _parses(*args: str) -> bool:
    """Whether ``harness train``'s command line takes ``args`` (parsed only, nothing run)."""
    import click

    from harness_builtins.training.commands import train_command

    base = ["--variant", "dpr", "--data", "d", "--model", "m", "--output", "o"]
    try:
        train_command.make_context("train", [*base, *args])
    except click.BadParameter:
        return False
    return True


def test_every_setting_is_one_flag_checked_by_its_declaration():
    """Each declared setting is a flag of ``harness train`` that accepts its bounds and choices and
    refuses what lies outside them: the bounds are the declaration's, not written again."""
    from harness_builtins.training.commands import train_command
    from harness_builtins.training.settings import SETTINGS

    flags = {p.name: p.opts[0] for p in train_command.params}
    assert set(SETTINGS) <= set(flags)
    checked = 0
    for name, option in SETTINGS.items():
        flag = flags[name]
        if option.choices is not None:
            for value in option.choices:
                if value is not None:
                    assert _parses(flag, str(value)), (flag, value)
            assert not _parses(flag, "no-such-choice"), flag
            checked += 1
            continue
        assert option.type in (int, float), name
        step = 1 if option.type is int else 1e-9
        if option.min is not None:
            edge = option.min + (step if option.min_exclusive else 0)
            assert _parses(flag, str(int(edge) if option.type is int else edge)), (flag, edge)
            assert not _parses(flag, str(int(option.min - step) if option.type is int else option.min - (0 if option.min_exclusive else 1e-6))), flag
            checked += 1
        if option.max is not None:
            assert _parses(flag, str(int(option.max) if option.type is int else option.max)), flag
            assert not _parses(flag, str(int(option.max) + 1 if option.type is int else option.max + 1e-6)), flag
        if option.type is int:
            assert not _parses(flag, "1.5"), flag
    assert checked >= 20


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", ["optimizer", "weights", "rng", "foreign-class", "json"])
def test_a_damaged_checkpoint_is_one_line_naming_it_and_the_sound_one_before(tiny, data, tmp_path, capsys, damage):  # noqa: F811
    out = tmp_path / "cut"
    _interrupted(tiny, data, out)
    last = out / "checkpoints" / "checkpoint-3"
    if damage == "optimizer":
        _truncate(last / "optimizer.pt")
    elif damage == "weights":
        _truncate(next(last.rglob("model.safetensors")))
    elif damage == "rng":
        _truncate(last / "rng_state.pth")
    elif damage == "foreign-class":
        modules = json.loads((last / "modules.json").read_text())
        modules[0]["type"] = "evil.Payload"
        (last / "modules.json").write_text(json.dumps(modules))
    else:
        (last / "router_config.json").write_text("{not json")
    capsys.readouterr()
    assert train(tiny, data, out, "dpr", "--save-steps", "1", "--resume") == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: {last} is damaged ("), line
    assert line.endswith(f"the newest sound checkpoint before it is checkpoint-2: move checkpoint-3 out of "
                         f"{out / 'checkpoints'} and --resume again"), line
    if damage == "foreign-class":
        assert "'evil.Payload'" in line
    # taking the advice resumes
    shutil.move(str(last), str(tmp_path / "checkpoint-3"))
    assert train(tiny, data, out, "dpr", "--save-steps", "1", "--resume") == 0
    assert json.loads((out / "harness_training.json").read_text())["steps"] == 3

"""Which folders ``harness train`` takes as its own, and what it checks before its expensive part.

A folder is a harness training's own only by a record harness wrote there (``harness_run.json``
or ``harness_training.json``, at its top or in a stage inside it), never by the names of the files
in it; ``--resume`` into checkpoints whose settings were not recorded is refused naming the record;
a wrong model, data or corpus is refused before any data is read, mined or loaded."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from harness.cli.main import main
from helpers.training_models import train

torch = pytest.importorskip("torch")


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line]
    assert len(err) == 1, err
    return err[0]


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("names", [
    ("model/notes.txt", "train_log.jsonl"),          # a trained model's folder names with a user's files
    ("checkpoints/notes.txt",),
    ("labels/mine/notes.txt", "stages/pretrain/notes.txt"),
    ("harness_run.json",),                            # a file of the record's name that no training wrote
    ("harness_training.json", "model/notes.txt"),
])
def test_a_folder_holding_a_users_files_under_harness_names_is_refused_and_untouched(tiny, data, tmp_path, capsys, names):
    out = tmp_path / "mine"
    for i, name in enumerate(names):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"my notes {i}\n" if not name.endswith(".json") else '{"mine": true}\n')
    before = _tree(out)
    assert train(tiny, data, out, "dpr") == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: --output {out} holds files no harness training wrote ("), line
    assert "harness_run.json or harness_training.json" in line
    assert _tree(out) == before


def test_a_folder_with_checkpoints_but_no_recorded_settings_is_refused_naming_the_record(tiny, data, tmp_path, capsys):
    out = tmp_path / "cut"
    assert train(tiny, data, out, "dpr", "--save-steps", "1", "--save-total-limit", "0", "--keep-checkpoints") == 0
    (out / "harness_training.json").unlink()
    shutil.rmtree(out / "model")
    (out / "harness_run.json").unlink()
    before = _tree(out)
    capsys.readouterr()
    for extra in (("--resume",), ("--resume", "--lr", "3e-5", "--seed", "7"), ()):
        assert train(tiny, data, out, "dpr", "--save-steps", "1", *extra) == 2
        line = _one_line(capsys)
        assert line == (f"harness: error: --output {out} holds checkpoints ({out / 'checkpoints'}) but not "
                        f"{out / 'harness_run.json'}, the settings they were trained with: without it a --resume cannot "
                        "be checked against them (data, model, lr, seed); train into another --output, or delete the "
                        "checkpoints to start over"), line
        assert _tree(out) == before


def test_a_stage_resumed_without_its_recorded_settings_is_refused():
    from harness.errors import HarnessError
    from harness_builtins.training.plan import Stage, check_resumed_settings
    from harness_builtins.training.settings import TrainSettings

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        settings = TrainSettings(variant="dpr", data=[(Path("x.json"), 1.0)], model="m", output=Path(folder), resume=True)
        with pytest.raises(HarnessError, match=r"but not .*harness_run\.json, the settings they were trained with"):
            check_resumed_settings(Stage("main", settings))


def test_a_stages_settings_are_written_before_its_data_is_read_and_mark_the_folder(tiny, data, tmp_path, capsys, monkeypatch):
    """The settings are written when the stage starts, before the data is read or mined: what a
    run killed there leaves (its settings, its mined data) is taken up again, not refused as
    someone else's. A run that fails there with nothing trained leaves nothing behind."""
    out = tmp_path / "stopped"
    seen = {}

    def stop(settings):
        seen.update(json.loads((Path(settings.output) / "harness_run.json").read_text()))
        (Path(settings.output) / "mined.json").write_text("[]\n")
        raise KeyboardInterrupt

    monkeypatch.setattr("harness_builtins.training.data.prepare", stop)
    assert train(tiny, data, out, "dpr") != 0
    assert seen["variant"] == "dpr" and seen["model"] == str(tiny) and seen["output"] == str(out)
    assert not out.exists()  # stopped before training: nothing of it is left
    monkeypatch.undo()
    capsys.readouterr()
    out.mkdir()  # what a kill -9 at that point leaves
    (out / "harness_run.json").write_text(json.dumps(seen))
    (out / "mined.json").write_text("[]\n")
    assert train(tiny, data, out, "dpr") == 0
    assert (out / "harness_training.json").is_file()


@pytest.mark.parametrize("args, message", [
    (("--model", "no-such-model"), "--model no-such-model: no such directory, and not in the Hugging Face cache"),
    (("--model", "./no/such/dir"), "--model ./no/such/dir: no such directory"),
    (("--model", "not a model!"), "--model not a model!: no such directory, and not a Hugging Face hub id"),
    (("--data", "no-such-data"), "--data no-such-data: no such file, and no training set or suite of that name"),
    (("--data", "demo-train", "--data", "no-such.json"), "--data no-such.json: no such file"),
])
def test_model_and_data_are_checked_before_anything_is_mined_or_loaded(tmp_path, capsys, monkeypatch, args, message):
    """``--data demo-train`` would be mined by BM25 first (minutes on a real suite): a wrong model
    or another wrong --data is refused in seconds, with nothing mined, loaded or written."""
    import harness_builtins.training.data as data_module

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    mined = []
    monkeypatch.setattr(data_module, "training_file", lambda *a, **k: mined.append(a) or pytest.fail("mined"))
    given = dict(zip(args[::2], args[1::2]))
    flags = ["--variant", "dpr", "--output", str(tmp_path / "out"), "--no-progress"]
    if "--model" in given:
        flags += ["--model", given["--model"], "--data", "demo-train"]
    else:
        flags += ["--model", "minilm"]
        for flag, value in zip(args[::2], args[1::2]):
            flags += [flag, value]
    began = time.monotonic()
    assert main(["train", *flags]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: {message}"), line
    assert time.monotonic() - began < 30 and not mined
    assert not (tmp_path / "out").exists()


def test_a_model_folder_without_a_model_is_refused_up_front(tmp_path, capsys):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    assert main(["train", "--variant", "dpr", "--data", "demo-train", "--model", str(empty),
                 "--output", str(tmp_path / "out"), "--no-progress"]) == 2
    assert _one_line(capsys) == (f"harness: error: --model {empty}: {empty} holds no model "
                                 "(neither config.json nor modules.json)")
    assert not (tmp_path / "out").exists()


def test_the_searched_corpus_is_checked_up_front(tmp_path, capsys, data, tiny):
    assert train(tiny, data, tmp_path / "out", "dense-negatives", "--corpus", "no-such-suite",
                 "-M", 'options={"path": "x"}') == 2
    line = _one_line(capsys)
    assert "no-such-suite" in line, line
    assert not (tmp_path / "out").exists()

"""The training record (``harness_training.json``): any problem is one line naming the file and the
key; ``export-dpr`` of a damaged checkpoint is one line, and an export killed midway leaves nothing
that blocks the next one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.errors import InputFileError
from helpers.integrity import one_line_exit_2
from helpers.paths import REPO

# ------------------------------------------------------------------------- the training record


RECORD = {"schema": "harness-training/1", "variant": "dpr", "initial_model": "m", "data": [{"path": "x"}],
          "format": "dpr", "seed": 1, "recipe": {"loss": {"name": "dpr", "options": {}}}, "settings": {}, "steps": 3}


@pytest.mark.parametrize("change, fragment", [
    ({"recipe": {"loss": "dpr"}}, "'recipe'.'loss' is not an object"),
    ({"data": [1]}, "'data'[0] is not an object"),
    ({"variant": ""}, "'variant' is empty"),
    ({"labels": {"a": {"folder": "../../elsewhere"}}}, "'labels'.'a': its folder '../../elsewhere' is outside"),
    ({"labels": {"a": {"folder": "/etc"}}}, "'labels'.'a': its folder '/etc' is outside"),
    ({"labels": {"a": "labels/a"}}, "'labels'.'a' is not an object"),
    ({"labels": ["a"]}, "'labels' is not a dict"),
    ({"loss_state": 5}, "'loss_state' is not a str"),
    ({"loss_state": "../weights.safetensors"}, "'loss_state': '../weights.safetensors' is outside"),
    ({"distributed": [1]}, "'distributed' is not a dict"),
    ({"seed": "1"}, "'seed' is missing or not an int"),
])
def test_every_problem_of_a_training_record_names_the_file_and_the_key(tmp_path, change, fragment):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_text(json.dumps({**RECORD, **change}))
    with pytest.raises(InputFileError) as caught:
        Checkpoint.read(tmp_path, model=False)
    assert str(caught.value).startswith(f"{record}: ") and fragment in str(caught.value)


def test_a_training_record_that_is_not_utf8_is_reported_on_its_line(tmp_path):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_bytes(b'{\n "schema": "harness-training/1",\n "variant": "d\xffpr"\n}\n')
    with pytest.raises(InputFileError, match=rf"^{record}:3: unreadable training record: not UTF-8 text \(byte 15 of the line\)$"):
        Checkpoint.read(tmp_path, model=False)


def test_the_model_folder_and_the_label_folders_are_named_with_the_record(tmp_path):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_text(json.dumps(RECORD))
    with pytest.raises(InputFileError, match=rf"^{record}: the checkpoint's model folder .* is missing"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model").mkdir()
    with pytest.raises(InputFileError, match=rf"^{record}: .* not a sentence-transformers model directory"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model" / "modules.json").write_text('{"0": ')
    with pytest.raises(InputFileError, match=r"modules.json:1: invalid JSON"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model" / "modules.json").write_text('[{"path": "../../outside"}]')
    with pytest.raises(InputFileError, match=r"modules.json: expected a JSON list of modules"):
        Checkpoint.read(tmp_path)
    record.write_text(json.dumps({**RECORD, "labels": {"P19": {"folder": "labels/P19"}}}))
    with pytest.raises(InputFileError, match=rf"^{record}: 'labels'.'P19': its folder 'labels/P19' is missing"):
        Checkpoint.read(tmp_path, model=False).label_folders()


# ----------------------------------------------------------------------------------- export-dpr


@pytest.fixture(scope="module")
def cls_checkpoint(tmp_path_factory) -> Path:
    """A checkpoint folder an export accepts: a tiny BERT with CLS pooling and a record."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from helpers.dense_models import tiny_bert

    root = tmp_path_factory.mktemp("checkpoint")
    transformer = Transformer(str(tiny_bert(root / "bert", pooler=False)), max_seq_length=32)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(root / "out" / "model"))
    (root / "out" / "harness_training.json").write_text(json.dumps(RECORD))
    return root / "out"


def test_export_of_a_checkpoint_with_damaged_weights_is_one_line(cls_checkpoint, tmp_path, capsys):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(cls_checkpoint, damaged)
    for weights in (damaged / "model").rglob("*.safetensors"):
        weights.write_bytes(b"not safetensors")
    code = main(["export-dpr", str(damaged), str(tmp_path / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, str(damaged / "model"), "cannot load the trained model")
    assert not (tmp_path / "dest").exists()
    (damaged / "harness_training.json").write_text(json.dumps({**RECORD, "data": ["x"]}))
    code = main(["export-dpr", str(damaged), str(tmp_path / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, f"{damaged / 'harness_training.json'}: 'data'[0] is not an object")


def test_export_into_an_unwritable_destination_is_one_line(cls_checkpoint, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["export-dpr", str(cls_checkpoint), str(tmp_path / "file" / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write", "is a file, not a folder")


KILLED_EXPORT = """
import os, sys
import transformers.modeling_utils as modeling
from harness.cli.main import main

save = modeling.PreTrainedModel.save_pretrained

def save_then_die(self, *args, **kwargs):
    save(self, *args, **kwargs)
    os.kill(os.getpid(), 9)  # killed after the first encoder is written

modeling.PreTrainedModel.save_pretrained = save_then_die
main(["export-dpr", sys.argv[1], sys.argv[2]])
"""


def test_an_export_killed_midway_leaves_nothing_that_blocks_the_next(cls_checkpoint, tmp_path, capsys):
    dest = tmp_path / "dpr"
    killed = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(cls_checkpoint), str(dest)],
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, cwd=REPO)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert not dest.exists()
    assert main(["export-dpr", str(cls_checkpoint), str(dest)]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == ["ctx_encoder", "question_encoder"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dpr"]  # the killed run's leftover is gone



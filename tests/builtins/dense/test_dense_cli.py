"""The dense plugin's commands: `harness convert art` and `harness matrix`."""

from __future__ import annotations

import pytest
import torch

from harness.cli.main import main
from helpers.realm_art_checkpoints import art_checkpoint, save_megatron_dir


def test_convert_art_writes_a_directory_the_art_preset_loads(capsys, tmp_path):
    src = save_megatron_dir(tmp_path / "release", art_checkpoint(seed=3))
    out = tmp_path / "art-hf"
    code = main(["convert", "art", str(src), str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert (out / "query_encoder").is_dir() and (out / "passage_encoder").is_dir()
    assert f"-o model={out}" in captured.out
    from harness_builtins.dense.art import ArtEncoder

    vectors = ArtEncoder.from_pretrained(out).encode_queries(["who wrote hamlet?"])
    assert vectors.shape[0] == 1 and torch.isfinite(torch.from_numpy(vectors)).all()


def test_convert_art_refuses_a_file_that_is_not_a_checkpoint(capsys, tmp_path):
    bogus = tmp_path / "model_optim_rng.pt"
    torch.save({"nothing": 1}, bogus)
    code = main(["convert", "art", str(bogus), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(bogus) in err
    assert len([line for line in err.splitlines() if line.startswith("harness: error")]) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("models", ["minilm", "minilm,"])
def test_matrix_needs_two_models(capsys, models):
    code = main(["matrix", "--suite", "demo", "--models", models])
    assert code == 2 and "at least two models" in capsys.readouterr().err

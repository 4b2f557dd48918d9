"""A ``harness train`` checkpoint as the ``trained`` retriever and the ``late-interaction``
re-ranker read it: a tampered record's value is one line naming the record and its key, a model
naming a class outside sentence-transformers is one line when evaluated (never imported), and a
configuration's identity comes from the weights' bytes and the settings, never from the folders
the files were in or how they were loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.errors import HarnessError
from harness.results.schema import config_digest
from helpers.training_models import train

torch = pytest.importorskip("torch")


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line]
    assert len(err) == 1, err
    return err[0]


@pytest.fixture(scope="module")
def trained_pair(tiny, data, tmp_path_factory):
    """The same training twice: from two copies of the initial model in different folders, into
    different folders, the second saved as an online load writes its tokenizer's settings."""
    root = tmp_path_factory.mktemp("pair")
    outs = []
    for where in ("first", "second"):
        start = root / where / "start" / "tiny-bert"
        shutil.copytree(tiny, start)
        assert train(start, data, root / where / "run", "dpr") == 0
        outs.append(root / where / "run")
    for config in (outs[1] / "model").rglob("tokenizer_config.json"):
        text = config.read_text()
        assert '"local_files_only": true' in text
        config.write_text(text.replace('"local_files_only": true', '"local_files_only": false'))
    return outs


def _trained(path: Path):
    from harness import registry

    return registry.load("retrievers", "trained", {"path": str(path)}).value


def _weights(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted((folder / "model").rglob("*.safetensors"))}


def test_byte_identical_weights_land_on_one_configuration(trained_pair):
    first, second = trained_pair
    assert _weights(first) == _weights(second)  # the training is deterministic: the same bytes
    a, b = (_trained(p).parameters() for p in trained_pair)
    assert a == b
    assert config_digest("trained", a) == config_digest("trained", b)
    assert a["training"]["initial_model"].startswith("tiny-bert (sha256:")
    assert str(first.parent) not in json.dumps(a) and str(second.parent) not in json.dumps(b)


def test_other_weights_are_another_configuration(trained_pair, tmp_path):
    from safetensors.torch import load_file, save_file

    other = tmp_path / "other"
    shutil.copytree(trained_pair[0], other)
    weights = next((other / "model").rglob("*.safetensors"))
    tensors = load_file(str(weights))
    name = next(iter(tensors))
    tensors[name] = tensors[name].clone()
    tensors[name].view(-1)[0] += 1.0
    save_file(tensors, str(weights))
    assert config_digest("trained", _trained(other).parameters()) != config_digest("trained", _trained(trained_pair[0]).parameters())


def test_the_model_digest_reads_loading_flags_and_paths_as_a_local_offline_load(tmp_path):
    from harness.util.models import directory_digest

    model = tmp_path / "m"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    config = model / "tokenizer_config.json"
    config.write_text('{\n  "is_local": true,\n  "local_files_only": true,\n  "model_max_length": 32\n}')
    offline = directory_digest(model)
    copy = tmp_path / "n"
    shutil.copytree(model, copy)
    (copy / "tokenizer_config.json").write_text(
        '{\n  "is_local": false,\n  "local_files_only": false,\n  "model_max_length": 32\n}')
    assert directory_digest(copy) == offline
    (copy / "tokenizer_config.json").write_text(
        '{\n  "is_local": true,\n  "local_files_only": true,\n  "model_max_length": 64\n}')
    assert directory_digest(copy) != offline  # a setting that decides the numbers counts
    (copy / "tokenizer_config.json").write_text(config.read_text())
    (copy / "config.json").write_text('{"_name_or_path": "/home/a/models/bert", "hidden_size": 8}')
    (model / "config.json").write_text('{"_name_or_path": "/data/b/bert", "hidden_size": 8}')
    assert directory_digest(copy) == directory_digest(model)


@pytest.fixture
def tampered(trained_pair, tmp_path):
    out = tmp_path / "tampered"
    shutil.copytree(trained_pair[0], out)
    return out


def test_a_tampered_records_format_is_one_line_naming_the_record_and_key(tampered, capsys):
    record = tampered / "harness_training.json"
    data = json.loads(record.read_text())
    data["format"] = "markdown"
    record.write_text(json.dumps(data))
    with pytest.raises(HarnessError) as caught:
        _trained(tampered)
    message = str(caught.value)
    assert message.startswith(f"{record}: 'format': must be one of title_text, text, dpr"), message
    assert "'markdown'" in message
    assert main(["run", "--retriever", "trained", "-o", f"path={tampered}", "--suite", "demo", "--no-progress"]) == 2
    assert _one_line(capsys).startswith(f"harness: error: {record}: 'format'")


@pytest.mark.parametrize("where", ["modules.json", "router_config.json"])
def test_a_model_naming_a_class_outside_sentence_transformers_is_one_line_when_evaluated(tampered, capsys, where, monkeypatch):
    files = sorted((tampered / "model").rglob(where))
    assert files, where
    text = files[0].read_text()
    assert ': "sentence_transformers.' in text
    files[0].write_text(text.replace(': "sentence_transformers.', ': "harness_evil_module.', 1))
    import importlib

    imported, original = [], importlib.import_module

    def guarded(name, *args, **kwargs):
        if "evil" in name:
            imported.append(name)
            raise AssertionError(f"{name} imported")
        return original(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", guarded)
    with pytest.raises(HarnessError) as caught:
        _trained(tampered).encoder.encode_queries(["q"])
    monkeypatch.undo()
    message = str(caught.value)
    assert f"{files[0]} names the class 'harness_evil_module." in message and "not sentence-transformers'" in message
    assert not imported
    assert main(["run", "--retriever", "trained", "-o", f"path={tampered}", "--suite", "demo", "--no-progress"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: {tampered / 'model'}: cannot load the trained model: ") and "harness_evil_module" in line


def test_a_model_that_does_not_load_is_one_line_naming_its_folder(tampered, capsys):
    weights = next((tampered / "model").rglob("config.json"))
    weights.write_text('{"model_type": "no-such-architecture"}')
    assert main(["run", "--retriever", "trained", "-o", f"path={tampered}", "--suite", "demo", "--no-progress"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: {tampered / 'model'}: cannot load the trained model ("), line
    assert line.endswith("the checkpoint is damaged")


@pytest.fixture(scope="module")
def late(tiny, data, tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "run"
    assert train(tiny, data, out, "late-interaction") == 0
    return out


def test_the_late_interaction_reranker_refuses_a_foreign_class_in_one_line(late, tmp_path):
    from harness import registry

    out = tmp_path / "late"
    shutil.copytree(late, out)
    modules = out / "model" / "modules.json"
    modules.write_text(modules.read_text().replace('"type": "sentence_transformers.', '"type": "os.', 1))
    reranker = registry.load("rerankers", "late-interaction", {"path": str(out)}).value
    with pytest.raises(HarnessError, match=r"modules\.json names the class 'os\."):
        reranker.encoder.encode_queries(["q"])


def test_the_late_interaction_reranker_is_identified_by_weights_head_and_format(late, tmp_path):
    """Not by the record's paths, times or versions: a copy elsewhere whose record says it was
    written from other folders, in another time, is the same configuration."""
    from harness import registry

    copy = tmp_path / "elsewhere" / late.name  # its own name, in another folder
    shutil.copytree(late, copy)
    record = copy / "harness_training.json"
    data = json.loads(record.read_text())
    data["seconds"] = 1234.5
    data["initial_model"] = "/somewhere/else/tiny-bert"
    data["settings"]["output"] = str(copy)
    record.write_text(json.dumps(data))
    a = registry.load("rerankers", "late-interaction", {"path": str(late)}).value.parameters()
    b = registry.load("rerankers", "late-interaction", {"path": str(copy)}).value.parameters()
    assert a == b
    data["format"] = "text"
    record.write_text(json.dumps(data))
    c = registry.load("rerankers", "late-interaction", {"path": str(copy)}).value.parameters()
    assert c != a  # the passage format decides the scores


def test_export_dpr_refuses_a_foreign_class_before_importing_it(tampered, tmp_path, capsys):
    modules = tampered / "model" / "modules.json"
    modules.write_text(modules.read_text().replace(': "sentence_transformers.', ': "harness_evil_module.', 1))
    assert main(["export-dpr", str(tampered), str(tmp_path / "dpr")]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"harness: error: {tampered / 'model'}: cannot load the trained model: {modules} names the class")
    assert not (tmp_path / "dpr").exists()

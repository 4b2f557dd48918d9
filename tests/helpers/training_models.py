"""Shared test helpers : a tiny BERT, its training examples and the training command."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api import Passage, TrainingExample
from harness.cli.main import main

torch = pytest.importorskip("torch")


TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white", "brown", "grey",
          "pink", "violet", "amber", "cyan", "olive", "navy"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from transformers import BertConfig, BertModel

    from helpers.dense_models import save_tokenizer

    directory = tmp_path_factory.mktemp("tiny-bert")
    save_tokenizer(directory)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, **TINY), add_pooling_layer=False).save_pretrained(directory)
    return directory


def examples() -> list[TrainingExample]:
    out = []
    for i, color in enumerate(COLORS):
        other = COLORS[(i + 5) % len(COLORS)]
        out.append(TrainingExample(
            question=f"what colour is the flag of land {i}?",
            answers=(color,),
            positives=(Passage(id=f"p{i}", title=f"Land {i}", text=f"The flag of land {i} is {color}."),),
            hard_negatives=(Passage(id=f"n{i}", title=f"Land {i + 100}", text=f"The flag of land {i + 100} is {other}."),),
            label="flags" if i % 2 else "lands",
        ))
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from harness.data.training import write_training_examples

    path = tmp_path_factory.mktemp("data") / "train.json"
    write_training_examples(path, examples())
    return path


def train(tiny: Path, data: Path, output: Path, *extra: str) -> int:
    return main([
        "train", "--variant", extra[0] if extra else "dpr", "--data", str(data), "--model", str(tiny),
        "--output", str(output), "--max-steps", "3", "--batch-size", "4", "--logging-steps", "1",
        "--max-question-length", "16", "--max-passage-length", "32", "--no-progress", *extra[1:],
    ])


def weights(directory: Path) -> dict:
    from safetensors.torch import load_file

    return {
        f"{f.parent.name}/{k}": v
        for f in sorted((directory / "model").rglob("*.safetensors"))
        for k, v in load_file(str(f)).items()
    }


"""Training throughput: ``harness train`` against a plain sentence-transformers script.

The plain script is what a user would otherwise write: ``SentenceTransformerTrainer`` with
``MultipleNegativesRankingLoss`` at scale 1 with dot-product similarity (DPR's loss) on
(question, positive, negative) columns. Both train the same model (a BERT of hidden size 128,
4 layers, random, the MiniLM WordPiece vocabulary) from the same initial weights, with one shared
encoder (``--variant shared``; the plain script has no Router), on the same 512 examples of
``demo-train`` (mined by BERT-free word overlap, so the benchmark needs no Java), batch 32,
questions 32 and passages 128 tokens, for the same number of steps. Reported: examples per second
of each and their ratio (goal: the harness costs at most 5% more); peak RSS of this process.

    pytest tests/benchmarks/test_bench_training.py --benchmark-only -s
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

STEPS = 12
BATCH = 32


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import torch
    from helpers.dense_models import save_tokenizer
    from transformers import BertConfig, BertModel

    from harness import registry
    from harness.api import TrainingExample
    from harness.data.training import write_training_examples

    root = tmp_path_factory.mktemp("bench-training")
    model = root / "bert"
    save_tokenizer(model)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=512)
    BertModel(config, add_pooling_layer=False).save_pretrained(model)
    suite = registry.load("suites", "demo-train", {}).value
    passages = list(suite.corpus)
    examples = []
    for question in suite.questions[: STEPS * BATCH]:
        words = set(question.text.lower().split())
        ranked = sorted(passages[:2000], key=lambda p: -len(words & set(p.text.lower().split())))
        positive = next((p for p in ranked if any(a in p.text for a in question.answers)), ranked[0])
        negative = next(p for p in ranked if p.id != positive.id)
        examples.append(TrainingExample(question=question.text, answers=question.answers, positives=(positive,), hard_negatives=(negative,)))
    data = root / "train.json"
    write_training_examples(data, examples)
    return root, model, data, examples


def _plain(root: Path, model: Path, examples) -> float:
    """A plain sentence-transformers training run; returns examples per second."""
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from sentence_transformers.util import dot_score

    torch.manual_seed(42)
    transformer = Transformer(str(model), max_seq_length=128)
    st = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")], device="cpu")
    data = Dataset.from_dict({
        "question": [e.question for e in examples],
        "positive": [f"{e.positives[0].title} {e.positives[0].text}" for e in examples],
        "negative": [f"{e.hard_negatives[0].title} {e.hard_negatives[0].text}" for e in examples],
    })
    args = SentenceTransformerTrainingArguments(
        output_dir=str(root / "plain"), per_device_train_batch_size=BATCH, max_steps=STEPS, learning_rate=2e-5,
        seed=42, use_cpu=True, save_strategy="no", report_to="none", disable_tqdm=True, logging_steps=STEPS,
    )
    trainer = SentenceTransformerTrainer(
        model=st, args=args, train_dataset=data,
        loss=MultipleNegativesRankingLoss(st, scale=1.0, similarity_fct=dot_score),
    )
    runtime = trainer.train().metrics["train_runtime"]  # the same clock as the harness's log
    return STEPS * BATCH / runtime


def _harness(root: Path, model: Path, data: Path, name: str) -> float:
    import json

    from harness.cli.main import main

    output = root / name
    assert main([
        "train", "--variant", "shared", "--data", str(data), "--model", str(model), "--output", str(output),
        "--max-steps", str(STEPS), "--batch-size", str(BATCH), "--max-question-length", "128",
        "--max-passage-length", "128", "--save-steps", str(10 * STEPS), "--logging-steps", str(STEPS), "--no-progress",
    ]) == 0
    log = [json.loads(line) for line in (output / "train_log.jsonl").read_text().splitlines()]
    runtime = next(line["train_runtime"] for line in log if "train_runtime" in line)
    return STEPS * BATCH / runtime


@pytest.mark.benchmark
def test_training_throughput_against_plain_sentence_transformers(setup, benchmark):
    root, model, data, examples = setup
    plain = _plain(root, model, examples)
    harness = benchmark.pedantic(lambda: _harness(root, model, data, f"h{time.monotonic_ns()}"), rounds=1, iterations=1)
    plain_again = _plain(root, model, examples)
    plain = max(plain, plain_again)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nexamples/s: harness {harness:.2f}, plain sentence-transformers {plain:.2f}; "
          f"harness / plain = {harness / plain:.3f}; peak RSS {peak:.0f} MiB")
    assert harness > 0 and plain > 0

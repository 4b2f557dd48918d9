"""The cross-encoder and late-interaction re-rankers with tiny models built here and loaded like
users' directories: their scores are the model's own, and broken checkpoints are one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import registry
from harness.api import Candidate, Hit, Passage, RunContext
from harness.errors import HarnessError

PASSAGES = [
    ("Banana", "The banana is a long yellow fruit."),
    ("Oak", "The oak is a large tree whose fruit is the acorn."),
    ("Salt", "Table salt is sodium chloride."),
]
QUESTION = "what colour is a banana"


def candidates():
    return [[Candidate(hit=Hit(passage_id=f"p{i}", score=9.0 - i), passage=Passage(id=f"p{i}", title=t, text=x))
             for i, (t, x) in enumerate(PASSAGES)]]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_cross_encoder

    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny-ce")


def test_cross_encoder_scores_are_the_models_logits(tmp_path, cross_encoder_dir):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    reranker = registry.load("rerankers", "cross-encoder", {"model": str(cross_encoder_dir), "batch_size": 2}).value
    (hits,) = reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))
    model = AutoModelForSequenceClassification.from_pretrained(cross_encoder_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(cross_encoder_dir)
    with torch.no_grad():
        batch = tokenizer([QUESTION] * 3, [f"{t} {x}" for t, x in PASSAGES], padding=True, return_tensors="pt")
        expected = model(**batch).logits[:, 0].tolist()
    assert [h.passage_id for h in hits] == ["p0", "p1", "p2"]
    assert [h.score for h in hits] == pytest.approx(expected, abs=1e-5)
    assert reranker.parameters()["model"].startswith("tiny-ce (sha256:")


def test_cross_encoder_that_cannot_load_is_one_line(tmp_path):
    reranker = registry.load("rerankers", "cross-encoder", {"model": str(tmp_path / "missing")}).value
    with pytest.raises(HarnessError, match="cross-encoder: cannot load"):
        reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))
    with pytest.raises(HarnessError, match="format must be one of"):
        registry.load("rerankers", "cross-encoder", {"model": "x", "format": "title"})


def write_checkpoint(directory, *, dim=32, m=None):
    """A checkpoint as the trainer writes it: a tiny BERT dual encoder in ``encoder/`` and a head."""
    from safetensors.numpy import save_file
    from helpers.dense_models import tiny_bert

    from harness_builtins.rerank.late_interaction import write_checkpoint as write

    tiny_bert(directory / "encoder")
    options = {"query_model": "encoder", "pooling": "mean", "format": "title_text", "max_length": 64}
    rng = np.random.default_rng(0)
    write(directory, rng.standard_normal(4 * dim), "dense", options)
    if m is not None:  # a head no writer would make
        save_file({"m": m}, str(directory / "late_interaction_head.safetensors"))
    return directory


def test_late_interaction_is_m_dot_q_p_qp_q_minus_p(tmp_path):
    from safetensors.numpy import load_file

    ckpt = write_checkpoint(tmp_path / "ckpt")
    reranker = registry.load("rerankers", "late-interaction", {"path": str(ckpt)}).value
    (hits,) = reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))
    encoder = registry.load("encoders", "dense", {"query_model": str(ckpt / "encoder"), "pooling": "mean",
                                                   "format": "title_text", "max_length": 64}).value
    q = encoder.encode_queries([QUESTION])[0]
    p = encoder.encode_passages(PASSAGES)
    m = load_file(str(ckpt / "late_interaction_head.safetensors"))["m"]
    expected = [float(m @ np.concatenate([q, row, q * row, q - row])) for row in p]
    assert [h.score for h in hits] == pytest.approx(expected, rel=1e-5, abs=1e-5)
    assert reranker.parameters() | {"path": None} == {"path": None, "encoder": "dense", "dim": 32}
    assert registry.rerankers().get("late-interaction").depth == 200
    assert json.loads((ckpt / "late_interaction.json").read_text())["format"] == "harness-late-interaction/1"
    assert not [p for p in ckpt.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_late_interaction_encodes_each_passage_once_and_scores_as_one_by_one(tmp_path, monkeypatch):
    """Several questions sharing candidates: one encoding of each distinct passage (kept for later
    batches, the least recently used dropped beyond the memo's bytes), scores equal to re-ranking
    each question alone."""
    from harness_builtins.rerank import late_interaction

    ckpt = write_checkpoint(tmp_path / "ckpt")
    context = RunContext(cache_dir=tmp_path, progress=False)
    alone = [registry.load("rerankers", "late-interaction", {"path": str(ckpt)}).value.rerank([q], candidates(), context)[0]
             for q in (QUESTION, "what is salt made of")]
    reranker = registry.load("rerankers", "late-interaction", {"path": str(ckpt)}).value
    encoded = []
    original = reranker.encoder.encode_passages
    monkeypatch.setattr(reranker.encoder, "encode_passages", lambda texts: encoded.extend(texts) or original(texts))
    both = reranker.rerank([QUESTION, "what is salt made of", "nothing"], candidates() * 2 + [[]], context)
    assert both[2] == [] and len(encoded) == len(PASSAGES)
    for mine, one in zip(both, alone):
        assert [h.passage_id for h in mine] == [h.passage_id for h in one]
        assert [h.score for h in mine] == pytest.approx([h.score for h in one], rel=1e-5, abs=1e-5)
    reranker.rerank([QUESTION], candidates(), context)
    assert len(encoded) == len(PASSAGES)  # a later batch finds them kept
    monkeypatch.setattr(late_interaction, "MEMO_BYTES", 1)  # room for no more than one question's candidates
    reranker.rerank([QUESTION], [candidates()[0][:1]], context)
    assert [key[0] for key in reranker._memo] == ["p0"]


@pytest.mark.parametrize(
    "damage, fragment",
    [
        (lambda d: (d / "late_interaction.json").unlink(), "cannot read the checkpoint's configuration"),
        (lambda d: (d / "late_interaction.json").write_text('{"format": "other"}'), "expected \"format\""),
        (lambda d: (d / "late_interaction_head.safetensors").write_bytes(b"xx"), "cannot read the late-interaction head"),
        (lambda d: write_checkpoint(d, m=np.ones(7, dtype=np.float32)), "of shape [4 * d], got shape [7]"),
    ],
)
def test_a_broken_checkpoint_is_one_line(tmp_path, damage, fragment):
    ckpt = write_checkpoint(tmp_path / "ckpt")
    damage(ckpt)
    with pytest.raises(HarnessError) as caught:
        registry.load("rerankers", "late-interaction", {"path": str(ckpt)})
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_head_of_the_wrong_size_for_the_encoder_is_one_line(tmp_path):
    ckpt = write_checkpoint(tmp_path / "ckpt", dim=16)
    reranker = registry.load("rerankers", "late-interaction", {"path": str(ckpt)}).value
    with pytest.raises(HarnessError, match="4 x 16 weights but encoder 'dense' makes 32-dimensional"):
        reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))


def test_a_harness_train_output_is_read_with_its_trained_encoder(tmp_path, monkeypatch):
    """The trainer's layout: record (loss late-interaction), loss.safetensors with m, model/; the
    encoder is the registered ``trained`` one (here a letter-count stand-in, so no model loads)."""
    import torch
    from helpers.fake_rerankers import LetterEncoder, registries_with_fake_rerankers
    from safetensors.torch import save_file

    from harness_builtins.rerank import late_interaction

    monkeypatch.setattr(late_interaction, "TRAINED_ENCODER", "test-letters")
    out = tmp_path / "out"
    (out / "model").mkdir(parents=True)
    (out / "model" / "modules.json").write_text("[]")
    record = {"schema": "harness-training/1", "variant": "late-interaction", "format": "title_text",
              "recipe": {"loss": {"name": "late-interaction", "options": {}}}, "initial_model": "tiny", "data": [],
              "seed": 0, "steps": 1}
    (out / "harness_training.json").write_text(json.dumps(record))
    m = torch.linspace(-1, 1, 32)
    save_file({"m": m}, str(out / "loss.safetensors"))
    with registries_with_fake_rerankers():
        reranker = registry.load("rerankers", "late-interaction", {"path": str(out)}).value
        (hits,) = reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))
        encoder = LetterEncoder()
        q, p = encoder.encode_queries([QUESTION])[0], encoder.encode_passages(PASSAGES)
        expected = [float(m.numpy() @ np.concatenate([q, row, q * row, q - row])) for row in p]
        assert [h.score for h in hits] == pytest.approx(expected, rel=1e-6)
        assert reranker.encoder.path == str(out) and reranker.parameters()["encoder"] == "test-letters"
        record["recipe"]["loss"]["name"] = "dpr"
        (out / "harness_training.json").write_text(json.dumps(record))
        with pytest.raises(HarnessError, match="trained with loss 'dpr', which has no late-interaction head"):
            registry.load("rerankers", "late-interaction", {"path": str(out)})


def test_late_interaction_on_a_harness_train_output_with_the_trained_encoder(tmp_path):
    """The real ``trained`` encoder of the dense plugin loads the checkpoint's ``model/``."""
    import torch
    from safetensors.torch import save_file
    from helpers.dense_models import tiny_bert, tiny_st

    out = tmp_path / "out"
    tiny_st(out / "model", tiny_bert(tmp_path / "bert"))
    record = {"schema": "harness-training/1", "variant": "late-interaction", "format": "title_text",
              "recipe": {"loss": {"name": "late-interaction", "options": {}}},
              "initial_model": "tiny", "data": [], "seed": 0, "steps": 1}
    (out / "harness_training.json").write_text(json.dumps(record))
    m = torch.linspace(-1, 1, 4 * 32)
    save_file({"m": m}, str(out / "loss.safetensors"))
    reranker = registry.load("rerankers", "late-interaction", {"path": str(out)}).value
    (hits,) = reranker.rerank([QUESTION], candidates(), RunContext(cache_dir=tmp_path, progress=False))
    encoder = registry.load("encoders", "trained", {"path": str(out)}).value
    q, p = encoder.encode_queries([QUESTION])[0], encoder.encode_passages(PASSAGES)
    expected = [float(m.numpy() @ np.concatenate([q, row, q * row, q - row])) for row in p]
    assert [h.score for h in hits] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert reranker.parameters()["encoder"] == "trained" and reranker.parameters()["dim"] == 32

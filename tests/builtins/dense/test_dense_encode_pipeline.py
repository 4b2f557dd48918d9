"""The encoding pipeline (dense/pipeline.py ``encode_batches``): on CPU it gives exactly the
vectors of a plain loop (tokenise all, sort by length, pad, forward); its threads stop when
encoding ends or fails; the tokenizer's fast path gives the transformers tokenizer's tokens; ART
and REALM run on it with a precision option; TF32 is switched on only around fp32 CUDA work."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from harness_builtins.dense import encoders, pipeline
from harness_builtins.dense.encoders import TransformersEncoder
from harness_builtins.dense.pipeline import LazyFeatures, Packed, encode_batches
from helpers.paths import TESTS

#: Very different lengths: one token of text, a title alone, up to past max_length (truncated).
PASSAGES = [
    ("", "x"),
    ("Paris", "Paris is the capital and most populous city of France."),
    ("Eiffel Tower", "The tower is 330 metres tall, about the height of an 81-storey building. " * 12),
    ("Zebra", "Zebras are African equines."),
    ("", "A passage without a title is encoded as its text alone, as DPR does."),
    ("A title that is quite long on its own " * 8, "and a short text"),
    ("Ottawa", "Ottawa is the capital city of Canada, on the south bank of the Ottawa River."),
    ("Short", "y"),
    ("Mount Everest", "Earth's highest mountain above sea level, in the Mahalangur Himal. " * 3),
    ("Nile", "The Nile is a major north-flowing river in northeastern Africa."),
    ("Empty text", ""),
]
QUESTIONS = ["what is the capital of france?", "who?", "how tall is the eiffel tower " * 20]


def encoder(model_dir, **kwargs) -> TransformersEncoder:
    kwargs.setdefault("device", "cpu")
    return TransformersEncoder(str(model_dir), **kwargs)


def reference_encode(model_dir, passages, *, batch_size, max_length, pooling, fmt):
    """The plain loop: tokenise every input with transformers, sort longest first (stable), pad
    each batch to its longest input, forward in fp32, pool; vectors back in input order."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    pairs = [i for i, (title, _) in enumerate(passages) if fmt == "dpr" and title]
    singles = [i for i in range(len(passages)) if i not in pairs]
    ids: list[list[int]] = [[] for _ in passages]
    if pairs:  # one batch call, as a pair with an empty text stays a pair
        encoded = tokenizer([passages[i][0] for i in pairs], [passages[i][1] for i in pairs], truncation=True,
                            max_length=max_length)["input_ids"]
        for i, row in zip(pairs, encoded):
            ids[i] = row
    for i in singles:
        title, text = passages[i]
        ids[i] = tokenizer(f"{title} {text}" if fmt == "title_text" else text, truncation=True,
                           max_length=max_length)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    out = np.empty((len(ids), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = max(len(ids[i]) for i in rows)
            input_ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, i in enumerate(rows):
                input_ids[r, : len(ids[i])] = torch.tensor(ids[i])
                mask[r, : len(ids[i])] = 1
            hidden = model(input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            if pooling == "cls":
                vectors = hidden[:, 0].float()
            else:
                weights = mask.unsqueeze(-1).float()
                vectors = (hidden.float() * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            out[rows] = vectors.numpy()
    return out


def encoding_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("harness-encode-")]


@pytest.mark.parametrize("pooling,fmt", [("cls", "dpr"), ("mean", "title_text")])
def test_cpu_vectors_equal_the_plain_loop_exactly(tiny_models, pooling, fmt):
    enc = encoder(tiny_models.bert, pooling=pooling, format=fmt, max_length=64, batch_size=4)
    widths: list[int] = []
    enc.on_batch = lambda rows, width: widths.append(width)
    got = enc.encode_passages(PASSAGES)
    want = reference_encode(tiny_models.bert, PASSAGES, batch_size=4, max_length=64, pooling=pooling, fmt=fmt)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert len(widths) == 3 and widths == sorted(widths, reverse=True)  # 4 + 4 + 3 rows
    assert widths[0] == 64 and widths[-1] <= 5  # truncated at max_length; the shortest batch stays short
    assert encoding_threads() == []


def test_queries_empty_input_and_one_input(tiny_models):
    enc = encoder(tiny_models.bert, format="text", max_length=32, batch_size=2)
    want = reference_encode(tiny_models.bert, [("", q) for q in QUESTIONS], batch_size=2, max_length=32,
                            pooling="cls", fmt="text")
    np.testing.assert_array_equal(enc.encode_queries(QUESTIONS), want)
    assert enc.encode_queries([]).shape == (0, 32) and enc.encode_passages([]).shape == (0, 32)
    assert enc.encode_features([]).shape == (0, 32)
    np.testing.assert_array_equal(enc.encode_queries(QUESTIONS[1:2]), want[1:2])


def test_pretokenised_features_and_unsorted_batches(tiny_models):
    enc = encoder(tiny_models.bert, pooling="mean", format="dpr", max_length=64, batch_size=3)
    lazy = enc.encode_passages(PASSAGES)
    features = enc.tokenize_passages(PASSAGES)
    np.testing.assert_array_equal(enc.encode_features(features), lazy)
    widths: list[int] = []
    enc.on_batch = lambda rows, width: widths.append(width)
    np.testing.assert_allclose(enc.encode_features(features, sort=False), lazy, atol=1e-5)
    assert widths[:2] == [max(len(f["input_ids"]) for f in features[i : i + 3]) for i in (0, 3)]


def test_the_tokenizers_fast_path_gives_the_transformers_tokens(tiny_models):
    enc = encoder(tiny_models.bert, format="dpr", max_length=24)
    items = [(t, x) if t else x for t, x in PASSAGES]  # pairs cut longest first, singles, an empty text
    fast = enc._pack(items)
    assert enc._backend  # the check on the first inputs passed: the Rust tokenizer is used
    reference = Packed.from_features(enc._tokenize_items(items))
    np.testing.assert_array_equal(fast.lengths, reference.lengths)
    assert set(fast.columns) == {"input_ids", "token_type_ids"} and fast.columns["token_type_ids"] is None
    np.testing.assert_array_equal(fast.column("input_ids"), reference.column("input_ids"))
    np.testing.assert_array_equal(fast.column("token_type_ids"), reference.column("token_type_ids"))
    assert max(fast.lengths) == 24


def test_a_backend_that_disagrees_is_not_used(tiny_models, monkeypatch):
    real = encoders._truncating_backend
    monkeypatch.setattr(encoders, "_truncating_backend", lambda tokenizer, max_length: real(tokenizer, max_length + 8))
    enc = encoder(tiny_models.bert, format="dpr", max_length=16, batch_size=4)
    got = enc.encode_passages(PASSAGES)
    assert enc._backend is False
    want = reference_encode(tiny_models.bert, PASSAGES, batch_size=4, max_length=16, pooling="cls", fmt="dpr")
    np.testing.assert_array_equal(got, want)


def test_windows_sort_within_themselves_and_keep_input_order(tiny_models, monkeypatch):
    """The CUDA windows (1, 2, 4, ... batches), exercised on CPU."""
    assert pipeline.sort_windows(11, 2, "cuda:0") == [(0, 2), (2, 6), (6, 11)]
    assert pipeline.sort_windows(11, 2, "cpu") == [(0, 11)] and pipeline.sort_windows(0, 2, "cuda") == []
    monkeypatch.setattr(pipeline, "sort_windows", lambda n, batch_size, device: [(0, 2), (2, 6), (6, 11)])
    enc = encoder(tiny_models.bert, pooling="mean", format="dpr", max_length=64, batch_size=2)
    widths: list[int] = []
    enc.on_batch = lambda rows, width: widths.append(width)
    got = enc.encode_passages(PASSAGES)
    want = reference_encode(tiny_models.bert, PASSAGES, batch_size=2, max_length=64, pooling="mean", fmt="dpr")
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert len(widths) == 1 + 2 + 3
    assert widths[1:3] == sorted(widths[1:3], reverse=True) and widths[3:] == sorted(widths[3:], reverse=True)


def test_packed_pads_each_column():
    packed = Packed({"input_ids": np.arange(1, 7), "token_type_ids": None}, np.array([1, 3, 2]))
    batch = packed.pad(np.array([1, 2, 0]), pad_id=9)
    np.testing.assert_array_equal(batch["input_ids"].numpy(), [[2, 3, 4], [5, 6, 9], [1, 9, 9]])
    np.testing.assert_array_equal(batch["attention_mask"].numpy(), [[1, 1, 1], [1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(batch["token_type_ids"].numpy(), np.zeros((3, 3)))
    assert all(t.dtype.is_floating_point is False and t.dtype.itemsize == 8 for t in batch.values())
    with pytest.raises(ValueError, match="token_type_ids"):
        Packed.from_features([{"input_ids": [1, 2], "token_type_ids": [0]}])


def test_a_model_failing_midway_stops_the_threads(tiny_models):
    enc = encoder(tiny_models.bert, format="dpr", batch_size=1)
    enc.load()
    calls = []
    original = enc._model.forward

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the model broke")
        return original(*args, **kwargs)

    enc._model.forward = failing
    many = PASSAGES * 20  # far more batches than the producers may hold ahead
    with pytest.raises(RuntimeError, match="the model broke"):
        enc.encode_passages(many)
    assert len(calls) == 2 and encoding_threads() == []
    enc._model.forward = original
    assert enc.encode_passages(PASSAGES[:2]).shape == (2, 32) and encoding_threads() == []


def test_a_tokenizer_failing_raises_in_the_caller_and_stops_the_threads():
    def pack(start, stop):
        raise ValueError(f"cannot tokenise {start}:{stop}")

    def forward(batch):  # pragma: no cover - never reached
        raise AssertionError

    start = time.perf_counter()
    with pytest.raises(ValueError, match="cannot tokenise 0:5"):
        encode_batches(forward, LazyFeatures(5, pack), dim=4, batch_size=2, device="cpu", precision="fp32")
    assert encoding_threads() == [] and time.perf_counter() - start < 5


def test_tf32_only_around_fp32_cuda_work_and_recorded(tiny_models):
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    with pipeline.matmul_precision("cuda:0", "fp32"):
        assert torch.backends.cuda.matmul.allow_tf32
    assert torch.backends.cuda.matmul.allow_tf32 == before
    for device, precision in (("cuda", "fp16"), ("cuda", "bf16"), ("cpu", "fp32")):
        with pipeline.matmul_precision(device, precision):
            assert torch.backends.cuda.matmul.allow_tf32 == before
    cpu = encoder(tiny_models.bert)
    cuda = encoder(tiny_models.bert, device="cpu", precision="fp32")
    cuda._device = "cuda"  # identity only: no GPU needed
    assert cpu.parameters()["precision"] == "fp32" and cuda.parameters()["precision"] == "tf32"
    assert cuda.identity() != cpu.identity()
    assert pipeline.encoder_precision("auto", "cuda") == "fp16" and pipeline.encoder_precision("auto", "cpu") == "fp32"
    on_gpu = encoder(tiny_models.bert, device="cpu")
    on_gpu._device = "cuda"  # precision only: no GPU needed
    assert on_gpu.precision == "fp16"  # the encoders' autocast (sequence-to-sequence models take bf16)


# --- ART and REALM on the pipeline ----------------------------------------------------------------


def art_encoder(model_dir: Path, **kwargs):
    import torch
    from transformers import MegatronBertConfig, MegatronBertModel

    from harness_builtins.dense.art import ArtEncoder
    from harness_builtins.dense.checkpoints import load_bert_tokenizer

    config = MegatronBertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=512)
    torch.manual_seed(5)
    towers = [MegatronBertModel(config, add_pooling_layer=False).eval() for _ in range(2)]
    return ArtEncoder(*towers, load_bert_tokenizer(model_dir), device="cpu", **kwargs)


def realm_encoder(model_dir: Path, **kwargs):
    import torch

    from harness_builtins.dense.checkpoints import load_bert_tokenizer
    from harness_builtins.dense.realm import REALM_CONFIG_DEFAULTS, RealmEncoder, RealmEmbedderModel, bert_config_from_realm

    config = {**REALM_CONFIG_DEFAULTS, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 64}
    torch.manual_seed(6)
    model = RealmEmbedderModel(bert_config_from_realm(config), projection_size=16).eval()
    return RealmEncoder(model, model, load_bert_tokenizer(model_dir), device="cpu", **kwargs)


def old_art_loop(encoder, model, inputs, batch_size):
    """ArtEncoder._encode as it was before the pipeline (sorted batches, fp32)."""
    import torch

    out = np.zeros((len(inputs), encoder.dim), dtype=np.float32)
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = max(len(inputs[i]) for i in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            ids[r, : len(inputs[i])] = torch.tensor(inputs[i])
            mask[r, : len(inputs[i])] = 1
        with torch.inference_mode():
            hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        out[rows] = hidden[:, 0].float().numpy()
    return out


def old_realm_loop(model, inputs, batch_size):
    """RealmEncoder._encode as it was before the pipeline."""
    import torch

    out = np.zeros((len(inputs), model.dim), dtype=np.float32)
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i][0]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = max(len(inputs[i][0]) for i in rows)
        ids, segs, mask = (torch.zeros((len(rows), width), dtype=torch.long) for _ in range(3))
        for r, i in enumerate(rows):
            tokens, segments = inputs[i]
            ids[r, : len(tokens)] = torch.tensor(tokens)
            segs[r, : len(tokens)] = torch.tensor(segments)
            mask[r, : len(tokens)] = 1
        with torch.inference_mode():
            out[rows] = model(ids, mask, segs).float().numpy()
    return out


def test_art_on_the_pipeline_equals_its_old_loop_and_records_precision(tiny_models):
    enc = art_encoder(tiny_models.bert, batch_size=3, max_length=48)
    assert enc.precision == "fp32" and art_encoder(tiny_models.bert).batch_size == 32
    got = enc.encode_passages(PASSAGES)
    np.testing.assert_array_equal(got, old_art_loop(enc, enc.passage_model, enc.passage_inputs(PASSAGES), 3))
    np.testing.assert_array_equal(enc.encode_queries(QUESTIONS),
                                  old_art_loop(enc, enc.query_model, enc.query_inputs(QUESTIONS), 3))
    assert enc.encode_queries([]).shape == (0, 32) and encoding_threads() == []
    bf16 = art_encoder(tiny_models.bert, batch_size=3, max_length=48, precision="bf16")
    assert bf16.identity() != enc.identity()
    assert enc.parameters() == {"encoder": enc.identity(), "precision": "fp32"}
    assert bf16.parameters()["precision"] == "bf16"
    approx = bf16.encode_passages(PASSAGES)
    assert not np.array_equal(approx, got)  # autocast ran
    np.testing.assert_allclose(approx, got, atol=0.1)


def test_realm_on_the_pipeline_equals_its_old_loop_and_records_precision(tiny_models):
    enc = realm_encoder(tiny_models.bert, batch_size=4)
    got = enc.encode_passages(PASSAGES)
    np.testing.assert_array_equal(got, old_realm_loop(enc.passage_model, enc.passage_inputs(PASSAGES), 4))
    np.testing.assert_array_equal(enc.encode_queries(QUESTIONS),
                                  old_realm_loop(enc.query_model, enc.query_inputs(QUESTIONS), 4))
    assert enc.encode_passages([]).shape == (0, 16)
    bf16 = realm_encoder(tiny_models.bert, batch_size=4, precision="bf16")
    assert bf16.identity() != enc.identity()
    assert (enc.parameters()["precision"], bf16.parameters()["precision"]) == ("fp32", "bf16")
    assert not np.array_equal(bf16.encode_passages(PASSAGES), got)
    with pytest.raises(Exception, match="fp16 needs a GPU"):
        realm_encoder(tiny_models.bert, precision="fp16")


# --- the GPU benchmark's CPU parts -----------------------------------------------------------------


def test_gpu_benchmark_builds_its_vocabulary_tokenizer_and_passages(tmp_path):
    sys.path.insert(0, str(TESTS / "benchmarks"))
    try:
        import gpu_encode
    finally:
        sys.path.pop(0)
    vocab = gpu_encode.build_vocab(2000, seed=1)
    assert len(vocab) == len(set(vocab)) == 2000 and vocab[:5] == list(gpu_encode.SPECIAL_TOKENS)
    tokenizer = gpu_encode.save_tokenizer(tmp_path / "tok", vocab)
    passages = gpu_encode.synthetic_passages(vocab, 200, seq_tokens=60, seed=2)
    assert passages == gpu_encode.synthetic_passages(vocab, 200, seq_tokens=60, seed=2)
    encoded = tokenizer([t for t, _ in passages], [x for _, x in passages])["input_ids"]
    lengths = np.array([len(ids) for ids in encoded])
    assert 50 < lengths.mean() < 70 and lengths.std() > 3
    assert tokenizer.unk_token_id not in {i for ids in encoded for i in ids}
    gpu_encode.build_model(tmp_path / "tok", vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=64)
    enc = TransformersEncoder(str(tmp_path / "tok"), device="cpu", batch_size=16)
    assert enc.encode_passages(passages[:20]).shape == (20, 32)
    assert gpu_encode.bench_encode.__defaults__[:4] == (20000, (128, 512), ("fp16", "bf16"), 140)

"""Dense encoders: loading (hub-id code path on local dirs), pooling, input formats, batching."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from harness.errors import HarnessError

PASSAGES = [
    ("Paris", "Paris is the capital and most populous city of France."),
    ("", "A passage without a title is encoded as its text alone."),
    ("Eiffel Tower", "The tower is 330 metres tall, about the same height as an 81-storey building, " * 3),
    ("Zebra", "Zebras are African equines."),
    ("Mount Everest", "Earth's highest mountain above sea level, in the Mahalangur Himal."),
    ("Short", "x"),
    ("Ottawa", "Ottawa is the capital city of Canada, on the south bank of the Ottawa River."),
]
QUESTIONS = ["what is the capital of france?", "how tall is the eiffel tower", "who?"]


def direct(model_dir, texts, pairs=None, *, model_class=None, token_types_zero=True, max_length=256):
    """Last hidden state, pooler output and attention mask computed straight with transformers,
    one input at a time (no padding)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = (model_class or AutoModel).from_pretrained(model_dir).eval()
    out = []
    for i, text in enumerate(texts):
        if pairs is not None and pairs[i]:
            enc = tokenizer(pairs[i], text, truncation=True, max_length=max_length, return_tensors="pt")
        else:
            enc = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
        if token_types_zero and "token_type_ids" in enc:
            enc["token_type_ids"] = torch.zeros_like(enc["token_type_ids"])
        with torch.no_grad():
            result = model(**enc, return_dict=True, output_hidden_states=True)
        hidden = result.hidden_states[-1]  # = last_hidden_state; DPR outputs have only this
        out.append((hidden[0].numpy(), result.pooler_output[0].numpy(), enc))
    return out


def encoder(model_dir, **kwargs):
    from harness_builtins.dense.encoders import TransformersEncoder

    kwargs.setdefault("device", "cpu")
    return TransformersEncoder(str(model_dir), **kwargs)


def test_cls_pooling_is_the_cls_hidden_state_with_dpr_pairs_and_zero_token_types(tiny_models):
    enc = encoder(tiny_models.bert, pooling="cls", format="dpr")
    got = enc.encode_passages(PASSAGES)
    ref = direct(tiny_models.bert, [x for _, x in PASSAGES], [t for t, _ in PASSAGES])
    expected = np.stack([hidden[0] for hidden, _, _ in ref])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    # not the tanh pooler, and the text segment's token types really are 0, not 1
    assert not np.allclose(got[0], ref[0][1], atol=1e-3)
    ones = direct(tiny_models.bert, [PASSAGES[0][1]], [PASSAGES[0][0]], token_types_zero=False)
    assert not np.allclose(got[0], ones[0][0][0], atol=1e-3)


def test_dpr_passage_input_is_cls_title_sep_text_sep(tiny_models):
    enc = encoder(tiny_models.bert, format="dpr")
    features = enc.tokenize_passages([("Paris", "capital of france"), ("", "no title here")])
    tokens = [enc.tokenizer.convert_ids_to_tokens(f["input_ids"]) for f in features]
    assert tokens[0] == ["[CLS]", "paris", "[SEP]", "capital", "of", "france", "[SEP]"]
    assert tokens[1] == ["[CLS]", "no", "title", "here", "[SEP]"]
    assert all(set(f["token_type_ids"]) == {0} for f in features)
    one_segment = encoder(tiny_models.bert, format="title_text").tokenize_passages([("Paris", "capital of france")])
    assert enc.tokenizer.convert_ids_to_tokens(one_segment[0]["input_ids"]) == [
        "[CLS]", "paris", "capital", "of", "france", "[SEP]"
    ]


def test_mean_pooling_averages_non_pad_tokens(tiny_models):
    enc = encoder(tiny_models.bert, pooling="mean", format="title_text", max_length=512, batch_size=4)
    got = enc.encode_passages(PASSAGES)
    ref = direct(tiny_models.bert, [f"{t} {x}" for t, x in PASSAGES], max_length=512)
    expected = np.stack([hidden.mean(axis=0) for hidden, _, _ in ref])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    # padding must not leak into the mean: batches mix lengths 4..80 tokens here
    assert max(len(e["input_ids"][0]) for _, _, e in ref) > 3 * min(len(e["input_ids"][0]) for _, _, e in ref)


def test_pooler_pooling_is_the_models_pooler_output(tiny_models):
    enc = encoder(tiny_models.bert, pooling="pooler", format="text")
    got = enc.encode_queries(QUESTIONS)
    ref = direct(tiny_models.bert, QUESTIONS)
    np.testing.assert_allclose(got, np.stack([pooled for _, pooled, _ in ref]), atol=1e-5)
    assert np.all(np.abs(got) <= 1.0)  # tanh


def test_pooler_pooling_needs_pooler_weights(tiny_models, tmp_path):
    from helpers.dense_models import tiny_bert

    no_pooler = tiny_bert(tmp_path / "no-pooler", pooler=False)
    with pytest.raises(HarnessError, match="pooler"):
        encoder(no_pooler, pooling="pooler").encode_queries(["q"])
    assert encoder(no_pooler, pooling="cls").encode_queries(["q"]).shape == (1, 32)


def test_dpr_context_directory_loads_as_a_context_encoder(tiny_models):
    """AutoModel maps every DPR config to DPRQuestionEncoder (ctx weights unused, random model);
    the loader must pick the class from the config's architectures."""
    from transformers import DPRContextEncoder, DPRQuestionEncoder

    ctx = encoder(tiny_models.dpr_ctx, pooling="cls", format="dpr")
    assert type(ctx.model).__name__ == "DPRContextEncoder"
    ref = direct(tiny_models.dpr_ctx, [x for _, x in PASSAGES], [t for t, _ in PASSAGES], model_class=DPRContextEncoder)
    got = ctx.encode_passages(PASSAGES)
    np.testing.assert_allclose(got, np.stack([hidden[0] for hidden, _, _ in ref]), atol=1e-5)
    np.testing.assert_allclose(got, np.stack([pooled for _, pooled, _ in ref]), atol=1e-5)  # DPR's pooler = CLS
    question = encoder(tiny_models.dpr_question, pooling="cls")
    assert type(question.model).__name__ == "DPRQuestionEncoder"
    ref_q = direct(tiny_models.dpr_question, QUESTIONS, model_class=DPRQuestionEncoder)
    np.testing.assert_allclose(question.encode_queries(QUESTIONS), np.stack([h[0] for h, _, _ in ref_q]), atol=1e-5)


def test_a_checkpoint_missing_weights_is_refused(tiny_models, tmp_path):
    """A DPR config naming no encoder class, loaded for the wrong role, would leave weights random."""
    bad = tmp_path / "ctx-as-question"
    shutil.copytree(tiny_models.dpr_ctx, bad)
    config = json.loads((bad / "config.json").read_text())
    config["architectures"] = None
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(HarnessError, match="random weights"):
        encoder(bad, role="query").encode_queries(["q"])
    assert encoder(bad, role="passage").encode_queries(["q"]).shape == (1, 32)


def test_length_sorted_batches_return_input_order_and_equal_unsorted_encoding(tiny_models):
    enc = encoder(tiny_models.bert, pooling="mean", format="title_text", batch_size=2)
    lengths: list[int] = []
    enc.on_batch = lambda rows, length: lengths.append(length)
    sorted_vectors = enc.encode_passages(PASSAGES)
    assert lengths == sorted(lengths, reverse=True) and len(lengths) == 4
    features = enc.tokenize_passages(PASSAGES)
    lengths.clear()
    unsorted_vectors = enc.encode_features(features, sort=False)
    assert lengths != sorted(lengths, reverse=True)  # the input really was out of length order
    np.testing.assert_allclose(sorted_vectors, unsorted_vectors, atol=1e-5)
    one_by_one = np.concatenate([enc.encode_passages([p]) for p in PASSAGES])
    np.testing.assert_allclose(sorted_vectors, one_by_one, atol=1e-5)


def test_max_length_truncates(tiny_models):
    long = [("Title", "word " * 600)]
    enc = encoder(tiny_models.bert, format="dpr", max_length=16)
    assert len(enc.tokenize_passages(long)[0]["input_ids"]) == 16
    ref = direct(tiny_models.bert, [long[0][1]], [long[0][0]], max_length=16)
    np.testing.assert_allclose(enc.encode_passages(long)[0], ref[0][0][0], atol=1e-5)
    with pytest.raises(HarnessError):
        encoder(tiny_models.bert, max_length=0)


def test_sentence_transformers_encoder_uses_the_models_own_encode(tiny_models):
    from sentence_transformers import SentenceTransformer

    from harness_builtins.dense.encoders import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(str(tiny_models.st), device="cpu", format="title_text")
    model = SentenceTransformer(str(tiny_models.st), device="cpu")
    got = enc.encode_passages(PASSAGES)
    np.testing.assert_allclose(got, model.encode([f"{t} {x}" for t, x in PASSAGES]), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # its Normalize module
    np.testing.assert_allclose(enc.encode_queries(QUESTIONS), model.encode(QUESTIONS), atol=1e-5)
    text_only = SentenceTransformerEncoder(str(tiny_models.st), device="cpu", format="text")
    assert not np.allclose(text_only.encode_passages(PASSAGES[:1]), got[:1], atol=1e-4)
    with pytest.raises(HarnessError):
        SentenceTransformerEncoder(str(tiny_models.st), format="title-sep-text")  # dpr, title_text and text are the formats


def test_identity_follows_weights_and_settings_not_paths(tiny_models, tmp_path):
    from harness_builtins.dense.encoders import ModelRef

    base = encoder(tiny_models.bert).identity()
    copy = tmp_path / "copy-of-bert"
    shutil.copytree(tiny_models.bert, copy)
    (copy / "README.md").write_text("a model card does not change the vectors")
    assert encoder(copy).identity() == base
    assert encoder(tiny_models.bert_other).identity() != base  # other weights
    assert encoder(tiny_models.bert, pooling="mean").identity() != base
    assert encoder(tiny_models.bert, format="title_text").identity() != base
    assert encoder(tiny_models.bert, max_length=128).identity() != base
    assert encoder(tiny_models.bert, batch_size=7).identity() == base
    hub = ModelRef("facebook/dpr-ctx_encoder-single-nq-base")
    assert hub.identity() == "hub:facebook/dpr-ctx_encoder-single-nq-base@main"
    assert ModelRef(hub.name_or_path, "abc123").identity() != hub.identity()
    assert ModelRef(str(copy)).describe().startswith("copy-of-bert (sha256:")


def test_dual_encoder_parameters_name_both_sides(tiny_models):
    from harness_builtins.dense.encoders import DualEncoder, side_parameters

    dual = DualEncoder(encoder(tiny_models.dpr_question), encoder(tiny_models.dpr_ctx, max_length=128))
    params = side_parameters(dual.query, dual.passage)
    assert params["query_model"].startswith("dpr-question (") and params["passage_model"].startswith("dpr-ctx (")
    assert params["pooling"] == "cls" and params["query_max_length"] == 256 and params["passage_max_length"] == 128
    assert dual.identity() == dual.passage.identity()

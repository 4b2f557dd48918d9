"""ART: converted Megatron checkpoints against a plain-torch transcription of ART's encoder;
the `art` and `realm` presets loading local directories."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError, InputFileError
from harness_builtins.dense.art import ArtEncoder
from harness_builtins.dense.convert import convert_art, read_torch_checkpoint
from helpers.realm_art_checkpoints import (  # noqa: F401  (fixtures are used by name)
    HEADS,
    HIDDEN,
    LAYERS,
    PADDED_VOCAB,
    PASSAGES,
    QUESTIONS,
    VOCAB,
    _cast,
    art_checkpoint,
    art_converted,
    art_passage_ids,
    art_query_ids,
    assert_one_line_error,
    megatron_args,
    megatron_reference_embed,
    realm_dirs,
    reference_tokenizer,
    save_megatron_dir,
)

# ----------------------------------------------------------------------------------------------
# ART tests
# ----------------------------------------------------------------------------------------------


def test_art_conversion_matches_megatron_reference(art_converted):
    tok = reference_tokenizer()
    encoder = ArtEncoder.from_pretrained(art_converted["out"], batch_size=2, device="cpu")
    model = art_converted["ckpt"]["model"]
    got_q = encoder.encode_queries(QUESTIONS)
    got_p = encoder.encode_passages(PASSAGES)
    assert got_q.dtype == np.float32 and got_q.shape == (len(QUESTIONS), HIDDEN)
    want_q = megatron_reference_embed(_cast(model["query_model"], torch.float64), art_query_ids(tok, QUESTIONS), version=1.0)
    want_p = megatron_reference_embed(_cast(model["context_model"], torch.float64), art_passage_ids(tok, PASSAGES), version=1.0)
    np.testing.assert_allclose(got_q, want_q.numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(got_p, want_p.numpy(), atol=1e-5, rtol=0)
    # towers are not swapped: the query tower on passages differs from the context tower
    swapped = megatron_reference_embed(_cast(model["query_model"], torch.float64), art_passage_ids(tok, PASSAGES), version=1.0)
    assert not np.allclose(got_p, swapped.numpy(), atol=1e-3)
    assert len(encoder.passage_inputs(PASSAGES[3:4])[0]) == 256


@pytest.mark.parametrize(
    ("version", "nested", "args", "gelu"),
    [
        (0, False, None, "erf"),  # Megatron checkpoint_version 0: [3, np, hn]
        (2.0, True, None, "erf"),  # upstream >= 2.0: [np, 3, hn]; full ART training nesting
        (1.0, False, megatron_args(bias_gelu_fusion=True), "tanh"),
    ],
)
def test_art_qkv_layouts_and_variants(tmp_path, version, nested, args, gelu):
    tok = reference_tokenizer()
    ckpt = art_checkpoint(9, version=version, nested=nested, dtype=torch.float32, args=args)
    file = tmp_path / "model_optim_rng.pt"
    torch.save(ckpt, file)
    out = convert_art(file, tmp_path / "out", vocab=VOCAB.parent, progress=False)
    encoder = ArtEncoder.from_pretrained(out, device="cpu")
    model = ckpt["model"]["retriever/biencoder_model"] if nested else ckpt["model"]
    want_q = megatron_reference_embed(_cast(model["query_model"], torch.float64), art_query_ids(tok, QUESTIONS), version=version, gelu=gelu)
    want_p = megatron_reference_embed(_cast(model["context_model"], torch.float64), art_passage_ids(tok, PASSAGES), version=version, gelu=gelu)
    np.testing.assert_allclose(encoder.encode_queries(QUESTIONS), want_q.numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(encoder.encode_passages(PASSAGES), want_p.numpy(), atol=1e-5, rtol=0)


def test_art_conversion_output_is_complete_and_reloadable(art_converted):
    from transformers import AutoTokenizer, MegatronBertModel

    out = art_converted["out"]
    meta = json.loads((out / "art_config.json").read_text())
    assert meta["format"] == "harness.art-dual-encoder" and meta["max_length"] == 256
    assert meta["source"]["qkv_layout"] == "np,hn,3" and meta["source"]["checkpoint_version"] == 1.0
    assert meta["source"]["iteration"] == 1234
    for sub in ("query_encoder", "passage_encoder"):
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
            assert (out / sub / name).is_file(), (sub, name)
        model = MegatronBertModel.from_pretrained(str(out / sub), add_pooling_layer=False)
        assert model.config.vocab_size == PADDED_VOCAB
        assert model.config.hidden_act == "gelu" and model.config.layer_norm_eps == 1e-5
        assert (model.config.num_hidden_layers, model.config.num_attention_heads) == (LAYERS, HEADS)
        tok = AutoTokenizer.from_pretrained(str(out / sub))
        assert tok("Hello World")["input_ids"] == [101, 7592, 2088, 102]
    root = art_converted["root"]
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no temp dirs left
    with pytest.raises(HarnessError, match="already exists"):
        convert_art(art_converted["src"], out, vocab=VOCAB, progress=False)


def test_art_identity(art_converted, tmp_path):
    a = ArtEncoder.from_pretrained(art_converted["out"], device="cpu")
    b = ArtEncoder.from_pretrained(art_converted["out"], device="cpu")
    assert a.identity() == b.identity()
    assert a.identity().startswith("harness_builtins.dense.art.ArtEncoder@")
    before = b.identity()
    with torch.no_grad():
        b.passage_model.encoder.ln.bias[0] += 1e-3
    assert b.identity() != before
    other = convert_art(
        save_megatron_dir(tmp_path / "other", art_checkpoint(6)), tmp_path / "other_out", vocab=VOCAB, progress=False
    )
    assert ArtEncoder.from_pretrained(other, device="cpu").identity() != a.identity()
    assert ArtEncoder.from_pretrained(art_converted["out"], device="cpu", max_length=128).identity() != a.identity()


def test_art_checkpoint_objects_are_never_imported(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    ckpt = art_checkpoint(7)
    ckpt["optimizer"]["evil"] = Evil()
    torch.save(ckpt, tmp_path / "model_optim_rng.pt")
    loaded = read_torch_checkpoint(tmp_path / "model_optim_rng.pt")
    assert not marker.exists()
    assert isinstance(loaded["args"], argparse.Namespace) and loaded["args"].num_layers == LAYERS
    assert "not loaded" in repr(loaded["optimizer"]["loss_scaler"])
    out = convert_art(tmp_path / "model_optim_rng.pt", tmp_path / "out", progress=False)  # default vocab
    assert not marker.exists()
    assert (out / "query_encoder" / "vocab.txt").read_bytes() == VOCAB.read_bytes()


def _save(tmp_path: Path, obj, name="model_optim_rng.pt") -> Path:
    path = tmp_path / name
    torch.save(obj, path)
    return path


def test_art_wrong_files(tmp_path):
    out = tmp_path / "out"

    text = tmp_path / "model_optim_rng.pt"
    text.write_text("hello\n")
    with pytest.raises(InputFileError) as err:
        convert_art(text, out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, str(text), "not a readable PyTorch checkpoint")

    with pytest.raises(InputFileError) as err:
        convert_art(tmp_path / "missing.pt", out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "missing.pt")

    with pytest.raises(InputFileError) as err:
        convert_art(_save(tmp_path, {"weights": torch.zeros(2)}), out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "model_optim_rng.pt", "missing key 'model'")

    ckpt = art_checkpoint(1)
    del ckpt["model"]["context_model"]
    with pytest.raises(InputFileError) as err:
        convert_art(_save(tmp_path, ckpt), out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "missing key 'model.context_model'")

    ckpt = art_checkpoint(1)
    del ckpt["model"]["context_model"]["language_model"]["encoder"]["layers.1.mlp.dense_4h_to_h.weight"]
    with pytest.raises(InputFileError) as err:
        convert_art(_save(tmp_path, ckpt), out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "missing key 'model.context_model.language_model.encoder.layers.1.mlp.dense_4h_to_h.weight'")

    ckpt = art_checkpoint(1)
    ckpt["model"]["query_model"]["language_model"]["encoder"]["layers.0.extra.weight"] = torch.zeros(1)
    with pytest.raises(InputFileError) as err:
        convert_art(_save(tmp_path, ckpt), out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "unexpected key 'model.query_model.language_model.encoder.layers.0.extra.weight'")

    ckpt = art_checkpoint(1, args=megatron_args(apply_residual_connection_post_layernorm=True))
    with pytest.raises(InputFileError) as err:
        convert_art(_save(tmp_path, ckpt), out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "apply_residual_connection_post_layernorm")

    good = _save(tmp_path, art_checkpoint(1))
    with pytest.raises(InputFileError) as err:
        convert_art(good, out, vocab=tmp_path / "no-vocab.txt", progress=False)
    assert_one_line_error(err.value, "no-vocab.txt")

    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(InputFileError) as err:
        convert_art(empty, out, vocab=VOCAB, progress=False)
    assert_one_line_error(err.value, "model_optim_rng.pt")

    with pytest.raises(InputFileError) as err:
        ArtEncoder.from_pretrained(empty)
    assert_one_line_error(err.value, "query_encoder")

    assert not out.exists()

    # a converted folder that lost a weight is refused, not silently re-initialised
    from safetensors.torch import load_file, save_file

    converted = convert_art(good, tmp_path / "converted", vocab=VOCAB, progress=False)
    weights = converted / "passage_encoder" / "model.safetensors"
    state = load_file(str(weights))
    del state["encoder.ln.bias"]
    save_file(state, str(weights), metadata={"format": "pt"})
    with pytest.raises(InputFileError) as err:
        ArtEncoder.from_pretrained(converted)
    assert_one_line_error(err.value, "model.safetensors", "missing key 'encoder.ln.bias'")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]




# ----------------------------------------------------------------------------------------------
# The `realm` and `art` presets load these directories through the same loader as hub ids
# ----------------------------------------------------------------------------------------------


def test_art_and_realm_presets_load_local_directories(art_converted, realm_dirs):
    from harness.testing import check_retriever

    art = check_retriever("art", options={"model": str(art_converted["out"])}, k=3)
    assert art.parameters and len(art.rankings) == 4
    realm = check_retriever(
        "realm",
        options={"query_model": str(realm_dirs["orqa"]), "passage_model": str(realm_dirs["pretrained"])},
        k=3,
    )
    assert realm.parameters and len(realm.rankings) == 4

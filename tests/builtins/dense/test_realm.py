"""REALM: converted and loaded embedders against a plain-torch transcription of RealmEmbedder."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from harness.errors import InputFileError
from harness_builtins.dense.convert import convert_realm
from harness_builtins.dense.realm import RealmEncoder, load_realm
from helpers.realm_art_checkpoints import (  # noqa: F401  (fixtures are used by name)
    PASSAGES,
    PROJ,
    QUESTIONS,
    REALM_CONFIG,
    assert_one_line_error,
    orqa_block_inputs,
    orqa_query_inputs,
    realm_dirs,
    realm_embedder_state,
    realm_reference_embed,
    reference_tokenizer,
    write_realm_dir,
)

# ----------------------------------------------------------------------------------------------
# REALM tests
# ----------------------------------------------------------------------------------------------


def test_realm_matches_reference_forward(realm_dirs):
    tok = reference_tokenizer()
    encoder = RealmEncoder.from_pretrained(realm_dirs["orqa"], batch_size=2, device="cpu")
    assert encoder.query_model is encoder.passage_model  # one embedder.* serves both sides
    got_q = encoder.encode_queries(QUESTIONS)
    got_p = encoder.encode_passages(PASSAGES)
    assert got_q.dtype == np.float32 and got_q.shape == (len(QUESTIONS), PROJ)
    assert got_p.shape == (len(PASSAGES), PROJ)

    want_q = realm_reference_embed(realm_dirs["orqa_state"], "embedder.", *orqa_query_inputs(tok, QUESTIONS))
    want_p = realm_reference_embed(realm_dirs["orqa_state"], "embedder.", *orqa_block_inputs(tok, PASSAGES))
    np.testing.assert_allclose(got_q, want_q.numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(got_p, want_p.numpy(), atol=1e-5, rtol=0)
    # the long passage was cut to 288 tokens with the title kept
    ids, segments = encoder.passage_inputs(PASSAGES[3:4])[0]
    assert len(ids) == 288 and segments[:2] == [0, 0] and segments[-1] == 1


def test_realm_passage_embedder_from_another_checkpoint(realm_dirs):
    tok = reference_tokenizer()
    encoder = RealmEncoder.from_pretrained(realm_dirs["orqa"], passage_path=realm_dirs["pretrained"], device="cpu")
    assert encoder.query_model is not encoder.passage_model
    got_p = encoder.encode_passages(PASSAGES[:3])
    want_p = realm_reference_embed(realm_dirs["pretrained_state"], "", *orqa_block_inputs(tok, PASSAGES[:3]))
    np.testing.assert_allclose(got_p, want_p.numpy(), atol=1e-5, rtol=0)
    got_q = encoder.encode_queries(QUESTIONS[:1])
    want_q = realm_reference_embed(realm_dirs["orqa_state"], "embedder.", *orqa_query_inputs(tok, QUESTIONS[:1]))
    np.testing.assert_allclose(got_q, want_q.numpy(), atol=1e-5, rtol=0)


def test_load_realm_module(realm_dirs):
    model = load_realm(realm_dirs["pretrained"] / "model.safetensors")
    assert model.dim == PROJ
    assert model.bert.config.hidden_act == "gelu_new"
    assert model.layer_norm.eps == 1e-12
    assert load_realm(realm_dirs["pretrained"], projection_eps=1e-3).layer_norm.eps == 1e-3


def test_convert_realm_is_slim_complete_and_equivalent(realm_dirs, tmp_path):
    out = convert_realm(realm_dirs["orqa"], tmp_path / "realm", passage_src=realm_dirs["pretrained"], progress=False)
    for sub in ("query_encoder", "passage_encoder"):
        for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
            assert (out / sub / name).is_file(), (sub, name)
    meta = json.loads((out / "realm_encoder.json").read_text())
    assert meta["source"]["query_encoder"]["prefix"] == "embedder."
    assert meta["source"]["passage_encoder"]["prefix"] == ""
    from safetensors import safe_open

    with safe_open(str(out / "query_encoder" / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "cls.dense.weight" in keys and "realm.pooler.dense.weight" in keys
    assert not any(k.startswith(("block_emb", "reader", "cls.predictions")) for k in keys)

    direct = RealmEncoder.from_pretrained(realm_dirs["orqa"], passage_path=realm_dirs["pretrained"], device="cpu")
    converted = RealmEncoder.from_pretrained(out, device="cpu")
    np.testing.assert_array_equal(converted.encode_queries(QUESTIONS), direct.encode_queries(QUESTIONS))
    np.testing.assert_array_equal(converted.encode_passages(PASSAGES), direct.encode_passages(PASSAGES))
    assert converted.identity() == direct.identity()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left


def test_realm_identity(realm_dirs):
    a = RealmEncoder.from_pretrained(realm_dirs["orqa"], device="cpu")
    b = RealmEncoder.from_pretrained(realm_dirs["orqa"], device="cpu")
    assert a.identity() == b.identity()
    assert a.identity().startswith("harness_builtins.dense.realm.RealmEncoder@")
    other = RealmEncoder.from_pretrained(realm_dirs["orqa"], passage_path=realm_dirs["pretrained"], device="cpu")
    assert other.identity() != a.identity()
    before = b.identity()
    with torch.no_grad():
        b.query_model.projection.weight[0, 0] += 1e-3
    assert b.identity() != before


def test_realm_wrong_files(realm_dirs, tmp_path):
    with pytest.raises(InputFileError) as err:
        load_realm(tmp_path / "nowhere")
    assert_one_line_error(err.value, "nowhere")

    no_config = tmp_path / "no_config"
    no_config.mkdir()
    torch.save({"x": torch.zeros(1)}, no_config / "pytorch_model.bin")
    with pytest.raises(InputFileError) as err:
        load_realm(no_config)
    assert_one_line_error(err.value, "config.json")

    gen = torch.Generator().manual_seed(3)
    reader = {k: v for k, v in realm_embedder_state(gen, "").items() if not k.startswith("cls.dense") and not k.startswith("cls.LayerNorm")}
    reader_dir = write_realm_dir(tmp_path / "reader", reader)
    with pytest.raises(InputFileError) as err:
        load_realm(reader_dir)
    assert_one_line_error(err.value, "pytorch_model.bin", "'cls.dense.weight'")

    partial = dict(realm_dirs["pretrained_state"])
    del partial["realm.encoder.layer.1.output.dense.weight"]
    partial_dir = write_realm_dir(tmp_path / "partial", partial)
    with pytest.raises(InputFileError) as err:
        load_realm(partial_dir)
    assert_one_line_error(err.value, "missing key 'realm.encoder.layer.1.output.dense.weight'")

    extra = dict(realm_dirs["pretrained_state"])
    extra["realm.encoder.layer.0.surprise.weight"] = torch.zeros(2)
    extra_dir = write_realm_dir(tmp_path / "extra", extra)
    with pytest.raises(InputFileError) as err:
        load_realm(extra_dir)
    assert_one_line_error(err.value, "unexpected key 'realm.encoder.layer.0.surprise.weight'")

    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "config.json").write_text(json.dumps(REALM_CONFIG))
    (garbage / "pytorch_model.bin").write_text("not a checkpoint\n")
    with pytest.raises(InputFileError) as err:
        load_realm(garbage)
    assert_one_line_error(err.value, "pytorch_model.bin")

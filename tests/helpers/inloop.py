"""The in-loop training tests' world: passages, questions, a hashing encoder, a tiny T5 and an index built from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.api import InMemoryCorpus, Passage

torch = pytest.importorskip("torch")


DIM = 6


PASSAGES = [Passage(id=f"p{i:02d}", title=f"T{i}", text=f"passage {i} " + "x" * (i % 7)) for i in range(45)]


class HashEncoder:
    """Deterministic pseudo-random passage vectors (from the passage text), with a few exact
    duplicates so that ties occur."""

    def identity(self) -> str:
        return "hash-encoder-6"

    def encode_queries(self, queries):
        raise NotImplementedError

    def encode_passages(self, passages):
        out = []
        for title, text in passages:
            number = int(title[1:])
            seed = number % 40  # passages 40..44 repeat the vectors of 0..4: exact ties
            out.append(np.random.default_rng(seed).standard_normal(DIM).astype(np.float16).astype(np.float32))
        return np.stack(out)


def queries() -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(7).standard_normal((10, DIM)).astype(np.float32))


def make_index(root: Path, shard_size: int = 8, flat: bool = False):
    """The in-loop index on CPU; with ``flat`` its slice is the GPU's exact flat index, run on a
    CPU device (the same code a GPU runs, products in float32)."""
    from harness_builtins.training.inloop import InLoopIndex

    corpus = InMemoryCorpus("hash45", PASSAGES)
    index = InLoopIndex(corpus, root=root, format="title_text", sep="[SEP]", shard_size=shard_size, device="cpu")
    if flat:
        index._flat_devices = lambda: ["cpu"]
    return index


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory) -> Path:
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("t5"))


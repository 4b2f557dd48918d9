"""Model-free dense parts: a hashing encoder, a corpus read by position, and embedding caches built from a table of vectors."""

from __future__ import annotations

import hashlib

import numpy as np

from harness_builtins.dense.embeddings import embed_corpus
from helpers.dense_models import corpus_of


class HashEncoder:
    """Deterministic vectors from a hash of each passage; records what it was asked to encode."""

    def __init__(self, dim: int = 8, tag: str = "hash-v1"):
        self.dim, self.tag = dim, tag
        self.calls: list[list[str]] = []

    def identity(self) -> str:
        return f"{self.tag}/{self.dim}"

    @staticmethod
    def _vector(text: str, dim: int) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)

    def encode_queries(self, queries):
        return np.stack([self._vector(q, self.dim) for q in queries]) if queries else np.zeros((0, self.dim), np.float32)

    def encode_passages(self, passages):
        self.calls.append([text for _, text in passages])
        return np.stack([self._vector(f"{t}|{x}", self.dim) for t, x in passages])


def passages(n: int):
    return [(f"id-{i}", f"Title {i}", f"text of passage {i}") for i in range(n)]


class PositionalCorpus:
    """A corpus with positional access (``passage_at``) that records the rows read; iterating it
    is an error."""

    def __init__(self, passages, name: str = "tiny"):
        self.name = name
        self._inner = corpus_of(passages, name)
        self._passages = list(self._inner)
        self.rows: list[int] = []

    @property
    def fingerprint(self) -> str:
        return self._inner.fingerprint

    def __len__(self) -> int:
        return len(self._passages)

    def __iter__(self):
        raise AssertionError("a corpus with positional access was iterated")

    def get(self, passage_id):
        return self._inner.get(passage_id)

    def passage_at(self, row: int):
        self.rows.append(row)
        return self._passages[row]



class TableEncoder:
    """Returns stored vectors: passage ``i`` (text ``"i"``) gets row ``i`` of the table."""

    def __init__(self, table: np.ndarray, tag: str):
        self.table, self.tag = table, tag

    def identity(self):
        return self.tag

    def encode_queries(self, queries):
        raise NotImplementedError

    def encode_passages(self, passages):
        return self.table[[int(text) for _, text in passages]]


def cache_of(tmp_path, vectors: np.ndarray, tag: str, shard_size: int = 97):
    corpus = corpus_of([(f"p{i}", "", str(i)) for i in range(len(vectors))], name=tag)
    return embed_corpus(TableEncoder(vectors, tag), corpus, tmp_path, shard_size=shard_size, progress=False)

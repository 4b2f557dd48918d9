"""A dense encoder for the dense engine: hashed bags of words (no model, no training).

Each lowercased word is hashed (CRC-32) into one of ``dim`` buckets, with a sign from another bit
of the same hash, and the vector is L2-normalised, so the inner product of two vectors is the
cosine of their signed word-count vectors. Questions are encoded from their text, passages from
``title + " " + text``. It is deterministic and needs nothing but numpy, so the whole dense engine
(embedding cache, faiss index, hybrid, matrix) can be tried with it offline.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+")


class HashingEncoder:
    """Implements :class:`harness.api.Encoder`: ``identity``, ``encode_queries``, ``encode_passages``."""

    def __init__(self, dim: int = 256):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise ValueError(f"dim must be an integer >= 2, got {dim!r}")
        self.dim = dim

    def identity(self) -> str:
        # Everything that changes the passage vectors, and nothing else: the embedding cache is keyed by it.
        return f"harness-plugin-example/hashing-bow/v1/dim={self.dim}"

    def parameters(self) -> dict:
        return {"encoder": "hashed bag of words", "dim": self.dim}

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = zlib.crc32(word.encode("utf-8"))
                vectors[row, h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self._encode(list(queries))

    def encode_passages(self, passages: Sequence[tuple[str, str]]) -> np.ndarray:
        return self._encode([f"{title} {text}" for title, text in passages])

"""The corpus fingerprint: one definition shared by every corpus implementation.

sha256 over, for every passage in order and each of its ``id``, ``title`` and ``text``: the UTF-8
length as 8 little-endian bytes, then the UTF-8 bytes; shown as ``"sha256:<hex>"``. Any change to
any passage (or to their order) changes it; caches of indexes and embeddings are keyed by it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from harness.types import Passage


class PassageFingerprint:
    """The corpus fingerprint, fed passage by passage (for streaming builders)."""

    __slots__ = ("_digest",)

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def update(self, passage_id: str, title: str, text: str) -> None:
        self.update_encoded(passage_id.encode("utf-8"), title.encode("utf-8"), text.encode("utf-8"))

    def update_encoded(self, passage_id: bytes, title: bytes, text: bytes) -> None:
        """Add one passage given as UTF-8 bytes."""
        self._digest.update(
            b"".join(
                (
                    len(passage_id).to_bytes(8, "little"), passage_id,
                    len(title).to_bytes(8, "little"), title,
                    len(text).to_bytes(8, "little"), text,
                )
            )
        )

    @property
    def value(self) -> str:
        return "sha256:" + self._digest.hexdigest()


def corpus_fingerprint(passages: Iterable[Passage]) -> str:
    """The fingerprint of ``passages`` in this order."""
    fingerprint = PassageFingerprint()
    for p in passages:
        fingerprint.update(p.id, p.title, p.text)
    return fingerprint.value

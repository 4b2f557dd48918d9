"""Corpora: passages, the :class:`Corpus` protocol, an in-memory corpus and the corpus fingerprint.

The fingerprint is one definition shared by every corpus implementation: sha256 over, for every
passage in order and each of its ``id``, ``title`` and ``text``, the UTF-8 length as 8
little-endian bytes, then the UTF-8 bytes; shown as ``"sha256:<hex>"``. Any change to any passage
(or to their order) changes it; caches of indexes and embeddings are keyed by it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, kw_only=True, slots=True)
class Passage:
    """One retrieval unit of a corpus: DPR's ``id``, ``title`` and ``text``."""

    id: str
    title: str
    text: str


@runtime_checkable
class Corpus(Protocol):
    """A passage collection that retrievers index and the scorer reads passage text from.

    Implementations may keep passages in memory or on disk; ``fingerprint`` must change whenever
    any passage's id, title or text changes (caches are keyed by it).
    """

    name: str

    @property
    def fingerprint(self) -> str: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Passage]: ...

    def get(self, passage_id: str) -> Passage:
        """The passage with this id; raises ``KeyError`` when there is none."""
        ...


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


class InMemoryCorpus:
    """A :class:`Corpus` held in a dict; for generated and small corpora."""

    def __init__(self, name: str, passages: Iterable[Passage]):
        self.name = name
        self._passages: dict[str, Passage] = {}
        for passage in passages:
            if passage.id in self._passages:
                raise ValueError(f"corpus {name!r}: duplicate passage id {passage.id!r}")
            self._passages[passage.id] = passage
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = corpus_fingerprint(self._passages.values())
        return self._fingerprint

    def __len__(self) -> int:
        return len(self._passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self._passages.values())

    def get(self, passage_id: str) -> Passage:
        return self._passages[passage_id]

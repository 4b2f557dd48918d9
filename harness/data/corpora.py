"""Corpora opened on first use.

A suite names its corpus, but many uses of a suite never read a passage (scoring a run file that
carries passage text, listing, fetching questions). :class:`LazyCorpus` defers opening, building or
downloading the corpus until a passage, its size or its fingerprint is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.api import Corpus, Passage


class LazyCorpus:
    """A :class:`~harness.api.Corpus` that calls ``opener()`` the first time it is needed.

    ``needs``: the files opening it downloads (:class:`harness.data.needs.Needed`), so that a run
    can say, before it loads a model, which of them are not in the data folder."""

    def __init__(self, name: str, opener: Callable[[], Corpus], *, needs: Sequence[Any] = ()):
        self.name = name
        self._opener = opener
        self._corpus: Corpus | None = None
        self.needs = tuple(needs)

    @property
    def loaded(self) -> bool:
        """Whether the corpus has been opened."""
        return self._corpus is not None

    def open(self) -> Corpus:
        if self._corpus is None:
            self._corpus = self._opener()
        return self._corpus

    @property
    def fingerprint(self) -> str:
        return self.open().fingerprint

    def __len__(self) -> int:
        return len(self.open())

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.open())

    def get(self, passage_id: str) -> Passage:
        return self.open().get(passage_id)

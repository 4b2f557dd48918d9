"""``example-overlap``: a pure-Python lexical retriever.

A passage's score for a question is the number of distinct question words (``\\w+`` runs,
lowercased unless ``lowercase=False``) that occur anywhere in the passage's title or text. Ties are
broken by corpus order, so rankings are deterministic. Passages sharing no word with the question
are never returned, so a ranking may hold fewer than ``k`` hits.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from harness.api import Corpus, Hit, RunContext

_WORD = re.compile(r"\w+")


class OverlapRetriever:
    """Implements :class:`harness.api.Retriever`: ``parameters``, ``index`` and ``search``."""

    def __init__(self, lowercase: bool = True):
        if not isinstance(lowercase, bool):
            raise ValueError(f"example-overlap: option 'lowercase' must be true or false, got {lowercase!r}")
        self.lowercase = lowercase
        self._ids: list[str] = []
        self._postings: dict[str, list[int]] = {}

    def parameters(self) -> Mapping[str, Any]:
        # Everything that changes the ranking; recorded in the result file and the leaderboard.
        return {"lowercase": self.lowercase}

    def _words(self, text: str) -> set[str]:
        if self.lowercase:
            text = text.lower()
        return set(_WORD.findall(text))

    def index(self, corpus: Corpus, context: RunContext) -> None:
        # Small corpora only: the inverted index lives in memory and is rebuilt on every run, so
        # ``context.cache_dir`` is not used. A real retriever would store its index there, keyed
        # by ``corpus.fingerprint``.
        self._ids = []
        postings: dict[str, list[int]] = defaultdict(list)
        for position, passage in enumerate(corpus):
            self._ids.append(passage.id)
            for word in self._words(passage.title + "\n" + passage.text):
                postings[word].append(position)
        self._postings = dict(postings)

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        rankings = []
        for query in queries:
            overlap: dict[int, int] = defaultdict(int)
            for word in self._words(query):
                for position in self._postings.get(word, ()):
                    overlap[position] += 1
            best = sorted(overlap.items(), key=lambda item: (-item[1], item[0]))[:k]
            rankings.append([Hit(passage_id=self._ids[pos], score=float(count)) for pos, count in best])
        return rankings

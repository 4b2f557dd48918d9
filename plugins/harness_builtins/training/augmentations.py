"""Training-time text augmentations: the classes the ``harness list augmentations`` specs build
(each spec is a module of :mod:`harness_builtins.training.parts.augmentations`).

An augmentation is built with its options and called as ``augment(text, rng)`` with ``rng`` a
``random.Random``; the same text and rng state give the same output.
"""

from __future__ import annotations

import random


class ShuffleWords:
    """Sequence shuffling, Sciavolino 2022 ("Towards Universal Dense Retrieval for
    Open-Domain Question Answering", M.S.E. thesis, Princeton) §4.1 ("Removing Positional Biases"): "we split each sequence by
    spaces and randomly order the words" (shuffleQ on questions, shuffleP on passages).

    Words are the whitespace-separated pieces of ``text`` (``str.split()``); punctuation stays
    attached to its word ("Paris?" is one word); the words are put in a random order
    (``rng.shuffle``) and joined by single spaces, so runs of whitespace and newlines become one
    space and leading or trailing whitespace is dropped. The seed applies it to every training
    sequence; ``probability`` (default 1.0, the seed's setting) shuffles a text only with that
    chance (one ``rng.random()`` draw per text when below 1). A text is shuffled afresh each time
    it is drawn, i.e. every epoch. Which parts of a passage (title, text) are shuffled is up to
    the caller, which passes the string.
    """

    def __init__(self, *, probability: float = 1.0) -> None:
        self.probability = float(probability)  # checked by its declaration (the spec's) when built by name

    def __repr__(self) -> str:
        return f"ShuffleWords(probability={self.probability})"

    def __call__(self, text: str, rng: random.Random) -> str:
        if self.probability < 1.0 and rng.random() >= self.probability:
            return text
        words = text.split()
        rng.shuffle(words)
        return " ".join(words)

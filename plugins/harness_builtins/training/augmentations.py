"""Training-time text augmentations (``harness list augmentations``).

An augmentation is built with its options and called as ``augment(text, rng)`` with ``rng`` a
``random.Random``; the same text and rng state give the same output. :data:`AUGMENTATIONS` pairs
each registered augmentation with its class.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any
from harness_builtins.training import AUGMENTATION_TABLE, build_part, parts


class ShuffleWords:
    """Sequence shuffling, 000 §4.1 ("Removing Positional Biases"): "we split each sequence by
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
        self.probability = float(probability)  # checked by its declaration (AUGMENTATION_TABLE) when built by name

    def __repr__(self) -> str:
        return f"ShuffleWords(probability={self.probability})"

    def __call__(self, text: str, rng: random.Random) -> str:
        if self.probability < 1.0 and rng.random() >= self.probability:
            return text
        words = text.split()
        rng.shuffle(words)
        return " ".join(words)


#: name -> (one-line description, build callable, options with their defaults), from the
#: registered table of the plugin package.
AUGMENTATIONS: Mapping[str, tuple[str, Any, Mapping[str, Any]]] = parts(AUGMENTATION_TABLE, {"shuffle-words": ShuffleWords})


def build_augmentation(name: str, **options: Any) -> Callable[[str, random.Random], str]:
    """Build the augmentation registered under ``name`` with ``options`` over its defaults."""
    return build_part("augmentation", AUGMENTATIONS, name, options)

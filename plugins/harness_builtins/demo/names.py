"""Pronounceable invented words, and Zipf-like draws from lists of them.

Every invented word (a city, a given name, a surname, a company's stem...) is drawn here and
registered, so no word is invented twice and none is an English word of the templates. Uniqueness
is checked on the accent-free lowercase form, so ``Tilsa`` and ``Tílsa`` cannot both exist.

Words are then shared on purpose, as names are in the real world: people draw their given names and
surnames from pools with a few very common names (:class:`Zipf`), companies and clubs are named
after cities and families ("Ostrelin Motors", "FC Ostrelin"), places after other places ("North
Ostrelin"), and some entities have exactly the same name.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence
from itertools import accumulate

_ONSETS = (
    "b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "r", "s",
    "st", "t", "tr", "v", "z", "sh", "th", "j", "l", "m", "n", "r", "t", "v", "d", "k", "s", "qu",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "a", "i", "e", "ai", "ei", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "th", "nd", "rk", "st", "x", "v", "rn", "lt")
_SINGLE = ("n", "r", "l", "s", "m", "v", "t", "d", "k")
_VOWEL_LETTERS = "aeiouy"
_ACCENTED = {"a": "á", "e": "é", "o": "ö", "u": "ü", "i": "í"}


def fold(word: str) -> str:
    """Accent-free lowercase form, the key uniqueness is checked on."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


class NameForge:
    """Draws invented words from a seeded generator and remembers every word it handed out."""

    def __init__(self, rng: random.Random, reserved: frozenset[str] = frozenset()):
        self._rng = rng
        self._used: set[str] = set()  # membership only, never iterated (iteration order varies)
        self._reserved = reserved

    def _stem(self, syllables: int, suffix: str) -> str:
        rng = self._rng
        stem = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        if not suffix:
            return stem + rng.choice(_CODAS)
        if suffix[0] in _VOWEL_LETTERS:  # "Tors" + "ia", never "Tora" + "ia"
            return stem + rng.choice(_SINGLE) + suffix
        return stem + suffix  # "Kara" + "sen", never "Karast" + "sen"

    def take(self, word: str) -> bool:
        """Register ``word`` if it is free; whether it was."""
        key = fold(word)
        if len(key) < 4 or key in self._used or key in self._reserved:
            return False
        self._used.add(key)
        return True

    def word(self, suffixes: tuple[str, ...] = ("",), *, syllables: tuple[int, ...] = (1, 2, 2, 3),
             accent: float = 0.0, register: bool = True) -> str:
        """A fresh capitalised word: a syllable stem plus one of ``suffixes``."""
        rng = self._rng
        while True:
            stem = self._stem(rng.choice(syllables), rng.choice(suffixes))
            if len(stem) > 11 or "yy" in stem or "uu" in stem or "ii" in stem or stem[-1] in "jqy":
                continue
            if accent and rng.random() < accent:
                positions = [i for i, c in enumerate(stem) if c in _ACCENTED]
                if positions:
                    i = rng.choice(positions)
                    stem = stem[:i] + _ACCENTED[stem[i]] + stem[i + 1:]
            word = stem[0].upper() + stem[1:]
            if not register or self.take(word):
                return word


class Zipf:
    """Draws from ``items`` with weight ``1 / (rank + offset) ** exponent`` (the first most often)."""

    __slots__ = ("items", "_cum")

    def __init__(self, items: Sequence[str], exponent: float = 1.0, offset: float = 2.0):
        self.items = tuple(items)
        self._cum = list(accumulate(1.0 / (i + offset) ** exponent for i in range(len(self.items))))

    def draw(self, rng: random.Random) -> str:
        return rng.choices(self.items, cum_weights=self._cum)[0]

"""Pronounceable invented names, unique across the whole world.

Every name word that identifies something (a city, a surname, a company's stem, a title's invented
word...) is drawn here and registered, so no two things share an identifying word: an answer such
as ``Ostrelin`` matches the passages that mention that city and no others. Uniqueness is checked
on the accent-free lowercase form, so ``Tilsa`` and ``Tílsa`` cannot both exist.
"""

from __future__ import annotations

import random
import unicodedata

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

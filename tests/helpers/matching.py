"""Text perturbations (Unicode normal forms, case, punctuation) for the answer-matching tests."""

from __future__ import annotations

import random
import unicodedata


def nfd(s: str) -> str:
    return unicodedata.normalize("NFD", s)


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def perturb(s: str, rng: random.Random) -> str:
    return rng.choice([
        lambda x: x, str.upper, str.lower, str.swapcase, str.title, nfc, nfd,
        lambda x: unicodedata.normalize("NFKC", x), lambda x: " ".join(x.split()),
        lambda x: x.replace("σ", "ς"), lambda x: x.replace("ς", "Σ"), lambda x: x.replace("i", "İ"),
    ])(s)


"""DPR's "contains an answer" test, exactly (PROTOCOL section 2).

``has_answer(answers, text, mode="string")`` reproduces ``has_answer`` of facebookresearch/DPR
(``dpr/data/qa_validation.py``), which pyserini, ART and EntityQuestions use unchanged:

- string mode: NFD-normalise the passage text and each answer, tokenise both with DrQA's
  SimpleTokenizer (the ``regex`` module, pattern ``([\\p{L}\\p{N}\\p{M}]+)|([^\\p{Z}\\p{C}])``,
  IGNORECASE | UNICODE | MULTILINE), lowercase the tokens, and match when the answer's tokens occur
  as a contiguous run of the passage's tokens. An answer with no tokens matches every passage.
- regex mode: NFD both, compile each answer with the ``regex`` module (IGNORECASE | UNICODE |
  MULTILINE) and ``search`` the text; a pattern that does not compile matches nothing.

Only passage text is searched, never the title: callers pass the text.

:class:`AnswerMatcher` is the fast form used for scoring: it tokenises each distinct passage
once and tests token runs as substring searches over the tokens joined by ``\\x00`` (a control
character, so never part of a token), which is equivalent to the reference's contiguous-run test.

Screening (string mode): most passages contain no answer, and tokenising them is the main cost
of scoring. :func:`screen` maps a text to ``fold(lower(NFD(text)))``, where ``fold`` replaces the
final sigma ``ς`` by ``σ``; :meth:`AnswerMatcher.may_match` says whether every folded token of
some answer occurs in it as a substring. It is exact as a pre-filter (it never rejects a passage
that matches):

- Tokens are substrings of the NFD text (``findall`` returns slices of it).
- ``str.lower`` maps each character independently except ``Σ``, which becomes ``ς`` or ``σ``
  depending on its neighbours (Final_Sigma, the only context-dependent mapping Python applies);
  after ``fold`` both are ``σ``. So ``fold(lower(s))`` is the concatenation of
  ``fold(lower(c))`` over the characters ``c`` of ``s``, for any string, and the folded lowercase
  of a substring is a substring of the folded lowercase of the whole.
- If an answer matches, its joined lowercase tokens occur in the passage's joined lowercase
  tokens between ``\\x00`` separators (no character other than ``\\x00`` lowercases to one), so
  each answer token ``a`` has ``lower(a) == lower(p)`` for some passage token ``p``; folding
  both sides keeps the equality, and ``fold(lower(p))`` is a substring of the screened text.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable

import regex

from harness.api import MATCH_MODES, MatchMode

#: Bumped whenever matching could give a different answer; recorded in every result file.
MATCHER_VERSION = "dpr-has-answer/1"

_FLAGS = regex.IGNORECASE | regex.UNICODE | regex.MULTILINE
# The reference pattern has two groups; findall on the group-free equivalent returns the same
# tokens as plain strings, which is faster.
_TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", flags=_FLAGS)
_SEP = "\x00"


_FINAL_SIGMA = "\u03c2"
_SIGMA = "\u03c3"


def screen(text: str) -> str:
    """``text`` in the form :meth:`AnswerMatcher.may_match` takes: NFD, lowercased, final sigma folded."""
    if text.isascii():  # NFD leaves ASCII as it is, and its lowercase has no sigma
        return text.lower()
    return unicodedata.normalize("NFD", text).lower().replace(_FINAL_SIGMA, _SIGMA)


def normalize(text: str) -> str:
    """Unicode NFD, as DPR's ``_normalize``."""
    return unicodedata.normalize("NFD", text)


def tokenize(text: str) -> list[str]:
    """SimpleTokenizer's uncased words of ``text`` (NFD-normalised first)."""
    return [token.lower() for token in _TOKEN.findall(normalize(text))]


def _joined_tokens(text: str) -> str:
    # Lowercasing the joined string equals lowercasing each token: the only context-sensitive
    # lowercase mapping (Greek final sigma) stops at characters that are neither cased nor
    # case-ignorable, and the separator is one.
    return (_SEP + _SEP.join(_TOKEN.findall(normalize(text))) + _SEP).lower()


@functools.lru_cache(maxsize=65536)
def _compiled(pattern: str) -> regex.Pattern | None:
    try:
        return regex.compile(normalize(pattern), flags=_FLAGS)
    except Exception:  # the reference catches BaseException: an invalid pattern matches nothing
        return None


def _check_mode(mode: str) -> None:
    if mode not in MATCH_MODES:
        raise ValueError(f"match mode must be one of {MATCH_MODES}, got {mode!r}")


def prepare(text: str, mode: MatchMode) -> str:
    """A passage text in the form :meth:`AnswerMatcher.matches_prepared` takes.

    String mode: its uncased tokens joined by ``\\x00``; regex mode: its NFD normal form.
    """
    return _joined_tokens(text) if mode == "string" else normalize(text)


def has_answer(answers: Iterable[str], text: str, *, mode: MatchMode = "string") -> bool:
    """Whether passage ``text`` contains any of ``answers``, by DPR's rule for ``mode``."""
    return AnswerMatcher(answers, mode=mode).matches_text(text)


class AnswerMatcher:
    """The answers of one question, prepared once, to test against many passages."""

    __slots__ = ("mode", "_needles", "_matches_all", "_patterns", "_screens")

    def __init__(self, answers: Iterable[str], *, mode: MatchMode = "string"):
        _check_mode(mode)
        if isinstance(answers, str):
            raise TypeError("answers must be a list of strings, not a string")
        self.mode = mode
        self._needles: tuple[str, ...] = ()
        self._patterns: tuple[regex.Pattern, ...] = ()
        self._matches_all = False
        self._screens: tuple[tuple[str, ...], ...] | None = None
        if mode == "string":
            needles = [_joined_tokens(a) for a in answers]
            # An answer with no tokens matches every passage (a quirk of the reference).
            self._matches_all = _SEP + _SEP in needles
            self._needles = tuple(dict.fromkeys(needles))
            if not self._matches_all:
                # Per distinct answer, its distinct folded tokens, longest (most selective) first.
                screens = []
                for needle in self._needles:
                    tokens = {t.replace(_FINAL_SIGMA, _SIGMA) for t in needle.split(_SEP) if t}
                    screens.append(tuple(sorted(tokens, key=lambda t: (-len(t), t))))
                self._screens = tuple(dict.fromkeys(screens))
        else:
            self._patterns = tuple(p for p in map(_compiled, answers) if p is not None)

    def matches_text(self, text: str) -> bool:
        """Whether the raw passage ``text`` contains an answer."""
        return self.matches_prepared(prepare(text, self.mode))

    def may_match(self, screened: str) -> bool:
        """False only if no answer can match the passage whose :func:`screen` is ``screened``.

        True for every passage that matches (see the module notes); regex mode and answers
        without tokens always give True. Check :meth:`matches_prepared` when this is True.
        """
        screens = self._screens
        if screens is None:
            return True
        for tokens in screens:
            for token in tokens:
                if token not in screened:
                    break
            else:
                return True
        return False

    def matches_prepared(self, prepared: str) -> bool:
        """Whether a passage text already passed through :func:`prepare` contains an answer."""
        if self.mode == "regex":
            return any(p.search(prepared) is not None for p in self._patterns)
        if self._matches_all:
            return True
        return any(needle in prepared for needle in self._needles)


__all__ = ["MATCHER_VERSION", "AnswerMatcher", "has_answer", "normalize", "prepare", "screen", "tokenize"]

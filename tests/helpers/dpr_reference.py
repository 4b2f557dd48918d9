"""The reference "contains an answer" algorithm, transcribed literally: the tests' oracle.

Upstream: facebookresearch/DPR @ 10ca7200a2549dbf4e9542aa61a6f541e535499f

- :class:`Tokens` (only what ``SimpleTokenizer`` needs: ``__len__`` and ``words``) and
  :class:`SimpleTokenizer` mirror ``dpr/utils/tokenizers.py`` (``Tokens``, ``SimpleTokenizer``;
  copied there from DrQA's ``drqa/tokenizers/simple_tokenizer.py``): the same pattern
  ``(%s)|(%s)`` % (``[\\p{L}\\p{N}\\p{M}]+``, ``[^\\p{Z}\\p{C}]``), the same flags
  ``regex.IGNORECASE + regex.UNICODE + regex.MULTILINE``, tokens collected with ``finditer``, and
  ``words(uncased=True)`` lowercasing each token on its own with ``str.lower``.
- :func:`has_answer`, :func:`regex_match` and :func:`_normalize` mirror the functions of the same
  names in ``dpr/data/qa_validation.py`` (where ``re`` is ``import regex as re``): NFD the text,
  string mode tokenises text and each answer and slides a window over the text's words, regex mode
  NFDs each pattern, compiles it inside ``try/except BaseException`` (no match on failure) and
  ``search``-es the NFD text.
- :func:`check_answer` mirrors ``check_answer`` of ``dpr/data/qa_validation.py``: ``has_answer``
  for every one of a question's retrieved passages; :func:`first_hit_rank` is the ``best_hit``
  line of ``calculate_matches``: ``next((i for i, x in enumerate(question_hits) if x), None)``.

Deliberately slow and literal (no caching, no shortcuts): do not optimise this file, it is what the
fast implementation in :mod:`harness.scoring.matching` / :mod:`harness.scoring.ranks` is checked against.
"""

from __future__ import annotations

import unicodedata

import regex
import regex as re  # qa_validation.py: ``import regex as re``


class Tokens(object):
    """dpr/utils/tokenizers.py ``Tokens`` (the parts ``has_answer`` uses)."""

    TEXT = 0
    TEXT_WS = 1
    SPAN = 2

    def __init__(self, data, annotators, opts=None):
        self.data = data
        self.annotators = annotators
        self.opts = opts or {}

    def __len__(self):
        """The number of tokens."""
        return len(self.data)

    def words(self, uncased=False):
        """Returns a list of the text of each token

        Args:
            uncased: lower cases text
        """
        if uncased:
            return [t[self.TEXT].lower() for t in self.data]
        else:
            return [t[self.TEXT] for t in self.data]


class SimpleTokenizer(object):
    """dpr/utils/tokenizers.py ``SimpleTokenizer`` (DrQA's)."""

    ALPHA_NUM = r"[\p{L}\p{N}\p{M}]+"
    NON_WS = r"[^\p{Z}\p{C}]"

    def __init__(self, **kwargs):
        self._regexp = regex.compile(
            "(%s)|(%s)" % (self.ALPHA_NUM, self.NON_WS),
            flags=regex.IGNORECASE + regex.UNICODE + regex.MULTILINE,
        )
        self.annotators = set()

    def tokenize(self, text):
        data = []
        matches = [m for m in self._regexp.finditer(text)]
        for i in range(len(matches)):
            # Get text
            token = matches[i].group()

            # Get whitespace
            span = matches[i].span()
            start_ws = span[0]
            if i + 1 < len(matches):
                end_ws = matches[i + 1].span()[0]
            else:
                end_ws = span[1]

            # Format data
            data.append(
                (
                    token,
                    text[start_ws:end_ws],
                    span,
                )
            )
        return Tokens(data, self.annotators)


def has_answer(answers, text, tokenizer, match_type) -> bool:
    """dpr/data/qa_validation.py ``has_answer``, verbatim."""
    text = _normalize(text)

    if match_type == "string":
        # Answer is a list of possible strings
        text = tokenizer.tokenize(text).words(uncased=True)

        for single_answer in answers:
            single_answer = _normalize(single_answer)
            single_answer = tokenizer.tokenize(single_answer)
            single_answer = single_answer.words(uncased=True)

            for i in range(0, len(text) - len(single_answer) + 1):
                if single_answer == text[i : i + len(single_answer)]:
                    return True

    elif match_type == "regex":
        # Answer is a regex
        for single_answer in answers:
            single_answer = _normalize(single_answer)
            if regex_match(text, single_answer):
                return True
    return False


def regex_match(text, pattern):
    """dpr/data/qa_validation.py ``regex_match``, verbatim (``re`` is the ``regex`` module)."""
    try:
        pattern = re.compile(pattern, flags=re.IGNORECASE + re.UNICODE + re.MULTILINE)
    except BaseException:
        return False
    return pattern.search(text) is not None


def _normalize(text):
    """dpr/data/qa_validation.py ``_normalize``."""
    return unicodedata.normalize("NFD", text)


# ---- conveniences for the tests (not upstream code) ------------------------------------------

#: ``calculate_matches`` builds one ``SimpleTokenizer(**{})`` and shares it; so do we.
TOKENIZER = SimpleTokenizer()


def reference_has_answer(answers, text, mode="string") -> bool:
    """``has_answer(answers, text, SimpleTokenizer(), mode)``."""
    return has_answer(answers, text, TOKENIZER, mode)


def reference_words(text):
    """The uncased SimpleTokenizer words ``has_answer`` compares (after NFD)."""
    return TOKENIZER.tokenize(_normalize(text)).words(uncased=True)


def check_answer(answers, doc_texts, match_type):
    """qa_validation.py ``check_answer``: ``has_answer`` for every retrieved passage, in order."""
    hits = []
    for text in doc_texts:
        answer_found = False
        if text is None:  # cannot find the document for some reason
            hits.append(False)
            continue
        if has_answer(answers, text, TOKENIZER, match_type):
            answer_found = True
        hits.append(answer_found)
    return hits


def first_hit_rank(question_hits):
    """``best_hit`` of qa_validation.py ``calculate_matches``."""
    return next((i for i, x in enumerate(question_hits) if x), None)


def reference_first_hit_ranks(answer_lists, rankings, passage_text, match_type):
    """The first-hit rank of every question, checking all of its passages as DPR does."""
    return [
        first_hit_rank(check_answer(answers, [passage_text(pid) for pid in ranking], match_type))
        for answers, ranking in zip(answer_lists, rankings)
    ]

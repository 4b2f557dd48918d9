"""The scoring pre-filter (``AnswerMatcher.may_match`` on ``screen(text)``) is exact: it never
rejects a passage DPR's ``has_answer`` would match; and scoring in several processes changes
nothing."""

from __future__ import annotations

import random
import unicodedata

import pytest

import helpers.dpr_reference as ref
import helpers.qa_data as qa_data
from harness.api import Question
from harness.scoring.matching import AnswerMatcher, has_answer, screen
from harness.scoring.ranks import first_hit_ranks
from helpers.matching import perturb


# ---------------------------------------------------------------------------------------------
# The scoring pre-filter (AnswerMatcher.may_match on screen(text)) is exact
# ---------------------------------------------------------------------------------------------

#: (answer, text) pairs where the reference matches and a careless pre-filter would not: final
#: sigma decided by neighbours across case-ignorable characters, NFC vs NFD, one character
#: lowercasing to two (İ), compatibility characters, ignorable characters inside tokens.
ADVERSARIAL_MATCHES = [
    ("ας", "ΑΣ.Β"),  # token ΑΣ lowercases to ας alone, but the whole text to ασ.β
    ("ΑΣ", "ΑΣ'Β γ"),
    ("σα", "ΣΑ"),
    ("ςα", "ΣΑ"),
    ("Οδυσσευς", "ΟΔΥΣΣΕΥΣ."),
    ("ΟΔΥΣΣΕΥΣ", "ὀδυσσευς:"),
    ("café", "CAFE\u0301 au lait"),
    ("cafe\u0301", "Café"),
    ("İstanbul", "i\u0307stanbul"),
    ("istanbul", "xİstanbul"),
    ("Kelvin \u212a", "kelvin K"),
    ("ﬁsh", "ﬁsh"),
    ("Ǆ", "ǆ"),
    ("soft\u00adhyphen", "SOFT\u00adHYPHEN"),
    ("a\u200bb", "A\u200bB"),
    ("ΣΑΣ", "σας."),
    ("Σ", "Σ"),
]


@pytest.mark.parametrize("answer, text", ADVERSARIAL_MATCHES)
def test_prefilter_never_rejects_a_match(answer, text):
    expected = ref.reference_has_answer([answer], text, "string")
    assert has_answer([answer], text, mode="string") == expected
    if expected:
        assert AnswerMatcher([answer], mode="string").may_match(screen(text))


def test_prefilter_needs_the_sigma_fold():
    # Without folding final sigma the screen of "ΑΣ.Β" would be "ασ.β", which lacks "ας".
    assert ref.reference_has_answer(["ας"], "ΑΣ.Β", "string")
    assert "ας" not in unicodedata.normalize("NFD", "ΑΣ.Β").lower()
    assert AnswerMatcher(["ας"], mode="string").may_match(screen("ΑΣ.Β"))


def test_prefilter_on_adversarial_random_strings():
    """Sigma, case-ignorables, İ, ligatures and combining marks packed densely: every match passes
    the screen, and the screen still rejects most non-matches (it is a filter, not a pass-all)."""
    rng = random.Random(31337)
    alphabet = ["Σ", "σ", "ς", "Α", "α", "'", ".", "\u0301", "\u00ad", "\u200b", " ", "İ", "i", "I", "ı",
                "\u0307", "ﬁ", "f", "é", "e", "\u212a", "k", "K", "ǅ", "ß", "ẞ", "ss", "-"]
    checked = rejected = 0
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        if text and rng.random() < 0.5:
            i = rng.randrange(len(text))
            answer = perturb(text[i : i + rng.randint(1, 6)], rng)
        else:
            answer = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        expected = ref.reference_has_answer([answer], text, "string")
        passes = AnswerMatcher([answer], mode="string").may_match(screen(text))
        assert passes or not expected, (answer, text)
        checked += expected
        rejected += not passes
    assert checked > 3000 and rejected > 3000, (checked, rejected)


def test_prefilter_passes_everything_where_it_cannot_judge():
    assert AnswerMatcher(["", "x"], mode="string").may_match(screen("nothing here"))  # zero-token answer
    assert AnswerMatcher(["a.c"], mode="regex").may_match(screen("zzz"))
    assert not AnswerMatcher([], mode="string").may_match(screen("anything"))


def test_first_hit_ranks_in_several_processes_are_the_same():
    qa = qa_data.load_set("nq-dpr-test")[:300]
    run = qa_data.build_run(qa, pool_size=2000, depth=30, words_per_passage=30, seed=3)
    questions = [Question(id=str(i), text=q, answers=tuple(a)) for i, (q, a) in enumerate(qa)]
    one = first_hit_ranks(questions, run.rankings, run.texts.__getitem__, mode="string")
    for processes in (2, 3):
        assert first_hit_ranks(questions, run.rankings, run.texts.__getitem__, mode="string", processes=processes) == one
    assert len({r for r in one if r is not None}) > 5


def test_first_hit_ranks_in_several_processes_raise_the_first_error_in_question_order():
    questions = [Question(id=str(i), text="q", answers=("zzz",)) for i in range(6)]
    rankings = [["a"], ["b"], ["a"], ["bad-3"], ["a"], ["bad-5"]]

    def lookup(pid):
        if pid.startswith("bad"):
            raise KeyError(pid)
        return "text"

    for processes in (1, 2, 3):
        with pytest.raises(KeyError, match="bad-3"):
            first_hit_ranks(questions, rankings, lookup, mode="string", processes=processes)

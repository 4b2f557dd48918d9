"""harness.scoring.matching / harness.scoring.ranks against a literal transcription of DPR's has_answer.

The oracle is :mod:`dpr_reference` (facebookresearch/DPR ``qa_validation.has_answer`` and DrQA's
``SimpleTokenizer``, unchanged). Every comparison here runs both on the same input and requires the
same answer, on real answers from ``../shared/data`` embedded in perturbed passages, on random
strings, and on generated retrieval runs.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections import Counter

import pytest
import regex

import helpers.dpr_reference as ref
import helpers.qa_data as qa_data
from helpers.regex_witness import regex_witness
from harness.scoring.matching import AnswerMatcher, has_answer, screen
from harness.scoring.ranks import first_hit_ranks, macro_average, top_k_accuracy
from harness.api import InMemoryCorpus, Passage, Question
from helpers.matching import nfc, nfd, perturb





def compare(pairs, mode):
    """Run harness and oracle on every (answers, text) pair; return (counts, disagreements)."""
    counts = Counter()
    disagreements = []
    for answers, text in pairs:
        expected = ref.reference_has_answer(answers, text, mode)
        got = has_answer(answers, text, mode=mode)
        counts[expected] += 1
        if got != expected:
            disagreements.append((answers, text, expected, got))
        # The scoring pre-filter must let every matching passage through.
        if expected and not AnswerMatcher(answers, mode=mode).may_match(screen(text)):
            disagreements.append((answers, text, expected, "screened out"))
    return counts, disagreements


def assert_agree(name, pairs, mode, *, min_pairs, min_share=0.2):
    counts, disagreements = compare(pairs, mode)
    n = counts[True] + counts[False]
    print(f"\n[{name}] mode={mode} pairs={n} positives={counts[True]} negatives={counts[False]}")
    shown = "\n".join(
        f"  answers={a!r}\n  text={t!r}\n  reference={e} harness={g}" for a, t, e, g in disagreements[:5]
    )
    assert not disagreements, f"{len(disagreements)} disagreements with DPR's has_answer, e.g.:\n{shown}"
    assert n >= min_pairs, f"only {n} pairs compared"
    assert counts[True] >= min_share * n, f"too few positives: {counts}"
    assert counts[False] >= min_share * n, f"too few negatives: {counts}"
    return counts


# ---------------------------------------------------------------------------------------------
# CuratedTREC: regex mode
# ---------------------------------------------------------------------------------------------

#: The CuratedTREC answers the ``regex`` module rejects once NFD-normalised (as DPR does): an
#: escaped accented letter ``\ě`` decomposes to ``\e`` + combining caron, and ``\e`` is a bad escape.
#: All three compile without NFD (and with stdlib ``re``, as pyserini's copy uses).
INVALID_CURATED = [
    "Ali Nashnush|Barman|Monjane|Robert Wadlow|_Gabriel Estavao_|Sultan K\\ösen|Robert Pershing Wadlow",
    "Laval|Petain|Marshal Philippe P\\étain",
    "Sne[zž]ka|Sn\\ě\\žka",
]

def strip_metacharacters(pattern: str) -> str:
    """The pattern's first alternative with regex syntax removed (a loose 'designed' match)."""
    first = pattern.split("|")[0]
    first = regex.sub(r"\\s[?*+]?", " ", first)
    first = regex.sub(r"\[(.)[^\]]*\]", r"\1", first)
    first = regex.sub(r"\\b|\\", "", first)
    return regex.sub(r"[\^\$\(\)\?\*\+\{\}\.]", "", first)


@pytest.fixture(scope="module")
def curated():
    return qa_data.load_set("curated-test")


def test_curated_invalid_patterns_are_exactly_the_nfd_bad_escapes(curated):
    flags = regex.IGNORECASE | regex.UNICODE | regex.MULTILINE
    invalid = []
    for _, answers in curated:
        for pattern in answers:
            try:
                regex.compile(nfd(pattern), flags=flags)
            except regex.error:
                invalid.append(pattern)
                regex.compile(pattern, flags=flags)  # the raw pattern is fine: NFD breaks it
                re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    assert sorted(invalid) == sorted(INVALID_CURATED)


def test_curated_invalid_patterns_match_nothing(curated):
    texts = [q for q, _ in curated] + [
        "Sněžka is the highest mountain of the Czech Republic",
        "Sne\u030cz\u030cka",
        "Marshal Philippe Pétain",
        "Sultan Kösen is the tallest living man",
        "",
    ]
    for pattern in INVALID_CURATED:
        for text in texts:
            assert has_answer([pattern], text, mode="regex") is False
            assert ref.reference_has_answer([pattern], text, "regex") is False
        # an invalid pattern beside a valid one does not stop the valid one from matching
        for text in texts[-5:-1]:
            assert has_answer([pattern, "Sněžka|Pétain|Kösen"], text, mode="regex") is True
    # NFD quirk: "." consumes only the base letter of a decomposed "ě", so this does not match
    assert has_answer(["Sn.žka"], "Sněžka", mode="regex") is False
    assert ref.reference_has_answer(["Sn.žka"], "Sněžka", "regex") is False
    assert has_answer(["Sn..žka"], "Sněžka", mode="regex") is True
    # the alternatives of the invalid patterns *would* match these texts without NFD
    assert regex.search(INVALID_CURATED[2], texts[-5], flags=regex.IGNORECASE)


def test_curated_regexes_agree_with_reference(curated):
    rng = random.Random(1234)
    questions = [q for q, _ in curated]
    patterns = [answers for _, answers in curated]
    witnesses = []
    for answers in patterns:
        w = [x for x in (regex_witness(p, rng) for p in answers for _ in range(3)) if x]
        witnesses.append(w)
    with_witness = sum(1 for w in witnesses if w)
    assert with_witness >= 0.95 * len(patterns), f"only {with_witness} patterns got a witness"

    pairs = []
    own_positive = own_total = 0
    for i, answers in enumerate(patterns):
        own = []
        for w in witnesses[i] or [strip_metacharacters(answers[0])]:
            left, right = rng.choice(questions), rng.choice(questions)
            own += [
                w,
                f"{left} {w} {right}",
                f"{left} {w.upper()} {right}",
                w.lower(),
                f"{left}\n{w}\n{right}",  # on its own line: ^...$ with MULTILINE
                f"{left} {w.replace(' ', chr(10))} {right}",  # across newlines
                nfc(w),
                nfd(w),
                f"{left}{w}{right}",  # glued to its neighbours (\b fails)
            ]
        stripped = strip_metacharacters(answers[0])
        own += [stripped, stripped.upper(), f"{rng.choice(questions)} {stripped}."]
        for text in own:
            pairs.append((answers, text))
            own_total += 1
            own_positive += ref.reference_has_answer(answers, text, "regex")
        # other questions' texts and other patterns' witnesses as negatives (mostly)
        for _ in range(12):
            j = rng.randrange(len(patterns))
            other = rng.choice(witnesses[j]) if witnesses[j] else ""
            pairs.append((answers, f"{questions[j]} {other} {rng.choice(questions)}"))
    counts = assert_agree("curated-test", pairs, "regex", min_pairs=10_000, min_share=0.15)
    print(f"[curated-test] designed passages: {own_positive} of {own_total} match their own regex")
    assert own_positive >= 0.6 * own_total  # plenty of designed matches
    assert counts[True] >= 3_000


# ---------------------------------------------------------------------------------------------
# String mode on real answers
# ---------------------------------------------------------------------------------------------

NBSP = "\u00a0"
ZWSP = "\u200b"

_NON_LATIN = ("CYRILLIC", "GREEK", "CJK", "HIRAGANA", "KATAKANA", "HANGUL", "ARABIC", "HEBREW",
              "DEVANAGARI", "THAI", "GEORGIAN", "ARMENIAN", "BENGALI", "TAMIL", "ETHIOPIC")


def answer_categories(a: str) -> set[str]:
    """Why an answer is interesting for matching."""
    cats = set()
    if any(ord(c) > 127 for c in a):
        cats.add("non-ascii")
    if nfd(a) != a:
        cats.add("accents")
    if nfc(a) != a:
        cats.add("decomposed")
    if any(unicodedata.category(c)[0] in "PS" for c in a):
        cats.add("punctuation")
    if "  " in a or "\t" in a or a != a.strip():
        cats.add("odd-spacing")
    if any(unicodedata.category(c) in ("Zs", "Zl", "Zp") and c != " " for c in a):
        cats.add("odd-space-char")
    if any(unicodedata.category(c) in ("Cf", "Cc") for c in a):
        cats.add("control-format")
    if any(unicodedata.category(c)[0] == "L" and unicodedata.name(c, "").startswith(_NON_LATIN) for c in a):
        cats.add("non-latin")
    if any(c in "Σσς" for c in a):
        cats.add("greek-sigma")
    if any(c in "İı" for c in a):
        cats.add("turkish-i")
    if any(c in "ﬀﬁﬂﬃﬄæÆœŒß" for c in a):
        cats.add("ligature")
    if regex.search(r"\d,\d", a):
        cats.add("digit-comma")
    if "'" in a or "’" in a or "‘" in a:
        cats.add("apostrophe")
    if any(c in "-‐‑‒–—―" for c in a):
        cats.add("dash")
    if any(unicodedata.category(c) == "Mn" for c in a):
        cats.add("combining")
    return cats


def select_answers(qa, rng, per_category=25, plain=40):
    """Interesting answers (capped per category) plus a random sample of plain ones."""
    by_cat: dict[str, list[tuple[int, str]]] = {}
    plain_pool = []
    seen = set()
    for qi, (_, answers) in enumerate(qa):
        for a in answers:
            if a in seen:
                continue
            seen.add(a)
            cats = answer_categories(a)
            for c in cats:
                by_cat.setdefault(c, []).append((qi, a))
            if not cats:
                plain_pool.append((qi, a))
    chosen = {}
    for c in sorted(by_cat):
        for item in rng.sample(by_cat[c], min(per_category, len(by_cat[c]))):
            chosen[item[1]] = item
    for item in rng.sample(plain_pool, min(plain, len(plain_pool))):
        chosen[item[1]] = item
    return list(chosen.values()), {c: len(v) for c, v in by_cat.items()}


def _insert_middle(s: str, ch: str) -> str:
    words = s.split(" ")
    k = max(range(len(words)), key=lambda i: len(words[i]))
    w = words[k]
    if len(w) >= 2:
        words[k] = w[: len(w) // 2] + ch + w[len(w) // 2 :]
    return " ".join(words)


_FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"}


def answer_variants(a: str) -> list[str]:
    """The answer perturbed in ways that must, or must not, still match."""
    words = a.split()
    variants = [
        a, a.upper(), a.lower(), a.swapcase(), a.title(), a.casefold(),
        nfc(a), nfd(a), unicodedata.normalize("NFKC", a), unicodedata.normalize("NFKD", a),
        "".join(c for c in nfd(a) if not unicodedata.combining(c)),  # accents stripped
        a + "\u0301",  # an extra combining mark glued on
        f"({a})", f'"{a}".', f"{a}'s", f"{a}’s", f"{a},", f"¿{a}?",
        a.replace(" ", "\n", 1), a.replace(" ", "\r\n"), a.replace(" ", " \n "),
        a.replace(" ", "  "), a.replace(" ", "\t"), a.replace(" ", NBSP), a.replace(" ", "\u3000"),
        a.replace(" ", "\u2028"), a.replace(" ", ZWSP), a.replace(" ", ""), " ".join(words),
        a.replace(NBSP, " "), a.replace(ZWSP, ""),
        _insert_middle(a, ZWSP), _insert_middle(a, "\u00ad"), _insert_middle(a, "\u200d"),
        _insert_middle(a, "\x00"), _insert_middle(a, "-"),
        a + "ian", "x" + a, a + "1", "1" + a,  # glued letters/digits: must not match
        " ".join(words[:-1]), " ".join(words[1:]), a[:-1], a[1:],  # partial answers
        a.replace("'", "’"), a.replace("’", "'"), a.replace("'", ""),
        a.replace("-", "–"), regex.sub("[‐‑‒–—―]", "-", a), a.replace("-", " - "), a.replace("-", ""),
        a.replace("-", " "),
        regex.sub(r"(\d),(\d)", r"\1 , \2", a), regex.sub(r"(\d),(\d)", r"\1\2", a),
        regex.sub(r"(\d) , (\d)", r"\1,\2", a), regex.sub(r"(\d)(\d{3})\b", r"\1,\2", a),
        a.replace("I", "İ"), a.replace("i", "ı"), a.replace("i", "İ"), a.replace("İ", "I"),
        a.replace("ı", "i"), a.replace("İ", "i"),
        a.replace("σ", "ς"), a.replace("ς", "σ"), a.replace("σ", "Σ").replace("ς", "Σ"),
        a.replace("fi", "ﬁ").replace("fl", "ﬂ"), a.replace("ae", "æ"), a.replace("ss", "ß"),
        a.replace("ﬁ", "fi").replace("ﬂ", "fl").replace("æ", "ae").replace("œ", "oe").replace("ß", "ss"),
        "".join(_FULLWIDTH.get(c, c) for c in a),
        " ".join(ref.reference_words(a)),  # the oracle's own tokens: always a match
    ]
    return list(dict.fromkeys(variants))


def build_string_pairs(qa, rng, selected):
    questions = [q for q, _ in qa]

    def distractor():
        answers = rng.choice(qa)[1]
        return rng.choice(answers) if answers else ""

    contexts = [
        lambda v, l, r, d: v,
        lambda v, l, r, d: f"{l} {v} {r}",
        lambda v, l, r, d: f"{l}, {d}; {v} — {r}",
        lambda v, l, r, d: f"{l} {d} ({v}) {r}",
        lambda v, l, r, d: f"{l}\n{v}\n{r}",
        lambda v, l, r, d: f"{l}{v}{r}",  # glued to the neighbouring words
        lambda v, l, r, d: f"{v} {d}",
        lambda v, l, r, d: f"{l}.{v}.{r}",
    ]
    pairs = []
    for qi, a in selected:
        own = qa[qi][1]
        for v in answer_variants(a):
            text = rng.choice(contexts)(v, rng.choice(questions), rng.choice(questions), distractor())
            pairs.append((own, text))
            pairs.append(([a], text))
            pairs.append((rng.choice(qa)[1], text))  # another question's answers
        pairs.append((own, ""))  # the empty passage
    return pairs


@pytest.mark.parametrize("name", sorted(qa_data.STRING_SETS))
def test_string_mode_agrees_with_reference_on_real_answers(name):
    qa = qa_data.load_set(name)
    rng = random.Random(f"string-{name}")
    selected, available = select_answers(qa, rng)
    pairs = build_string_pairs(qa, rng, selected)
    print(f"\n[{name}] {len(selected)} answers selected; interesting answers in the set: {available}")
    assert_agree(name, pairs, "string", min_pairs=5_000)


def test_real_answers_cover_the_hard_cases():
    """The data sets together exercise every kind of answer the string tests aim at."""
    seen = Counter()
    distinct = {a for name in qa_data.STRING_SETS for _, answers in qa_data.load_set(name) for a in answers}
    for a in distinct:
        if not a.isascii() or not a.isalnum():
            seen.update(answer_categories(a))
    for cat in ("accents", "punctuation", "odd-spacing", "odd-space-char", "control-format", "non-latin",
                "greek-sigma", "turkish-i", "ligature", "digit-comma", "apostrophe", "dash", "combining"):
        assert seen[cat] > 0, cat


def test_entityquestions_every_relation_agrees(shared_data):
    relations = qa_data.read_entityquestions(shared_data / "entityquestions" / "test")
    assert len(relations) == 24
    rng = random.Random(99)
    pairs = []
    for rel, qa in sorted(relations.items()):
        selected, _ = select_answers(qa, rng, per_category=3, plain=6)
        pairs += build_string_pairs(qa, rng, selected)
    assert_agree("entityquestions-per-relation", pairs, "string", min_pairs=5_000)


# ---------------------------------------------------------------------------------------------
# Quirks
# ---------------------------------------------------------------------------------------------

ZERO_TOKEN = ["", " ", "  ", "\t\n", "\r\n", NBSP, ZWSP, "\u200c\u200d", "\ufeff", "\u00ad", "\u2028",
              "\u3000", "\x00", "\x7f", "\x85", "\u2060", "\ue000", " \u200b \u00a0 "]
#: Look empty but are tokens: combining marks and variation selectors are \p{M}.
NOT_ZERO_TOKEN = ["\u0301", "\ufe0f", "\u0308\u0301", "-", "'", "\u200b.", "ـ"]


def test_what_tokenises_to_nothing():
    for a in ZERO_TOKEN:
        assert ref.reference_words(a) == [], repr(a)
    for a in NOT_ZERO_TOKEN:
        assert ref.reference_words(a) != [], repr(a)


@pytest.mark.parametrize("answer", ZERO_TOKEN)
def test_zero_token_answer_matches_every_passage(answer):
    for text in ["", " ", ZWSP, "anything at all", "Paris", "\u0301"]:
        assert ref.reference_has_answer([answer], text, "string") is True
        assert has_answer([answer], text) is True
        assert has_answer(["no such answer", answer], text) is True


def test_empty_answer_lists_match_nothing():
    for mode in ("string", "regex"):
        for text in ["", "Paris"]:
            assert ref.reference_has_answer([], text, mode) is False
            assert has_answer([], text, mode=mode) is False


def test_not_zero_token_answers_agree():
    texts = ["", "é", "e\u0301", " \u0301 ", "☺\ufe0f", "a - b", "it's", "\u200b.", "xـy", "ـ", "a\u0308\u0301"]
    pairs = [([a], t) for a in NOT_ZERO_TOKEN for t in texts]
    counts, disagreements = compare(pairs, "string")
    assert not disagreements
    assert counts[True] > 0 and counts[False] > 0


def test_empty_pattern_in_regex_mode_agrees():
    for text in ["", "x"]:
        assert has_answer([""], text, mode="regex") is ref.reference_has_answer([""], text, "regex") is True


def test_title_is_never_searched():
    corpus = InMemoryCorpus(
        "titles",
        [
            Passage(id="1", title="Paris", text="The capital of France has many museums."),
            Passage(id="2", title="Paris Hilton", text="An American media personality."),
            Passage(id="3", title="France", text="Its capital is Paris."),
        ],
    )
    question = Question(id="q", text="capital of france", answers=("Paris",))
    lookup = lambda pid: corpus.get(pid).text  # noqa: E731
    for mode, answers in (("string", ("Paris",)), ("regex", (r"\bParis\b",))):
        q = Question(id="q", text=question.text, answers=answers)
        assert first_hit_ranks([q], [["1", "2", "3"]], lookup, mode=mode) == [2]
        assert first_hit_ranks([q], [["1", "2"]], lookup, mode=mode) == [None]
        # matching title + text (EntityQuestions' old bug) would have hit at rank 0
        p = corpus.get("1")
        assert ref.reference_has_answer(answers, p.title + " " + p.text, mode) is True
        assert ref.reference_has_answer(answers, p.text, mode) is False


@pytest.mark.parametrize("mode", ["", "String", "REGEX", "kilt", "exact", None])
def test_mode_is_validated(mode):
    with pytest.raises(ValueError):
        has_answer(["Paris"], "Paris", mode=mode)
    with pytest.raises(ValueError):
        first_hit_ranks([Question(id="q", text="", answers=("Paris",))], [["1"]], lambda _: "Paris", mode=mode)


@pytest.mark.parametrize("mode", ["string", "regex"])
def test_plain_string_answers_are_rejected(mode):
    # DPR would iterate the characters ("P", "a", ...) and match almost any passage.
    assert ref.reference_has_answer("Paris", "a cat", mode) is True
    with pytest.raises(TypeError):
        has_answer("Paris", "a cat", mode=mode)
    with pytest.raises(TypeError):
        first_hit_ranks([Question(id="q", text="", answers="Paris")], [["1"]], lambda _: "a cat", mode=mode)


def test_harness_has_answer_is_keyword_only_mode():
    with pytest.raises(TypeError):
        has_answer(["Paris"], "Paris", "string")


# ---------------------------------------------------------------------------------------------
# Property-style: random strings over many scripts and character kinds
# ---------------------------------------------------------------------------------------------

LETTERS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "éèêëÉçÇñÑöÖüÜåÅøØßẞæÆœŒðÐþÞłŁ"  # Latin with diacritics and specials
    "ΑΒΓΔΕΣσςΩαβγδεωάΆΐΰ"  # Greek, sigma forms, accented
    "АБВГДЕЁЖабвгдеёжЙй"  # Cyrillic
    "İıIi"  # Turkish
    "ﬀﬁﬂﬃﬄﬅﬆ"  # ligatures
    "ǅǈǋ"  # title-case digraphs (Lt)
    "ʰʲˆ"  # modifier letters
    "東京都中国語日本"  # CJK
    "ひらがなカタカナ한국어"  # kana, Hangul syllables
    "العربيةעברית"  # Arabic, Hebrew
    "हिन्दीதமிழ்"  # Devanagari, Tamil (with Mc/Mn signs)
    "\u212a\u212b\u2126"  # Kelvin, Angstrom, Ohm signs (NFD to K, A+ring, Omega)
    "ＡＢｃｄ"  # fullwidth
)
DIGITS = "0123456789٠١٢٣४५০০０１²³½Ⅻⅻ"
MARKS = "\u0300\u0301\u0302\u0303\u0308\u030c\u0327\u0345\u0307\u0331\u20dd\ufe0f\u094d\u0bcd"
PUNCT = ".,;:!?'\"’‘“”-–—‐()[]{}/\\@#$%^&*_+=<>|~`§¶•…«»¿¡·"
SYMBOLS = "€£©®™°±×÷→☺Ⓐⓐ😀👍🏽\U0001f1eb\U0001f1f7"
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003", "\u3000", "\u2028", "\u2029", "\x0b", "\x0c"]
CONTROLS = "\x00\x07\x1b\x7f\x85\u200b\u200c\u200d\u00ad\ufeff\u2060\u202e\ue000\ud800\U000e0041"


def random_word(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.55:
            out.append(rng.choice(LETTERS))
        elif kind < 0.65:
            out.append(rng.choice(DIGITS))
        elif kind < 0.78:
            out.append(rng.choice(MARKS))
        elif kind < 0.88:
            out.append(rng.choice(PUNCT))
        elif kind < 0.93:
            out.append(rng.choice(SYMBOLS))
        else:
            out.append(rng.choice(CONTROLS))
    return "".join(out)


def random_text(rng: random.Random, max_words: int) -> str:
    parts = []
    for _ in range(rng.randint(0, max_words)):
        parts.append(random_word(rng))
        parts.append(rng.choice(SPACES) if rng.random() < 0.8 else rng.choice(PUNCT + CONTROLS))
    return "".join(parts)




def random_answer(text: str, rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3 or not text:
        return random_text(rng, 3)
    if kind < 0.5:  # a raw substring (may cut a token, or a base letter from its mark)
        i = rng.randrange(len(text))
        return perturb(text[i : i + rng.randint(1, 25)], rng)
    if kind < 0.95:  # a run of whole words
        words = regex.split(r"(\s+)", text)
        i = rng.randrange(len(words))
        return perturb("".join(words[i : i + rng.randint(1, 6)]), rng)
    return rng.choice(ZERO_TOKEN + NOT_ZERO_TOKEN)


def test_every_code_point_tokenises_like_the_reference():
    """All of Unicode (surrogates included), code points apart and run together."""
    from harness.scoring.matching import tokenize

    for sep in (" ", ""):
        for start in range(0, 0x110000, 4096):
            text = sep.join(chr(c) for c in range(start, min(start + 4096, 0x110000)))
            assert tokenize(text) == ref.reference_words(text), (hex(start), sep)


def test_random_strings_string_mode():
    rng = random.Random(20240611)
    pairs = []
    for _ in range(6000):
        text = random_text(rng, 25)
        answers = [random_answer(text, rng) for _ in range(rng.randint(1, 2))]
        pairs.append((answers, text))
    assert_agree("random-string", pairs, "string", min_pairs=6000, min_share=0.15)


def test_random_greek_sigma_and_case_ignorable_contexts():
    """Final-sigma lowercasing depends on neighbours: tokens must be lowercased one by one."""
    rng = random.Random(7)
    alphabet = ["Σ", "σ", "ς", "Α", "α", "'", ".", ":", "\u0301", "\u00ad", "\u200b", " ", "-", "·", "ͅ", "Ι"]
    pairs = []
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        answer = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        pairs.append(([answer], text))
        if text:
            i = rng.randrange(len(text))
            pairs.append(([perturb(text[i : i + rng.randint(1, 6)], rng)], text))
    assert_agree("random-sigma", pairs, "string", min_pairs=6000, min_share=0.1)


def test_random_strings_regex_mode():
    rng = random.Random(4242)
    pairs = []
    meta = ["(", ")", "[", "]", "|", "?", "*", "+", ".", "\\", "\\b", "\\s", "\\d", "^", "$", "{2}", "\\é", "\\p{L}"]
    for _ in range(3000):
        text = random_text(rng, 15)
        patterns = []
        for _ in range(rng.randint(1, 2)):
            kind = rng.random()
            sub = random_answer(text, rng)
            if kind < 0.4:
                patterns.append(regex.escape(sub))
            elif kind < 0.7:
                patterns.append(sub)  # raw: often invalid
            else:
                patterns.append("".join(rng.choice([rng.choice(meta), random_word(rng)]) for _ in range(rng.randint(1, 5))))
        pairs.append((patterns, text))
    assert_agree("random-regex", pairs, "regex", min_pairs=3000, min_share=0.1)


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


def _questions(qa):
    return [Question(id=str(i), text=q, answers=tuple(a)) for i, (q, a) in enumerate(qa)]


def _check_run(qa, run, mode, answers_for_scoring=None):
    questions = _questions(answers_for_scoring or qa)
    lookups = Counter()

    def lookup(pid):
        lookups[pid] += 1
        return run.texts[pid]

    got = first_hit_ranks(questions, run.rankings, lookup, mode=mode)
    expected = ref.reference_first_hit_ranks([q.answers for q in questions], run.rankings, run.texts.__getitem__, mode)
    assert got == expected
    assert max(lookups.values()) == 1, "a passage was looked up (and tokenised) more than once"
    # DPR's calculate_matches top_k_hits accumulation gives the same top-k accuracies
    depth = len(run.rankings[0])
    top_k_hits = [0] * depth
    for best_hit in expected:
        if best_hit is not None:
            top_k_hits[best_hit:] = [v + 1 for v in top_k_hits[best_hit:]]
    for k in (1, 5, 20, depth):
        assert top_k_accuracy(got, k) == top_k_hits[k - 1] / len(questions)
    return got


def test_first_hit_ranks_string_mode_matches_reference_on_generated_nq_run():
    qa = qa_data.load_set("nq-dpr-test")[:500]
    run = qa_data.build_run(qa, pool_size=2000, depth=40, seed=3)
    got = _check_run(qa, run, "string")
    hits = [r for r in got if r is not None]
    assert len(hits) > 0.5 * len(qa) and len(set(hits)) > 15  # hits at many ranks
    assert sum(r is None for r in got) > 20
    for planted, rank in zip(run.planted, got):
        if planted is not None:
            assert rank is not None and rank <= planted


def test_first_hit_ranks_regex_mode_matches_reference_on_generated_trec_run(curated):
    rng = random.Random(5)
    witnessed = []
    for q, patterns in curated:
        w = [x for x in (regex_witness(p, rng) for p in patterns) if x]
        witnessed.append((q, w or [q]))
    run = qa_data.build_run(witnessed, pool_size=1500, depth=25, seed=8)
    got = _check_run(witnessed, run, "regex", answers_for_scoring=curated)
    assert sum(r is not None for r in got) > 0.5 * len(curated)


def test_first_hit_ranks_edge_cases():
    texts = {"a": "Paris is nice", "b": "nothing here", "c": ""}
    q = Question(id="q", text="", answers=("Paris",))
    empty = Question(id="e", text="", answers=("",))
    assert first_hit_ranks([], [], texts.__getitem__, mode="string") == []
    assert first_hit_ranks([q], [[]], texts.__getitem__, mode="string") == [None]
    assert first_hit_ranks([q, q], [["b", "a"], ["a"]], texts.__getitem__, mode="string") == [1, 0]
    assert first_hit_ranks([empty], [["c", "a"]], texts.__getitem__, mode="string") == [0]
    with pytest.raises(ValueError):
        first_hit_ranks([q], [], texts.__getitem__, mode="string")


def test_top_k_accuracy_hand_checked():
    ranks = [0, 1, None, 5, 19, 20, 99, None]
    assert top_k_accuracy(ranks, 1) == 1 / 8
    assert top_k_accuracy(ranks, 2) == 2 / 8
    assert top_k_accuracy(ranks, 5) == 2 / 8
    assert top_k_accuracy(ranks, 6) == 3 / 8
    assert top_k_accuracy(ranks, 20) == 4 / 8
    assert top_k_accuracy(ranks, 21) == 5 / 8
    assert top_k_accuracy(ranks, 100) == 6 / 8
    assert top_k_accuracy(ranks, 10_000) == 6 / 8
    assert top_k_accuracy([None, None], 100) == 0.0
    assert top_k_accuracy([0, 0, 0], 1) == 1.0
    assert top_k_accuracy([], 20) == 0.0
    for bad in (0, -1):
        with pytest.raises(ValueError):
            top_k_accuracy(ranks, bad)


def test_macro_average_hand_checked():
    assert macro_average({"P19": 0.5, "P20": 0.25, "P26": 1.0}) == pytest.approx(1.75 / 3)
    assert macro_average({"only": 0.7}) == 0.7
    # unweighted: a 1-question relation counts as much as a 1000-question one
    big = [0] * 1000  # all hit at rank 0
    small = [None]
    per_part = {"big": top_k_accuracy(big, 20), "small": top_k_accuracy(small, 20)}
    assert macro_average(per_part) == 0.5
    assert top_k_accuracy(big + small, 20) == pytest.approx(1000 / 1001)
    with pytest.raises(ValueError):
        macro_average({})

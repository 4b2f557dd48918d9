"""harness.data.passages: DPR-style 100-word passage splitting."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from harness.data.corpus_store import build_store
from harness.errors import InputFileError
from harness.data.passages import DPR_PASSAGE_WORDS, split_article, split_articles
from harness.api import Passage

#: Passage 1 of psgs_w100.tsv (title "Aaron"): exactly 100 split() tokens, the title included.
AARON_1 = (
    'Aaron Aaron ( or ; "Ahärôn") is a prophet, high priest, and the brother of Moses in the Abrahamic '
    "religions. Knowledge of Aaron, along with his brother Moses, comes exclusively from religious texts, "
    "such as the Bible and Quran. The Hebrew Bible relates that, unlike Moses, who grew up in the Egyptian "
    "royal court, Aaron and his elder sister Miriam remained with their kinsmen in the eastern border-land "
    "of Egypt (Goshen). When Moses first confronted the Egyptian king about the Israelites, Aaron served as "
    'his brother\'s spokesman ("prophet") to the Pharaoh. Part of the Law (Torah) that Moses received from'
)


def words(n: int, start: int = 0) -> list[str]:
    return [f"w{i}" for i in range(start, start + n)]


def test_exact_100_word_chunks_and_short_last_chunk():
    passages = split_article("T", " ".join(words(250)))
    assert DPR_PASSAGE_WORDS == 100
    assert [len(text.split()) for _, text in passages] == [100, 100, 50]
    assert passages[0] == ("T", " ".join(words(100)))
    assert passages[1] == ("T", " ".join(words(100, 100)))
    assert passages[2] == ("T", " ".join(words(50, 200)))


@pytest.mark.parametrize("n, sizes", [(100, [100]), (200, [100, 100]), (1, [1]), (99, [99]), (101, [100, 1])])
def test_chunk_boundaries(n, sizes):
    assert [len(t.split()) for _, t in split_article("T", " ".join(words(n)))] == sizes


@pytest.mark.parametrize("text", ["", "   ", "\n\t \u00a0\u2003"])
def test_no_tokens_no_passages(text):
    assert split_article("T", text) == []


def test_whitespace_runs_collapse_to_one_space():
    text = "  one\ttwo\n\nthree   four\r\nfive\u00a0six\u2003seven\x0beight  "
    assert split_article("T", text, words=3) == [
        ("T", "one two three"),
        ("T", "four five six"),
        ("T", "seven eight"),
    ]


def test_tokens_are_not_split_on_punctuation():
    assert split_article("T", 'a ( or ; "b") c-d e\'s', words=100) == [("T", 'a ( or ; "b") c-d e\'s')]


def test_words_parameter_and_validation():
    assert [t for _, t in split_article("T", "a b c d e", words=2)] == ["a b", "c d", "e"]
    with pytest.raises(ValueError):
        split_article("T", "a", words=0)


def test_prepend_title_counts_title_words_like_dpr():
    body = " ".join(AARON_1.split()[1:] + words(150))  # the article body after its title line
    passages = split_article("Aaron", body, prepend_title=True)
    assert passages[0] == ("Aaron", AARON_1)
    assert len(AARON_1.split()) == 100
    assert [len(t.split()) for _, t in passages] == [100, 100, 50]
    assert split_article("Two Words", "x y z", words=2, prepend_title=True) == [
        ("Two Words", "Two Words"),
        ("Two Words", "x y"),
        ("Two Words", "z"),
    ]


# --- split_articles -------------------------------------------------------------------------------


def write_articles(path: Path, articles) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for a in articles:
            f.write((a if isinstance(a, str) else json.dumps(a, ensure_ascii=False)) + "\n")
    return path


def read_tsv(path: Path) -> list[list[str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t"))


ARTICLES = [
    {"id": "ignored", "title": "First", "text": " ".join(words(230))},
    {"title": 'Tab\tand "quotes"', "text": "short one"},
    {"title": "Empty", "text": "  \n "},
    {"title": "Ünïcode 東京", "text": "naïve\ncafé\tdone " * 40},
]


@pytest.mark.parametrize("source_name, out_name", [("a.jsonl", "p.tsv"), ("a.jsonl.gz", "p.tsv.gz")])
def test_split_articles_writes_dpr_tsv(tmp_path, source_name, out_name):
    source = write_articles(tmp_path / source_name, ARTICLES)
    out = tmp_path / "out" / out_name
    count = split_articles(source, out, progress=False)
    rows = read_tsv(out)
    assert rows[0] == ["id", "text", "title"]
    assert count == len(rows) - 1 == 3 + 1 + 0 + 2
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(1, 7)]
    assert [r[2] for r in rows[1:]] == ["First"] * 3 + ['Tab\tand "quotes"'] + ["Ünïcode 東京"] * 2
    assert rows[1][1] == " ".join(words(100)) and rows[3][1] == " ".join(words(30, 200))
    assert rows[4][1] == "short one"
    assert [len(r[1].split()) for r in rows[5:]] == [100, 20]
    raw = gzip.decompress(out.read_bytes()) if out_name.endswith(".gz") else out.read_bytes()
    assert b"\r" not in raw and raw.count(b"\n") == 7
    assert sorted(p.name for p in out.parent.iterdir()) == [out_name]  # no temporary file left

    store = build_store(out, tmp_path / "store", name="split", progress=False)
    assert store.get("4") == Passage(id="4", title='Tab\tand "quotes"', text="short one")
    assert len(store) == 6


def test_split_articles_options(tmp_path):
    source = write_articles(tmp_path / "a.jsonl", [{"title": "A B", "text": "c d e"}, "", {"title": "F", "text": "g"}])
    out = tmp_path / "p.tsv"
    assert split_articles(source, out, words=2, prepend_title=True, first_id=10, progress=False) == 4
    assert read_tsv(out)[1:] == [["10", "A B", "A B"], ["11", "c d", "A B"], ["12", "e", "A B"], ["13", "F g", "F"]]


@pytest.mark.parametrize(
    "lines, line, message",
    [
        (['{"title": "A", "text": "x"}', '{"title": "B", "text": '], 2, "invalid JSON"),
        (['{"title": "A"}'], 1, '"text" missing'),
        (['{"text": "x"}'], 1, '"title" missing'),
        (['{"title": "A", "text": 3}'], 1, '"text" must be a string'),
        (["[1, 2]"], 1, "expected an object"),
    ],
)
def test_split_articles_errors_leave_output_untouched(tmp_path, lines, line, message):
    source = write_articles(tmp_path / "a.jsonl", lines)
    out = tmp_path / "p.tsv"
    out.write_text("previous content", encoding="utf-8")
    with pytest.raises(InputFileError, match=message) as info:
        split_articles(source, out, progress=False)
    assert str(info.value).startswith(f"{source}:{line}: ")
    assert out.read_text(encoding="utf-8") == "previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "p.tsv"]


def test_split_articles_missing_source(tmp_path):
    with pytest.raises(InputFileError, match="cannot read article file"):
        split_articles(tmp_path / "absent.jsonl", tmp_path / "p.tsv", progress=False)
    assert list(tmp_path.iterdir()) == []

"""Names as parts of file names (harness.util.filenames): one to one, short, and unchanged where a
name already is a safe file name."""

from __future__ import annotations

import hashlib
import os

import pytest

from harness.util.filenames import STEM_MAX, file_stem


@pytest.mark.parametrize("name", ["demo", "nq", "entityquestions-p17", "trivia.test", "eq_popularity-random-p19"])
def test_a_safe_lower_case_name_is_its_own_stem(name):
    assert file_stem(name) == name


def test_names_with_one_slug_get_stems_of_their_own():
    names = ["col x", "col_x", "col/x", "col\tx", "Col_x", "COL X", "col_x-" + hashlib.sha256(b"col x").hexdigest()[:8]]
    stems = [file_stem(n) for n in names]
    # one to one, also where case is ignored (macOS, Windows)
    assert len({s.lower() for s in stems}) == len(names)
    assert file_stem("col_x") == "col_x"
    assert file_stem("col x") == "col_x-" + hashlib.sha256(b"col x").hexdigest()[:8]


@pytest.mark.parametrize("name", ["s" * 300, "ü" * 300, "日本語" * 100, "../" * 100, "", ".", "..", "-rf", ".hidden"])
def test_every_stem_is_a_short_plain_file_name(name, tmp_path):
    stem = file_stem(name)
    assert len(stem.encode()) <= STEM_MAX + 9
    assert stem and "/" not in stem and not stem.startswith((".", "-"))
    # a file of that name (with the longest suffix harness adds, and a temporary name's) can be written
    (tmp_path / f".{stem}--r--12345678.json.{os.getpid()}.0123abcd.tmp").write_text("x")


def test_long_names_that_share_a_beginning_stay_apart():
    a, b = "q" * 200 + "a", "q" * 200 + "b"
    assert file_stem(a) != file_stem(b)

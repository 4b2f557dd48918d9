"""The right facts in errors: the line of a byte that is not UTF-8, counted after any such bytes and
without a byte-order mark.
"""

from __future__ import annotations

import json

import pytest

from harness.errors import InputFileError

# --- 7. the right facts in errors -------------------------------------------------------------


def test_line_numbers_after_bytes_that_are_not_utf8_and_no_bom(tmp_path):
    from harness.data.questions import read_questions

    lines = [f"question {i}?\t['a{i}']\n".encode() for i in range(3000)]
    lines[2500] = b"caf\xe9 ?\t['x']\n"
    path = tmp_path / "q.tsv"
    path.write_bytes(b"".join(lines))
    with pytest.raises(InputFileError, match=r"q.tsv:2501: not UTF-8"):
        read_questions(path, "dpr-tsv")
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps({"question": "who?", "answer": ["me"]}).encode() + b"\n")
    (question,) = read_questions(jsonl, "jsonl")
    assert question.text == "who?"
    tsv = tmp_path / "bom.tsv"
    tsv.write_bytes(b"\xef\xbb\xbfwho?\t['me']\n")
    assert read_questions(tsv, "dpr-tsv")[0].text == "who?"



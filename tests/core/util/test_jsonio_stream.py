"""Streaming the elements of one big JSON array (DPR's training files)."""

from __future__ import annotations

import io
import json

import pytest

from harness.errors import InputFileError
from harness.util.jsonio import iter_array


@pytest.mark.parametrize("chunk_size", [1, 7, 100, 1 << 20])
def test_elements_are_those_of_json_load(chunk_size):
    data = [{"question": f"q{i}", "answers": ["a"], "big": 12345678901234567890, "f": 1.5e3} for i in range(300)]
    text = "\ufeff" + json.dumps(data, indent=2)
    assert list(iter_array(io.StringIO(text), source="x", chunk_size=chunk_size)) == data
    assert list(iter_array(io.StringIO(" [ 12 , 3 ] "), source="x", chunk_size=chunk_size)) == [12, 3]
    assert list(iter_array(io.StringIO("[]"), source="x", chunk_size=chunk_size)) == []


def test_lines_of_elements():
    text = '[\n {"a": 1},\n\n {"a": 2}, {"a": 3}\n]'
    assert list(iter_array(io.StringIO(text), source="x", chunk_size=3, lines=True)) == [(2, {"a": 1}), (4, {"a": 2}), (4, {"a": 3})]


@pytest.mark.parametrize(
    "text, line, problem",
    [
        ("", 1, "expected a JSON array"),
        ("{}", 1, "expected a JSON array"),
        ("[1,2", 1, "the array is not closed"),
        ("[1,]", 1, "trailing comma"),
        ("[1 2]", 1, "expected ',' or ']'"),
        ("[1] x", 1, "text after the end"),
        ("[1,\n2,\n}", 3, "invalid JSON"),
        ("[12", 1, "the array is not closed"),
    ],
)
def test_malformed_arrays_are_one_line_errors(text, line, problem):
    with pytest.raises(InputFileError) as info:
        list(iter_array(io.StringIO(text), source="f.json", chunk_size=2))
    assert str(info.value).startswith(f"f.json:{line}: ") and problem in str(info.value)

"""One-line errors for hostile input: the assertion the integrity tests share."""

from __future__ import annotations


def one_line_exit_2(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("harness: error: "), err
    for fragment in fragments:
        assert fragment in err, err

"""Readers for question files (PROTOCOL section 3). Every problem is one line naming file and line.

- ``dpr-tsv``: DPR's ``*.qa.csv`` and anserini-tools' ``topics.*.txt``: ``question \\t answers``,
  no header, where ``answers`` is a Python list literal (read with ``ast.literal_eval``, never
  ``eval``). Despite the name these are CSV files with a tab delimiter: fields holding quotes are
  CSV-quoted, so they are read with ``csv.reader(f, delimiter="\\t")``, not split on tabs.
- ``jsonl``: one ``{"question": str, "answer": [str, ...]}`` per line (``"answers"`` accepted too).
- ``json-list``: EntityQuestions' ``[{"question": str, "answers": [str, ...]}, ...]``.
- ``squad-json``: SQuAD v1.1 (``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id",
  "question", "answers": [{"text"}]}]}]}]}``); a question's answers are its answer texts, in order,
  without repeats (repeats cannot change a match). Ids are SQuAD's question ids.

Question ids are the 0-based position in the file (as pyserini's DPR runs number them) unless a
prefix is given (``P19-0``...). Question text is kept as it is; the only normalisation the
references apply (``’`` to ``'``) happens when questions are sent to a retriever.
"""

from __future__ import annotations

import ast
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.util import jsonio
from harness.errors import InputFileError
from harness.api import Question

FORMATS = ("dpr-tsv", "jsonl", "json-list", "squad-json")


def _answers(value: Any, path: Path, line: int | None) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise InputFileError(path, f"answers must be a list of strings, got {type(value).__name__}", line=line)
    for i, answer in enumerate(value):
        if not isinstance(answer, str):
            shown = repr(answer) if len(repr(answer)) <= 40 else repr(answer)[:39] + "…"
            raise InputFileError(path, f"answers must be a list of strings; answer {i + 1} is {type(answer).__name__} {shown}",
                                 line=line)
    if not value:
        raise InputFileError(path, "question has no answers", line=line)
    return tuple(value)


def _question(value: Any, path: Path, line: int | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputFileError(path, "question must be a non-empty string", line=line)
    return value


def _binary(path: Path):
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputFileError(path, f"cannot read question file: {exc.strerror or exc}") from None


def _lines(path: Path, f) -> Iterator[str]:
    """The file's lines as text, decoded one at a time, so a byte that is not UTF-8 is reported on
    its own line; a byte-order mark at the start is dropped. Line ends are kept (csv needs them)."""
    for number, raw in enumerate(f, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputFileError(path, f"not UTF-8 text (byte {exc.start + 1} of the line)", line=number) from None
        if number == 1:
            text = text.removeprefix("\ufeff")
        yield text


def _read_dpr_tsv(path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    with _binary(path) as f:
        reader = csv.reader(_lines(path, f), delimiter="\t", strict=True)
        try:
            for row in reader:
                line = reader.line_num
                if not row or row == [""]:
                    continue
                if len(row) != 2:
                    raise InputFileError(
                        path, f"expected 2 tab-separated columns (question, answer list), got {len(row)}", line=line
                    )
                try:
                    literal = ast.literal_eval(row[1])
                except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                    raise InputFileError(
                        path, "answers must be a Python list literal such as ['a', 'b']", line=line
                    ) from None
                yield line, _question(row[0], path, line), _answers(literal, path, line)
        except csv.Error as exc:
            raise InputFileError(path, f"bad CSV quoting: {exc}", line=reader.line_num) from None


def _read_jsonl(path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    with _binary(path) as f:
        for line, text in enumerate(_lines(path, f), start=1):
            if not text.strip():
                continue
            record = jsonio.loads(text, source=path, line=line)
            if not isinstance(record, dict) or "question" not in record:
                raise InputFileError(path, 'expected an object with "question" and "answer"', line=line)
            key = "answer" if "answer" in record else "answers"
            if key not in record:
                raise InputFileError(path, 'missing "answer" (the list of answers)', line=line)
            yield line, _question(record["question"], path, line), _answers(record[key], path, line)


def _load_json(path: Path) -> Any:
    """A whole JSON document; invalid JSON, bad UTF-8 and absurd nesting are one-line errors
    naming the file (and the line)."""
    with _binary(path) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(path, "not UTF-8 text", line=line) from None
    return jsonio.loads(text.removeprefix("\ufeff"), source=path)


def _read_json_list(path: Path) -> Iterator[tuple[int | None, str, tuple[str, ...]]]:
    data = _load_json(path)
    if not isinstance(data, list):
        raise InputFileError(path, "expected a JSON list of {\"question\", \"answers\"} objects")
    for index, record in enumerate(data):
        where = f"item {index}: "
        if not isinstance(record, dict) or "question" not in record or "answers" not in record:
            raise InputFileError(path, where + 'expected an object with "question" and "answers"')
        try:
            yield None, _question(record["question"], path, None), _answers(record["answers"], path, None)
        except InputFileError as exc:
            raise InputFileError(path, where + exc.problem) from None


def load_squad(path: Path) -> list[dict[str, Any]]:
    """The ``data`` list of a SQuAD v1.1 JSON file, checked for the fields harness reads."""
    data = _load_json(path)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise InputFileError(path, 'expected a SQuAD object with a "data" list')
    for a, article in enumerate(articles):
        if not isinstance(article, dict) or not isinstance(article.get("title"), str) or not isinstance(
            article.get("paragraphs"), list
        ):
            raise InputFileError(path, f'data[{a}]: expected an article with "title" and "paragraphs"')
        for p, paragraph in enumerate(article["paragraphs"]):
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str) or not isinstance(
                paragraph.get("qas"), list
            ):
                raise InputFileError(path, f'data[{a}].paragraphs[{p}]: expected "context" and "qas"')
    return articles


def _read_squad(path: Path) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    for a, article in enumerate(load_squad(path)):
        for p, paragraph in enumerate(article["paragraphs"]):
            for i, qa in enumerate(paragraph["qas"]):
                where = f"data[{a}].paragraphs[{p}].qas[{i}]: "
                if not isinstance(qa, dict) or not isinstance(qa.get("answers"), list):
                    raise InputFileError(path, where + 'expected "id", "question" and "answers"')
                texts = [ans.get("text") if isinstance(ans, dict) else None for ans in qa["answers"]]
                try:
                    question = _question(qa.get("question"), path, None)
                    answers = _answers(list(dict.fromkeys(texts)), path, None)
                except InputFileError as exc:
                    raise InputFileError(path, where + exc.problem) from None
                yield str(qa.get("id", f"{a}-{p}-{i}")), question, answers


_READERS = {"dpr-tsv": _read_dpr_tsv, "jsonl": _read_jsonl, "json-list": _read_json_list}


def read_questions(path: str | Path, format: str, *, id_prefix: str = "") -> tuple[Question, ...]:
    """Every question of ``path`` in file order; ids are ``id_prefix`` + 0-based position (SQuAD:
    ``id_prefix`` + SQuAD's own question id)."""
    path = Path(path)
    if format == "squad-json":
        rows = list(_read_squad(path))
        if not rows:
            raise InputFileError(path, "no questions")
        return tuple(Question(id=f"{id_prefix}{qid}", text=text, answers=answers) for qid, text, answers in rows)
    if format not in _READERS:
        raise ValueError(f"unknown question format {format!r}; known: {', '.join(FORMATS)}")
    rows = list(_READERS[format](path))
    if not rows:
        raise InputFileError(path, "no questions")
    return tuple(
        Question(id=f"{id_prefix}{i}", text=text, answers=answers) for i, (_line, text, answers) in enumerate(rows)
    )

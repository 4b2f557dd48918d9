"""What users read cites works, never the development notes: no text a user sees names the
internal seed documents (``seed 003``, ``004 ch. 3``), the reference notes (``PROTOCOL``,
``METHODS.md``, ...) or the folders that hold them (``shared/seeds``, ``shared/reference``).

Scanned: the README and ``docs/``, every spec file and ``datasets_spec/README.md``, the board's
templates and assets, the committed board (``leaderboard/README.md``, ``leaderboard/html/``), the
example plugin's documentation,
every registered plugin's record (descriptions, option help, citations, published tables' notes
and provenance, ...) and the help of every ``harness`` command.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import click
import msgspec
import pytest

from helpers.paths import REPO

INTERNAL = re.compile(
    r"\bseeds? 00\d\b"                         # seed 003, seeds 000/001
    r"|\(seed 00\d|\bthe seeds'|\bthe seed's (?:prose|text)\b|\bseed (?:text|thes[ie]s|documents?)\b"
    r"|\b00\d (?:ch\.|§|Table|chapter)",      # 004 ch. 3, 000 §5.1
    re.IGNORECASE,
)
#: The development notes by name (as written: ``docs/training.md`` is a document users have).
NOTES = re.compile(
    r"\b(?:PROTOCOL|METHODS|PUBLISHED|TRAINING|ENVIRONMENT|STYLE)\.md\b|\bPROTOCOL (?:\d|section)"
    r"|shared/seeds|shared/reference"
)


def offending(text: str) -> list[str]:
    """Each internal reference in ``text``, with a little context."""
    matches = [*INTERNAL.finditer(text), *NOTES.finditer(text)]
    return [text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ") for m in matches]


def user_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    files += sorted(p for p in (REPO / "datasets_spec").rglob("*") if p.suffix in {".toml", ".md"})
    files += sorted(p for p in (REPO / "harness" / "board").rglob("*") if p.is_file() and p.suffix in {".j2", ".css", ".js"})
    files += [REPO / "leaderboard" / "README.md", *sorted((REPO / "leaderboard" / "html").glob("*.html"))]
    files += sorted((REPO / "examples").rglob("*.md"))
    return files


@pytest.mark.parametrize("path", user_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_user_facing_file_cites_internal_notes(path):
    assert offending(path.read_text(encoding="utf-8")) == [], path.relative_to(REPO).as_posix()


def strings(value: object, where: str, seen: set[int]) -> Iterator[tuple[str, str]]:
    """Every string inside a registered record, with where it sits (callables are not entered)."""
    if isinstance(value, str):
        yield where, value
        return
    if id(value) in seen or isinstance(value, (type, bytes, int, float, bool)) or value is None:
        return
    seen.add(id(value))
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            yield from strings(getattr(value, field.name), f"{where}.{field.name}", seen)
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            yield from strings(getattr(value, name), f"{where}.{name}", seen)
    elif isinstance(value, dict) or hasattr(value, "items") and callable(value.items):
        for key, item in value.items():
            yield from strings(item, f"{where}[{key!r}]", seen)
    elif isinstance(value, (list, tuple, frozenset, set)):
        for i, item in enumerate(value):
            yield from strings(item, f"{where}[{i}]", seen)


def test_no_registered_record_cites_internal_notes():
    from harness.registry import KINDS, registry

    found, scanned = [], 0
    for kind in KINDS:
        for spec in registry(kind):
            for where, text in strings(spec, f"{kind}:{getattr(spec, 'name', '?')}", set()):
                scanned += 1
                found += [f"{where}: {hit}" for hit in offending(text)]
    assert scanned > 500  # descriptions, option help and published tables' texts were reached
    assert found == []


def test_no_command_help_cites_internal_notes():
    from harness.cli.main import build_cli

    cli = build_cli()

    def helps(command: click.Command, path: str) -> Iterator[tuple[str, str]]:
        with click.Context(command, info_name=path) as ctx:
            yield path, command.get_help(ctx)
            if isinstance(command, click.Group):
                for name in command.list_commands(ctx):
                    yield from helps(command.get_command(ctx, name), f"{path} {name}")

    texts = dict(helps(cli, "harness"))
    assert {"harness run", "harness list", "harness leaderboard"} <= set(texts)
    assert [f"{path}: {hit}" for path, text in texts.items() for hit in offending(text)] == []


@pytest.mark.parametrize("text", [
    "UPR (seed 001): sum", "in seeds 000/001", "| 000 §5.1; 004 ch. 3 |", "alpha per suite (PROTOCOL 5)",
    "as summarised in PROTOCOL.md section 6", "(shared/seeds/004_3bb9e8e8ea5ed071.txt)",
    "see `../shared/reference/PROTOCOL.md`", "the seeds' variants", "The seed text (003) has lost",
    "Seed 001 is not the UPR paper", "TRAINING.md's UPR summary",
])
def test_the_pattern_catches_what_the_docs_once_said(text):
    assert offending(text)


@pytest.mark.parametrize("text", [
    "bootstrap intervals over 10,000 resamples (within each part); seed 0.", "--seed N", "Random(seed, epoch)",
    "three runs of one configuration in Hoang 2022", "DPR's protocol", "a row over several seeds matching each",
    "Sciavolino 2022 §5.1; Hoang 2022 ch. 3", "the `seed` a trained checkpoint's `training` record gives",
    "(first seed's run)", "train a dual encoder (docs/training.md)",
])
def test_the_pattern_leaves_ordinary_text_alone(text):
    assert offending(text) == []

"""Run formats: how a retrieval run written by some tool is read, described as a record.

Plugins register :class:`RunFormatSpec` records (``register_run_formats``); ``harness list
run-formats`` shows them, ``harness score --format NAME`` (or an alias) reads a file in one, and a
file given without ``--format`` is offered to each format's ``sniff`` in turn.

A format reads a file as a stream of :class:`RunEntry` records, one per question, in file order:
``entries(body, name, chunk)`` gets the file's bytes (``body``: already decompressed where the file
is gzip or a ``.tar.gz`` member), the name to use in messages and the read size, and yields each
question's passages best first. Every problem is one :class:`harness.errors.InputFileError` naming
``name`` and the line. The core then puts the entries on the suite's questions (``match``), checks
each ranking and scores it one question at a time, so a file of any size is read in bounded
memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Any, Literal

#: How a format's entries are put on a suite's questions.
#:
#: - ``"qid"``: each entry's ``qid`` is a suite question id or, for single-part suites, a position
#:   ``0..n-1`` into its questions (one or the other for the whole file);
#: - ``"record"``: by ``qid`` when the first entry's is a suite question id (then every entry's
#:   must be), otherwise by ``question`` text;
#: - ``"items"``: DPR's shape: list items (``where`` starting with ``"item "``) by position, object
#:   members by qid;
#: - ``"text"``: list items by question text, object members by qid.
RunMatch = Literal["qid", "record", "items", "text"]
RUN_MATCHES: tuple[str, ...] = ("qid", "record", "items", "text")


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One question of a run, checked: passage ids (bare strings), scores (floats, best first), the
    text matched for each passage (None where the file has none), its title and the file's own
    ``has_answer`` flag (informational only; the harness always recomputes).

    ``qid`` is the file's name for the question (None where it has none), ``question`` its text
    where the file gives it (checked against the suite's), ``answers`` the file's answers (never
    used for scoring; a difference is reported), ``line`` the line the entry starts on and
    ``where`` a prefix for messages (``"question 'q1': "``).
    """

    qid: str | None
    question: str | None
    answers: Any
    ids: list[str]
    scores: list[float]
    texts: list[str | None]
    titles: list[str | None]
    flags: list[bool | None]
    line: int
    where: str


#: ``entries(body, name, chunk)``: a format's reader (see the module notes).
EntryReader = Callable[[IO[bytes], str, int], Iterator[RunEntry]]


@dataclass(frozen=True, kw_only=True)
class RunFormatSpec:
    """A run format: its name, other spellings, how to recognise a file and how to read one.

    ``sniff(head, reopen)`` gets the file's first characters (up to 64 KiB, decoded, leading white
    space removed) and says whether they are unmistakably this format; ``reopen()`` opens the
    plain file's bytes from the start (a context manager) for a format that must look further,
    and is None for a compressed file. Formats are asked in ``sniff_order`` (lower first, then by
    name), so a format that is a special case of another (FlashRAG's items are JSON lists) asks
    before it. ``sniff=None``: never detected, only named (``--format``).

    ``compressed``: whether a gzip file or ``.tar.gz`` member in this format is read (decompressed
    as it streams); ``sniff_compressed``: whether a compressed file recognised as this format is
    read without naming the format. ``whole(path, questions, allow_index)`` and ``split(path,
    questions, mode=, allow_index=, name=)`` are the core's faster engines for its own formats (a
    plain file read at once into a run; a large JSON file scored in two halves, or None); a
    plugin's format leaves them unset and is read with ``entries``. ``question_suffix``: what the writing tool
    appends to a question that lacks it (Rankify: ``"?"``); a file's question then matches the
    suite's with or without it.
    """

    name: str
    description: str
    entries: EntryReader
    aliases: tuple[str, ...] = ()
    match: RunMatch = "qid"
    sniff: Callable[[str, Callable[[], AbstractContextManager[IO[bytes]]] | None], bool] | None = None
    sniff_order: int = 100
    compressed: bool = True
    sniff_compressed: bool = True
    whole: Callable[..., Any] | None = None
    split: Callable[..., Any] | None = None
    question_suffix: str = ""
    homepage: str = ""

    def __post_init__(self) -> None:
        if self.match not in RUN_MATCHES:
            raise ValueError(f"run format {self.name!r}: match must be one of {', '.join(RUN_MATCHES)}, got {self.match!r}")


__all__ = ["RUN_MATCHES", "EntryReader", "RunEntry", "RunFormatSpec", "RunMatch"]

"""Splitting articles into DPR-style passages.

What DPR did (Karpukhin et al. 2020, section 4.1, and the authors' answer in
facebookresearch/DPR issue #159, "we just used .split() on top of what is returned from
wikiextractor"): the Dec. 20, 2018 English Wikipedia dump was cleaned with WikiExtractor (with
DrQA's pre-processing; tables, infoboxes, lists and disambiguation pages removed), and each
article's text was split with Python's ``str.split()`` into whitespace-separated tokens, then into
consecutive, disjoint blocks of 100 tokens, the last block of an article keeping whatever is left
(so it may be shorter). Blocks ignore paragraph and sentence boundaries (passage 1 of the file
ends mid-sentence, "... that Moses received from", and passage 2 goes on "God at Sinai granted
Aaron the priesthood ..."). Each block became one passage, its tokens joined by single spaces, with
the article's title as the passage title. Passages were numbered 1, 2, ... over the whole dump in
article order (``psgs_w100.tsv``: ``id \\t text \\t title``, 21,015,324 passages).

The text DPR split included the article title as its first line (as in WikiExtractor's plain
``<doc>`` output, title line then body; DPR does not say which output it used), so the first
passage of every article starts with the title: passage 1 of ``psgs_w100.tsv`` is "Aaron Aaron ( or ; "Ahärôn") is a prophet, ..."
with title "Aaron", and it is exactly 100 ``split()`` tokens, the title counted among them.

What this module does:

- :func:`split_article` does that split on the text it is given: ``text.split()`` (any run of
  Unicode whitespace, including newlines and tabs, separates tokens; leading and trailing
  whitespace is dropped), blocks of ``words`` tokens joined by one space, the last block shorter
  when the token count is not a multiple of ``words``; a text with no tokens gives no passages.
  With ``prepend_title=True`` the title is placed before the text first, as in DPR's input, so the
  title's words count towards the first block. Text cleaning (markup, tables, lists) is not done
  here: give it already-clean text.
- :func:`split_articles` streams ``{"title": str, "text": str}`` JSON lines (other keys ignored,
  ``.gz`` accepted) through :func:`split_article` into a DPR-format TSV: header
  ``id\\ttext\\ttitle``, 1-based consecutive ids in article order, written with
  ``csv.writer(f, delimiter="\\t")`` (fields with quotes, tabs or newlines are CSV-quoted), ``\\n``
  line ends, written atomically (temporary file, then rename; gzip-compressed when the output name
  ends in ``.gz``). :func:`harness.data.corpus_store.build_store` reads the result with
  ``format="dpr-tsv"``.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import zlib
from pathlib import Path

from harness.util import jsonio
from harness.data.corpus_sources import not_utf8
from harness.util.atomic import fsync_path, remove_stale, temp_name
from harness.errors import HarnessError, InputFileError
from harness.util.progress import progress as _progress_bar

#: DPR's passage length in whitespace-separated words.
DPR_PASSAGE_WORDS = 100


def split_article(
    title: str, text: str, words: int = DPR_PASSAGE_WORDS, *, prepend_title: bool = False
) -> list[tuple[str, str]]:
    """``(title, passage_text)`` for each consecutive block of ``words`` whitespace-separated tokens.

    The last block may be shorter; an article with no tokens gives ``[]``. With ``prepend_title``
    the tokens of ``title`` come first (DPR's input had the title as the text's first line).
    """
    if words < 1:
        raise ValueError(f"words must be at least 1, got {words}")
    tokens = f"{title}\n{text}".split() if prepend_title else text.split()
    return [(title, " ".join(tokens[start : start + words])) for start in range(0, len(tokens), words)]


def check_output(path: str | os.PathLike, *, what: str = "output") -> Path:
    """``path`` as an output file written through a temporary sibling, or one line saying why it
    cannot be one: a folder, something other than a regular file (a device, a FIFO: renaming onto
    it would replace it), a folder path through a file, or a folder this process cannot write in.
    Checked before any work, so a long run does not end in an error it could have met first."""
    path = Path(path)
    if path.is_dir():
        raise HarnessError(f"{what} {path} is a folder")
    if path.exists() and not path.is_file():
        raise HarnessError(f"{what} {path} is not a regular file")
    existing = next((p for p in path.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise HarnessError(f"cannot write {what} {path}: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise HarnessError(f"cannot write {what} {path}: the folder {existing} is not writable")
    return path


def write_error(path: Path, exc: OSError, *, what: str = "output") -> HarnessError:
    """The one-line error for an output that could not be written (no space left, say)."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return HarnessError(f"cannot write {what} {path}: a part of its folder path is a file, not a folder")
    return HarnessError(f"cannot write {what} {path}: {exc.strerror or exc}")


def split_articles(
    source_jsonl: str | os.PathLike,
    out_tsv: str | os.PathLike,
    *,
    words: int = DPR_PASSAGE_WORDS,
    prepend_title: bool = False,
    first_id: int = 1,
    progress: bool = True,
) -> int:
    """Split every article of ``source_jsonl`` into passages written to ``out_tsv``; return their count.

    ``source_jsonl`` has one ``{"title": str, "text": str}`` object per line (plain or gzip);
    blank lines are skipped. Problems raise :class:`~harness.errors.InputFileError` naming the
    file and line, and leave ``out_tsv`` untouched.
    """
    if words < 1:
        raise ValueError(f"words must be at least 1, got {words}")
    source, out_tsv = Path(source_jsonl), check_output(out_tsv)
    try:
        raw = open(source, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputFileError(source, f"cannot read article file: {exc.strerror or exc}") from None
    try:
        out_tsv.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raw.close()
        raise write_error(out_tsv, exc) from None
    remove_stale(out_tsv.parent, out_tsv.name)
    tmp = temp_name(out_tsv)
    count = 0
    try:
        compressed = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        size = os.fstat(raw.fileno()).st_size
        with (
            io.TextIOWrapper(binary, encoding="utf-8-sig") as lines,
            open(tmp, "wb") as out_raw,
            _text_output(out_raw, gzipped=out_tsv.name.endswith(".gz")) as out,
            _progress_bar(enabled=progress, total=size, unit="B", unit_scale=True, desc="splitting") as bar,
        ):
            writer = csv.writer(out, delimiter="\t", lineterminator="\n")
            writer.writerow(["id", "text", "title"])
            line, done = 0, 0
            try:
                for line, text_line in enumerate(_reading(source, lines), start=1):
                    if not text_line.strip():
                        continue
                    title, text = _article(source, line, text_line)
                    for passage_title, passage_text in split_article(title, text, words, prepend_title=prepend_title):
                        writer.writerow([first_id + count, passage_text, passage_title])
                        count += 1
                    if line % 10_000 == 0:
                        position = raw.tell()
                        bar.update(position - done)
                        done = position
            except UnicodeDecodeError:
                raise not_utf8(source, line=line + 1) from None
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise InputFileError(source, f"corrupt gzip stream: {exc}") from None
        fsync_path(tmp)
        os.replace(tmp, out_tsv)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, (gzip.BadGzipFile, InputFileError)):
            raise write_error(out_tsv, exc) from None  # reading errors were turned into lines already
        raise
    finally:
        raw.close()
    return count


def _reading(source: Path, lines):
    """``lines``, with an error reading them (not decoding: that is the caller's) named as the
    source's, so that any other ``OSError`` comes from writing."""
    iterator = iter(lines)
    while True:
        try:
            text_line = next(iterator)
        except StopIteration:
            return
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError, zlib.error):
            raise
        except OSError as exc:
            raise InputFileError(source, f"cannot read article file: {exc.strerror or exc}") from None
        yield text_line


def _article(source: Path, line: int, text_line: str) -> tuple[str, str]:
    record = jsonio.loads(text_line, source=source, line=line)
    if not isinstance(record, dict):
        raise InputFileError(source, 'expected an object {"title", "text"}', line=line)
    for key in ("title", "text"):
        if not isinstance(record.get(key), str):
            what = "missing" if key not in record else f"must be a string, got {type(record[key]).__name__}"
            raise InputFileError(source, f'"{key}" {what}', line=line)
    return record["title"], record["text"]


def _text_output(raw: io.BufferedWriter, *, gzipped: bool) -> io.TextIOWrapper:
    # No file name and mtime 0 in the gzip header: the same articles give the same bytes.
    binary = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if gzipped else raw
    return io.TextIOWrapper(binary, encoding="utf-8", newline="")

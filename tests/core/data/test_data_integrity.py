"""Integrity checks that do not launder a changed file, one-line errors where a command used to end
in an internal error, and the true line of a byte that is not UTF-8.

- A file with no pinned checksum (DPR's training sets) is compared with the digest recorded at its
  first download on every use, by ``harness data verify`` too; a change is never re-recorded.
- ``make-training`` into an output that cannot be written is one line, exit 2, and leaves nothing.
- The corpus, training-file, article and question readers report the line of the bad byte.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.errors import HarnessError, InputFileError
from helpers.integrity import one_line_exit_2
from helpers.paths import REPO

# ------------------------------------------------------------------ a file with no pinned checksum


def _unpinned(tmp_path: Path, content: bytes):
    from harness.data.download import RemoteFile

    source = tmp_path / "mirror" / "train.json"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(content)
    return RemoteFile(url=source.as_uri(), path="dpr/train.json"), source


@pytest.mark.parametrize("large", [False, True], ids=["small-file", "large-file"])
def test_an_unpinned_file_changed_after_its_download_is_refused_and_never_re_recorded(tmp_path, monkeypatch, large):
    from harness.data import download

    if large:
        monkeypatch.setattr(download, "REHASH_BYTES", 0)  # the stat-record path of big files
    content = b'[{"question": "q", "answers": ["a"]}]\n' * 50
    remote, _ = _unpinned(tmp_path, content)
    data = tmp_path / "data"
    first = download.fetch(remote, data_dir=data, progress=False)
    assert first.downloaded and not first.verified
    recorded = hashlib.sha256(content).hexdigest()
    assert download.recorded_sha256(first.path) == recorded

    first.path.write_bytes(content.replace(b'"a"', b'"b"'))  # edited after the download
    changed = hashlib.sha256(first.path.read_bytes()).hexdigest()
    for _ in range(2):  # refused every time: the first refusal recorded nothing
        with pytest.raises(download.ChecksumError) as caught:
            download.fetch(remote, data_dir=data, progress=False)
        message = str(caught.value)
        assert str(first.path) in message and recorded in message and changed in message
        assert "delete it" in message and "\n" not in message
        assert download.recorded_sha256(first.path) == recorded
    with pytest.raises(download.ChecksumError, match=recorded):
        download.verify(first.path, sha256=None)
    with pytest.raises(download.ChecksumError, match=recorded):  # a failed verify dropped nothing either
        download.fetch(remote, data_dir=data, progress=False)

    first.path.unlink()  # what the message says to do: the next use downloads it afresh
    again = download.fetch(remote, data_dir=data, progress=False)
    assert again.downloaded and again.sha256 == recorded


def test_an_unpinned_file_touched_but_unchanged_is_used(tmp_path, monkeypatch):
    from harness.data import download

    monkeypatch.setattr(download, "REHASH_BYTES", 0)
    remote, _ = _unpinned(tmp_path, b"[]\n")
    first = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    os.utime(first.path, ns=(1, 1))  # another modification time: re-hashed, and still the same bytes
    again = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    assert not again.downloaded and again.sha256 == first.sha256


def test_a_damaged_record_of_an_unpinned_file_is_an_error_not_a_new_record(tmp_path):
    from harness.data import download

    remote, _ = _unpinned(tmp_path, b"[]\n")
    first = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    record = first.path.with_name(f".{first.path.name}.verified")
    record.write_text('{"sha256": "not a digest"}')
    with pytest.raises(download.ChecksumError, match=r"\.train\.json\.verified: the record .* is damaged"):
        download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    assert json.loads(record.read_text()) == {"sha256": "not a digest"}


def test_a_named_training_set_edited_after_its_download_is_refused_by_fetch_train_and_verify(tmp_path, monkeypatch, capsys):
    from harness_builtins.datasets.loading import training_file

    mirror = tmp_path / "mirror.json"
    from harness.data.training import write_training_examples
    from helpers.training_models import examples

    write_training_examples(mirror, examples())
    specs = tmp_path / "specs" / "training"
    specs.mkdir(parents=True)
    (specs / "mine.toml").write_text(
        f'name = "mine"\ndescription = "d"\nurl = "{mirror.as_uri()}"\npath = "mine/train.json"\nformat = "dpr-json"\n'
        'license = "l"\ncitation = "c"\nhomepage = "https://example.org"\n'
    )
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs.parent))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    path = training_file("mine", progress=False)
    recorded = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_bytes(path.read_bytes().replace(b"red", b"RED"))
    found = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(HarnessError, match=f"its sha256 is {found}, but {recorded} was recorded"):
        training_file("mine", progress=False)  # what harness train --data mine opens
    capsys.readouterr()
    code = main(["data", "fetch", "mine", "--no-progress"])
    one_line_exit_2(code, capsys.readouterr().err, str(path), recorded, found)
    code = main(["data", "verify", "mine", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and f"BAD  {path} changed after it was first downloaded" in out and recorded in out
    code = main(["data", "verify", "mine", "--no-progress"])  # the failed verify recorded nothing
    assert code == 1 and recorded in capsys.readouterr().out


# ------------------------------------------------------------------- outputs that cannot be written


def test_make_training_into_an_unwritable_output_is_one_line_before_any_retrieval(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "file" / "train.json")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write --output", "is a file, not a folder")
    assert not (tmp_path / "cache").exists()  # refused before indexing anything


NO_SPACE = """
import resource, signal, sys
from pathlib import Path
from harness.data.passages import split_articles
from harness.data.training import write_training_examples
from harness.api import Passage, TrainingExample
from harness.errors import HarnessError

def examples():
    passage = Passage(id="p", title="t", text="some text " * 20)
    return [TrainingExample(question=f"q{i}", answers=("a",), positives=(passage,)) for i in range(16)]

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
out = Path(sys.argv[1])
for write in (lambda: write_training_examples(out / "train.json", examples() * 20),
              lambda: split_articles(out / "articles.jsonl", out / "passages.tsv", progress=False)):
    try:
        write()
    except HarnessError as exc:
        print("ERROR", exc)
"""


def test_an_output_that_runs_out_of_room_is_one_line_and_leaves_nothing(tmp_path):
    (tmp_path / "articles.jsonl").write_text("".join(
        json.dumps({"title": f"A{i}", "text": "word " * 300}) + "\n" for i in range(10)))
    done = subprocess.run([sys.executable, "-c", NO_SPACE, str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 2, done.stdout + done.stderr[-2000:]
    assert lines[0] == f"ERROR cannot write output {tmp_path / 'train.json'}: File too large"
    assert lines[1] == f"ERROR cannot write output {tmp_path / 'passages.tsv'}: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["articles.jsonl"]


# ------------------------------------------------------------------------ the line of a bad byte


def _tsv(lines: int, bad_line: int) -> bytes:
    rows = [b"id\ttext\ttitle"] + [
        f"{i}\tpassage number {i} with some words to fill the line\tTitle {i}".encode() for i in range(1, lines)
    ]
    rows[bad_line - 1] = rows[bad_line - 1].replace(b"passage", b"pass\xffage")
    return b"\n".join(rows) + b"\n"


@pytest.mark.parametrize("name", ["psgs.tsv", "psgs.tsv.gz"])
def test_a_bad_byte_on_line_15000_of_a_20000_line_corpus_tsv_is_reported_there(tmp_path, name):
    from harness.data.corpus_store import build_store

    data = _tsv(20_000, 15_000)
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(InputFileError) as caught:
        build_store(tmp_path / name, tmp_path / "store", format="dpr-tsv", name="c", progress=False)
    assert str(caught.value) == f"{tmp_path / name}:15000: not UTF-8 text (byte 11 of the line)"
    assert not (tmp_path / "store").exists()


def test_a_bad_byte_in_a_jsonl_corpus_is_reported_on_its_line(tmp_path):
    from harness.data.corpus_store import build_store

    rows = [json.dumps({"id": str(i), "title": "t", "text": f"text {i} " * 5}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"text", b"t\xc3\x28xt", 1)  # a broken two-byte sequence
    (tmp_path / "c.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r"c.jsonl:15000: not UTF-8 text \(byte 33 of the line\)$"):
        build_store(tmp_path / "c.jsonl", tmp_path / "store", format="jsonl", name="c", progress=False)


EXAMPLE = {"question": "q", "answers": ["a"], "positive_ctxs": [{"title": "t", "text": "a text"}],
           "negative_ctxs": [], "hard_negative_ctxs": []}


@pytest.mark.parametrize("name", ["train.jsonl", "train.json", "train.json.gz", "pretty.json"])
def test_a_bad_byte_on_line_98_of_a_training_file_is_reported_there(tmp_path, name):
    from harness.data.training import read_training_examples

    if name == "pretty.json":  # DPR's own layout: indented, an example over many lines
        lines = json.dumps([EXAMPLE] * 40, indent=4).encode().split(b"\n")
    elif name.startswith("train.jsonl"):
        lines = [json.dumps({**EXAMPLE, "question": f"q{i}"}).encode() for i in range(200)]
    else:
        lines = [b"["] + [json.dumps({**EXAMPLE, "question": f"q{i}"}).encode() + b"," for i in range(200)]
        lines[-1] = lines[-1].rstrip(b",")
        lines.append(b"]")
    assert b'"' in lines[97]
    lines[97] = lines[97].replace(b'"', b'"\xe9', 1)  # Latin-1, not UTF-8
    column = lines[97].index(b"\xe9") + 1
    data = b"\n".join(lines) + b"\n"
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(InputFileError) as caught:
        list(read_training_examples(tmp_path / name))
    assert str(caught.value) == f"{tmp_path / name}:98: not UTF-8 text (byte {column} of the line)"


def test_a_bad_byte_in_an_article_file_is_reported_on_its_line(tmp_path):
    from harness.data.passages import split_articles

    rows = [json.dumps({"title": f"A{i}", "text": "word " * 50}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"word", b"wo\xffrd", 1)
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r"a.jsonl:15000: not UTF-8 text \(byte 32 of the line\)$"):
        split_articles(tmp_path / "a.jsonl", tmp_path / "p.tsv", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


@pytest.mark.parametrize("format", ["dpr-tsv", "jsonl"])
def test_a_bad_byte_in_a_question_file_is_reported_on_its_line(tmp_path, format):
    from harness.data.questions import read_questions

    if format == "dpr-tsv":
        rows = [f"question {i}?\t['answer {i}']".encode() for i in range(20_000)]
    else:
        rows = [json.dumps({"question": f"question {i}?", "answer": [f"answer {i}"]}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"question", b"ques\xfftion", 1)
    (tmp_path / "q").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r":15000: not UTF-8 text"):
        read_questions(tmp_path / "q", format)


def test_the_scan_for_a_bad_byte_is_exact_across_chunk_boundaries(tmp_path, monkeypatch):
    """Multi-byte characters cut by chunk boundaries are not taken for bad bytes; the line and
    byte found are those of a straight count over the whole file."""
    from harness.data import corpus_sources

    text = "".join(f"line {i}: ünïcødé €uro 𝄞 {'x' * (i % 7)}\n" for i in range(300)).encode()
    for bad_at in (0, 17, len(text) // 2, len(text) - 2):
        data = text[:bad_at] + b"\x80" + text[bad_at:]
        (tmp_path / "f").write_bytes(data)
        expected = (data.count(b"\n", 0, bad_at) + 1, bad_at - (data.rfind(b"\n", 0, bad_at) + 1) + 1)
        for chunk in (1, 3, 7, 64, 1 << 20):
            monkeypatch.setattr(corpus_sources, "_SCAN_CHUNK", chunk)
            assert corpus_sources.first_bad_utf8(tmp_path / "f") == expected, (bad_at, chunk)
    (tmp_path / "f").write_bytes(text + "é".encode()[:1])  # a character cut short at the end
    assert corpus_sources.first_bad_utf8(tmp_path / "f") == (301, 1)
    (tmp_path / "f").write_bytes(text)
    assert corpus_sources.first_bad_utf8(tmp_path / "f") is None

"""harness.data.corpus_store: building, opening and reading on-disk passage stores."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import harness.data.corpus_store as cs
from harness.data.corpus_store import CorpusStore, build_store, open_or_build
from harness.api.corpus import PassageFingerprint, corpus_fingerprint
from harness.errors import HarnessError, InputFileError, UnknownNameError
from harness.api import Corpus, InMemoryCorpus, Passage
from helpers.corpus_files import write_tsv

#: Tricky passages: quotes, tabs and newlines inside text, unicode, empty titles, long text.
PASSAGES = (
    Passage(id="1", title="Aaron", text='Aaron Aaron ( or ; "Ahärôn") is a prophet, high priest'),
    Passage(id="2", title="Aaron", text="God at Sinai granted Aaron the priesthood"),
    Passage(id="3", title="", text="a passage with an empty title"),
    Passage(id="4", title='Title, with "quotes"', text="tab\tinside and\nnewline inside"),
    Passage(id="5", title="Ünïcödé — 東京 😀", text="naïve café Δ λ; zero-width\u200bjoiner"),
    Passage(id="6", title="Empty text", text=""),
    Passage(id="7", title="Long", text=" ".join(f"word{i}" for i in range(2000))),
    Passage(id="8", title="Quotes inside", text='a "quoted" phrase, ""doubled"" too'),
    Passage(id="9", title="Backslash", text="C:\\path\\to and \\t is not a tab"),
    Passage(id="10", title="Spaces", text="  leading and trailing spaces kept  "),
)

#: The same passages with ids that are not 1..n (the hash index path).
STRING_IDS = tuple(
    Passage(id=i, title=p.title, text=p.text)
    for i, p in zip(["doc-a", "wiki:2", "ü-3", "10", "007", "x y", "1", "-5", "C", "dup?"], PASSAGES)
)




def write_jsonl(path: Path, passages) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for p in passages:
            f.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
    return path


def build(source: Path, out: Path, **kwargs) -> CorpusStore:
    kwargs.setdefault("name", "test")
    kwargs.setdefault("progress", False)
    return build_store(source, out, **kwargs)


def assert_same_corpus(store: CorpusStore, passages) -> None:
    passages = list(passages)
    assert len(store) == len(passages)
    assert list(store) == passages
    for p in passages:
        assert store.get(p.id) == p
        assert store.text(p.id) == p.text
        assert store.title(p.id) == p.title
        assert p.id in store
    assert store.get_many([p.id for p in reversed(passages)]) == passages[::-1]
    assert store.texts([p.id for p in passages]) == [p.text for p in passages]
    assert [store.passage_at(r) for r in range(len(passages))] == passages
    assert store.fingerprint == InMemoryCorpus("x", passages).fingerprint


# --- building from each source format -----------------------------------------------------------


@pytest.mark.parametrize("filename", ["psgs.tsv", "psgs.tsv.gz", "psgs.tsv.gz.renamed"])
def test_build_from_dpr_tsv(tmp_path, filename):
    source = tmp_path / filename
    if filename.endswith(".renamed"):  # gzip is detected by its magic bytes, not the name
        write_tsv(tmp_path / "x.gz", PASSAGES).rename(source)
    else:
        write_tsv(source, PASSAGES)
    store = build(source, tmp_path / "store", name="wiki")
    assert store.name == "wiki"
    assert store.meta["id_index"] == "dense"
    assert store.meta["source"]["compressed"] == (filename != "psgs.tsv")
    assert_same_corpus(store, PASSAGES)


@pytest.mark.parametrize("filename", ["psgs.jsonl", "psgs.jsonl.gz"])
def test_build_from_jsonl(tmp_path, filename):
    source = write_jsonl(tmp_path / filename, STRING_IDS)
    store = build(source, tmp_path / "store", format="jsonl")
    assert store.meta["id_index"] == "hash"
    assert_same_corpus(store, STRING_IDS)


def test_dpr_file_quoting_as_published(tmp_path):
    """The first rows of psgs_w100.tsv in the file's own quoting (every text field quoted)."""
    source = tmp_path / "psgs_w100.tsv"
    source.write_text(
        "id\ttext\ttitle\n"
        '1\t"Aaron Aaron ( or ; ""Ahärôn"") is a prophet"\tAaron\n'
        '2\t"God at Sinai granted Aaron the priesthood"\tAaron\n'
        '3\tunquoted "inner" quotes stay\t"Title, with ""quotes"""\n',
        encoding="utf-8",
    )
    store = build(source, tmp_path / "store")
    assert list(store) == [
        Passage(id="1", title="Aaron", text='Aaron Aaron ( or ; "Ahärôn") is a prophet'),
        Passage(id="2", title="Aaron", text="God at Sinai granted Aaron the priesthood"),
        Passage(id="3", title='Title, with "quotes"', text='unquoted "inner" quotes stay'),
    ]


def test_jsonl_integer_ids_missing_title_extra_keys_blank_lines(tmp_path):
    source = tmp_path / "c.jsonl"
    source.write_text(
        '{"id": 1, "text": "one", "url": "ignored"}\n\n{"id": 2, "title": "T", "text": "two"}\n', encoding="utf-8"
    )
    store = build(source, tmp_path / "store", format="jsonl")
    assert list(store) == [Passage(id="1", title="", text="one"), Passage(id="2", title="T", text="two")]
    assert store.meta["id_index"] == "dense"


def test_blank_lines_in_tsv_are_skipped(tmp_path):
    source = tmp_path / "c.tsv"
    source.write_text("id\ttext\ttitle\n1\tone\tA\n\n2\ttwo\tB\n", encoding="utf-8")
    assert [p.id for p in build(source, tmp_path / "store")] == ["1", "2"]


def test_utf8_bom_is_accepted(tmp_path):
    source = tmp_path / "c.tsv"
    source.write_bytes("\ufeffid\ttext\ttitle\n1\tone\tA\n".encode())
    assert list(build(source, tmp_path / "store")) == [Passage(id="1", title="A", text="one")]


# --- many batches, order, ids ---------------------------------------------------------------------


def many_passages(n: int, ids=None):
    ids = ids or [str(i) for i in range(1, n + 1)]
    return [Passage(id=i, title=f"T{k % 7}", text=f"text of passage {k} é" * (k % 5)) for k, i in enumerate(ids)]


@pytest.mark.parametrize("batch_rows, batch_bytes", [(3, 1 << 20), (1000, 64)])
def test_many_batches_keep_order(tmp_path, monkeypatch, batch_rows, batch_bytes):
    monkeypatch.setattr(cs, "BATCH_ROWS", batch_rows)
    monkeypatch.setattr(cs, "BATCH_BYTES", batch_bytes)
    passages = many_passages(50)
    store = build(write_tsv(tmp_path / "c.tsv", passages), tmp_path / "store")
    assert store._reader.num_record_batches > 5
    assert_same_corpus(store, passages)
    assert sum(b.num_rows for b in store.iter_batches()) == 50
    assert [b.num_columns for b in store.iter_batches(["text"])][0] == 1


def test_ids_dense_at_first_then_not(tmp_path, monkeypatch):
    """Rows already written with dense ids get hashed when a later id breaks the pattern."""
    monkeypatch.setattr(cs, "BATCH_ROWS", 4)
    ids = [str(i) for i in range(1, 11)] + ["eleven", "12", "x"]
    passages = many_passages(len(ids), ids)
    store = build(write_tsv(tmp_path / "c.tsv", passages), tmp_path / "store")
    assert store.meta["id_index"] == "hash"
    assert_same_corpus(store, passages)


@pytest.mark.parametrize("passages", [PASSAGES, STRING_IDS], ids=["dense", "hash"])
def test_unknown_ids_raise_key_error(tmp_path, passages):
    store = build(write_tsv(tmp_path / "c.tsv", passages), tmp_path / "store")
    for missing in ["0", "11", "01", "+1", " 1", "1 ", "1.0", "١", "²", "", "nope", "doc-A", 1, None]:
        if any(p.id == missing for p in passages):
            continue
        with pytest.raises(KeyError):
            store.get(missing)
        with pytest.raises(KeyError):
            store.text(missing)
        assert missing not in store
        with pytest.raises(KeyError):
            store.get_many([passages[0].id, missing])


def test_hash_collisions_are_resolved_by_id(tmp_path, monkeypatch):
    """With a hash that collides constantly, lookups and duplicate detection still work."""
    monkeypatch.setattr(cs, "id_hash", lambda b: len(b) % 3)
    store = build(write_jsonl(tmp_path / "c.jsonl", STRING_IDS), tmp_path / "store", format="jsonl")
    assert_same_corpus(store, STRING_IDS)
    for missing in ["nope", "doc-b", "zz"]:
        with pytest.raises(KeyError):
            store.get(missing)
    # a, b, a: the two "a"s are not adjacent in the sorted index (b shares their hash).
    dup = [Passage(id="aa", title="", text="1"), Passage(id="bb", title="", text="2"), Passage(id="aa", title="", text="3")]
    with pytest.raises(InputFileError, match=r"c2\.jsonl:3: duplicate passage id 'aa' \(first at line 1\)"):
        build(write_jsonl(tmp_path / "c2.jsonl", dup), tmp_path / "store2", format="jsonl")


def test_fingerprint_helpers_match_in_memory_corpus():
    expected = InMemoryCorpus("x", PASSAGES).fingerprint
    assert corpus_fingerprint(PASSAGES) == expected
    fp = PassageFingerprint()
    for p in PASSAGES:
        fp.update_encoded(p.id.encode(), p.title.encode(), p.text.encode())
    assert fp.value == expected
    assert corpus_fingerprint(PASSAGES[:-1]) != expected
    assert corpus_fingerprint([PASSAGES[1], PASSAGES[0], *PASSAGES[2:]]) != expected


def test_fingerprint_is_the_same_for_every_source_format(tmp_path):
    stores = [
        build(write_tsv(tmp_path / "a.tsv", PASSAGES), tmp_path / "s1"),
        build(write_tsv(tmp_path / "a.tsv.gz", PASSAGES), tmp_path / "s2"),
        build(write_jsonl(tmp_path / "a.jsonl", PASSAGES), tmp_path / "s3", format="jsonl"),
    ]
    assert len({s.fingerprint for s in stores}) == 1
    assert stores[0].fingerprint == InMemoryCorpus("x", PASSAGES).fingerprint


# --- malformed inputs -------------------------------------------------------------------------------

HEADER = "id\ttext\ttitle\n"
BAD_INPUTS = [
    # (name, format, content, line, message regex)
    ("bad-header.tsv", "dpr-tsv", "id\ttitle\ttext\n1\ta\tb\n", 1, "expected the header"),
    ("no-header.tsv", "dpr-tsv", "1\ta\tb\n", 1, "expected the header"),
    ("empty.tsv", "dpr-tsv", "", 1, "empty file"),
    ("two-columns.tsv", "dpr-tsv", HEADER + "1\ta\tA\n2\tb\n", 3, "expected 3 tab-separated columns .* got 2"),
    ("four-columns.tsv", "dpr-tsv", HEADER + "1\ta\tA\n2\tb\tB\textra\n", 3, "got 4"),
    ("multiline.tsv", "dpr-tsv", HEADER + '1\t"a\n\nb"\tA\n2\t"stray\tB\n3\tc\tC\n', 5, "runs over lines 5-6"),
    ("empty-id.tsv", "dpr-tsv", HEADER + "1\ta\tA\n\tb\tB\n", 3, "empty passage id"),
    ("dup-dense.tsv", "dpr-tsv", HEADER + "1\ta\tA\n2\tb\tB\n3\tc\tC\n2\td\tD\n", 5, r"duplicate passage id '2' \(first at line 3\)"),
    ("dup-string.tsv", "dpr-tsv", HEADER + 'x\ta\tA\ny\t"b\nb"\tB\ny\tc\tC\n', 5, r"duplicate passage id 'y' \(first at line 3\)"),
    ("header-only.tsv", "dpr-tsv", HEADER, None, "no passages"),
    ("invalid.jsonl", "jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "text": \n', 2, "invalid JSON"),
    ("not-object.jsonl", "jsonl", '["a", "x"]\n', 1, "expected an object"),
    ("no-id.jsonl", "jsonl", '{"text": "x"}\n', 1, '"id" missing'),
    ("float-id.jsonl", "jsonl", '{"id": 1.5, "text": "x"}\n', 1, '"id" must be a string or integer'),
    ("empty-id.jsonl", "jsonl", '{"id": "", "text": "x"}\n', 1, "empty passage id"),
    ("no-text.jsonl", "jsonl", '{"id": "a", "title": "t"}\n', 1, 'missing "text"'),
    ("contents.jsonl", "jsonl", '{"id": "a", "contents": "t\\nx"}\n', 1, '"contents" is not read'),
    ("int-title.jsonl", "jsonl", '{"id": "a", "title": 3, "text": "x"}\n', 1, '"title" must be a string'),
    ("dup.jsonl", "jsonl", '{"id": "a", "text": "x"}\n\n{"id": "a", "text": "y"}\n', 3, r"duplicate passage id 'a' \(first at line 1\)"),
]


@pytest.mark.parametrize("name, format, content, line, message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_malformed_input_is_one_line_error_and_leaves_nothing(tmp_path, name, format, content, line, message):
    source = tmp_path / "in" / name
    source.parent.mkdir()
    source.write_text(content, encoding="utf-8")
    out = tmp_path / "out" / "store"
    with pytest.raises(InputFileError, match=message) as info:
        build(source, out, format=format)
    where = f"{source}:{line}: " if line is not None else f"{source}: "
    assert str(info.value).startswith(where)
    assert "\n" not in str(info.value)
    assert not out.exists()
    assert list(out.parent.iterdir()) == []  # no temporary directory left behind


def test_not_utf8_and_corrupt_gzip(tmp_path):
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes(HEADER.encode() + "1\tcaf\xe9\tA\n".encode("latin-1"))
    with pytest.raises(InputFileError, match="not UTF-8"):
        build(bad, tmp_path / "s1")
    truncated = tmp_path / "cut.tsv.gz"
    data = gzip.compress((HEADER + "".join(f"{i}\ttext {i}\tT\n" for i in range(1, 5000))).encode())
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputFileError, match="corrupt gzip"):
        build(truncated, tmp_path / "s2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.tsv.gz", "latin1.tsv"]


def test_missing_source_and_unknown_format(tmp_path):
    with pytest.raises(InputFileError, match="cannot read corpus file"):
        build(tmp_path / "absent.tsv", tmp_path / "store")
    with pytest.raises(UnknownNameError, match="unknown corpus format 'csv'"):
        build(tmp_path / "absent.tsv", tmp_path / "store", format="csv")
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_overwrite(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", PASSAGES)
    build(source, tmp_path / "store")
    with pytest.raises(HarnessError, match="already exists"):
        build(source, tmp_path / "store")
    old = CorpusStore.open(tmp_path / "store")
    store = build(write_tsv(tmp_path / "c2.tsv", PASSAGES[:3]), tmp_path / "store", overwrite=True)
    assert len(store) == 3
    assert len(old) == len(PASSAGES) and old.get("7") == PASSAGES[6]  # still readable: its maps survive
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tsv", "c2.tsv", "store"]


def test_a_store_finished_concurrently_by_another_build(tmp_path):
    """Two processes building the same store: the second to finish keeps the first's if identical."""
    import shutil

    source = write_tsv(tmp_path / "c.tsv", PASSAGES)
    build(source, tmp_path / "first")
    shutil.copytree(tmp_path / "first", tmp_path / "same")
    cs._move_into_place(tmp_path / "same", tmp_path / "first", overwrite=False)
    assert not (tmp_path / "same").exists()
    assert list(CorpusStore.open(tmp_path / "first")) == list(PASSAGES)

    build(write_tsv(tmp_path / "d.tsv", PASSAGES[:2]), tmp_path / "other")
    with pytest.raises(HarnessError, match="was created while"):
        cs._move_into_place(tmp_path / "other", tmp_path / "first", overwrite=False)
    assert len(CorpusStore.open(tmp_path / "first")) == len(PASSAGES)


def test_failed_rebuild_keeps_the_old_store(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", PASSAGES)
    build(source, tmp_path / "store")
    bad = tmp_path / "bad.tsv"
    bad.write_text("nonsense\n", encoding="utf-8")
    with pytest.raises(InputFileError):
        build(bad, tmp_path / "store", overwrite=True)
    assert list(CorpusStore.open(tmp_path / "store")) == list(PASSAGES)


# --- opening ------------------------------------------------------------------------------------------


def test_reopen_and_metadata(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", PASSAGES)
    built = build(source, tmp_path / "store", name="wiki")
    store = CorpusStore.open(tmp_path / "store")
    assert isinstance(store, Corpus)
    assert store.name == "wiki" and store.fingerprint == built.fingerprint
    assert_same_corpus(store, PASSAGES)
    meta = json.loads((tmp_path / "store" / "meta.json").read_text())
    assert meta["format"] == "harness-corpus-store" and meta["version"] == 1
    assert meta["passages"] == len(PASSAGES)
    assert meta["columns"] == ["id", "title", "text"]
    assert meta["source"]["size"] == source.stat().st_size
    assert meta["source"]["mtime_ns"] == source.stat().st_mtime_ns
    assert meta["source"]["format"] == "dpr-tsv"
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [".harness-complete.json", "meta.json", "passages.arrow"]
    assert pickle.loads(pickle.dumps(store)).get("5") == PASSAGES[4]
    assert "wiki" in repr(store)


def test_hash_store_files(tmp_path):
    build(write_jsonl(tmp_path / "c.jsonl", STRING_IDS), tmp_path / "store", format="jsonl")
    names = sorted(p.name for p in (tmp_path / "store").iterdir())
    assert names == [".harness-complete.json", "id_hash.npy", "id_row.npy", "meta.json", "passages.arrow"]
    assert_same_corpus(CorpusStore.open(tmp_path / "store"), STRING_IDS)


def test_open_rejects_what_is_not_a_store(tmp_path):
    with pytest.raises(HarnessError, match="not a corpus store"):
        CorpusStore.open(tmp_path)
    (tmp_path / "meta.json").write_text('{"format": "something else"}')
    with pytest.raises(HarnessError, match="not a corpus store"):
        CorpusStore.open(tmp_path)
    (tmp_path / "meta.json").write_text('{"format": "harness-corpus-store", "version": 99}')
    with pytest.raises(HarnessError, match="version 99"):
        CorpusStore.open(tmp_path)


def test_open_or_build_reuses_until_the_source_changes(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", PASSAGES)
    first = open_or_build(source, tmp_path / "store", name="wiki", progress=False)
    created = (tmp_path / "store" / "passages.arrow").stat().st_ino
    again = open_or_build(source, tmp_path / "store", name="wiki", progress=False)
    assert (tmp_path / "store" / "passages.arrow").stat().st_ino == created
    assert again.fingerprint == first.fingerprint
    write_tsv(source, PASSAGES[:4])
    os.utime(source, ns=(1, 1))
    changed = open_or_build(source, tmp_path / "store", name="wiki", progress=False)
    assert len(changed) == 4
    source.unlink()  # a deleted source: the store still holds every passage
    assert len(open_or_build(source, tmp_path / "store", name="wiki", progress=False)) == 4
    with pytest.raises(InputFileError, match="cannot read corpus file"):  # but a new name needs a build
        open_or_build(source, tmp_path / "store", name="other", progress=False)
    assert len(CorpusStore.open(tmp_path / "store")) == 4


# --- concurrent readers -----------------------------------------------------------------------------


def _read_all(path: str) -> tuple[str, list[tuple[str, str, str]]]:
    store = CorpusStore.open(path)
    return store.fingerprint, [(p.id, p.title, p.text) for p in (store.get(q.id) for q in store)]


def test_concurrent_readers_processes_and_threads(tmp_path):
    passages = many_passages(300, [f"id-{k}" for k in range(300)])
    store = build(write_jsonl(tmp_path / "c.jsonl", passages), tmp_path / "store", format="jsonl")
    expected = (store.fingerprint, [(p.id, p.title, p.text) for p in passages])
    with ProcessPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(_read_all, [str(tmp_path / "store")] * 6))
    assert all(r == expected for r in results)
    # Passing an open store to a worker pickles it by path.
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert pool.submit(len, store).result() == 300

    errors: list[BaseException] = []

    def reader(offset: int):
        try:
            for k in range(offset, offset + 300):
                p = passages[k % 300]
                assert store.get(p.id) == p
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(k * 37,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_dpr_tsv_text_is_stripped_of_outer_quotes_as_dpr_reads_it(tmp_path):
    # DPR's CsvCtxSrc does row[text_col].strip('"'): what its has_answer saw.
    path = tmp_path / "q.tsv"
    path.write_text('id\ttext\ttitle\n1\t"""Fix You"" is a song"\tFix You\n2\tplain "inner" text\tT\n', encoding="utf-8")
    store = build(path, tmp_path / "s")
    assert store.get("1").text == 'Fix You" is a song'
    assert store.get("2").text == 'plain "inner" text'

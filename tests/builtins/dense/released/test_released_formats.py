"""The released-embeddings readers (harness_builtins.dense.released.formats) and the restricted
unpickler (released.unpickle), on small releases written by each format's own code
(``released_fixtures``): every reader yields exactly the written ids and float32 vectors, in the
release's order, from any row on; damaged files and foreign layouts are one line naming the file;
a hostile pickle runs nothing.
"""

from __future__ import annotations

import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

import helpers.released_fixtures as rf
from harness.errors import HarnessError, InputFileError
from harness_builtins.dense.released import contract, formats, unpickle
from harness_builtins.dense.released.formats import Contiguous, open_release, unpack_faiss_archive

ROWS = 2500
DIM = 16


@pytest.fixture(scope="module")
def release():
    """DPR-style ids (1-based, as text) and seeded vectors, in a shuffled row order (a release's
    order is its own: readers must not sort)."""
    rng = np.random.default_rng(30)
    order = rng.permutation(ROWS)
    ids = [str(i + 1) for i in order]
    vectors = rng.standard_normal((ROWS, DIM), dtype=np.float32)
    return ids, vectors


def read_all(reader, skip=0):
    ids, blocks = [], []
    for chunk_ids, block in reader.chunks(skip):
        assert block.dtype == np.float32 and block.flags.c_contiguous and block.flags.writeable
        assert block.shape == (len(chunk_ids), reader.dim)
        assert 0 < len(chunk_ids) <= formats.chunk_rows(reader.dim)
        ids.extend(chunk_ids)
        blocks.append(block)
    return ids, (np.concatenate(blocks) if blocks else np.empty((0, reader.dim), np.float32))


#: Rows to start from: the start, inside the first file, a file's first row (shards of 2500 // 3
#: = 833 rows), the middle of a later file, the last row, the end.
SKIPS = (0, 17, 833, 1700, ROWS - 1, ROWS)


def check_skips(reader, ids, expected):
    for skip in SKIPS:
        got_ids, got = read_all(reader, skip)
        assert got_ids == [str(i) for i in ids[skip:]], skip
        np.testing.assert_array_equal(got, expected[skip:])


def one_line(exc_info, path) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and str(path) in message, message
    return message


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 200 rows, so every reader crosses chunk boundaries inside its files."""
    monkeypatch.setattr(contract, "CHUNK_BYTES", 200 * DIM * 4)


# --- faiss-flat -------------------------------------------------------------------------------


def test_faiss_flat_written_by_faiss(tmp_path, release, small_chunks):
    ids, vectors = release
    index, docid = rf.write_faiss_flat(tmp_path / "dpr-multi", ids, vectors)
    reader = open_release("faiss-flat", [tmp_path / "dpr-multi"], dim=DIM)
    assert (reader.rows, reader.dim, reader.dtype) == (ROWS, DIM, np.float32)
    check_skips(reader, ids, vectors)
    block = reader.contiguous()
    assert block == Contiguous(path=index, offset=45, rows=ROWS, dim=DIM)
    mapped = np.memmap(block.path, dtype="<f4", mode="r", offset=block.offset, shape=(block.rows, block.dim))
    np.testing.assert_array_equal(mapped, vectors)
    same = open_release("faiss-flat", [docid, index], dim=DIM)
    assert same.contiguous() == block


def test_faiss_archive_unpacked_as_pyserini_ships_it(tmp_path, release):
    ids, vectors = release
    (archive,) = rf.write_faiss_flat_tar(tmp_path / "faiss-flat.wikipedia.dpr-multi-bf.20200127.f403c3.tar.gz", ids, vectors)
    dest = tmp_path / "unpacked"
    (tmp_path / "unpacked.partial").mkdir()  # a stale half-done unpack is redone
    (tmp_path / "unpacked.partial" / "index").write_bytes(b"half")
    assert unpack_faiss_archive(archive, dest) == dest
    assert sorted(p.name for p in dest.iterdir()) == ["docid", "index"]
    assert not (tmp_path / "unpacked.partial").exists()
    got_ids, got = read_all(open_release("faiss-flat", [dest], dim=DIM))
    assert got_ids == ids
    np.testing.assert_array_equal(got, vectors)
    assert unpack_faiss_archive(archive, dest) == dest  # already there: nothing redone
    with pytest.raises(HarnessError, match="unpack it first"):
        open_release("faiss-flat", [archive], dim=DIM)


def test_faiss_archive_damaged_or_foreign(tmp_path, release):
    ids, vectors = release
    (archive,) = rf.write_faiss_flat_tar(tmp_path / "x.tar.gz", ids, vectors)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(InputFileError) as caught:
        unpack_faiss_archive(cut, tmp_path / "cut")
    one_line(caught, cut)
    assert not (tmp_path / "cut").exists() and not (tmp_path / "cut.partial").exists()
    other = tmp_path / "other.tar"
    with tarfile.open(other, "w") as tar:
        tar.add(archive, arcname="folder/something")
    with pytest.raises(InputFileError, match="no 'index' or 'docid' member"):
        unpack_faiss_archive(other, tmp_path / "other")


@pytest.mark.parametrize("factory, kind", [
    (lambda faiss: faiss.IndexFlatL2(DIM), "IndexFlatL2"),
    (lambda faiss: faiss.IndexHNSWFlat(DIM, 8, faiss.METRIC_INNER_PRODUCT), "IndexHNSWFlat"),
    (lambda faiss: faiss.IndexIDMap(faiss.IndexFlatIP(DIM)), "IndexIDMap"),
    (lambda faiss: faiss.index_factory(DIM, "IVF4,Flat", faiss.METRIC_INNER_PRODUCT), "IndexIVFFlat"),
    (lambda faiss: faiss.index_factory(DIM, "PQ4x4", faiss.METRIC_INNER_PRODUCT), "IndexPQ"),
])
def test_faiss_index_of_another_type_refused(tmp_path, release, factory, kind):
    faiss = pytest.importorskip("faiss")
    ids, vectors = release
    index = factory(faiss)
    if not index.is_trained:
        index.train(vectors)
    if isinstance(index, faiss.IndexIDMap):
        index.add_with_ids(vectors, np.arange(ROWS))
    else:
        index.add(vectors)
    folder = tmp_path / "other"
    folder.mkdir()
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{i}\n" for i in ids))
    with pytest.raises(InputFileError) as caught:
        open_release("faiss-flat", [folder], dim=DIM)
    assert kind in one_line(caught, folder / "index")


def test_faiss_flat_damaged(tmp_path, release):
    ids, vectors = release
    index, docid = rf.write_faiss_flat(tmp_path / "f", ids, vectors)
    whole = index.read_bytes()
    index.write_bytes(whole[:-10])
    with pytest.raises(InputFileError, match="truncated or damaged") as caught:
        open_release("faiss-flat", [tmp_path / "f"], dim=DIM)
    one_line(caught, index)
    index.write_bytes(whole)
    with pytest.raises(InputFileError, match="not 32") as caught:
        open_release("faiss-flat", [tmp_path / "f"], dim=32)
    docid.write_text("".join(f"{i}\n" for i in ids[:-4]))
    with pytest.raises(InputFileError, match=f"{ROWS - 4:,} ids for the {ROWS:,} vectors") as caught:
        open_release("faiss-flat", [tmp_path / "f"], dim=DIM)
    one_line(caught, docid)
    docid.write_text("".join(f"{i}\n" for i in ids[:1500]) + "\n" + "".join(f"{i}\n" for i in ids[1501:]))
    with pytest.raises(InputFileError, match="1501: an empty passage id") as caught:
        read_all(open_release("faiss-flat", [tmp_path / "f"], dim=DIM))
    one_line(caught, docid)
    docid.write_text("".join(f"{i}\n" for i in ids))
    header = bytearray(whole[:64])
    struct.pack_into("<q", header, 8, ROWS + 1)  # ntotal no longer matches the stored floats
    index.write_bytes(bytes(header) + whole[64:])
    with pytest.raises(InputFileError, match="damaged IndexFlatIP header"):
        open_release("faiss-flat", [tmp_path / "f"], dim=DIM)
    index.write_bytes(b"")
    with pytest.raises(InputFileError, match="empty"):
        open_release("faiss-flat", [tmp_path / "f"], dim=DIM)


# --- dpr-pickle -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [3, 2, 4, 5])
def test_dpr_pickles(tmp_path, release, small_chunks, protocol):
    ids, vectors = release
    paths = rf.write_dpr_pickles(tmp_path, ids, vectors, 3, protocol=protocol)
    assert [p.name for p in paths] == ["wiki_passages_0", "wiki_passages_1", "wiki_passages_2"]
    reader = open_release("dpr-pickle", paths, dim=DIM)
    assert reader.rows is None and reader.dtype == np.float32 and reader.contiguous() is None
    check_skips(reader, ids, vectors)
    read_all(reader)
    assert [reader.path_of(row) for row in (0, 832, 833, 1665, 1666, ROWS - 1)] == [paths[0]] * 2 + [paths[1]] * 2 + [paths[2]] * 2


def test_dpr_pickles_with_int_ids_and_float16(tmp_path, release):
    ids, vectors = release
    numbers = [int(i) for i in ids]
    paths = rf.write_dpr_pickles(tmp_path, numbers, vectors.astype(np.float16), 2)
    reader = open_release("dpr-pickle", paths, dim=DIM)
    assert reader.dtype == np.float16
    got_ids, got = read_all(reader, 100)
    assert got_ids == ids[100:]
    np.testing.assert_array_equal(got, vectors[100:].astype(np.float16).astype(np.float32))


def test_dpr_pickle_read_by_plain_pickle_is_what_the_reader_reads(tmp_path, release):
    """The oracle: the fixture's shard, loaded by pickle itself (trusted: written here)."""
    ids, vectors = release
    (path,) = rf.write_dpr_pickles(tmp_path, ids, vectors, 1)
    with open(path, "rb") as f:
        rows = pickle.load(f)
    got_ids, got = read_all(open_release("dpr-pickle", [path], dim=DIM))
    assert got_ids == [r[0] for r in rows]
    np.testing.assert_array_equal(got, np.stack([r[1] for r in rows]))


def test_dpr_pickle_damaged_or_foreign(tmp_path, release):
    ids, vectors = release
    (path,) = rf.write_dpr_pickles(tmp_path, ids, vectors, 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputFileError, match="truncated") as caught:
        read_all(open_release("dpr-pickle", [path], dim=DIM))
    one_line(caught, path)
    path.write_bytes(data)
    with pytest.raises(InputFileError, match=r"has shape \(16,\), not \(8,\)") as caught:
        read_all(open_release("dpr-pickle", [path], dim=8))
    one_line(caught, path)
    (art,) = rf.write_art_pickle(tmp_path / "art.pkl", [int(i) for i in ids], vectors)
    with pytest.raises(InputFileError, match="holds a dict") as caught:
        read_all(open_release("dpr-pickle", [art], dim=DIM))
    one_line(caught, art)
    old = tmp_path / "protocol0"
    old.write_bytes(pickle.dumps([("1", [0.0] * DIM)], protocol=0))
    with pytest.raises(InputFileError, match="protocol"):
        read_all(open_release("dpr-pickle", [old], dim=DIM))
    objects = tmp_path / "objects"
    objects.write_bytes(pickle.dumps([("1", np.array([None] * DIM, dtype=object))], protocol=3))
    with pytest.raises(InputFileError, match="refused"):
        read_all(open_release("dpr-pickle", [objects], dim=DIM))
    # TUPLE2 on an empty stack: said in the pickle's terms, not as a Python exception's name
    underflow = tmp_path / "underflow"
    underflow.write_bytes(b"\x80\x03\x86.")
    with pytest.raises(InputFileError, match="fewer values on the stack than it takes") as caught:
        read_all(open_release("dpr-pickle", [underflow], dim=DIM))
    one_line(caught, underflow)
    assert "IndexError" not in str(caught.value)


# --- contriever-pickle ------------------------------------------------------------------------


@pytest.mark.parametrize("lazy, shards", [(False, 3), (True, 3), (True, 1)],
                         ids=["inline", "array-left-in-file", "one-shard"])
def test_contriever_tar(tmp_path, release, small_chunks, monkeypatch, lazy, shards):
    ids, vectors = release
    if lazy:  # the released shards' arrays (2 GB each) stay in the tar and are read by rows
        monkeypatch.setattr(unpickle, "LAZY_BYTES", 4096)
    half = vectors.astype(np.float16)
    (tar,) = rf.write_contriever_tar(tmp_path / "wikipedia_embeddings.tar", ids, half, shards)
    with tarfile.open(tar) as t:
        assert t.getnames() == [f"wikipedia_embeddings/passages_{i:02d}" for i in range(shards)]
    reader = open_release("contriever-pickle", [tar], dim=DIM)
    assert reader.dtype == np.float16 and reader.contiguous() is None
    check_skips(reader, ids, half.astype(np.float32))


def test_contriever_ids_kept_compactly_as_written(tmp_path):
    """Contriever's ids are streamed out of the pickle (all 21M may be one shard's) into a compact
    store and come back exactly, text of any kind included."""
    ids = [f"wiki:{i}" if i % 3 else f"Zürich — {i}" for i in range(3500)]
    vectors = np.random.default_rng(9).standard_normal((3500, 8), dtype=np.float32).astype(np.float16)
    (tar,) = rf.write_contriever_tar(tmp_path / "wikipedia_embeddings.tar", ids, vectors, 1)
    reader = open_release("contriever-pickle", [tar], dim=8)
    for skip in (0, 999, 1000, 1001, 3499):
        got_ids, got = read_all(reader, skip)
        assert got_ids == ids[skip:]
        np.testing.assert_array_equal(got, vectors[skip:].astype(np.float32))
    with tarfile.open(tar) as t:
        member = t.getmembers()[0]
    with open(tar, "rb") as f:
        stream = unpickle.PickleStream(f, tar, start=member.offset_data, end=member.offset_data + member.size,
                                       stream_at=(), match_rows=False)
        assert sum(len(batch) for batch in stream) == 3500
    assert stream.memo_entries <= 1000 + 16  # the first batch's short ids, not all 3,500


def test_contriever_tar_damaged(tmp_path, release, monkeypatch):
    ids, vectors = release
    monkeypatch.setattr(unpickle, "LAZY_BYTES", 4096)
    (tar,) = rf.write_contriever_tar(tmp_path / "wikipedia_embeddings.tar", ids, vectors.astype(np.float16), 3)
    data = tar.read_bytes()
    with tarfile.open(tar) as t:
        last = t.getmembers()[-1]
    tar.write_bytes(data[: last.offset_data + last.size // 2])
    with pytest.raises(InputFileError, match="truncated") as caught:
        read_all(open_release("contriever-pickle", [tar], dim=DIM))
    one_line(caught, tar)
    # cut inside the last member's pickle, the tar's own end-of-archive blocks kept
    tar.write_bytes(data[: last.offset_data + last.size // 2] + bytes(len(data) - last.offset_data - last.size // 2))
    with pytest.raises(InputFileError) as caught:
        read_all(open_release("contriever-pickle", [tar], dim=DIM))
    one_line(caught, tar)
    gz = tmp_path / "packed.tar.gz"
    with tarfile.open(gz, "w:gz") as t:
        t.add(tmp_path / "wikipedia_embeddings.tar", arcname="x")
    with pytest.raises(InputFileError, match="a compressed tar") as caught:
        read_all(open_release("contriever-pickle", [gz], dim=DIM))
    one_line(caught, gz)


# --- art-pickle -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [4, 3, 5])
def test_art_pickle(tmp_path, release, small_chunks, protocol):
    ids, vectors = release
    (path,) = rf.write_art_pickle(tmp_path / "psgs_w100_emdr2-retriever-base-steps82k_full-wikipedia_base.pkl",
                                  [int(i) for i in ids], vectors, protocol=protocol)
    reader = open_release("art-pickle", [path], dim=DIM)
    assert reader.dtype == np.float16
    check_skips(reader, ids, vectors.astype(np.float16).astype(np.float32))


def test_art_pickle_damaged_or_foreign(tmp_path, release):
    ids, vectors = release
    (path,) = rf.write_art_pickle(tmp_path / "art.pkl", [int(i) for i in ids], vectors)
    data = path.read_bytes()
    path.write_bytes(data[:-1000])
    with pytest.raises(InputFileError, match="truncated") as caught:
        read_all(open_release("art-pickle", [path], dim=DIM))
    one_line(caught, path)
    path.write_bytes(pickle.dumps({"embeddings": {1: np.zeros(DIM, np.float16)}}, protocol=4))
    with pytest.raises(InputFileError, match="'embed_data'") as caught:
        read_all(open_release("art-pickle", [path], dim=DIM))
    one_line(caught, path)
    dpr = rf.write_dpr_pickles(tmp_path / "dpr", ids, vectors, 1)[0]
    with pytest.raises(InputFileError, match="holds a list"):
        read_all(open_release("art-pickle", [dpr], dim=DIM))


# --- wiki-dpr ---------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["pyarrow", "datasets"])
def test_wiki_dpr_parquet(tmp_path, release, small_chunks, writer):
    if writer == "datasets":
        pytest.importorskip("datasets")
    ids, vectors = release
    paths = rf.write_wiki_dpr_parquet(tmp_path, ids, vectors, 3, writer=writer)
    reader = open_release("wiki-dpr", paths, dim=DIM)
    assert (reader.rows, reader.dtype) == (ROWS, np.float32)
    check_skips(reader, ids, vectors)
    assert [reader.path_of(row) for row in (0, 833, ROWS - 1)] == paths


def test_wiki_dpr_row_groups_skipped(tmp_path, release, small_chunks):
    ids, vectors = release
    paths = rf.write_wiki_dpr_parquet(tmp_path, ids, vectors, 2, row_group_size=300)
    reader = open_release("wiki-dpr", paths, dim=DIM)
    for skip in (299, 300, 1249, 1250, 1251, 2222):
        got_ids, got = read_all(reader, skip)
        assert got_ids == ids[skip:]
        np.testing.assert_array_equal(got, vectors[skip:])


def test_wiki_dpr_damaged(tmp_path, release):
    ids, vectors = release
    paths = rf.write_wiki_dpr_parquet(tmp_path, ids, vectors, 2)
    data = paths[1].read_bytes()
    paths[1].write_bytes(data[: len(data) // 2])
    with pytest.raises(InputFileError) as caught:
        read_all(open_release("wiki-dpr", paths, dim=DIM))
    one_line(caught, paths[1])
    paths[1].write_bytes(data)
    with pytest.raises(InputFileError, match="not all 8 floats") as caught:
        read_all(open_release("wiki-dpr", paths, dim=8))
    one_line(caught, paths[0])
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["1"], "text": ["x"]}), paths[0])
    with pytest.raises(InputFileError, match="no embeddings column") as caught:
        open_release("wiki-dpr", paths, dim=DIM)
    one_line(caught, paths[0])


# --- the restricted unpickler -----------------------------------------------------------------


def test_hostile_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    (path,) = rf.write_hostile_pickle(tmp_path / "wiki_passages_0", marker)
    with pytest.raises(InputFileError) as caught:
        read_all(open_release("dpr-pickle", [path], dim=4))
    assert "refused global posix.system" in one_line(caught, path)
    assert not marker.exists()
    # The file is hostile indeed: a plain pickle.load runs it.
    witness = tmp_path / "witness"
    rf.write_hostile_pickle(tmp_path / "witness.pkl", witness)
    with open(tmp_path / "witness.pkl", "rb") as f:
        pickle.load(f)
    assert witness.exists()


@pytest.mark.parametrize("fmt", ["contriever-pickle", "art-pickle"])
def test_hostile_pickle_refused_by_every_pickle_reader(tmp_path, fmt):
    marker = tmp_path / "ran"
    (hostile,) = rf.write_hostile_pickle(tmp_path / "hostile.pkl", marker)
    if fmt == "contriever-pickle":
        path = tmp_path / "wikipedia_embeddings.tar"
        with tarfile.open(path, "w") as tar:
            tar.add(hostile, arcname="wikipedia_embeddings/passages_00")
    else:
        path = tmp_path / "mss.pkl"
        path.write_bytes(pickle.dumps({"embed_data": {np.int64(1): rf._Hostile(marker)}}, protocol=4))
    with pytest.raises(InputFileError, match="refused global posix.system") as caught:
        reader = open_release(fmt, [path], dim=4)
        reader.dtype
        read_all(reader)
    one_line(caught, path)
    assert not marker.exists()


class _Exec:
    def __reduce__(self):
        return (exec, ("open(%r, 'w').close()",))


class _NewObj:
    def __reduce__(self):
        return (Path, ("x",))


@pytest.mark.parametrize("payload", [
    lambda marker: pickle.dumps([("1", _Exec())], protocol=4),
    lambda marker: pickle.dumps([("1", _NewObj())], protocol=5),
    # numpy's reconstructor handed something other than an ndarray
    lambda marker: b"\x80\x03]q\x00(X\x01\x00\x00\x001cnumpy.core.multiarray\n_reconstruct\ncposix\nsystem\nK\x00\x85C\x01b\x87Rq\x01\x86a.",
    # a persistent id
    lambda marker: b"\x80\x03]q\x00(X\x01\x00\x00\x001X\x03\x00\x00\x00abcQ\x86a.",
    # a protocol-0 INST opcode
    lambda marker: b"\x80\x02]q\x00(X\x01\x00\x00\x001(iposix\nsystem\n\x86a.",
])
def test_foreign_pickles_refused_in_one_line(tmp_path, payload):
    path = tmp_path / "wiki_passages_0"
    path.write_bytes(payload(tmp_path / "ran"))
    with pytest.raises(InputFileError) as caught:
        read_all(open_release("dpr-pickle", [path], dim=DIM))
    assert "refused" in one_line(caught, path)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("layout, protocol", [("dpr", 3), ("dpr", 4), ("dpr", 2), ("art", 4), ("art", 3)])
def test_memo_forgets_handed_over_rows(tmp_path, layout, protocol):
    """A streamed pickle keeps no row in the unpickler's memo once handed over: the memory of a
    shard is one pickler batch, not the shard (nor ART's 21M rows)."""
    rows = 12_000
    ids = [str(i) for i in range(1, rows + 1)]
    vectors = np.random.default_rng(5).standard_normal((rows, 4), dtype=np.float32)
    if layout == "dpr":
        (path,) = rf.write_dpr_pickles(tmp_path, ids, vectors, 1, protocol=protocol)
    else:
        (path,) = rf.write_art_pickle(tmp_path / "art.pkl", [int(i) for i in ids], vectors, protocol=protocol)
    seen = []
    with open(path, "rb") as f:
        stream = unpickle.PickleStream(f, path, stream_at=() if layout == "dpr" else ("embed_data",))
        for batch in stream:
            seen.append(len(batch))
            del batch
        assert stream.result == ([] if layout == "dpr" else {"embed_data": {}})
    assert sum(seen) == rows and max(seen) <= 1000
    # What the first batch set up (numpy's globals, typecode, dtypes, and that batch's small
    # constants: at most 6 entries a row) stays; nothing of the 11,000 rows after it.
    assert stream.memo_entries <= 6 * 1000 + 16
    import gc
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if type(o) is unpickle.PickledArray)
    assert alive == 0


def test_unknown_format_and_missing_files(tmp_path):
    with pytest.raises(HarnessError, match="unknown released-embeddings format 'npz'"):
        open_release("npz", [tmp_path], dim=DIM)
    with pytest.raises(InputFileError, match="missing") as caught:
        open_release("dpr-pickle", [tmp_path / "wiki_passages_0"], dim=DIM)
    one_line(caught, tmp_path / "wiki_passages_0")


@pytest.mark.parametrize("layout, protocol", [("dpr", 3), ("dpr", 4), ("art", 4), ("art", 3)])
def test_whole_row_matching_agrees_with_the_opcode_loop(tmp_path, monkeypatch, layout, protocol):
    """Rows after the first batch are matched whole (``_dpr_row``, ``_art_item``); the opcode loop
    alone reads the same ids and vectors, and the matching is really used."""
    rows = 5000
    ids = [str(i) for i in range(1, rows + 1)]
    vectors = np.random.default_rng(7).standard_normal((rows, 24), dtype=np.float32)
    if layout == "dpr":
        paths = rf.write_dpr_pickles(tmp_path, ids, vectors, 1, protocol=protocol)
        matcher = "_dpr_row"
    else:
        paths = rf.write_art_pickle(tmp_path / "art.pkl", [int(i) for i in ids], vectors, protocol=protocol)
        matcher = "_art_item"
    fmt = "dpr-pickle" if layout == "dpr" else "art-pickle"
    real = getattr(unpickle, matcher)
    hits = []

    def counting(*args):
        found = real(*args)
        hits.append(found is not None)
        return found

    monkeypatch.setattr(unpickle, matcher, counting)
    matched_ids, matched = read_all(open_release(fmt, paths, dim=24))
    assert sum(hits) >= 3000  # rows of batches 2 to 5 (a FRAME now and then is left to the loop)
    monkeypatch.setattr(unpickle, matcher, lambda *args: None)
    looped_ids, looped = read_all(open_release(fmt, paths, dim=24))
    assert matched_ids == looped_ids == ids
    np.testing.assert_array_equal(matched, looped)
    expected = vectors if layout == "dpr" else vectors.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(matched, expected)

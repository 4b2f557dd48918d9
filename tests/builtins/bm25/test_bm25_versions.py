"""BM25 under pyserini 1.x and 2.x: the prebuilt ``wikipedia-dpr-100w`` index is found under
either pyserini's folder naming, unpacked by the installed pyserini's own code from an archive
of either kind (``.tar.gz`` before pyserini 2.1, plain ``.tar`` from 2.1 on); a run records the
index file, its md5 and the Lucene version read from the index (checked against Lucene's own
``SegmentInfos``), and published BM25 numbers are compared only with results of their index.
No network: the archives are tiny Lucene indexes built here by pyserini, handed to pyserini's
unpacking by a stand-in for its ``download_url``."""

from __future__ import annotations

import io
import os
import re
import tarfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import URLError

import pytest

from harness.analysis.published import checks, in_scope, read_published_table
from harness.api import InMemoryCorpus, Passage, RunContext
from harness.errors import InputFileError

from harness_builtins.bm25 import prebuilt
from harness_builtins.bm25.java import start_jvm
from harness_builtins.bm25.retriever import BM25Retriever, document_contents
from helpers.paths import REPO

OLD = "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz"
NEW = "lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.tar"
ROOT = REPO

INDEXED = [
    Passage(id="201", title="Kelvasa", text="Kelvasa is a lake town known for glass bells."),
    Passage(id="202", title="Trondvik", text="Trondvik builds wooden sailing boats."),
]
WIKI = InMemoryCorpus("wikipedia-dpr-100w", [Passage(id="1", title="Other", text="Not in the prebuilt index.")])


def _build_index(folder: Path) -> None:
    start_jvm()
    from pyserini.index.lucene import LuceneIndexer

    indexer = LuceneIndexer(str(folder), threads=1)
    indexer.add_batch_dict([{"id": p.id, "contents": document_contents(p)} for p in INDEXED])
    indexer.close()


def _archive(tmp: Path, filename: str) -> bytes:
    """A tar (``.tar``) or gzip tar (``.tar.gz``) of one index folder, named as pyserini's are."""
    inner = re.sub(r"\.tar(\.gz)?$", "", filename)
    _build_index(tmp / inner)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if filename.endswith(".gz") else "w") as tar:
        tar.add(tmp / inner, arcname=inner)
    return buffer.getvalue()


def _lucene_says(folder: Path) -> tuple[str, int]:
    """The commit's Lucene version and creation major as Lucene's own SegmentInfos reads them."""
    start_jvm()
    from jnius import autoclass

    directory = autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.nio.file.Paths").get(str(folder)))
    infos = autoclass("org.apache.lucene.index.SegmentInfos").readLatestCommit(directory)
    return infos.getCommitLuceneVersion().toString(), infos.getIndexCreatedVersionMajor()


# ---- naming -----------------------------------------------------------------------------------------


def test_folder_names_follow_both_pyserini_rules():
    # pyserini 1.x: re.sub('.tar.gz.*$', '', name); pyserini >= 2.1: re.sub(r'\.tar(\.gz)?(\?.*)?$', '', name)
    assert prebuilt.folder_names(OLD, "m5") == ["lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.m5"]
    assert prebuilt.folder_names(NEW, "m5") == [
        "lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.m5",  # pyserini >= 2.1
        "lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b.tar.m5",  # what pyserini 1.x makes of a .tar
    ]
    assert prebuilt.folder_names("x.tar.gz?dl=1", "m")[0] == "x.m"
    assert prebuilt.archive_name({"urls": ["https://h/p/idx.tar.gz?dl=1"], "md5": "m"}) == "idx.tar.gz"


def test_the_known_indexes_are_pyserinis_two_versions():
    assert prebuilt.KNOWN_INDEXES[OLD]["md5"] == "7b58c08da992b2ea7e96667f0b176651"
    assert prebuilt.KNOWN_INDEXES[NEW]["md5"] == "1ef94a97f2ac418577d1e6a9ecf44806"
    assert prebuilt.KNOWN_INDEXES[NEW]["size"] == 11078635520 and prebuilt.KNOWN_INDEXES[NEW]["lucene"] == "10.4.0"
    assert prebuilt._known_for("wikipedia-dpr-100w", (1, 6, 0))[0] == OLD
    assert prebuilt._known_for("wikipedia-dpr-100w", (2, 0, 0))[0] == OLD
    assert prebuilt._known_for("wikipedia-dpr-100w", (2, 1, 0))[0] == NEW
    assert prebuilt._known_for("wikipedia-dpr-100w", (2, 3, 0))[0] == NEW
    assert prebuilt._known_for("nope", (2, 3, 0)) is None


def test_the_installed_pyserini_lists_the_index_of_its_version(tmp_path):
    info = prebuilt._index_info("wikipedia-dpr-100w")
    expected, entry = prebuilt._known_for("wikipedia-dpr-100w", prebuilt.pyserini_version())
    assert prebuilt.archive_name(info) == expected and info["md5"] == entry["md5"]
    path = prebuilt.prebuilt_path("wikipedia-dpr-100w", tmp_path)
    assert path == tmp_path / "bm25" / "prebuilt" / "indexes" / prebuilt.folder_names(expected, entry["md5"])[0]


def _listing(monkeypatch, filename: str) -> dict:
    """Make the installed pyserini list ``wikipedia-dpr-100w`` as archive ``filename``."""
    start_jvm()
    import pyserini.prebuilt_index_info
    import pyserini.util

    entry = prebuilt.KNOWN_INDEXES[filename]
    info = {"description": "stand-in", "filename": filename, "urls": list(entry["urls"]), "md5": entry["md5"],
            "size compressed (bytes)": entry["size"], "size": entry["size"]}
    listing = {"wikipedia-dpr-100w": info}
    monkeypatch.setattr(pyserini.prebuilt_index_info, "TF_INDEX_INFO", listing)
    monkeypatch.setattr(pyserini.util, "TF_INDEX_INFO", listing)
    return info


@pytest.mark.parametrize("filename", [OLD, NEW])
def test_pyserinis_own_unpacking_lands_where_harness_looks(tmp_path, monkeypatch, filename):
    """The installed pyserini (1.x or 2.x) downloads and unpacks the listed archive with its own
    code; the folder it makes is the one harness finds, and BM25 searches it."""
    import pyserini.util

    info = _listing(monkeypatch, filename)
    data = _archive(tmp_path / "build", filename)
    fetched = []

    def fake_download_url(url, save_dir, local_filename=None, md5=None, force=False, verbose=True, expected_size=None):
        fetched.append(url)
        destination = os.path.join(save_dir, local_filename or url.split("/")[-1])
        Path(destination).write_bytes(data)
        return destination

    monkeypatch.setattr(pyserini.util, "download_url", fake_download_url)
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    cache = tmp_path / "cache"
    context = RunContext(cache_dir=cache, threads=1, progress=False)
    retriever = BM25Retriever()
    retriever.index(WIKI, context)
    assert fetched == info["urls"]
    found = prebuilt.prebuilt_path("wikipedia-dpr-100w", cache)
    assert found.parent == cache / "bm25" / "prebuilt" / "indexes" and found.name in prebuilt.folder_names(filename, info["md5"])
    assert prebuilt._complete(found) and sorted(p.name for p in found.parent.iterdir()) == [found.name]  # archive removed
    (hits,) = retriever.search(["where are sailing boats built"], 1, context)
    assert hits[0].passage_id == "202"
    version, created = _lucene_says(found)
    parameters = retriever.parameters()
    assert parameters["prebuilt_index"] == "wikipedia-dpr-100w"
    assert parameters["index_file"] == filename and parameters["index_md5"] == info["md5"]
    assert parameters["lucene_version"] == version and parameters["lucene_created_major"] == created
    assert retriever.compute()["pyserini"] == ".".join(map(str, prebuilt.pyserini_version()))


@pytest.mark.parametrize("filename", [OLD, NEW])
@pytest.mark.parametrize("reading", [0, -1])
def test_a_folder_of_either_naming_is_found_offline(tmp_path, monkeypatch, filename, reading):
    info = _listing(monkeypatch, filename)
    folder = tmp_path / "bm25" / "prebuilt" / "indexes" / prebuilt.folder_names(filename, info["md5"])[reading]
    _build_index(folder)
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    context = RunContext(cache_dir=tmp_path, threads=1, progress=False)
    assert prebuilt.prebuilt_lucene_index(WIKI, context) == folder
    retriever = BM25Retriever()
    retriever.index(WIKI, context)
    assert retriever.parameters()["index_file"] == filename
    assert retriever.search(["glass bells"], 1, context)[0][0].passage_id == "201"


def test_a_pyserini_that_cannot_list_its_indexes_offline_falls_back_to_its_versions_index(tmp_path, monkeypatch):
    start_jvm()
    import pyserini.prebuilt_index_info

    class Unreachable(dict):
        def __getitem__(self, key):
            raise URLError("Name or service not known")

    monkeypatch.setattr(pyserini.prebuilt_index_info, "TF_INDEX_INFO", Unreachable())
    for version, filename in (((2, 3, 0), NEW), ((1, 6, 0), OLD)):
        monkeypatch.setattr(prebuilt, "pyserini_version", lambda v=version: v)
        info = prebuilt._index_info("wikipedia-dpr-100w")
        assert info["filename"] == filename and info["md5"] == prebuilt.KNOWN_INDEXES[filename]["md5"]


# ---- the Lucene version, read from the index --------------------------------------------------------


def test_lucene_version_is_read_from_the_segments_header_as_lucene_reads_it(tmp_path):
    folder = tmp_path / "idx"
    _build_index(folder)
    version, created = _lucene_says(folder)
    assert prebuilt.lucene_version(folder) == {"lucene_version": version, "lucene_created_major": created}
    # a later commit wins: segments_2 beside segments_1
    (folder / "segments_a").write_bytes((folder / "segments_1").read_bytes())
    assert prebuilt.lucene_version(folder)["lucene_version"] == version


def test_a_folder_that_is_no_lucene_index_is_one_line(tmp_path):
    with pytest.raises(InputFileError, match=r"no Lucene commit \(segments_N file\): not a Lucene index"):
        prebuilt.lucene_version(tmp_path)
    (tmp_path / "segments_3").write_bytes(b"\x00\x01garbage")
    with pytest.raises(InputFileError) as info:
        prebuilt.lucene_version(tmp_path)
    assert "segments_3: cannot read the Lucene version: no Lucene codec header" in str(info.value)
    assert "\n" not in str(info.value)
    (tmp_path / "segments_3").write_bytes(bytes.fromhex("3fd76c17") + b"\x08segments\x00\x00\x00\x0a")
    with pytest.raises(InputFileError, match="truncated"):
        prebuilt.lucene_version(tmp_path)


# ---- published numbers per index version ------------------------------------------------------------


@dataclass
class _Result:
    """What :func:`checks` reads of a result."""

    suite: str
    label: str
    parameters: dict
    top: dict = field(default_factory=dict)
    path: Path | None = None

    def accuracy(self, k):
        return ({}, self.top[k] / 100) if k in self.top else None


def test_each_pyserini_table_is_checked_against_results_of_its_own_index():
    tables = {name: read_published_table(ROOT / "datasets_spec" / "published" / f"{name}.toml") for name in (
        "pyserini-2cr-odqa", "pyserini-dpr-reproduction", "pyserini-2cr-odqa-2021-index", "pyserini-dpr-reproduction-2021-index")}
    assert dict(tables["pyserini-2cr-odqa"].scope) == {"index_file": NEW}
    assert dict(tables["pyserini-dpr-reproduction"].scope) == {"index_file": NEW}
    assert dict(tables["pyserini-2cr-odqa-2021-index"].scope) == {"index_file": OLD}
    assert dict(tables["pyserini-dpr-reproduction-2021-index"].scope) == {"index_file": OLD}
    old = _Result("nq", "bm25", {"k1": 0.9, "b": 0.4, "index_file": OLD}, {20: 62.99, 100: 78.23})
    new = _Result("nq", "bm25", {"k1": 0.9, "b": 0.4, "index_file": NEW}, {20: 62.94, 100: 78.25})
    dense = _Result("nq", "dpr-multi", {"model": "x"}, {20: 79.47, 100: 86.09})
    hybrid_old = _Result("nq", "hybrid:bm25+dpr-multi", {"sparse": {"parameters": {"index_file": OLD}}, "dense": {}}, {20: 82.6})
    for table in tables.values():
        assert in_scope(table, dense)
    assert in_scope(tables["pyserini-2cr-odqa-2021-index"], old) and not in_scope(tables["pyserini-2cr-odqa"], old)
    assert in_scope(tables["pyserini-2cr-odqa"], new) and not in_scope(tables["pyserini-2cr-odqa-2021-index"], new)
    assert not in_scope(tables["pyserini-dpr-reproduction"], hybrid_old)
    done, _missing = checks(list(tables.values()), [old, new, dense])
    by_result = {}
    for check in done:
        by_result.setdefault(id(check.result), set()).add(check.table.name)
    assert by_result[id(old)] == {"pyserini-2cr-odqa-2021-index", "pyserini-dpr-reproduction-2021-index"}
    assert by_result[id(new)] == {"pyserini-2cr-odqa", "pyserini-dpr-reproduction"}
    assert all(c.within() for c in done if c.result is not dense and c.row.suite == "nq" and c.k in (20, 100)), [
        (c.table.name, c.k, c.published, c.ours) for c in done if not c.within()]


def test_a_malformed_scope_is_one_line(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\ntitle = "x"\ncitation = "c"\nscope = { index_file = ["a"] }\n'
                    '[[rows]]\nsystem = "s"\nsuite = "nq"\nvalues = { 20 = 1.0 }\n')
    with pytest.raises(InputFileError, match="t.toml: scope parameter 'index_file' must be a string, number or boolean"):
        read_published_table(path)


# ---- the pin ----------------------------------------------------------------------------------------


def test_the_pyserini_pin_admits_the_verified_versions_and_not_the_rest():
    from packaging.requirements import Requirement
    from packaging.version import Version

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (line,) = [d for d in dependencies if Requirement(d).name == "pyserini"]
    spec = Requirement(line).specifier
    installed = prebuilt.pyserini_version()
    assert Version(".".join(map(str, installed))) in spec
    # 1.6 (the index of 2021) and 2.3 (the Lucene 10 index) pass this file and the BM25 tests;
    # 2.4 fetches its index list from the network on import, so offline BM25 cannot start.
    assert all(Version(v) in spec for v in ("1.6.0", "2.0.0", "2.3.0"))
    assert all(Version(v) not in spec for v in ("1.5.0", "2.4.0", "3.0.0"))

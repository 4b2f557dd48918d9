"""BM25 on DPR's Wikipedia uses pyserini's prebuilt index (harness_builtins.bm25.prebuilt).

No network: a stand-in index, built by pyserini from a few passages, is put where pyserini's
prebuilt-index mechanism unpacks ``wikipedia-dpr-100w`` inside the harness cache; the download
itself is replaced by a fake that checks it is pyserini's, pointed at the harness cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.api import InMemoryCorpus, Passage, RunContext
from harness.errors import HarnessError

from harness_builtins.bm25 import prebuilt
from harness_builtins.bm25.java import start_jvm
from harness_builtins.bm25.retriever import BM25Retriever, document_contents

#: What the stand-in index holds (DPR-style ids and title\ntext contents).
INDEXED = [
    Passage(id="101", title="Ostrelin", text="Ostrelin is a city on the river Vask."),
    Passage(id="102", title="Darnholm", text="Darnholm is a port town where bicycles are made."),
    Passage(id="103", title="Mirela Quast", text="The painter Mirela Quast was born near the sea."),
]

#: The corpus a suite hands the retriever: named like DPR's Wikipedia, different passages, so a
#: hit from INDEXED proves the prebuilt index was searched and nothing was indexed here.
WIKI = InMemoryCorpus("wikipedia-dpr-100w", [Passage(id="1", title="Other", text="Not in the prebuilt index.")])


def _build_stand_in(folder: Path) -> None:
    start_jvm()
    from pyserini.index.lucene import LuceneIndexer

    indexer = LuceneIndexer(str(folder), threads=1)
    indexer.add_batch_dict([{"id": p.id, "contents": document_contents(p)} for p in INDEXED])
    indexer.close()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    _build_stand_in(prebuilt.prebuilt_path("wikipedia-dpr-100w", cache))
    return cache


def test_the_layout_is_pyserinis_inside_the_harness_cache(tmp_path):
    path = prebuilt.prebuilt_path("wikipedia-dpr-100w", tmp_path)  # starts the right JVM first
    from pyserini.prebuilt_index_info import TF_INDEX_INFO

    md5 = TF_INDEX_INFO["wikipedia-dpr-100w"]["md5"]
    # pyserini <= 2.0 lists the 2021 .tar.gz, 2.1 on the Lucene 10 .tar (tests/builtins/bm25/test_bm25_versions.py)
    stem = {"7b58c08da992b2ea7e96667f0b176651": "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6",
            "1ef94a97f2ac418577d1e6a9ecf44806": "lucene-inverted.wikipedia-dpr-100w.20260508.deb4c7b"}[md5]
    assert path == tmp_path / "bm25" / "prebuilt" / "indexes" / f"{stem}.{md5}"


def test_dpr_wikipedia_searches_the_prebuilt_index(cache, monkeypatch):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    context = RunContext(cache_dir=cache, threads=1, progress=False)
    retriever = BM25Retriever()
    retriever.index(WIKI, context)
    (hits,) = retriever.search(["where are bicycles made"], 2, context)
    assert hits[0].passage_id == "102"
    assert not (cache / "bm25").joinpath(f"wikipedia-dpr-100w-{retriever.index_key(WIKI)}").exists()


def test_other_corpora_are_indexed_as_before(cache):
    context = RunContext(cache_dir=cache, threads=1, progress=False)
    corpus = InMemoryCorpus("small", INDEXED)
    assert prebuilt.prebuilt_lucene_index(corpus, context) is None
    retriever = BM25Retriever()
    retriever.index(corpus, context)
    assert retriever.search(["painter"], 1, context)[0][0].passage_id == "103"


def test_offline_without_the_index_is_one_line_naming_what_and_where(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    context = RunContext(cache_dir=tmp_path, threads=1, progress=False)
    with pytest.raises(HarnessError) as info:
        prebuilt.prebuilt_lucene_index(WIKI, context)
    message = str(info.value)
    assert "\n" not in message
    assert "download_prebuilt_index('wikipedia-dpr-100w')" in message
    assert f"PYSERINI_CACHE={tmp_path / 'bm25' / 'prebuilt'}" in message
    assert str(prebuilt.prebuilt_path("wikipedia-dpr-100w", tmp_path)) in message


def test_online_fetches_through_pyserini_into_the_harness_cache(tmp_path, monkeypatch):
    start_jvm()
    import pyserini.util

    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    monkeypatch.setenv("PYSERINI_CACHE", "/somewhere/else")
    calls = []

    def fake_download(name, force=False, verbose=True, mirror=None):
        calls.append((name, os.environ["PYSERINI_CACHE"]))
        path = prebuilt.prebuilt_path(name, tmp_path)
        _build_stand_in(path)
        return str(path)

    monkeypatch.setattr(pyserini.util, "download_prebuilt_index", fake_download)
    context = RunContext(cache_dir=tmp_path, threads=1, progress=False)
    path = prebuilt.prebuilt_lucene_index(WIKI, context)
    assert calls == [("wikipedia-dpr-100w", str(tmp_path / "bm25" / "prebuilt"))]
    assert path == prebuilt.prebuilt_path("wikipedia-dpr-100w", tmp_path)
    assert os.environ["PYSERINI_CACHE"] == "/somewhere/else"  # restored
    prebuilt.prebuilt_lucene_index(WIKI, context)  # present now: no second download
    assert len(calls) == 1


def test_a_failed_fetch_is_one_line(tmp_path, monkeypatch):
    start_jvm()
    import pyserini.util

    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)

    def bad_checksum(name, **kwargs):
        raise AssertionError("/x/y.tar.gz does not match checksum! Expecting a\ngot b.")

    monkeypatch.setattr(pyserini.util, "download_prebuilt_index", bad_checksum)
    with pytest.raises(HarnessError) as info:
        prebuilt.prebuilt_lucene_index(WIKI, RunContext(cache_dir=tmp_path, threads=1, progress=False))
    assert "\n" not in str(info.value) and "does not match checksum" in str(info.value)

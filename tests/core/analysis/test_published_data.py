"""The published tables shipped with the datasets plugin: readable, consistent, pointing at real names."""

from __future__ import annotations

import tomllib
from itertools import combinations

from harness import registry
from harness.analysis.published import KINDS, allowed_difference

from harness_builtins.datasets.catalog import PUBLISHED_DIR, published_tables


def test_every_shipped_table_reads_in_strict_mode_and_is_registered():
    tables = published_tables(strict=True)
    assert len(tables) == len(list(PUBLISHED_DIR.glob("*.toml"))) >= 20
    names = registry.registry("published").names()
    assert sorted(t.name for t in tables) == sorted(names)
    assert sum(len(t.rows) for t in tables) > 300


def test_rows_to_reproduce_name_installed_retrievers_and_suites():
    for table in published_tables(strict=True):
        for row in table.rows:
            if row.retriever is None:
                continue
            registry.resolve("retrievers", row.retriever)  # raises for an unknown name
            assert row.suite in registry.suites(), (table.name, row.system, row.suite)


def test_rows_checked_against_one_result_agree_with_each_other():
    """Two published rows that ``harness reproduce`` would both compare with one result (same
    retriever, options, suite and part) must leave a value that passes both rules."""
    rows = [(t, r) for t in published_tables(strict=True) for r in t.rows if r.retriever]
    pairs = 0
    for (ta, a), (tb, b) in combinations(rows, 2):
        if (a.retriever, a.options, a.suite, a.part) != (b.retriever, b.options, b.suite, b.part):
            continue
        scope_a, scope_b = dict(ta.scope), dict(tb.scope)
        if any(key in scope_b and scope_b[key] != value for key, value in scope_a.items()):
            continue  # scopes exclude each other: no result is compared with both (pyserini's two BM25 indexes)
        for k in set(a.values) & set(b.values):
            pairs += 1
            gap = abs(a.values[k] - b.values[k])
            assert gap <= allowed_difference(ta, a) + allowed_difference(tb, b) + 1e-9, (ta.name, a.system, tb.name, b.system, k)
    # pyserini's two documents share BM25 (NQ, TriviaQA), DPR-Multi and hybrid (TriviaQA) cells, for
    # the Lucene 10 index, and BM25 (NQ, TriviaQA) cells for the 2021 index
    assert pairs == 12


def tables_by_name():
    return {t.name: t for t in published_tables(strict=True)}


def row(table, system, suite, part=None):
    (found,) = [r for r in table.rows if r.system == system and r.suite == suite and r.part == part]
    return found


def test_every_table_declares_its_kind_precision_and_source_version():
    """Written in the file itself, not left to the reader's defaults."""
    for path in sorted(PUBLISHED_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert data.get("kind") in KINDS, path.name
        assert isinstance(data.get("digits"), int), path.name
        assert isinstance(data.get("version"), str) and len(data["version"]) > 20, path.name
        if data["kind"] == "paper":
            assert data["allowance"]["reason"].strip(), path.name
        else:
            assert "allowance" not in data, path.name


def test_reproduction_tables_are_pyserinis_pinned_figures():
    """Cells read from castorini/pyserini at the versions the tables name: docs/experiments-dpr.md
    at f3c9e9fe (four-decimal expected results) and the 2CR YAML files of release pyserini-2.3.0."""
    tables = tables_by_name()
    docs, twoclick = tables["pyserini-dpr-reproduction"], tables["pyserini-2cr-odqa"]
    assert docs.kind == twoclick.kind == "reproduction"
    assert "f3c9e9fe92dc9f4035f84a2fd547eaf2056a103a" in docs.version
    assert "pyserini-2.3.0" in twoclick.version
    assert row(docs, "BM25", "nq").values == {20: 62.94, 100: 78.25}
    assert row(docs, "DPR-Multi", "curated").values == {20: 88.76, 100: 93.37}
    assert row(docs, "DPR-Single (NQ)", "nq").values == {20: 80.06, 100: 86.09}
    assert row(twoclick, "BM25 (DPR topics)", "nq").values == {5: 43.77, 20: 62.94, 100: 78.23, 500: 85.60, 1000: 88.01}
    assert row(twoclick, "BM25", "nq-open").values[20] == 63.99


def test_audited_cells():
    tables = tables_by_name()
    upr = tables["sachan2022-upr-unsupervised"]
    assert row(upr, "Contriever + UPR (T0-3B, top-1000 re-ranked)", "nq").values == {20: 80.4}
    assert "a3bb97c" in upr.version
    contriever = tables["izacard2022-contriever"]
    for system in ("Contriever", "Contriever-msmarco"):
        trivia = row(contriever, system, "trivia-fid")
        assert trivia.retriever is None and "FiD" in trivia.note
    assert not [r for r in contriever.rows if r.suite == "trivia"]
    eq = tables["sciavolino2021-table2"]
    assert {(r.suite, r.part) for r in eq.rows} == {("entityquestions", "P19")}
    assert all("no-overlap" in r.note for r in eq.rows)


def test_art_rows_name_the_checkpoint_they_come_from():
    tables = tables_by_name()
    art = tables["sachan2022-art"]
    want = {("ART", "nq"): "nq-t0-3b", ("ART", "trivia"): "trivia-t0-3b", ("ART", "wq"): "webq-t0-3b",
            ("ART", "squad"): "squad1-t0-3b"}
    want |= {("ART-Multi", s): "multi-t0-3b" for s in ("nq", "trivia", "wq", "squad")}
    assert {(r.system, r.suite): r.options.get("checkpoint") for r in art.rows} == want
    assert all(r.retriever == "art" for r in art.rows)
    large = tables["sachan2022-art-slides-supervised-comparison"]
    assert row(large, "ART (Large)", "nq-dev").options == {"checkpoint": "nq-large-t0-3b"}
    assert row(large, "ART (Large)", "trivia-dev").options == {"checkpoint": "trivia-large-t0-3b"}
    # every row that names the art retriever says which checkpoint
    for table in tables.values():
        for r in table.rows:
            if r.retriever == "art":
                assert r.options.get("checkpoint"), (table.name, r.system)

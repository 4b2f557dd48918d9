"""The published tables shipped with the datasets plugin: readable, consistent, pointing at real names."""

from __future__ import annotations

from itertools import combinations

from harness import registry
from harness.analysis.published import TOLERANCE

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
    retriever, suite and part) must not contradict each other beyond the check's tolerance."""
    rows = [(t.name, r) for t in published_tables(strict=True) for r in t.rows if r.retriever]
    for (ta, a), (tb, b) in combinations(rows, 2):
        if (a.retriever, a.suite, a.part) != (b.retriever, b.suite, b.part):
            continue
        for k in set(a.values) & set(b.values):
            assert abs(a.values[k] - b.values[k]) <= 100 * TOLERANCE, (ta, a.system, tb, b.system, k)


def test_pyserini_reproduction_rows_are_pyserinis_published_figures():
    """A few cells compared with PROTOCOL section 6, read from the file the tables cite."""
    table = next(t for t in published_tables(strict=True) if t.name == "pyserini-dpr-reproduction")
    bm25_nq = next(r for r in table.rows if r.retriever == "bm25" and r.suite == "nq")
    assert bm25_nq.values == {5: 43.77, 20: 62.9, 100: 78.3}

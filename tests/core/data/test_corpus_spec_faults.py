"""A suite whose corpus spec was left out says why where the suite is used: the corpus spec's file
and its problem (a path escaping the data folder, say), not that the corpus is unknown."""

from __future__ import annotations

from harness.data.catalog import load_catalog

ESCAPING = "../../etc/c.tsv"


def write_specs(root, corpus_path: str, *, corpus_name: str = "mine", declared: bool = True):
    (root / "corpora").mkdir(parents=True)
    (root / "suites").mkdir()
    name_line = f'name = "{corpus_name}"\n' if declared else ""
    (root / "corpora" / f"{corpus_name}.toml").write_text(
        f'{name_line}description = "x"\nurl = "https://example.org/c.tsv"\npath = "{corpus_path}"\n'
        'format = "dpr-tsv"\nlicense = "x"\ncitation = "x"\n'
    )
    (root / "suites" / "mysuite.toml").write_text(
        f'name = "mysuite"\ndescription = "x"\nmatch = "string"\ncorpus = "{corpus_name}"\nlicense = "x"\ncitation = "x"\n'
        '[[parts]]\nname = "test"\nurl = "https://example.org/q.tsv"\npath = "my/q.tsv"\nformat = "dpr-tsv"\n'
    )
    return root


def errors_of(root) -> list:
    found: list = []
    catalog = load_catalog([root], on_error=found.append)
    assert "mysuite" not in catalog.suites and "mine" not in catalog.corpora
    return found


def test_the_suite_names_its_corpus_specs_fault(tmp_path):
    root = write_specs(tmp_path / "specs", ESCAPING)
    corpus_error, suite_error = errors_of(root)
    assert str(corpus_error.path).endswith("corpora/mine.toml") and ESCAPING in corpus_error.problem
    assert str(suite_error.path).endswith("suites/mysuite.toml")
    assert "unknown corpus" not in suite_error.problem
    assert suite_error.problem.startswith("'corpus' names corpus 'mine', whose spec is left out: ")
    assert str(root / "corpora" / "mine.toml") in suite_error.problem and ESCAPING in suite_error.problem


def test_a_corpus_spec_without_its_name_is_found_by_its_file_name(tmp_path):
    root = write_specs(tmp_path / "specs", ESCAPING, declared=False)
    _, suite_error = errors_of(root)
    assert "whose spec is left out" in suite_error.problem and "missing key 'name'" in suite_error.problem


def test_a_corpus_nobody_declares_is_still_unknown(tmp_path):
    root = write_specs(tmp_path / "specs", "ok/c.tsv")
    (root / "corpora" / "mine.toml").unlink()
    (suite_error,) = errors_of(root)
    assert suite_error.problem == "'corpus' names unknown corpus 'mine'"

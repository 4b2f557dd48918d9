"""Spec files as typed records (``harness.data.specs``): a spec of one's own data needs no
``license`` or ``citation`` (the built-in specs give both), and a file with several problems
names all of them in one line."""

from __future__ import annotations

import pytest

from harness.analysis.published import read_published_table
from harness.data.catalog import load_catalog, read_corpus_spec, read_suite_spec, read_training_spec
from harness.data.embeddings import read_embeddings_spec
from harness.errors import InputFileError
from harness.results.checkpoint import Checkpoint
from harness.runfiles.published import read_run_spec
from helpers.paths import REPO

BUILTIN = REPO / "datasets_spec"

SUITE = """
name = "mine"
description = "my questions"
match = "string"
corpus = "my-passages"

[[parts]]
name = "test"
url = "file:///data/questions.tsv"
path = "mine/questions.tsv"
format = "dpr-tsv"
"""

CORPUS = """
name = "my-passages"
description = "my passages"
url = "file:///data/passages.tsv"
path = "mine/passages.tsv"
format = "dpr-tsv"
"""


def test_a_suite_and_corpus_of_ones_own_need_no_license_or_citation(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "corpora").mkdir()
    (tmp_path / "suites" / "mine.toml").write_text(SUITE)
    (tmp_path / "corpora" / "my-passages.toml").write_text(CORPUS)
    catalog = load_catalog([tmp_path])
    suite, corpus = catalog.suites["mine"], catalog.corpora["my-passages"]
    assert (suite.license, suite.citation, corpus.license, corpus.citation) == ("", "", "", "")
    assert suite.parts[0].file.path == "mine/questions.tsv" and corpus.file.format == "dpr-tsv"
    (tmp_path / "suites" / "mine.toml").write_text(SUITE.replace('corpus = "my-passages"', 'corpus = "my-passages"\nlicense = "CC BY 4.0"'))
    assert read_suite_spec(tmp_path / "suites" / "mine.toml").license == "CC BY 4.0"


@pytest.mark.parametrize("kind", ["suites", "corpora", "training", "embeddings", "runs"])
def test_every_builtin_spec_gives_its_license_and_citation(kind):
    readers = {"suites": read_suite_spec, "corpora": read_corpus_spec, "training": read_training_spec,
               "embeddings": read_embeddings_spec, "runs": read_run_spec}
    files = sorted((BUILTIN / kind).glob("*.toml"))
    assert files
    for path in files:
        spec = readers[kind](path)
        assert spec.license.strip() and spec.citation.strip(), f"{path} needs a license and a citation"


def _problems(error: InputFileError) -> list[str]:
    message = str(error)
    assert "\n" not in message
    return message.split(": ", 1)[1].split("; ")


def test_every_problem_of_a_suite_spec_is_named_at_once(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SUITE.replace('name = "mine"', 'name = "My Suite"').replace('match = "string"', 'match = "fuzzy"')
                    .replace('description = "my questions"', "description = 3").replace('corpus = "my-passages"\n', "")
                    .replace('format = "dpr-tsv"', 'format = "xml"\ncolour = "red"').replace("file:///", "ftp://"))
    with pytest.raises(InputFileError) as info:
        read_suite_spec(path)
    assert str(info.value).startswith(f"{path}: ")
    assert sorted(_problems(info.value)) == sorted([
        "'description' must be str, got int",
        "missing key 'corpus'",
        "unknown key parts[0].'colour'",
        "'name' must be lowercase letters, digits, '.', '_' or '-', got 'My Suite'",
        "'match' must be one of string, regex, got 'fuzzy'",
        "parts[0].'url' must be an http(s):// or file:// URL, got 'ftp://data/questions.tsv'",
        "parts[0].'format' must be one of dpr-tsv, jsonl, json-list, squad-json, got 'xml'",
    ])


def test_every_problem_of_a_corpus_and_a_training_spec_is_named_at_once(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CORPUS.replace('path = "mine/passages.tsv"', 'path = "../x"') + "size = -3\npassages = \"many\"\n")
    with pytest.raises(InputFileError) as info:
        read_corpus_spec(path)
    problems = _problems(info.value)
    assert len(problems) == 3 and "'passages' must be int, got str" in problems and "'size' must be positive" in problems
    path.write_text(CORPUS.replace('format = "dpr-tsv"', 'format = "dpr-json"') + "examples = 0\nsha256 = \"abc\"\n")
    with pytest.raises(InputFileError) as info:
        read_training_spec(path)
    assert sorted(_problems(info.value)) == ["'examples' must be positive", "'sha256' must be 64 lowercase hex digits"]


def test_every_problem_of_an_embeddings_and_a_run_spec_is_named_at_once(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text('name = "e"\ndescription = "d"\ncorpus = "Bad Corpus"\nencoder = "x"\nformat = "faiss"\nrows = 0\n'
                    'dim = "768"\n[[parts]]\nurl = "https://h/x"\npath = "e/x"\nmd5 = "nope"\n')
    with pytest.raises(InputFileError) as info:
        read_embeddings_spec(path)
    problems = _problems(info.value)
    assert "'dim' must be int, got str" in problems and "'rows' must be positive, got 0" in problems
    assert "parts[0].'md5' must be 32 lowercase hex digits" in problems
    assert any(p.startswith("'corpus' must be a corpus name") for p in problems)
    assert any(p.startswith("'format' must be one of") for p in problems)
    path = tmp_path / "r.toml"
    path.write_text('name = "r"\ndescription = "d"\nsuite = "Not A Suite"\nformat = "dpr-json"\nurl = "https://h/r.json"\n'
                    'path = "r/r.json"\ndepth = 0\nmember = "x.json"\nreproduces = { table = "t" }\n')
    with pytest.raises(InputFileError) as info:
        read_run_spec(path)
    problems = _problems(info.value)
    assert "missing key reproduces.'system'" in problems and "'depth' must be positive" in problems
    assert any(p.startswith("'member' is only for compression") for p in problems)
    assert any(p.startswith("'suite' must be a suite name") for p in problems)


TABLE = """
name = "t"
title = "T"
citation = "C"
digits = 1
[[rows]]
system = "BM25"
suite = "nq"
values = { 20 = 59.1, 100 = 73.7 }
"""


def test_every_problem_of_a_published_table_is_named_at_once(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(TABLE.replace('title = "T"', 'title = ""').replace("59.1", "159.1").replace("73.7", "73.77")
                    + '[[rows]]\nsuite = "nq"\nvalues = { x = 1.0 }\nshade = 1\n')
    with pytest.raises(InputFileError) as info:
        read_published_table(path)
    assert sorted(_problems(info.value)) == sorted([
        "'title' must be a non-empty string",
        "rows[0]: top-20 must be a percentage from 0 to 100, got 159.1",
        "rows[0]: top-100 = 73.77 has more decimals than 'digits' = 1",
        "rows[1]: unknown key 'shade'",
        "rows[1]: 'system' must be a non-empty string",
        "rows[1]: cutoff 'x' must be a whole number from 1 to 10000",
    ])
    path.write_text(TABLE)
    assert read_published_table(path).rows[0].values == {20: 59.1, 100: 73.7}


def test_every_problem_of_a_training_record_is_named_at_once(tmp_path):
    import json

    record = {"schema": "harness-training/1", "variant": "", "initial_model": "m", "data": [1], "format": "f",
              "seed": True, "labels": ["a"]}
    (tmp_path / "harness_training.json").write_text(json.dumps(record))
    with pytest.raises(InputFileError) as info:
        Checkpoint.read(tmp_path, model=False)
    assert sorted(_problems(info.value)) == sorted([
        "'variant' is empty", "'seed' is missing or not an int", "'labels' is not a dict", "'data'[0] is not an object"])
    record.update(variant="dpr", data=[{"data": "nq", "labels": ["P17"]}], seed=3, labels={"a": {"folder": "labels/a"}},
                  recipe={"loss": {"name": "dpr", "options": {}}})
    (tmp_path / "harness_training.json").write_text(json.dumps(record))
    checkpoint = Checkpoint.read(tmp_path, model=False)
    assert checkpoint.typed.seed == 3 and checkpoint.typed.labels["a"].folder == "labels/a"
    assert checkpoint.loss_name == "dpr" and checkpoint.seen_labels() == ["P17"] and checkpoint.per_label

"""Every dataset spec is valid, and every real file of ../shared/data loads through its spec."""

from __future__ import annotations

import hashlib

import pytest

from harness.errors import InputFileError
from harness.data.questions import FORMATS, read_questions
from harness.data.catalog import load_catalog, read_corpus_spec, read_suite_spec
from harness_builtins.datasets.catalog import SPEC_DIR
from helpers.real_data import local_copy

CATALOG = load_catalog([SPEC_DIR])
PARTS = [(s.name, p) for s in CATALOG.suites.values() for p in s.parts]

#: Published sizes (PROTOCOL section 3, shared/data/README.md).
SIZES = {
    "nq": 3610, "nq-dev": 8757, "nq-open": 3610, "nq-open-dev": 8757, "nq-open-google": 3610,
    "trivia": 11313, "trivia-dev": 8837, "wq": 2032, "curated": 694, "squad": 10570,
    "entityquestions": 22075, "entityquestions-dev": 22068, "entityquestions-train": 176560,
    "efficientqa-dev": 1800,
}
MISSION = {"nq", "nq-open", "trivia", "wq", "curated", "squad", "entityquestions", "squad-dev-paragraphs"}
RELATIONS = "P17 P19 P20 P26 P36 P40 P50 P69 P106 P112 P127 P131 P136 P159 P170 P175 P176 P264 P276 P407 P413 P495 P740 P800".split()




def test_every_mission_suite_has_a_spec_and_names_are_unique():
    assert MISSION <= set(CATALOG.suites)
    assert len({s.name for s in CATALOG.suites.values()}) == len(CATALOG.suites)
    assert "wikipedia-dpr-100w" in CATALOG.corpora
    assert CATALOG.corpora["wikipedia-dpr-100w"].passages == 21015324


@pytest.mark.parametrize("spec", CATALOG.suites.values(), ids=lambda s: s.name)
def test_suite_specs_are_complete(spec):
    assert spec.description and spec.license and spec.citation.strip()
    assert spec.corpus in CATALOG.corpora
    assert spec.match == ("regex" if spec.name == "curated" else "string")
    assert spec.default_k == (1, 5, 20, 100)
    for part in spec.parts:
        assert part.file.format in FORMATS
        if "raw.githubusercontent.com" in part.file.url:
            assert part.file.sha256 and part.file.size, f"{spec.name}/{part.name}: repository files need checksums"


def test_entityquestions_has_24_relation_parts():
    for name in ("entityquestions", "entityquestions-dev", "entityquestions-train"):
        assert [p.name for p in CATALOG.suites[name].parts] == RELATIONS


@pytest.mark.parametrize("suite, part", PARTS, ids=[f"{s}/{p.name}" for s, p in PARTS])
def test_real_files_match_their_spec_and_load(shared_data, suite, part):
    if not part.file.sha256:
        pytest.skip("no pinned copy in ../shared/data (recorded on first download)")
    path = local_copy(shared_data, part.file.url)
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == part.file.sha256
    assert len(data) == part.file.size
    questions = read_questions(path, part.file.format)
    assert questions and all(q.answers for q in questions)


@pytest.mark.parametrize("name, size", SIZES.items())
def test_suites_have_their_published_sizes(shared_data, name, size):
    spec = CATALOG.suites[name]
    total = sum(len(read_questions(local_copy(shared_data, p.file.url), p.file.format)) for p in spec.parts)
    assert total == size


def test_nq_open_from_anserini_and_from_google_agree(shared_data):
    a = read_questions(local_copy(shared_data, CATALOG.suites["nq-open"].parts[0].file.url), "dpr-tsv")
    b = read_questions(local_copy(shared_data, CATALOG.suites["nq-open-google"].parts[0].file.url), "jsonl")
    from harness.scoring.matching import tokenize

    # The same questions in another order, and two kinds of difference in the answers:
    # - Google's file writes no-break spaces where anserini-tools' has spaces (DPR's tokenizer
    #   splits on both, so these answers match the same passages);
    # - anserini-tools' file has every '"' inside an answer doubled ('""Fix You""' for Google's
    #   '"Fix You"'), left unquoted so a CSV reader keeps both quotes. Pyserini's topics are this
    #   file; the Contriever/FiD numbers come from Google's: hence two suites.
    by_text = {q.text: q.answers for q in b}
    assert set(by_text) == {q.text for q in a}
    differing = [q for q in a if by_text[q.text] != q.answers]
    assert len(differing) == 143
    doubled = 0
    for q in a:
        google = by_text[q.text]
        if [tokenize(x) for x in q.answers] != [tokenize(x) for x in google]:
            assert q.answers == tuple(x.replace('"', '""') for x in google), q.text
            doubled += 1
    assert doubled == 32


def test_every_question_file_in_shared_data_has_a_spec(shared_data):
    spec_files = {local_copy(shared_data, p.file.url) for _, p in PARTS if p.file.sha256}
    data_files = {p for p in shared_data.rglob("*") if p.is_file() and p.suffix in {".txt", ".json", ".jsonl"}}
    data_files.discard(shared_data / "entityquestions" / "relation_query_templates.json")
    assert data_files - spec_files == set()


BASE = """
name = "x"
description = "d"
match = "string"
corpus = "c"
license = "l"
citation = "c"

[[parts]]
name = "test"
url = "https://raw.githubusercontent.com/o/r/0123456789abcdef0123456789abcdef01234567/f.txt"
path = "o/f.txt"
sha256 = "0545ad16b1ddc5379e3938a3bfd3237c02f0bfe05ef4a2a227957f65c963592b"
size = 10
format = "dpr-tsv"
"""


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda s: s.replace('sha256 = "0545ad16b1ddc5379e3938a3bfd3237c02f0bfe05ef4a2a227957f65c963592b"\n', ""), "'sha256' is required: the URL is pinned"),
        (lambda s: s.replace('format = "dpr-tsv"', 'format = "xml"'), "parts[0].'format' must be one of"),
        (lambda s: s.replace('match = "string"', 'match = "fuzzy"'), "'match' must be one of string, regex"),
        (lambda s: s.replace('path = "o/f.txt"', 'path = "../f.txt"'), "must be a relative path"),
        (lambda s: s.replace('name = "x"', 'name = "X Y"'), "'name' must be lowercase"),
        (lambda s: s + "\nextra = 1\n", "unknown key"),
        (lambda s: s.replace("size = 10", "size = -1"), "'size' must be positive"),
        (lambda s: s.replace("[[parts]]", "[[parts]\n"), "invalid TOML"),
        (lambda s: s.replace('corpus = "c"\n', ""), "missing key 'corpus'"),
    ],
)
def test_bad_specs_are_one_line_errors_naming_the_file(tmp_path, edit, problem):
    path = tmp_path / "suite.toml"
    path.write_text(edit(BASE))
    with pytest.raises(InputFileError) as err:
        read_suite_spec(path)
    assert str(err.value).startswith(str(path)) and problem in str(err.value)


def test_duplicate_and_dangling_names_are_errors(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "corpora").mkdir()
    (tmp_path / "suites" / "a.toml").write_text(BASE)
    with pytest.raises(InputFileError, match="unknown corpus 'c'"):
        load_catalog([tmp_path])
    (tmp_path / "corpora" / "c.toml").write_text(
        'name = "c"\ndescription = "d"\nurl = "file:///x.tsv"\npath = "x.tsv"\nformat = "dpr-tsv"\nlicense = "l"\ncitation = "c"\n'
    )
    assert read_corpus_spec(tmp_path / "corpora" / "c.toml").file.sha256 is None
    (tmp_path / "suites" / "b.toml").write_text(BASE)
    with pytest.raises(InputFileError, match="suite 'x' is also defined in"):
        load_catalog([tmp_path])

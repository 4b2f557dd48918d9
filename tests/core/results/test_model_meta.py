"""Model metadata: every built-in declares it, results carry or derive it, and a row is in-domain,
zero-shot or unknown on its suite (no model is downloaded: the metadata is declared data)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import registry
from harness.api import ModelMeta, combine, domain, meta_of, training_meta, training_set_name
from harness.board.html import render_html
from harness.board.sections import sections
from harness.results.meta import model_block, result_domain, result_meta
from harness.results.schema import read_results, write_result
from helpers.paths import REPO
from helpers.result_docs import make_result

BUILTIN_PLUGINS = {"bm25", "dense", "hybrid", "rerank"}


def _result(tmp_path: Path, retriever: str, suite: str, params=None, name="r"):
    folder = tmp_path / name
    write_result(make_result(retriever, params=params or {"a": 1}, suite=suite), folder)
    (result,) = read_results(folder)
    return result


def test_every_builtin_retriever_and_reranker_declares_its_metadata():
    for kind in ("retrievers", "rerankers"):
        for entry in registry.registry(kind).entries():
            if entry.plugin in BUILTIN_PLUGINS:
                assert entry.spec.meta is not None, f"{kind} {entry.spec.name} declares no meta"
                meta = meta_of(entry.spec.meta, dict(entry.spec.options))
                assert meta is None or isinstance(meta, ModelMeta)


def test_the_model_cards_training_sets():
    retrievers = registry.retrievers()

    def trained_on(name, **options):
        return meta_of(retrievers.get(name).meta, options).trained_on

    multiset = {"biencoder-nq-train", "biencoder-trivia-train", "biencoder-webquestions-train", "biencoder-curatedtrec-train"}
    assert trained_on("dpr-nq") == ("biencoder-nq-train",)
    assert set(trained_on("dpr-multi")) == multiset == set(trained_on("ance-multi"))
    assert trained_on("contriever") == () and trained_on("mss") == () and trained_on("bm25") == ()
    assert trained_on("contriever-msmarco") == ("msmarco",)
    assert trained_on("dkrr-tqa") == ("biencoder-trivia-train",)
    assert trained_on("art", checkpoint="webq-t0-3b") == ("biencoder-webquestions-train",)
    assert {"biencoder-nq-train", "biencoder-trivia-train", "biencoder-squad1-train", "msmarco"} <= set(trained_on("minilm"))
    # another model named by option is unknown, never the preset's
    assert meta_of(retrievers.get("dpr-nq").meta, {"query_model": "someone/else"}) is None
    assert meta_of(retrievers.get("art").meta, {"model": "/my/converted"}) is None
    assert meta_of(retrievers.get("st").meta, {"model": "x"}) is None
    # -o revision= pins the record's revision, as typed
    assert meta_of(retrievers.get("dpr-nq").meta, {"revision": "6e35"}).revision == "6e35"


def test_dpr_nq_is_in_domain_on_nq_and_zero_shot_on_entityquestions(tmp_path):
    assert registry.suites().get("nq").train == ("biencoder-nq-train",)
    assert result_domain(_result(tmp_path, "dpr-nq", "nq", name="a")) == "in-domain"
    assert result_domain(_result(tmp_path, "dpr-nq", "entityquestions", name="b")) == "zero-shot"
    assert result_domain(_result(tmp_path, "dpr-multi", "trivia", name="c")) == "in-domain"
    assert result_domain(_result(tmp_path, "dpr-multi", "squad", name="d")) == "zero-shot"
    assert result_domain(_result(tmp_path, "bm25", "nq", name="e")) == "zero-shot"
    assert result_domain(_result(tmp_path, "not-installed", "nq", name="f")) == "unknown"
    assert result_domain(_result(tmp_path, "dpr-nq", "no-such-suite", name="g")) == "unknown"
    assert result_domain(_result(tmp_path, "dense", "nq", params={"query_model": "x"}, name="h")) == "unknown"


def test_a_recorded_model_block_wins_over_the_derivation(tmp_path):
    doc = make_result("bm25", suite="nq")
    doc["model"] = {"retriever": ModelMeta(trained_on=("biencoder-nq-train",)).to_json()}
    write_result(doc, tmp_path / "x")
    (result,) = read_results(tmp_path / "x")
    assert result_meta(result).trained_on == ("biencoder-nq-train",) and result_domain(result) == "in-domain"
    block = model_block("dpr-nq", {}, {"name": "upr", "parameters": {"model": "google/t5-large-lm-adapt"}})
    assert block["retriever"]["trained_on"] == ["biencoder-nq-train"] and block["reranker"]["trained_on"] == []


def test_trained_checkpoints_derive_trained_on_from_their_training_record(tmp_path):
    known = {"biencoder-nq-train", "demo-train", "entityquestions-train"}
    assert training_set_name("/data/dpr/biencoder-nq-train.json.gz (sha256:0123abcd)") == "biencoder-nq-train"
    assert training_set_name("demo-train:2") == "demo-train"
    full = training_meta({"data": ["/d/biencoder-nq-train.json (sha256:1)"], "initial_model": "bert-base-uncased"}, known)
    assert (full.trained_on, full.trained_on_complete) == (("biencoder-nq-train",), True)
    assert domain(full, ("biencoder-nq-train",)) == "in-domain" and domain(full, ("entityquestions-train",)) == "zero-shot"
    # an initial model of unknown training, or a file harness cannot name: in-domain still known, zero-shot not
    part = training_meta({"data": ["demo-train (sha256:1)", "mine.jsonl"], "initial_model": "runs/x/model"}, known)
    assert (part.trained_on, part.trained_on_complete) == (("demo-train",), False)
    assert domain(part, ("demo-train",)) == "in-domain" and domain(part, ("entityquestions-train",)) == "unknown"
    # the initial model's own training sets are added (a built-in's hub id)
    params = {"training": {"data": ["entityquestions-train"], "initial_model": "facebook/dpr-question_encoder-single-nq-base"}}
    result = _result(tmp_path, "trained", "nq", params=params)
    assert set(result_meta(result).trained_on) == {"entityquestions-train", "biencoder-nq-train"}
    assert result_meta(result).trained_on_complete and result_domain(result) == "in-domain"


def test_combining_stages():
    zero, nq = ModelMeta(trained_on=()), ModelMeta(trained_on=("biencoder-nq-train",))
    assert domain(combine([zero, nq]), ("biencoder-nq-train",)) == "in-domain"
    assert domain(combine([zero, zero]), ("biencoder-nq-train",)) == "zero-shot"
    assert domain(combine([zero, None]), ("biencoder-nq-train",)) == "unknown"
    assert domain(combine([nq, None]), ("biencoder-nq-train",)) == "in-domain"
    with pytest.raises(ValueError):
        ModelMeta(trained_on=("NQ train",))


def test_the_board_marks_and_filters_rows_by_domain(tmp_path):
    for name, hits in (("dpr-nq", {"q1": 0, "q2": None}), ("bm25", {"q1": None, "q2": 0}), ("dense", {"q1": 0, "q2": 0})):
        write_result(make_result(name, params={"query_model": "x"} if name == "dense" else {}, suite="nq",
                                 ranks={"all": hits}), tmp_path / "results")
    (section,) = sections(read_results(tmp_path / "results"))
    assert {row.retriever: row.domain for row in section.rows} == {"dpr-nq": "in-domain", "bm25": "zero-shot", "dense": "unknown"}
    page = render_html([section], output_dir=tmp_path / "html")["nq.html"]
    box = re.search(r'<select data-field="domain">(.*?)</select>', page).group(1)
    assert re.findall(r'<option value="([^"]*)">', box) == ["", "=in-domain", "=unknown", "=zero-shot"]
    assert '<span class="domain domain-in-domain">in-domain</span>' in page


def test_compare_says_when_two_rows_differ_in_domain(tmp_path):
    from harness.analysis.compare import domain_note

    dpr, bm25 = _result(tmp_path, "dpr-nq", "nq", name="a"), _result(tmp_path, "bm25", "nq", name="b")
    note = domain_note([("dpr-nq", dpr), ("bm25", bm25)])
    assert note is not None and "dpr-nq: in-domain" in note and "bm25: zero-shot" in note
    assert domain_note([("bm25", bm25), ("bm25 again", bm25)]) is None


def test_metadata_problems_name_their_field(tmp_path):
    from harness.results.meta import metadata_problems

    assert metadata_problems(_result(tmp_path, "dpr-nq", "nq", name="a")) == []
    (line,) = metadata_problems(_result(tmp_path, "not-installed", "nq", name="b"))
    assert line.startswith("'model.retriever.trained_on'") and "not-installed" in line
    doc = make_result("bm25", suite="nq")
    doc["model"] = {"retriever": {**ModelMeta().to_json(), "parameters": -1, "trained_on": "nq", "extra": 1}, "third": None}
    write_result(doc, tmp_path / "c")
    (result,) = read_results(tmp_path / "c")
    problems = metadata_problems(result)
    assert "'model.third' is not a stage (retriever, reranker)" in problems
    assert "'model.retriever.parameters' must be a non-negative integer or null" in problems
    assert "'model.retriever.trained_on' must be a list of training set names or null" in problems
    assert "'model.retriever.extra' is not a model metadata field" in problems


def test_suite_specs_name_their_training_split(tmp_path):
    from harness.data.catalog import read_suite_spec
    from harness.errors import InputFileError

    spec = REPO / "datasets_spec" / "suites" / "nq.toml"
    text = spec.read_text(encoding="utf-8")
    assert read_suite_spec(spec).train == ("biencoder-nq-train",)
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('train = ["biencoder-nq-train"]', 'train = ["NQ train"]'), encoding="utf-8")
    with pytest.raises(InputFileError, match=r"'train'\[0\] must name a training set"):
        read_suite_spec(bad)
    none = tmp_path / "none.toml"
    none.write_text(text.replace('train = ["biencoder-nq-train"]\n', ""), encoding="utf-8")
    assert read_suite_spec(none).train is None
    assert registry.suites().get("entityquestions").train == ("entityquestions-train",)
    assert registry.suites().get("demo").train == ("demo-train",)


def test_each_real_suite_gets_its_literature_section(tmp_path):
    from harness.api import PublishedRow, PublishedTable
    from harness.board.html import LITERATURE, page_names
    from harness.board.markdown import render
    from harness.board.sections import literature

    table = PublishedTable(
        name="t1", title="T", citation="Someone 2020", url="https://example.org/t", version="v2", rows=(
            PublishedRow(system="DPR-NQ", suite="entityquestions", values={20: 49.7}, retriever="dpr-nq"),
            PublishedRow(system="DPR-NQ", suite="nq", values={20: 78.4}, retriever="dpr-nq"),
            PublishedRow(system="Other", suite="nq", values={20: 80.1}),
            PublishedRow(system="Made up", suite="demo", values={20: 99.0}),
        ))
    lit = literature([table], [])
    assert [s.suite for s in lit] == ["entityquestions", "nq"]  # demo is synthetic: none
    nq = lit[1]
    assert [(e.system, e.printed[20], e.domain, e.version) for e in nq.entries] == [
        ("Other", "80.1", "unknown", "v2"), ("DPR-NQ", "78.4", "in-domain", "v2")]
    assert lit[0].entries[0].domain == "zero-shot"
    write_result(make_result("bm25", suite="demo"), tmp_path / "results")
    markdown = render(read_results(tmp_path / "results"), output_dir=tmp_path, results_dir=tmp_path / "results",
                      published=[table])
    section = markdown[markdown.index("### nq (published rows only)"):markdown.index("## Published numbers")]
    assert "| *published:* DPR-NQ | in-domain | 78.4" in section and "(v2)" in section
    assert "### demo" not in markdown
    assert page_names(["literature", "index"])["literature"] != LITERATURE

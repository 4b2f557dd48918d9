"""The result document as a typed record (``harness.results.records``): the committed results
decode into it with every value as the JSON holds it, a value of the wrong type is named by its
field (msgspec's ``[...]`` resolved to the key), and numbers at the edges (an integer too large
for a float, one of over 4,300 digits) are one line naming the file and the field, exit 2."""

from __future__ import annotations

import json

import msgspec
import pytest

from harness.errors import InputFileError
from harness.results.records import ResultRecord, field_path, validate
from harness.results.schema import read_result, read_results, write_result
from helpers.cli_errors import one_line_error, run_cli
from helpers.paths import REPO
from helpers.result_docs import make_result

COMMITTED = REPO / "leaderboard" / "results"


def test_every_committed_result_decodes_into_the_typed_record_as_its_json_says():
    results = read_results(COMMITTED)
    assert len(results) >= 20
    for result in results:
        record, data = result.record, json.loads(result.path.read_text(encoding="utf-8"))
        assert isinstance(record, ResultRecord)
        assert record.suite.questions_fingerprint == data["suite"]["questions_fingerprint"]
        assert [(p.name, p.questions) for p in record.suite.parts] == [(p["name"], p["questions"]) for p in data["suite"]["parts"]]
        assert record.first_hit_ranks == data["first_hit_ranks"]
        assert record.k == data["k"] and record.depth == data["depth"] and record.created == data["created"]
        assert {m: (v.macro, v.parts) for m, v in record.metrics.items()} == {
            m: (v["macro"], v["parts"]) for m, v in data["metrics"].items()}
        assert (record.reranker is msgspec.UNSET) == ("reranker" not in data)
        assert result.ks == data["k"] and result.part_names == [p["name"] for p in data["suite"]["parts"]]
        # typed access gives what the document's keys give
        assert (result.suite, result.retriever, result.parameters) == (
            data["suite"]["name"], data["retriever"]["name"], data["retriever"]["parameters"])


def test_validate_returns_the_typed_record():
    record = validate(make_result(), source="x.json")
    assert record.suite.corpus.passages == 10 and record.retriever.plugin == "p"
    assert record.first_hit_ranks == {"all": {"q1": 0, "q2": 4, "q3": None, "q4": 30}}


def _set(path, value):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _with_metric(doc):
    doc["metrics"] = {"accuracy": {"macro": {"1": 0.25, "5": 0.5, "20": 0.5, "100": 0.75},
                                   "parts": {"all": {"1": 0.25, "5": 0.5, "20": 0.5, "100": 0.75}}}}
    return doc


@pytest.mark.parametrize("mutate, message", [
    (_set(["first_hit_ranks", "all", "q2"], "4"), "'first_hit_ranks.all.q2' must be null or an integer in [0, 100)"),
    (_set(["metrics", "accuracy", "parts", "all", "5"], "half"), "'metrics.accuracy'.parts.all must give a finite number for every k"),
    (_set(["suite", "corpus", "passages"], 1.5), "'suite.corpus.passages' must be a count or null"),
    (_set(["suite", "parts"], [{"name": "all"}]), "'suite.parts[0]' must be {\"name\": text, \"questions\": count}"),
    (_set(["retriever", "parameters"], [1]), "'retriever.parameters' must be a JSON object"),
    (_set(["ties"], {"tied": {"1": "x"}, "decided": {}}), "'ties' must be"),
    (lambda d: d["retriever"].pop("name"), "missing key 'retriever.name'"),
])
def test_a_value_of_the_wrong_type_is_named_by_its_field(mutate, message):
    doc = _with_metric(make_result())
    validate(doc, source="x.json")
    mutate(doc)
    with pytest.raises(InputFileError) as info:
        validate(doc, source="x.json")
    assert str(info.value) == f"x.json: {message}" or str(info.value).startswith(f"x.json: {message}")


def test_msgspec_paths_are_resolved_to_keys():
    doc = _with_metric(make_result())
    doc["metrics"]["mrr"] = {"macro": {"1": 0.1}, "parts": {"all": {"1": 0.1, "5": "x"}}}
    try:
        msgspec.convert(doc, type=ResultRecord, strict=True)
    except msgspec.ValidationError as error:
        path = str(error).split("`")[-2]
    assert "[...]" in path
    assert field_path(doc, path) == ["metrics", "mrr", "parts", "all", "5"]


@pytest.mark.parametrize("where, value, message", [
    (("timings", "search"), 10 ** 400, "'timings.search' is a number too large for a float"),
    (("metrics", "accuracy", "macro", "1"), 10 ** 400, "'metrics.accuracy.macro.1' is a number too large for a float"),
    (("cost", "gpu_hours"), 10 ** 400, "'cost.gpu_hours' is a number too large for a float"),
])
def test_an_integer_too_large_for_a_float_is_one_line_naming_the_field(tmp_path, capsys, where, value, message):
    doc = _with_metric(make_result())
    if where[0] == "cost":
        doc["cost"] = {}
    _set(list(where), value)(doc)
    results = tmp_path / "results"
    results.mkdir()
    path = results / "a.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_result(path)
    assert str(info.value) == f"{path}: {message}"
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(tmp_path / "o.md"))
    one_line_error(code, err, str(path), message)


def test_an_integer_of_over_4300_digits_is_one_line_naming_the_field(tmp_path, capsys):
    doc = make_result()
    results = tmp_path / "results"
    results.mkdir()
    path = results / "a.json"
    text = json.dumps(doc).replace('"timings": {"search": 0.1}', '"timings": {"search": 1' + "0" * 5000 + "}")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_result(path)
    assert str(info.value).startswith(f"{path}: 'timings.search' is an integer of 5,001 digits")
    code, _, err = run_cli(capsys, "leaderboard", "--results-dir", str(results), "--output", str(tmp_path / "o.md"))
    one_line_error(code, err, str(path), "'timings.search'")


def test_a_written_result_reads_back_with_the_same_bytes_and_record(tmp_path):
    doc = _with_metric(make_result())
    path = write_result(doc, tmp_path)
    before = path.read_bytes()
    result = read_result(path)
    assert result.data == doc and result.record == validate(doc, source="x")
    write_result(result.data, tmp_path)
    assert path.read_bytes() == before

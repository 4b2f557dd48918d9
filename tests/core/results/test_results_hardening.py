"""Result files under hostile input: an inconsistent or forged result file, or one named for another
configuration, is refused or left out with one line naming it and fails ``reproduce --check``.
"""

from __future__ import annotations

import json

import pytest

from harness.errors import InputFileError
from harness.results.schema import (
    read_result,
    read_results,
    result_filename,
    validate,
    write_result,
)
from helpers.registry_fixtures import TABLE, cli, hits_of, spec_folder
from helpers.result_docs import make_result

# --- result files --------------------------------------------------------------------------


def _accuracy(doc: dict) -> dict:
    from harness.evaluate import compute_metrics

    doc["metrics"] = compute_metrics(doc["first_hit_ranks"], doc["k"], ["accuracy"])
    return doc


def _two_parts() -> dict:
    return _accuracy(make_result("r", suite="s", ranks={"a": {"q1": 0, "q2": None}, "b": {"q3": 3, "q4": 0}}, depth=5))


def _set(path: str, value):
    def mutate(doc: dict) -> None:
        *keys, last = path.split("/")
        target = doc
        for key in keys:
            target = target[key]
        target[last] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (_set("metrics/accuracy/parts/a/1", 1.0), "'metrics.accuracy'.parts.a is 1.0 at k=1, but its first-hit ranks give 0.5"),
        (_set("metrics/accuracy/macro/5", 0.9), "'metrics.accuracy'.macro is 0.9 at k=5, but the mean over its parts is 0.75"),
        (_set("metrics/accuracy/parts/b/5", 1.5), "'metrics.accuracy'.parts.b is 1.5 at k=5; a metric is from 0 to 1"),
        (_set("metrics/accuracy/macro/20", 0.5), "'metrics.accuracy'.macro has a value for cutoff '20', which 'k' does not list"),
        (_set("metrics/accuracy/parts/c", {"1": 0.5, "5": 0.5}), "'metrics.accuracy'.parts names part 'c'"),
        (_set("metrics/mrr", {"macro": {"1": -0.5, "5": -0.5}, "parts": {"a": {"1": -0.5, "5": -0.5}, "b": {"1": -0.5, "5": -0.5}}}),
         "'metrics.mrr'.parts.a is -0.5 at k=1; a metric is from 0 to 1"),
        (_set("created", "9999"), "'created' must be a UTC time"),
        (_set("created", "2026-13-01T00:00:00Z"), "'created' must be a UTC time"),
    ],
)
def test_inconsistent_result_files_are_refused(tmp_path, mutate, problem):
    doc = _two_parts()
    validate(doc, source="fine.json")
    mutate(doc)
    with pytest.raises(InputFileError) as info:
        validate(doc, source="x.json")
    assert str(info.value).startswith("x.json: ") and problem in str(info.value) and "\n" not in str(info.value)


def test_a_result_file_named_for_another_configuration_is_refused(tmp_path):
    doc = _two_parts()
    path = write_result(doc, tmp_path)
    read_result(path)
    other = tmp_path / result_filename("s", "r", {"a": 2})
    other.write_text(path.read_text())  # a copy under another configuration's name
    with pytest.raises(InputFileError, match=f"does not match the configuration it holds, which harness names {path.name}"):
        read_result(other)
    mine = tmp_path / "my-copy.json"  # a name of the user's own is not harness's form: accepted
    mine.write_text(path.read_text())
    assert read_result(mine).config_key() == read_result(path).config_key()


def test_a_forged_result_is_named_skipped_and_fails_the_check(tmp_path, monkeypatch, capsys, fresh_registries):
    spec = spec_folder(tmp_path / "specs", {"p-1.toml": TABLE.format(name="p-1").replace("55.0", "50.0")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    results = tmp_path / "results"
    honest = write_result(_accuracy(make_result("r", suite="s", ranks=hits_of(1, 1, 0, 0))), results)
    forged = _accuracy(make_result("r", suite="s", params={"a": 2}, ranks=hits_of(1, 1, 0, 0)))
    forged["metrics"]["accuracy"]["parts"]["all"]["1"] = 0.99
    bad = results / result_filename("s", "r", {"a": 2})
    bad.write_text(json.dumps(forged))

    with pytest.raises(InputFileError, match="first-hit ranks give"):
        read_results(results)
    seen = []
    assert [r.path for r in read_results(results, on_error=seen.append)] == [honest]
    assert [e.path for e in seen] == [bad]

    code, out, err = cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1
    assert honest.name in out and bad.name not in out  # the honest one is compared, the forged one not
    (warning,) = [line for line in err.splitlines() if line.startswith("harness: warning:")]
    assert str(bad) in warning and "first-hit ranks give" in warning
    assert "the check is incomplete" in err
    assert cli(capsys, "reproduce", "--results-dir", str(results))[0] == 0
    bad.unlink()
    assert cli(capsys, "reproduce", "--results-dir", str(results), "--check")[0] == 0



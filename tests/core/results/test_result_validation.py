"""Validating result files by recomputation (harness.results.validation): honest files pass,
hostile ones are refused with one line per problem naming the file and the field."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from helpers.paths import REPO
from harness.results.validation import (
    BOARD_TOLERANCE_POINTS,
    CHECKS,
    MAX_RESULT_BYTES,
    MAX_TEXT,
    ValidationContext,
    validate_file,
    validate_files,
)

BOARD = REPO / "leaderboard" / "results"
BM25 = BOARD / "demo--bm25--4566dfd2.json"


# -- an oracle of the metrics, written out here rather than taken from harness -----------------------


def accuracy(ranks, k):
    values = list(ranks.values())
    return sum(1 for r in values if r is not None and r < k) / len(values)


def mrr(ranks, k):
    values = list(ranks.values())
    return sum(1 / (r + 1) for r in values if r is not None and r < k) / len(values)


def metrics_of(doc, names=("accuracy",)):
    """The metrics block of ``doc`` from its ranks, with this module's formulas."""
    formulas = {"accuracy": accuracy, "mrr": mrr}
    out = {}
    for name in names:
        parts = {part: {str(k): formulas[name](ranks, k) for k in doc["k"]} for part, ranks in doc["first_hit_ranks"].items()}
        macro = {str(k): sum(p[str(k)] for p in parts.values()) / len(parts) for k in doc["k"]}
        out[name] = {"macro": macro, "parts": parts}
    return out


def honest() -> dict:
    return json.loads(BM25.read_text(encoding="utf-8"))


def write(tmp_path: Path, doc: dict, name: str = "submitted.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def problems(path: Path, board: Path | None = None) -> list[str]:
    return validate_files([path], board=board)[0].lines()


# -- honest files ------------------------------------------------------------------------------------


def test_every_committed_result_validates_against_the_committed_board():
    reports = validate_files(sorted(BOARD.glob("*.json")), board=BOARD)
    assert len(reports) >= 20
    assert [line for report in reports for line in report.lines()] == []


def test_a_copy_of_a_committed_result_with_a_metric_recomputed_here_validates(tmp_path):
    doc = honest()
    doc["metrics"] = metrics_of(doc, ("accuracy", "mrr"))
    assert doc["metrics"]["accuracy"]["macro"]["20"] == pytest.approx(honest()["metrics"]["accuracy"]["macro"]["20"])
    assert problems(write(tmp_path, doc), board=BOARD) == []


def test_checks_are_a_list_a_further_check_joins(tmp_path):
    path = write(tmp_path, honest())

    def metadata(target, context):
        return [] if "model" in target.data else ["'model' is missing"]

    report = validate_file(path, ValidationContext(), [*CHECKS, metadata])
    assert report.lines() == [f"{path}: 'model' is missing"]


# -- hostile files -----------------------------------------------------------------------------------


def test_an_edited_accuracy_is_refused(tmp_path):
    doc = honest()
    doc["metrics"]["accuracy"]["macro"]["20"] += 0.01
    [line] = problems(write(tmp_path, doc))
    assert line.startswith(f"{tmp_path / 'submitted.json'}: ") and "'metrics.accuracy'.macro" in line and "k=20" in line
    doc = honest()  # a part and the macro edited alike
    doc["metrics"]["accuracy"]["parts"]["P17"]["20"] -= 0.024
    doc["metrics"]["accuracy"]["macro"]["20"] -= 0.001
    [line] = problems(write(tmp_path, doc))
    assert "'metrics.accuracy'.parts.P17" in line and "k=20" in line and "first-hit ranks give" in line


def test_an_edited_metric_with_its_macro_edited_to_match_is_refused_naming_the_part(tmp_path):
    doc = honest()
    doc["metrics"] = metrics_of(doc, ("accuracy", "mrr"))
    true_value = mrr(doc["first_hit_ranks"]["P17"], 100)
    mrr_block = doc["metrics"]["mrr"]
    mrr_block["parts"]["P17"]["100"] = true_value + 0.05
    mrr_block["macro"]["100"] = sum(p["100"] for p in mrr_block["parts"].values()) / len(mrr_block["parts"])
    lines = problems(write(tmp_path, doc))
    assert any("'metrics.mrr.parts.P17' is" in line and "k=100" in line and repr(true_value) in line for line in lines), lines
    assert any("'metrics.mrr.macro' is" in line and "k=100" in line for line in lines), lines
    assert all("accuracy" not in line for line in lines)


def test_a_metric_not_installed_cannot_be_recomputed(tmp_path):
    doc = honest()
    doc["metrics"]["made-up"] = copy.deepcopy(doc["metrics"]["accuracy"])
    [line] = problems(write(tmp_path, doc))
    assert "'metrics.made-up'" in line and "not installed" in line


def test_another_revision_of_the_questions_is_refused_naming_both_fingerprints(tmp_path):
    doc = honest()
    pinned = doc["suite"]["questions_fingerprint"]
    doc["suite"]["questions_fingerprint"] = "sha256:" + "0" * 64
    [line] = problems(write(tmp_path, doc))
    assert "'suite.questions_fingerprint'" in line and "sha256:" + "0" * 64 in line and pinned in line
    assert "another revision" in line


@pytest.fixture
def nq_offline(shared_data, tmp_path, monkeypatch):
    """NQ's pinned question file in an empty data folder, offline: suite ``nq`` loads from it."""
    data = tmp_path / "data"
    (data / "anserini-tools").mkdir(parents=True)
    shutil.copy(shared_data / "dpr-qas" / "topics.dpr.nq.test.txt", data / "anserini-tools" / "topics.dpr.nq.test.txt")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(data))
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    from harness import registry

    return registry.suites().get("nq").load()


def _nq_result(suite) -> dict:
    from harness.results.build import build_result

    ranks = {part.name: {q.id: (0 if i % 3 == 0 else None) for i, q in enumerate(part.questions)} for part in suite.parts}
    return build_result(suite, retriever={"name": "fake", "plugin": "bm25", "parameters": {}}, ranks=ranks,
                        ks=[1, 5, 20, 100], depth=100, metrics=["accuracy"], timings={"search": 1.0})


def test_a_result_on_nq_validates_and_one_on_another_revision_of_nq_is_refused(nq_offline, tmp_path):
    suite = nq_offline
    assert sum(len(p.questions) for p in suite.parts) == 3610
    good = _nq_result(suite)
    assert good["metrics"]["accuracy"]["macro"]["1"] == pytest.approx(1204 / 3610)  # every third question
    assert problems(write(tmp_path, good, "nq-good.json")) == []

    # the same questions with one answer as another revision of the data has it
    part = suite.parts[0]
    first = part.questions[0]
    edited = dataclasses.replace(first, answers=(*first.answers, "another answer"))
    revised = dataclasses.replace(suite, parts=(dataclasses.replace(part, questions=(edited, *part.questions[1:])),))
    assert revised.questions_fingerprint != suite.questions_fingerprint
    lines = problems(write(tmp_path, _nq_result(revised), "nq-revised.json"))
    assert len(lines) == 1, lines
    assert revised.questions_fingerprint in lines[0] and suite.questions_fingerprint in lines[0]
    assert "'suite.questions_fingerprint'" in lines[0] and "nq-revised.json" in lines[0]


def test_ranks_edited_to_match_with_failed_questions_left_out_are_refused(tmp_path):
    doc = honest()
    removed = {}
    for part, ranks in doc["first_hit_ranks"].items():
        removed[part] = [qid for qid, rank in ranks.items() if rank is None or rank >= 20]
        doc["first_hit_ranks"][part] = {q: r for q, r in ranks.items() if q not in removed[part]}
    for part in doc["suite"]["parts"]:
        part["questions"] = len(doc["first_hit_ranks"][part["name"]])
    doc["metrics"] = metrics_of(doc)
    assert doc["metrics"]["accuracy"]["macro"]["20"] == 1.0  # what the forger claims
    lines = problems(write(tmp_path, doc))
    shortened = [part for part, ids in removed.items() if ids]
    assert len(lines) == len(shortened) and shortened
    for line, part in zip(lines, shortened):
        assert f"'first_hit_ranks.{part}' lacks {len(removed[part])} of the part's 42 questions" in line
        assert repr(removed[part][0]) in line


def test_a_question_renamed_is_named(tmp_path):
    doc = honest()
    ranks = doc["first_hit_ranks"]["P19"]
    qid = next(iter(ranks))
    ranks["P19-9999"] = ranks.pop(qid)
    lines = problems(write(tmp_path, doc))
    assert any(f"lacks 1 of the part's 42 questions: {qid!r}" in line for line in lines), lines
    assert any("has 1 questions the part does not: 'P19-9999'" in line for line in lines), lines


def _drifted(doc: dict, change) -> dict:
    doc = copy.deepcopy(doc)
    change(doc["first_hit_ranks"])
    doc["metrics"] = metrics_of(doc, tuple(doc["metrics"]))
    doc["created"] = "2026-11-28T10:00:00Z"
    return doc


def test_a_configuration_on_the_board_with_drifted_numbers_is_named_with_both_files(tmp_path):
    board = tmp_path / "board"
    board.mkdir()
    shutil.copy(BM25, board / BM25.name)
    first_missed = next(q for q, r in honest()["first_hit_ranks"]["P17"].items() if r is None)

    def one_more_hit(ranks):
        ranks["P17"][first_missed] = 0

    drifted = write(tmp_path, _drifted(honest(), one_more_hit), BM25.name)
    lines = problems(drifted, board=board)
    assert len(lines) == 1, lines
    # one question of 42 in one part of 24: 100 / 42 points in that part, 100 / 1008 macro
    assert str(board / BM25.name) in lines[0] and str(drifted) in lines[0]
    assert f"{100 / 42:.4f} points apart" in lines[0] and f"at most {BOARD_TOLERANCE_POINTS}" in lines[0]
    assert problems(drifted, board=None) == []


def test_numbers_within_the_tolerance_of_the_board_pass(tmp_path):
    board = tmp_path / "board"
    board.mkdir()
    doc = honest()
    doc["metrics"] = metrics_of(doc, ("accuracy", "mrr"))
    write(board, doc, BM25.name)
    part, qid = next((p, q) for p, ranks in doc["first_hit_ranks"].items() for q, r in ranks.items() if r == 50)

    def a_rank_later(ranks):
        ranks[part][qid] = 51  # MRR@100 moves by (1/51 - 1/52) / 42 in that part: 0.0009 points

    assert abs(1 / 51 - 1 / 52) / 42 * 100 < BOARD_TOLERANCE_POINTS
    assert problems(write(tmp_path, _drifted(doc, a_rank_later), BM25.name), board=board) == []


def test_an_oversized_file_is_refused_unread(tmp_path):
    path = write(tmp_path, honest())
    with path.open("a", encoding="utf-8") as f:
        f.write(" " * (MAX_RESULT_BYTES + 1 - path.stat().st_size))
    assert path.stat().st_size == MAX_RESULT_BYTES + 1
    [line] = problems(path)
    assert f"{MAX_RESULT_BYTES + 1:,} bytes" in line and "10 MB" in line
    with path.open("r+b") as f:  # one byte less: at the limit, valid
        f.truncate(MAX_RESULT_BYTES)
    assert problems(path) == []


@pytest.mark.parametrize("text, what", [
    ("bm25\x1b[31m", "U+001B"), ("bm25\nforged row", "U+000A"), ("\u202ebm25", "U+202E"), ("x" * (MAX_TEXT + 1), "characters long"),
])
def test_control_characters_and_absurd_lengths_are_refused_in_every_text(tmp_path, text, what):
    doc = honest()
    doc["retriever"]["name"] = text
    doc["retriever"]["parameters"][text] = text
    doc["suite"]["description"] = text
    doc["machine"]["platform"] = text
    lines = problems(write(tmp_path, doc))
    for where in ("'retriever.name'", "the key at 'retriever.parameters.", "'suite.description'", "'machine.platform'"):
        assert any(where in line and what in line for line in lines), (where, lines)


def test_a_file_named_as_harness_names_results_must_hold_its_configuration(tmp_path):
    doc = honest()
    [line] = problems(write(tmp_path, doc, "demo--bm25--00000000.json"))
    assert "does not match the configuration" in line and BM25.name in line


def test_versions_and_machine_must_be_recorded(tmp_path):
    doc = honest()
    del doc["versions"]["harness"]
    del doc["versions"]["plugins"]["bm25"]
    doc["machine"] = {}
    lines = problems(write(tmp_path, doc))
    assert [line.split(": ", 1)[1].split(" ")[0] for line in lines] == [
        "'versions.harness'", "'versions.plugins'", "'machine.platform'", "'machine.cpu_count'"]


def test_a_malformed_model_block_is_refused_and_unknown_training_sets_are_valid(tmp_path):
    doc = honest()
    doc["model"] = {"retriever": {"trained_on": "nq"}, "decoder": {}}
    lines = problems(write(tmp_path, doc))
    assert len(lines) == 2 and "'model.decoder' is not a stage" in lines[0], lines
    assert "'model.retriever.trained_on' must be a list of training set names" in lines[1], lines
    doc["model"] = {"retriever": {"trained_on": "nq"}}
    lines = problems(write(tmp_path, doc))
    assert len(lines) == 1 and "'model.retriever.trained_on'" in lines[0], lines
    # the committed `dense` row's retriever declares no training sets: valid, its domain unknown
    dense = BOARD / "demo--dense--75e4b2f3.json"
    assert problems(dense, board=BOARD) == []


def test_a_suite_not_installed_is_refused(tmp_path):
    doc = honest()
    doc["suite"]["name"] = "no-such-suite"
    [line] = problems(write(tmp_path, doc))
    assert "'suite.name' 'no-such-suite' is not a suite installed here" in line


def test_the_schema_stops_a_file_before_the_other_checks(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"schema": "harness-result/1"', encoding="utf-8")
    [line] = problems(path)
    assert line.startswith(f"{path}: line 1: invalid JSON")


def test_a_suite_whose_questions_are_not_here_offline_is_refused_naming_what_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    doc = honest()
    doc["suite"]["name"] = "nq"
    lines = problems(write(tmp_path, doc))
    assert "suite 'nq' cannot be loaded to check its questions" in lines[0] and "topics.dpr.nq.test.txt" in lines[0]
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.txt"))

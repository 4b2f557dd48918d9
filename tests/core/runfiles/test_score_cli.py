"""``harness run --save-run`` and ``harness score``: a saved run scores back to the same numbers."""

from __future__ import annotations

import json

import pytest

from helpers.fake_retrievers import registries_with_fake_retrievers
from harness.cli.main import main


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("saved")
    with registries_with_fake_retrievers():
        code = _run_and_save(tmp_path)
    assert code == 0
    (result,) = (tmp_path / "results").glob("*.json")
    return tmp_path, json.loads(result.read_text()), (tmp_path / "stdout.txt").read_text()


def _run_and_save(tmp_path):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main([
            "run", "-r", "test-overlap", "-s", "demo", "--no-progress", "--save-run",
            "--runs-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results"),
            "--cache-dir", str(tmp_path / "cache"),
        ])
    (tmp_path / "stdout.txt").write_text(buffer.getvalue())
    return code


@pytest.mark.parametrize("suffix, fmt", [(".trec", "trec"), (".dpr.json", "dpr"), (".trec", None), (".dpr.json", None)])
def test_a_saved_run_scores_back_to_the_same_ranks(capsys, saved_run, suffix, fmt, test_registries, tmp_path):
    saved, original, out = saved_run
    (run_file,) = (saved / "runs").glob(f"*{suffix}")
    assert f"run written to {run_file}" in out
    args = ["score", "--suite", "demo", "--run", str(run_file), "--results-dir", str(tmp_path / "scored"), "--name", "again"]
    if fmt:
        args += ["--format", fmt]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (scored,) = (tmp_path / "scored").glob("*.json")
    data = json.loads(scored.read_text())
    assert data["first_hit_ranks"] == original["first_hit_ranks"]
    assert data["metrics"] == original["metrics"]
    assert data["retriever"]["name"] == "again" and data["retriever"]["plugin"] == "run-file"
    assert data["retriever"]["parameters"]["format"] == ("trec" if suffix == ".trec" else "dpr-json")
    assert "macro average (24 parts)" in captured.out


def test_dpr_json_carries_text_and_has_answer(saved_run):
    tmp_path, original, _ = saved_run
    (run_file,) = (tmp_path / "runs").glob("*.dpr.json")
    items = json.loads(run_file.read_text())
    assert len(items) == 1008
    first_part = next(iter(original["first_hit_ranks"].values()))
    for item, rank in zip(items, first_part.values()):
        flags = [c["has_answer"] for c in item["ctxs"]]
        assert (flags.index(True) if True in flags else None) == rank
        assert all(c["text"] and c["title"] for c in item["ctxs"])


def test_a_shallow_run_drops_deeper_cutoffs_with_a_warning(capsys, saved_run, test_registries, tmp_path):
    saved, original, _ = saved_run
    (run_file,) = (saved / "runs").glob("*.trec")
    shallow = tmp_path / "shallow.trec"
    shallow.write_text("".join(line + "\n" for line in run_file.read_text().splitlines() if int(line.split()[3]) <= 5))
    code = main(["score", "-s", "demo", "--run", str(shallow), "--results-dir", str(tmp_path / "s")])
    captured = capsys.readouterr()
    assert code == 0
    assert "at most 5 passages per question; top-20, top-100 not reported" in captured.err
    data = json.loads(next((tmp_path / "s").glob("*.json")).read_text())
    assert data["k"] == [1, 5] and data["depth"] == 5


def test_a_malformed_run_is_one_line(capsys, tmp_path, test_registries):
    bad = tmp_path / "bad.trec"
    bad.write_text("0 Q0 1 1 2.5 tag\n1 Q0 2 x 1.0 tag\n")
    code = main(["score", "-s", "demo", "--run", str(bad), "--format", "trec", "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and f"{bad}:2:" in err
    assert not (tmp_path / "r").exists()

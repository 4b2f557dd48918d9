"""Scoring speed, whole process: ``harness score`` vs pyserini's ``evaluate_dpr_retrieval``.

The workload is a realistic BM25-like pyserini DPR-run file over the 3,610 NQ test questions
(:func:`qa_data.bm25_like_pyserini_run`): 100 distinct passages of about 100 words per
question (about 110,000 distinct passages, ~290 MB), stored as ``title\\ntext``, without
``has_answer`` flags (so pyserini computes them), first hits placed to follow BM25's top-k
shares on NQ (about 44% in the top 5, 78% in the top 100).

Both sides run as fresh processes on the same file, as a user would run them: the harness as
``python -m harness.cli.main score --suite nq`` (questions from a data folder holding the shared
NQ test file), pyserini as its own ``evaluate_retrieval`` with ``--topk 1..100``, wrapped only to
record each question's 0/1 hits per k (so its first-hit ranks can be compared question by
question with the harness's). Skipped by default (``addopts = --benchmark-skip``); run with::

    pytest tests/benchmarks/test_bench_scoring.py --benchmark-only -s

Pyserini takes about 20 s; the second test prints the ratio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import helpers.qa_data as qa_data
REPO = Path(__file__).resolve().parents[2]

#: Wall times recorded by the harness benchmark, for the ratio the pyserini one reports.
_HARNESS: dict[str, float] = {}

_PYSERINI = """
import json, sys
from unittest import mock
import pyserini.eval.evaluate_dpr_retrieval as ev
recorded = []
class NumpyRecorder:
    @staticmethod
    def mean(values):
        recorded.append(list(values))
        return sum(values) / len(values)
with mock.patch.object(ev, "np", NumpyRecorder), mock.patch.object(ev, "tqdm", lambda it: it):
    ev.evaluate_retrieval(sys.argv[1], list(range(1, 101)), False)
n = len(recorded[0])
ranks = [next((k for k in range(100) if recorded[k][q]), None) for q in range(n)]
json.dump(ranks, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def bm25_like_run(tmp_path_factory):
    qa = qa_data.load_set("nq-dpr-test")
    folder = tmp_path_factory.mktemp("scoring")
    path = folder / "nq-bm25-like.json"
    info = qa_data.bm25_like_pyserini_run(qa, path, seed=2024)
    data = folder / "data" / "anserini-tools"
    data.mkdir(parents=True)
    shutil.copy(qa_data.shared_data_dir() / "dpr-qas" / "topics.dpr.nq.test.txt", data)
    return path, folder, info


def _env(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    # An installed harness has its bytecode cached, as pyserini's does in site-packages: do not
    # compile the checkout from source on every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    paths = [str(REPO), str(REPO / "plugins"), env.get("PYTHONPATH", "")]
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        HARNESS_OFFLINE="1",
        HARNESS_DATA_DIR=str(folder / "data"),
        HF_HUB_OFFLINE="1",
    )
    return env


def _harness_score(path: Path, folder: Path) -> Path:
    results = folder / "results"
    shutil.rmtree(results, ignore_errors=True)
    cmd = [sys.executable, "-m", "harness.cli.main", "score", "--suite", "nq", "--run", str(path),
           "--results-dir", str(results), "--no-progress"]
    subprocess.run(cmd, check=True, env=_env(folder), cwd=folder, capture_output=True)
    (result,) = results.glob("*.json")
    return result


def _pyserini_score(path: Path, folder: Path) -> Path:
    out = folder / "pyserini-ranks.json"
    subprocess.run([sys.executable, "-c", _PYSERINI, str(path), str(out)], check=True, capture_output=True)
    return out


@pytest.mark.benchmark(group="scoring-nq-bm25-like")
def test_bench_harness_score_process(benchmark, bm25_like_run):
    path, folder, info = bm25_like_run
    result = benchmark.pedantic(_harness_score, args=(path, folder), rounds=3, iterations=1, warmup_rounds=1)
    doc = json.loads(result.read_text())
    ranks = list(doc["first_hit_ranks"]["test"].values())
    assert len(ranks) == 3610
    for planted, rank in zip(info["planted"], ranks):
        if planted is not None:
            assert rank is not None and rank <= planted
    (folder / "harness-ranks.json").write_text(json.dumps(ranks))
    if benchmark.stats is not None:  # None under --benchmark-disable
        _HARNESS["min"] = benchmark.stats.stats.min
        benchmark.extra_info["distinct_passages"] = info["distinct"]
        benchmark.extra_info["file_mb"] = round(path.stat().st_size / 1e6, 1)
        for k in (1, 5, 20, 100):
            benchmark.extra_info[f"top{k}"] = round(sum(r is not None and r < k for r in ranks) / len(ranks), 4)


@pytest.mark.benchmark(group="scoring-nq-bm25-like")
def test_bench_pyserini_evaluate_dpr_retrieval_process(benchmark, bm25_like_run):
    pytest.importorskip("pyserini.eval.evaluate_dpr_retrieval")
    path, folder, _info = bm25_like_run
    out = benchmark.pedantic(_pyserini_score, args=(path, folder), rounds=1, iterations=1)
    expected = json.loads(out.read_text())

    ours_file = folder / "harness-ranks.json"
    if not ours_file.exists():  # the harness benchmark did not run first: run it here
        start = time.perf_counter()
        result = _harness_score(path, folder)
        _HARNESS["min"] = time.perf_counter() - start
        ours_file.write_text(json.dumps(list(json.loads(result.read_text())["first_hit_ranks"]["test"].values())))
    ours = json.loads(ours_file.read_text())
    assert ours == expected, "harness and pyserini first-hit ranks differ"
    hits = [r for r in ours if r is not None]
    assert len(set(hits)) > 50, "first hits should be spread over many ranks"
    if benchmark.stats is not None:
        pyserini_s = benchmark.stats.stats.min
        ratio = pyserini_s / _HARNESS["min"]
        benchmark.extra_info["harness_min_s"] = round(_HARNESS["min"], 3)
        benchmark.extra_info["speedup_vs_pyserini"] = round(ratio, 1)
        print(
            f"\nscoring {path.stat().st_size / 1e6:.0f} MB pyserini run (3,610 x 100): harness score "
            f"{_HARNESS['min']:.2f}s (min of 3), pyserini evaluate_dpr_retrieval {pyserini_s:.1f}s, "
            f"ratio {ratio:.1f}x; questions with a hit in the top 100: {len(hits)}/{len(ours)}"
        )

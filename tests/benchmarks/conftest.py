"""Inputs shared by the benchmarks: a realistic top-100 run over the real NQ test questions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The helper modules (qa_data, dpr_reference) live one level up, in tests/.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import helpers.qa_data as qa_data  # noqa: E402
from harness.api import Question  # noqa: E402

#: The workload: the top-100 of the 3,610 NQ test questions.
DEPTH = 100
POOL_SIZE = 20_000


@pytest.fixture(scope="session")
def nq_top100_run():
    """3,610 NQ test questions (DPR answers), 20,000 generated 100-word passages, a top-100 each.

    Passage words are drawn from the questions' and answers' words; 35% of the pool carries a
    real answer, and 80% of the questions get one of their own answer passages at a long-tailed
    rank, so first hits land at all ranks (and many questions have none).
    """
    qa = qa_data.load_set("nq-dpr-test")
    assert len(qa) == 3610
    run = qa_data.build_run(qa, pool_size=POOL_SIZE, depth=DEPTH, words_per_passage=100, seed=2024)
    questions = [Question(id=str(i), text=q, answers=tuple(a)) for i, (q, a) in enumerate(qa)]
    return questions, run

"""Broken rankings are refused, from a retriever (duplicates, unknown ids, non-finite scores) and from
a run file, in one line.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.api import Hit
from harness.errors import HarnessError
from harness.testing import toy_suite
from helpers.cli_errors import one_line_error, run_cli

# --- 8. broken rankings are refused -----------------------------------------------------------


class _Broken:
    def __init__(self, kind):
        self.kind = kind

    def parameters(self):
        return {"kind": self.kind}

    def index(self, corpus, context):
        pass

    def search(self, queries, k, context):
        good = [Hit(passage_id=f"t{i}", score=10.0 - i) for i in range(1, 5)]
        if self.kind == "duplicate":
            ranking = good[:2] + [good[0]]
        elif self.kind == "reversed":
            ranking = list(reversed(good))
        elif self.kind == "nan":
            ranking = good[:1] + [Hit(passage_id="t5", score=math.nan)]
        elif self.kind == "unknown-below":
            ranking = good + [Hit(passage_id="no-such-passage", score=0.0)]
        else:
            raise AssertionError(self.kind)
        return [ranking for _ in queries]


@pytest.mark.parametrize(
    "kind, fragment",
    [
        ("duplicate", "passage 't1' is ranked twice"),
        ("reversed", "not in descending order"),
        ("nan", "not a finite number"),
        ("unknown-below", "'no-such-passage', which is not in the corpus"),
    ],
)
def test_broken_rankings_from_a_retriever_are_refused(tmp_path, kind, fragment):
    from harness.evaluate import evaluate_retriever, make_context

    suite = toy_suite()
    with pytest.raises(HarnessError) as err:
        evaluate_retriever(_Broken(kind), suite, name="broken", plugin="test", k=[5],
                           context=make_context(suite, cache_dir=tmp_path, show_progress=False))
    message = str(err.value)
    assert message.startswith("retriever 'broken': question 'toy-1': ") and fragment in message


def _demo_trec(tmp_path: Path, lines: list[tuple[str, str, int, float]]) -> Path:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {p} {r} {s} test\n" for q, p, r, s in lines))
    return path


def test_broken_run_files_are_refused(capsys, tmp_path):
    from harness import registry

    demo = registry.suites().get("demo").load()
    question = demo.questions[0].id
    ids = [p.id for _, p in zip(range(3), demo.corpus)]
    reversed_run = _demo_trec(tmp_path, [(question, pid, r, float(r)) for r, pid in enumerate(ids, start=1)])
    code, _, err = run_cli(capsys, "score", "-s", "demo", "--run", str(reversed_run), "--results-dir", str(tmp_path / "r"))
    one_line_error(code, err, f"question {question!r}", "not in descending order")
    unknown = _demo_trec(tmp_path, [(question, ids[0], 1, 3.0), (question, "no-such", 2, 2.0)])
    code, _, err = run_cli(capsys, "score", "-s", "demo", "--run", str(unknown), "--results-dir", str(tmp_path / "r"))
    one_line_error(code, err, "'no-such', which is not in corpus")
    assert not (tmp_path / "r").exists()



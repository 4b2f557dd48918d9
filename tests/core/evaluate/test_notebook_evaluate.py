"""Evaluating from a notebook: a retriever object without a plugin, a suite from Python lists, and
the numbers read back (text keys and fractions in the document, percent by integer k besides).
docs/notebooks.md's code is run as written."""

from __future__ import annotations

import json
import re

import pytest

from harness.api import Hit, Passage, Question, Suite
from harness.errors import HarnessError
from harness.evaluate import EvaluationResult, evaluate
from helpers.dpr_reference import reference_has_answer
from helpers.paths import REPO

GUIDE = (REPO / "docs" / "notebooks.md").read_text(encoding="utf-8")


#: The guide's evaluation of its object on the whole demo suite (1,008 questions: tens of seconds
#: of pure-Python search on the development machine), run by the slow test only.
ON_DEMO = 'result = evaluate(WordOverlap(), "demo", show_progress=False)'


def _guide_code(*, on_demo: bool) -> dict:
    namespace: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", GUIDE, re.S)
    assert ON_DEMO in blocks[0]
    for block in blocks:
        if not on_demo:
            lines = block.splitlines()
            if ON_DEMO in lines:
                at = lines.index(ON_DEMO)
                del lines[at : at + 2]  # the evaluation and the print after it
            block = "\n".join(lines) + "\n"
        exec(compile(block, "notebooks.md", "exec"), namespace)
    return namespace


def _reference_accuracy(suite: Suite, rankings: dict[str, list[str]], ks) -> dict[int, float]:
    """Macro top-k accuracy in percent, from the rankings and DPR's own has_answer."""
    text = {p.id: p.text for p in suite.corpus}
    per_part = []
    for part in suite.parts:
        firsts = []
        for q in part.questions:
            ranks = [r for r, pid in enumerate(rankings[q.id]) if reference_has_answer(list(q.answers), text[pid])]
            firsts.append(ranks[0] if ranks else None)
        per_part.append({k: sum(1 for f in firsts if f is not None and f < k) / len(firsts) for k in ks})
    return {k: round(100 * sum(p[k] for p in per_part) / len(per_part), 2) for k in ks}


def test_the_guides_retriever_object_on_its_own_suite():
    namespace = _guide_code(on_demo=False)
    result, suite = namespace["result"], namespace["suite"]
    # the last evaluate of the guide: the two-question suite from lists
    assert result.accuracy == {1: 100.0, 2: 100.0} and result["metrics"]["accuracy"]["macro"] == {"1": 1.0, "2": 1.0}
    assert result["first_hit_ranks"] == {"all": {"q1": 0, "q2": 0}}
    assert [q.id for q in suite.questions] == ["q1", "q2"] and [p.id for p in suite.corpus] == ["p1", "p2", "p3"]
    assert result["retriever"] == {"name": "WordOverlap", "plugin": "builtins", "parameters": {"scoring": "distinct shared words"}}


@pytest.mark.slow
def test_the_guides_retriever_object_on_demo():
    """As written: the object on the registered demo suite, checked against DPR's has_answer over
    the object's own rankings."""
    from harness import registry

    namespace = _guide_code(on_demo=True)
    demo = registry.suites().get("demo").load()
    retriever = namespace["WordOverlap"]()
    retriever.index(demo.corpus, None)
    on_demo = evaluate(retriever, "demo", show_progress=False)
    rankings = retriever.search([q.text for q in demo.questions], 100, None)
    expected = _reference_accuracy(demo, {q.id: [h.passage_id for h in r] for q, r in zip(demo.questions, rankings)},
                                   (1, 5, 20, 100))
    assert on_demo.accuracy == expected
    assert on_demo["suite"]["name"] == "demo" and set(on_demo.parts) == {p.name for p in demo.parts}


def test_a_result_is_still_the_plain_document(tmp_path):
    suite = Suite.from_lists(["a b?", "c d?"], [["a"], "zzz"], ["a b", ("T", "c d")], name="s")

    class First:
        def parameters(self):
            return {}

        def index(self, corpus, context):
            self.ids = [p.id for p in corpus]

        def search(self, queries, k, context):
            return [[Hit(passage_id=pid, score=-float(i)) for i, pid in enumerate(self.ids[:k])] for _ in queries]

    result = evaluate(First(), suite, k=[1, 2], name="first", show_progress=False)
    assert isinstance(result, dict) and isinstance(result, EvaluationResult)
    assert json.loads(json.dumps(result)) == dict(result)
    assert result["metrics"]["accuracy"]["macro"] == {"1": 0.5, "2": 0.5}
    assert result.accuracy == {1: 50.0, 2: 50.0} and result.parts == {"all": {1: 50.0, 2: 50.0}}
    assert result["retriever"]["name"] == "first"
    from harness.results import write_result

    written = write_result(result, tmp_path)
    assert json.loads(written.read_text())["metrics"] == result["metrics"]


def test_a_suite_from_lists_reads_every_form_and_names_what_is_wrong():
    suite = Suite.from_lists(
        ["q one?", "q two?", "q three?"], [["x"], "y", ("z", "w")],
        ["text one", ("Title", "text two"), {"id": "own", "title": "T", "text": "t3"}, Passage(id="pp", title="", text="t4")],
        parts=["A", "B", "A"], question_ids=["a", "b", "c"], match="regex", default_k=(1, 2), name="mine",
    )
    assert [p.name for p in suite.parts] == ["A", "B"]
    assert suite.parts[0].questions == (Question(id="a", text="q one?", answers=("x",)), Question(id="c", text="q three?", answers=("z", "w")))
    assert [p.id for p in suite.corpus] == ["p1", "p2", "own", "pp"] and suite.corpus.get("p2").title == "Title"
    assert suite.match == "regex" and suite.default_k == (1, 2) and suite.corpus.name == "mine-corpus"
    for args, message in [
        ((["q?"], [], ["p"]), "1 questions but 0 answer lists"),
        ((["q?"], [[]], ["p"]), r"answers\[0\] must be a text or a non-empty list"),
        ((["q?"], [[""]], ["p"]), r"answers\[0\]\[0\] must be non-empty text"),
        ((["q?"], [["a"]], [3]), r"passages\[0\] must be a text"),
        (("q?", [["a"]], ["p"]), "questions must be a list"),
        (([], [], ["p"]), "no questions"),
        ((["q?"], [["a"]], []), "no passages"),
        ((["q?", "q?"], [["a"], ["a"]], ["p", Passage(id="p1", title="", text="t")]), "duplicate passage id 'p1'"),
    ]:
        with pytest.raises(ValueError, match=message):
            Suite.from_lists(*args)


def test_objects_are_checked_before_any_work():
    suite = Suite.from_lists(["q?"], [["a"]], ["a"])
    with pytest.raises(HarnessError, match="a retriever is a registered name or an object with parameters"):
        evaluate(object(), suite)
    with pytest.raises(HarnessError, match="options are for a retriever given by name"):
        evaluate(_Nothing(), suite, options={"k1": 1})
    with pytest.raises(HarnessError, match="name= names a retriever object"):
        evaluate("bm25", suite, name="mine")


class _Nothing:
    def parameters(self):
        return {}

    def index(self, corpus, context):
        raise AssertionError("indexed")

    def search(self, queries, k, context):
        raise AssertionError("searched")

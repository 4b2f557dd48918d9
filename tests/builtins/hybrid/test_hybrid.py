"""The fusion plugin (``hybrid:SPARSE+DENSE``, ``rrf:A+B[+C...]``): fusion arithmetic on hand-built
hit lists, agreement with pyserini's own fusion code, name and option errors, the per-suite alpha
table, and end-to-end runs through :func:`harness.evaluate.evaluate`."""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
import importlib.util
import math
import random
import re
import types
from pathlib import Path

import pytest

from harness import hookimpl
from harness.errors import HarnessError
from harness.testing import check_retriever, toy_suite
from harness.api import Hit, RetrieverSpec, RunContext, SuiteSpec
from harness_builtins import hybrid as hybrid_plugin
from harness_builtins.hybrid import default_alpha, hybrid_fuse, rrf_fuse

# --------------------------------------------------------------------------- test retrievers

#: What the ``fixed-*`` retrievers return: retriever name -> query -> [(passage id, score)], best first.
SCRIPT: dict[str, dict[str, list[tuple[str, float]]]] = {}
#: The ``k`` each ``fixed-*`` retriever was searched with.
ASKED: dict[str, list[int]] = collections.defaultdict(list)
#: The ``argument`` the ``test-echo`` spec was loaded with.
ECHOED: list[str] = []


class FixedRetriever:
    """Returns the hits ``SCRIPT[name][query]`` (cut to ``k``); for exact fusion arithmetic."""

    def __init__(self, name: str):
        self.name = name

    def parameters(self):
        return {"script": self.name}

    def index(self, corpus, context):
        pass

    def search(self, queries, k, context):
        ASKED[self.name].append(k)
        return [[Hit(passage_id=p, score=s) for p, s in SCRIPT[self.name].get(q, [])][:k] for q in queries]


_WORD = re.compile(r"\w+")


class RareWordRetriever:
    """Scores passages by the idf of the query's rare words they contain (words in more than
    ``max_df`` of the passages are ignored, which keeps it fast on the demo corpus)."""

    def __init__(self, fields: str = "title text", max_df: float = 0.02):
        self.fields, self.max_df = fields, float(max_df)

    def parameters(self):
        return {"fields": self.fields, "max_df": self.max_df}

    def index(self, corpus, context):
        postings = collections.defaultdict(set)
        self._order = {}
        for i, p in enumerate(corpus):
            self._order[p.id] = i
            text = " ".join(getattr(p, f) for f in self.fields.split())
            for w in set(_WORD.findall(text.lower())):
                postings[w].add(p.id)
        n = max(1, len(self._order))
        self._postings = {w: ids for w, ids in postings.items() if len(ids) <= max(1, self.max_df * n)}
        self._idf = {w: math.log(n / len(ids)) + 0.01 for w, ids in self._postings.items()}

    def search(self, queries, k, context):
        out = []
        for q in queries:
            scores = collections.Counter()
            for w in set(_WORD.findall(q.lower())):
                for pid in self._postings.get(w, ()):
                    scores[pid] += self._idf[w]
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], self._order[kv[0]]))[:k]
            out.append([Hit(passage_id=p, score=s) for p, s in ranked])
        return out


def _suite_named(name: str):
    """harness.testing's toy suite, under another name (so RunContext.suite is ``name``)."""
    return dataclasses.replace(toy_suite(), name=name)


@hookimpl
def _register_retrievers(register):
    for name in ("fixed-sparse", "fixed-dense", "fixed-third"):
        register(RetrieverSpec(name=name, description="scripted hits (tests only)", load=lambda _n=name: FixedRetriever(_n)))
    register(RetrieverSpec(name="test-rare-words", description="rare-word idf (tests only)",
                           load=lambda: RareWordRetriever("title text")))
    register(RetrieverSpec(name="test-rare-title", description="rare title words (tests only)",
                           load=lambda: RareWordRetriever("title")))

    def echo(argument):
        ECHOED.append(argument)
        return FixedRetriever("fixed-third")

    register(RetrieverSpec(name="test-echo", description="records its argument (tests only)", load=echo, argument="WORD"))


@hookimpl
def _register_suites(register):
    # RunContext.suite is the loaded suite's name: these let the toy suite stand in for real ones.
    for name in ("trivia", "nq", "squad-dev-paragraphs"):
        register(SuiteSpec(name=f"toy-as-{name}", description="toy suite (tests only)",
                           load=lambda _n=name: _suite_named(_n), synthetic=True))


TEST_PLUGIN = types.ModuleType("hybrid_test_plugin")
TEST_PLUGIN.register_retrievers = _register_retrievers
TEST_PLUGIN.register_suites = _register_suites


@contextlib.contextmanager
def _registries():
    """The installed plugins, plus the hybrid plugin (until pyproject names it), tests/fake_retrievers
    (``test-overlap``) and this file's test retrievers and suites."""
    import helpers.fake_retrievers as fake_retrievers
    import harness.registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.registry import KINDS, Registry

    manager = loaded_plugins().manager
    added = []
    for module, name in ((hybrid_plugin, "hybrid"), (fake_retrievers, "tests-fake"), (TEST_PLUGIN, "tests-hybrid")):
        if not manager.is_registered(module):
            register_plugin(manager, module, name)
            added.append(module)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(harness.registry, "_cache", {kind: Registry.collect(manager, kind) for kind in KINDS})
            yield
    finally:
        for module in added:
            manager.unregister(module)


@pytest.fixture
def registries():
    SCRIPT.clear()
    ASKED.clear()
    ECHOED.clear()
    with _registries():
        yield


def _evaluate(retriever, suite, cache_dir, **kwargs):
    from harness.evaluate import run_evaluation

    return run_evaluation(retriever, suite, cache_dir=cache_dir, threads=1, show_progress=False, **kwargs)


def _pairs(hits):
    return [(h.passage_id, h.score) for h in hits]


def assert_hits(hits, expected, rel=1e-12):
    """``hits`` are ``expected`` [(passage id, score)]: ids exactly, scores to ``rel``."""
    assert [h.passage_id for h in hits] == [p for p, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], rel=rel, abs=1e-15)


def H(*pairs):
    return [Hit(passage_id=p, score=s) for p, s in pairs]


# --------------------------------------------------------------------------- hybrid arithmetic

SPARSE = H(("a", 10.0), ("b", 8.0), ("c", 5.0))
DENSE = H(("b", 0.9), ("d", 0.7), ("a", 0.5))


def test_hybrid_union_missing_side_takes_its_minimum():
    # min sparse 5.0 (c), min dense 0.5 (a); score = dense + alpha * sparse
    fused = hybrid_fuse(SPARSE, DENSE, alpha=1.0)
    assert [h.passage_id for h in fused] == ["a", "b", "d", "c"]
    assert_hits(
        fused,
        [("a", 0.5 + 10.0), ("b", 0.9 + 8.0), ("d", 0.7 + 5.0), ("c", 0.5 + 5.0)]
    )


def test_alpha_weights_the_sparse_side_and_changes_the_order():
    fused = hybrid_fuse(SPARSE, DENSE, alpha=0.1)
    # a: 0.5 + 1.0, b: 0.9 + 0.8, c: 0.5 + 0.5, d: 0.7 + 0.5
    assert [h.passage_id for h in fused] == ["b", "a", "d", "c"]
    assert [h.score for h in fused] == pytest.approx([1.7, 1.5, 1.2, 1.0])
    assert [h.passage_id for h in hybrid_fuse(SPARSE, DENSE, alpha=0.0)] == ["b", "d", "a", "c"]


def test_k_and_depth_cut_the_result_and_each_side():
    assert [h.passage_id for h in hybrid_fuse(SPARSE, DENSE, alpha=1.0, k=2)] == ["a", "b"]
    # depth 2: the sides are a, b and b, d: minima 8.0 (b) and 0.7 (d); c drops out
    fused = hybrid_fuse(SPARSE, DENSE, alpha=1.0, depth=2)
    assert_hits(fused, [("a", 0.7 + 10.0), ("b", 0.9 + 8.0), ("d", 0.7 + 8.0)])


def test_normalisation_is_pyseris_midrange_scaling():
    # sparse: mid 7.5, range 5 -> a .5, b .1, c -.5; dense: mid .7, range .4 -> b .5, d 0, a -.5
    fused = hybrid_fuse(SPARSE, DENSE, alpha=1.0, normalize=True)
    assert_hits(fused, [("b", 0.6), ("a", 0.0), ("d", -0.5), ("c", -1.0)])
    # a side whose hits all score the same (pyserini divides by zero there) contributes 0
    flat = hybrid_fuse(H(("a", 3.0), ("b", 3.0)), DENSE, alpha=2.0, normalize=True)
    assert_hits(flat, [("b", 0.5), ("d", 0.0), ("a", -0.5)])


def test_an_empty_side_counts_as_zero_and_ties_go_by_passage_id():
    fused = hybrid_fuse(H(("y", 2.0), ("x", 2.0), ("10", 1.0), ("9", 1.0)), [], alpha=0.5)
    assert _pairs(fused) == [("x", 1.0), ("y", 1.0), ("10", 0.5), ("9", 0.5)]  # string order: "10" < "9"
    assert hybrid_fuse([], [], alpha=1.0) == []


def test_a_passage_listed_twice_counts_at_its_first_position():
    fused = hybrid_fuse(H(("a", 4.0), ("a", 1.0), ("b", 2.0)), H(("a", 1.0), ("b", 1.0)), alpha=1.0)
    assert _pairs(fused) == [("a", 5.0), ("b", 3.0)]


# --------------------------------------------------------------------------- rrf arithmetic


def test_rrf_sums_reciprocal_ranks():
    a, b, c = H(("a", 9), ("b", 8), ("c", 7)), H(("b", 0.9), ("d", 0.8), ("a", 0.1)), H(("e", 100.0))
    fused = rrf_fuse([a, b, c])
    assert [h.passage_id for h in fused] == ["b", "a", "e", "d", "c"]
    assert_hits(
        fused,
        [("b", 1 / 61 + 1 / 62), ("a", 1 / 61 + 1 / 63), ("e", 1 / 61), ("d", 1 / 62), ("c", 1 / 63)], rel=1e-15
    )
    assert_hits(rrf_fuse([a, b], rrf_k=0, k=2), [("b", 1 / 2 + 1), ("a", 1 + 1 / 3)])
    # depth 1: only each ranking's first hit counts
    assert_hits(rrf_fuse([a, b, c], depth=1), [("a", 1 / 61), ("b", 1 / 61), ("e", 1 / 61)])


def test_rrf_uses_positions_not_scores_and_ties_go_by_passage_id():
    tied = H(("q", 5.0), ("p", 5.0))  # equal scores, but q is listed first: rank 1
    assert_hits(rrf_fuse([tied, H(("z", 1.0))]), [("q", 1 / 61), ("z", 1 / 61), ("p", 1 / 62)])
    # the same ranks in another order tie exactly (math.fsum is correctly rounded)
    latin = rrf_fuse([H(("o", 1), ("m", 1), ("n", 1)), H(("n", 1), ("o", 1), ("m", 1)), H(("m", 1), ("n", 1), ("o", 1))])
    assert [h.passage_id for h in latin] == ["m", "n", "o"]
    assert {h.score for h in latin} == {math.fsum([1 / 61, 1 / 62, 1 / 63])}


# --------------------------------------------------------------------------- against pyserini


@dataclasses.dataclass
class _Result:  # pyserini.search.faiss.DenseSearchResult's shape
    docid: str
    score: float


def _pyserini_hybrid_results():
    """pyserini's own ``HybridSearcher._hybrid_results``, compiled from its installed source.

    Importing ``pyserini.search.hybrid`` starts the JVM (it imports the Lucene searcher), so the
    static method is taken out of the file with ``ast`` and compiled on its own.
    """
    spec = importlib.util.find_spec("pyserini")
    if spec is None or spec.origin is None:
        pytest.skip("pyserini is not installed")
    path = Path(spec.origin).parent / "search" / "hybrid" / "_searcher.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "HybridSearcher")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_hybrid_results")
    assert [ast.unparse(d) for d in fn.decorator_list] == ["staticmethod"]
    fn.decorator_list = []
    namespace = {"DenseSearchResult": _Result}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["_hybrid_results"]


def _random_hits(rng, pool, n, low, high):
    return [Hit(passage_id=p, score=rng.uniform(low, high)) for p in rng.sample(pool, n)]


def _sorted(hits):
    return sorted(hits, key=lambda h: -h.score)


@pytest.mark.parametrize("normalize", [False, True])
def test_hybrid_matches_pyserini_on_random_hit_lists(normalize):
    pyserini_hybrid = _pyserini_hybrid_results()
    rng = random.Random(20240607)
    pool = [str(i) for i in range(60)]
    ties = 0
    for trial in range(300):
        low = 2 if normalize else 0  # pyserini divides by zero on a one-hit side when normalising
        sparse = _sorted(_random_hits(rng, pool, rng.randint(low, 30), 5.0, 40.0))
        dense = _sorted(_random_hits(rng, pool, rng.randint(low, 30), 60.0, 90.0))
        alpha, k = rng.choice([0.95, 1.05, 1.2, 1.3, 2.0, rng.uniform(0, 3)]), rng.choice([1, 5, 20, 100])
        theirs = pyserini_hybrid(
            [_Result(h.passage_id, h.score) for h in dense], [_Result(h.passage_id, h.score) for h in sparse],
            alpha, None, normalize,  # k=None: all of it (its [:k] slice)
        )
        # pyserini leaves ties in set order (hash-seeded); ties are common (the sparse side's last
        # hit missing from dense ties with the dense side's last hit missing from sparse), so its
        # full list is ordered by our tie rule before the cut. Scores must be identical.
        theirs = sorted(((r.docid, r.score) for r in theirs), key=lambda pair: (-pair[1], pair[0]))[:k]
        ours = hybrid_fuse(sparse, dense, alpha=alpha, k=k, normalize=normalize)
        assert _pairs(ours) == theirs, f"trial {trial}"
        ties += len(ours) - len({h.score for h in ours})
    assert ties > 0  # the tie rule was exercised


def test_rrf_matches_pyserini_on_random_runs():
    pytest.importorskip("pandas")
    fusion = pytest.importorskip("pyserini.fusion")  # pandas only: no JVM
    from pyserini.trectools import TrecRun

    rng = random.Random(7)
    pool = [str(i) for i in range(50)] + [f"doc{i}" for i in range(10)]
    topics = [f"q{i}" for i in range(40)]
    for n_runs in (2, 3):
        runs = [[_sorted(_random_hits(rng, pool, rng.randint(1, 40), 0, 1)) for _ in topics] for _ in range(n_runs)]
        for depth, k, rrf_k in ((1000, 1000, 60), (10, 20, 60), (25, 5, 0)):
            trec_runs = [
                TrecRun.from_list([(t, "Q0", h.passage_id, r, h.score, "x")
                                   for t, hits in zip(topics, run) for r, h in enumerate(hits, start=1)])
                for run in runs
            ]
            fused = fusion.reciprocal_rank_fusion(trec_runs, rrf_k=rrf_k, depth=depth, k=k).run_data
            for i, topic in enumerate(topics):
                theirs = fused[fused["topic"] == topic]
                ours = rrf_fuse([run[i] for run in runs], k=k, rrf_k=rrf_k, depth=depth)
                assert [h.passage_id for h in ours] == list(theirs["docid"]), (n_runs, depth, topic)
                assert [h.score for h in ours] == pytest.approx(list(theirs["score"]), rel=1e-15, abs=0)


# --------------------------------------------------------------------------- the retrievers


def test_hybrid_asks_each_side_for_depth_and_returns_k(registries, tmp_path):
    SCRIPT["fixed-sparse"] = {q.text: _pairs(SPARSE) for q in toy_suite().questions}
    SCRIPT["fixed-dense"] = {q.text: _pairs(DENSE) for q in toy_suite().questions}
    # passage ids a..d are not in the toy corpus: search the loaded retriever directly
    from harness.registry import retrievers

    model = retrievers().get("hybrid").load(argument="fixed-sparse+fixed-dense", alpha=0.1, depth=3)
    context = RunContext(cache_dir=tmp_path, suite="trivia")
    model.index(toy_suite().corpus, context)
    (ranking,) = model.search([toy_suite().questions[0].text], 2, context)
    assert_hits(ranking, [("b", 1.7), ("a", 1.5)])
    assert ASKED == {"fixed-sparse": [3], "fixed-dense": [3]}
    assert model.parameters() == {
        "alpha": 0.1, "depth": 3, "normalize": False,
        "sparse": {"name": "fixed-sparse", "parameters": {"script": "fixed-sparse"}},
        "dense": {"name": "fixed-dense", "parameters": {"script": "fixed-dense"}},
    }
    assert model.alpha_source == "option"


def test_rrf_retriever_fuses_three_components(registries, tmp_path):
    from harness.registry import retrievers

    SCRIPT["fixed-sparse"] = {"q": [("a", 9), ("b", 8), ("c", 7)]}
    SCRIPT["fixed-dense"] = {"q": [("b", 0.9), ("d", 0.8), ("a", 0.1)]}
    SCRIPT["fixed-third"] = {"q": [("e", 100.0)]}
    model = retrievers().get("rrf").load(argument="fixed-sparse + fixed-dense+fixed-third", rrf_k=0)
    context = RunContext(cache_dir=tmp_path)
    model.index(toy_suite().corpus, context)
    assert_hits(
        model.search(["q", "unknown"], 3, context)[0],
        [("b", 1 / 2 + 1), ("a", 1 + 1 / 3), ("e", 1.0)]
    )
    assert set(ASKED) == {"fixed-sparse", "fixed-dense", "fixed-third"}
    assert all(ks == [1000] for ks in ASKED.values())
    params = model.parameters()
    assert params["rrf_k"] == 0 and params["depth"] == 1000
    assert [c["name"] for c in params["components"]] == ["fixed-sparse", "fixed-dense", "fixed-third"]


def test_a_component_with_an_argument_gets_it(registries, tmp_path):
    SCRIPT["fixed-sparse"], SCRIPT["fixed-third"] = {"q": [("a", 1.0)]}, {"q": [("b", 1.0)]}
    from harness.registry import retrievers

    model = retrievers().get("rrf").load(argument="fixed-sparse+test-echo:hello")
    assert ECHOED == ["hello"]
    assert model.parameters()["components"][1]["name"] == "test-echo:hello"


def test_fused_retrievers_keep_the_retriever_contract(registries, tmp_path):
    from harness.registry import retrievers

    composed = (("hybrid", "test-rare-words+test-overlap"), ("rrf", "test-rare-words+test-rare-title+test-overlap"))
    for name, argument in composed:
        check = check_retriever(retrievers().get(name).load(argument=argument), k=5, cache_dir=tmp_path)
        assert check.accuracy[5] == 1.0, (name, check)


# --------------------------------------------------------------------------- per-suite alpha


@pytest.mark.parametrize(
    "suite, dense, alpha",
    [
        ("nq", "dpr-multi", 1.3), ("nq-open", "dpr-multi", 1.3), ("nq-dev", "dpr-multi", 1.3),
        ("nq", "dpr-nq", 1.2), ("nq-open", "dpr-nq", 1.2), ("nq", "contriever", 1.0),
        ("trivia", "dpr-multi", 0.95), ("trivia", "dpr-nq", 0.95), ("trivia-dev", "dpr-multi", 0.95),
        ("wq", "dpr-multi", 0.95), ("curated", "dpr-multi", 1.05), ("squad", "dpr-multi", 2.0),
        ("squad-dev-paragraphs", "dpr-multi", 1.0), ("demo", "dpr-multi", 1.0), (None, "dpr-multi", 1.0),
    ],
)
def test_default_alpha_table(suite, dense, alpha):
    assert default_alpha(suite, dense)[0] == alpha


@pytest.mark.parametrize(
    "suite, options, alpha",
    [("toy-as-trivia", {}, 0.95), ("toy-as-nq", {}, 1.0), ("toy-as-squad-dev-paragraphs", {}, 1.0),
     ("toy-as-trivia", {"alpha": 0.5}, 0.5), ("toy-as-trivia", {"alpha": "auto"}, 0.95)],
)
def test_the_alpha_used_is_recorded_in_the_result(registries, tmp_path, suite, options, alpha):
    evaluation = _evaluate("hybrid:test-rare-words+test-overlap", suite, tmp_path, options=options)
    parameters = evaluation.result["retriever"]["parameters"]
    assert parameters["alpha"] == alpha
    assert parameters["sparse"]["name"] == "test-rare-words" and parameters["dense"]["name"] == "test-overlap"
    assert evaluation.result["retriever"]["name"] == "hybrid:test-rare-words+test-overlap"
    assert evaluation.result["retriever"]["plugin"] == "hybrid"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("hybrid:bm2+test-overlap", {}, r"^hybrid:bm2\+test-overlap: unknown retriever 'bm2'; did you mean 'bm25'\?$"),
        ("rrf:test-overlap+test-overlapp", {}, r"^rrf:.*unknown retriever 'test-overlapp'; did you mean 'test-overlap'"),
        ("hybrid", {}, r"^hybrid: give hybrid:SPARSE\+DENSE"),
        ("hybrid:test-overlap", {}, r"exactly 2 retrievers \(SPARSE\+DENSE\), got 1"),
        ("hybrid:fixed-sparse+fixed-dense+fixed-third", {}, r"exactly 2 retrievers.*got 3; use rrf"),
        ("hybrid:dpr-multi+bm25", {}, r"the sparse retriever comes first: hybrid:bm25\+dpr-multi"),
        ("hybrid:test-overlap+", {}, r"empty retriever name"),
        ("rrf:test-overlap", {}, r"rrf fuses 2 or more retrievers, got 1"),
        ("rrf:test-overlap+test-rare-words+test-overlap", {}, r"'test-overlap' appears twice"),
        ("hybrid:test-overlap+test-overlap", {}, r"'test-overlap' appears twice"),
        ("hybrid:test-rare-words+test-overlap", {"alpha": -1}, r"^retriever 'hybrid:test-rare-words\+test-overlap': option alpha must be a number >= 0 or auto, got -1$"),
        ("hybrid:test-rare-words+test-overlap", {"alpha": "high"}, r"option alpha must be a number >= 0 or auto, got 'high'"),
        ("hybrid:test-rare-words+test-overlap", {"depth": 0}, r"depth must be an integer from 1 to 10000, got 0"),
        ("hybrid:test-rare-words+test-overlap", {"normalize": "maybe"}, r"normalize must be true or false"),
        ("rrf:test-rare-words+test-overlap", {"rrf_k": -60}, r"rrf_k must be a number >= 0"),
        ("rrf:test-rare-words+test-overlap", {"alpha": 1}, r"has no option 'alpha' \(options: depth, rrf_k\)"),
    ],
)
def test_errors_are_one_line_and_name_the_problem(registries, tmp_path, name, options, message):
    with pytest.raises(HarnessError) as info:
        _evaluate(name, "toy-as-trivia", tmp_path, options=options)
    assert "\n" not in str(info.value)
    assert re.search(message, str(info.value)), str(info.value)


def test_option_values_from_the_command_line_are_parsed(registries):
    from harness.registry import load

    model = load("retrievers", "hybrid:test-rare-words+test-overlap", {"alpha": "1.5", "depth": "50", "normalize": "true"}).value
    assert (model.alpha, model.depth, model.normalize) == (1.5, 50, True)
    model = load("retrievers", "hybrid:test-rare-words+test-overlap", {"alpha": "AUTO", "depth": 50, "normalize": 0}).value
    assert (model.explicit_alpha, model.depth, model.normalize) == (None, 50, False)
    assert load("retrievers", "rrf:test-rare-words+test-overlap", {"rrf_k": 60.0}).value.parameters()["rrf_k"] == 60


def test_specs_are_cheap_and_documented():
    specs = []
    hybrid_plugin.register_retrievers(register=specs.append)
    assert [(s.name, s.argument) for s in specs] == [("hybrid", "SPARSE+DENSE"), ("rrf", "A+B[+C...]")]
    assert specs[0].options == {"alpha": "auto", "depth": 1000, "normalize": False}
    assert specs[1].options == {"rrf_k": 60, "depth": 1000}


# --------------------------------------------------------------------------- end to end on demo


def test_rrf_on_demo_end_to_end(registries, tmp_path):
    from harness.evaluate import normalize_question
    from harness.registry import retrievers

    name = "rrf:test-rare-words+test-rare-title"
    evaluation = _evaluate(name, "demo", tmp_path, k=(1, 5, 20))
    result = evaluation.result
    assert result["retriever"]["parameters"]["rrf_k"] == 60 and result["depth"] == 20
    macro = result["metrics"]["accuracy"]["macro"]
    assert 0 < macro["1"] <= macro["5"] <= macro["20"] <= 1
    # the rankings are exactly the fusion of the components' own top-1000s
    context = RunContext(cache_dir=tmp_path, progress=False, suite="demo")
    queries = [normalize_question(q.text) for q in evaluation.suite.questions]
    per_component = []
    for component in ("test-rare-words", "test-rare-title"):
        model = retrievers().get(component).load()
        model.index(evaluation.suite.corpus, context)
        per_component.append(model.search(queries, 1000, context))
    expected = [rrf_fuse(list(r), k=20) for r in zip(*per_component)]
    assert evaluation.rankings == expected


@pytest.mark.slow
def test_hybrid_with_bm25_on_demo_end_to_end(registries, tmp_path):
    """Starts the JVM and indexes the demo corpus with Lucene (about 15 s on 2 cores). Depth 100
    rather than 1000 keeps BM25's searches short; the default depth is exercised above."""
    from harness.evaluate import run_evaluation

    kwargs = dict(cache_dir=tmp_path, threads=2, show_progress=False)
    evaluation = run_evaluation("hybrid:bm25+test-rare-words", "demo", options={"depth": 100}, **kwargs)
    parameters = evaluation.result["retriever"]["parameters"]
    assert parameters["alpha"] == 1.0 and parameters["depth"] == 100 and evaluation.result["depth"] == 100
    assert parameters["sparse"]["name"] == "bm25" and parameters["sparse"]["parameters"]["k1"] == 0.9
    assert parameters["dense"] == {"name": "test-rare-words", "parameters": {"fields": "title text", "max_df": 0.02}}
    # the components' own runs (the BM25 index is reused from the cache), fused by hand
    bm25 = run_evaluation("bm25", "demo", **kwargs)
    rare = run_evaluation("test-rare-words", "demo", **kwargs).rankings
    expected = [hybrid_fuse(s, d, alpha=1.0, k=100) for s, d in zip(bm25.rankings, rare)]
    assert evaluation.rankings == expected
    fused, alone = evaluation.result["metrics"]["accuracy"]["macro"], bm25.result["metrics"]["accuracy"]["macro"]
    assert 0.5 < fused["20"] <= fused["100"] <= 1.0
    print(f"demo top-20: bm25 {alone['20']:.3f}, hybrid:bm25+test-rare-words {fused['20']:.3f}")

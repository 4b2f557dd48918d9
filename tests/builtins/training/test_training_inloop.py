"""Retrieval inside the training loop: the in-loop index (exact top-k, sharded over two gloo
processes), the QSFT and ART losses against hand computation, and both variants end to end on
``demo`` with tiny models (QSFT leaves the index and the passage side untouched; ART re-embeds
exactly every N steps)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from harness.api import Passage, RetrievedBatch


from helpers.upr_fakes import Recording
from helpers.gloo_group import close_group, free_port  # noqa: E402
from helpers.inloop import DIM, HashEncoder, PASSAGES, make_index, queries

torch = pytest.importorskip("torch")







def reference_top(k: int, shard_size: int = 8, flat: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Brute force over every vector: by score, ties by the lower row. Scores are computed per
    shard as the CPU index does (a product's last bit may depend on the blocking), or, for the
    GPU's flat index, in float64 rounded to float32 as it re-scores."""
    vectors = torch.from_numpy(HashEncoder().encode_passages([(p.title, p.text) for p in PASSAGES]))
    if flat:
        scores = (queries().double() @ vectors.double().T).float().numpy()
    else:
        scores = torch.cat([queries() @ vectors[i : i + shard_size].T for i in range(0, len(PASSAGES), shard_size)], 1).numpy()
    rows = np.stack([np.lexsort((np.arange(len(PASSAGES)), -s))[:k] for s in scores])
    return np.take_along_axis(scores, rows, 1), rows




def test_merge_top_orders_by_score_then_row_and_pads():
    from harness_builtins.training.inloop import merge_top

    scores = np.array([[1.0, 3.0, 3.0, -np.inf, 2.0]], dtype=np.float32)
    rows = np.array([[4, 9, 2, -1, 7]])
    s, r = merge_top(scores, rows, 3)
    assert r.tolist() == [[2, 9, 7]] and s.tolist() == [[3.0, 3.0, 2.0]]
    s, r = merge_top(scores, rows, 6)
    assert r.tolist() == [[2, 9, 7, 4, -1, -1]] and s[0, 4] == -np.inf


@pytest.mark.parametrize("flat", [False, True])
def test_single_process_search_is_exact(tmp_path, flat):
    index = make_index(tmp_path, flat=flat)
    index.build(HashEncoder())
    assert (index._flat is not None) == flat
    assert len(index) == 45 and index.dim == DIM
    for k in (1, 5, 45):
        scores, rows = index.search(queries(), k)
        want_scores, want_rows = reference_top(k, flat=flat)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-6)
    # vectors and passages of retrieved rows come from the cache
    np.testing.assert_array_equal(index.vectors(rows[:2, :3])[1, 2], HashEncoder().encode_passages([(PASSAGES[rows[1, 2]].title, "")])[0])
    assert [p.id for p in index.passages(rows[:1, :3])[0]] == [f"p{r:02d}" for r in rows[0, :3]]
    assert index.builds[0]["reused"] is False
    index.build(HashEncoder(), step=3)
    assert index.builds[1] == {**index.builds[1], "step": 3, "reused": True}


def _ranked_search(rank: int, world: int, port: int, root: str, flat: bool = False) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        index = make_index(Path(root), flat=flat)
        index.build(HashEncoder())
        mine = queries()[rank * 6 : (rank + 1) * 6]  # ranks with different numbers of questions (6 and 4)
        scores, rows = index.search(mine, 7)
        held = sorted({int(r) // 8 * 8 for r in index._global}) if flat else [first for first, _ in index._slice]
        np.savez(Path(root, f"rank{rank}.npz"), scores=scores, rows=rows, held=np.array(held))
    finally:
        close_group()


@pytest.mark.parametrize("flat", [False, True])
def test_two_gloo_processes_give_the_single_process_top_k(tmp_path, flat):
    """Each rank embeds and holds its shards (shard s on rank s mod 2); the merged top-k of the
    all-gathered questions equals one process's, row for row, ties included (also with each
    rank's slice as the GPU's flat index, its rows mapped back to the cache's)."""
    import torch.multiprocessing as mp

    mp.spawn(_ranked_search, args=(2, free_port(), str(tmp_path), flat), nprocs=2, join=True)
    got = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    want_scores, want_rows = reference_top(7, flat=flat)
    np.testing.assert_array_equal(np.concatenate([g["rows"] for g in got]), want_rows)
    np.testing.assert_allclose(np.concatenate([g["scores"] for g in got]), want_scores, rtol=1e-6)
    assert got[0]["held"].tolist() == [0, 16, 32] and got[1]["held"].tolist() == [8, 24, 40]
    single = make_index(tmp_path / "single")
    single.build(HashEncoder())
    np.testing.assert_array_equal(single.search(queries(), 7)[1], want_rows)


# --- losses against hand computation ---------------------------------------------------------------


def batch(vectors, has_answer, passages=None, questions=None, encode=None) -> RetrievedBatch:
    b, k = len(has_answer), len(has_answer[0])
    return RetrievedBatch(
        questions=questions or ["q"] * b, answers=[("a",)] * b, rows=torch.zeros(b, k, dtype=torch.long),
        scores=torch.zeros(b, k), vectors=torch.tensor(vectors, dtype=torch.float32),
        passages=passages or [[Passage(id=f"{i}-{j}", title="", text="") for j in range(k)] for i in range(b)],
        has_answer=torch.tensor(has_answer), encode_passages=encode or (lambda ps: None),
    )


def test_qsft_loss_by_hand():
    from harness_builtins.training.losses import QSFTLoss

    q = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], requires_grad=True)
    p = [[[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]],   # scores 1, 0, 2
         [[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]],  # scores 2, 0, -2
         [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]   # no answer-bearing passage: skipped
    has = [[True, False, True], [False, True, False], [False, False, False]]
    loss_fn = QSFTLoss()
    out = loss_fn(q, batch(p, has))
    first = -math.log((math.exp(1) + math.exp(2)) / (math.exp(1) + math.exp(0) + math.exp(2)))
    second = -math.log(math.exp(0) / (math.exp(2) + math.exp(0) + math.exp(-2)))
    assert out["loss"].item() == pytest.approx((first + second) / 2, rel=1e-6)
    assert out["skipped"].item() == pytest.approx(1 / 3)
    assert (loss_fn.skipped, loss_fn.seen) == (1, 3)
    out["loss"].backward()
    assert q.grad[2].abs().sum() == 0 and q.grad[0].abs().sum() > 0
    # nothing answer-bearing anywhere: zero, still differentiable
    none = QSFTLoss()(q, batch(p, [[False] * 3] * 3))
    assert none["loss"].item() == 0.0 and none["loss"].requires_grad


def test_qsft_gradcheck():
    from harness_builtins.training.losses import QSFTLoss

    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    vectors = torch.randn(3, 5, 4, generator=g, dtype=torch.float64).tolist()
    has = [[True, False, True, False, False], [False, False, False, False, True], [False] * 5]
    retrieved = batch(vectors, has)
    retrieved = RetrievedBatch(**{**retrieved.__dict__, "vectors": torch.tensor(vectors, dtype=torch.float64)})
    assert torch.autograd.gradcheck(lambda q_: QSFTLoss()(q_, retrieved)["loss"], (q,))




def test_art_loss_by_hand(tiny_t5_dir, monkeypatch):
    from harness_builtins.training.losses import ARTLoss

    loss_fn = ARTLoss(teacher=str(tiny_t5_dir), device="cpu")
    teacher = torch.tensor([[-1.0, -2.0, -0.5], [-3.0, -3.0, -1.0]])
    monkeypatch.setattr(loss_fn, "teacher_scores", lambda questions, passages: teacher)
    q = torch.tensor([[1.0, 2.0, 0.0, 1.0], [0.5, -1.0, 1.0, 0.0]], requires_grad=True)
    p = torch.tensor([[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]], [[1, 1, 1, 1], [0, 0, 0, 1], [2, 0, 0, 0]]], dtype=torch.float32, requires_grad=True)
    out = loss_fn(q, batch(p.detach().tolist(), [[False] * 3] * 2, encode=lambda ps: p.reshape(6, 4)))
    expected = 0.0
    for i in range(2):
        t = [math.exp(v) for v in teacher[i].tolist()]
        t = [v / sum(t) for v in t]
        s = [math.exp(sum(a * b for a, b in zip(q[i].tolist(), p[i, j].tolist())) / 2.0) for j in range(3)]  # sqrt(4) = 2
        s = [v / sum(s) for v in s]
        expected += sum(tj * math.log(tj / sj) for tj, sj in zip(t, s))
    assert out["loss"].item() == pytest.approx(expected / 2, rel=1e-5)
    out["loss"].backward()
    assert p.grad.abs().sum() > 0 and q.grad.abs().sum() > 0  # both sides are trained


def test_art_teacher_is_the_mean_question_log_likelihood(tiny_t5_dir):
    from harness_builtins.common.seq2seq import ART_PASSAGE_PROMPT, question_log_likelihoods, question_target
    from harness_builtins.training.losses import ARTLoss

    loss_fn = ARTLoss(teacher=str(tiny_t5_dir), device="cpu")
    passages = [Passage(id="a", title="Paris", text="capital of France"), Passage(id="b", title="Oslo", text="in Norway")]
    got = loss_fn.teacher_scores(["where is paris"], [passages])
    sums = question_log_likelihoods(loss_fn.teacher, loss_fn.tokenizer, "where is paris", [(p.title, p.text) for p in passages],
                                    passage_template=ART_PASSAGE_PROMPT)
    tokens = len(loss_fn.tokenizer(question_target("where is paris")).input_ids)
    np.testing.assert_allclose(got[0].numpy(), np.array(sums) / tokens, rtol=1e-5)
    with pytest.raises(ValueError, match="teacher"):
        ARTLoss()


def test_art_teacher_is_fed_art_s_exact_strings(tiny_t5_dir):
    """The teacher's default prompt and target are ART's code (DevSinghSachan/art, commit f86535c):

    ``megatron/arguments.py`` lines 542-546::

        group.add_argument('--verbalizer', type=str, default=" . Please write a question based on this passage.",
        group.add_argument('--verbalizer-head', type=str, default="Passage: ",

    ``megatron/model/art_model.py`` (``postprocess``, lines 248-259)::

        # Original Input Style: Passage: <title> <passage> . Can you please write a question?
        t0_context_title_ids.extend(verbalizer_head_ids)
        t0_context_title_ids.extend(title_ids_t0)
        t0_context_title_ids.extend(context_ids_t0)
        ...
        t0_context_title_ids.extend(verbalizer_ids)
        t0_context_title_ids.extend([t0_tokenizer.eos_token_id])

    (title and text tokenised apart, ``tools/create_evidence_indexed_dataset_t0.py``), and
    ``tasks/dense_retriever/zero_shot_training/train_data_utils.py`` line 94::

        prefixed_query_text = "{} {}".format("Question:", raw_sample['question'])

    (no question mark added). The prompt is fed as one string whose tokens equal ART's pieces
    concatenated (checked here with the test tokenizer); the earlier prompt and "?" stay options."""
    from harness_builtins.training.losses import ARTLoss

    title, text = "Paris", "Paris is the capital of France."
    loss_fn = ARTLoss(teacher=str(tiny_t5_dir), device="cpu")
    loss_fn.__dict__["tokenizer"] = spy = Recording(loss_fn.tokenizer)
    loss_fn.teacher_scores(["where is paris"], [[Passage(id="a", title=title, text=text)]])
    prompt = "Passage: Paris Paris is the capital of France. . Please write a question based on this passage."
    assert spy.texts == ["Question: where is paris", prompt, "Question: where is paris"]  # scored, then counted (mean)
    tok = spy.inner
    pieces = [tok.encode(piece, add_special_tokens=False)
              for piece in ("Passage: ", title, text, " . Please write a question based on this passage.")]
    assert tok(prompt, add_special_tokens=False).input_ids == [i for piece in pieces for i in piece]

    old = ARTLoss(teacher=str(tiny_t5_dir), device="cpu", question_mark=True,
                  passage_prompt="Passage: {title} {text}. Please write a question based on this passage.")
    old.__dict__["tokenizer"] = spy = Recording(old.tokenizer)
    old.teacher_scores(["where is paris"], [[Passage(id="a", title=title, text=text)]])
    assert spy.texts[:2] == ["Question: where is paris?",
                             "Passage: Paris Paris is the capital of France.. Please write a question based on this passage."]


# --- end to end on demo ------------------------------------------------------------------------------


def _train(tiny: Path, output: Path, variant: str, *extra: str) -> int:
    from harness.cli.main import main

    return main(["train", "--variant", variant, "--data", "demo-dev", "--corpus", "demo", "--model", str(tiny),
                 "--output", str(output), "--batch-size", "4", "--logging-steps", "1", "--max-question-length", "16",
                 "--max-passage-length", "32", "--no-progress", "--pooling", "mean", *extra])


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.glob("*.npy"))}


def test_qsft_on_demo_moves_only_the_question_encoder(tiny, tmp_path, monkeypatch):
    from helpers.training_models import weights

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert _train(tiny, tmp_path / "qsft", "qsft", "--max-steps", "3", "--retrieve-k", "20") == 0
    record = json.loads((tmp_path / "qsft" / "harness_training.json").read_text())
    loop = record["in_loop"]
    assert loop["k"] == 20 and loop["refresh_every"] is None and loop["passages"] == 7903
    assert [b["step"] for b in loop["builds"]] == [0] and loop["questions_seen"] == 12
    assert 0 <= loop["questions_skipped"] <= 12
    assert record["recipe"]["frozen"] == "passage" and record["settings"]["warmup_steps"] == 100
    (cache,) = (tmp_path / "cache" / "dense").iterdir()
    before = _digest(cache)
    # the passage side is byte-identical to a fresh copy of the start; the question side moved
    assert _train(tiny, tmp_path / "start", "fix-passage", "--max-steps", "1", "--lr", "1e-30", "--data", "demo-train") == 0
    trained, start = weights(tmp_path / "qsft"), weights(tmp_path / "start")
    document = [k for k in trained if "document" in k]
    query = [k for k in trained if "query" in k]
    assert document and query
    assert all(torch.equal(trained[k], start[k]) for k in document)
    assert any(not torch.equal(trained[k], start[k]) for k in query)
    # a second run over the same frozen passage encoder reuses the index, untouched
    assert _train(tiny, tmp_path / "again", "qsft", "--max-steps", "1", "--retrieve-k", "20") == 0
    again = json.loads((tmp_path / "again" / "harness_training.json").read_text())["in_loop"]["builds"]
    assert again[0]["reused"] is True and _digest(cache) == before


def test_art_on_demo_re_embeds_exactly_every_n_steps(tiny, tiny_t5_dir, tmp_path, monkeypatch):
    from harness_builtins.dense import distributed
    from helpers.disk import watch_disk

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    seen: list = []
    monkeypatch.setattr(distributed, "encode_corpus_distributed", watch_disk(tmp_path / "cache" / "dense", seen))
    code = _train(tiny, tmp_path / "art", "art", "--max-steps", "5", "--refresh-every", "2", "--retrieve-k", "4",
                  "-L", f"teacher={tiny_t5_dir}", "-L", "device=cpu")
    assert code == 0
    record = json.loads((tmp_path / "art" / "harness_training.json").read_text())
    builds = record["in_loop"]["builds"]
    assert [b["step"] for b in builds] == [0, 2, 4]
    assert len({b["cache"] for b in builds}) == 3  # the passage encoder changed between re-embeddings
    assert all(not b["reused"] and b["passages"] == 7903 for b in builds)
    # one index on disk at a time: the one replaced (the starting one too: this run made it) is
    # deleted before the next is written, the last one after training
    assert [e["folders"] for e in seen if e["shard"] is None] == [[], [], []]
    assert [e["folders"] for e in seen if e["shard"] is not None] == [[b["cache"]] for b in builds]  # one shard each
    assert list((tmp_path / "cache" / "dense").iterdir()) == []
    log = [json.loads(line) for line in (tmp_path / "art" / "train_log.jsonl").read_text().splitlines()]
    assert all(math.isfinite(line["loss/kl"]) and line["loss/kl"] >= 0 for line in log if "loss/kl" in line)


def test_in_loop_errors_are_one_line(tiny, tmp_path, capsys):
    from harness.data.training import write_training_examples
    from helpers.training_models import examples

    data = tmp_path / "train.json"
    write_training_examples(data, examples())
    from harness.cli.main import main

    base = ["train", "--data", str(data), "--model", str(tiny), "--output", str(tmp_path / "o"), "--no-progress",
            "--max-passage-length", "64"]
    assert main([*base, "--variant", "qsft"]) == 2
    assert "name the suite whose corpus to search with --corpus SUITE" in capsys.readouterr().err
    assert main([*base, "--variant", "dpr", "--refresh-every", "3"]) == 2
    assert "apply to in-loop variants" in capsys.readouterr().err
    assert main([*base, "--variant", "art", "--corpus", "demo"]) == 2
    assert "teacher" in capsys.readouterr().err


def test_the_index_key_follows_the_passage_weights_format_and_length(tiny):
    """A frozen passage side keeps its key; other weights, format or passage length make another."""
    from harness_builtins.training.inloop import ModelPassageEncoder
    from harness_builtins.training.model import build_model, freeze

    def key(**settings):
        torch.manual_seed(0)
        model = build_model(str(tiny), shared=False, pooling=settings.pop("pooling", "mean"), max_question_length=16,
                            max_passage_length=settings.pop("length", 32))
        if settings.pop("touch_question", False):
            freeze(model, "passage")
            with torch.no_grad():
                next(p for p in model.parameters() if p.requires_grad).add_(1.0)
        return ModelPassageEncoder(model, format=settings.pop("format", "title_text"), sep="[SEP]").identity()

    base = key()
    assert key(touch_question=True) == base
    assert len({base, key(length=64), key(format="text"), key(pooling="cls")}) == 4


def test_a_users_warmup_ratio_beats_the_variants_warmup_steps():
    from harness_builtins.training.plan import resolve_settings

    fixed = {"data": [("demo-dev", 1.0)], "model": "m", "output": "o"}
    assert resolve_settings(variant="qsft", given={}, **fixed).warmup_steps == 100
    ratio = resolve_settings(variant="qsft", given={"warmup_ratio": 0.1}, **fixed)
    assert ratio.warmup_steps is None and ratio.warmup_ratio == 0.1
    assert resolve_settings(variant="qsft", given={"warmup_ratio": 0.1, "warmup_steps": 7}, **fixed).warmup_steps == 7


def test_retrieve_k_beyond_the_corpus_is_one_line_before_training(tiny, tmp_path, monkeypatch, capsys):
    """The demo corpus has 7,903 passages: --retrieve-k 10000 is refused before the index is built
    or a step trained, and the output is left as it was (here: not there)."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert _train(tiny, tmp_path / "qsft", "qsft", "--max-steps", "1", "--retrieve-k", "10000") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "harness: error: --retrieve-k 10000 is more than the 7,903 passages of demo's corpus; give at most 7,903"
    assert not (tmp_path / "qsft").exists()

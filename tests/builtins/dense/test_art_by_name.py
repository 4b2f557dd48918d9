"""`-r art -o checkpoint=NAME`: ART's released archives fetched from a loopback mirror (a transfer
dropped midway and resumed), unpacked, converted once into the cache and reused; offline and
failed downloads as one line; hostile or wrong archives refused with nothing left behind."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from harness import registry
from harness.data import download, transfer
from harness.errors import HarnessError, InputFileError
from harness.util.atomic import COMPLETE_FILE
from harness_builtins.dense.art import ArtEncoder
from harness_builtins.dense.art_checkpoints import ART_CHECKPOINTS, DEFAULT_CHECKPOINT, MIRROR_ENV
from helpers.loopback import serving
from helpers.realm_art_checkpoints import VOCAB, art_checkpoint, assert_one_line_error, save_megatron_dir
from helpers.paths import REPO

QUESTIONS = ["who wrote the origin of species?", "what is the capital city of Australia"]
PASSAGES = [("Charles Darwin", "Darwin published On the Origin of Species in 1859."), ("Canberra", "The capital.")]


def pack(folder: Path, archive: Path, *, extra: list[tarfile.TarInfo] = ()) -> Path:
    """A ``.tar.gz`` of ``folder`` under its own name, as ART's releases are packed."""
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return archive


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict:
    """Tiny Megatron-layout ART checkpoints packed under two released names, and their
    conversion by `harness convert art` for comparison."""
    from harness_builtins.dense.convert import convert_art

    root = tmp_path_factory.mktemp("releases")
    served = root / "served"
    served.mkdir()
    out = {"served": served}
    for name, seed in (("multi-t0-3b", 7), ("nq-t0-3b", 8)):
        file = ART_CHECKPOINTS[name].file
        src = save_megatron_dir(root / file.removesuffix(".tar.gz"), art_checkpoint(seed))
        pack(src, served / file)
        out[name] = convert_art(src, root / f"{name}-converted", vocab=VOCAB, progress=False)
    return out


@pytest.fixture
def env(tmp_path, monkeypatch, releases):
    """Data and cache folders of its own, the mirror pointing at a loopback server, no waiting
    between retries; yields the server."""
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    monkeypatch.setattr(transfer, "BACKOFF_S", 0.0)
    with serving(releases["served"]) as server:
        monkeypatch.setenv(MIRROR_ENV, server.url)
        yield server


def load(**options):
    return registry.load("encoders", "art", {"device": "cpu", "batch_size": 4, **options}).value


def archive_path(tmp_path: Path, name: str) -> Path:
    return tmp_path / "data" / "checkpoints" / "art" / ART_CHECKPOINTS[name].file


def cache_path(tmp_path: Path, name: str) -> Path:
    return tmp_path / "cache" / "checkpoints" / "art" / name


def no_leftovers(tmp_path: Path) -> None:
    """No temporary folder, partial download or unpacked Megatron file anywhere."""
    stray = [p for p in tmp_path.rglob("*") if p.name.endswith((".tmp", ".part")) or p.name == "model_optim_rng.pt"]
    assert stray == [], stray


def test_the_default_and_the_names():
    spec = registry.encoders().get("art")
    assert spec.options["checkpoint"] == DEFAULT_CHECKPOINT == "multi-t0-3b"
    assert set(ART_CHECKPOINTS) == {
        "multi-t0-3b", "nq-t0-3b", "trivia-t0-3b", "webq-t0-3b", "squad1-t0-3b",
        "multi-t5-xxl", "nq-t5-xxl", "trivia-t5-xxl", "webq-t5-xxl", "squad1-t5-xxl",
        "nq-full-t0-3b", "nq-full-t5-xxl", "msmarco-t0-3b", "msmarco-nq-full-t0-3b",
        "nq-large-t0-3b", "trivia-large-t0-3b",
    }
    info = ART_CHECKPOINTS["multi-t0-3b"]
    assert info.dropbox_url == "https://www.dropbox.com/s/b2sxvj9fcsevde3/multi-train-mss-base-init-T0-3B.tar.gz?dl=1"
    with pytest.raises(HarnessError) as err:
        load(checkpoint="multi-t0-3")
    assert_one_line_error(err.value, "checkpoint", "multi-t0-3b")
    docs = (REPO / "docs" / "dense-retrieval.md").read_text(encoding="utf-8")
    assert [n for n in ART_CHECKPOINTS if f"`{n}`" not in docs] == []


def test_fetch_resume_unpack_convert_then_reuse(env, tmp_path, releases, monkeypatch):
    from harness_builtins.dense import convert

    conversions = []
    real = convert.convert_art_into
    monkeypatch.setattr(convert, "convert_art_into", lambda *a, **k: conversions.append(1) or real(*a, **k))
    name = "multi-t0-3b"
    file = ART_CHECKPOINTS[name].file
    size = (releases["served"] / file).stat().st_size
    env.drop_after, env.drops = size // 3, 1  # the first transfer breaks after a third

    encoder = load()  # the default checkpoint
    assert conversions == [1]
    gets = [r for r in env.log if r.path == "/" + file]
    assert [r.status for r in gets] == [200, 206] and gets[1].range == f"bytes={size // 3}-"
    assert env.sent(file) == size  # resumed: no byte sent twice

    archive = archive_path(tmp_path, name)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert download.recorded_sha256(archive) == sha  # recorded on first download (none is published)
    converted = cache_path(tmp_path, name)
    record = json.loads((converted / COMPLETE_FILE).read_text())
    assert record["checkpoint"] == name and record["archive_sha256"] == sha and record["url"] == f"{env.url}/{file}"
    assert (converted / "query_encoder" / "model.safetensors").is_file()
    no_leftovers(tmp_path)

    # the same weights as `harness convert art` of the unpacked folder: same identity, same vectors
    reference = ArtEncoder.from_pretrained(releases[name], device="cpu", batch_size=4)
    assert encoder.identity() == reference.identity()
    np.testing.assert_array_equal(encoder.encode_queries(QUESTIONS), reference.encode_queries(QUESTIONS))
    np.testing.assert_array_equal(encoder.encode_passages(PASSAGES), reference.encode_passages(PASSAGES))
    params = encoder.parameters()
    assert params["checkpoint"] == name and params["encoder"] == reference.identity()

    # second load: offline, no request, no conversion
    env.log.clear()
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    again = load(checkpoint=name)
    assert env.log == [] and conversions == [1]
    assert again.identity() == encoder.identity()

    # a damaged conversion is noticed when opened and rebuilt from the archive (no download)
    (converted / "passage_encoder" / "model.safetensors").write_bytes(b"")
    rebuilt = load(checkpoint=name)
    assert env.log == [] and conversions == [1, 1] and rebuilt.identity() == encoder.identity()
    no_leftovers(tmp_path)


def test_run_by_name_through_the_cli_records_the_checkpoint(env, tmp_path, capsys):
    from harness.cli.main import main

    results = tmp_path / "results"
    code = main(["run", "--retriever", "art", "-o", "checkpoint=nq-t0-3b", "-o", "device=cpu", "--suite", "demo",
                 "--k", "1,20", "--results-dir", str(results), "--cache-dir", str(tmp_path / "runcache"), "--threads", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    [result_file] = list(results.rglob("*.json"))
    result = json.loads(result_file.read_text())
    parameters = result["retriever"]["parameters"]
    assert result["retriever"]["name"] == "art" and parameters["checkpoint"] == "nq-t0-3b"
    reference = ArtEncoder.from_pretrained(cache_path(tmp_path, "nq-t0-3b"), device="cpu")
    assert parameters["encoder"] == reference.identity()
    assert [r.path for r in env.log] == ["/" + ART_CHECKPOINTS["nq-t0-3b"].file]


def test_model_wins_over_checkpoint(env, tmp_path, releases):
    encoder = load(model=str(releases["nq-t0-3b"]), checkpoint="multi-t0-3b")
    assert env.log == [] and "checkpoint" not in encoder.parameters()
    assert not (tmp_path / "data").exists() and not (tmp_path / "cache").exists()


def test_offline_without_a_copy_names_the_url_and_the_path(env, tmp_path, monkeypatch, capsys):
    from harness.cli.main import main

    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    monkeypatch.delenv(MIRROR_ENV)
    with pytest.raises(download.OfflineError) as err:
        load()
    info = ART_CHECKPOINTS[DEFAULT_CHECKPOINT]
    assert_one_line_error(err.value, info.dropbox_url, f"save it as {archive_path(tmp_path, DEFAULT_CHECKPOINT)}")
    expected = str(err.value)

    code = main(["run", "--retriever", "art", "--suite", "demo"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("harness: warning:")]
    assert code == 2 and len(lines) == 1 and expected in lines[0] and "Traceback" not in lines[0]
    assert env.log == []
    assert not (tmp_path / "cache" / "checkpoints").exists() or not any((tmp_path / "cache" / "checkpoints" / "art").iterdir())


def test_a_failed_download_is_one_line(env, tmp_path, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, env.url + "/missing")
    with pytest.raises(download.DownloadError) as err:
        load(checkpoint="webq-t0-3b")
    assert_one_line_error(err.value, f"{env.url}/missing/{ART_CHECKPOINTS['webq-t0-3b'].file}", "HTTP 404",
                          f"save it as {archive_path(tmp_path, 'webq-t0-3b')}")
    assert not cache_path(tmp_path, "webq-t0-3b").exists()
    no_leftovers(tmp_path)


@pytest.mark.parametrize("case", ["symlink", "no-checkpoint", "not-an-archive"])
def test_bad_archives_are_refused_in_one_line_and_leave_nothing(env, tmp_path, releases, case):
    name = "trivia-t0-3b"
    file = ART_CHECKPOINTS[name].file
    path = releases["served"] / file
    if case == "symlink":
        src = save_megatron_dir(tmp_path / "src" / "trivia", art_checkpoint(9))
        link = tarfile.TarInfo("trivia/evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        pack(src, path, extra=[link])
        needles = ("member 'trivia/evil' is refused", "symbolic link")
    elif case == "no-checkpoint":
        folder = tmp_path / "src" / "trivia"
        folder.mkdir(parents=True)
        (folder / "README").write_text("nothing here")
        pack(folder, path)
        needles = ("model_optim_rng.pt",)
    else:
        path.write_text("<html>Dropbox: this file is not available</html>")
        needles = ("not a readable tar archive",)
    try:
        with pytest.raises(InputFileError) as err:
            load(checkpoint=name)
        assert_one_line_error(err.value, str(archive_path(tmp_path, name)), *needles)
        assert not cache_path(tmp_path, name).exists()
        no_leftovers(tmp_path / "cache")
        assert [p.name for p in (tmp_path / "cache" / "checkpoints" / "art").iterdir()] == []
    finally:
        path.unlink()

"""``harness data missing`` and what a run says about the files it lacks, against the loopback
server and an empty data folder: every missing file listed (what for, size, path, URL, sha256;
as a table and as tab-separated lines), offline every file of a suite, its corpus and ART's
archive named in one line, the corpus checked before any model is loaded, and a failed download
naming where the file goes, HARNESS_OFFLINE=1 and the listing."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

import harness.registry
from harness.cli.main import main

from helpers.loopback import serving

PARTS = ("P17", "P19", "P20")


def _mirror(root: Path) -> Path:
    """Three question files and a corpus served from ``root/mirror``."""
    mirror = root / "mirror"
    mirror.mkdir()
    for i, part in enumerate(PARTS):
        questions = [{"question": f"Where was person {i} born?", "answers": [f"Town{i}"]}]
        (mirror / f"{part}.test.json").write_text(json.dumps(questions))
    with open(mirror / "psgs.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["id", "text", "title"])
        for i in range(len(PARTS)):
            writer.writerow([str(i + 1), f"Person {i} was born in Town{i}.", f"Person {i}"])
    return mirror


def _specs(root: Path, url: str, mirror: Path, *, corpus_url: str | None = None) -> Path:
    """A spec folder: suite ``eq3`` (three parts, pinned checksums and sizes) over corpus ``mini3``."""
    specs = root / "specs"
    (specs / "suites").mkdir(parents=True)
    (specs / "corpora").mkdir()
    corpus = mirror / "psgs.tsv"
    (specs / "corpora" / "mini3.toml").write_text(
        f'name = "mini3"\ndescription = "d"\nurl = "{corpus_url or url + "/psgs.tsv"}"\npath = "mini3/psgs.tsv"\n'
        f'size = {corpus.stat().st_size}\nformat = "dpr-tsv"\npassages = 3\nlicense = "l"\ncitation = "c"\n'
    )
    parts = ""
    for part in PARTS:
        data = (mirror / f"{part}.test.json").read_bytes()
        parts += (
            f'[[parts]]\nname = "{part}"\nurl = "{url}/{part}.test.json"\npath = "eq3/{part}.test.json"\n'
            f'sha256 = "{hashlib.sha256(data).hexdigest()}"\nsize = {len(data)}\nformat = "json-list"\n'
        )
    (specs / "suites" / "eq3.toml").write_text(
        'name = "eq3"\ndescription = "d"\nmatch = "string"\ncorpus = "mini3"\nlicense = "l"\ncitation = "c"\n' + parts
    )
    return specs


@pytest.fixture
def world(tmp_path, monkeypatch, test_registries):
    """The loopback server over the mirror, the spec folder in use and an empty data folder."""
    mirror = _mirror(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("HARNESS_DATA_DIR", str(data))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with serving(mirror) as server:
        specs = _specs(tmp_path, server.url, mirror)
        monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
        from harness.plugins import loaded_plugins
        from harness.registry import KINDS, Registry

        monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
        yield server, mirror, data


def test_missing_lists_every_file_with_url_path_size_and_checksum(world, capsys):
    server, mirror, data = world
    assert main(["data", "missing", "eq3", "--corpus", "--format", "tsv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = []
    for part in PARTS:
        raw = (mirror / f"{part}.test.json").read_bytes()
        expected.append([f"{server.url}/{part}.test.json", str(data / "eq3" / f"{part}.test.json"), str(len(raw)),
                         hashlib.sha256(raw).hexdigest(), f"suite eq3, part {part}: questions"])
    expected.append([f"{server.url}/psgs.tsv", str(data / "mini3" / "psgs.tsv"), str((mirror / "psgs.tsv").stat().st_size),
                     "-", "corpus mini3, 3 passages"])
    assert [line.split("\t") for line in lines] == expected
    assert server.log == []  # a listing downloads nothing
    assert not data.exists()

    assert main(["data", "missing", "eq3"]) == 0  # without --corpus: the questions only; as a table
    out = capsys.readouterr().out
    assert all(f"{server.url}/{part}.test.json" in out and str(data / "eq3" / f"{part}.test.json") in out for part in PARTS)
    assert "psgs.tsv" not in out and "3 files" in out


def test_a_fetched_file_leaves_the_listing(world, capsys):
    server, mirror, data = world
    assert main(["data", "fetch", "eq3", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["data", "missing", "eq3", "--corpus", "--format", "tsv"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{server.url}/psgs.tsv\t{data / 'mini3' / 'psgs.tsv'}\t")
    assert main(["data", "fetch", "eq3", "--corpus", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["data", "missing", "eq3", "--corpus"]) == 0
    assert "nothing missing" in capsys.readouterr().out
    assert main(["data", "missing", "eq3", "--corpus", "--format", "tsv"]) == 0
    assert capsys.readouterr().out == ""


def test_a_published_run_brings_its_suites_files(world, capsys, tmp_path, monkeypatch):
    server, mirror, data = world
    specs = Path(str(tmp_path / "specs"))
    (specs / "runs").mkdir()
    (specs / "runs" / "eq3-run.toml").write_text(
        f'name = "eq3-run"\ndescription = "d"\nsuite = "eq3"\nformat = "trec"\nurl = "{server.url}/run.trec"\n'
        'path = "runs/eq3.trec"\nretriever = "r"\nlicense = "l"\ncitation = "c"\nversion = "v"\n'
    )
    from harness.plugins import loaded_plugins
    from harness.registry import KINDS, Registry

    monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
    assert main(["data", "missing", "eq3-run", "--format", "tsv"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [r[1] for r in rows] == [str(data / "runs" / "eq3.trec")] + [str(data / "eq3" / f"{p}.test.json") for p in PARTS]
    assert rows[0][4] == "published run eq3-run"


def test_the_retrievers_own_files_are_listed_without_loading_it(world, capsys, monkeypatch):
    from harness_builtins.dense import art_checkpoints

    def refuse(*args, **kwargs):
        raise AssertionError("the listing loaded the retriever")

    monkeypatch.setattr(harness.registry, "load", refuse)
    assert main(["data", "missing", "eq3", "--retriever", "art", "-o", "checkpoint=nq-t0-3b", "--format", "tsv"]) == 0
    last = capsys.readouterr().out.splitlines()[-1].split("\t")
    info = art_checkpoints.ART_CHECKPOINTS["nq-t0-3b"]
    assert last[:4] == [info.dropbox_url, str(world[2] / "checkpoints" / "art" / info.file), "-", "-"]
    assert "ART checkpoint nq-t0-3b" in last[4]
    assert main(["data", "missing", "--retriever", "art", "-o", "model=/somewhere"]) == 0  # a folder given: nothing to fetch
    assert "nothing missing" in capsys.readouterr().out


def test_offline_a_run_names_every_missing_file_at_once_before_loading_a_model(world, capsys, monkeypatch):
    server, mirror, data = world
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    loaded = []
    real = harness.registry.load
    monkeypatch.setattr(harness.registry, "load", lambda *a, **k: loaded.append(a) or real(*a, **k))
    code = main(["run", "-r", "art", "-s", "eq3", "--no-progress", "--results-dir", str(data.parent / "results")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("harness: warning:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    for part in PARTS:
        assert f"{server.url}/{part}.test.json -> {data / 'eq3' / f'{part}.test.json'}" in lines[0]
    assert f"{server.url}/psgs.tsv -> {data / 'mini3' / 'psgs.tsv'}" in lines[0]
    assert art_checkpoints_file("multi-t0-3b") in lines[0] and "5 files" in lines[0]
    assert "`harness data missing eq3 --corpus --retriever art` lists them" in lines[0]
    assert loaded == [] and server.log == []

    for part in PARTS:  # the questions brought in by hand: the corpus and the archive are still named together
        (data / "eq3").mkdir(parents=True, exist_ok=True)
        (data / "eq3" / f"{part}.test.json").write_bytes((mirror / f"{part}.test.json").read_bytes())
    code = main(["run", "-r", "art", "-s", "eq3", "--no-progress", "--results-dir", str(data.parent / "results")])
    (line,) = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("harness: warning:")]
    assert code == 2 and "2 files" in line and "psgs.tsv" in line and art_checkpoints_file("multi-t0-3b") in line
    assert loaded == []


def art_checkpoints_file(name: str) -> str:
    from harness_builtins.dense.art_checkpoints import ART_CHECKPOINTS

    return ART_CHECKPOINTS[name].file


def test_the_corpus_is_fetched_before_the_retriever_is_loaded(world, capsys, monkeypatch):
    server, mirror, data = world
    order = []
    real = harness.registry.load
    monkeypatch.setattr(harness.registry, "load",
                        lambda *a, **k: order.append(("load", a[1], len(server.log))) or real(*a, **k))
    code = main(["run", "-r", "test-overlap", "-s", "eq3", "--no-progress", "--results-dir", str(data.parent / "results")])
    assert code == 0, capsys.readouterr().err
    paths = [r.path for r in server.log]
    assert paths == [f"/{p}.test.json" for p in PARTS] + ["/psgs.tsv"]
    assert order == [("load", "test-overlap", 4)]  # after the corpus's request


def test_a_corpus_that_cannot_be_downloaded_fails_before_the_retriever_is_loaded(tmp_path, world, capsys, monkeypatch):
    server, mirror, data = world
    (mirror / "psgs.tsv").unlink()  # the server answers 404
    loaded = []
    monkeypatch.setattr(harness.registry, "load", lambda *a, **k: loaded.append(a))
    code = main(["run", "-r", "test-overlap", "-s", "eq3", "--no-progress", "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if not x.startswith("harness: warning:")]
    assert code == 2 and loaded == []
    assert f"cannot download {server.url}/psgs.tsv: HTTP 404" in line
    assert f"save it as {data / 'mini3' / 'psgs.tsv'}" in line and "HARNESS_OFFLINE=1" in line
    assert "harness data missing" in line

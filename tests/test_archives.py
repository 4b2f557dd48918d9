"""harness.archives: safe zip/tar extraction and streaming gunzip."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from harness.archives import ArchiveError, extract, gunzip
from harness.errors import HarnessError

FILES = {"dataset/test/P17.test.json": b'[{"question": "Which country is Paris in?"}]\n', "dataset/README": b"hi\n"}


def make_zip(path: Path, members: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def make_tar(path: Path, members: dict[str, bytes], *, extra: list[tarfile.TarInfo] = ()) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info in extra:
            tf.addfile(info)
    return path


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("maker, name", [(make_zip, "dataset.zip"), (make_tar, "dataset.tar.gz")])
def test_normal_archives_extract_completely(tmp_path, maker, name):
    archive = maker(tmp_path / name, FILES)
    target = extract(archive, tmp_path / "out")
    assert tree(target) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "out"]), "no temporary folder left"
    with pytest.raises(HarnessError, match="already exists"):
        extract(archive, target)
    (target / "stale").write_text("old")
    extract(archive, target, overwrite=True)
    assert tree(target) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "out"])


def test_links_inside_the_folder_are_fine(tmp_path):
    archive = make_tar(tmp_path / "a.tar.gz", FILES, extra=[link("dataset/latest", "test/P17.test.json")])
    target = extract(archive, tmp_path / "out")
    assert (target / "dataset/latest").read_bytes() == FILES["dataset/test/P17.test.json"]
    archive = make_zip(tmp_path / "a.zip", FILES, symlinks={"dataset/latest": "test/P17.test.json"})
    target = extract(archive, tmp_path / "out2")
    assert (target / "dataset/latest").is_symlink()
    assert (target / "dataset/latest").read_bytes() == FILES["dataset/test/P17.test.json"]


BAD_ZIPS = {
    "../evil": ({"../evil": b"x"}, None, "'..'"),
    "/tmp/evil": ({"/tmp/evil": b"x"}, None, "absolute"),
    "C:/evil": ({"C:/evil": b"x"}, None, "absolute"),
    "dataset/sneaky": ({}, {"dataset/sneaky": "../../evil"}, "outside"),
    "dataset/abs": ({}, {"dataset/abs": "/etc/passwd"}, "absolute"),
}


@pytest.mark.parametrize("member", BAD_ZIPS)
def test_unsafe_zip_members_are_refused_and_nothing_is_extracted(tmp_path, member):
    members, symlinks, problem = BAD_ZIPS[member]
    archive = make_zip(tmp_path / "bad.zip", {**FILES, **members}, symlinks=symlinks)
    with pytest.raises(ArchiveError) as caught:
        extract(archive, tmp_path / "out")
    message = str(caught.value)
    assert str(archive) in message and repr(member) in message and problem in message and "\n" not in message
    assert [p.name for p in tmp_path.iterdir()] == ["bad.zip"]
    assert not (tmp_path.parent / "evil").exists()


def test_zip_link_chain_cannot_escape(tmp_path):
    # "a" -> "." is harmless on its own, and "a/up" -> ".." looks like "." lexically, but through
    # the link it would be the parent of the target folder: the real-path check refuses it.
    archive = make_zip(tmp_path / "chain.zip", {}, symlinks={"a": ".", "a/up": ".."})
    with pytest.raises(ArchiveError, match="'a/up'"):
        extract(archive, tmp_path / "out")
    assert [p.name for p in tmp_path.iterdir()] == ["chain.zip"]


BAD_TARS = {
    "../evil": ([], "'..'"),
    "/tmp/evil": ([], "absolute"),
    "dataset/sneaky": ([link("dataset/sneaky", "../../evil")], "outside"),
    "dataset/abs": ([link("dataset/abs", "/etc/passwd")], "absolute"),
    "dataset/hard": ([link("dataset/hard", "../evil", tarfile.LNKTYPE)], "outside"),
    "dataset/device": ([link("dataset/device", "", tarfile.CHRTYPE)], "device"),
}


@pytest.mark.parametrize("member", BAD_TARS)
def test_unsafe_tar_members_are_refused_and_nothing_is_extracted(tmp_path, member):
    extra, problem = BAD_TARS[member]
    members = dict(FILES)
    if not extra:
        members[member] = b"x"
    archive = make_tar(tmp_path / "bad.tar.gz", members, extra=extra)
    with pytest.raises(ArchiveError) as caught:
        extract(archive, tmp_path / "out")
    message = str(caught.value)
    assert str(archive) in message and repr(member) in message and problem in message and "\n" not in message
    assert [p.name for p in tmp_path.iterdir()] == ["bad.tar.gz"]
    assert not (tmp_path.parent / "evil").exists()


def test_tar_link_chain_cannot_escape(tmp_path):
    archive = make_tar(tmp_path / "chain.tar.gz", {}, extra=[link("a", "."), link("a/up", "..")])
    with pytest.raises(ArchiveError, match="'a/up'"):
        extract(archive, tmp_path / "out")
    assert [p.name for p in tmp_path.iterdir()] == ["chain.tar.gz"]


def test_corrupt_and_unknown_archives_are_refused(tmp_path):
    good = make_zip(tmp_path / "good.zip", FILES).read_bytes()
    (tmp_path / "cut.zip").write_bytes(good[: len(good) // 2])
    (tmp_path / "plain.txt").write_text("not an archive\n")
    for name in ("cut.zip", "plain.txt"):
        with pytest.raises(ArchiveError, match=name):
            extract(tmp_path / name, tmp_path / "out")
    with pytest.raises(ArchiveError, match="no such file"):
        extract(tmp_path / "absent.zip", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.zip", "good.zip", "plain.txt"]


def test_gunzip_round_trips_in_chunks(tmp_path, monkeypatch):
    import harness.archives

    monkeypatch.setattr(harness.archives, "CHUNK", 1000)  # many chunks
    data = b"".join(b"%d\tpassage text number %d\tTitle %d\n" % (i, i, i) for i in range(5000))
    source = tmp_path / "psgs.tsv.gz"
    source.write_bytes(gzip.compress(data))
    target = gunzip(source, tmp_path / "out" / "psgs.tsv", progress=False)
    assert target.read_bytes() == data
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["out", "out/psgs.tsv", "psgs.tsv.gz"]


def test_gunzip_refuses_truncated_or_non_gzip_files_and_leaves_nothing(tmp_path):
    whole = gzip.compress(b"x" * 100_000 + bytes(range(256)) * 100)
    (tmp_path / "cut.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "plain.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ArchiveError, match="cut.gz: is truncated"):
        gunzip(tmp_path / "cut.gz", tmp_path / "cut", progress=False)
    with pytest.raises(ArchiveError, match="plain.gz: is not a valid gzip file"):
        gunzip(tmp_path / "plain.gz", tmp_path / "plain", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.gz", "plain.gz"]

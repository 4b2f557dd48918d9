"""harness.data.archives.extract_tar: archives unpacked whole, and hostile ones refused in one line
with nothing left behind."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from harness.data.archives import extract_tar
from harness.errors import HarnessError, InputFileError


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _entry(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def make_tar(path: Path, members: list, mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_extracts_files_and_folders_with_umask_modes(tmp_path):
    archive = make_tar(tmp_path / "ok.tar.gz", [
        _entry("ckpt/", tarfile.DIRTYPE),
        _file("ckpt/latest_checkpointed_iteration.txt", b"1234"),
        _file("./ckpt/iter_0001234/mp_rank_00/model_optim_rng.pt", b"weights" * 1000),
        _entry("ckpt/empty", tarfile.DIRTYPE),
    ])
    # an archive's own mode bits are not applied
    os.umask(old := os.umask(0o022))
    out = extract_tar(archive, tmp_path / "out")
    assert out == tmp_path / "out"
    assert (out / "ckpt" / "latest_checkpointed_iteration.txt").read_bytes() == b"1234"
    assert (out / "ckpt/iter_0001234/mp_rank_00/model_optim_rng.pt").read_bytes() == b"weights" * 1000
    assert (out / "ckpt" / "empty").is_dir()
    assert (out / "ckpt" / "latest_checkpointed_iteration.txt").stat().st_mode & 0o777 == 0o666 & ~old
    assert leftovers(tmp_path) == []


def test_uncompressed_archives_and_the_archive_root_member(tmp_path):
    archive = make_tar(tmp_path / "plain.tar", [_entry("./", tarfile.DIRTYPE), _file("./a.txt", b"a")], mode="w")
    assert (extract_tar(archive, tmp_path / "out") / "a.txt").read_bytes() == b"a"


def test_an_existing_target_is_kept_unless_replace(tmp_path):
    archive = make_tar(tmp_path / "ok.tar.gz", [_file("a.txt", b"new")])
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("old")
    with pytest.raises(HarnessError, match="already exists"):
        extract_tar(archive, tmp_path / "out")
    assert (tmp_path / "out" / "old.txt").is_file()
    extract_tar(archive, tmp_path / "out", replace=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt"]
    assert leftovers(tmp_path) == []


HOSTILE = {
    "dotdot": ([_file("ok.txt"), _file("ckpt/../../evil.txt")], "ckpt/../../evil.txt", "leaves the target"),
    "absolute": ([_file("/tmp/evil.txt")], "/tmp/evil.txt", "absolute path"),
    "symlink-out": ([_entry("ckpt/link", tarfile.SYMTYPE, "/etc/passwd")], "ckpt/link", "symbolic link to '/etc/passwd'"),
    "symlink-in": ([_file("a.txt"), _entry("b.txt", tarfile.SYMTYPE, "a.txt")], "b.txt", "symbolic link"),
    "hardlink-out": ([_entry("ckpt/hard", tarfile.LNKTYPE, "../../etc/passwd")], "ckpt/hard", "hard link"),
    "device": ([_entry("ckpt/null", tarfile.CHRTYPE)], "ckpt/null", "device"),
    "block-device": ([_entry("ckpt/sda", tarfile.BLKTYPE)], "ckpt/sda", "device"),
    "fifo": ([_file("ok.txt"), _entry("ckpt/pipe", tarfile.FIFOTYPE)], "ckpt/pipe", "FIFO"),
    "file-then-folder": ([_file("ckpt/a"), _file("ckpt/a/b")], "ckpt/a/b", "'ckpt/a' is a file of the archive"),
    "folder-then-file": ([_file("ckpt/a/b"), _file("ckpt/a")], "ckpt/a", "a folder of that name holds earlier members"),
    "duplicate": ([_file("ckpt/a", b"1"), _file("./ckpt/a", b"2")], "./ckpt/a", "already used by a file"),
    "duplicate-folder": ([_entry("ckpt", tarfile.DIRTYPE), _entry("./ckpt/", tarfile.DIRTYPE)], "./ckpt", "already used by a directory"),
    "backslash": ([_file("ckpt\\..\\evil.txt")], "ckpt\\..\\evil.txt", "backslash"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused_in_one_line_and_leave_nothing(tmp_path, case):
    members, member, why = HOSTILE[case]
    work = tmp_path / "work"
    work.mkdir()
    archive = make_tar(work / "hostile.tar.gz", members)
    with pytest.raises(InputFileError) as err:
        extract_tar(archive, work / "out")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{archive}: member ") and repr(member) in message and why in message, message
    assert sorted(p.name for p in work.iterdir()) == ["hostile.tar.gz"]  # no target, no temporary folder
    assert not (tmp_path / "evil.txt").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_an_allowed_folder_member_after_its_files(tmp_path):
    archive = make_tar(tmp_path / "late-dir.tar.gz", [_file("ckpt/a/b", b"b"), _entry("ckpt/a", tarfile.DIRTYPE)])
    assert (extract_tar(archive, tmp_path / "out") / "ckpt" / "a" / "b").read_bytes() == b"b"


@pytest.mark.parametrize("damage", ["truncated", "not-an-archive", "missing"])
def test_unreadable_archives_are_one_line_and_leave_nothing(tmp_path, damage):
    archive = tmp_path / "a.tar.gz"
    if damage == "truncated":
        make_tar(archive, [_file("big.bin", os.urandom(200_000)), _file("z.txt")])
        archive.write_bytes(archive.read_bytes()[:100_000])
    elif damage == "not-an-archive":
        archive.write_text("<html>a download page, not the file</html>")
    with pytest.raises(InputFileError) as err:
        extract_tar(archive, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{archive}: ")
    assert ("no such file" if damage == "missing" else "not a readable tar archive") in message
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []

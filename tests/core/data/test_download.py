"""harness.data.download against a real HTTP server on loopback serving the real files of shared/data.

The server (:class:`loopback.FaultyServer`) supports ``Range`` (206 + ``Content-Range``, 416) and can
be told to misbehave: drop the connection after some bytes, corrupt a byte, ignore ``Range``, answer
500 a number of times. It records every request so tests can check what was asked and sent.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from harness.data import download, transfer
from helpers.loopback import FaultyServer, serving
from harness.data.download import (
    ChecksumError,
    DownloadError,
    OfflineError,
    RemoteFile,
    data_dir,
    fetch,
    locate,
    verify,
)
from helpers.real_data import real_data_dir

CURATED = "dpr-qas/topics.dpr.curated.test.txt"
CURATED_SHA = "0545ad16b1ddc5379e3938a3bfd3237c02f0bfe05ef4a2a227957f65c963592b"
NQ = "dpr-qas/topics.dpr.nq.test.txt"
NQ_SHA = "480cfe1d5b81bedd879ffe7c6a9ec294d317811e71c44daabfe242ca9d719d46"


#: The real question sets' folder, set by the server fixture (``helpers.real_data``).
SHARED: Path


# -- the server (tests/helpers/loopback.py) ------------------------------------------------------------


@pytest.fixture(scope="module")
def _server():
    global SHARED
    SHARED = real_data_dir()
    with serving(SHARED) as state:
        yield state


@pytest.fixture
def server(_server, monkeypatch):
    _server.reset()
    monkeypatch.setattr(transfer, "BACKOFF_S", 0.0)
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    yield _server
    _server.reset()


def remote(server: FaultyServer, path: str = NQ, sha256: str | None = NQ_SHA, *, size: bool = True) -> RemoteFile:
    return RemoteFile(
        url=f"{server.url}/{path}",
        path=path,
        sha256=sha256,
        size=(SHARED / path).stat().st_size if size else None,
    )


def files(root: Path) -> list[str]:
    """Every file under ``root`` (relative), hidden verification records left out."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.endswith(".verified")
    )


def leftovers(root: Path) -> list[str]:
    return [f for f in files(root) if f.endswith((".part", ".tmp"))]


# -- downloads -----------------------------------------------------------------------------------


def test_download_is_verified_and_lands_at_the_final_path(server, tmp_path):
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.path == tmp_path / NQ == locate(remote(server), tmp_path)
    assert result.sha256 == NQ_SHA and result.downloaded and result.verified
    assert result.path.read_bytes() == (SHARED / NQ).read_bytes()
    assert files(tmp_path) == [NQ]
    assert [(r.range, r.status) for r in server.log] == [(None, 200)]

    again = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert again.path == result.path and again.sha256 == NQ_SHA and not again.downloaded
    assert len(server.log) == 1, "a cached file is used without any request"


def test_interrupted_transfer_keeps_a_part_file_that_the_next_fetch_resumes(server, tmp_path):
    size = (SHARED / NQ).stat().st_size
    server.drop_after = 100_000
    with pytest.raises(DownloadError, match="run again to resume") as caught:
        fetch(remote(server), data_dir=tmp_path, progress=False, attempts=1)
    assert "\n" not in str(caught.value)
    assert files(tmp_path) == [NQ + ".part"]
    assert (tmp_path / (NQ + ".part")).stat().st_size == 100_000

    server.drop_after = None
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.downloaded and result.path.read_bytes() == (SHARED / NQ).read_bytes()
    assert [(r.range, r.status) for r in server.log] == [(None, 200), ("bytes=100000-", 206)]
    assert server.sent(NQ) == size < 2 * size
    assert files(tmp_path) == [NQ]


def test_retries_resume_within_one_fetch(server, tmp_path):
    server.drop_after, server.drops = 50_000, 2
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.sha256 == NQ_SHA
    assert [r.range for r in server.log] == [None, "bytes=50000-", "bytes=100000-"]
    assert server.sent(NQ) == (SHARED / NQ).stat().st_size
    assert files(tmp_path) == [NQ]


def test_corrupted_download_is_rejected_and_deleted(server, tmp_path):
    server.corrupt = True
    with pytest.raises(ChecksumError) as caught:
        fetch(remote(server), data_dir=tmp_path, progress=False)
    message = str(caught.value)
    assert NQ_SHA in message and "got " in message and "deleted" in message and "\n" not in message
    assert files(tmp_path) == []


def test_wrong_pinned_checksum_is_rejected(server, tmp_path):
    with pytest.raises(ChecksumError, match="expected sha256 0{64}, got " + NQ_SHA):
        fetch(remote(server, sha256="0" * 64), data_dir=tmp_path, progress=False)
    assert files(tmp_path) == []


def test_wrong_pinned_size_is_rejected_before_downloading(server, tmp_path):
    wrong = RemoteFile(url=f"{server.url}/{NQ}", path=NQ, sha256=NQ_SHA, size=123)
    size = (SHARED / NQ).stat().st_size
    with pytest.raises(ChecksumError, match=f"is {size} bytes, expected 123"):  # from the headers
        fetch(wrong, data_dir=tmp_path, progress=False)
    assert files(tmp_path) == []


def test_server_ignoring_range_restarts_from_zero(server, tmp_path):
    part = tmp_path / (NQ + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"garbage that is not a prefix of the file")
    server.ignore_range = True
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.path.read_bytes() == (SHARED / NQ).read_bytes()
    assert [(r.range, r.status) for r in server.log] == [("bytes=40-", 200)]
    assert files(tmp_path) == [NQ]


def test_range_not_satisfiable_verifies_a_complete_partial(server, tmp_path):
    part = tmp_path / (CURATED + ".part")
    part.parent.mkdir(parents=True)
    shutil.copyfile(SHARED / CURATED, part)
    result = fetch(remote(server, CURATED, CURATED_SHA, size=False), data_dir=tmp_path, progress=False)
    assert result.sha256 == CURATED_SHA and result.path.read_bytes() == (SHARED / CURATED).read_bytes()
    assert [r.status for r in server.log] == [416] and server.sent(CURATED) == 0
    assert files(tmp_path) == [CURATED]


def test_complete_partial_of_known_size_needs_no_request(server, tmp_path):
    part = tmp_path / (CURATED + ".part")
    part.parent.mkdir(parents=True)
    shutil.copyfile(SHARED / CURATED, part)
    result = fetch(remote(server, CURATED, CURATED_SHA), data_dir=tmp_path, progress=False)
    assert result.downloaded and result.sha256 == CURATED_SHA and server.log == []
    assert files(tmp_path) == [CURATED]


def test_bad_partial_of_full_size_is_downloaded_again(server, tmp_path):
    part = tmp_path / (CURATED + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * (SHARED / CURATED).stat().st_size)
    result = fetch(remote(server, CURATED, CURATED_SHA), data_dir=tmp_path, progress=False)
    assert result.sha256 == CURATED_SHA and [r.range for r in server.log] == [None]
    assert files(tmp_path) == [CURATED]


def test_server_error_is_retried(server, tmp_path):
    server.fail_500 = 1
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.sha256 == NQ_SHA
    assert [r.status for r in server.log] == [500, 200]


def test_persistent_server_error_gives_up_after_the_attempts(server, tmp_path):
    server.fail_500 = 10
    with pytest.raises(DownloadError, match=r"after 3 attempts: HTTP 500") as caught:
        fetch(remote(server), data_dir=tmp_path, progress=False)
    assert "\n" not in str(caught.value)
    assert len(server.log) == 3 and files(tmp_path) == []


def test_not_found_is_a_one_line_error_naming_the_url(server, tmp_path):
    missing = RemoteFile(url=f"{server.url}/dpr-qas/nope.txt", path="dpr-qas/nope.txt")
    with pytest.raises(DownloadError) as caught:
        fetch(missing, data_dir=tmp_path, progress=False)
    message = str(caught.value)
    assert f"{server.url}/dpr-qas/nope.txt" in message and "404" in message and "\n" not in message
    assert len(server.log) == 1, "404 is not retried"
    assert files(tmp_path) == []


@pytest.mark.parametrize("fault", ["404", "unreachable"])
def test_a_failed_download_says_where_the_file_goes_and_how_to_bring_it_offline(server, tmp_path, monkeypatch, fault):
    monkeypatch.setattr(transfer, "BACKOFF_S", 0.0)
    if fault == "404":
        wanted = RemoteFile(url=f"{server.url}/dpr-qas/nope.txt", path="dpr-qas/nope.txt", size=2_500_000)
    else:
        wanted = RemoteFile(url="http://127.0.0.1:9/nq.txt", path="dpr-qas/nq.txt", sha256=NQ_SHA, size=2_500_000)
    with pytest.raises(DownloadError) as caught:
        fetch(wanted, data_dir=tmp_path, progress=False, attempts=1)
    message = str(caught.value)
    assert "\n" not in message and wanted.url in message
    assert f"save it as {tmp_path / wanted.path} (2.5 MB" in message
    assert "HARNESS_OFFLINE=1" in message and "`harness data missing`" in message
    assert (NQ_SHA in message) is (fault != "404")


def test_unpinned_file_returns_and_reports_its_computed_checksum(server, tmp_path, capsys):
    result = fetch(remote(server, CURATED, None, size=False), data_dir=tmp_path, progress=False)
    assert result.sha256 == CURATED_SHA and not result.verified
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"harness: warning: no checksum is pinned for {server.url}/{CURATED}; its sha256 is {CURATED_SHA} "
                    "(record it to pin the file)")
    again = fetch(remote(server, CURATED, None, size=False), data_dir=tmp_path, progress=False)
    assert again.sha256 == CURATED_SHA and not again.downloaded and len(server.log) == 1


# -- offline mode and the cache ------------------------------------------------------------------


@pytest.mark.parametrize("how", ["env", "argument"])
def test_offline_mode_names_the_url_and_the_exact_path(server, tmp_path, monkeypatch, how):
    kwargs = {}
    if how == "env":
        monkeypatch.setenv("HARNESS_OFFLINE", "1")
    else:
        kwargs["offline"] = True
    with pytest.raises(OfflineError) as caught:
        fetch(remote(server), data_dir=tmp_path, progress=False, **kwargs)
    message = str(caught.value)
    assert f"{server.url}/{NQ}" in message and str(tmp_path / NQ) in message and NQ_SHA in message
    assert "\n" not in message and server.log == [] and files(tmp_path) == []
    size = remote(server).size
    assert f"save it as {tmp_path / NQ} ({download.size_text(size)}, sha256 {NQ_SHA})" in message
    assert download.size_text(size) == f"{size / 1e3:.1f} kB" and "`harness data missing`" in message


def test_offline_mode_uses_the_cache_without_any_request(server, tmp_path, monkeypatch):
    fetch(remote(server), data_dir=tmp_path, progress=False)
    server.log.clear()
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    result = fetch(remote(server), data_dir=tmp_path, progress=False)
    assert result.sha256 == NQ_SHA and not result.downloaded and server.log == []


def test_hf_hub_offline_does_not_imply_offline(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert fetch(remote(server), data_dir=tmp_path, progress=False).downloaded


def test_a_file_put_in_place_by_hand_is_checked_before_use(server, tmp_path):
    target = locate(remote(server), tmp_path)
    target.parent.mkdir(parents=True)
    shutil.copyfile(SHARED / NQ, target)
    result = fetch(remote(server), data_dir=tmp_path, progress=False, offline=True)
    assert result.sha256 == NQ_SHA and not result.downloaded

    wrong = locate(remote(server, CURATED, CURATED_SHA), tmp_path)
    wrong.write_bytes((SHARED / CURATED).read_bytes()[:-1] + b"?")
    with pytest.raises(ChecksumError, match="delete it and run again"):
        fetch(remote(server, CURATED, CURATED_SHA, size=False), data_dir=tmp_path, progress=False, offline=True)
    assert server.log == []


def test_verify_catches_a_flipped_byte_and_fetch_then_refuses_the_file(server, tmp_path):
    path = fetch(remote(server), data_dir=tmp_path, progress=False).path
    verify(path, sha256=NQ_SHA, size=(SHARED / NQ).stat().st_size)
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[1234] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime: only a hash tells
    with pytest.raises(ChecksumError, match=f"expected sha256 {NQ_SHA}"):
        verify(path, sha256=NQ_SHA)
    with pytest.raises(ChecksumError):
        fetch(remote(server), data_dir=tmp_path, progress=False)
    with pytest.raises(ChecksumError, match="has 5 bytes, expected 6"):
        (tmp_path / "small").write_bytes(b"12345")
        verify(tmp_path / "small", sha256=None, size=6)
    with pytest.raises(DownloadError, match="missing"):
        verify(tmp_path / "absent", sha256=NQ_SHA)


def test_file_urls_work_and_resume(tmp_path):
    global SHARED
    SHARED = real_data_dir()
    mirror = RemoteFile(url=(SHARED / CURATED).as_uri(), path=CURATED, sha256=CURATED_SHA)
    part = tmp_path / (CURATED + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((SHARED / CURATED).read_bytes()[:1000])
    result = fetch(mirror, data_dir=tmp_path, progress=False)
    assert result.sha256 == CURATED_SHA and result.downloaded
    assert files(tmp_path) == [CURATED]
    with pytest.raises(DownloadError, match="no such file"):
        fetch(RemoteFile(url=(tmp_path / "nope").as_uri(), path="nope"), data_dir=tmp_path, progress=False)
    assert files(tmp_path) == [CURATED]


def test_unreachable_server_is_retried_then_reported(tmp_path, monkeypatch):
    import socket

    monkeypatch.setattr(transfer, "BACKOFF_S", 0.0)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gone = RemoteFile(url=f"http://127.0.0.1:{port}/x.txt", path="x.txt")
    with pytest.raises(DownloadError, match=rf"could not download http://127.0.0.1:{port}/x.txt after 2 attempts"):
        fetch(gone, data_dir=tmp_path, progress=False, attempts=2, timeout=2)
    assert files(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the .part lock is POSIX flock")
def test_a_second_fetch_waits_for_the_one_in_progress(server, tmp_path):
    import fcntl

    final = locate(remote(server), tmp_path)
    final.parent.mkdir(parents=True)
    part = final.with_name(final.name + ".part")
    outcome = {}
    with open(part, "a+b") as other:  # "another process" downloading the file
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        def second():
            outcome["r"] = fetch(remote(server), data_dir=tmp_path, progress=False)

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(0.3)
        assert thread.is_alive(), "the second fetch waits for the lock"
        other.write((SHARED / NQ).read_bytes())
        other.flush()
        os.replace(part, final)  # the other download finishes...
    thread.join(5)  # ...and releases its lock
    assert not thread.is_alive()
    assert outcome["r"].sha256 == NQ_SHA and not outcome["r"].downloaded
    assert server.log == [] and files(tmp_path) == [NQ]


def test_progress_bar_does_not_break_the_download(server, tmp_path):
    assert fetch(remote(server, CURATED, CURATED_SHA), data_dir=tmp_path, progress=True).sha256 == CURATED_SHA


# -- locations and records -----------------------------------------------------------------------


def test_data_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert data_dir() == tmp_path / "cache" / "data"
    r = RemoteFile(url="https://example.org/a.txt", path="suite/a.txt")
    assert locate(r) == tmp_path / "cache" / "data" / "suite" / "a.txt"
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    assert data_dir() == tmp_path / "data" and locate(r) == tmp_path / "data" / "suite" / "a.txt"
    assert locate(r, tmp_path / "x") == tmp_path / "x" / "suite" / "a.txt"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"path": "../escape.txt"},
        {"path": "/abs.txt"},
        {"path": "a//b.txt"},
        {"path": ""},
        {"sha256": "ABC"},
        {"size": -1},
        {"url": "ftp://example.org/a.txt"},
    ],
)
def test_remote_file_refuses_bad_fields(kwargs):
    fields = {"url": "https://example.org/a.txt", "path": "a.txt", **kwargs}
    with pytest.raises(ValueError):
        RemoteFile(**fields)


def test_remote_file_is_a_frozen_record():
    r = RemoteFile(url="https://example.org/a.txt", path="a.txt", sha256=hashlib.sha256(b"").hexdigest(), size=0)
    with pytest.raises(AttributeError):
        r.url = "x"  # type: ignore[misc]

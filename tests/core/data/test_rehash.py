"""A file changed in place, with its size and modification time kept, is hashed again, not trusted.
"""

from __future__ import annotations

import os
import time

import pytest

# --- 9. a file changed in place is not trusted --------------------------------------------------


@pytest.mark.parametrize("large", [False, True], ids=["small-file", "large-file"])
def test_a_file_edited_in_place_with_size_and_mtime_kept_is_rehashed(tmp_path, monkeypatch, large):
    import hashlib

    from harness.data import download

    if large:
        monkeypatch.setattr(download, "REHASH_BYTES", 0)  # the stat-record path of big corpora
    content = b"question\t['answer']\n" * 100
    remote = download.RemoteFile(url="https://example.invalid/q.tsv", path="q.tsv",
                                 sha256=hashlib.sha256(content).hexdigest(), size=len(content))
    path = tmp_path / "q.tsv"
    path.write_bytes(content)
    assert download.fetch(remote, data_dir=tmp_path, offline=True, progress=False).verified
    st = path.stat()
    time.sleep(0.01)
    with open(path, "r+b") as f:
        f.write(b"Q")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same modification time
    with pytest.raises(download.ChecksumError, match="does not match its pinned checksum"):
        download.fetch(remote, data_dir=tmp_path, offline=True, progress=False)



"""What a run needs from the data folder (harness.data.needs): which files are missing, the two
listings, and the one-line offline error naming every missing file."""

from __future__ import annotations

import pytest

from harness.data.download import OfflineError, RemoteFile, size_text
from harness.data.needs import (
    MissingFilesError, Needed, declare_retriever_needs, format_table, format_tsv, missing, retriever_needs,
    run_listing, total_text,
)

SHA = "ab" * 32


def needed(path: str, size: int | None = None, sha256: str | None = None, what: str | None = None) -> Needed:
    return Needed(what or f"file {path}", RemoteFile(url=f"https://example.org/{path}", path=path, sha256=sha256, size=size))


def test_missing_keeps_absent_files_once_in_order(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "here.txt").write_text("x")
    (tmp_path / "a" / "folder.txt").mkdir()  # not a file: still missing
    items = [needed("a/one.txt"), needed("a/here.txt"), needed("a/folder.txt"), needed("a/one.txt", what="again")]
    assert [n.remote.path for n in missing(items, tmp_path)] == ["a/one.txt", "a/folder.txt"]


@pytest.mark.parametrize("size, text", [(None, "size not published"), (999, "999 B"), (296_949, "296.9 kB"),
                                        (13_663_000_000, "13.7 GB"), (4_500_000, "4.5 MB")])
def test_sizes_are_decimal_units(size, text):
    assert size_text(size) == text


def test_totals_say_when_some_sizes_are_unknown():
    assert total_text([needed("a", 1_000_000), needed("b", 2_000_000)]) == "2 files, 3.0 MB"
    assert total_text([needed("a", 1_000_000), needed("b")]) == "2 files, at least 1.0 MB (1 of unpublished size)"
    assert total_text([needed("b")]) == "1 file of unpublished size"


def test_tsv_is_one_line_per_file_with_dashes_for_what_is_not_published(tmp_path):
    items = [needed("q/p.json", 12, SHA, what="suite x,\tpart\nP19"), needed("c/psgs.tsv.gz")]
    lines = format_tsv(items, tmp_path).splitlines()
    assert [line.split("\t") for line in lines] == [
        ["https://example.org/q/p.json", str(tmp_path / "q" / "p.json"), "12", SHA, "suite x, part P19"],
        ["https://example.org/c/psgs.tsv.gz", str(tmp_path / "c" / "psgs.tsv.gz"), "-", "-", "file c/psgs.tsv.gz"],
    ]
    table = format_table(items, tmp_path)
    assert "12 B" in table and SHA in table and "size not published" in table and str(tmp_path / "c" / "psgs.tsv.gz") in table


def test_the_offline_error_names_every_file_on_one_line(tmp_path):
    items = [needed(f"q/P{i}.json", 1000 + i, SHA) for i in range(24)]
    corpus = needed("c/psgs.tsv.gz", what="corpus c")
    error = MissingFilesError(items, also=[corpus], listing="harness data missing s --corpus", data_dir=tmp_path)
    message = str(error)
    assert isinstance(error, OfflineError) and "\n" not in message
    assert "24 files, 24.3 kB are not in the data folder" in message
    assert all(f"https://example.org/q/P{i}.json -> {tmp_path / 'q' / f'P{i}.json'}" in message for i in range(24))
    assert f"a run also needs 1 file of unpublished size: corpus c (size not published): https://example.org/c/psgs.tsv.gz -> {tmp_path / 'c' / 'psgs.tsv.gz'}" in message
    assert "`harness data missing s --corpus`" in message and "HARNESS_OFFLINE" in message
    assert error.every == [*items, corpus]


def test_one_missing_file_reads_as_its_own_fetch_would_say(tmp_path):
    message = str(MissingFilesError([needed("a/b.bin", 2_000_000_000, SHA)], data_dir=tmp_path))
    assert message.startswith("offline mode (HARNESS_OFFLINE=1) and a/b.bin is not in the data folder: download "
                              f"https://example.org/a/b.bin and save it as {tmp_path / 'a' / 'b.bin'} (2.0 GB, sha256 {SHA})")


def test_a_retriever_declares_its_files_and_the_listing_command_repeats_its_options():
    declare_retriever_needs("test-needs", lambda options: [needed(f"m/{options.get('name', 'default')}.tar")])
    assert [n.remote.path for n in retriever_needs("test-needs", {"name": "x"})] == ["m/x.tar"]
    assert retriever_needs("no-such-declaration", {}) == []
    assert run_listing("eq", "art", {"checkpoint": "nq t0"}) == "harness data missing eq --corpus --retriever art -o 'checkpoint=nq t0'"

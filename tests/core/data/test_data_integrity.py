"""Integrity checks that do not launder a changed file, one-line errors where a command used to end
in an internal error, and the true line of a byte that is not UTF-8.

- A file with no pinned checksum (DPR's training sets) is compared with the digest recorded at its
  first download on every use, by ``harness data verify`` too; a change is never re-recorded.
- A training record (``harness_training.json``) with any problem is one line naming the file and
  the key; ``export-dpr`` of a damaged checkpoint is one line, and an export killed midway leaves
  nothing that blocks the next one.
- A score cache row that fails its check (an edited score, a row copied from another cache) is
  deleted, scored again and reported once.
- ``make-training`` into an output that cannot be written, ``generate-questions`` resuming a
  progress file that names a passage the corpus lacks, and two ``generate-questions`` runs into one
  output are one line each, exit 2.
- The corpus, training-file, article and question readers report the line of the bad byte.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO

from harness.cli.main import main
from harness.errors import HarnessError, InputFileError



def one_line_exit_2(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("harness: error: "), err
    for fragment in fragments:
        assert fragment in err, err


# ------------------------------------------------------------------ a file with no pinned checksum


def _unpinned(tmp_path: Path, content: bytes):
    from harness.data.download import RemoteFile

    source = tmp_path / "mirror" / "train.json"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(content)
    return RemoteFile(url=source.as_uri(), path="dpr/train.json"), source


@pytest.mark.parametrize("large", [False, True], ids=["small-file", "large-file"])
def test_an_unpinned_file_changed_after_its_download_is_refused_and_never_re_recorded(tmp_path, monkeypatch, large):
    from harness.data import download

    if large:
        monkeypatch.setattr(download, "REHASH_BYTES", 0)  # the stat-record path of big files
    content = b'[{"question": "q", "answers": ["a"]}]\n' * 50
    remote, _ = _unpinned(tmp_path, content)
    data = tmp_path / "data"
    first = download.fetch(remote, data_dir=data, progress=False)
    assert first.downloaded and not first.verified
    recorded = hashlib.sha256(content).hexdigest()
    assert download.recorded_sha256(first.path) == recorded

    first.path.write_bytes(content.replace(b'"a"', b'"b"'))  # edited after the download
    changed = hashlib.sha256(first.path.read_bytes()).hexdigest()
    for _ in range(2):  # refused every time: the first refusal recorded nothing
        with pytest.raises(download.ChecksumError) as caught:
            download.fetch(remote, data_dir=data, progress=False)
        message = str(caught.value)
        assert str(first.path) in message and recorded in message and changed in message
        assert "delete it" in message and "\n" not in message
        assert download.recorded_sha256(first.path) == recorded
    with pytest.raises(download.ChecksumError, match=recorded):
        download.verify(first.path, sha256=None)
    with pytest.raises(download.ChecksumError, match=recorded):  # a failed verify dropped nothing either
        download.fetch(remote, data_dir=data, progress=False)

    first.path.unlink()  # what the message says to do: the next use downloads it afresh
    again = download.fetch(remote, data_dir=data, progress=False)
    assert again.downloaded and again.sha256 == recorded


def test_an_unpinned_file_touched_but_unchanged_is_used(tmp_path, monkeypatch):
    from harness.data import download

    monkeypatch.setattr(download, "REHASH_BYTES", 0)
    remote, _ = _unpinned(tmp_path, b"[]\n")
    first = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    os.utime(first.path, ns=(1, 1))  # another modification time: re-hashed, and still the same bytes
    again = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    assert not again.downloaded and again.sha256 == first.sha256


def test_a_damaged_record_of_an_unpinned_file_is_an_error_not_a_new_record(tmp_path):
    from harness.data import download

    remote, _ = _unpinned(tmp_path, b"[]\n")
    first = download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    record = first.path.with_name(f".{first.path.name}.verified")
    record.write_text('{"sha256": "not a digest"}')
    with pytest.raises(download.ChecksumError, match=r"\.train\.json\.verified: the record .* is damaged"):
        download.fetch(remote, data_dir=tmp_path / "data", progress=False)
    assert json.loads(record.read_text()) == {"sha256": "not a digest"}


def test_a_named_training_set_edited_after_its_download_is_refused_by_fetch_train_and_verify(tmp_path, monkeypatch, capsys):
    from harness_builtins.datasets.loading import training_file

    mirror = tmp_path / "mirror.json"
    from harness.data.training import write_training_examples
    from helpers.training_models import examples

    write_training_examples(mirror, examples())
    specs = tmp_path / "specs" / "training"
    specs.mkdir(parents=True)
    (specs / "mine.toml").write_text(
        f'name = "mine"\ndescription = "d"\nurl = "{mirror.as_uri()}"\npath = "mine/train.json"\nformat = "dpr-json"\n'
        'license = "l"\ncitation = "c"\nhomepage = "https://example.org"\n'
    )
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs.parent))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    path = training_file("mine", progress=False)
    recorded = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_bytes(path.read_bytes().replace(b"red", b"RED"))
    found = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(HarnessError, match=f"its sha256 is {found}, but {recorded} was recorded"):
        training_file("mine", progress=False)  # what harness train --data mine opens
    capsys.readouterr()
    code = main(["data", "fetch", "mine", "--no-progress"])
    one_line_exit_2(code, capsys.readouterr().err, str(path), recorded, found)
    code = main(["data", "verify", "mine", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and f"BAD  {path} changed after it was first downloaded" in out and recorded in out
    code = main(["data", "verify", "mine", "--no-progress"])  # the failed verify recorded nothing
    assert code == 1 and recorded in capsys.readouterr().out


# ------------------------------------------------------------------------- the training record


RECORD = {"schema": "harness-training/1", "variant": "dpr", "initial_model": "m", "data": [{"path": "x"}],
          "format": "dpr", "seed": 1, "recipe": {"loss": {"name": "dpr", "options": {}}}, "settings": {}, "steps": 3}


@pytest.mark.parametrize("change, fragment", [
    ({"recipe": {"loss": "dpr"}}, "'recipe'.'loss' is not an object"),
    ({"data": [1]}, "'data'[0] is not an object"),
    ({"variant": ""}, "'variant' is empty"),
    ({"labels": {"a": {"folder": "../../elsewhere"}}}, "'labels'.'a': its folder '../../elsewhere' is outside"),
    ({"labels": {"a": {"folder": "/etc"}}}, "'labels'.'a': its folder '/etc' is outside"),
    ({"labels": {"a": "labels/a"}}, "'labels'.'a' is not an object"),
    ({"labels": ["a"]}, "'labels' is not a dict"),
    ({"loss_state": 5}, "'loss_state' is not a str"),
    ({"loss_state": "../weights.safetensors"}, "'loss_state': '../weights.safetensors' is outside"),
    ({"distributed": [1]}, "'distributed' is not a dict"),
    ({"seed": "1"}, "'seed' is missing or not an int"),
])
def test_every_problem_of_a_training_record_names_the_file_and_the_key(tmp_path, change, fragment):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_text(json.dumps({**RECORD, **change}))
    with pytest.raises(InputFileError) as caught:
        Checkpoint.read(tmp_path, model=False)
    assert str(caught.value).startswith(f"{record}: ") and fragment in str(caught.value)


def test_a_training_record_that_is_not_utf8_is_reported_on_its_line(tmp_path):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_bytes(b'{\n "schema": "harness-training/1",\n "variant": "d\xffpr"\n}\n')
    with pytest.raises(InputFileError, match=rf"^{record}:3: unreadable training record: not UTF-8 text \(byte 15 of the line\)$"):
        Checkpoint.read(tmp_path, model=False)


def test_the_model_folder_and_the_label_folders_are_named_with_the_record(tmp_path):
    from harness.results.checkpoint import Checkpoint

    record = tmp_path / "harness_training.json"
    record.write_text(json.dumps(RECORD))
    with pytest.raises(InputFileError, match=rf"^{record}: the checkpoint's model folder .* is missing"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model").mkdir()
    with pytest.raises(InputFileError, match=rf"^{record}: .* not a sentence-transformers model directory"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model" / "modules.json").write_text('{"0": ')
    with pytest.raises(InputFileError, match=r"modules.json:1: invalid JSON"):
        Checkpoint.read(tmp_path)
    (tmp_path / "model" / "modules.json").write_text('[{"path": "../../outside"}]')
    with pytest.raises(InputFileError, match=r"modules.json: expected a JSON list of modules"):
        Checkpoint.read(tmp_path)
    record.write_text(json.dumps({**RECORD, "labels": {"P19": {"folder": "labels/P19"}}}))
    with pytest.raises(InputFileError, match=rf"^{record}: 'labels'.'P19': its folder 'labels/P19' is missing"):
        Checkpoint.read(tmp_path, model=False).label_folders()


# ----------------------------------------------------------------------------------- export-dpr


@pytest.fixture(scope="module")
def cls_checkpoint(tmp_path_factory) -> Path:
    """A checkpoint folder an export accepts: a tiny BERT with CLS pooling and a record."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from helpers.dense_models import tiny_bert

    root = tmp_path_factory.mktemp("checkpoint")
    transformer = Transformer(str(tiny_bert(root / "bert", pooler=False)), max_seq_length=32)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(root / "out" / "model"))
    (root / "out" / "harness_training.json").write_text(json.dumps(RECORD))
    return root / "out"


def test_export_of_a_checkpoint_with_damaged_weights_is_one_line(cls_checkpoint, tmp_path, capsys):
    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(cls_checkpoint, damaged)
    for weights in (damaged / "model").rglob("*.safetensors"):
        weights.write_bytes(b"not safetensors")
    code = main(["export-dpr", str(damaged), str(tmp_path / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, str(damaged / "model"), "cannot load the trained model")
    assert not (tmp_path / "dest").exists()
    (damaged / "harness_training.json").write_text(json.dumps({**RECORD, "data": ["x"]}))
    code = main(["export-dpr", str(damaged), str(tmp_path / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, f"{damaged / 'harness_training.json'}: 'data'[0] is not an object")


def test_export_into_an_unwritable_destination_is_one_line(cls_checkpoint, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["export-dpr", str(cls_checkpoint), str(tmp_path / "file" / "dest")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write", "is a file, not a folder")


KILLED_EXPORT = """
import os, sys
import transformers.modeling_utils as modeling
from harness.cli.main import main

save = modeling.PreTrainedModel.save_pretrained

def save_then_die(self, *args, **kwargs):
    save(self, *args, **kwargs)
    os.kill(os.getpid(), 9)  # killed after the first encoder is written

modeling.PreTrainedModel.save_pretrained = save_then_die
main(["export-dpr", sys.argv[1], sys.argv[2]])
"""


def test_an_export_killed_midway_leaves_nothing_that_blocks_the_next(cls_checkpoint, tmp_path, capsys):
    dest = tmp_path / "dpr"
    killed = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(cls_checkpoint), str(dest)],
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, cwd=REPO)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert not dest.exists()
    assert main(["export-dpr", str(cls_checkpoint), str(dest)]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == ["ctx_encoder", "question_encoder"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dpr"]  # the killed run's leftover is gone


# ------------------------------------------------------------------------------ the score cache


CONFIG = {"scorer": "test/1", "model": "m"}
KEYS = [("p1", "d1"), ("p2", "d2"), ("p3", "d3")]


def _filled(directory: Path, config=CONFIG):
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(directory, config)
    cache.put("q", [("p1", "d1", -1.25), ("p2", "d2", -2.5), ("p3", "d3", -3.75)])
    cache.close()
    return cache.path


@pytest.mark.parametrize("edit", [
    "UPDATE scores SET score = 9.0 WHERE passage_id = 'p2'",
    "UPDATE scores SET score = 'high' WHERE passage_id = 'p2'",
    "UPDATE scores SET score = 1e999 WHERE passage_id = 'p2'",
    # another pair's row relabelled as p2's
    "DELETE FROM scores WHERE question = 'q' AND passage_id = 'p2'; "
    "UPDATE scores SET passage_id = 'p2', passage = 'd2' WHERE question = 'q' AND passage_id = 'p1'",
    # another question's row of the same pair moved over
    "DELETE FROM scores WHERE question = 'q' AND passage_id = 'p2'; UPDATE scores SET question = 'q' WHERE question = 'other'",
], ids=["score", "text", "infinite", "other-pair", "other-question"])
def test_a_forged_score_row_is_deleted_scored_again_and_reported(tmp_path, capsys, edit):
    from harness_builtins.rerank.cache import ScoreCache

    path = _filled(tmp_path)
    other = ScoreCache(tmp_path, CONFIG)
    other.put("other", [("p2", "d2", 7.0)])  # same pair, another question: its row moved over by an edit
    other.close()
    with sqlite3.connect(path) as db:
        db.executescript(edit)
    cache = ScoreCache(tmp_path, CONFIG)
    found = cache.get("q", KEYS)
    assert ("p2", "d2") not in found and found[("p3", "d3")] == -3.75
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"score cache {path}" in err and "passage 'p2'" in err and "scored again" in err
    cache.put("q", [("p2", "d2", -2.5)])  # scored again: the new score is stored, not ignored
    assert cache.get("q", KEYS)[("p2", "d2")] == -2.5
    assert capsys.readouterr().err == ""
    cache.close()


def test_a_row_copied_from_another_models_cache_is_not_used(tmp_path, capsys):
    ours = _filled(tmp_path / "ours")
    theirs = _filled(tmp_path / "theirs", {**CONFIG, "model": "another"})
    with sqlite3.connect(theirs) as db:  # a row that is good in its own cache
        copied = db.execute("SELECT * FROM scores WHERE passage_id = 'p1'").fetchone()
    with sqlite3.connect(ours) as db:
        db.execute("DELETE FROM scores WHERE passage_id = 'p1'")
        db.execute("INSERT INTO scores VALUES (?, ?, ?, ?, ?)", copied)
    from harness_builtins.rerank.cache import ScoreCache

    cache = ScoreCache(tmp_path / "ours", CONFIG)
    assert ("p1", "d1") not in cache.get("q", KEYS) and cache.dropped == 1
    assert "copied from another cache" in capsys.readouterr().err
    cache.close()


def test_a_cache_without_row_checks_is_set_aside_and_a_non_finite_score_is_never_stored(tmp_path, capsys):
    from harness_builtins.rerank.cache import FORMAT, ScoreCache, config_key

    config = json.loads(json.dumps(CONFIG, sort_keys=True))
    old = tmp_path / f"{config_key(config)}.sqlite"
    with sqlite3.connect(old) as db:  # an older layout, even claiming the current format
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       [("format", FORMAT), ("config", json.dumps(config, sort_keys=True, ensure_ascii=False))])
        db.execute("CREATE TABLE scores (question TEXT NOT NULL, passage_id TEXT NOT NULL, passage TEXT NOT NULL, "
                   "score REAL NOT NULL, PRIMARY KEY (question, passage_id, passage)) WITHOUT ROWID")
        db.execute("INSERT INTO scores VALUES ('q', 'p1', 'd1', 100.0)")
    cache = ScoreCache(tmp_path, CONFIG)
    assert cache.get("q", KEYS) == {} and len(cache) == 0
    assert "moved to" in capsys.readouterr().err and old.with_name(old.name + ".damaged").exists()
    with pytest.raises(ValueError, match="not a finite number"):
        cache.put("q", [("p1", "d1", float("inf"))])
    assert len(cache) == 0
    cache.close()


# ------------------------------------------------------------------- outputs that cannot be written


def test_make_training_into_an_unwritable_output_is_one_line_before_any_retrieval(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "file" / "train.json")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write --output", "is a file, not a folder")
    assert not (tmp_path / "cache").exists()  # refused before indexing anything


NO_SPACE = """
import resource, signal, sys
from pathlib import Path
from harness.data.passages import split_articles
from harness.data.training import write_training_examples
from harness.api import Passage, TrainingExample
from harness.errors import HarnessError

def examples():
    passage = Passage(id="p", title="t", text="some text " * 20)
    return [TrainingExample(question=f"q{i}", answers=("a",), positives=(passage,)) for i in range(16)]

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
out = Path(sys.argv[1])
for write in (lambda: write_training_examples(out / "train.json", examples() * 20),
              lambda: split_articles(out / "articles.jsonl", out / "passages.tsv", progress=False)):
    try:
        write()
    except HarnessError as exc:
        print("ERROR", exc)
"""


def test_an_output_that_runs_out_of_room_is_one_line_and_leaves_nothing(tmp_path):
    (tmp_path / "articles.jsonl").write_text("".join(
        json.dumps({"title": f"A{i}", "text": "word " * 300}) + "\n" for i in range(10)))
    done = subprocess.run([sys.executable, "-c", NO_SPACE, str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 2, done.stdout + done.stderr[-2000:]
    assert lines[0] == f"ERROR cannot write output {tmp_path / 'train.json'}: File too large"
    assert lines[1] == f"ERROR cannot write output {tmp_path / 'passages.tsv'}: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["articles.jsonl"]


# ------------------------------------------------------------------------------ generate-questions


class Generator:
    """A fake question generator that is interrupted after ``batches`` calls (None: never)."""

    def __init__(self, batches: int | None = None):
        self.batches, self.calls = batches, 0

    def __call__(self, prompts):
        self.calls += 1
        if self.batches is not None and self.calls > self.batches:
            raise KeyboardInterrupt
        return ["when was Ann born"] * len(prompts)


def _interrupted(tmp_path: Path):
    """A run over three passages killed after its first batch; a function that runs it again (with
    a generator that works) and its progress file."""
    from harness.api import InMemoryCorpus, Passage
    from harness_builtins.datasets.generate import generate_questions

    corpus = InMemoryCorpus("three", [Passage(id=f"p{i}", title=f"T{i}", text=f"Ann was born in {1950 + i}.")
                                      for i in range(3)])

    def run(generate=None):
        return generate_questions(corpus, None, output=tmp_path / "gen.json", negatives=0, batch_size=1,
                                  generate=generate or Generator(), progress=False)

    with pytest.raises(KeyboardInterrupt):
        run(Generator(batches=1))
    return run, tmp_path / "gen.json.partial.jsonl"


def test_resuming_a_progress_file_that_names_an_unknown_passage_is_one_line(tmp_path):
    run, partial = _interrupted(tmp_path)
    lines = partial.read_text().splitlines()
    assert len(lines) == 2
    partial.write_text("\n".join([lines[0], lines[1].replace('"p0"', '"ghost"')]) + "\n")
    with pytest.raises(HarnessError) as caught:
        run()
    message = str(caught.value)
    assert message.startswith(f"{partial}:2: ") and "'ghost'" in message and "corpus three" in message
    assert "\n" not in message and not (tmp_path / "gen.json").exists()


def test_two_runs_into_one_output_the_second_stops_with_one_line(tmp_path):
    import fcntl

    run, partial = _interrupted(tmp_path)
    lock = tmp_path / "gen.json.lock"
    assert not lock.exists()  # removed when the run ended, even by an interrupt
    before = partial.read_bytes()
    with open(lock, "w") as held:  # another run holds the output
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(HarnessError, match=r"gen.json is being written by another generate-questions run"):
            run()
        assert partial.read_bytes() == before and not (tmp_path / "gen.json").exists()
    stats = run()  # the lock released: the run resumes and finishes
    assert stats.resumed == 1 and stats.passages == 3 and stats.kept == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen.json", "gen.json.meta.json"]


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5")


def test_a_cli_run_into_an_output_under_a_file_is_one_line(tmp_path, t5_dir, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["data", "generate-questions", "demo", "--model", str(t5_dir), "--passages", "2", "--device", "cpu",
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--output", str(tmp_path / "file" / "gen.json")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write output", "is a file, not a folder")


# ------------------------------------------------------------------------ the line of a bad byte


def _tsv(lines: int, bad_line: int) -> bytes:
    rows = [b"id\ttext\ttitle"] + [
        f"{i}\tpassage number {i} with some words to fill the line\tTitle {i}".encode() for i in range(1, lines)
    ]
    rows[bad_line - 1] = rows[bad_line - 1].replace(b"passage", b"pass\xffage")
    return b"\n".join(rows) + b"\n"


@pytest.mark.parametrize("name", ["psgs.tsv", "psgs.tsv.gz"])
def test_a_bad_byte_on_line_15000_of_a_20000_line_corpus_tsv_is_reported_there(tmp_path, name):
    from harness.data.corpus_store import build_store

    data = _tsv(20_000, 15_000)
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(InputFileError) as caught:
        build_store(tmp_path / name, tmp_path / "store", format="dpr-tsv", name="c", progress=False)
    assert str(caught.value) == f"{tmp_path / name}:15000: not UTF-8 text (byte 11 of the line)"
    assert not (tmp_path / "store").exists()


def test_a_bad_byte_in_a_jsonl_corpus_is_reported_on_its_line(tmp_path):
    from harness.data.corpus_store import build_store

    rows = [json.dumps({"id": str(i), "title": "t", "text": f"text {i} " * 5}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"text", b"t\xc3\x28xt", 1)  # a broken two-byte sequence
    (tmp_path / "c.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r"c.jsonl:15000: not UTF-8 text \(byte 33 of the line\)$"):
        build_store(tmp_path / "c.jsonl", tmp_path / "store", format="jsonl", name="c", progress=False)


EXAMPLE = {"question": "q", "answers": ["a"], "positive_ctxs": [{"title": "t", "text": "a text"}],
           "negative_ctxs": [], "hard_negative_ctxs": []}


@pytest.mark.parametrize("name", ["train.jsonl", "train.json", "train.json.gz", "pretty.json"])
def test_a_bad_byte_on_line_98_of_a_training_file_is_reported_there(tmp_path, name):
    from harness.data.training import read_training_examples

    if name == "pretty.json":  # DPR's own layout: indented, an example over many lines
        lines = json.dumps([EXAMPLE] * 40, indent=4).encode().split(b"\n")
    elif name.startswith("train.jsonl"):
        lines = [json.dumps({**EXAMPLE, "question": f"q{i}"}).encode() for i in range(200)]
    else:
        lines = [b"["] + [json.dumps({**EXAMPLE, "question": f"q{i}"}).encode() + b"," for i in range(200)]
        lines[-1] = lines[-1].rstrip(b",")
        lines.append(b"]")
    assert b'"' in lines[97]
    lines[97] = lines[97].replace(b'"', b'"\xe9', 1)  # Latin-1, not UTF-8
    column = lines[97].index(b"\xe9") + 1
    data = b"\n".join(lines) + b"\n"
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(InputFileError) as caught:
        list(read_training_examples(tmp_path / name))
    assert str(caught.value) == f"{tmp_path / name}:98: not UTF-8 text (byte {column} of the line)"


def test_a_bad_byte_in_an_article_file_is_reported_on_its_line(tmp_path):
    from harness.data.passages import split_articles

    rows = [json.dumps({"title": f"A{i}", "text": "word " * 50}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"word", b"wo\xffrd", 1)
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r"a.jsonl:15000: not UTF-8 text \(byte 32 of the line\)$"):
        split_articles(tmp_path / "a.jsonl", tmp_path / "p.tsv", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


@pytest.mark.parametrize("format", ["dpr-tsv", "jsonl"])
def test_a_bad_byte_in_a_question_file_is_reported_on_its_line(tmp_path, format):
    from harness.data.questions import read_questions

    if format == "dpr-tsv":
        rows = [f"question {i}?\t['answer {i}']".encode() for i in range(20_000)]
    else:
        rows = [json.dumps({"question": f"question {i}?", "answer": [f"answer {i}"]}).encode() for i in range(20_000)]
    rows[14_999] = rows[14_999].replace(b"question", b"ques\xfftion", 1)
    (tmp_path / "q").write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(InputFileError, match=r":15000: not UTF-8 text"):
        read_questions(tmp_path / "q", format)


def test_the_scan_for_a_bad_byte_is_exact_across_chunk_boundaries(tmp_path, monkeypatch):
    """Multi-byte characters cut by chunk boundaries are not taken for bad bytes; the line and
    byte found are those of a straight count over the whole file."""
    from harness.data import corpus_sources

    text = "".join(f"line {i}: ünïcødé €uro 𝄞 {'x' * (i % 7)}\n" for i in range(300)).encode()
    for bad_at in (0, 17, len(text) // 2, len(text) - 2):
        data = text[:bad_at] + b"\x80" + text[bad_at:]
        (tmp_path / "f").write_bytes(data)
        expected = (data.count(b"\n", 0, bad_at) + 1, bad_at - (data.rfind(b"\n", 0, bad_at) + 1) + 1)
        for chunk in (1, 3, 7, 64, 1 << 20):
            monkeypatch.setattr(corpus_sources, "_SCAN_CHUNK", chunk)
            assert corpus_sources.first_bad_utf8(tmp_path / "f") == expected, (bad_at, chunk)
    (tmp_path / "f").write_bytes(text + "é".encode()[:1])  # a character cut short at the end
    assert corpus_sources.first_bad_utf8(tmp_path / "f") == (301, 1)
    (tmp_path / "f").write_bytes(text)
    assert corpus_sources.first_bad_utf8(tmp_path / "f") is None

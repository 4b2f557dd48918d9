"""Spec'd suites end to end: fetching on first use, offline errors, and a run over a local mirror."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path

import pytest

import harness.registry
from harness.cli.main import main
from harness_builtins.datasets.catalog import catalog


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("HARNESS_DATA_DIR", str(folder))
    return folder


def test_offline_run_of_a_missing_suite_says_what_to_fetch_and_where(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    code = main(["run", "-r", "bm25", "-s", "curated", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "https://raw.githubusercontent.com/castorini/anserini-tools/" in err
    assert str(data_dir / "anserini-tools" / "topics.dpr.curated.test.txt") in err


def test_questions_in_the_data_folder_are_used_offline_and_the_corpus_is_named(capsys, data_dir, monkeypatch, shared_data):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    target = data_dir / "anserini-tools" / "topics.dpr.curated.test.txt"
    target.parent.mkdir(parents=True)
    shutil.copy(shared_data / "dpr-qas" / "topics.dpr.curated.test.txt", target)
    suite = harness.registry.suites().get("curated").load()
    assert suite.match == "regex" and len(suite.questions) == 694 and suite.questions[0].id == "0"
    assert not suite.corpus.loaded
    code = main(["run", "-r", "bm25", "-s", "curated", "--no-progress"])
    err = capsys.readouterr().err
    # The run needs the suite's corpus, checked before the retriever is loaded: named, with where it goes.
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "download https://dl.fbaipublicfiles.com/dpr/wikipedia_split/psgs_w100.tsv.gz" in err
    assert f"save it as {data_dir / 'dpr' / 'psgs_w100.tsv.gz'}" in err


def test_a_tampered_question_file_is_rejected(data_dir, monkeypatch, shared_data):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    target = data_dir / "anserini-tools" / "topics.dpr.wq.test.txt"
    target.parent.mkdir(parents=True)
    target.write_bytes((shared_data / "dpr-qas" / "topics.dpr.wq.test.txt").read_bytes().replace(b"Jamaican", b"Jamaicon"))
    from harness.data.download import ChecksumError

    with pytest.raises(ChecksumError, match="does not match its pinned checksum"):
        harness.registry.suites().get("wq").load()


def _write_mirror(root: Path, shared_data: Path) -> Path:
    """A spec folder whose suite and corpus point at file:// copies: a local mirror."""
    mirror = root / "mirror"
    mirror.mkdir()
    questions = [
        {"question": "Where was Varenko Tilsa born?", "answers": ["Ostrelin"]},
        {"question": "Who founded Quorvex Industries?", "answers": ["Mirela Quast"]},
        {"question": "What is the capital of Dovania?", "answers": ["Sarn"]},
    ]
    (mirror / "P19.test.json").write_text(json.dumps(questions))
    with open(mirror / "psgs.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["id", "text", "title"])
        writer.writerow(["1", "Varenko Tilsa was born in Ostrelin, a river town.", "Varenko Tilsa"])
        writer.writerow(["2", 'Quorvex Industries was founded by "Mirela Quast" in 1921.', "Quorvex Industries"])
        writer.writerow(["3", "Dovania is a small country in the north.", "Dovania"])
        writer.writerow(["4", "Ostrelin lies on the river Vask.", "Ostrelin"])
    digest = hashlib.sha256((mirror / "P19.test.json").read_bytes()).hexdigest()
    specs = root / "specs"
    (specs / "suites").mkdir(parents=True)
    (specs / "corpora").mkdir()
    (specs / "corpora" / "mini.toml").write_text(
        f'name = "mini-corpus"\ndescription = "d"\nurl = "{(mirror / "psgs.tsv").as_uri()}"\npath = "mini/psgs.tsv"\n'
        'format = "dpr-tsv"\nlicense = "l"\ncitation = "c"\n'
    )
    (specs / "suites" / "mini.toml").write_text(
        'name = "mini"\ndescription = "d"\nmatch = "string"\ncorpus = "mini-corpus"\nlicense = "l"\ncitation = "c"\n'
        f'[[parts]]\nname = "P19"\nurl = "{(mirror / "P19.test.json").as_uri()}"\npath = "mini/P19.test.json"\n'
        f'sha256 = "{digest}"\nformat = "json-list"\n'
    )
    return specs


def test_a_user_spec_folder_runs_end_to_end_from_a_mirror(capsys, tmp_path, data_dir, monkeypatch, shared_data, test_registries):
    specs = _write_mirror(tmp_path, shared_data)
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
    from harness.plugins import loaded_plugins
    from harness.registry import KINDS, Registry

    monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
    assert "mini" in catalog().suites
    code = main(["data", "fetch", "mini", "--corpus", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mini/P19: downloaded, verified" in out and "corpus mini-corpus ready, 4 passages" in out
    code = main(["run", "-r", "test-overlap", "-s", "mini", "--k", "1,2", "--no-progress",
                 "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0, out
    (result,) = (tmp_path / "results").glob("*.json")
    data = json.loads(result.read_text())
    assert data["suite"]["corpus"]["passages"] == 4 and data["suite"]["corpus"]["fingerprint"].startswith("sha256:")
    assert data["first_hit_ranks"] == {"P19": {"0": 0, "1": 0, "2": None}}
    code = main(["data", "verify", "mini"])
    out = capsys.readouterr().out
    assert code == 0 and "2 file(s) ok, 0 bad" in out
    (data_dir / "mini" / "psgs.tsv").write_text("id\ttext\ttitle\n1\tchanged\tx\n")
    code = main(["data", "verify", "mini"])
    out = capsys.readouterr().out
    assert code == 1 and "BAD" in out and "1 bad" in out


SQUAD = {
    "version": "1.1",
    "data": [
        {
            "title": "Super_Bowl_50",
            "paragraphs": [
                {
                    "context": ("Super Bowl 50 was an American football game to determine the champion of the NFL for the 2015 season. "
                                "The American Football Conference champion Denver Broncos defeated the National Football Conference "
                                "champion Carolina Panthers 24 to 10 to earn their third Super Bowl title. " * 3).strip(),
                    "qas": [
                        {"id": "q1", "question": "Which NFL team won Super Bowl 50?", "answers": [{"answer_start": 0, "text": "Denver Broncos"}]},
                        {"id": "q2", "question": "Who did the Broncos defeat?", "answers": [{"answer_start": 0, "text": "Carolina Panthers"}]},
                    ],
                },
                {
                    "context": "The game was played on February 7, 2016, at Levi's Stadium in Santa Clara, California.",
                    "qas": [{"id": "q3", "question": "Where was Super Bowl 50 played?", "answers": [{"answer_start": 0, "text": "Levi's Stadium"}]}],
                },
            ],
        }
    ],
}


def test_squad_dev_paragraphs_reads_a_file_of_squads_shape(capsys, tmp_path, data_dir, monkeypatch, test_registries):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    target = data_dir / "squad" / "dev-v1.1.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(SQUAD))
    suite = harness.registry.suites().get("squad-dev-paragraphs").load()
    assert [q.id for q in suite.questions] == ["q1", "q2", "q3"]
    corpus = suite.corpus.open()
    texts = [p.text for p in corpus]
    assert [len(t.split()) for t in texts] == [100, 32, 15]  # 132 words: a full passage and the rest
    assert {p.title for p in corpus} == {"Super Bowl 50"}
    code = main(["run", "-r", "test-overlap", "-s", "squad-dev-paragraphs", "--k", "1,3", "--no-progress",
                 "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr().err
    data = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    assert data["suite"]["corpus"]["passages"] == 3
    assert set(data["first_hit_ranks"]["dev"]) == {"q1", "q2", "q3"}


def test_squad_dev_paragraphs_offline_names_the_download(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    code = main(["data", "fetch", "squad-dev-paragraphs"])
    err = capsys.readouterr().err
    assert code == 2 and "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json" in err
    assert str(data_dir / "squad" / "dev-v1.1.json") in err


def test_data_split_writes_dpr_passages(capsys, tmp_path):
    articles = tmp_path / "articles.jsonl"
    words = " ".join(f"w{i}" for i in range(250))
    articles.write_text(json.dumps({"title": "Long", "text": words}) + "\n" + json.dumps({"title": "Short", "text": "a b c"}) + "\n")
    out = tmp_path / "passages.tsv"
    assert main(["data", "split", str(articles), str(out)]) == 0
    assert "wrote 4 passages" in capsys.readouterr().out
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["id", "text", "title"]
    assert [(r[0], len(r[1].split()), r[2]) for r in rows[1:]] == [("1", 100, "Long"), ("2", 100, "Long"), ("3", 50, "Long"), ("4", 3, "Short")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "x"}\n')
    assert main(["data", "split", str(bad), str(tmp_path / "o.tsv")]) == 2
    assert f"{bad}:1:" in capsys.readouterr().err and not (tmp_path / "o.tsv").exists()


# ---- training sets (specs/training/, harness train --data NAME) -------------------------------


def test_dpr_training_sets_are_listed_with_their_urls():
    from harness import registry

    found = catalog().training
    expected = {f"biencoder-{d}-{s}" for d in ("nq", "trivia", "squad1", "webquestions", "curatedtrec") for s in ("train", "dev")}
    assert set(found) >= expected
    for name in expected:
        spec = found[name]
        assert spec.file.url == f"https://dl.fbaipublicfiles.com/dpr/data/retriever/{name}.json.gz"
        assert spec.file.format == "dpr-json" and spec.file.compression == "gzip"
        assert name in registry.registry("training-data")
    # the filtered training sizes of DPR's Table 1
    assert found["biencoder-nq-train"].examples == 58880 and found["biencoder-curatedtrec-train"].examples == 1125


def test_a_training_spec_is_checked_like_other_specs(tmp_path):
    from harness.data.catalog import read_training_spec
    from harness.errors import InputFileError

    path = tmp_path / "t.toml"
    base = 'name = "t"\ndescription = "d"\nurl = "https://x.org/t.json"\npath = "t.json"\nlicense = "l"\ncitation = "c"\n'
    path.write_text(base + 'format = "dpr-tsv"\n')
    with pytest.raises(InputFileError, match="'format' must be one of"):
        read_training_spec(path)
    path.write_text(base + 'format = "dpr-json"\nexamples = 0\n')
    with pytest.raises(InputFileError, match="'examples' must be positive"):
        read_training_spec(path)
    path.write_text(base + 'format = "dpr-json"\nsplit = "train"\n')
    with pytest.raises(InputFileError, match="unknown key 'split'"):
        read_training_spec(path)


def test_train_data_by_name_is_fetched_once_and_named_when_offline(capsys, tmp_path, data_dir, monkeypatch, test_registries):
    from harness.api import Passage, TrainingExample
    from harness.data.training import read_training_examples, write_training_examples
    from harness.plugins import loaded_plugins
    from harness.registry import KINDS, Registry
    from harness_builtins.training.settings import TrainSettings
    from harness_builtins.training.data import training_file as _training_file

    mirror = tmp_path / "mirror" / "toy-train.json.gz"
    mirror.parent.mkdir()
    examples = [TrainingExample(question=f"q{i}", answers=(f"a{i}",), positives=(Passage(id=f"p{i}", title="t", text=f"a{i}"),)) for i in range(3)]
    write_training_examples(mirror, examples)
    specs = tmp_path / "specs"
    (specs / "training").mkdir(parents=True)
    (specs / "training" / "toy-train.toml").write_text(
        f'name = "toy-train"\ndescription = "three questions"\nurl = "{mirror.as_uri()}"\npath = "toy/toy-train.json.gz"\n'
        'format = "dpr-json"\ncompression = "gzip"\nexamples = 3\nlicense = "l"\ncitation = "c"\n'
    )
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
    monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
    settings = TrainSettings(variant="dpr", data=[(Path("toy-train"), 1.0)], model="minilm", output=tmp_path / "out")
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    from harness.data.download import OfflineError

    with pytest.raises(OfflineError, match=f"download {mirror.as_uri()} and save it as {data_dir / 'toy' / 'toy-train.json.gz'}"):
        _training_file(Path("toy-train"), settings)
    monkeypatch.delenv("HARNESS_OFFLINE")
    assert main(["data", "fetch", "toy-train", "--no-progress"]) == 0
    assert "toy-train: downloaded, sha256 " in capsys.readouterr().out
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    path = _training_file(Path("toy-train"), settings)
    assert path == data_dir / "toy" / "toy-train.json.gz"
    assert [e.question for e in read_training_examples(path)] == ["q0", "q1", "q2"]
    with pytest.raises(harness.errors.HarnessError, match="no training set or suite of that name"):
        _training_file(Path("no-such-set"), settings)

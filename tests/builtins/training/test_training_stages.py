"""Training recipes of several runs: specialised question encoders (one per label over one frozen
passage index, searched by the part-aware ``specialised`` retriever) and two-stage synthetic
pre-training then fine-tuning; and the harness telling a part-aware retriever each question's part."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.api import Hit, InMemoryCorpus, Part, Passage, Question, Suite
from harness.cli.main import main
from harness.evaluate import evaluate_retriever, make_context

torch = pytest.importorskip("torch")



class PartEcho:
    """Ranks passage ``p-PART`` first for a question of part PART (``search`` knows no parts)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def parameters(self):
        return {}

    def index(self, corpus, context):
        pass

    def search(self, queries, k, context):
        return [[Hit(passage_id="p-none", score=1.0)] for _ in queries]

    def search_parts(self, queries, parts, k, context):
        self.calls.append(tuple(parts))
        return [[Hit(passage_id=f"p-{part}", score=1.0)] for part in parts]


def test_the_harness_tells_a_part_aware_retriever_each_questions_part(tmp_path):
    corpus = InMemoryCorpus("c", [Passage(id=f"p-{n}", title="", text=f"answer {n}") for n in ("a", "b", "none")])
    suite = Suite(name="s", corpus=corpus, parts=(
        Part(name="a", questions=(Question(id="1", text="q1", answers=("answer a",)), Question(id="2", text="q2", answers=("answer a",)))),
        Part(name="b", questions=(Question(id="3", text="q3", answers=("answer b",)),)),
    ))
    retriever = PartEcho()
    result = evaluate_retriever(retriever, suite, name="echo", plugin="test", k=[1], context=make_context(suite, cache_dir=tmp_path, show_progress=False)).result
    assert retriever.calls == [("a", "a", "b")]
    assert result["metrics"]["accuracy"]["macro"]["1"] == 1.0


COMMON = ["--batch-size", "4", "--max-question-length", "16", "--max-passage-length", "32", "--no-progress", "--pooling", "mean"]


def test_specialised_trains_one_question_encoder_per_label_and_searches_each_part_with_its_own(tiny, tmp_path, monkeypatch):
    from harness import registry
    from harness_builtins.dense.specialised import SpecialisedRetriever
    from helpers.training_models import weights

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "spec"
    assert main(["train", "--variant", "specialised", "--data", "demo-dev", "--corpus", "demo", "--model", str(tiny),
                 "--output", str(out), "--max-steps", "2", "--retrieve-k", "200", "--warmup-steps", "0", "--lr", "1e-3", *COMMON]) == 0
    record = json.loads((out / "harness_training.json").read_text())
    labels = sorted(record["labels"])
    assert len(labels) == 12 and "P19" in labels and record["steps"] == 24
    assert json.loads((out / "specialised.json").read_text())["labels"]["P19"] == "labels/P19"
    # one index for every label: embedded by the first run, reused by the other eleven
    builds = [record["labels"][label]["in_loop"]["builds"][0] for label in labels]
    assert len({b["cache"] for b in builds}) == 1 and sum(not b["reused"] for b in builds) == 1
    # each label's question encoder moved, passage encoders are byte-identical to the start's
    start = weights(out)
    p19 = weights(out / "labels" / "P19")
    assert all(torch.equal(p19[k], start[k]) for k in start if "document" in k and ".pooler." not in k)
    assert any(not torch.equal(p19[k], start[k]) for k in start if "query" in k)
    # the retriever: a P19 question is encoded by P19's encoder; an unseen part by the start's
    retriever = SpecialisedRetriever(path=str(out), device="cpu")
    suite = registry.load("suites", "demo", {}).value
    context = make_context(suite, cache_dir=tmp_path / "cache", show_progress=False)
    retriever.index(suite.corpus, context)
    questions = ["where was rin born?", "who founded acme?"]
    mixed = retriever.search_parts(questions, ["P19", "P17"], 5, context)
    by_p19 = retriever.base.search_vectors(retriever.encoder("P19").encode_queries(questions[:1]), 5)
    by_start = retriever.base.search_vectors(retriever.start.encode_queries(questions[1:]), 5)
    assert mixed == [by_p19[0], by_start[0]]
    assert retriever.counts == {"P19": 1, None: 1}
    # the checkpoint is not a single encoder
    assert main(["run", "--retriever", "trained", "-o", f"path={out}", "--suite", "demo", "--no-progress"]) == 2


def test_specialised_refuses_a_label_with_another_passage_encoder(tiny, tmp_path, monkeypatch, capsys):
    import shutil

    from harness_builtins.dense.specialised import SpecialisedRetriever

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "spec"
    assert main(["train", "--variant", "specialised-fix-passage", "--data", "demo-dev", "--model", str(tiny),
                 "--output", str(out), "--max-steps", "1", *COMMON]) == 0
    other = tmp_path / "other"
    assert main(["train", "--variant", "dpr", "--data", "demo-dev", "--model", str(tiny), "--output", str(other),
                 "--max-steps", "1", "--lr", "1e-2", *COMMON]) == 0
    shutil.rmtree(out / "labels" / "P19")
    shutil.copytree(other, out / "labels" / "P19")
    with pytest.raises(Exception, match="passage encoder differs"):
        SpecialisedRetriever(path=str(out), device="cpu")
    record = json.loads((out / "harness_training.json").read_text())
    record["labels"]["P19"]["folder"] = "../elsewhere"
    (out / "harness_training.json").write_text(json.dumps(record))
    with pytest.raises(Exception, match="outside"):
        SpecialisedRetriever(path=str(out), device="cpu")


def test_synthetic_pretrain_runs_two_resumable_stages(tiny, tmp_path, monkeypatch, capsys):
    from harness.data.training import write_training_examples
    from helpers.training_models import examples, weights

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    generated = tmp_path / "generated.json"
    write_training_examples(generated, examples())
    out = tmp_path / "two"
    base = ["train", "--variant", "synthetic-pretrain", "--data", "demo-dev", "--model", str(tiny), "--output", str(out), *COMMON]
    assert main(base + ["--max-steps", "2"]) == 2
    assert "give --pretrain-data" in capsys.readouterr().err
    assert main(base + ["--max-steps", "2", "--pretrain-data", str(generated), "--pretrain-max-steps", "3"]) == 0
    record = json.loads((out / "harness_training.json").read_text())
    stage = json.loads((out / "stages" / "pretrain" / "harness_training.json").read_text())
    assert stage["variant"] == "dpr" and stage["steps"] == 3 and stage["data"][0]["path"] == str(generated)
    assert record["steps"] == 2 and record["initial_model"] == str(tiny)
    assert record["pretraining"]["steps"] == 3 and record["pretraining"]["output"] == str(out / "stages" / "pretrain")
    assert record["settings"]["pretrained_from"] == str(out / "stages" / "pretrain")
    # the fine-tuned model started from the pre-trained one, not from the initial model
    assert any(not torch.equal(a, b) for a, b in zip(weights(out).values(), weights(out / "stages" / "pretrain").values()))
    # a one-stage variant refuses pre-training data
    assert main(["train", "--variant", "dpr", "--data", "demo-dev", "--model", str(tiny), "--output", str(tmp_path / "x"),
                 "--pretrain-data", str(generated), *COMMON]) == 2
    assert "two-stage variants" in capsys.readouterr().err


def test_an_interrupted_first_stage_resumes(tiny, tmp_path, monkeypatch):
    """A finished first stage is skipped on the rerun; the second stage resumes from the first's model."""
    from harness.data.training import write_training_examples
    from helpers.training_models import examples

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    generated = tmp_path / "generated.json"
    write_training_examples(generated, examples())
    out = tmp_path / "two"
    args = ["train", "--variant", "synthetic-pretrain", "--data", "demo-dev", "--model", str(tiny), "--output", str(out),
            "--max-steps", "1", "--pretrain-data", str(generated), "--pretrain-max-steps", "2", "--save-steps", "1", *COMMON]
    assert main(args) == 0
    first = (out / "stages" / "pretrain" / "harness_training.json").read_bytes()
    (out / "harness_training.json").unlink()
    import shutil

    shutil.rmtree(out / "model")
    assert main(args + ["--resume"]) == 0
    assert (out / "stages" / "pretrain" / "harness_training.json").read_bytes() == first
    assert json.loads((out / "harness_training.json").read_text())["pretraining"]["steps"] == 2
    np.testing.assert_equal(True, (out / "model" / "modules.json").is_file())


def test_a_broken_training_record_is_a_one_line_error(tmp_path):
    """Every reader opens a checkpoint through one reader: a damaged record is one line naming the
    file, a label folder outside the checkpoint is refused."""
    from harness.errors import InputFileError
    from harness.results.checkpoint import Checkpoint, write_checkpoint_record
    from harness_builtins.dense.specialised import read_map

    (tmp_path / "harness_training.json").write_text('{"schema": "harness-training/1", "labels": {')
    with pytest.raises(InputFileError, match=r"harness_training.json:1: invalid JSON"):
        read_map(tmp_path)
    (tmp_path / "harness_training.json").write_bytes(b"\xff\xfe")
    with pytest.raises(InputFileError, match=r"unreadable training record"):
        Checkpoint.read(tmp_path, model=False)
    record = {"variant": "specialised", "recipe": {}, "settings": {}, "initial_model": "m", "data": [], "format": "text",
              "seed": 1, "steps": 2, "labels": {"P19": {"folder": "../P19"}}}
    write_checkpoint_record(tmp_path, record)
    assert json.loads((tmp_path / "specialised.json").read_text())["labels"] == {"P19": "../P19"}
    with pytest.raises(InputFileError, match="outside"):
        Checkpoint.read(tmp_path, model=False).label_folders()
    with pytest.raises(Exception, match="'steps' is missing"):
        write_checkpoint_record(tmp_path, {**record, "steps": None})


def test_specialised_keeps_one_passage_index_and_one_label_encoder_at_a_time(tiny_models, tmp_path, monkeypatch):  # noqa: F811
    """The corpus is indexed once; a label's question encoder is released (unreachable after a
    garbage collection) before the next label's is loaded."""
    import gc
    import shutil
    import weakref

    from helpers.dense_models import corpus_of
    from helpers.dense_suite import PASSAGES

    from harness_builtins.dense.encoders import SentenceTransformerEncoder
    from harness_builtins.dense.index import DenseIndex
    from harness_builtins.dense.specialised import SpecialisedRetriever

    out = tmp_path / "spec"
    record = {"schema": "harness-training/1", "variant": "specialised", "format": "title_text",
              "initial_model": "tiny", "data": [], "seed": 0}
    for directory in (out, *(out / "labels" / label for label in "abc")):
        shutil.copytree(tiny_models.st, directory / "model")
        labels = {label: {"folder": f"labels/{label}"} for label in "abc"} if directory == out else None
        (directory / "harness_training.json").write_text(json.dumps({**record, "labels": labels}))

    models: list[tuple[str, weakref.ref]] = []  # (label, or "start"; the loaded model)
    labels_alive_at_load: list[list[str]] = []
    indexes: list[weakref.ref] = []
    original_load, original_build = SentenceTransformerEncoder.load, DenseIndex.build

    def load(self):
        fresh = self._model is None
        if fresh:
            gc.collect()
            labels_alive_at_load.append([label for label, ref in models if label != "start" and ref() is not None])
        original_load(self)
        if fresh:
            label = Path(self.ref.name_or_path).parent.name
            models.append((label if label in "abc" else "start", weakref.ref(self._model)))

    def build(cls, *args, **kwargs):
        index = original_build(*args, **kwargs)
        indexes.append(weakref.ref(index))
        return index

    monkeypatch.setattr(SentenceTransformerEncoder, "load", load)
    monkeypatch.setattr(DenseIndex, "build", classmethod(build))
    questions = [Question(id=f"q{i}", text=text, answers=(answer,)) for i, (text, answer) in enumerate(
        [("What is the capital of France?", "Paris"), ("Where is Berlin?", "Germany"), ("What colour is a banana?", "yellow"),
         ("What is salt made of?", "sodium chloride"), ("What is the highest mountain?", "Everest")])]
    suite = Suite(name="tiny", corpus=corpus_of(PASSAGES), parts=(
        Part(name="a", questions=tuple(questions[:2])), Part(name="b", questions=(questions[2],)),
        Part(name="c", questions=(questions[3],)), Part(name="unlabelled", questions=(questions[4],))))
    retriever = SpecialisedRetriever(path=str(out), device="cpu")
    context = make_context(suite, cache_dir=tmp_path / "cache", show_progress=False)
    for _ in range(2):  # a second evaluation reuses the index
        evaluate_retriever(retriever, suite, name="specialised", plugin="dense", k=[1], context=context)
    assert len(indexes) == 1
    assert labels_alive_at_load == [[]] * len(models)
    # the second evaluation's batch starts with c's questions, its encoder still loaded
    assert [label for label, _ in models] == ["start", "a", "b", "c", "a", "b"]
    gc.collect()
    assert [label for label, ref in models if ref() is not None] == ["start", "b"]
    assert retriever.counts == {"a": 4, "b": 2, "c": 2, None: 2}

"""UPR with a tiny T5 built here and loaded like a hub id: the tokenizer is fed UPR's code's exact
prompt and target (the question mark by suite), scores equal a log-likelihood computed by
hand from the model's logits, batching and order do not change them, ties keep first-stage order,
the disk cache returns identical scores and is never shared across models or prompts (and several
processes re-ranking into one cache get a single process's scores), several model replicas score
exactly as one, in order, the device option is checked, and a re-ranked BM25 run on the demo suite
reaches the leaderboard as a chain recording the scores' precision (and its compute block the devices)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from harness.api import Candidate, Hit, Passage, RunContext
from helpers.upr_fakes import Recording

PASSAGES = [
    ("Banana", "The banana is a long yellow fruit that grows in bunches in warm countries."),
    ("Oak", "The oak is a large tree whose fruit is the acorn."),
    ("Salt", "Table salt is sodium chloride, a mineral used to season food. " * 3),
    ("Carrot", "Orange root."),
    ("Lemon", "The lemon is a sour yellow citrus fruit used for juice."),
]
QUESTION = "what colour is a banana"


@pytest.fixture(scope="session")
def t5_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5")


@pytest.fixture(scope="session")
def other_t5_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5-other", seed=1)


def upr(model, **options):
    from harness import registry

    return registry.load("rerankers", "upr", {"model": str(model), **options}).value


def by_hand(model, tokenizer, question, title, text, mark=""):
    """log p("Question: {question}{mark}" | "Passage:  {title} {text}. Please ...") from the logits
    (UPR's strings: ``mark`` is "?" on NQ and EfficientQA)."""
    import torch

    source = tokenizer(f"Passage:  {title} {text}. Please write a question based on this passage.",
                       return_tensors="pt", truncation=True, max_length=512)
    labels = tokenizer(f"Question: {question}{mark}", return_tensors="pt").input_ids
    start = torch.tensor([[model.config.decoder_start_token_id]])
    decoder = torch.cat([start, labels[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=source.input_ids, attention_mask=source.attention_mask, decoder_input_ids=decoder).logits
    logprobs = torch.log_softmax(logits[0].double(), dim=-1)
    return float(sum(logprobs[i, token] for i, token in enumerate(labels[0].tolist())))


def candidates(passages=PASSAGES, prefix="p"):
    return [Candidate(hit=Hit(passage_id=f"{prefix}{i}", score=10.0 - i), passage=Passage(id=f"{prefix}{i}", title=t, text=x))
            for i, (t, x) in enumerate(passages)]


def test_scores_equal_the_log_likelihood_computed_by_hand(t5_dir):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    reranker = upr(t5_dir, batch_size=2)
    scores = reranker.score(QUESTION, PASSAGES)
    model = AutoModelForSeq2SeqLM.from_pretrained(t5_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(t5_dir)
    expected = [by_hand(model, tokenizer, QUESTION, t, x) for t, x in PASSAGES]
    assert scores == pytest.approx(expected, abs=1e-4)
    assert all(s < 0 for s in scores) and len(set(scores)) == len(scores)
    on_nq = reranker.score(QUESTION, PASSAGES, suite="nq")
    assert on_nq == pytest.approx([by_hand(model, tokenizer, QUESTION, t, x, "?") for t, x in PASSAGES], abs=1e-4)


def test_other_templates_are_scored_as_given(t5_dir):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from harness_builtins.common.seq2seq import question_log_likelihoods

    model = AutoModelForSeq2SeqLM.from_pretrained(t5_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(t5_dir)
    bare = upr(t5_dir, question_target="{question}", question_mark=False).score(QUESTION, PASSAGES[:2])
    assert bare == question_log_likelihoods(model, tokenizer, QUESTION, PASSAGES[:2], target_template="{question}",
                                            question_mark=False)
    assert bare != upr(t5_dir).score(QUESTION, PASSAGES[:2])


def test_batching_and_order_do_not_change_scores(t5_dir):
    reranker = upr(t5_dir)
    base = reranker.score(QUESTION, PASSAGES)
    for batch_size in (1, 3, 64):
        reranker.batch_size = batch_size
        assert reranker.score(QUESTION, PASSAGES) == pytest.approx(base, abs=1e-5)
    assert reranker.score(QUESTION, PASSAGES[::-1]) == pytest.approx(base[::-1], abs=1e-5)


def test_the_target_ends_with_a_question_mark_once():
    from harness_builtins.common.seq2seq import question_target

    assert question_target("who wrote hamlet", question_mark=True) == "Question: who wrote hamlet?"
    assert question_target("who wrote hamlet?", question_mark=True) == "Question: who wrote hamlet?"
    assert question_target("who wrote hamlet", question_mark=False) == "Question: who wrote hamlet"
    assert question_target("who wrote hamlet") == "Question: who wrote hamlet"  # as ART, and UPR off NQ




def test_the_tokenizer_is_fed_upr_s_exact_strings(tmp_path, t5_dir):
    """The default prompt and target are UPR's code, branch ``main`` (commit a05d296) of
    DevSinghSachan/unsupervised-passage-reranking:

    ``upr.py`` line 103::

        ids = "{} {} {}. {}".format(self.args.verbalizer_head, title, text, self.args.verbalizer)

    with (``upr.py`` lines 316-320) ``--verbalizer`` default ``"Please write a question based on
    this passage."`` and ``--verbalizer-head`` default ``"Passage: "`` (so two spaces follow the
    colon); ``utils/openqa_dataset.py`` lines 34-38 and 51::

        if "trivia" in filepath or 'webq' in filepath or 'entity-questions' in filepath \\
                or "BEIR" in filepath or "squad" in filepath:
            self.ques_punc = ""
        elif "nq" in filepath or "efficientqa" in filepath:
            self.ques_punc = "?"
        ...
        decoder_prompt = "Question: {}{}".format(row['question'], self.ques_punc)

    The re-ranker learns the suite from its run context (``question_mark: auto``)."""
    title, text = PASSAGES[3]
    prompt = "Passage:  Carrot Orange root.. Please write a question based on this passage."
    assert prompt == "{} {} {}. {}".format("Passage: ", title, text, "Please write a question based on this passage.")
    for suite, target in (("nq", "Question: what colour is a banana?"), ("efficientqa-dev", "Question: what colour is a banana?"),
                          ("trivia", "Question: what colour is a banana"), ("entityquestions", "Question: what colour is a banana"),
                          (None, "Question: what colour is a banana")):
        reranker = upr(t5_dir, cache=False)
        reranker._loaded()
        reranker._tokenizer = spy = Recording(reranker._tokenizer)
        reranker.rerank([QUESTION], [candidates([PASSAGES[3]])], RunContext(cache_dir=tmp_path, progress=False, suite=suite))
        assert spy.texts == [target, prompt], suite
        assert reranker.parameters()["question_mark"] is target.endswith("?")
    # the options reach the other variants: "?" on every suite, and this harness's earlier prompt
    old = upr(t5_dir, cache=False, question_mark=True,
              passage_prompt="Passage: {title} {text}. Please write a question based on this passage.")
    old._loaded()
    old._tokenizer = spy = Recording(old._tokenizer)
    old.rerank([QUESTION], [candidates([PASSAGES[3]])], RunContext(cache_dir=tmp_path, progress=False, suite="trivia"))
    assert spy.texts == ["Question: what colour is a banana?",
                         "Passage: Carrot Orange root.. Please write a question based on this passage."]


def test_the_question_mark_follows_upr_s_rule_for_every_suite():
    """UPR adds "?" for NQ and EfficientQA questions only (``utils/openqa_dataset.py``)."""
    from harness import registry
    from harness_builtins.common.seq2seq import reference_question_mark

    marked = {name for name in registry.suites().names() if reference_question_mark(name)}
    assert {"nq", "nq-dev", "nq-open", "nq-open-dev", "efficientqa-dev"} <= marked
    assert all(name.startswith(("nq", "efficientqa")) for name in marked)
    for name in ("trivia", "trivia-dev", "wq", "squad", "entityquestions", "curated", "demo", "", None):
        assert not reference_question_mark(name)


def test_auto_keeps_one_cache_per_question_mark_and_records_the_mark_used(tmp_path, t5_dir):
    cands = candidates()
    nq = upr(t5_dir)
    assert nq.parameters()["question_mark"] == "auto"
    nq.rerank([QUESTION], [cands], RunContext(cache_dir=tmp_path, progress=False, suite="nq"))
    assert nq.parameters()["question_mark"] is True and nq.counts == [5, 0]
    marked = upr(t5_dir, question_mark=True)  # the same scores: read from the cache
    marked.rerank([QUESTION], [cands], RunContext(cache_dir=tmp_path, progress=False, suite="trivia"))
    assert marked.counts == [0, 5] and marked.parameters() == nq.parameters()
    trivia = upr(t5_dir)
    trivia.rerank([QUESTION], [cands], RunContext(cache_dir=tmp_path, progress=False, suite="trivia"))
    assert trivia.counts == [5, 0] and trivia.parameters()["question_mark"] is False
    assert len(list((tmp_path / "rerank" / "upr").glob("*.sqlite"))) == 2


def test_ties_keep_first_stage_order(tmp_path, t5_dir):
    from harness.scoring.rerank import rerank_rankings

    same = [PASSAGES[1], PASSAGES[0], PASSAGES[0], PASSAGES[1]]  # equal texts score equally
    cands = candidates(same)
    passages = {c.passage_id: c.passage for c in cands}
    (ranking,) = rerank_rankings(upr(t5_dir), [QUESTION], ["q"], [[c.hit for c in cands]], 10,
                                 RunContext(cache_dir=tmp_path, progress=False), name="upr", passage=passages.__getitem__)
    ids = [h.passage_id for h in ranking]
    assert ids in (["p1", "p2", "p0", "p3"], ["p0", "p3", "p1", "p2"])


def test_the_cache_returns_identical_scores_and_scores_only_what_is_new(tmp_path, t5_dir):
    context = RunContext(cache_dir=tmp_path, progress=False)
    cands = candidates()
    first = upr(t5_dir)
    shallow = first.rerank([QUESTION], [cands[:3]], context)
    assert first.counts == [3, 0]
    deeper = first.rerank([QUESTION], [cands], context)
    assert first.counts == [5, 3]  # only the two new passages were scored
    again = upr(t5_dir)  # a new run: nothing scored, the model never loaded
    repeated = again.rerank([QUESTION], [cands], context)
    assert again.counts == [0, 5] and again._model is None
    assert [h.score for h in repeated[0]] == [h.score for h in deeper[0]]  # bit for bit
    assert [h.score for h in shallow[0]] == [h.score for h in deeper[0]][:3]
    fresh = upr(t5_dir, cache=False).rerank([QUESTION], [cands], context)
    assert [h.score for h in fresh[0]] == pytest.approx([h.score for h in deeper[0]], abs=1e-5)


def test_an_interrupted_reranking_resumes_from_the_cache(tmp_path, t5_dir):
    context = RunContext(cache_dir=tmp_path, progress=False)
    questions = [QUESTION, "who planted the oak", "what is salt"]
    broken = upr(t5_dir)
    real = broken.score_each

    def interrupted(items, **options):
        for (question, _), scores in zip(items, real(items, **options)):
            if question == questions[2]:
                raise KeyboardInterrupt
            yield scores

    broken.score_each = interrupted
    with pytest.raises(KeyboardInterrupt):
        broken.rerank(questions, [candidates()] * 3, context)
    resumed = upr(t5_dir)
    resumed.rerank(questions, [candidates()] * 3, context)
    assert resumed.counts == [5, 10]  # only the third question is scored again


def test_the_cache_is_keyed_by_model_prompt_settings_and_passage_text(tmp_path, t5_dir, other_t5_dir):
    context = RunContext(cache_dir=tmp_path, progress=False)
    cands = candidates()
    upr(t5_dir).rerank([QUESTION], [cands], context)
    others = (upr(other_t5_dir), upr(t5_dir, question_mark=True), upr(t5_dir, max_passage_length=16),
              upr(t5_dir, question_target="{question}"), upr(t5_dir, passage_prompt="{title}: {text}"))
    for other in others:
        other.rerank([QUESTION], [cands], context)
        assert other.counts == [5, 0]
    assert len(list((tmp_path / "rerank" / "upr").glob("*.sqlite"))) == 6
    edited = candidates([(t, x + " Edited.") for t, x in PASSAGES])  # same ids, other text
    again = upr(t5_dir)
    again.rerank([QUESTION], [edited], context)
    assert again.counts == [5, 0]
    again.rerank(["another question"], [cands], context)
    assert again.counts == [10, 0]


def test_a_damaged_cache_is_set_aside_and_rebuilt(tmp_path, t5_dir, capsys):
    context = RunContext(cache_dir=tmp_path, progress=False)
    cands = candidates()
    reranker = upr(t5_dir)
    reranker.rerank([QUESTION], [cands], context)
    for cache in reranker._caches.values():
        cache.close()
    (path,) = (tmp_path / "rerank" / "upr").glob("*.sqlite")
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_bytes(b"not a database" * 100)
    again = upr(t5_dir)
    again.rerank([QUESTION], [cands], context)
    assert again.counts == [5, 0]
    assert "score cache" in capsys.readouterr().err
    assert path.with_name(path.name + ".damaged").exists()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 5


def test_bad_options_are_one_line_errors(t5_dir):
    from harness import registry
    from harness.errors import HarnessError

    for options, fragment in (
        ({"model": str(t5_dir), "precision": "fp8"}, "precision must be one of"),
        ({"model": str(t5_dir), "precision": "fp16"}, "fp16 needs a GPU"),
        ({"model": str(t5_dir), "batch_size": 0}, "re-ranker 'upr': option batch_size must be an integer from 1 to 65536 or null, got 0"),
        ({"model": str(t5_dir), "question_target": "Q: {q}"}, "question_target must be text using exactly {question}"),
        ({"model": str(t5_dir), "passage_prompt": "{text"}, "option passage_prompt must be text using exactly {title}, {text}, got '{text'"),
        ({"model": str(t5_dir), "question_mark": "maybe"}, "option question_mark must be true, false or auto, got 'maybe'"),
        ({"model": str(t5_dir), "cache": "maybe"}, "option cache must be true or false, got 'maybe'"),
        ({"model": str(t5_dir), "max_passage_length": 0}, "option max_passage_length must be an integer from 1 to 131072, got 0"),
        ({"model": ""}, "a model name or directory is required"),
        ({"model": str(t5_dir), "device": "bogus"}, "device must be auto, cpu, cuda or cuda:N, got 'bogus'"),
        ({"model": str(t5_dir), "device": 3}, "device must be auto, cpu, cuda or cuda:N, or a list of devices, got 3"),
        ({"model": str(t5_dir), "device": []}, "device must be auto, cpu, cuda or cuda:N, or a list of devices"),
        ({"model": str(t5_dir), "device": "cpu,auto"}, "device: a list must name single devices"),
        ({"model": str(t5_dir), "device": "cpu,gpu"}, "device must be auto, cpu, cuda or cuda:N, got 'gpu'"),
    ):
        with pytest.raises(HarnessError, match=fragment) as caught:
            registry.load("rerankers", "upr", options)
        assert "\n" not in str(caught.value)
    missing = registry.load("rerankers", "upr", {"model": str(t5_dir.parent / "nope")}).value
    with pytest.raises(HarnessError, match="cannot load sequence-to-sequence model"):
        missing.score(QUESTION, PASSAGES[:1])


def test_bad_gpu_devices_are_one_line_errors_without_a_gpu(t5_dir, monkeypatch):
    import torch

    from harness.errors import HarnessError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device in ("cuda", "cuda:0", "cpu,cuda:1"):
        with pytest.raises(HarnessError, match="was asked for but torch sees no GPU") as caught:
            upr(t5_dir, device=device)
        assert "\n" not in str(caught.value) and str(caught.value).startswith("device: ")
    assert upr(t5_dir).devices == ["cpu"]


def test_the_device_option_picks_gpus(monkeypatch):
    """``auto`` and ``cuda``: every GPU torch sees; ``cuda:N``: that one; a list: those (with
    torch told it sees four GPUs)."""
    import torch

    from harness.errors import HarnessError
    from harness_builtins.common.devices import resolve_devices

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    every = ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert resolve_devices("auto") == every and resolve_devices(None) == every and resolve_devices("cuda") == every
    assert resolve_devices("cuda:2") == ["cuda:2"]
    assert resolve_devices("cuda:3, cuda:1") == ["cuda:3", "cuda:1"] == resolve_devices(["cuda:3", "cuda:1"])
    assert resolve_devices("cpu") == ["cpu"]
    for device, fragment in (
        ("cuda:4", "device: 'cuda:4' was asked for but torch sees 4 GPUs (cuda:0 to cuda:3)"),
        ("cuda:0,cpu", "device: cannot mix devices of kinds cpu and cuda"),
        ("cuda,cuda:1", "device: a list must name single devices"),
    ):
        with pytest.raises(HarnessError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            resolve_devices(device)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert resolve_devices("auto") == ["cpu"]


QUESTIONS = [QUESTION, "who planted the oak", "what is salt", "is a carrot orange", "how sour is a lemon"]


def test_replicas_score_exactly_as_one_device_in_order(t5_dir, monkeypatch):
    """Two (and three) CPU replicas, each batch scored by whichever replica is free: the scores of
    every question equal one replica's bit for bit, in the passages' order, and each replica
    scored some of the batches."""
    import harness_builtins.common.seq2seq as module

    items = [(q, PASSAGES[n:] + PASSAGES[:n]) for n, q in enumerate(QUESTIONS)]
    one = upr(t5_dir, device="cpu", batch_size=2)
    expected = list(one.score_each(items))
    assert len(expected) == len(items) and [len(e) for e in expected] == [len(PASSAGES)] * len(items)

    real, used = module._score_batch, []

    def spied(model, prepared, chunk):
        used.append(id(model))
        time.sleep(0.01)  # long enough that every replica takes batches
        return real(model, prepared, chunk)

    monkeypatch.setattr(module, "_score_batch", spied)
    for device in ("cpu,cpu", ["cpu", "cpu", "cpu"]):
        used.clear()
        many = upr(t5_dir, device=device, batch_size=2)
        assert list(many.score_each(items)) == expected
        assert set(used) == {id(m) for m in many._models} and len(many._models) == len(many.devices)
        assert many.score(QUESTION, PASSAGES) == expected[0]
        assert many.counts == [len(items) * len(PASSAGES) + len(PASSAGES), 0]
    reranked = upr(t5_dir, device="cpu,cpu", batch_size=2, cache=False).rerank(
        QUESTIONS, [candidates(p) for _, p in items], RunContext(cache_dir=Path("unused"), progress=False))
    assert [[h.score for h in hits] for hits in reranked] == expected


def test_a_failing_replica_is_raised_and_every_replica_stops(t5_dir, monkeypatch):
    import harness_builtins.common.seq2seq as module

    real, calls = module._score_batch, []

    def failing(model, prepared, chunk):
        calls.append(chunk)
        if len(calls) == 3:
            raise RuntimeError("out of memory on one replica")
        return real(model, prepared, chunk)

    monkeypatch.setattr(module, "_score_batch", failing)
    many = upr(t5_dir, device="cpu,cpu", batch_size=1)
    with pytest.raises(RuntimeError, match="out of memory on one replica"):
        list(many.score_each([(q, PASSAGES) for q in QUESTIONS]))
    assert not [t for t in threading.enumerate() if t.name.startswith("upr-replica-")]
    assert len(calls) < len(QUESTIONS) * len(PASSAGES)  # the others stopped taking batches
    monkeypatch.setattr(module, "_score_batch", real)
    scored = many.score_each([(q, PASSAGES) for q in QUESTIONS])
    next(scored)
    scored.close()  # a consumer that stops early stops the replicas
    assert not [t for t in threading.enumerate() if t.name.startswith("upr-replica-")]


def test_the_parameters_record_precision_and_compute_the_devices(t5_dir):
    from harness.evaluate import Second, compute_record

    one = upr(t5_dir)
    assert one.parameters()["precision"] == "fp32" and "devices" not in one.parameters()
    assert one.compute() == {"score_device": "cpu", "score_devices": 1, "score_precision": "fp32"}
    two = upr(t5_dir, device="cpu,cpu", precision="bf16")
    record = Second(two, name="upr", plugin="rerank", depth=5).record()
    assert record["parameters"]["precision"] == "bf16"
    assert record["parameters"] == {**one.parameters(), "precision": "bf16"}  # one row whatever the devices
    assert compute_record(object(), two)["reranker"] == {"score_device": "cpu", "score_devices": 2, "score_precision": "bf16"}
    json.dumps(record)
    assert two.cache_config() == upr(t5_dir, precision="bf16").cache_config()  # devices do not change scores


def _rerank_into(cache_dir: str, model: str, questions: list, threads: int, start, results) -> None:
    """Re-rank ``questions`` (each with its passages rotated) with UPR into ``cache_dir``, with as
    many torch threads as the test (a float sum's rounding depends on how it is split)."""
    try:
        import torch

        torch.set_num_threads(threads)
        reranker = upr(model, batch_size=1)
        context = RunContext(cache_dir=Path(cache_dir), progress=False)
        start.wait()
        for n, question in questions:
            reranker.rerank([question], [candidates(PASSAGES[n:] + PASSAGES[:n], prefix=f"q{n}-")], context)
        results.put(("ok", reranker.counts))
    except BaseException as exc:  # reported to the test, which fails on it
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_several_processes_rerank_into_one_cache(tmp_path, t5_dir):
    """Three processes re-rank overlapping questions into one cache at once: no error, every pair
    stored once, and the cached scores are those of one process scoring everything without a cache
    (batches of one passage, so a pair's score never depends on its batch)."""
    import multiprocessing

    import torch

    numbered = list(enumerate(QUESTIONS))
    shares = [numbered[0:3], numbered[1:4], numbered[2:5] + numbered[:1]]
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(len(shares)), ctx.Queue()
    cache_dir = tmp_path / "cache"
    processes = [ctx.Process(target=_rerank_into, args=(str(cache_dir), str(t5_dir), share, torch.get_num_threads(), start, results))
                 for share in shares]
    for process in processes:
        process.start()
    reports = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert all(kind == "ok" for kind, _ in reports), reports
    assert sum(counts[0] + counts[1] for _, counts in reports) == sum(len(s) for s in shares) * len(PASSAGES)
    (path,) = (cache_dir / "rerank" / "upr").glob("*.sqlite")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == len(QUESTIONS) * len(PASSAGES)
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"

    context = RunContext(cache_dir=cache_dir, progress=False)
    cands = [candidates(PASSAGES[n:] + PASSAGES[:n], prefix=f"q{n}-") for n, _ in numbered]
    cached = upr(t5_dir, batch_size=1)
    from_cache = cached.rerank(QUESTIONS, cands, context)
    assert cached.counts == [0, len(QUESTIONS) * len(PASSAGES)]
    fresh = upr(t5_dir, batch_size=1, cache=False).rerank(QUESTIONS, cands, context)
    assert [[(h.passage_id, h.score) for h in hits] for hits in from_cache] == \
        [[(h.passage_id, h.score) for h in hits] for hits in fresh]


@pytest.mark.slow  # BM25 and a T5 over the whole demo suite: about 20 s
def test_bm25_on_demo_reranked_by_upr_reaches_the_leaderboard(tmp_path, t5_dir, capsys):
    import torch

    from harness.cli.main import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 1,008 tiny forward passes: one thread avoids spinning on a busy machine
    try:
        _bm25_on_demo_reranked(tmp_path, t5_dir, capsys, main)
    finally:
        torch.set_num_threads(threads)


def _bm25_on_demo_reranked(tmp_path, t5_dir, capsys, main):

    results = tmp_path / "results"
    code = main(["run", "--retriever", "bm25", "--suite", "demo", "--k", "1,5", "--rerank", "upr",
                 "--rerank-depth", "5", "-R", f"model={t5_dir}", "--no-progress",
                 "--results-dir", str(results), "--cache-dir", str(tmp_path / "cache")])
    out, err = capsys.readouterr()
    assert code == 0, err
    (path,) = results.glob("demo--bm25+upr--*.json")
    data = json.loads(path.read_text())
    assert data["retriever"]["name"] == "bm25" and data["retriever"]["parameters"]["k1"] == 0.9
    reranker = data["reranker"]
    assert reranker["name"] == "upr" and reranker["plugin"] == "rerank" and reranker["depth"] == 5
    assert reranker["parameters"]["model"].startswith("tiny-t5 (sha256:")
    assert reranker["parameters"]["precision"] == "fp32"
    assert reranker["parameters"]["question_mark"] is False  # auto on demo: UPR adds "?" on NQ and EfficientQA only
    assert data["compute"]["reranker"] == {"score_device": "cpu", "score_devices": 1, "score_precision": "fp32"}
    board = tmp_path / "LB.md"
    assert main(["leaderboard", "--results-dir", str(results), "--output", str(board)]) == 0
    assert "| bm25 » upr(tiny-t5, top-5) " in board.read_text()
    assert main(["leaderboard", "--results-dir", str(results), "--output", str(board), "--check"]) == 0

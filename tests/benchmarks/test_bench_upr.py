"""UPR scoring throughput: :func:`question_log_likelihoods` against plain transformers loops over the
same (question, passage) pairs in the same run.

Skipped by default; run with::

    python -m pytest tests/benchmarks/test_bench_upr.py --benchmark-only -s

The model is a random T5 with t5-small's shape (``HARNESS_BENCH_UPR_SIZE=small``, the default:
d_model 512, 6 + 6 layers, 8 heads, d_ff 2048; ``tiny``: d_model 32, 2 + 2 layers) and the
bert-base-uncased WordPiece vocabulary (30,522 tokens); weights do not change the cost. The pairs
are ``HARNESS_BENCH_UPR_QUESTIONS`` (default 6) demo questions, each with
``HARNESS_BENCH_UPR_PASSAGES`` (default 48) demo passages of mixed length: passages with UPR's
prompt, at most 512 tokens; targets ``Question: ...?``. Three ways, alternating question by
question so that load from other processes on a shared machine hits each alike:

- ``upr``: the scorer (the question tokenised once, passages sorted by length in batches of 16,
  each padded to its longest, ``inference_mode``; bf16 on GPU, fp32 on CPU);
- ``plain``: one pair per forward pass (``model(input_ids, labels=...)``, log-softmax of the
  logits), fp32, ``no_grad``;
- ``original``: as UPR's reference code does it: a question's passages padded to the longest of
  them (``pad_to_multiple_of=8``), in shards of 16 in retrieval order, fp32, ``no_grad``.

Every way must give the same scores (within 1e-4 of each other).
"""

from __future__ import annotations

import itertools
import json
import os
import time

import numpy as np
import pytest

N_QUESTIONS = int(os.environ.get("HARNESS_BENCH_UPR_QUESTIONS", "6"))
N_PASSAGES = int(os.environ.get("HARNESS_BENCH_UPR_PASSAGES", "48"))
SIZE = os.environ.get("HARNESS_BENCH_UPR_SIZE", "small")
BATCH = 16
SHAPES = {
    "small": dict(d_model=512, d_ff=2048, d_kv=64, num_layers=6, num_decoder_layers=6, num_heads=8),
    "tiny": dict(d_model=32, d_ff=64, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=2),
}


@pytest.fixture(scope="module")
def model_and_pairs(tmp_path_factory):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, T5Config, T5ForConditionalGeneration

    from harness.registry import suites
    from helpers.dense_models import save_tokenizer

    directory = tmp_path_factory.mktemp("upr-bench") / f"t5-{SIZE}"
    save_tokenizer(directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    config = T5Config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id, **SHAPES[SIZE])
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(directory)
    model = AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
    suite = suites().get("demo").load()
    corpus = list(itertools.islice(suite.corpus, 2000))
    rng = np.random.default_rng(0)
    work = []
    for question in suite.questions[:N_QUESTIONS]:
        chosen = rng.choice(len(corpus), size=N_PASSAGES, replace=False)
        passages = []
        for i in chosen:  # mixed lengths, as a first stage's passages are: 20 to 150 words
            words = corpus[i].text.split()
            passages.append((corpus[i].title, " ".join(words[: int(rng.integers(20, 150))])))
        work.append((question.text, passages))
    return model, tokenizer, work


def plain_loop(model, tokenizer, question, passages):
    import torch

    from harness_builtins.common.seq2seq import passage_prompt, question_target

    labels = tokenizer(question_target(question), max_length=128, truncation=True, return_tensors="pt").input_ids
    out = []
    with torch.no_grad():
        for title, text in passages:
            source = tokenizer(passage_prompt(title, text), max_length=512, truncation=True, return_tensors="pt")
            logits = model(input_ids=source.input_ids, attention_mask=source.attention_mask, labels=labels).logits
            out.append(float(torch.log_softmax(logits.float(), -1).gather(2, labels.unsqueeze(2)).sum()))
    return out


def original_loop(model, tokenizer, question, passages):
    import torch

    from harness_builtins.common.seq2seq import passage_prompt, question_target

    source = tokenizer([passage_prompt(t, x) for t, x in passages], padding="longest", max_length=512,
                       pad_to_multiple_of=8, truncation=True, return_tensors="pt")
    labels = tokenizer(question_target(question), max_length=128, truncation=True, return_tensors="pt").input_ids
    labels = labels.repeat(len(passages), 1)
    out = []
    with torch.no_grad():
        for start in range(0, len(passages), BATCH):
            view = slice(start, start + BATCH)
            logits = model(input_ids=source.input_ids[view], attention_mask=source.attention_mask[view], labels=labels[view]).logits
            nll = -torch.log_softmax(logits.float(), -1).gather(2, labels[view].unsqueeze(2)).squeeze(2)
            out.extend((-nll.sum(1)).tolist())
    return out


@pytest.mark.benchmark(group="upr")
def test_bench_upr_scoring_throughput(benchmark, model_and_pairs):
    import torch

    from harness_builtins.common.seq2seq import question_log_likelihoods

    model, tokenizer, work = model_and_pairs
    ways = {
        "upr": lambda q, p: question_log_likelihoods(model, tokenizer, q, p, batch_size=BATCH),
        "plain": lambda q, p: plain_loop(model, tokenizer, q, p),
        "original": lambda q, p: original_loop(model, tokenizer, q, p),
    }
    for run in ways.values():  # warm up
        run(work[0][0], work[0][1][:4])

    def measure():
        seconds = dict.fromkeys(ways, 0.0)
        scores: dict[str, list[float]] = {name: [] for name in ways}
        for question, passages in work:
            for name, run in ways.items():
                t0 = time.perf_counter()
                scores[name].extend(run(question, passages))
                seconds[name] += time.perf_counter() - t0
        return seconds, scores

    seconds, scores = benchmark.pedantic(measure, rounds=1, iterations=1)
    np.testing.assert_allclose(scores["upr"], scores["plain"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(scores["original"], scores["plain"], atol=1e-4, rtol=0)
    pairs = N_QUESTIONS * N_PASSAGES
    figures = {
        "model": f"t5-{SIZE} shape, random",
        "pairs": pairs,
        **{f"{name}_pairs_s": round(pairs / s, 1) for name, s in seconds.items()},
        "speedup_vs_plain": round(seconds["plain"] / seconds["upr"], 2),
        "speedup_vs_original": round(seconds["original"] / seconds["upr"], 2),
        "max_abs_diff_vs_plain": float(np.max(np.abs(np.subtract(scores["upr"], scores["plain"])))),
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
    }
    if benchmark.stats is not None:
        benchmark.extra_info.update(figures)
    print("\n[upr scoring] " + json.dumps(figures))

"""GPU benchmarks: every GPU path of the harness at full size, no downloads. Skipped without CUDA.

Run all of them (on a CUDA machine; each part stays under 10 minutes on one H100)::

    HARNESS_BENCH_OUT=gpu.jsonl python -m pytest tests/benchmarks/test_gpu.py -m gpu -s -p no:cacheprovider

Each test prints one JSON line per measurement (and appends it to ``$HARNESS_BENCH_OUT``): the
benchmark, its figures, and the device. ``HARNESS_BENCH_DIR`` is where the 21M-row cache goes
(default: a temporary folder; it needs 200 MB of disk, the rows being hard links of one shard).

- ``environment``: the device, versions, faiss's GPU support, and the two ceilings measured here
  (a bf16 matrix product, a device-to-device copy).
- ``search_21m``: the exact ``flat`` index on the GPU over DPR-Wikipedia's 21,015,324 x 768 float16
  rows: build time, peak GPU memory against the index's size, 3,610 queries at k = 100 and 1,000,
  agreement with the exact CPU search (numpy over the base shard, and the harness's memory-mapped
  CPU search for a few queries), and a plain float16 torch search for comparison.
- ``inloop_21m``: the in-loop index of QSFT/ART training over the same rows: one step's search
  (24 questions, top 100).
- ``encode``: BERT-base passages/s through :class:`TransformersEncoder` against a pre-tokenised
  upper bound (fp16 and bf16, batch 128 and 512).
- ``upr``: UPR's scorer with a T0-3B-shaped T5 (random, bf16): pairs/s by batch size.
- ``train_dpr``: ``harness train --variant dpr`` examples/s with a random BERT-base, batch 16 and 128.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_common as common  # noqa: E402

pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = os.environ.get("HARNESS_BENCH_DIR")
    path = Path(root) if root else tmp_path_factory.mktemp("gpu-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _timed(fn, repeat: int = 3) -> float:
    from gpu_encode import median_seconds

    return median_seconds(fn, repeat)


def test_environment():
    torch = common.cuda_or_skip()
    import faiss

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.mm(a, b)
    mm = _timed(lambda: [torch.mm(a, b) for _ in range(10)], 3) / 10
    src = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    copy = _timed(lambda: dst.copy_(src), 5)
    common.emit("environment", bf16_tflops=round(2 * 8192**3 / mm / 1e12, 1),
                copy_tb_per_s=round(2 * src.numel() / copy / 1e12, 2),
                faiss=faiss.__version__, faiss_gpus=(faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0),
                faiss_gpu_support=hasattr(faiss, "StandardGpuResources"))


@pytest.fixture(scope="module")
def wiki(work):
    return common.hardlinked_cache(work)


def _naive_torch_search(vectors, queries, k: int, rows: int = 1 << 20):
    """What a user would write: float16 queries against float16 rows, topk per block, merged."""
    import torch

    q = torch.from_numpy(queries).cuda().half()
    best_s, best_r = None, None
    for start in range(0, vectors.shape[0], rows):
        s = q @ vectors[start : start + rows].T
        top = torch.topk(s, k, dim=1)
        vals, idx = top.values.float(), top.indices + start
        if best_s is None:
            best_s, best_r = vals, idx
        else:
            cat_s, cat_r = torch.cat([best_s, vals], 1), torch.cat([best_r, idx], 1)
            top = torch.topk(cat_s, k, dim=1)
            best_s, best_r = top.values, cat_r.gather(1, top.indices)
    return best_s.cpu().numpy(), best_r.cpu().numpy()


def test_search_21m(wiki):
    torch = common.cuda_or_skip()
    from harness_builtins.dense.embeddings import EmbeddingCache
    from harness_builtins.dense.index import DenseIndex, IndexConfig, MappedFlatIP

    path, base = wiki
    cache = EmbeddingCache.open(path)
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    index = DenseIndex.build(cache, IndexConfig(), progress=False)
    build = time.perf_counter() - start
    flat = index.index
    final = flat.memory_bytes()
    peak = torch.cuda.max_memory_allocated()
    common.emit("search_21m_build", rows=len(cache), seconds=round(build, 2), index_gib=round(final / 2**30, 2),
                peak_gpu_gib=round(peak / 2**30, 2), over_final_gib=round((peak - final) / 2**30, 3),
                rows_per_second=round(len(cache) / build), peak_rss_gib=round(common.peak_rss_bytes() / 2**30, 2),
                compute=index.compute)
    assert peak - final <= 4 << 30  # building peaks at the final size plus at most 4 GiB
    queries = (np.random.default_rng(1).standard_normal((3610, cache.dim)) * 0.5).astype(np.float32)
    index.search(queries[:64], 100)  # warm-up
    for k in (100, 1000):
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        scores, rows = index.search(queries, k)
        seconds = time.perf_counter() - start
        peak_search = torch.cuda.max_memory_allocated()
        sub = 48
        ref_s, ref_r = common.expected_top(base, len(cache), queries[:sub], k)
        same_rows = float(np.mean(rows[:sub] == ref_r))
        same_vectors = float(np.mean(rows[:sub] % common.SHARD == ref_r % common.SHARD))
        max_score_diff = float(np.abs(scores[:sub] - ref_s).max())
        naive = _naive_torch_search(flat.slices[0].vectors, queries, min(k, 2048))
        torch.cuda.synchronize()
        start = time.perf_counter()
        naive = _naive_torch_search(flat.slices[0].vectors, queries, min(k, 2048))
        naive_seconds = time.perf_counter() - start
        naive_diff = float(np.abs(naive[0][:sub, :k] - ref_s).max())
        common.emit("search_21m", k=k, queries=len(queries), seconds=round(seconds, 3),
                    queries_per_second=round(len(queries) / seconds, 1), peak_gpu_gib=round(peak_search / 2**30, 2),
                    agreement_rows=same_rows, agreement_vectors=same_vectors, max_abs_score_diff=max_score_diff,
                    naive_fp16_seconds=round(naive_seconds, 3), naive_fp16_max_abs_score_diff=naive_diff,
                    naive_fp16_agreement_vectors=float(np.mean(naive[1][:sub, :k] % common.SHARD == ref_r % common.SHARD)))
        assert same_vectors == 1.0 and max_score_diff < 1e-4, (same_vectors, max_score_diff)
    if os.environ.get("HARNESS_BENCH_CPU_CHECK", "1") == "1":
        few = queries[:4]
        start = time.perf_counter()
        cpu_s, cpu_r = MappedFlatIP(cache).search(few, 100)
        cpu_seconds = time.perf_counter() - start
        gpu_s, gpu_r = index.search(few, 100)
        common.emit("search_21m_cpu_agreement", queries=len(few), k=100, cpu_seconds=round(cpu_seconds, 1),
                    same_vectors=float(np.mean(cpu_r % common.SHARD == gpu_r % common.SHARD)),
                    max_abs_score_diff=float(np.abs(cpu_s - gpu_s).max()))
        np.testing.assert_array_equal(cpu_r % common.SHARD, gpu_r % common.SHARD)


def test_inloop_21m(wiki):
    torch = common.cuda_or_skip()
    from harness_builtins.dense.embeddings import EmbeddingCache
    from harness_builtins.training.inloop import InLoopIndex

    path, base = wiki
    index = InLoopIndex(None, root=path.parent, format="title_text", sep=" ", shard_size=common.SHARD, device="cuda")
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    index._hold(EmbeddingCache.open(path))
    hold = time.perf_counter() - start
    questions = torch.from_numpy((np.random.default_rng(2).standard_normal((24, 768)) * 0.5).astype(np.float32))
    index.search(questions, 100)
    seconds = _timed(lambda: index.search(questions, 100), 5)
    scores, rows = index.search(questions, 100)
    ref_s, ref_r = common.expected_top(base, len(index), questions.numpy(), 100)
    common.emit("inloop_21m", rows=len(index), load_seconds=round(hold, 1), questions=24, k=100,
                step_search_seconds=round(seconds, 4), peak_gpu_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2),
                agreement_rows=float(np.mean(rows == ref_r)), max_abs_score_diff=float(np.abs(scores - ref_s).max()))
    np.testing.assert_array_equal(rows % common.SHARD, ref_r % common.SHARD)


def test_encode():
    """BERT-base passages/s through the engine against the pre-tokenised bound (gpu_encode)."""
    common.cuda_or_skip()
    from gpu_encode import bench_encode

    n = int(os.environ.get("HARNESS_BENCH_ENCODE_PASSAGES", "20000"))
    for row in bench_encode(n_passages=n, batch_sizes=(128, 512), precisions=("fp16", "bf16")):
        common.emit("encode", model="BERT-base (random)", **row)
        assert 0 < row["encode_psg_s"] and 0 < row["encode_share_of_bound"] <= 1.2


def _t5_3b(work, attention: str | None = None):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=32128, d_model=2048, d_kv=64, d_ff=5120, num_layers=24, num_decoder_layers=24,
                      num_heads=32, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=3)
    if attention:
        config._attn_implementation = attention
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = T5ForConditionalGeneration(config).to(torch.bfloat16).eval()
    from gpu_encode import save_tokenizer

    return model, save_tokenizer(work / "t5-tokenizer", common.word_vocab())


def _top_kernels(fn, n: int = 8) -> list[list]:
    """The ``n`` CUDA kernels that took longest in one call of ``fn`` (name, milliseconds)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
    rows = sorted(prof.key_averages(), key=lambda e: -getattr(e, "self_device_time_total", 0))[:n]
    return [[e.key[:60], round(getattr(e, "self_device_time_total", 0) / 1000, 1)] for e in rows]


def test_upr(work):
    """UPR's scorer (question_log_likelihoods, the re-ranker's code) with a T0-3B-shaped T5 in
    bf16, against the same model's forward on pre-tokenised, pre-padded batches of the same shapes
    (the bound the scorer can approach) and the FLOP floor at the H100's 989 TFLOP/s."""
    torch = common.cuda_or_skip()
    from harness_builtins.common.seq2seq import passage_prompt, question_log_likelihoods

    model, tokenizer = _t5_3b(work)
    params = sum(p.numel() for p in model.parameters())
    docs = common.passages(int(os.environ.get("HARNESS_BENCH_UPR_PAIRS", "512")), seed=3)
    question = "who wrote the declaration of independence of the united states"
    lengths = sorted(len(tokenizer(passage_prompt(t, x)).input_ids) for t, x in docs)
    enc_tokens = float(np.mean(lengths))
    target = tokenizer(f"Question: {question}").input_ids
    enc_params = sum(p.numel() for n, p in model.named_parameters() if n.startswith("encoder."))
    dec_params = params - enc_params
    flops = 2 * enc_params * enc_tokens + 2 * dec_params * len(target)
    for batch in [int(b) for b in os.environ.get("HARNESS_BENCH_UPR_BATCHES", "16,32,64,128,256").split(",")]:
        scores = question_log_likelihoods(model, tokenizer, question, docs[:8], batch_size=batch)
        assert len(scores) == 8 and all(np.isfinite(scores)) and max(scores) < 0
        with torch.inference_mode():
            question_log_likelihoods(model, tokenizer, question, docs[:batch], batch_size=batch)
            torch.cuda.reset_peak_memory_stats()
            seconds = _timed(lambda: question_log_likelihoods(model, tokenizer, question, docs, batch_size=batch), 2)
            shaped = [(torch.randint(5, 30000, (min(batch, len(lengths) - s), lengths[min(s + batch, len(lengths)) - 1]), device="cuda"))
                      for s in range(0, len(lengths), batch)]
            labels = torch.tensor([target], device="cuda")

            def forward():
                for ids in shaped:
                    model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels.expand(len(ids), -1), use_cache=False)

            forward()
            bound = _timed(forward, 2)
            kernels = _top_kernels(lambda: question_log_likelihoods(model, tokenizer, question, docs[:batch], batch_size=batch)) if batch == 128 else None
        rate = len(docs) / seconds
        common.emit("upr", model="T0-3B-shaped (random)", params=params, batch_size=batch, pairs_per_second=round(rate, 1),
                    pretokenised_pairs_per_second=round(len(docs) / bound, 1), passage_tokens=round(enc_tokens, 1),
                    flops_per_pair=flops, floor_pairs_per_second_989=round(989e12 / flops),
                    share_of_floor=round(rate * flops / 989e12, 3), peak_gpu_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2),
                    top_kernels_ms=kernels)
    del model
    torch.cuda.empty_cache()
    try:
        model, tokenizer = _t5_3b(work, "sdpa")
    except Exception as exc:  # a transformers without SDPA for T5 says so
        common.emit("upr_sdpa", error=f"{type(exc).__name__}: {str(exc)[:200]}")
        return
    with torch.inference_mode():
        question_log_likelihoods(model, tokenizer, question, docs[:128], batch_size=128)
        seconds = _timed(lambda: question_log_likelihoods(model, tokenizer, question, docs, batch_size=128), 2)
    common.emit("upr_sdpa", batch_size=128, pairs_per_second=round(len(docs) / seconds, 1),
                share_of_floor=round(len(docs) / seconds * flops / 989e12, 3))


def _dpr_data(path: Path, n: int) -> Path:
    docs = common.passages(2 * n, seed=5)
    vocab = common.word_vocab()[5:]
    rng = np.random.default_rng(6)
    rows = []
    for i in range(n):
        words = " ".join(vocab[j] for j in rng.integers(0, len(vocab), 12)).replace("##", "")
        rows.append({"question": words, "answers": [docs[2 * i][1].split()[0]],
                     "positive_ctxs": [{"title": docs[2 * i][0], "text": docs[2 * i][1]}], "negative_ctxs": [],
                     "hard_negative_ctxs": [{"title": docs[2 * i + 1][0], "text": docs[2 * i + 1][1]}]})
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_train_dpr(work):
    common.cuda_or_skip()
    model = common.bert_dir(work)
    data = _dpr_data(work / "train.json", 128 * 60)
    failed = []
    for batch in (16, 128):
        out = work / f"train-{batch}"
        steps = 50
        cmd = ["harness", "train", "--variant", "dpr", "--data", str(data), "--model", str(model), "--output", str(out),
               "--max-steps", str(steps), "--batch-size", str(batch), "--logging-steps", "10", "--save-steps", "100000",
               "--no-progress"]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            common.emit("train_dpr", batch_size=batch, error=done.stderr[-2000:])
            failed.append(batch)
            continue
        log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
        rates = [r["examples_per_second"] for r in log if "examples_per_second" in r][1:]
        record = json.loads((out / "harness_training.json").read_text())
        common.emit("train_dpr", batch_size=batch, steps=steps, examples_per_second=round(float(np.median(rates)), 1) if rates else None,
                    wall_seconds=round(wall, 1), precision=record.get("settings", {}).get("precision"),
                    passage_tokens=256)
    assert not failed, f"harness train failed at batch sizes {failed}"


def _torchrun_encode(model: Path, cache: Path, summary: Path) -> subprocess.Popen:
    cmd = ["torchrun", "--nproc_per_node", "1", "-m", "harness_builtins.dense.distributed", "--retriever", "dense",
           "-o", f"query_model={model}", "-o", "pooling=cls", "-o", "shard_size=100", "-o", "batch_size=8",
           "--suite", "demo", "--cache-dir", str(cache), "--summary", str(summary), "--no-progress"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_torchrun_encode_kill_and_resume(work):
    """``torchrun --nproc_per_node 1`` encodes demo's corpus (80 shards of 100, batches of 8, so
    the kill lands mid-way) with a random BERT-base over NCCL; killed once 4 shards are on disk and
    restarted, it encodes only the rest and leaves the same bytes as an uninterrupted run."""
    import hashlib

    common.cuda_or_skip()
    model = common.bert_dir(work)
    whole, broken = work / "enc-whole", work / "enc-killed"
    started = time.perf_counter()
    done = _torchrun_encode(model, whole, work / "whole.json")
    out = done.communicate()[0]
    whole_seconds = time.perf_counter() - started
    if done.returncode != 0:
        common.emit("torchrun_encode", error=out[-2000:])
        pytest.fail(out[-2000:])
    run = _torchrun_encode(model, broken, work / "killed.json")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(broken.glob("dense/*/emb-*.npy"))) < 4 and run.poll() is None:
        time.sleep(0.05)
    psutil = pytest.importorskip("psutil")
    for proc in [*psutil.Process(run.pid).children(recursive=True), psutil.Process(run.pid)]:
        proc.kill()  # torchrun starts its workers in sessions of their own: each one is killed
    run.wait()
    left = len(list(broken.glob("dense/*/emb-*.npy")))
    resumed = _torchrun_encode(model, broken, work / "resumed.json")
    out = resumed.communicate()[0]
    summary = json.loads((work / "resumed.json").read_text()) if resumed.returncode == 0 else {}

    def digest(root: Path) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.glob("dense/*/*.npy"))}

    same = digest(whole) == digest(broken)
    first = json.loads((work / "whole.json").read_text())
    common.emit("torchrun_encode", passages=first.get("passages"), shards=first.get("shards"),
                whole_seconds=round(whole_seconds, 1), encode_seconds=first.get("seconds"),
                shards_left_by_the_kill=left, resumed_rc=resumed.returncode, resumed_skipped=len(summary.get("skipped", [])),
                identical_bytes=same, tail=out[-300:])
    assert resumed.returncode == 0 and same
    assert 0 < left < first["shards"], f"the kill left {left} of {first['shards']} shards"
    assert len(summary.get("skipped", [])) == left  # only the missing shards were encoded again

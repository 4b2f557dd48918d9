"""GPU encoding throughput of :class:`TransformersEncoder` on a random BERT-base, self-contained.

Nothing is downloaded: the model is ``BertModel(BertConfig())`` (bert-base sizes, random
weights) and the tokenizer a ``BertTokenizerFast`` over a generated ``vocab.txt`` (30,522 entries:
the special tokens, single characters, synthetic stems and ``##`` suffixes), both saved into a
temporary directory that the encoder loads like any model directory. Passages are ``(title,
text)`` pairs of synthetic words whose token counts spread around ``seq_tokens`` (DPR's
Wikipedia passages average about 140 BERT tokens).

For each precision and batch size it reports ``encode_passages`` throughput (called on slices of
``max(1024, 16 * batch_size)`` passages, as the dense retriever does) and, as the upper bound,
the same model's forward on already padded, already on-device, length-sorted batches under the
same autocast (no tokenisation, no copies)::

    from gpu_encode import bench_encode          # with tests/benchmarks on sys.path
    for row in bench_encode(n_passages=20000, batch_sizes=(128, 512), precisions=("fp16", "bf16")):
        print(row)

Without CUDA it returns ``[]`` (under pytest it skips).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: Share of passage words written as stem + ``##`` suffix (two WordPiece tokens).
SUFFIXED_SHARE = 0.3


def build_vocab(size: int = 30522, *, seed: int = 0) -> list[str]:
    """A WordPiece vocabulary of ``size`` entries: the special tokens, letters and digits (and
    their ``##`` forms, so that every lower-case word tokenises), then synthetic stems and
    ``##`` suffixes (about two to one)."""
    rng = random.Random(seed)
    singles = list(LETTERS + "0123456789.,")
    vocab = [*SPECIAL_TOKENS, *singles, *(f"##{c}" for c in singles)]
    if size < len(vocab) + 2:
        raise ValueError(f"a vocabulary needs at least {len(vocab) + 2} entries, got {size}")
    seen = set(vocab)
    n_suffixes = (size - len(vocab)) // 3
    while len(vocab) < size:
        suffix = len(vocab) >= size - n_suffixes
        word = "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 5 if suffix else 9)))
        word = f"##{word}" if suffix else word
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    return vocab


def save_tokenizer(directory: Path, vocab: list[str]) -> Any:
    """``vocab.txt`` and a ``BertTokenizerFast`` over it, saved into ``directory``."""
    from transformers import BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return tokenizer


def synthetic_passages(vocab: list[str], n: int, seq_tokens: int = 140, *, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` ``(title, text)`` pairs whose ``[CLS] title [SEP] text [SEP]`` token counts are
    about ``seq_tokens`` (normally spread, standard deviation 15%, at least 8)."""
    rng = random.Random(seed)
    stems = [w for w in vocab if w not in SPECIAL_TOKENS and not w.startswith("##") and len(w) > 1]
    suffixes = [w[2:] for w in vocab if w.startswith("##") and len(w) > 3]
    if not stems or not suffixes:
        raise ValueError("the vocabulary has no stems or suffixes")

    def words(tokens: int) -> str:
        out = []
        while tokens > 0:
            if tokens > 1 and rng.random() < SUFFIXED_SHARE:
                out.append(rng.choice(stems) + rng.choice(suffixes))
                tokens -= 2
            else:
                out.append(rng.choice(stems))
                tokens -= 1
        return " ".join(out)

    passages = []
    for _ in range(n):
        total = max(8, round(rng.gauss(seq_tokens, 0.15 * seq_tokens)))
        title = rng.randint(1, 4)
        passages.append((words(title), words(total - title - 3)))
    return passages


def build_model(directory: Path, *, vocab_size: int = 30522, seed: int = 0, **config: Any) -> Path:
    """A random ``BertModel(BertConfig(**config))`` saved into ``directory`` (no pooler)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=vocab_size, **config), add_pooling_layer=False).save_pretrained(str(directory))
    return directory


def median_seconds(fn, runs: int) -> float:
    """The median wall time of ``runs`` calls of ``fn``, the GPU synchronised around each."""
    import torch

    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _pretokenized_forward(encoder, passages, batch_size: int):
    """A function running the encoder's model over length-sorted, padded, on-device batches of
    ``passages`` (built once, outside the timing) under the encoder's autocast, [CLS] pooled."""
    import torch

    from harness_builtins.dense.pipeline import autocast_for

    features = encoder.tokenize_passages(passages)
    features.sort(key=lambda f: -len(f["input_ids"]))
    batches = []
    for start in range(0, len(features), batch_size):
        chunk = features[start : start + batch_size]
        width = len(chunk[0]["input_ids"])
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, f in enumerate(chunk):
            ids[row, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
            mask[row, : len(f["input_ids"])] = 1
        batches.append({"input_ids": ids.cuda(), "attention_mask": mask.cuda(), "token_type_ids": torch.zeros_like(ids).cuda()})
    model = encoder.model

    def run():
        with torch.inference_mode(), autocast_for("cuda", encoder.precision):
            for batch in batches:
                model(**batch).last_hidden_state[:, 0].float()

    return run


def _one_config(model_dir: Path, passages, batch_size: int, precision: str, runs: int) -> dict[str, Any]:
    import torch

    from harness_builtins.dense.encoders import TransformersEncoder

    encoder = TransformersEncoder(str(model_dir), pooling="cls", format="dpr", max_length=256,
                                  batch_size=batch_size, device="cuda", precision=precision)
    encoder.load()
    chunk = max(1024, 16 * batch_size)

    def encode():
        for start in range(0, len(passages), chunk):
            encoder.encode_passages(passages[start : start + chunk])

    start = time.perf_counter()
    tokens = [len(f["input_ids"]) for f in encoder.tokenize_passages(passages)]
    tokenize_s = time.perf_counter() - start
    encoder.encode_passages(passages[: 2 * chunk])  # warm up
    torch.cuda.reset_peak_memory_stats()
    encode_s = median_seconds(encode, runs)
    peak = torch.cuda.max_memory_allocated()
    forward = _pretokenized_forward(encoder, passages, batch_size)
    forward()  # warm up
    forward_s = median_seconds(forward, runs)
    n = len(passages)
    row = {
        "device": torch.cuda.get_device_name(0), "passages": n, "mean_tokens": round(sum(tokens) / n, 1),
        "batch_size": batch_size, "precision": encoder.precision, "chunk": chunk,
        "encode_psg_s": round(n / encode_s, 1), "pretokenized_psg_s": round(n / forward_s, 1),
        "tokenize_psg_s": round(n / tokenize_s, 1), "encode_share_of_bound": round(forward_s / encode_s, 3),
        "peak_gpu_mem_gb": round(peak / 2**30, 2),
    }
    del encoder
    torch.cuda.empty_cache()
    return row


def bench_encode(n_passages: int = 20000, batch_sizes=(128, 512), precisions=("fp16", "bf16"),
                 seq_tokens: int = 140, *, runs: int = 3, model_config: dict[str, Any] | None = None) -> list[dict]:
    """One dict per (precision, batch size): ``encode_psg_s`` (``encode_passages``, median of
    ``runs`` after a warm-up), ``pretokenized_psg_s`` (the bound), ``encode_share_of_bound``,
    ``tokenize_psg_s`` (``tokenize_passages`` alone: the transformers tokenizer, one call),
    ``peak_gpu_mem_gb`` (``torch.cuda.max_memory_allocated`` while encoding). ``model_config``
    overrides ``BertConfig``'s defaults (bert-base)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        if "pytest" in sys.modules:
            import pytest

            pytest.skip("bench_encode needs a CUDA GPU")
        return []
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-encode-") as tmp:
        model_dir = Path(tmp) / "bert-base-random"
        vocab = build_vocab()
        save_tokenizer(model_dir, vocab)
        build_model(model_dir, vocab_size=len(vocab), **(model_config or {}))
        passages = synthetic_passages(vocab, n_passages, seq_tokens)
        for precision in precisions:
            for batch_size in batch_sizes:
                rows.append(_one_config(model_dir, passages, batch_size, precision, runs))
    return rows


if __name__ == "__main__":  # pragma: no cover
    import json

    for result in bench_encode(n_passages=int(sys.argv[1]) if len(sys.argv) > 1 else 20000):
        print(json.dumps(result))

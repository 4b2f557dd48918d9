"""Dense retrievers: DPR, Contriever, any sentence-transformers model, MiniLM offline, a generic
dual encoder, and (when their modules are present) REALM and ART, all on one engine.

- :mod:`~harness_builtins.dense.encoders`: the :class:`Encoder` protocol; transformers and
  sentence-transformers encoders (pooling, input formats, length-sorted batches, autocast on GPU).
- :mod:`~harness_builtins.dense.embeddings`: corpus embeddings cached on disk as float16 shards.
- :mod:`~harness_builtins.dense.index`: faiss indexes (exact inner product, HNSW, IVF-PQ).
- :mod:`~harness_builtins.dense.retriever`: the retriever and the loader used by every preset.
- :mod:`~harness_builtins.dense.presets`: the presets, as data.
- :mod:`~harness_builtins.dense.matrix`: the encoder-adaptation Q x P matrix.

Registering imports only :mod:`~harness_builtins.dense.presets` (no torch, transformers or faiss);
they are imported when a dense retriever is loaded.
"""

from __future__ import annotations

import functools

from harness import hookimpl
from harness.types import RetrieverSpec

from harness_builtins.dense.presets import ENGINE_OPTIONS, Preset, available_presets


def load(preset: Preset, **options):
    from harness_builtins.dense.retriever import build_retriever

    return build_retriever(preset, **options)


@hookimpl
def register_retrievers(register):
    for preset in available_presets().values():
        register(
            RetrieverSpec(
                name=preset.name,
                description=preset.description,
                load=functools.partial(load, preset),
                options=preset.options,
            )
        )
    register(
        RetrieverSpec(
            name="adapt",
            description="encoder adaptation: -o query_encoder=MODEL -o passage_encoder=MODEL (presets or directories)",
            load=_load_adapted,
            options={"query_encoder": None, "passage_encoder": None, **ENGINE_OPTIONS},
        )
    )


def _load_adapted(**options):
    from harness_builtins.dense.adapt import build_adapted

    return build_adapted(**options)


@hookimpl
def register_commands(cli):
    from harness_builtins.dense.commands import convert, matrix

    cli.add_command(convert)
    cli.add_command(matrix)

"""Dense retrieval: one engine for every encoder, built-in or a plugin's.

The plugin registers the built-in encoders (DPR, Contriever, any sentence-transformers model,
MiniLM offline, a generic dual encoder, REALM, ART) through ``register_encoders``, like any other
plugin, and offers **every** registered encoder, its own and other plugins', as a retriever of the
same name on the dense engine:

- :mod:`~harness_builtins.dense.encoders`: transformers and sentence-transformers encoders
  (pooling, input formats, length-sorted batches, autocast on GPU).
- :mod:`~harness_builtins.dense.embeddings`: corpus embeddings cached on disk as shards (float32
  up to 2M passages, float16 beyond; an imported release's float32, possibly mapped in place).
- :mod:`~harness_builtins.dense.released`: released passage vectors searched instead of encoding
  (``-o embeddings=NAME``): read, imported with their ids mapped, checked against the encoder.
- :mod:`~harness_builtins.dense.index`: faiss indexes (exact inner product, HNSW, IVF-PQ).
- :mod:`~harness_builtins.dense.retriever`: the retriever, built from an encoder and options.
- :mod:`~harness_builtins.dense.presets`: the built-in encoders, as data.
- :mod:`~harness_builtins.dense.options`: the declarations (types, bounds) of the encoders' and
  the engine's options.
- :mod:`~harness_builtins.dense.adapt` and :mod:`~harness_builtins.dense.matrix`: encoder
  adaptation, one pair (``-r adapt``) or the whole Q x P matrix (``harness matrix``).
- :mod:`~harness_builtins.dense.distributed`: encoding a corpus on every rank of a torchrun job.
- :mod:`~harness_builtins.dense.specialised`: a question encoder per part of a suite (``-r specialised``).

Registering imports only :mod:`~harness_builtins.dense.presets` (no torch, transformers or faiss);
they are imported when a dense retriever is loaded.
"""

from __future__ import annotations

import functools

from harness import hookimpl, registry
from harness.api import Options, RetrieverSpec, path, text

from harness_builtins.dense.meta import trained_meta
from harness_builtins.dense.presets import INDEX_OPTIONS, RUNTIME_OPTIONS, encoder_specs


def _unknown_meta(options):
    return None


def _load(encoder: str, **options):
    from harness_builtins.dense.retriever import build_retriever

    return build_retriever(encoder, **options)


def _load_adapted(**options):
    from harness_builtins.dense.adapt import build_adapted

    return build_adapted(**options)


@hookimpl
def register_encoders(register):
    for spec in encoder_specs():
        register(spec)


@hookimpl
def register_retrievers(register):
    from harness.data.needs import declare_retriever_needs
    from harness_builtins.dense.art_checkpoints import needed_files

    declare_retriever_needs("art", needed_files)  # the files each downloads, for harness data missing
    declare_retriever_needs("mss", functools.partial(needed_files, checkpoint="mss"))
    for entry in registry.encoders().entries():
        spec = entry.spec
        owner = "" if entry.plugin == "dense" else f" [encoder from plugin {entry.plugin!r}]"
        register(
            RetrieverSpec(
                name=spec.name,
                description=spec.description + owner,
                load=functools.partial(_load, spec.name),
                # the encoder's declaration wins for a name both declare (build_retriever gives it the value)
                options=INDEX_OPTIONS | spec.options,
                meta=spec.meta,
            )
        )
    register(
        RetrieverSpec(
            name="adapt",
            description=(
                "encoder adaptation: -o query_encoder=ENCODER_OR_DIR -o passage_encoder=ENCODER_OR_DIR "
                "(Li and Lin 2021, arXiv:2110.01599)"
            ),
            load=_load_adapted,
            meta=_unknown_meta,  # the encoders are the user's to name
            options=Options({"query_encoder": text(required=True, help="an encoder name or a checkpoint folder"),
                             "passage_encoder": text(required=True, help="an encoder name or a checkpoint folder")})
            | RUNTIME_OPTIONS | INDEX_OPTIONS,
        )
    )
    register(
        RetrieverSpec(
            name="specialised",
            description=(
                "one question encoder per part of the suite over one passage index: -o path=OUT of harness "
                "train --variant specialised (Sciavolino et al. 2021, arXiv:2109.08535, §4)"
            ),
            load=_load_specialised,
            meta=trained_meta,
            options=Options({"path": path(required=True, help="the output folder of harness train --variant specialised")})
            | RUNTIME_OPTIONS | INDEX_OPTIONS,
        )
    )


def _load_specialised(**options):
    from harness_builtins.dense.specialised import load_specialised

    return load_specialised(**options)


@hookimpl
def register_commands(cli):
    from harness_builtins.dense.commands import convert, matrix

    cli.add_command(convert)
    cli.add_command(matrix)

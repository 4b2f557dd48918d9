"""Released passage embeddings searched by the dense engine (``-o embeddings=NAME``).

- :mod:`~harness_builtins.dense.released.formats`: a reader per release format.
- :mod:`~harness_builtins.dense.released.importer`: a release into an embedding cache, ids mapped.
- :mod:`~harness_builtins.dense.released.check`: a sample re-encoded and compared before the
  release is trusted.
- :mod:`~harness_builtins.dense.released.use`: what a dense retriever does with the option.
"""

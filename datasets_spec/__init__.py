"""The built-in dataset specs, shipped as data: suites, corpora, training sets, published tables
published runs and released embeddings, one TOML file each (see ``README.md`` here for the layout and schema).

Installed as ``harness_builtins.datasets_spec``; the built-in ``datasets`` plugin reads it.
"""

from pathlib import Path

#: This folder: ``suites/``, ``corpora/``, ``training/``, ``published/``, ``runs/`` and ``embeddings/``.
SPEC_ROOT = Path(__file__).resolve().parent

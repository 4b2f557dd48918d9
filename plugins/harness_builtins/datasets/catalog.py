"""The plugin's catalogue: the project's ``datasets_spec/`` folder (installed as
``harness_builtins.datasets_spec``), then the folders of ``$HARNESS_SPEC_PATH`` (same layout)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.data.catalog import SpecCatalog, load_catalog, user_spec_dirs
from harness.errors import InputFileError

from harness_builtins.datasets_spec import SPEC_ROOT

#: The built-in specs: ``suites/``, ``corpora/``, ``training/``, ``published/``, ``runs/``.
SPEC_DIR = SPEC_ROOT


def spec_dirs() -> list[Path]:
    """The built-in spec folder, then the folders of ``$HARNESS_SPEC_PATH``."""
    return [SPEC_DIR, *user_spec_dirs()]


def _skip(error: InputFileError) -> None:
    print(f"harness: warning: {error}; this spec is skipped", file=sys.stderr)


def catalog(*, strict: bool = False) -> SpecCatalog:
    """Every spec; a malformed one is reported on stderr and left out (``strict``: raised)."""
    return load_catalog(spec_dirs(), on_error=None if strict else _skip)


#: The built-in published tables (``published/*.toml``, one per paper table).
PUBLISHED_DIR = SPEC_DIR / "published"


def published_tables(*, strict: bool = False) -> list:
    """Every published table of :data:`PUBLISHED_DIR` and of ``published/`` in the folders of
    ``$HARNESS_SPEC_PATH``; a malformed file is reported and left out (``strict``: raised)."""
    from harness.analysis.published import read_published_table

    tables = []
    for folder in [d / "published" for d in spec_dirs()]:
        for path in sorted(folder.glob("*.toml")):
            try:
                tables.append(read_published_table(path))
            except InputFileError as error:
                if strict:
                    raise
                print(f"harness: warning: {error}; this table is skipped", file=sys.stderr)
    return tables


def published_runs(*, strict: bool = False) -> list:
    """Every published run spec of ``runs/`` in the built-in folder and in the folders of
    ``$HARNESS_SPEC_PATH``; a malformed file is reported and left out (``strict``: raised)."""
    from harness.runfiles.published import read_run_specs

    def skip(error: InputFileError) -> None:
        print(f"harness: warning: {error}; this run is skipped", file=sys.stderr)

    return read_run_specs(spec_dirs(), on_error=None if strict else skip)

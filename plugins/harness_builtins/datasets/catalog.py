"""The plugin's catalogue: the project's ``datasets_spec/`` folder (installed as
``harness_builtins.datasets_spec``), then the folders of ``$HARNESS_SPEC_PATH`` (same layout)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.data.catalog import SpecCatalog, load_catalog, user_spec_dirs
from harness.errors import InputFileError

from harness_builtins.datasets_spec import SPEC_ROOT

#: The built-in specs: ``suites/``, ``corpora/``, ``training/``, ``published/``, ``runs/``,
#: ``embeddings/``.
SPEC_DIR = SPEC_ROOT


def spec_dirs() -> list[Path]:
    """The built-in spec folder, then the folders of ``$HARNESS_SPEC_PATH``."""
    return [SPEC_DIR, *user_spec_dirs()]


#: The warnings printed so far: the catalogue is read once per kind of spec a command registers
#: (suites, training sets), and a malformed file is reported once.
_warned: set[str] = set()


def _skip(error: InputFileError) -> None:
    _left_out(error)
    line = f"harness: warning: {error}; this spec is skipped"
    if line not in _warned:
        _warned.add(line)
        print(line, file=sys.stderr)


#: The registry kind of each spec folder whose files name something a user asks for by name.
_KIND_OF_FOLDER = {"suites": "suites", "training": "training-data", "runs": "runs", "embeddings": "embeddings"}


def _left_out(error: InputFileError) -> None:
    """Record the spec file of ``error`` as unavailable (:func:`harness.registry.mark_unavailable`)
    under its file's name and, when it declares one, its ``name``: asking for it then says which
    file failed and why, instead of suggesting another name."""
    import tomllib

    from harness.registry import mark_unavailable

    path = Path(str(error.path))
    kind = _KIND_OF_FOLDER.get(path.parent.name)
    if kind is None:
        return
    names = {path.stem}
    try:
        declared = tomllib.loads(path.read_text(encoding="utf-8")).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError, ValueError):
        declared = None
    if isinstance(declared, str) and declared.strip():
        names.add(declared)
    for name in names:
        mark_unavailable(kind, name, f"its spec failed to load: {error}")


def catalog(*, strict: bool = False) -> SpecCatalog:
    """Every spec; a malformed one is reported on stderr and left out (``strict``: raised)."""
    return load_catalog(spec_dirs(), on_error=None if strict else _skip)


#: The built-in published tables (``published/*.toml``, one per paper table).
PUBLISHED_DIR = SPEC_DIR / "published"


def published_tables(*, strict: bool = False) -> list:
    """Every published table of :data:`PUBLISHED_DIR` and of ``published/`` in the folders of
    ``$HARNESS_SPEC_PATH``, in that order; ``strict``: the first problem is raised.

    A malformed file, or a table whose name an earlier file already gave (the built-in table
    wins over a user folder's, an earlier folder of ``$HARNESS_SPEC_PATH`` over a later one), is
    left out alone and reported with :func:`harness.registry.skipped` (one line naming the file, the
    problem, and for a name given twice the other file): inside the ``register_published`` hook it
    is the plugin's failure there, which ``harness plugins`` lists and which fails ``harness
    reproduce --check``. Every other table is kept.
    """
    from harness.analysis.published import read_published_table
    from harness.registry import skipped

    tables: dict[str, object] = {}
    for folder in [d / "published" for d in spec_dirs()]:
        for path in sorted(folder.glob("*.toml")):
            try:
                table = read_published_table(path)
                if table.name in tables:
                    raise InputFileError(
                        path, f"published table {table.name!r} is also defined in {tables[table.name].source}"
                    )
            except InputFileError as error:
                if strict:
                    raise
                skipped(error)
                continue
            tables[table.name] = table
    return list(tables.values())


def published_runs(*, strict: bool = False) -> list:
    """Every published run spec of ``runs/`` in the built-in folder and in the folders of
    ``$HARNESS_SPEC_PATH``; a malformed file, or a run name an earlier file already gave, is left
    out alone and reported with :func:`harness.registry.skipped` (``strict``: raised)."""
    from harness.registry import skipped
    from harness.runfiles.published import read_run_specs

    def left_out(error: InputFileError) -> None:
        _left_out(error)
        skipped(error)

    return read_run_specs(spec_dirs(), on_error=None if strict else left_out)


def released_embeddings(*, strict: bool = False) -> list:
    """Every released-embeddings spec of ``embeddings/`` in the built-in folder and in the folders
    of ``$HARNESS_SPEC_PATH``; a malformed file, or a name an earlier file already gave, is left
    out alone and reported with :func:`harness.registry.skipped` (``strict``: raised)."""
    from harness.data.embeddings import read_embeddings_specs
    from harness.registry import skipped

    def left_out(error: InputFileError) -> None:
        _left_out(error)
        skipped(error)

    return read_embeddings_specs(spec_dirs(), on_error=None if strict else left_out)

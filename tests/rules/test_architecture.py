"""The layout's rules, checked on the source: imports go one way, built-ins use the public API
only, no module-level import cycles, the core's top level stays small."""

from __future__ import annotations

import ast
from pathlib import Path

import harness
from helpers.paths import REPO

CORE = REPO / "harness"
BUILTINS = REPO / "plugins" / "harness_builtins"


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under ``root`` (``package`` is its name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


MODULES = {**_modules(CORE, "harness"), **_modules(BUILTINS, "harness_builtins"),
           **_modules(REPO / "datasets_spec", "harness_builtins.datasets_spec")}


def _runtime_nodes(node: ast.AST):
    """Every node below ``node`` except those under ``if TYPE_CHECKING:`` (annotations only)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            continue
        yield child
        yield from _runtime_nodes(child)


def _imports(module: str, path: Path, *, runtime_only: bool = False) -> set[str]:
    """The modules ``module`` imports anywhere in its code, at module level or inside functions
    (``from X import Y`` counts as ``X.Y`` when that is a module); ``runtime_only`` leaves out
    imports made for type checkers only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    nodes = list(_runtime_nodes(tree)) if runtime_only else list(ast.walk(tree))
    nodes = [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))]
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            submodules = {f"{source}.{alias.name}" for alias in node.names} & set(MODULES)
            found.update(submodules)
            if len(submodules) < len(node.names):  # some names are the module's own attributes
                found.add(source)
    return found


def test_the_core_never_mentions_a_builtin_plugin():
    offenders = [
        str(path.relative_to(REPO))
        for path in CORE.rglob("*")
        if path.is_file() and path.suffix in {".py", ".md", ".toml", ".json"}
        and "harness_builtins" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_builtins_import_only_the_public_core():
    public = set(harness.PUBLIC_MODULES)
    offenders = []
    for module, path in MODULES.items():
        if not module.startswith("harness_builtins"):
            continue
        for imported in _imports(module, path):
            if imported.split(".")[0] == "harness" and imported not in public:
                offenders.append(f"{module} imports {imported}")
    assert offenders == []


def test_every_public_module_exists():
    missing = [name for name in harness.PUBLIC_MODULES if name not in MODULES]
    assert missing == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> the modules it imports): its strongly connected
    components of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_import_cycles():
    """No import circle among the core's and the built-ins' modules.

    An import circle is a chain of modules, each importing the next, whose last imports the
    first. Every ``import`` statement counts, wherever it is: at module level, deferred into a
    function (a deferred import that closes a circle works only by the order modules happen to
    be loaded in), and under ``if TYPE_CHECKING:`` (a type checker follows it, and the two
    modules still depend on each other: each is one half of the other's idea). ``from P import
    name`` counts as importing ``P.name`` when that is a module, else ``P``; importing ``P.M``
    does not count as importing the package ``P`` (every submodule's parent is executed first,
    which is no circle of ideas)."""
    graph = {
        module: {m for m in _imports(module, path) if m in MODULES and m != module}
        for module, path in MODULES.items()
    }
    assert _cycles(graph) == []


def test_the_circle_check_sees_every_kind_of_import(tmp_path):
    """The check above can fail: deferred and type-checking imports are edges, and a circle
    through them is found."""
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from harness_builtins.dense.presets import Preset\n"
        "def build():\n"
        "    from harness.evaluate import retrieve\n",
        encoding="utf-8",
    )
    assert _imports("harness_builtins.dense.mod", source) == {"typing", "harness_builtins.dense.presets", "harness.evaluate"}
    assert _imports("harness_builtins.dense.mod", source, runtime_only=True) == {"typing", "harness.evaluate"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_core_top_level_is_small():
    """Layers live in subpackages; the top level holds the extension machinery, the runner and
    two documented compatibility names."""
    top = sorted(p.stem for p in CORE.glob("*.py"))
    assert top == [
        "__init__", "errors", "evaluate", "hookspecs", "matching", "plugins", "registry", "testing", "types",
    ]


def test_documented_imports_keep_working():
    from harness.evaluate import evaluate, run_evaluation  # noqa: F401
    from harness.matching import has_answer
    from harness.results import read_results, write_result  # noqa: F401
    from harness.testing import check_retriever, toy_suite  # noqa: F401
    from harness.types import EncoderSpec, Hit, InMemoryCorpus, RetrieverSpec, SuiteSpec  # noqa: F401

    assert has_answer(["Paris"], "It is the capital of France: paris.", mode="string")
    import harness.api
    import harness.types

    assert harness.types.RetrieverSpec is harness.api.RetrieverSpec


# --- built-in plugins share code only through harness_builtins.common ----------------------------

#: The built-ins' shared package: any plugin may import it; it imports no plugin.
SHARED = "harness_builtins.common"
#: The built-in specs, shipped as data (the top-level datasets_spec/ folder): any plugin may read
#: it; it imports nothing of the harness.
DATA = "harness_builtins.datasets_spec"

#: The imports of one built-in plugin package's modules by another's that remain, each with why it
#: is not in the shared package. (importer module, imported module) -> reason.
ALLOWED_CROSS_PLUGIN_IMPORTS = {
    ("harness_builtins.training.inloop", "harness_builtins.dense.embeddings"):
        "the in-loop index is the dense plugin's embedding cache, reused by dense runs",
    ("harness_builtins.training.inloop", "harness_builtins.dense.passage_identity"):
        "the in-loop index is keyed as the evaluation encoder keys the same passage side, so they share one cache",
    ("harness_builtins.training.inloop", "harness_builtins.dense.pipeline"):
        "the cache key names the arithmetic the passages were encoded with, as the dense encoders record it",
    ("harness_builtins.training.inloop", "harness_builtins.dense.distributed"):
        "re-embedding the corpus on every rank is the dense plugin's distributed encode engine",
    ("harness_builtins.training.inloop", "harness_builtins.dense.gpu_flat"):
        "in-loop search is the dense plugin's exact GPU flat index",
}


def _plugin_of(module: str) -> str | None:
    """``harness_builtins.dense`` for ``harness_builtins.dense.index``; ``None`` for the
    top-level package and modules outside the built-ins."""
    parts = module.split(".")
    if parts[0] != "harness_builtins" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def _cross_plugin_imports() -> set[tuple[str, str]]:
    found = set()
    for module, path in MODULES.items():
        own = _plugin_of(module)
        if own is None:
            continue
        for imported in _imports(module, path):
            other = _plugin_of(imported)
            if other is not None and other not in (own, SHARED, DATA):
                found.add((module, imported))
    return found


def test_builtin_plugins_import_each_other_only_through_the_shared_package():
    """A built-in plugin package imports another's modules only through harness_builtins.common,
    except the allow-listed imports (each with its reason); a listed import that is gone must
    leave the list too. The shared package imports no plugin."""
    found = _cross_plugin_imports()
    assert all(reason for reason in ALLOWED_CROSS_PLUGIN_IMPORTS.values())
    assert sorted(found - set(ALLOWED_CROSS_PLUGIN_IMPORTS)) == []
    assert sorted(set(ALLOWED_CROSS_PLUGIN_IMPORTS) - found) == []
    shared = {(m, i) for m, path in MODULES.items() if _plugin_of(m) == SHARED
              for i in _imports(m, path) if _plugin_of(i) not in (None, SHARED)}
    assert shared == set()
    data = {i for m, path in MODULES.items() if _plugin_of(m) == DATA for i in _imports(m, path)
            if i.split(".")[0] in ("harness", "harness_builtins")}
    assert data == set()


def test_the_training_losses_import_nothing_of_the_rerank_plugin():
    """The ART teacher's scorer comes from the shared package, and only when an ART loss is built."""
    path = MODULES["harness_builtins.training.losses"]
    assert not {i for i in _imports("harness_builtins.training.losses", path) if i.startswith("harness_builtins.rerank")}
    top = {i for i in _imports("harness_builtins.training.losses", path, runtime_only=True)
           if i.startswith("harness_builtins.common")} & _module_level_imports(path)
    assert top == set()


def _module_level_imports(path: Path) -> set[str]:
    """The ``harness_builtins`` modules a file imports at module level (``from X import Y``: X and X.Y)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_no_private_name_crosses_plugin_packages():
    """No built-in imports a private (``_``) name of another plugin package or of the shared
    package, nor reaches one as an attribute of such a module (``upr._template``)."""
    offenders = []
    for module, path in MODULES.items():
        own = _plugin_of(module)
        if own is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}  # local name -> another package's module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if _plugin_of(node.module) in (None, own):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_"):
                        offenders.append(f"{module} imports {node.module}.{alias.name}")
                    if f"{node.module}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _plugin_of(alias.name) not in (None, own) and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_")):
                offenders.append(f"{module} uses {aliases[node.value.id]}.{node.attr}")
    assert offenders == []


# --- layers of the core ----------------------------------------------------------------------------


def test_results_import_nothing_of_the_analyses_or_the_board():
    """The result model sits below the analyses and the board: ``harness.results`` imports
    neither ``harness.analysis`` nor ``harness.board`` (not even for type checkers, nor inside a
    function); the board reads results and analyses, never the other way round."""
    offenders = [
        f"{module} imports {imported}"
        for module, path in MODULES.items() if module == "harness.results" or module.startswith("harness.results.")
        for imported in _imports(module, path)
        if imported.split(".")[:2] in (["harness", "analysis"], ["harness", "board"])
    ]
    assert offenders == []


def test_only_the_board_and_the_command_line_import_the_board():
    """``harness.board`` is the top layer of the library: only its own modules and ``harness.cli``
    import it."""
    offenders = [
        f"{module} imports {imported}"
        for module, path in MODULES.items()
        if not module.startswith(("harness.board", "harness.cli"))
        for imported in _imports(module, path)
        if imported == "harness.board" or imported.startswith("harness.board.")
    ]
    assert offenders == []


def test_run_files_import_nothing_of_the_runner():
    """Reading and scoring run files (``harness.runfiles``) sits below the runner: it never imports
    ``harness.evaluate`` (not even inside a function); the result document is built by
    :mod:`harness.results.build`."""
    offenders = [
        f"{module} imports {imported}"
        for module, path in MODULES.items() if module == "harness.runfiles" or module.startswith("harness.runfiles.")
        for imported in _imports(module, path)
        if imported == "harness.evaluate" or imported.startswith("harness.evaluate.")
    ]
    assert offenders == []


def _imports_of_layer(layer: str) -> list[tuple[str, str]]:
    """(module, imported module) for every import, anywhere in the code (functions and
    ``TYPE_CHECKING`` blocks included), of the modules of the core package ``layer``."""
    return [
        (module, imported)
        for module, path in MODULES.items() if module == layer or module.startswith(layer + ".")
        for imported in _imports(module, path)
    ]


def _within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_data_layer_imports_nothing_of_the_runner():
    """Datasets, corpora and training examples (``harness.data``) sit below the runner: they never
    import ``harness.evaluate``, not even inside a function or for type checkers (distant
    supervision retrieves through :mod:`harness.scoring.retrieval`)."""
    offenders = [f"{m} imports {i}" for m, i in _imports_of_layer("harness.data") if _within(i, "harness.evaluate")]
    assert offenders == []


def test_util_imports_nothing_that_loads_plugins():
    """``harness.util`` is the bottom layer: it imports neither the plugin machinery
    (``harness.plugins``), nor the registry that loads plugins, nor any plugin, not even inside a
    function or for type checkers (what a result records of its plugins is given to
    :func:`harness.util.environment.versions` by its caller)."""
    offenders = [
        f"{m} imports {i}" for m, i in _imports_of_layer("harness.util")
        if _within(i, "harness.plugins", "harness.registry", "harness_builtins")
    ]
    assert offenders == []

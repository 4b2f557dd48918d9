"""The test tree mirrors the code: ``tests/core/<package>`` for the core's packages,
``tests/builtins/<plugin>`` for the built-in plugins, ``tests/rules`` for rules over the whole
repository, ``tests/helpers`` for what tests share; no test module imports another."""

from __future__ import annotations

import ast

from helpers.paths import REPO, TESTS

TOP = {"core", "builtins", "rules", "helpers", "benchmarks", "data", "__pycache__"}


def _test_modules():
    return sorted(p for p in TESTS.rglob("test_*.py") if "benchmarks" not in p.relative_to(TESTS).parts)


def test_the_top_of_the_tree_is_the_known_folders():
    found = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert found <= TOP, found - TOP
    assert [p.name for p in TESTS.glob("test_*.py")] == []


def test_core_and_builtin_folders_name_real_packages():
    core = {p.name for p in (REPO / "harness").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    # modules of the core's top level (evaluate.py, registry.py, plugins.py ...) are tested under
    # the package that uses them most; their folders are named here
    core |= {"plugins", "cli", "evaluate"}
    for folder in (TESTS / "core").iterdir():
        if folder.is_dir() and folder.name != "__pycache__":
            assert folder.name in core, f"tests/core/{folder.name} names no harness package"
    builtins = REPO / "plugins" / "harness_builtins"
    for folder in (TESTS / "builtins").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            rel = folder.relative_to(TESTS / "builtins")
            target = builtins / rel
            assert target.is_dir() or target.with_suffix(".py").is_file(), f"tests/builtins/{rel} names no built-in plugin package"


def test_no_test_module_imports_another():
    names = {p.stem for p in TESTS.rglob("test_*.py")}
    offenders = []
    for path in _test_modules() + sorted((TESTS / "helpers").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in names:
                offenders.append(f"{path.relative_to(TESTS)} imports {node.module}")
            if isinstance(node, ast.Import):
                offenders += [f"{path.relative_to(TESTS)} imports {a.name}" for a in node.names if a.name.split(".")[-1] in names]
    assert offenders == []


def test_test_module_names_are_unique():
    # pytest imports test modules by their file name (rootdir-relative packages are not used)
    stems = [p.stem for p in TESTS.rglob("test_*.py")]
    assert sorted(set(stems)) == sorted(stems), sorted({s for s in stems if stems.count(s) > 1})

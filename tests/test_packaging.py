"""pyproject.toml lists every package explicitly; nothing of the source tree may be left out of a
wheel: each package folder, and each data file a package reads at run time."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = CONFIG["tool"]["setuptools"]


def package_dir(package: str) -> Path:
    """The folder of ``package`` after ``[tool.setuptools.package-dir]``."""
    mapping = SETUPTOOLS.get("package-dir", {})
    parts = package.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in mapping:
            return REPO / mapping[prefix] / Path(*parts[i:])
    return REPO / Path(*parts)


def found_packages() -> set[str]:
    out = set()
    for root, name in ((REPO / "harness", "harness"), (REPO / "plugins" / "harness_builtins", "harness_builtins")):
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            out.add(".".join([name, *rel.parts]))
    return out


def test_every_package_is_listed():
    listed = set(SETUPTOOLS["packages"])
    assert found_packages() - listed == set()
    assert listed - found_packages() == set()


def test_every_data_file_is_shipped():
    package_data = SETUPTOOLS.get("package-data", {})
    missing = []
    for package in SETUPTOOLS["packages"]:
        folder = package_dir(package)
        patterns = package_data.get(package, [])
        for path in folder.rglob("*"):
            if not path.is_file() or path.suffix in {".py", ".pyc"} or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(folder).as_posix()
            first = Path(rel).parts[0]
            if len(Path(rel).parts) > 1 and (folder / first / "__init__.py").is_file():
                continue  # a file of a subpackage: checked with that package
            if not any(fnmatch.fnmatch(rel, pattern) for pattern in patterns):
                missing.append(f"{package}: {rel}")
    assert missing == []


def test_the_entry_points_name_importable_builtin_modules():
    import importlib

    for name, module in CONFIG["project"]["entry-points"]["harness"].items():
        assert importlib.import_module(module).__name__ == module, name

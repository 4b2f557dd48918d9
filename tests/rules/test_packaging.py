"""pyproject.toml lists every package explicitly; nothing of the source tree may be left out of a
wheel: each package folder, and each data file a package reads at run time."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from helpers.paths import REPO

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
    roots = ((REPO / "harness", "harness"), (REPO / "plugins" / "harness_builtins", "harness_builtins"),
             (REPO / "datasets_spec", "harness_builtins.datasets_spec"))
    for root, name in roots:
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


def test_the_built_wheel_ships_the_top_level_spec_folder(tmp_path):
    """``datasets_spec/`` sits at the top of the repository and is installed as
    ``harness_builtins.datasets_spec``: every spec file is in the wheel under that package."""
    import shutil
    import subprocess
    import sys
    import zipfile

    import pytest

    source = tmp_path / "source"  # a copy: an in-tree build would leave build/ in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for name in ("harness", "plugins", "datasets_spec"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"no wheel could be built here: {built.stderr.strip()[-200:]}")
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    specs = {f"harness_builtins/datasets_spec/{p.relative_to(REPO / 'datasets_spec').as_posix()}"
             for p in (REPO / "datasets_spec").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert specs and specs <= names

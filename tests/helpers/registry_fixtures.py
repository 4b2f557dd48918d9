"""Published tables, result files and plugin failures under hostile input: the spec folders, registries and
CLI runner their tests share."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from harness import hookimpl
from harness.cli.main import main

TABLE = '''
name = "{name}"
title = "T"
citation = "C"
[[rows]]
system = "BM25"
suite = "s"
retriever = "r"
values = {{ 1 = 50.0, 5 = 55.0 }}
'''


DEEP = 'name = "deep"\nx = ' + "[" * 5000 + "]" * 5000 + "\n"


def spec_folder(root: Path, tables: dict[str, str]) -> Path:
    (root / "published").mkdir(parents=True)
    for file, text in tables.items():
        (root / "published" / file).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def fresh_registries(monkeypatch):
    """Registries built anew from the installed plugins for this test, and dropped after it."""
    from harness import plugins, registry

    monkeypatch.setattr(registry, "_cache", {})
    plugins.loaded_plugins.cache_clear()
    yield
    plugins.loaded_plugins.cache_clear()


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def hits_of(*hits: int) -> dict:
    return {"all": {f"q{i}": 0 if h else None for i, h in enumerate(hits)}}


def plugin_module(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, fn in hooks.items():
        setattr(module, hook, hookimpl(fn))
    return module

"""The documentation cannot drift from the code: hooks, kinds, suites, plugin names and layout.

Each test reads a reference page in ``docs/`` (the plugin system, suites and data, the layout), the
plugin tutorial or the README and compares it with what the code defines.
"""

from __future__ import annotations

import inspect
import re
import tomllib

import pytest

from harness import hookspecs
from harness.registry import KINDS
from helpers.paths import REPO

PLUGINS = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
SUITES = (REPO / "docs" / "suites-and-data.md").read_text(encoding="utf-8")
LAYOUT = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
TUTORIAL = (REPO / "docs" / "writing-plugins.md").read_text(encoding="utf-8")
DOCS = {"docs/plugins.md": PLUGINS, "docs/writing-plugins.md": TUTORIAL}

HOOKS = {
    name: fn
    for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and getattr(fn, "harness_spec", None) is not None
}


def signature(name: str) -> str:
    """``register_suites(register: Callable[[SuiteSpec], None]) -> None``, as the docs must show it."""
    return f"{name}{inspect.signature(HOOKS[name])}".replace("'", "")


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The cells of each body row of the markdown table whose first header cell is ``first_header``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2 :]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"no table with first header {first_header!r}")


def test_there_is_a_hook_per_kind_and_commands():
    assert set(HOOKS) == {kind.hook for kind in KINDS.values()} | {"register_commands"}


@pytest.mark.parametrize("doc", sorted(DOCS))
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_every_hook_is_in_the_hook_table_with_its_exact_signature(doc, hook):
    rows = table_rows(DOCS[doc], "hook")
    cells = {row[0].strip("`"): row for row in rows}
    assert signature(hook) in cells, f"{doc}: the hook table lacks `{signature(hook)}`"


@pytest.mark.parametrize("doc", sorted(DOCS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_in_the_hook_table_with_its_record(doc, kind):
    rows = {row[0].strip("`"): row for row in table_rows(DOCS[doc], "hook")}
    row = rows[signature(KINDS[kind].hook)]
    assert KINDS[kind].record.__name__ in " ".join(row), f"{doc}: {kind}'s row does not name its record"
    assert f"harness list {kind}" in DOCS[doc], f"{doc} does not show `harness list {kind}`"


def test_no_doc_names_a_hook_that_does_not_exist():
    for doc, text in DOCS.items():
        named = set(re.findall(r"\bregister_[a-z_]+\b", text))
        assert named - set(HOOKS) <= {"register_retreivers"}, doc  # the tutorial's deliberate typo


def test_every_suite_spec_is_in_the_suite_table():
    from harness_builtins.datasets.catalog import SPEC_DIR

    rows = table_rows(SUITES, "suite")
    listed = {name for row in rows for name in re.findall(r"`([a-z0-9][a-z0-9._-]*)`", row[0])}
    specs = {tomllib.loads(p.read_text(encoding="utf-8"))["name"] for p in (SPEC_DIR / "suites").glob("*.toml")}
    assert specs - listed == set(), "suites missing from docs/suites-and-data.md's suite table"
    from harness_builtins.demo import register_suites

    generated: set[str] = set()
    register_suites(register=lambda spec: generated.add(spec.name))
    assert generated >= {"demo", "demo-train", "demo-dev"}
    assert listed - specs - generated == set(), "docs/suites-and-data.md's suite table names suites that do not exist"
    assert generated - listed == set(), "generated suites missing from docs/suites-and-data.md's suite table"


def test_the_tutorial_names_every_taken_plugin_name():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    builtins = set(pyproject["project"]["entry-points"]["harness"])
    (sentence,) = re.findall(r"\(([^()]*are taken)\)", " ".join(TUTORIAL.split()))
    named = set(re.findall(r"`([a-z0-9_-]+)`", sentence))
    assert named == builtins | {"harness"}


def test_the_layout_lists_every_core_subpackage():
    block = LAYOUT[LAYOUT.index("# Layout") :]
    for path in sorted((REPO / "harness").iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            assert f"{path.name}/" in block, f"docs/layout.md lacks harness/{path.name}/"


def test_the_layout_names_every_module():
    """Every module of the core and of the built-in plugins is named in its package's section."""
    for root, heading in (("harness", "## The core"), ("plugins/harness_builtins", "## The built-in plugins")):
        section = LAYOUT[LAYOUT.index(heading) :]
        following = section.find("\n## ", 1)
        section = section if following < 0 else section[:following]
        missing = [p.relative_to(REPO).as_posix() for p in sorted((REPO / root).rglob("*.py"))
                   if "__pycache__" not in p.parts and p.name not in section]
        assert missing == [], f"docs/layout.md does not name {missing}"


def test_the_readme_is_a_front_page():
    """About 200-250 lines, the two commands first, exactly as CI runs them, and a link to every
    reference page."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 260
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    assert blocks[:2] == [
        'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install -e ".[test]" '
        "&& harness run --retriever bm25 --suite demo",
        ". .venv/bin/activate && HF_HUB_OFFLINE=1 python -m pytest",
    ]
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"

"""Published tables under hostile input: a malformed or deeply nested table file is left out on its
own with one line naming it, a name given twice keeps the first and names both files, and
``harness reproduce --check`` never passes because a table was left out.
"""

from __future__ import annotations

import pytest

from harness.analysis.published import read_published_table
from harness.errors import InputFileError
from harness.plugins import LoadedPlugins, new_plugin_manager, register_plugin
from harness.results.schema import write_result
from helpers.registry_fixtures import (
    DEEP,
    TABLE,
    cli,
    hits_of,
    plugin_module,
    spec_folder,
)
from helpers.result_docs import make_result

# --- published tables ----------------------------------------------------------------------


def test_deeply_nested_published_toml_is_one_line_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_published_table(path)
    assert str(info.value) == f"{path}: TOML nested too deeply"


def test_a_broken_published_file_is_left_out_alone(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    spec = spec_folder(tmp_path / "specs", {"deep.toml": DEEP, "p-1.toml": TABLE.format(name="p-1")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    code, out, err = cli(capsys, "list", "published")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert "p-1" in names and "karpukhin2020-table2" in names  # the user's good table and the built-ins
    (warning,) = [line for line in err.splitlines() if "deep.toml" in line]
    assert warning.startswith("harness: warning: plugin 'datasets'") and "register_published" in warning
    assert "TOML nested too deeply" in warning
    (failure,) = registry.registry("published").failures
    assert "deep.toml" in failure


def test_a_table_name_given_twice_keeps_the_first_and_names_both_files(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    builtin = "karpukhin2020-table2"
    first = spec_folder(tmp_path / "one", {"p-1.toml": TABLE.format(name="p-1"), f"{builtin}.toml": TABLE.format(name=builtin)})
    second = spec_folder(tmp_path / "two", {"p-1.toml": TABLE.format(name="p-1").replace('title = "T"', 'title = "later"')})
    monkeypatch.setenv("HARNESS_SPEC_PATH", f"{first}:{second}")
    published = registry.registry("published")
    assert published.get("p-1").title == "T"  # the earlier folder wins
    assert published.get(builtin).source.endswith(f"datasets_spec/published/{builtin}.toml")  # the built-in wins
    assert not published.conflicts
    failures = published.failures
    assert len(failures) == 2
    (own,) = [f for f in failures if str(second / "published" / "p-1.toml") in f]
    assert str(first / "published" / "p-1.toml") in own and "also defined in" in own
    (shadow,) = [f for f in failures if str(first / "published" / f"{builtin}.toml") in f]
    assert f"datasets_spec/published/{builtin}.toml" in shadow


def test_a_broken_published_file_never_turns_a_failing_check_into_a_pass(tmp_path, monkeypatch, capsys, fresh_registries):
    from harness import registry

    spec = spec_folder(tmp_path / "specs", {"p-1.toml": TABLE.format(name="p-1")})
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(spec))
    results = tmp_path / "results"
    write_result(make_result("r", suite="s", ranks=hits_of(1, 1, 0, 0)), results)  # top-1 50 (OK), top-5 50 (drift)
    code, out, err = cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "1 of 2 comparisons drift" in err

    # a broken file next to it: the drift is still found and still fails the check
    (spec / "published" / "deep.toml").write_text(DEEP, encoding="utf-8")
    registry._cache.clear()
    code, out, err = cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "DRIFT" in out and "1 of 2 comparisons drift" in err
    assert "deep.toml: TOML nested too deeply" in err

    # no drift left, but a table could not be read: the check is incomplete, not passed
    write_result(make_result("r", suite="s", ranks=hits_of(1, 1, 0, 0)), results)
    (spec / "published" / "p-1.toml").write_text(TABLE.format(name="p-1").replace("55.0", "50.0"), encoding="utf-8")
    registry._cache.clear()
    code, out, err = cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "DRIFT" not in out and "the check is incomplete" in err and "deep.toml" in err
    assert cli(capsys, "reproduce", "--results-dir", str(results))[0] == 0  # a report without --check
    (spec / "published" / "deep.toml").unlink()
    registry._cache.clear()
    assert cli(capsys, "reproduce", "--results-dir", str(results), "--check")[0] == 0


def test_a_table_name_two_plugins_register_fails_the_check(tmp_path, monkeypatch, capsys):
    from harness import plugins, registry

    table = read_published_table(spec_folder(tmp_path, {"p-1.toml": TABLE.format(name="p-1")}) / "published" / "p-1.toml")
    manager = new_plugin_manager()
    for name in ("mine", "theirs"):
        register_plugin(manager, plugin_module(name, register_published=lambda register: register(table)), name)
    loaded = LoadedPlugins(manager=manager, plugins=())
    monkeypatch.setattr(plugins, "loaded_plugins", lambda: loaded)
    monkeypatch.setattr(registry, "_cache", {})
    results = tmp_path / "results"
    write_result(make_result("r", suite="s", ranks=hits_of(1, 0)), results)
    code, out, err = cli(capsys, "reproduce", "--results-dir", str(results), "--check")
    assert code == 1 and "published table 'p-1' is provided by two plugins: 'mine' and 'theirs'" in err



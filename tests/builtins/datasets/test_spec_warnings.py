"""A malformed spec of a user's folder is one warning per process, however often the catalogue is
read (once per kind of spec a command registers), and it names every problem of the file."""

from __future__ import annotations

from harness_builtins.datasets.catalog import catalog


def test_a_malformed_spec_is_warned_of_once_with_all_its_problems(tmp_path, monkeypatch, capsys):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "bad.toml").write_text('name = "Bad"\ndescription = 1\nmatch = "string"\ncorpus = "c"\nparts = []\n')
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    first = catalog()
    second = catalog()
    assert "bad" not in first.suites and "Bad" not in second.suites
    warnings = [line for line in capsys.readouterr().err.splitlines() if "bad.toml" in line]
    assert len(warnings) == 1
    (line,) = warnings
    for problem in ("'description' must be str, got int", "'name' must be lowercase", "'parts' must list at least one part"):
        assert problem in line

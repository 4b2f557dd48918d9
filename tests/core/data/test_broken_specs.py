"""One broken spec file leaves the other suites usable.
"""

from __future__ import annotations

import pytest

from harness.errors import InputFileError

# --- 10. one broken spec file leaves the other suites usable -----------------------------------


def test_one_broken_spec_file_does_not_hide_the_other_suites(tmp_path, monkeypatch, capsys):
    from harness_builtins.datasets.catalog import catalog

    (tmp_path / "suites").mkdir()
    (tmp_path / "corpora").mkdir()
    (tmp_path / "suites" / "broken.toml").write_text("name = [unclosed\n")
    monkeypatch.setenv("HARNESS_SPEC_PATH", str(tmp_path))
    found = catalog()
    assert "nq" in found.suites and "entityquestions" in found.suites
    assert "broken.toml" in capsys.readouterr().err
    with pytest.raises(InputFileError, match="broken.toml"):
        catalog(strict=True)

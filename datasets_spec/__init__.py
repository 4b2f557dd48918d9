"""Dataset specs shipped with harness (TOML files; see README.md here and harness/specs.py)."""

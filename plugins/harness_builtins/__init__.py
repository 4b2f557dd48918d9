"""The built-in plugins of harness.

Each module here is a plugin registered through the ``harness`` entry-point group, exactly as a
third-party plugin is, and imports only the public ``harness`` API.
"""

"""The ``harness`` command line: thin commands over the library API."""

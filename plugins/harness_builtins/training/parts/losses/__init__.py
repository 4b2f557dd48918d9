"""The training losses (``harness list losses``), one spec per module; the classes are in
:mod:`harness_builtins.training.losses`."""

"""The negative miners (``harness list miners``), one spec per module; the classes are in
:mod:`harness_builtins.training.mining`."""

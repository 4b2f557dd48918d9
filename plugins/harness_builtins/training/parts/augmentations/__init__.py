"""The training-time augmentations (``harness list augmentations``), one spec per module; the
classes are in :mod:`harness_builtins.training.augmentations`."""

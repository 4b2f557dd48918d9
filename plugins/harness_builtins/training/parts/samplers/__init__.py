"""The batch samplers (``harness list samplers``), one spec per module; the classes are in
:mod:`harness_builtins.training.samplers`."""

from harness.api import boolean

#: The options every sampler here takes.
BATCH_OPTIONS = {
    "drop_last": boolean(False, help="drop a last batch smaller than batch_size"),
    "unique_positives": boolean(True, help="keep examples sharing a positive passage in different batches"),
}

"""``harness train`` with a trace of the examples each process trains on, for the torchrun tests.

Run as ``python tests/helpers/torchrun_train.py TRACE_DIR ARGS...`` (one process) or under
``torch.distributed.run`` (each rank): every batch the trainer reads in its training loop is appended to
``TRACE_DIR/rank{RANK}.jsonl`` as ``{"epoch", "indices"}`` (the example indices, in batch order),
then ``harness ARGS`` runs in this process.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    trace = Path(sys.argv[1])
    trace.mkdir(parents=True, exist_ok=True)
    from harness_builtins.training.data import AugmentingColumns

    original = AugmentingColumns.__call__
    path = trace / f"rank{os.environ.get('RANK', '0')}.jsonl"

    def traced(self, batch):
        import inspect

        training = any(frame.function in ("_run_epoch", "_inner_training_loop") for frame in inspect.stack(0))
        if not training:  # the model card's look at the data, not a training batch
            return original(self, batch)
        if os.environ.get("TRACE_PAUSE"):  # seconds per batch: room for a test to kill the run mid-way
            import time

            time.sleep(float(os.environ["TRACE_PAUSE"]))
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"epoch": self.epoch, "indices": [int(i) for i in batch["index"]]}) + "\n")
        return original(self, batch)

    AugmentingColumns.__call__ = traced
    from harness.cli.main import main as harness

    return harness(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())

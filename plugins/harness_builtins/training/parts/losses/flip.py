"""The ``flip`` loss: each positive passage picks its question among the batch's questions."""

from harness.api import LossSpec

from harness_builtins.training.parts import Lazy

SPEC = LossSpec(
    name="flip",
    description=(
        "flipped objective: each positive passage picks its question among the batch's questions "
        "(Sciavolino 2022, Princeton thesis)"
    ),
    citation=(
        'Sciavolino 2022, "Towards Universal Dense Retrieval for Open-Domain Question Answering" '
        '(M.S.E. thesis, Princeton University) §5.1 ("Flipped Training")'
    ),
    load=Lazy("harness_builtins.training.losses:FlippedLoss"),
)

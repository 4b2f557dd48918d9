"""The ``stopgrad`` loss: DPR's loss in two halves, each with one side detached."""

from harness.api import LossSpec

from harness_builtins.training.parts import Lazy

SPEC = LossSpec(
    name="stopgrad",
    description=(
        "stop-gradient DPR loss: half through passages with questions detached, half the reverse "
        "(Sciavolino 2022, Princeton thesis, after Chen and He 2020, arXiv:2011.10566)"
    ),
    citation=(
        'Sciavolino 2022, "Towards Universal Dense Retrieval for Open-Domain Question Answering" (M.S.E. thesis, '
        'Princeton University) §5.1, eq. 5.1; after Chen and He 2020, "Exploring Simple Siamese Representation Learning", '
        "arXiv:2011.10566"
    ),
    load=Lazy("harness_builtins.training.losses:StopGradientLoss"),
)

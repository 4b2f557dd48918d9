"""The ``dpr`` loss: DPR's in-batch negative log-likelihood."""

from harness.api import LossSpec

from harness_builtins.training.parts import Lazy

SPEC = LossSpec(
    name="dpr",
    description=(
        "DPR's in-batch NLL: dot-product scores, each question's positive among every passage of the "
        "batch (Karpukhin et al. 2020, arXiv:2004.04906)"
    ),
    citation=(
        'Karpukhin et al. 2020, "Dense Passage Retrieval for Open-Domain Question Answering", arXiv:2004.04906, '
        "§3.2 (eq. 2); Sciavolino 2022, 'Towards Universal Dense Retrieval for Open-Domain Question Answering' "
        "(M.S.E. thesis, Princeton University) §2.3, eq. 2.8"
    ),
    load=Lazy("harness_builtins.training.losses:DPRLoss"),
)

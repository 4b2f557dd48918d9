"""The ``qsft`` loss: query-side fine-tuning against a frozen index (in the loop)."""

from harness.api import LossSpec

from harness_builtins.training.parts import Lazy

SPEC = LossSpec(
    name="qsft",
    description=(
        "query-side fine-tuning: -log of the softmax mass on answer-bearing passages among the top k "
        "retrieved from the frozen index (Lee et al. 2021, arXiv:2012.12624)"
    ),
    citation=(
        'Lee, Sung, Kang and Chen 2021, "Learning Dense Representations of Phrases at Scale", arXiv:2012.12624 '
        "(query-side fine-tuning); Sciavolino 2022, 'Towards Universal Dense Retrieval for Open-Domain Question "
        "Answering' (M.S.E. thesis, Princeton University) §5.2"
    ),
    load=Lazy("harness_builtins.training.losses:QSFTLoss"),
    in_loop=True,
)

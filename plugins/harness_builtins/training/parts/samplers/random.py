"""The ``random`` sampler: DPR's shuffled batches."""

from harness.api import SamplerSpec

from harness_builtins.training.parts import Lazy
from harness_builtins.training.parts.samplers import BATCH_OPTIONS

OPTIONS = dict(BATCH_OPTIONS)

SPEC = SamplerSpec(
    name="random",
    description=(
        "DPR's batches: shuffled, cut into batch_size (duplicate positives kept apart; Karpukhin et al. "
        "2020, arXiv:2004.04906)"
    ),
    citation=(
        'Karpukhin et al. 2020, "Dense Passage Retrieval for Open-Domain Question Answering", arXiv:2004.04906, '
        "§3.2 (in-batch negatives)"
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.samplers:RandomSampler", OPTIONS),
)

"""The ``harder-batches`` sampler: batches of one category, so in-batch negatives are alike."""

from harness.api import Option, SamplerSpec, boolean, choice, integer, positive_int

from harness_builtins.training.parts import Lazy
from harness_builtins.training.parts.samplers import BATCH_OPTIONS

OPTIONS = {
    "by": choice("auto", ("auto", "label", "cluster")),
    "clusters": positive_int(None, help="k-means clusters (null: examples / (4 x batch_size))"),
    "vectors": Option(None, help="[n, d] vectors aligned with the examples, to cluster"),
    "embed": Option(None, help="examples -> [n, d] vectors, to cluster"),
    "normalize": boolean(True, help="cluster unit vectors (cosine)"),
    "seed": integer(0, help="the k-means seed"),
    "backend": choice("auto", ("auto", "sklearn", "numpy"), help="k-means implementation"),
    **BATCH_OPTIONS,
}

SPEC = SamplerSpec(
    name="harder-batches",
    description=(
        "harder in-batch negatives: batches of one label (e.g. the relation) or one k-means cluster "
        "(Hoang 2022, NTU thesis)"
    ),
    citation=(
        'Hoang 2022, "Open Domain Question Answering System" (B.Sc. thesis, Nanyang Technological '
        'University) ch. 6, §6.1'
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.samplers:HarderBatchesSampler", OPTIONS),
)

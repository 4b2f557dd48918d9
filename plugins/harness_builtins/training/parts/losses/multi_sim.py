"""The ``multi-sim`` loss: DPR's NLL plus question-question and passage-passage in-batch NLLs."""

from harness.api import LossSpec, choice, non_negative_float

from harness_builtins.training.parts import Lazy

OPTIONS = {
    "lambda_qq": non_negative_float(0.1),
    "lambda_pp": non_negative_float(0.1),
    "pp_passages": choice("positives", ("positives", "all"), help="the passage-passage term's anchors"),
}

SPEC = LossSpec(
    name="multi-sim",
    description=(
        "DPR NLL + lambda_qq question-question + lambda_pp passage-passage in-batch NLL (Hoang 2022, NTU thesis)"
    ),
    citation=(
        'Hoang 2022, "Open Domain Question Answering System" (B.Sc. thesis, Nanyang Technological University) '
        "ch. 5, eqs. 5.2-5.7, Table 5.1"
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.losses:MultiSimilarityLoss", OPTIONS),
)

"""The ``late-interaction`` loss: DPR's NLL plus the NLL of a trained scoring head."""

from harness.api import LossSpec, choice, non_negative_float, positive_int

from harness_builtins.training.parts import Lazy

OPTIONS = {
    "lambda_late": non_negative_float(1.0),
    "dim": positive_int(None, help="the embedding size (null: the model's)"),
    "init": choice("zeros", ("zeros", "uniform"), help="the head's initialisation"),
}

SPEC = LossSpec(
    name="late-interaction",
    description="DPR NLL + lambda_late * NLL of a trained head m^T [q; p; q*p; q-p] (Hoang 2022, NTU thesis)",
    citation=(
        'Hoang 2022, "Open Domain Question Answering System" (B.Sc. thesis, Nanyang Technological '
        'University) ch. 4, eqs. 4.1-4.4'
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.losses:LateInteractionLoss", OPTIONS),
)

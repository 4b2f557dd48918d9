"""A training loss of the example plugin: a margin (hinge) loss over the batch's passages.

For question ``i`` with positive passage ``p_i`` and every other passage ``j`` of the batch
(the other questions' positives and all hard negatives), with dot-product scores ``s``:

    L = mean_i mean_{j != p_i} max(0, margin - s(q_i, p_i) + s(q_i, p_j))

harness hands the loss the batch's embeddings (already gathered over devices) and trains the
encoders with it; ``harness train --variant example-margin`` uses it.
"""

from __future__ import annotations

import torch


class MarginLoss(torch.nn.Module):
    def __init__(self, *, margin: float = 1.0) -> None:
        super().__init__()
        if not margin > 0:
            raise ValueError(f"margin must be positive, got {margin!r}")
        self.margin = float(margin)

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        scores = questions @ passages.T  # [B, N]
        own = scores.gather(1, positive[:, None])  # [B, 1]
        hinge = (self.margin - own + scores).clamp(min=0)
        others = torch.ones_like(scores, dtype=torch.bool).scatter(1, positive[:, None], False)
        loss = hinge[others].view(scores.shape[0], -1).mean()
        violations = (hinge[others] > 0).float().mean()
        return {"loss": loss, "violations": violations}

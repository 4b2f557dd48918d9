"""Cross-encoders: any sentence-transformers ``CrossEncoder`` (``-R model=HUB_ID_OR_DIR``) scores
each (question, passage) pair; the score is the model's raw logit (no sigmoid, which would only
squash the scale and create ties at saturation). The passage side is ``title text``
(``-R format=title_text``, the default) or the text alone (``-R format=text``, as MS MARCO
cross-encoders were trained). Only single-score models rank passages; a model with several labels
is refused.
"""

from __future__ import annotations

from typing import Any

from harness.api import Hit
from harness.errors import HarnessError
from harness.util.models import ModelRef

from harness_builtins.common.devices import default_batch_size, resolve_device


class CrossEncoderReranker:
    """The ``cross-encoder`` re-ranker."""

    def __init__(
        self,
        *,
        model: Any,
        revision: str | None = None,
        max_length: int = 512,
        format: str = "title_text",
        batch_size: int | None = None,
        device: str = "auto",
    ):
        self.ref = ModelRef(model, revision)
        self.device = resolve_device(device)
        self.batch_size = default_batch_size(batch_size, self.device)
        # max_length and format are checked by their declarations (CROSS_ENCODER_OPTIONS)
        self.max_length = max_length
        self.format = format
        self._model = None

    def parameters(self) -> dict[str, Any]:
        return {"model": self.ref.describe(), "max_length": self.max_length, "format": self.format, "score": "logit"}

    def _loaded(self):
        if self._model is None:
            from sentence_transformers import CrossEncoder

            try:
                model = CrossEncoder(self.ref.path, revision=self.ref.revision, device=self.device, max_length=self.max_length)
            except (OSError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise HarnessError(f"cross-encoder: cannot load {self.ref.name_or_path!r}: {first}") from None
            labels = getattr(model, "num_labels", 1)
            if labels != 1:
                raise HarnessError(f"cross-encoder: {self.ref.name_or_path!r} has {labels} labels; only single-score models rank passages")
            model.eval()
            self._model = model
        return self._model

    def _passage(self, title: str, text: str) -> str:
        return f"{title} {text}" if self.format == "title_text" else text

    def score(self, question: str, passages: list[tuple[str, str]]) -> list[float]:
        import torch

        if not passages:
            return []
        model = self._loaded()
        pairs = [(question, self._passage(title, text)) for title, text in passages]
        scores = model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
        )
        return [float(s) for s in scores.reshape(len(pairs))]

    def rerank(self, questions, candidates, context):
        out = []
        for question, cands in zip(questions, candidates):
            scores = self.score(question, [(c.passage.title, c.passage.text) for c in cands])
            out.append([Hit(passage_id=c.passage_id, score=s) for c, s in zip(cands, scores)])
        return out

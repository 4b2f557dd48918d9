"""Training: the examples a trainer consumes and the parts plugins register.

Five kinds of parts, each registered like retrievers are (``harness list losses`` ...); what a
spec's ``load`` returns is the protocol next to it:

- :class:`LossSpec` (``register_losses``): ``load(**options)`` returns a :class:`Loss`, a
  ``torch.nn.Module`` whose
  ``forward(questions, passages, positive)`` takes the batch's question embeddings ``[B, d]``, the
  passage embeddings ``[N, d]`` (every positive and hard negative of the batch, gathered over
  devices) and ``positive`` (``[B]``, the row of each question's positive in ``passages``), and
  returns a mapping of named scalar tensors with the total under ``"loss"`` (the other entries are
  logged as the loss's parts). A loss may have parameters (a scoring head); they are trained with
  the encoders and saved with the checkpoint.
- :class:`SamplerSpec` (``register_samplers``): ``load(**options)`` returns a :class:`Sampler`,
  ``(examples, batch_size, rng) -> list[list[int]]``: the epoch's batches as indices into
  ``examples``.
- :class:`MinerSpec` (``register_miners``): ``load(**options)`` returns a :class:`Miner`,
  ``(examples, corpus, context) -> list[TrainingExample]`` (``corpus`` a :class:`~harness.api.Corpus`,
  ``context`` a :class:`~harness.api.RunContext`): the examples with hard negatives mined from
  ``corpus``.
- :class:`AugmentationSpec` (``register_augmentations``): ``load(**options)`` returns an
  :class:`Augmentation`, ``(text, rng) -> str`` applied to questions or passages at training time.
- :class:`VariantSpec` (``register_variants``): a named :class:`Recipe` composing the above with the
  encoder settings (shared or separate encoders, a question marker, a frozen side) and default
  hyperparameters. ``harness train --variant NAME`` runs it.

**Retrieval in the loop.** A recipe with ``retrieval`` (:class:`InLoopRetrieval`) trains on
questions alone: the trainer keeps an index of the corpus's passage embeddings (made by the
passage encoder, kept frozen or re-embedded every ``refresh_every`` steps), each step retrieves the
top ``k`` passages of every question with the current question encoder, and calls a loss whose
spec says ``in_loop=True`` (an :class:`InLoopLoss`) as ``forward(questions, retrieved)``:
``questions [B, d]`` with gradient and a :class:`RetrievedBatch`.

Specs are cheap metadata: nothing here imports torch. A spec's ``load`` should import what is
heavy when it is called, not when the spec is made, so ``harness list`` stays quick.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from harness.api.corpus import Corpus, Passage
from harness.api.options import Options
from harness.api.retrievers import RunContext


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainingExample:
    """One training question with its answers, positive passages and negatives (DPR's
    ``biencoder-*.json`` record: ``positive_ctxs``, ``hard_negative_ctxs``, ``negative_ctxs``).
    ``label`` is an optional category (e.g. the EntityQuestions relation) samplers may group by."""

    question: str
    answers: tuple[str, ...]
    positives: tuple[Passage, ...]
    hard_negatives: tuple[Passage, ...] = ()
    negatives: tuple[Passage, ...] = ()
    label: str | None = None


@runtime_checkable
class Loss(Protocol):
    """A loaded in-batch loss (a ``torch.nn.Module``; see the module notes): ``questions [B, d]``,
    ``passages [N, d]`` and ``positive [B]`` in, named scalar tensors out, the total under
    ``"loss"``."""

    def __call__(self, questions: Any, passages: Any, positive: Any) -> Mapping[str, Any]: ...


@runtime_checkable
class InLoopLoss(Protocol):
    """A loaded in-loop loss (a ``torch.nn.Module``): ``questions [B, d]`` and what the in-loop
    index retrieved for them in, named scalar tensors out, the total under ``"loss"``."""

    def __call__(self, questions: Any, retrieved: RetrievedBatch) -> Mapping[str, Any]: ...


@runtime_checkable
class Sampler(Protocol):
    """A loaded batch sampler: an epoch's batches as indices into ``examples``, every random
    choice drawn from ``rng`` (one seed, one set of batches)."""

    def __call__(self, examples: Sequence[TrainingExample], batch_size: int, rng: random.Random) -> list[list[int]]: ...


@runtime_checkable
class Miner(Protocol):
    """A loaded negative miner: ``examples`` with their hard negatives replaced by passages of
    ``corpus``. A miner may also offer ``parameters()`` (its settings, for the training record)."""

    def __call__(self, examples: Sequence[TrainingExample], corpus: Corpus, context: RunContext) -> list[TrainingExample]: ...


@runtime_checkable
class Augmentation(Protocol):
    """A loaded augmentation: ``text`` changed at training time; the same text and ``rng`` state
    give the same output."""

    def __call__(self, text: str, rng: random.Random) -> str: ...


@dataclass(frozen=True, kw_only=True)
class _PartSpec:
    """A training part a plugin offers: ``load(**options)`` builds it; ``options`` documents the
    keyword options ``load`` accepts, with their defaults or :class:`~harness.api.Option`
    declarations (checked before ``load``). ``citation`` names the work the part comes from
    (authors, year, title, arXiv id or publisher, and the section)."""

    name: str
    description: str
    load: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    citation: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", Options(self.options))


@dataclass(frozen=True, kw_only=True)
class LossSpec(_PartSpec):
    """A training loss over embeddings; ``load(**options)`` returns a :class:`Loss` (a
    ``torch.nn.Module``). ``in_loop``: the loss is an :class:`InLoopLoss`, taking ``(questions,
    retrieved)`` (a :class:`RetrievedBatch`), and needs a recipe with ``retrieval``."""

    load: Callable[..., Loss | InLoopLoss]
    in_loop: bool = False


@dataclass(frozen=True, kw_only=True)
class RetrievedBatch:
    """What an in-loop loss gets besides the question embeddings: for each of the batch's ``B``
    questions, the ``k`` passages the current question encoder retrieved from the in-loop index,
    best first. Tensors are on the questions' device; none carries gradient except what
    ``encode_passages`` returns."""

    #: The questions' texts and answers (from the training data).
    questions: Sequence[str]
    answers: Sequence[tuple[str, ...]]
    #: ``[B, k]`` int64: the retrieved passages' rows in the index (corpus order).
    rows: Any
    #: ``[B, k]`` float32: their inner products with the (detached) question embeddings.
    scores: Any
    #: ``[B, k, d]`` float32: their vectors in the index (as stored: what evaluation searches).
    vectors: Any
    #: ``[B][k]`` the retrieved passages.
    passages: Sequence[Sequence[Passage]]
    #: ``[B, k]`` bool: an answer of the question occurs in the passage's text (DPR's
    #: ``has_answer`` in the match mode of the corpus's suite, the rule scoring uses).
    has_answer: Any
    #: ``encode_passages(passages) -> [n, d]``: embeddings by the current passage encoder, with
    #: gradient (for losses that train the passage side, e.g. ART).
    encode_passages: Callable[[Sequence[Passage]], Any]


@dataclass(frozen=True, kw_only=True)
class SamplerSpec(_PartSpec):
    """How an epoch's examples are cut into batches; ``load(**options)`` returns a :class:`Sampler`."""

    load: Callable[..., Sampler]


@dataclass(frozen=True, kw_only=True)
class MinerSpec(_PartSpec):
    """Where hard negatives come from; ``load(**options)`` returns a :class:`Miner`."""

    load: Callable[..., Miner]


@dataclass(frozen=True, kw_only=True)
class AugmentationSpec(_PartSpec):
    """A change to input text at training time; ``load(**options)`` returns an :class:`Augmentation`."""

    load: Callable[..., Augmentation]


#: A part of a recipe: a registered name and its options.
Part = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True, kw_only=True)
class InLoopRetrieval:
    """Retrieval inside the training loop (see the module notes).

    The index holds the embeddings of the corpus of ``harness train --corpus SUITE`` made by the
    passage encoder (the dense retrievers' embedding cache and encoding engine). ``refresh_every``:
    ``None`` keeps the index made at the start (query-side fine-tuning: the passage side is frozen
    and the index never changes); ``N`` re-embeds the corpus with the current passage encoder
    every ``N`` optimizer steps (ART). Each step retrieves the top ``k`` per question."""

    k: int = 100
    refresh_every: int | None = None


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """What a training variant composes. Every name is a registered part."""

    loss: Part = ("dpr", {})
    sampler: Part = ("random", {})
    #: Hard negatives per question taken from the training data (DPR: 1).
    hard_negatives: int = 1
    #: A miner that replaces the data's hard negatives, or None to use them as they are.
    miner: Part | None = None
    #: Augmentations of questions and of passages, applied in order.
    question_augmentations: tuple[Part, ...] = ()
    passage_augmentations: tuple[Part, ...] = ()
    #: One encoder for both sides instead of a question and a passage encoder.
    shared_encoder: bool = False
    #: Text put before every question (a marker token telling the shared encoder the side).
    question_marker: str | None = None
    #: A side whose encoder stays as initialised (its parameters are not trained).
    frozen: Literal["question", "passage"] | None = None
    #: Retrieval inside the loop, for a loss whose spec has ``in_loop``; None for the rest.
    retrieval: InLoopRetrieval | None = None
    #: Train one model per label of the training data (e.g. per EntityQuestions relation), each
    #: on that label's examples alone, into ``OUT/labels/LABEL`` (specialised question encoders).
    split_by_label: bool = False
    #: A variant run first on ``--pretrain-data`` (into ``OUT/stages/pretrain``) whose model then
    #: starts this recipe (synthetic pre-training, then fine-tuning); None for one stage.
    pretrain: str | None = None
    #: Default hyperparameters (learning rate, batch size, epochs, ...), overridable by the user.
    defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class TrainingDataSpec:
    """A named training set (``harness train --data NAME``): ``load()`` returns the path of its
    file in DPR's training format (``biencoder-*.json``, gzip or not, or JSON lines), fetching it
    first if need be (with an offline error naming what to download)."""

    name: str
    description: str
    load: Callable[[], Any]


@dataclass(frozen=True, kw_only=True)
class VariantSpec:
    """A named training recipe: ``harness train --variant NAME``. ``reference`` cites where the
    variant comes from (paper and section)."""

    name: str
    description: str
    recipe: Recipe
    reference: str = ""

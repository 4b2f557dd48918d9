"""The records and protocols plugins exchange with the core, one module per extension family.

- :mod:`harness.api.corpus`      :class:`Passage`, the :class:`Corpus` protocol, :class:`InMemoryCorpus`,
  the corpus fingerprint
- :mod:`harness.api.suites`      :class:`Question`, :class:`Part`, :class:`Suite` (``Suite.from_lists``:
  a suite from Python lists), :class:`SuiteSpec`
- :mod:`harness.api.retrievers`  :class:`Hit`, :class:`RunContext`, the :class:`Retriever` protocol,
  :class:`RetrieverSpec`
- :mod:`harness.api.metrics`     :class:`MetricSpec` over first-hit ranks
- :mod:`harness.api.encoders`    the :class:`Encoder` protocol and :class:`EncoderSpec`
- :mod:`harness.api.published`   :class:`PublishedTable` and :class:`PublishedRow`: papers' numbers
- :mod:`harness.api.runs`        :class:`PublishedRun`: run files a paper's authors released
- :mod:`harness.api.runformats`  :class:`RunFormatSpec` and :class:`RunEntry`: reading a run format
- :mod:`harness.api.training`    :class:`TrainingExample`, the training parts' specs (losses, samplers,
  miners, augmentations) and protocols (:class:`Loss`, :class:`InLoopLoss`, :class:`Sampler`,
  :class:`Miner`, :class:`Augmentation`), :class:`VariantSpec` with its :class:`Recipe`, and
  :class:`TrainingDataSpec` (named training sets)
- :mod:`harness.api.rerankers`   :class:`Candidate`, the :class:`Reranker` protocol, :class:`RerankerSpec`
- :mod:`harness.api.models`    :class:`ModelMeta` (a configuration's model metadata: size, license,
  reference, the training sets it saw), :class:`Work`, and :func:`domain` (in-domain or zero-shot)
- :mod:`harness.api.options`     :class:`Option` (a spec option's default, type and bounds), the
  :class:`Options` every spec keeps, :func:`check_options` and the helpers for common kinds
  (:func:`positive_int`, :func:`probability`, :func:`choice`, ...)

Records are frozen, keyword-only dataclasses. Specs are cheap metadata: constructing one must not
import torch, pyserini or anything heavy, and must not read data; heavy work happens in a spec's
``load``. Every name is re-exported here: ``from harness.api import RetrieverSpec``.
"""

from harness.api.corpus import Corpus, InMemoryCorpus, Passage, PassageFingerprint, corpus_fingerprint
from harness.api.embeddings import EMBEDDING_FORMATS, EmbeddingsPart, ReleasedEmbeddings
from harness.api.encoders import Encoder, EncoderSpec, PassageInput
from harness.api.metrics import FirstHitRanks, MetricSpec
from harness.api.models import (
    DOMAINS,
    Domain,
    MetaDeclaration,
    ModelMeta,
    Work,
    combine,
    domain,
    meta_of,
    training_meta,
    training_set_name,
)
from harness.api.options import (
    Option,
    OptionError,
    Options,
    boolean,
    check_options,
    choice,
    integer,
    non_negative_float,
    non_negative_int,
    number,
    path,
    positive_float,
    positive_int,
    probability,
    template,
    text,
)
from harness.api.published import PublishedRow, PublishedTable
from harness.api.runs import PublishedRun
from harness.api.runformats import RunEntry, RunFormatSpec
from harness.api.retrievers import (
    MAX_K,
    BatchesSearches,
    Hit,
    PartAwareRetriever,
    Ranking,
    ReportsCompute,
    Retriever,
    RetrieverSpec,
    RunContext,
)
from harness.api.rerankers import DEFAULT_RERANK_DEPTH, Candidate, Reranker, RerankerSpec
from harness.api.suites import DEFAULT_K, MATCH_MODES, MatchMode, Part, Question, Suite, SuiteSpec
from harness.api.training import (
    Augmentation,
    AugmentationSpec,
    InLoopLoss,
    InLoopRetrieval,
    Loss,
    LossSpec,
    Miner,
    MinerSpec,
    Recipe,
    RetrievedBatch,
    Sampler,
    SamplerSpec,
    TrainingDataSpec,
    TrainingExample,
    VariantSpec,
)

__all__ = [
    "DEFAULT_K",
    "DOMAINS",
    "Domain",
    "MetaDeclaration",
    "ModelMeta",
    "Work",
    "combine",
    "domain",
    "meta_of",
    "training_meta",
    "training_set_name",
    "Augmentation",
    "AugmentationSpec",
    "InLoopLoss",
    "InLoopRetrieval",
    "Loss",
    "LossSpec",
    "Miner",
    "MinerSpec",
    "Recipe",
    "RetrievedBatch",
    "Sampler",
    "SamplerSpec",
    "TrainingDataSpec",
    "TrainingExample",
    "VariantSpec",
    "MATCH_MODES",
    "MAX_K",
    "Corpus",
    "EMBEDDING_FORMATS",
    "EmbeddingsPart",
    "Encoder",
    "EncoderSpec",
    "FirstHitRanks",
    "BatchesSearches",
    "Hit",
    "InMemoryCorpus",
    "MatchMode",
    "MetricSpec",
    "Part",
    "Passage",
    "PassageFingerprint",
    "PassageInput",
    "PublishedRow",
    "PublishedRun",
    "RunEntry",
    "RunFormatSpec",
    "ReleasedEmbeddings",
    "PublishedTable",
    "Question",
    "PartAwareRetriever",
    "ReportsCompute",
    "Ranking",
    "Retriever",
    "RetrieverSpec",
    "RunContext",
    "Suite",
    "SuiteSpec",
    "corpus_fingerprint",
    "DEFAULT_RERANK_DEPTH",
    "Candidate",
    "Reranker",
    "RerankerSpec",
    "Option",
    "OptionError",
    "Options",
    "boolean",
    "check_options",
    "choice",
    "integer",
    "non_negative_float",
    "non_negative_int",
    "number",
    "path",
    "positive_float",
    "positive_int",
    "probability",
    "template",
    "text",
]

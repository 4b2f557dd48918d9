"""Model metadata: what a retriever or re-ranker configuration is, beside what it scores.

:class:`ModelMeta` is one record per configuration: its size, embedding, input length, license,
whether its weights are open, the work that introduced it, the hub revision it was loaded at, and
``trained_on``, the training sets it saw, named as harness names its suites and training sets
(``biencoder-nq-train``, ``entityquestions-train``, ``demo-train``) or, where harness has no spec
for one, as a plain lower-case name (``msmarco``). Every field may be unknown (``None``): unknown
stays unknown, it is never guessed. ``trained_on=()`` says the model saw no training set at all
(BM25, an unsupervised encoder), which is a fact, not an unknown.

A spec declares it with ``meta=`` (:class:`~harness.api.RetrieverSpec`,
:class:`~harness.api.RerankerSpec`, :class:`~harness.api.EncoderSpec`): a record, or a function of
the configuration's options (or of its recorded parameters) returning one, for a spec whose model
depends on an option (``-o checkpoint=``, ``-R model=``). :func:`meta_of` resolves either.

:func:`domain` says whether a configuration is evaluated in-domain on a suite (it saw one of the
suite's training splits), zero-shot (it saw none of them, and every set it saw is known) or
unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Union

#: How a configuration stands to a suite: trained on the suite's training split, not, or unknown.
Domain = Literal["in-domain", "zero-shot", "unknown"]
IN_DOMAIN: Domain = "in-domain"
ZERO_SHOT: Domain = "zero-shot"
UNKNOWN: Domain = "unknown"
DOMAINS: tuple[Domain, ...] = (IN_DOMAIN, ZERO_SHOT, UNKNOWN)

_NAME = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")


@dataclass(frozen=True, kw_only=True)
class Work:
    """A published work: ``authors`` as cited (``Karpukhin et al.``), ``year``, ``title`` and its
    arXiv id (``2004.04906``) when it has one."""

    authors: str
    year: int
    title: str
    arxiv: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"authors": self.authors, "year": self.year, "title": self.title, "arxiv": self.arxiv}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Work:
        return cls(authors=str(data["authors"]), year=int(data["year"]), title=str(data["title"]),
                   arxiv=None if data.get("arxiv") is None else str(data["arxiv"]))

    def __str__(self) -> str:
        arxiv = f", arXiv:{self.arxiv}" if self.arxiv else ""
        return f"{self.authors} {self.year}, {self.title}{arxiv}"


@dataclass(frozen=True, kw_only=True)
class ModelMeta:
    """A configuration's model metadata; every field ``None`` when unknown.

    ``model``: the model(s) it loads (hub ids or names); ``parameters``: how many weights encode
    (both towers of a dual encoder; a pooler left unused not counted); ``embedding_size`` and
    ``similarity`` (``inner_product``, ``cosine``, ``bm25``); ``max_tokens``: the longest input
    the model takes; ``license``; ``open_weights``; ``reference``: the :class:`Work` that
    introduced it; ``revision``: the hub revision it was loaded at (``-o revision=``, as typed);
    ``trained_on``: the training sets it saw (see the module docstring; ``()``: none), and
    ``trained_on_complete``: False when those are only some of them (a checkpoint trained from a
    model whose own training is unknown); ``note``: what the fields cannot say."""

    model: str | None = None
    parameters: int | None = None
    embedding_size: int | None = None
    similarity: str | None = None
    max_tokens: int | None = None
    license: str | None = None
    open_weights: bool | None = None
    reference: Work | None = None
    revision: str | None = None
    trained_on: tuple[str, ...] | None = None
    trained_on_complete: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        if self.trained_on is not None:
            names = tuple(dict.fromkeys(self.trained_on))
            for name in names:
                if not isinstance(name, str) or not _NAME.match(name):
                    raise ValueError(f"trained_on names a training set in lower-case letters, digits, '.', '_', '+' or '-', got {name!r}")
            object.__setattr__(self, "trained_on", names)
        for key in ("parameters", "embedding_size", "max_tokens"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{key} must be a non-negative integer or None, got {value!r}")

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (every field, unknown ones as null)."""
        return {
            "model": self.model, "parameters": self.parameters, "embedding_size": self.embedding_size,
            "similarity": self.similarity, "max_tokens": self.max_tokens, "license": self.license,
            "open_weights": self.open_weights, "reference": None if self.reference is None else self.reference.to_json(),
            "revision": self.revision, "trained_on": None if self.trained_on is None else list(self.trained_on),
            "trained_on_complete": self.trained_on_complete, "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelMeta:
        """The record :meth:`to_json` wrote (``ValueError``/``KeyError``/``TypeError`` on another)."""
        trained = data.get("trained_on")
        reference = data.get("reference")
        return cls(
            model=data.get("model"), parameters=data.get("parameters"), embedding_size=data.get("embedding_size"),
            similarity=data.get("similarity"), max_tokens=data.get("max_tokens"), license=data.get("license"),
            open_weights=data.get("open_weights"), reference=None if reference is None else Work.from_json(reference),
            revision=data.get("revision"), trained_on=None if trained is None else tuple(trained),
            trained_on_complete=bool(data.get("trained_on_complete", True)), note=str(data.get("note") or ""),
        )

    def with_revision(self, revision: Any) -> ModelMeta:
        """This record loaded at ``revision`` (its text as typed), unchanged when None."""
        return self if revision is None else replace(self, revision=str(revision))


#: What a spec's ``meta=`` holds: a record, a function of the options (or recorded parameters), or None.
MetaDeclaration = Union[ModelMeta, Callable[[Mapping[str, Any]], Union[ModelMeta, None]], None]


def meta_of(declared: MetaDeclaration, options: Mapping[str, Any] | None = None) -> ModelMeta | None:
    """The metadata ``declared`` gives for ``options`` (a spec's resolved options or a result's
    recorded parameters): the record itself, or the function's answer; a ``revision`` option
    given pins the record's revision."""
    options = options or {}
    meta = declared(options) if callable(declared) else declared
    if meta is None:
        return None
    if not isinstance(meta, ModelMeta):
        raise TypeError(f"meta must be a ModelMeta or None, got {type(meta).__name__}")
    revision = options.get("revision")
    return meta.with_revision(revision) if isinstance(revision, (str, int)) and not isinstance(revision, bool) else meta


def combine(metas: Iterable[ModelMeta | None]) -> ModelMeta | None:
    """The metadata of a configuration made of several models (a fusion, a re-ranked chain): the
    union of what they were trained on (unknown when one's is unknown, incomplete when one's is);
    None when none is given."""
    metas = list(metas)
    if not metas:
        return None
    known = [m for m in metas if m is not None]
    if len(known) < len(metas) or any(m.trained_on is None for m in known):
        trained = tuple(dict.fromkeys(name for m in known for name in (m.trained_on or ())))
        return ModelMeta(trained_on=trained or None, trained_on_complete=False) if trained else ModelMeta()
    return ModelMeta(
        model="+".join(m.model for m in known if m.model) or None,
        trained_on=tuple(dict.fromkeys(name for m in known for name in m.trained_on or ())),
        trained_on_complete=all(m.trained_on_complete for m in known),
    )


def domain(meta: ModelMeta | None, train: Iterable[str] | None) -> Domain:
    """In-domain when ``meta`` was trained on one of ``train`` (a suite's training splits, by
    name); zero-shot when every set it was trained on is known and none is one of them; else
    unknown (no metadata, unknown training, or a suite whose training split is unknown: ``train``
    None; ``()`` is a suite without one, on which every known model is zero-shot)."""
    if meta is None or meta.trained_on is None:
        return UNKNOWN
    if train is None:
        return UNKNOWN
    splits = set(train)
    if splits & set(meta.trained_on):
        return IN_DOMAIN
    return ZERO_SHOT if meta.trained_on_complete else UNKNOWN


#: Models pre-trained on text only (no training set of questions): a checkpoint trained from one
#: saw no more than its own training data.
PRETRAINED_ONLY: frozenset[str] = frozenset({
    "bert-base-uncased", "bert-base-cased", "bert-large-uncased", "bert-large-cased", "google-bert/bert-base-uncased",
    "google-bert/bert-large-uncased", "roberta-base", "roberta-large", "distilbert-base-uncased",
    "nreimers/MiniLM-L6-H384-uncased", "microsoft/MiniLM-L12-H384-uncased",
})

_DIGEST = re.compile(r"\s*\((?:sha256:|dir:)[^()]*\)\s*$")
_WEIGHT = re.compile(r":[0-9.]+$")
_ENDINGS = (".gz", ".bz2", ".xz", ".zst", ".json", ".jsonl", ".tsv", ".csv")


def training_set_name(entry: str) -> str:
    """A training record's data entry as a training set's name: its digest, folders, weight and
    file endings left out, lower case (``/data/biencoder-nq-train.json.gz (sha256:..)`` ->
    ``biencoder-nq-train``)."""
    name = _DIGEST.sub("", entry).strip().replace("\\", "/").rstrip("/")
    name = name.rsplit("/", 1)[-1]
    name = _WEIGHT.sub("", name)
    changed = True
    while changed:
        changed = False
        for ending in _ENDINGS:
            if name.lower().endswith(ending) and len(name) > len(ending):
                name, changed = name[: -len(ending)], True
    return name.lower()


def training_meta(
    training: Mapping[str, Any], known: Iterable[str], initial: Callable[[str], ModelMeta | None] | None = None
) -> ModelMeta:
    """The metadata of a checkpoint ``harness train`` wrote, from its training record
    (``training``: ``data`` entries and ``initial_model``): the training sets named by ``known``
    (the training set and suite names harness has) it was trained on, plus what its initial model
    was trained on (``initial(name)``, or :data:`PRETRAINED_ONLY`). A data file harness does not
    know, or an initial model whose training is unknown, leaves ``trained_on`` incomplete."""
    known = set(known)
    data = training.get("data")
    entries = [data] if isinstance(data, str) else list(data) if isinstance(data, (list, tuple)) else []
    names: list[str] = []
    complete = bool(entries)
    for entry in entries:
        if isinstance(entry, Mapping):
            entry = entry.get("data") or entry.get("path")
        if not isinstance(entry, str) or not entry.strip():
            complete = False
            continue
        name = training_set_name(entry)
        if name in known:
            names.append(name)
        else:
            complete = False
    model = training.get("initial_model")
    base = None
    if isinstance(model, str) and model:
        short = _DIGEST.sub("", model).strip()
        if short in PRETRAINED_ONLY:
            base = ModelMeta(trained_on=())
        elif initial is not None:
            base = initial(short)
    if base is None or base.trained_on is None:
        complete = False
    else:
        names.extend(base.trained_on)
        complete = complete and base.trained_on_complete
    return ModelMeta(model=None, trained_on=tuple(names), trained_on_complete=complete,
                     note="" if complete else "trained on more than the named sets, or on data harness cannot name")


__all__ = [
    "DOMAINS", "Domain", "IN_DOMAIN", "MetaDeclaration", "ModelMeta", "UNKNOWN", "Work", "ZERO_SHOT",
    "PRETRAINED_ONLY", "combine", "domain", "meta_of", "training_meta", "training_set_name",
]

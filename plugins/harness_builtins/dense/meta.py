"""The built-in encoders' model metadata (:class:`harness.api.ModelMeta`), from their publishers'
model cards and papers; what they do not state is left unknown (``None``).

Training sets are named as harness names them: DPR's training files (``biencoder-nq-train``,
``biencoder-trivia-train``, ``biencoder-webquestions-train``, ``biencoder-curatedtrec-train``,
``biencoder-squad1-train``) stand for those datasets' training splits, whatever form of them a
model saw (questions with gold passages, questions with answers only, or question-passage pairs);
sets harness has no spec for are plain names (``msmarco``). Pre-training corpora (Wikipedia,
CCNet, C4) are not training sets: an unsupervised encoder's ``trained_on`` is empty.

Parameter counts are the weights that encode (both towers of a dual encoder; BERT's pooler,
unused by CLS-of-the-last-layer and mean pooling, not counted): BERT-base 108,891,648 without its
pooler, all-MiniLM-L6-v2 22,713,216 (counted on the packaged model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.api import ModelMeta, Work

#: BERT-base (uncased vocabulary, 12 layers, 768 wide) without its pooler.
_BERT_BASE = 108_891_648

NQ, TRIVIA, WQ, TREC, SQUAD = (
    "biencoder-nq-train", "biencoder-trivia-train", "biencoder-webquestions-train",
    "biencoder-curatedtrec-train", "biencoder-squad1-train",
)
MSMARCO = "msmarco"
#: DPR's multi-dataset training data (DPR-multi, and ANCE-multi trained on it).
DPR_MULTISET = (NQ, TRIVIA, WQ, TREC)

DPR = Work(authors="Karpukhin et al.", year=2020, title="Dense Passage Retrieval for Open-Domain Question Answering",
           arxiv="2004.04906")
ANCE = Work(authors="Xiong et al.", year=2020,
            title="Approximate Nearest Neighbor Negative Contrastive Learning for Dense Text Retrieval", arxiv="2007.00808")
CONTRIEVER = Work(authors="Izacard et al.", year=2022,
                  title="Unsupervised Dense Information Retrieval with Contrastive Learning", arxiv="2112.09118")
DKRR = Work(authors="Izacard and Grave", year=2021,
            title="Distilling Knowledge from Reader to Retriever for Question Answering", arxiv="2012.04584")
ART = Work(authors="Sachan et al.", year=2022, title="Questions Are All You Need to Train a Dense Passage Retriever",
           arxiv="2206.10658")
MSS = Work(authors="Sachan et al.", year=2021,
           title="End-to-End Training of Neural Retrievers for Open-Domain Question Answering", arxiv="2101.00408")
REALM = Work(authors="Guu et al.", year=2020, title="REALM: Retrieval-Augmented Language Model Pre-Training",
             arxiv="2002.08909")
SBERT = Work(authors="Reimers and Gurevych", year=2019,
             title="Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks", arxiv="1908.10084")


def _dpr(model: str, trained_on: tuple[str, ...], reference: Work = DPR, license: str | None = "CC-BY-NC-4.0") -> ModelMeta:
    return ModelMeta(model=model, parameters=2 * _BERT_BASE, embedding_size=768, similarity="inner_product",
                     max_tokens=512, license=license, open_weights=True, reference=reference, trained_on=trained_on)


def _contriever(model: str, trained_on: tuple[str, ...], note: str) -> ModelMeta:
    return ModelMeta(model=model, parameters=_BERT_BASE, embedding_size=768, similarity="inner_product", max_tokens=512,
                     license="CC-BY-NC-4.0", open_weights=True, reference=CONTRIEVER, trained_on=trained_on, note=note)


def _dkrr(model: str, trained_on: tuple[str, ...], data: str) -> ModelMeta:
    return ModelMeta(model=model, parameters=_BERT_BASE, embedding_size=768, similarity="inner_product", max_tokens=512,
                     open_weights=True, reference=DKRR, trained_on=trained_on,
                     note=f"{data} train questions and answers: distilled from FiD's reader attention, no gold passages")


#: all-MiniLM-L6-v2's training data as its model card lists it (1B sentence pairs); NQ, TriviaQA
#: and SQuAD2.0's training pairs are those datasets' train splits.
MINILM_TRAINING = (
    NQ, TRIVIA, SQUAD, MSMARCO, "reddit-2015-2018", "s2orc", "wikianswers", "paq", "stackexchange", "gooaq",
    "yahoo-answers", "codesearchnet", "coco-captions", "specter", "searchqa", "eli5", "flickr30k-captions",
    "sentence-compression", "wikihow", "altlex", "quora-duplicates", "simple-wikipedia", "snli", "multinli",
)

#: ART's released checkpoints (``-o checkpoint=``): the question sets each was trained on
#: (questions only, no gold passages; every one starts from MSS or ICT, which saw none of them).
ART_TRAINED_ON: dict[str, tuple[str, ...]] = {
    "multi-t0-3b": (NQ, TRIVIA, WQ, SQUAD), "multi-t5-xxl": (NQ, TRIVIA, WQ, SQUAD),
    "nq-t0-3b": (NQ,), "nq-t5-xxl": (NQ,), "nq-full-t0-3b": (NQ,), "nq-full-t5-xxl": (NQ,), "nq-large-t0-3b": (NQ,),
    "trivia-t0-3b": (TRIVIA,), "trivia-t5-xxl": (TRIVIA,), "trivia-large-t0-3b": (TRIVIA,),
    "webq-t0-3b": (WQ,), "webq-t5-xxl": (WQ,),
    "squad1-t0-3b": (SQUAD,), "squad1-t5-xxl": (SQUAD,),
    "msmarco-t0-3b": (MSMARCO,), "msmarco-nq-full-t0-3b": (MSMARCO, NQ),
}


def art_meta(options: Mapping[str, Any]) -> ModelMeta | None:
    """ART's metadata for its options: the released checkpoint's question sets; unknown for a
    converted folder of one's own (``-o model=``)."""
    from harness_builtins.dense.art_checkpoints import DEFAULT_CHECKPOINT

    if options.get("model"):
        return None
    name = str(options.get("checkpoint") or DEFAULT_CHECKPOINT)
    if name not in ART_TRAINED_ON:
        return None
    large = "large" in name
    return ModelMeta(
        model=f"art:{name}", embedding_size=1024 if large else 768, similarity="inner_product", open_weights=True,
        reference=ART, trained_on=ART_TRAINED_ON[name],
        note="trained on the questions only (no gold passages), from " + ("ICT" if large else "MSS") + " initialisation",
    )


#: Each built-in encoder's declaration, by name; ``st``, ``dense`` and ``trained`` load a model the
#: user names, whose metadata is unknown here (a trained checkpoint's is derived from its training record).
ENCODER_META: dict[str, Any] = {
    "dpr-nq": _dpr("facebook/dpr-*-single-nq-base", (NQ,)),
    "dpr-multi": _dpr("facebook/dpr-*-multiset-base", DPR_MULTISET),
    "ance-multi": _dpr("castorini/ance-dpr-*-multi", DPR_MULTISET, reference=ANCE, license=None),
    "contriever": _contriever("facebook/contriever", (), "unsupervised: contrastive pre-training on CCNet and Wikipedia"),
    "contriever-msmarco": _contriever("facebook/contriever-msmarco", (MSMARCO,), "Contriever fine-tuned on MS MARCO"),
    "dkrr-nq": _dkrr("castorini/dkrr-dpr-nq-retriever", (NQ,), "Natural Questions"),
    "dkrr-tqa": _dkrr("castorini/dkrr-dpr-tqa-retriever", (TRIVIA,), "TriviaQA"),
    "minilm": ModelMeta(
        model="sentence-transformers/all-MiniLM-L6-v2", parameters=22_713_216, embedding_size=384, similarity="cosine",
        max_tokens=256, license="Apache-2.0", open_weights=True, reference=SBERT, trained_on=MINILM_TRAINING,
        note="1B sentence pairs (the model card's table)",
    ),
    "realm": ModelMeta(
        model="google/realm-orqa-nq-openqa + google/realm-cc-news-pretrained-embedder", embedding_size=128,
        similarity="inner_product", max_tokens=512, license="Apache-2.0", open_weights=True, reference=REALM,
        trained_on=(NQ,), note="question embedder fine-tuned on NQ-open train (ORQA); blocks by the embedder pre-trained on CC-News",
    ),
    "art": art_meta,
    "mss": ModelMeta(model="art:mss", embedding_size=768, similarity="inner_product", open_weights=True, reference=MSS,
                     trained_on=(), note="unsupervised: masked salient spans on Wikipedia"),
    "st": lambda options: None,  # the model is the user's to name: unknown
    "dense": lambda options: None,
}


_DIGEST_SUFFIX = " ("


def _model_name(value: Any) -> str | None:
    """A model option's value or a recorded model label without its content digest."""
    if value is None:
        return None
    text = str(value)
    return text.split(_DIGEST_SUFFIX, 1)[0].strip() if text.endswith(")") else text.strip()


def guarded(declared: Any, accepted: frozenset[str]) -> Any:
    """``declared`` while the configuration loads the model it describes: unknown (None) when a
    model option (``model``, ``query_model``, ``passage_model``) names another model than
    ``accepted`` (the preset's own, as given or as a result records it)."""
    if declared is None:
        return None

    def meta(options: Mapping[str, Any]) -> ModelMeta | None:
        for key in ("model", "query_model", "passage_model"):
            name = _model_name(options.get(key))
            if name is not None and name not in accepted:
                return None
        return declared(options) if callable(declared) else declared

    return meta


def known_training_sets() -> frozenset[str]:
    """The names a training record's data can be recognised as: every registered training set and suite."""
    from harness import registry

    return frozenset(registry.registry("training-data").names()) | frozenset(registry.suites().names())


def _initial_meta(model: str) -> ModelMeta | None:
    """A known encoder's metadata for a model a checkpoint was trained from (a hub id the built-in
    encoders load), else None."""
    import fnmatch

    for declared in ENCODER_META.values():
        if isinstance(declared, ModelMeta) and declared.model:
            if any(fnmatch.fnmatchcase(model, pattern.strip()) for pattern in declared.model.split("+")):
                return declared
    return None


def trained_meta(options: Mapping[str, Any]) -> ModelMeta | None:
    """A ``harness train`` checkpoint's metadata from its training record (the ``training``
    parameter its result records): the training sets its data names, and its initial model's;
    None without a record."""
    from harness.api import training_meta

    training = options.get("training")
    if not isinstance(training, Mapping):
        return None
    return training_meta(training, known_training_sets(), _initial_meta)

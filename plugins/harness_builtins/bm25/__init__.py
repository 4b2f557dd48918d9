"""BM25 through pyserini (Lucene), as in the DPR, pyserini and EntityQuestions papers.

Documents are ``title + "\\n" + text``, analysed by Anserini's default English analyzer (Porter
stemmer, stopwords removed), scored with BM25 k1 = 0.9, b = 0.4 (PROTOCOL section 5). pyserini is
imported only when BM25 runs.
"""

from __future__ import annotations

from harness import hookimpl
from harness.api import ModelMeta, Options, RetrieverSpec, Work, non_negative_float, probability

#: The options (name -> default; each declared with its bounds).
DEFAULTS = Options({
    "k1": non_negative_float(0.9, help="term-frequency saturation"),
    "b": probability(0.4, help="length normalisation"),
})


def load(**options):
    from harness_builtins.bm25.retriever import BM25Retriever

    return BM25Retriever(**{**DEFAULTS, **options})


@hookimpl
def register_retrievers(register):
    register(
        RetrieverSpec(
            name="bm25",
            description=(
                "Lucene BM25 via pyserini (k1=0.9, b=0.4; title + text; English analyzer; Lin et al. 2021, "
                "arXiv:2102.10073)"
            ),
            load=load,
            options=DEFAULTS,
            meta=ModelMeta(
                model="bm25", similarity="bm25", license="Apache-2.0 (pyserini, Lucene)",
                reference=Work(authors="Lin et al.", year=2021, title="Pyserini: A Python Toolkit for Reproducible Information "
                               "Retrieval Research with Sparse and Dense Representations", arxiv="2102.10073"),
                trained_on=(), note="no training: term statistics of the corpus searched",
            ),
        )
    )

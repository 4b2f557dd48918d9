"""The ``retriever`` miner: hard negatives retrieved from the training corpus by a named retriever."""

from harness.api import MATCH_MODES, MAX_K, MinerSpec, Option, choice, non_negative_int, positive_int, text

from harness_builtins.training.parts import Lazy

OPTIONS = {
    "retriever": text("bm25", help="a registered retriever's name"),
    "options": Option(None, type=dict, help="the retriever's options"),
    "negatives": non_negative_int(1, help="hard negatives per example"),
    "depth": positive_int(100, max=MAX_K, help="passages retrieved per question"),
    "match": choice("string", MATCH_MODES, help="how answers are matched"),
}

SPEC = MinerSpec(
    name="retriever",
    description=(
        "hard negatives retrieved by a named retriever (bm25: DPR's; dense with -o model=DIR: "
        "dense negatives), answer-aware: no passage with an answer in title or text, none equal "
        "to a positive (Karpukhin et al. 2020, arXiv:2004.04906; Xiong et al. 2020, arXiv:2007.00808)"
    ),
    citation=(
        'Karpukhin et al. 2020, "Dense Passage Retrieval for Open-Domain Question Answering", arXiv:2004.04906, '
        '§3.2 (BM25 negatives); Xiong et al. 2020, "Approximate Nearest Neighbor Negative Contrastive Learning '
        'for Dense Text Retrieval", arXiv:2007.00808 (negatives from a dense retriever)'
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.mining:RetrieverMiner", OPTIONS),
)

"""The training variants of the works the harness reproduces, each a named :class:`Recipe` of
registered parts.

Sources: Sciavolino 2022, "Towards Universal Dense Retrieval for Open-Domain Question Answering"
(M.S.E. thesis, Princeton: T-REx QA, shuffling, one encoder, stop-gradient, flipped objective,
frozen sides); Hoang 2022, "Open Domain Question Answering System" (B.Sc. thesis, NTU:
shared-encoder DPR, late interaction, multi-similarity, harder in-batch negatives); Sciavolino et
al. 2021, "Simple Entity-Centric Questions Challenge Dense Retrievers" (arXiv:2109.08535); DPR is
Karpukhin et al. 2020 (arXiv:2004.04906). Hyperparameter defaults are DPR's where these follow it
(learning rate 2e-5, batch 16 per device here for small machines: DPR used 128, Hoang 24 per
device; set ``--batch-size``), one BM25 hard negative per question.
"""

from __future__ import annotations

from harness.api import InLoopRetrieval, Recipe, VariantSpec

_SHUFFLE = ("shuffle-words", {})

VARIANTS: tuple[VariantSpec, ...] = (
    VariantSpec(
        name="dpr",
        description="DPR: separate question and passage encoders, in-batch negatives + 1 hard negative per question, NLL of the positive (dot product)",
        recipe=Recipe(),
        reference="Karpukhin et al. 2020, arXiv:2004.04906, §3.2; Sciavolino 2022 §2.3",
    ),
    VariantSpec(
        name="shared",
        description="one encoder for questions and passages (1enc); --question-marker adds a marker before questions",
        recipe=Recipe(shared_encoder=True),
        reference="Sciavolino 2022 §5.1 (1enc); Hoang 2022 ch. 3",
    ),
    VariantSpec(
        name="stopgrad",
        description=(
            "loss averaged over two halves: through passages with questions detached, and through questions with "
            "passages detached; its gradient is exactly half of dpr's, and Adam's step does not change when every "
            "gradient is scaled by one constant (up to its epsilon), so it trains as dpr does: with dpr's settings "
            "and seed its checkpoint ranks every question as dpr's"
        ),
        recipe=Recipe(loss=("stopgrad", {})),
        reference="Sciavolino 2022 §5.1",
    ),
    VariantSpec(
        name="flip",
        description="flipped objective: softmax over the batch's questions for each positive passage",
        recipe=Recipe(loss=("flip", {})),
        reference="Sciavolino 2022 §5.1",
    ),
    VariantSpec(
        name="fix-passage",
        description="DPR with the passage encoder frozen (only the question encoder is trained)",
        recipe=Recipe(frozen="passage"),
        reference="Sciavolino 2022 §4.2 (fixP); Sciavolino et al. 2021, arXiv:2109.08535 (P19 fine-tuning)",
    ),
    VariantSpec(
        name="fix-question",
        description="DPR with the question encoder frozen (only the passage encoder is trained)",
        recipe=Recipe(frozen="question"),
        reference="Sciavolino 2022 §4.2 (fixQ); Sciavolino et al. 2021, arXiv:2109.08535 (P19 fine-tuning)",
    ),
    VariantSpec(
        name="shuffle-question",
        description="DPR on questions whose words are shuffled at training time",
        recipe=Recipe(question_augmentations=(_SHUFFLE,)),
        reference="Sciavolino 2022 §4.1",
    ),
    VariantSpec(
        name="shuffle-passage",
        description="DPR on passages whose words are shuffled at training time",
        recipe=Recipe(passage_augmentations=(_SHUFFLE,)),
        reference="Sciavolino 2022 §4.1",
    ),
    VariantSpec(
        name="shuffle-both",
        description="DPR on questions and passages whose words are shuffled at training time",
        recipe=Recipe(question_augmentations=(_SHUFFLE,), passage_augmentations=(_SHUFFLE,)),
        reference="Sciavolino 2022 §4.1 (Table 4.1: shuffled questions and passages)",
    ),
    VariantSpec(
        name="dense-negatives",
        description="DPR with hard negatives mined by a trained dense checkpoint (-M options='{\"path\": \"CHECKPOINT\"}') instead of BM25, answer-aware",
        recipe=Recipe(miner=("retriever", {"retriever": "trained"})),
        reference="Hoang 2022 Table 3.1 (DPR hard negatives); ANCE-style",
    ),
    VariantSpec(
        name="multi-sim",
        description="shared encoder; adds question-question and passage-passage in-batch NLL terms (-L lambda_qq=, -L lambda_pp=)",
        recipe=Recipe(shared_encoder=True, loss=("multi-sim", {})),
        reference="Hoang 2022 ch. 5",
    ),
    VariantSpec(
        name="harder-batches",
        description="shared encoder; batches whose examples share a category (their label, e.g. the relation)",
        recipe=Recipe(shared_encoder=True, sampler=("harder-batches", {})),
        reference="Hoang 2022 ch. 6",
    ),
    VariantSpec(
        name="late-interaction",
        description="shared encoder trained jointly with the head m^T [q; p; q*p; q-p]: NLL + lambda * NLL_L (the head is saved for re-ranking)",
        recipe=Recipe(shared_encoder=True, loss=("late-interaction", {})),
        reference="Hoang 2022 ch. 4",
    ),
    VariantSpec(
        name="qsft",
        description="query-side fine-tuning: passage encoder and index frozen; each step retrieves the top 100 with the current question encoder and maximises the probability mass on answer-bearing passages (--corpus SUITE)",
        recipe=Recipe(loss=("qsft", {}), frozen="passage", hard_negatives=0, retrieval=InLoopRetrieval(k=100),
                      defaults={"epochs": 2.0, "batch_size": 24, "warmup_steps": 100}),
        reference="Sciavolino 2022 §5.2 and Table 6.1 (after Lee et al. 2021)",
    ),
    VariantSpec(
        name="specialised",
        description="one question encoder per label of the data (e.g. per relation), each trained by QSFT over one shared frozen passage index; evaluate with -r specialised -o path=OUT",
        recipe=Recipe(loss=("qsft", {}), frozen="passage", hard_negatives=0, retrieval=InLoopRetrieval(k=100),
                      split_by_label=True, defaults={"epochs": 2.0, "batch_size": 24, "warmup_steps": 100}),
        reference="Sciavolino et al. 2021, arXiv:2109.08535 (Towards Robust Dense Retrieval); QSFT as Sciavolino 2022 §5.2",
    ),
    VariantSpec(
        name="specialised-fix-passage",
        description="one question encoder per label of the data, each trained with DPR's loss and the passage encoder frozen; evaluate with -r specialised -o path=OUT",
        recipe=Recipe(frozen="passage", split_by_label=True),
        reference="Sciavolino et al. 2021, arXiv:2109.08535 (Towards Robust Dense Retrieval: OnlyQ fine-tuning per relation)",
    ),
    VariantSpec(
        name="synthetic-pretrain",
        description="two stages: DPR pre-trained on generated questions (--pretrain-data, from harness data generate-questions), then fine-tuned on --data",
        recipe=Recipe(pretrain="dpr"),
        reference="Hoang 2022 ch. 7 (synthetic pre-training + fine-tuning, Table 7.1); Sciavolino 2022 §3.2 (PAQ)",
    ),
    VariantSpec(
        name="art",
        description="ART: no labelled passages; KL from a seq2seq teacher's question likelihood (-L teacher=MODEL) to the retriever's softmax over its top 32; corpus re-embedded every 500 steps",
        recipe=Recipe(loss=("art", {}), hard_negatives=0, retrieval=InLoopRetrieval(k=32, refresh_every=500),
                      defaults={"epochs": 10.0, "global_batch_size": 64, "learning_rate": 2e-5, "warmup_ratio": 0.01, "weight_decay": 0.1}),
        reference="Sachan et al. 2022, arXiv:2206.10658 (ART; batch 64 over all GPUs: 4 per GPU on its 16)",
    ),
)

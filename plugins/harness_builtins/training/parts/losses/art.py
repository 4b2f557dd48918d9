"""The ``art`` loss: ART's KL divergence from a sequence-to-sequence teacher (in the loop)."""

from harness.api import LossSpec, boolean, choice, positive_float, positive_int, template, text

from harness_builtins.common.devices import PRECISIONS
from harness_builtins.common.seq2seq import ART_PASSAGE_PROMPT, ART_QUESTION_TARGET
from harness_builtins.training.parts import Lazy

OPTIONS = {
    "teacher": text(None, help="the sequence-to-sequence teacher: hub id or local directory"),
    "revision": text(None, help="hub revision"),
    "mean": boolean(True, help="the teacher's score is the mean token log-likelihood (false: the sum)"),
    "temperature": positive_float("sqrt", literals=("sqrt",), help="the student's softmax temperature (sqrt: sqrt(d))"),
    "teacher_batch_size": positive_int(32, help="passages per teacher forward pass"),
    "max_passage_length": positive_int(512, help="teacher encoder tokens"),
    "max_question_length": positive_int(128, help="teacher decoder tokens"),
    "precision": choice("auto", PRECISIONS, help="the teacher's precision (auto: bf16 on GPU, fp32 on CPU)"),
    "device": text("auto", help="the teacher's device: auto | cpu | cuda | cuda:N"),
    # the teacher's prompt is ART's code by default (DevSinghSachan/art)
    "question_mark": boolean(False, help=(
        'end a question lacking one with "?" before the teacher scores it; ART never does (true: '
        "this harness's earlier default)")),
    "passage_prompt": template(ART_PASSAGE_PROMPT, ("title", "text"), nullable=True, help=(
        "the teacher's encoder input, ART's (note the space before the period; null: the same); earlier "
        'default "Passage: {title} {text}. Please write a question based on this passage." (UPR\'s, one space)')),
    "question_target": template(ART_QUESTION_TARGET, ("question",), nullable=True, help=(
        "the decoder target whose mean log-likelihood is the teacher's score (ART's; null: the same)")),
}

SPEC = LossSpec(
    name="art",
    description=(
        "ART: KL(teacher || student) over the top K retrieved; teacher = softmax of a seq2seq model's mean "
        "log-likelihood of the question (-L teacher=MODEL), student = softmax(q.p / sqrt(d)) "
        "(Sachan et al. 2022, arXiv:2206.10658)"
    ),
    citation=(
        'Sachan, Lewis, Yogatama, Zettlemoyer, Pineau and Zaheer 2022, "Questions Are All You Need to Train a '
        'Dense Passage Retriever", arXiv:2206.10658; the teacher\'s prompt from its code, DevSinghSachan/art'
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.losses:ARTLoss", OPTIONS),
    in_loop=True,
)

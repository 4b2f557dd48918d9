"""Training losses of the DPR family: the classes the ``harness list losses`` specs build (each
spec, with its options and citation, is a module of :mod:`harness_builtins.training.parts.losses`).

Every loss is a ``torch.nn.Module`` whose ``forward(questions, passages, positive)`` takes

- ``questions``: ``[B, d]``, the batch's question embeddings;
- ``passages``: ``[N, d]``, every positive and hard negative of the (global) batch;
- ``positive``: ``[B]`` integer tensor, the row in ``passages`` of question i's positive;

and returns a dict of scalar tensors: the total under ``"loss"``, its parts under other names
(logged by the trainer). Scores are plain dot products ``S = Q P^T`` (scale 1, no temperature, no
normalisation) as in DPR; every NLL is averaged over its anchors (``F.cross_entropy``'s mean).

Sources: Karpukhin et al. 2020, "Dense Passage Retrieval for Open-Domain Question Answering"
(arXiv:2004.04906); Sciavolino 2022, "Towards Universal Dense Retrieval for Open-Domain Question
Answering" (M.S.E. thesis, Princeton; "Sciavolino" below) §2.3 (DPR loss, eq. 2.8) and §5.1
(stop-gradient, flipped objective); Hoang 2022, "Open Domain Question Answering System" (B.Sc.
thesis, NTU; "Hoang" below) §2.2.1 (Definition 2.5), ch. 4 (late interaction), ch. 5
(multi-similarity); Lee et al. 2021 (arXiv:2012.12624) for query-side fine-tuning; Sachan et al.
2022 (arXiv:2206.10658) for ART.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin


def _check_batch(questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """Shape checks only (no device sync): bad shapes raise ``ValueError``. Returns ``positive``
    as int64 on the questions' device."""
    if questions.dim() != 2 or passages.dim() != 2:
        raise ValueError(
            f"questions and passages must be 2-D, got {tuple(questions.shape)} and {tuple(passages.shape)}"
        )
    if questions.shape[1] != passages.shape[1]:
        raise ValueError(f"embedding sizes differ: questions {questions.shape[1]}, passages {passages.shape[1]}")
    if questions.shape[0] == 0 or passages.shape[0] == 0:
        raise ValueError("a loss needs at least one question and one passage")
    if positive.dim() != 1 or positive.shape[0] != questions.shape[0]:
        raise ValueError(f"positive must have shape [{questions.shape[0]}], got {tuple(positive.shape)}")
    if positive.dtype.is_floating_point or positive.dtype == torch.bool:
        raise ValueError(f"positive must be an integer tensor, got {positive.dtype}")
    return positive.to(device=questions.device, dtype=torch.long)


def nll(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over rows of ``-log softmax(scores[i])[target[i]]`` (Definition 2.5 of Hoang §2.2.1)."""
    return F.cross_entropy(scores, target)


class DPRLoss(nn.Module):
    """DPR's in-batch negative log-likelihood (Sciavolino §2.3 eq. 2.8; Hoang §2.2.1 Definition 2.5, eq. 2.8).

    ``S = Q P^T`` (``[B, N]``, dot product) and

        L = 1/B * sum_i -log( exp(S[i, pos_i]) / sum_{j=1..N} exp(S[i, j]) )

    i.e. each question's positive against every passage of the batch: the other questions'
    positives (in-batch negatives) and every hard negative. Equal to
    ``F.cross_entropy(Q @ P.T, positive)``. Parts: ``{"loss", "nll"}``.
    """

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        positive = _check_batch(questions, passages, positive)
        loss = nll(questions @ passages.T, positive)
        return {"loss": loss, "nll": loss.detach()}


class StopGradientLoss(nn.Module):
    """The stop-gradient loss of Sciavolino §5.1 (eq. 5.1, after Chen and He 2020, arXiv:2011.10566):

        L_stopG = 1/2 * L(q_d . p) + 1/2 * L(q . p_d)

    where ``L`` is DPR's in-batch NLL (:class:`DPRLoss`) over the scores written in the
    brackets and ``_d`` marks a tensor detached from the graph. The first half trains the passage
    side only (questions detached), the second the question side only (passages detached). The
    value equals DPR's loss; each side gets half of DPR's gradient (so every encoder parameter,
    shared or not, gets exactly half of DPR's gradient). Parts: ``{"loss",
    "passage_side", "question_side"}`` (the two halves before the 1/2 weights).
    """

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        positive = _check_batch(questions, passages, positive)
        passage_side = nll(questions.detach() @ passages.T, positive)
        question_side = nll(questions @ passages.detach().T, positive)
        loss = 0.5 * passage_side + 0.5 * question_side
        return {"loss": loss, "passage_side": passage_side.detach(), "question_side": question_side.detach()}


class FlippedLoss(nn.Module):
    """The flipped objective of Sciavolino §5.1 ("Flipped Training"): positive and negative *questions*
    for a given *passage*, replacing (not added to) the question-side objective.

    For each question i its positive passage ``p_i = P[pos_i]`` is the anchor; its positive is
    question i and its negatives are the batch's other questions:

        L_flip = 1/B * sum_i -log( exp(q_i . p_i) / sum_{k=1..B} exp(q_k . p_i) )

    i.e. ``F.cross_entropy((Q P[pos]^T)^T, arange(B))``: the softmax runs over the columns of
    DPR's score matrix restricted to the positives. Hard negatives have no question, so they are
    not anchors and do not enter the loss (the seed trains flip without hard negatives). Two
    questions sharing one positive row make that passage an anchor twice with different targets.
    Parts: ``{"loss", "flip"}``.
    """

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        positive = _check_batch(questions, passages, positive)
        anchors = passages[positive]
        scores = anchors @ questions.T
        target = torch.arange(questions.shape[0], device=questions.device)
        loss = nll(scores, target)
        return {"loss": loss, "flip": loss.detach()}


class MultiSimilarityLoss(nn.Module):
    """The multi-similarity loss of Hoang ch. 5 (§5.1, eqs. 5.2-5.7):

        L = mean_i L_i^qp + lambda_qq * mean_i L_i^qq + lambda_pp * mean_i L_i^pp

        L_i^qp = DPR's NLL of p_i^+ for q_i among all passages of the batch (eq. 5.2)
        L_i^qq = -log( exp(q_i . q_i) / sum_{j=1..B} exp(q_i . q_j) )              (eq. 5.5)
        L_i^pp = -log( exp(p_i . p_i) / sum_{j=1..B} exp(p_i . p_j) )              (eq. 5.6)

    The "in-batch positive" of a question (passage) is itself; its negatives are the other
    questions (passages) of the batch. As eq. 5.6 indexes them, the ``p_i`` are the B positive
    passages (``P[positive]``); ``pp_passages="all"`` instead takes every passage of the batch,
    hard negatives included, as anchors over all N passages (what the thesis author's code,
    hnt4499/DPR ``BiEncoderMultiSimilarityNllLoss``, computes). Eq. 5.7 sums over i; this averages
    every term over its anchors (eq. 5.7 / B with the default), which keeps lambda's meaning and
    DPR's scale. Defaults ``lambda_qq = lambda_pp = 0.1``: Table 5.1's setting with the best
    top-100, the metric §5.2 calls the one of interest (0.5 and 0.7 were also run).
    Parts: ``{"loss", "qp", "qq", "pp"}`` (unweighted).
    """

    def __init__(self, *, lambda_qq: float = 0.1, lambda_pp: float = 0.1, pp_passages: str = "positives") -> None:
        super().__init__()
        # checked by the options' declarations (the spec's) when built by name
        self.lambda_qq, self.lambda_pp = float(lambda_qq), float(lambda_pp)
        self.pp_passages = pp_passages

    def extra_repr(self) -> str:
        return f"lambda_qq={self.lambda_qq}, lambda_pp={self.lambda_pp}, pp_passages={self.pp_passages!r}"

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        positive = _check_batch(questions, passages, positive)
        qp = nll(questions @ passages.T, positive)
        own = torch.arange(questions.shape[0], device=questions.device)
        qq = nll(questions @ questions.T, own)
        anchors = passages[positive] if self.pp_passages == "positives" else passages
        pp = nll(anchors @ anchors.T, torch.arange(anchors.shape[0], device=anchors.device))
        loss = qp + self.lambda_qq * qq + self.lambda_pp * pp
        return {"loss": loss, "qp": qp.detach(), "qq": qq.detach(), "pp": pp.detach()}


def late_interaction_scores(m: torch.Tensor, q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``sim_L(q, p) = m^T [q; p; q * p; q - p]`` (Hoang §4.1, eqs. 4.1-4.2) for every pair.

    ``m``: ``[4d]``, the head's weights in the order of the concatenation; ``q``: ``[B, d]`` or
    ``[d]``; ``p``: ``[N, d]`` or ``[d]``. Returns ``[B, N]`` (a 1-D input drops its axis). The
    ``[B, N, 4d]`` concatenation is never built: with ``m = [m_q; m_p; m_h; m_s]``,

        sim_L(q, p) = q . (m_q + m_s) + p . (m_p - m_s) + sum_k q_k m_h,k p_k

    Computed in float32 (or the inputs' wider dtype) so a float32 head can score bf16 embeddings.
    """
    if m.dim() != 1:
        raise ValueError(f"m must be 1-D, got shape {tuple(m.shape)}")
    q_axis, p_axis = q.dim() == 1, p.dim() == 1
    q2 = q.unsqueeze(0) if q_axis else q
    p2 = p.unsqueeze(0) if p_axis else p
    if q2.dim() != 2 or p2.dim() != 2:
        raise ValueError(f"q and p must be 1-D or 2-D, got {tuple(q.shape)} and {tuple(p.shape)}")
    d = q2.shape[1]
    if p2.shape[1] != d or m.shape[0] != 4 * d:
        raise ValueError(f"shapes disagree: m {tuple(m.shape)}, q {tuple(q.shape)}, p {tuple(p.shape)}")
    dtype = torch.promote_types(torch.promote_types(m.dtype, q2.dtype), torch.promote_types(p2.dtype, torch.float32))
    m, q2, p2 = m.to(dtype), q2.to(dtype), p2.to(dtype)
    m_q, m_p, m_h, m_s = m[:d], m[d : 2 * d], m[2 * d : 3 * d], m[3 * d :]
    scores = (q2 @ (m_q + m_s)).unsqueeze(1) + (p2 @ (m_p - m_s)).unsqueeze(0) + (q2 * m_h) @ p2.T
    if q_axis:
        scores = scores.squeeze(0)
    if p_axis:
        scores = scores.squeeze(-1)
    return scores


class LateInteractionLoss(LazyModuleMixin, nn.Module):
    """DPR's loss plus the late-interaction head's loss, Hoang ch. 4 (§4.1, eqs. 4.1-4.4):

        sim_L(q, p) = m_L^T [q; p; q * p; q - p],   m_L in R^{4d}          (eqs. 4.1, 4.2)
        L = L_dpr(S) + lambda_late * L_dpr(S_L)                           (eqs. 4.3, 4.4)

    with ``S = Q P^T`` and ``S_L[i, j] = sim_L(q_i, p_j)`` over every question/passage pair of the
    batch, both NLLs as :class:`DPRLoss` (positive among all N passages, mean over questions).
    ``lambda_late`` (the seed's lambda) defaults to 1.0 (§4.2: {n, lambda} = {200, 1.0}; n is
    the re-ranking depth at test time, not a training option). The head is the parameter ``m``
    (no bias: a constant shifts every score alike). The seed gives no initialisation:
    ``init="zeros"`` (default, S_L = 0 at the start, deterministic) or ``"uniform"``
    (U(-1/sqrt(4d), 1/sqrt(4d)), ``nn.Linear``'s default, as in the thesis author's code). The
    ``q . (m_q + m_s)`` term is constant along a question's row, so the NLL gives ``m_q`` no
    gradient (``m_s`` learns only through the ``p`` term).

    ``dim`` (d, the embedding size): given, ``m`` is created at once; left ``None``, ``m`` is a
    lazy parameter materialised by the first forward or by ``load_state_dict`` (its shape comes
    from the checkpoint), so a checkpoint saves and reloads either way; with ``dim=None`` build
    the optimizer after a first forward (the usual rule for lazy modules). Parts:
    ``{"loss", "dpr", "late"}``. Re-rankers score with :func:`late_interaction_scores` and
    ``loss.m``.
    """

    cls_to_become = None

    def __init__(self, *, lambda_late: float = 1.0, dim: int | None = None, init: str = "zeros") -> None:
        super().__init__()
        # checked by the options' declarations (the spec's) when built by name
        self.lambda_late = float(lambda_late)
        self.init = init
        if dim is None:
            self.m = nn.UninitializedParameter()
        else:
            self.m = nn.Parameter(torch.empty(4 * dim))
            self._init_head()

    def _init_head(self) -> None:
        with torch.no_grad():
            if self.init == "zeros":
                self.m.zero_()
            else:
                bound = 1.0 / float(self.m.shape[0]) ** 0.5
                self.m.uniform_(-bound, bound)

    def initialize_parameters(self, questions: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Materialise ``m`` as ``[4d]`` on the questions' device, in the module's dtype (lazy path)."""
        if self.has_uninitialized_params():
            if questions.dim() != 2:
                raise ValueError(f"questions must be 2-D, got {tuple(questions.shape)}")
            with torch.no_grad():
                self.m.materialize((4 * questions.shape[1],), device=questions.device)
                self._init_head()

    def extra_repr(self) -> str:
        dim = "lazy" if isinstance(self.m, nn.UninitializedParameter) else self.m.shape[0] // 4
        return f"lambda_late={self.lambda_late}, dim={dim}, init={self.init!r}"

    def forward(self, questions: torch.Tensor, passages: torch.Tensor, positive: torch.Tensor) -> dict[str, torch.Tensor]:
        positive = _check_batch(questions, passages, positive)
        if self.m.shape[0] != 4 * questions.shape[1]:
            raise ValueError(f"head size {self.m.shape[0]} is not 4 x embedding size {questions.shape[1]}")
        dpr = nll(questions @ passages.T, positive)
        late = nll(late_interaction_scores(self.m, questions, passages), positive)
        loss = dpr + self.lambda_late * late
        return {"loss": loss, "dpr": dpr.detach(), "late": late.detach()}


# ---------------------------------------------------------------------------------- in-loop losses


class QSFTLoss(nn.Module):
    """Query-side fine-tuning (Sciavolino §5.2, after Lee et al. 2021, DensePhrases, arXiv:2012.12624): an in-loop
    loss over the ``k`` passages the current question encoder retrieved from the frozen index.

    With ``s_ij = q_i . p_ij`` (the index's vectors ``p``, which get no gradient) and ``A_i`` the
    retrieved passages whose text holds an answer (DPR's ``has_answer``):

        L = 1/|I| * sum_{i in I} -log( sum_{j in A_i} exp(s_ij) / sum_{j=1..k} exp(s_ij) )

    the negative log of the softmax probability mass on answer-bearing passages, over the
    questions ``I`` that retrieved at least one (the others are skipped: the part ``skipped`` is
    their share of the batch, and :attr:`skipped` / :attr:`seen` count them over training).
    A batch with no such question gives 0 (still connected to the graph). Parts: ``{"loss",
    "skipped"}``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0
        self.seen = 0

    def forward(self, questions: torch.Tensor, retrieved) -> dict[str, torch.Tensor]:
        vectors = retrieved.vectors.to(questions.dtype)
        scores = torch.einsum("bd,bkd->bk", questions, vectors)
        mask = retrieved.has_answer.to(torch.bool)
        keep = mask.any(dim=1)
        total = torch.logsumexp(scores, dim=1)
        positive = torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=1)
        kept = int(keep.sum())
        self.seen += int(keep.numel())
        self.skipped += int(keep.numel()) - kept
        loss = (total - positive)[keep].mean() if kept else scores.sum() * 0.0
        return {"loss": loss, "skipped": torch.tensor(1.0 - kept / max(1, keep.numel()))}


class ARTLoss(nn.Module):
    """ART (Sachan et al. 2022, "Questions Are All You Need to Train a Dense Passage Retriever",
    arXiv:2206.10658): an in-loop loss without labelled passages.

    For each question and its ``K`` retrieved passages ``z_1..z_K``:

    - teacher: ``p_hat(z_j) = softmax_j( (1/|q|) sum_t log p(q_t | q_<t, z_j) )``, the mean
      log-likelihood of the question's tokens given the passage under the sequence-to-sequence
      ``teacher`` (the scorer UPR uses, :func:`harness_builtins.common.seq2seq.question_log_likelihoods`;
      no gradient). ``mean: false`` uses the sum instead.
    - student: ``q(z_j) = softmax_j( q . p_j / tau )`` with the passage embeddings ``p_j``
      re-encoded by the current passage encoder (with gradient) and ``tau = sqrt(d)`` (or the
      number ``temperature``);
    - ``L = 1/B * sum_i KL(p_hat_i || q_i) = 1/B * sum_i sum_j p_hat_ij (log p_hat_ij - log q_ij)``.

    The teacher's prompt is ART's code by default (DevSinghSachan/art, quoted in
    :mod:`harness_builtins.common.seq2seq`): the encoder reads ``Passage: {title} {text} . Please
    write a question based on this passage.`` (``passage_prompt``; note the space before the
    period), the decoder is scored on ``Question: {question}`` (``question_target``) with no ``?``
    added (``question_mark: false``). This harness's earlier teacher prompt (no space before the
    period, a ``?`` added to every question lacking one) is ``question_mark: true`` with
    ``passage_prompt: "Passage: {title} {text}. Please write a question based on this passage."``.
    ART cuts the title and text of a passage too long for ``max_passage_length`` so that the
    instruction stays; here the prompt's end is cut (only passages over ~500 tokens differ).

    Parts: ``{"loss", "kl", "teacher_entropy"}``.
    """

    def __init__(self, teacher: Any = None, revision: str | None = None, mean: bool = True, temperature: Any = "sqrt",
                 teacher_batch_size: int = 32, max_passage_length: int = 512, max_question_length: int = 128,
                 precision: str = "auto", device: str = "auto", question_mark: bool = False,
                 passage_prompt: str | None = None, question_target: str | None = None) -> None:
        super().__init__()
        from harness.util.models import ModelRef

        from harness_builtins.common import seq2seq
        from harness_builtins.common.devices import resolve_device, resolve_precision

        if not teacher:
            raise ValueError("the art loss needs a sequence-to-sequence teacher: -L teacher=HUB_ID_OR_DIRECTORY (T0-3B in the paper)")
        # the values are checked by their declarations (the spec's) when built by name
        self.temperature = temperature if temperature == "sqrt" else float(temperature)
        self.mean = mean
        self.question_mark = question_mark
        self.batch_size = teacher_batch_size
        self.max_passage_length = max_passage_length
        self.max_question_length = max_question_length
        self.passage_prompt = passage_prompt or seq2seq.ART_PASSAGE_PROMPT
        self.question_target = question_target or seq2seq.ART_QUESTION_TARGET
        dev = resolve_device(device)
        if dev == "cuda" and os.environ.get("LOCAL_RANK", "").isdigit():
            dev = f"cuda:{os.environ['LOCAL_RANK']}"  # each training process its own GPU's teacher
        # a plain attribute, not a submodule: the teacher is neither trained nor saved
        self.__dict__["teacher"], self.__dict__["tokenizer"] = seq2seq.load_seq2seq(
            ModelRef(teacher, revision), dev, resolve_precision(precision, dev), who="art teacher")

    def teacher_scores(self, questions, passages) -> torch.Tensor:
        """``[B, K]``: each passage's (mean) log-likelihood of its question under the teacher."""
        from harness_builtins.common import seq2seq

        rows = []
        for question, group in zip(questions, passages):
            sums = seq2seq.question_log_likelihoods(
                self.teacher, self.tokenizer, question, [(p.title, p.text) for p in group], batch_size=self.batch_size,
                max_passage_length=self.max_passage_length, max_question_length=self.max_question_length,
                question_mark=self.question_mark, passage_template=self.passage_prompt, target_template=self.question_target,
            )
            if self.mean:
                target = seq2seq.question_target(question, question_mark=self.question_mark, template=self.question_target)
                tokens = len(self.tokenizer(target, max_length=self.max_question_length, truncation=True).input_ids)
                sums = [value / tokens for value in sums]
            rows.append(sums)
        return torch.tensor(rows, dtype=torch.float32)

    def forward(self, questions: torch.Tensor, retrieved) -> dict[str, torch.Tensor]:
        b, k = len(retrieved.passages), len(retrieved.passages[0])
        teacher = torch.log_softmax(self.teacher_scores(retrieved.questions, retrieved.passages).to(questions.device), dim=1)
        passages = retrieved.encode_passages([p for group in retrieved.passages for p in group]).reshape(b, k, -1)
        tau = math.sqrt(questions.shape[1]) if self.temperature == "sqrt" else self.temperature
        student = torch.log_softmax(torch.einsum("bd,bkd->bk", questions, passages.to(questions.dtype)) / tau, dim=1)
        kl = F.kl_div(student, teacher, log_target=True, reduction="batchmean")
        entropy = -(teacher.exp() * teacher).sum(dim=1).mean()
        return {"loss": kl, "kl": kl.detach(), "teacher_entropy": entropy.detach()}

"""Training losses: values worked out by hand on tiny batches, and against independent computations
(F.cross_entropy on explicitly built score matrices, autograd gradcheck, hand-derived gradients)."""

from __future__ import annotations

import io
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from harness.api import InLoopLoss, Loss  # noqa: E402
from harness_builtins.training.losses import (  # noqa: E402
    DPRLoss,
    FlippedLoss,
    LateInteractionLoss,
    MultiSimilarityLoss,
    StopGradientLoss,
    late_interaction_scores,
)
from harness_builtins.training.parts import build, specs  # noqa: E402

#: The registered losses' specs, and the names of those that search the in-loop index.
LOSSES = specs("losses")
IN_LOOP_LOSSES = sorted(name for name, spec in LOSSES.items() if spec.in_loop)


def build_loss(name, **options):
    return build("losses", name, **options)

E = math.e


def tiny():
    """B=2 questions, N=3 passages (two positives, one hard negative), d=2.

    Q = [[1, 0], [0, 2]], P = [[1, 0], [0, 1], [1, 1]], positive = [0, 1]
    S = Q P^T = [[1, 0, 1], [0, 2, 2]]
    """
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    return q, p, torch.tensor([0, 1])


def random_batch(b=3, n=7, d=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, d, generator=gen, dtype=torch.float64, requires_grad=True)
    p = torch.randn(n, d, generator=gen, dtype=torch.float64, requires_grad=True)
    positive = torch.tensor([4, 0, 2][:b])  # positives not in the first rows, in no particular order
    return q, p, positive


# Row 1 of S: [1, 0, 1], positive column 0: -log(e / (e + 1 + e)) = log(2e + 1) - 1
# Row 2 of S: [0, 2, 2], positive column 1: -log(e^2 / (1 + e^2 + e^2)) = log(1 + 2e^2) - 2
DPR_ROW1 = math.log(2 * E + 1) - 1  # = 0.862...
DPR_ROW2 = math.log(1 + 2 * E**2) - 2  # = 0.759...
DPR_VALUE = (DPR_ROW1 + DPR_ROW2) / 2


def test_dpr_value_by_hand():
    q, p, pos = tiny()
    out = DPRLoss()(q, p, pos)
    assert set(out) == {"loss", "nll"}
    assert out["loss"].item() == pytest.approx(DPR_VALUE, abs=1e-12)
    assert out["loss"].item() == pytest.approx(0.8103, abs=1e-4)


def test_dpr_gradient_by_hand():
    q, p, pos = tiny()
    DPRLoss()(q, p, pos)["loss"].backward()
    # dL/dq_1 = 1/B * sum_j (softmax(S_1)_j - y_1j) p_j, softmax(S_1) = [e, 1, e] / (2e + 1):
    #   1/2 * ( -(e + 1)/(2e+1) * [1, 0] + 1/(2e+1) * [0, 1] + e/(2e+1) * [1, 1] )
    #   = 1/(2 (2e+1)) * [-1, e + 1]
    expected = torch.tensor([-1.0, E + 1], dtype=torch.float64) / (2 * (2 * E + 1))
    torch.testing.assert_close(q.grad[0], expected)


def test_dpr_is_cross_entropy_over_all_passages():
    q, p, pos = random_batch()
    got = DPRLoss()(q, p, pos)["loss"]
    torch.testing.assert_close(got, F.cross_entropy(q @ p.T, pos))
    # written out: mean over questions of -log softmax over all N passages
    s = q @ p.T
    manual = -sum(s[i, pos[i]] - torch.logsumexp(s[i], 0) for i in range(3)) / 3
    torch.testing.assert_close(got, manual)


#: The losses over in-batch passages (the in-loop ones have tests of their own: test_training_inloop).
IN_BATCH = sorted(set(LOSSES) - set(IN_LOOP_LOSSES))


@pytest.mark.parametrize("name", sorted(set(IN_BATCH) - {"stopgrad"}))
def test_gradcheck(name):
    q, p, pos = random_batch()
    options = {"dim": 4} if name == "late-interaction" else {}
    loss = build_loss(name, **options).double()
    if name == "late-interaction":
        with torch.no_grad():
            loss.m.copy_(torch.linspace(-1, 1, 16, dtype=torch.float64))
        m = loss.m
        assert torch.autograd.gradcheck(
            lambda q_, p_, m_: F.cross_entropy(q_ @ p_.T, pos) + late_ce(m_, q_, p_, pos), (q, p, m)
        )
    assert torch.autograd.gradcheck(lambda q_, p_: loss(q_, p_, pos)["loss"], (q, p))


def test_stopgrad_value_equals_dpr_and_gradients_are_half():
    q, p, pos = random_batch(seed=1)
    dpr = DPRLoss()(q, p, pos)["loss"]
    gq, gp = torch.autograd.grad(dpr, (q, p))
    out = StopGradientLoss()(q, p, pos)
    assert set(out) == {"loss", "passage_side", "question_side"}
    torch.testing.assert_close(out["loss"], dpr)
    torch.testing.assert_close(out["passage_side"], dpr.detach())
    torch.testing.assert_close(out["question_side"], dpr.detach())
    sq, sp = torch.autograd.grad(out["loss"], (q, p))
    torch.testing.assert_close(sq, gq / 2)
    torch.testing.assert_close(sp, gp / 2)


def test_stopgrad_gradient_is_half_the_finite_difference_of_its_value():
    # stopgrad is deliberately not the gradient of its value: by central differences, its value
    # (= DPR's) changes at twice the rate its backward reports
    q, p, pos = random_batch(seed=6)
    loss = StopGradientLoss()
    gq, gp = torch.autograd.grad(loss(q, p, pos)["loss"], (q, p))
    h = 1e-6
    for tensor, grad in ((q, gq), (p, gp)):
        for index in [(0, 0), (1, 2), (2, 3)]:
            with torch.no_grad():
                tensor[index] += h
                up = loss(q, p, pos)["loss"].item()
                tensor[index] -= 2 * h
                down = loss(q, p, pos)["loss"].item()
                tensor[index] += h
            assert grad[index].item() == pytest.approx((up - down) / (2 * h) / 2, rel=1e-5, abs=1e-9)


def test_stopgrad_halves_train_one_side_each():
    q, p, pos = tiny()
    out = StopGradientLoss()(q, p, pos)
    assert out["loss"].item() == pytest.approx(DPR_VALUE, abs=1e-12)
    sq, sp = torch.autograd.grad(out["loss"], (q, p))
    # questions get gradient only from 1/2 L(q . p_d), passages only from 1/2 L(q_d . p)
    question_half = 0.5 * F.cross_entropy(q @ p.detach().T, pos)
    passage_half = 0.5 * F.cross_entropy(q.detach() @ p.T, pos)
    torch.testing.assert_close(sq, torch.autograd.grad(question_half, q)[0])
    torch.testing.assert_close(sp, torch.autograd.grad(passage_half, p)[0])
    # by hand (see test_dpr_gradient_by_hand): half of 1/(2 (2e+1)) * [-1, e + 1]
    torch.testing.assert_close(sq[0], torch.tensor([-1.0, E + 1], dtype=torch.float64) / (4 * (2 * E + 1)))


# Flip on tiny(): anchors p_0 = [1, 0], p_1 = [0, 1]; scores against the questions [q_1, q_2]:
#   p_0: [1, 0], target question 1: -log(e / (e + 1)) = log(e + 1) - 1
#   p_1: [0, 2], target question 2: -log(e^2 / (1 + e^2)) = log(1 + e^2) - 2
FLIP_VALUE = ((math.log(E + 1) - 1) + (math.log(1 + E**2) - 2)) / 2  # = 0.2201...


def test_flip_value_by_hand():
    q, p, pos = tiny()
    out = FlippedLoss()(q, p, pos)
    assert set(out) == {"loss", "flip"}
    assert out["loss"].item() == pytest.approx(FLIP_VALUE, abs=1e-12)
    assert out["loss"].item() == pytest.approx(0.22009, abs=1e-4)


def test_flip_is_the_transposed_softmax_and_ignores_hard_negatives():
    q, p, pos = random_batch(seed=2)
    out = FlippedLoss()(q, p, pos)
    s = q @ p.T  # [B, N]
    torch.testing.assert_close(out["loss"], F.cross_entropy(s[:, pos].T, torch.arange(3)))
    manual = -sum(s[i, pos[i]] - torch.logsumexp(s[:, pos[i]], 0) for i in range(3)) / 3
    torch.testing.assert_close(out["loss"], manual)
    grad_p = torch.autograd.grad(out["loss"], p)[0]
    negatives = [j for j in range(p.shape[0]) if j not in pos.tolist()]
    assert torch.count_nonzero(grad_p[negatives]) == 0
    assert torch.count_nonzero(grad_p[pos]) > 0


# Multi-similarity on tiny():
#   Q Q^T = [[1, 0], [0, 4]]: L^qq = ((log(e + 1) - 1) + (log(1 + e^4) - 4)) / 2
#   positives P[0], P[1] = I, P+ P+^T = I: L^pp = ((log(e + 1) - 1) + (log(1 + e) - 1)) / 2 = log(e + 1) - 1
QQ_VALUE = ((math.log(E + 1) - 1) + (math.log(1 + E**4) - 4)) / 2
PP_VALUE = math.log(E + 1) - 1
#   all passages: P P^T = [[1, 0, 1], [0, 1, 1], [1, 1, 2]], targets 0, 1, 2:
#   rows 1, 2: log(2e + 1) - 1 each; row 3: -log(e^2 / (e + e + e^2)) = log(2e + e^2) - 2
PP_ALL_VALUE = (2 * (math.log(2 * E + 1) - 1) + math.log(2 * E + E**2) - 2) / 3


def test_multi_similarity_value_by_hand():
    q, p, pos = tiny()
    out = MultiSimilarityLoss(lambda_qq=0.5, lambda_pp=0.25)(q, p, pos)
    assert set(out) == {"loss", "qp", "qq", "pp"}
    assert out["qp"].item() == pytest.approx(DPR_VALUE, abs=1e-12)
    assert out["qq"].item() == pytest.approx(QQ_VALUE, abs=1e-12)
    assert out["pp"].item() == pytest.approx(PP_VALUE, abs=1e-12)
    assert out["loss"].item() == pytest.approx(DPR_VALUE + 0.5 * QQ_VALUE + 0.25 * PP_VALUE, abs=1e-12)
    every = MultiSimilarityLoss(lambda_qq=0.5, lambda_pp=0.25, pp_passages="all")(q, p, pos)
    assert every["pp"].item() == pytest.approx(PP_ALL_VALUE, abs=1e-12)


def test_multi_similarity_defaults_and_independent_value():
    loss = MultiSimilarityLoss()
    assert (loss.lambda_qq, loss.lambda_pp, loss.pp_passages) == (0.1, 0.1, "positives")
    q, p, pos = random_batch(seed=3)
    own = torch.arange(3)
    expected = (
        F.cross_entropy(q @ p.T, pos)
        + 0.1 * F.cross_entropy(q @ q.T, own)
        + 0.1 * F.cross_entropy(p[pos] @ p[pos].T, own)
    )
    torch.testing.assert_close(loss(q, p, pos)["loss"], expected)
    zero = MultiSimilarityLoss(lambda_qq=0, lambda_pp=0)(q, p, pos)["loss"]
    torch.testing.assert_close(zero, DPRLoss()(q, p, pos)["loss"])


def late_ce(m, q, p, pos):
    """The late-interaction NLL with [q; p; q*p; q-p] built explicitly for every pair."""
    b, n, d = q.shape[0], p.shape[0], q.shape[1]
    qq = q[:, None, :].expand(b, n, d)
    pp = p[None, :, :].expand(b, n, d)
    features = torch.cat([qq, pp, qq * pp, qq - pp], dim=-1)  # [B, N, 4d]
    return F.cross_entropy(features @ m, pos)


def test_late_interaction_score_by_hand():
    m = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    q = torch.tensor([1.0, 0.0])
    p = torch.tensor([1.0, 1.0])
    # [q; p; q*p; q-p] = [1, 0, 1, 1, 1, 0, 0, -1]; m . that = 1 + 0 + 3 + 4 + 5 + 0 + 0 - 8 = 5
    assert late_interaction_scores(m, q, p).item() == pytest.approx(5.0)
    assert late_interaction_scores(m, q[None], p[None]).shape == (1, 1)
    assert late_interaction_scores(m, q[None], torch.stack([p, p, p])).shape == (1, 3)
    assert late_interaction_scores(m, q, torch.stack([p, p])).shape == (2,)


def test_late_interaction_scores_match_explicit_concatenation():
    gen = torch.Generator().manual_seed(4)
    m, q, p = torch.randn(12, generator=gen), torch.randn(2, 3, generator=gen), torch.randn(5, 3, generator=gen)
    explicit = torch.stack(
        [torch.stack([m @ torch.cat([qi, pj, qi * pj, qi - pj]) for pj in p]) for qi in q]
    )
    torch.testing.assert_close(late_interaction_scores(m, q, p), explicit)
    # a float32 head scores bf16 embeddings
    assert late_interaction_scores(m, q.bfloat16(), p.bfloat16()).dtype == torch.float32
    with pytest.raises(ValueError):
        late_interaction_scores(m, torch.randn(2, 4), torch.randn(5, 4))


def test_late_interaction_loss_value():
    q, p, pos = tiny()
    loss = LateInteractionLoss(dim=2).double()
    out = loss(q, p, pos)
    assert set(out) == {"loss", "dpr", "late"}
    # zero head: every sim_L is 0, so the late NLL is log N = log 3
    assert out["late"].item() == pytest.approx(math.log(3), abs=1e-12)
    assert out["loss"].item() == pytest.approx(DPR_VALUE + math.log(3), abs=1e-12)
    with torch.no_grad():
        loss.m.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
    weighted = LateInteractionLoss(dim=2, lambda_late=0.5).double()
    weighted.load_state_dict(loss.state_dict())
    out = weighted(q, p, pos)
    torch.testing.assert_close(out["late"], late_ce(loss.m.detach(), q, p, pos).detach())
    torch.testing.assert_close(out["loss"], F.cross_entropy(q @ p.T, pos) + 0.5 * late_ce(loss.m, q, p, pos))
    # the head is trained: it gets a gradient
    out["loss"].backward()
    assert weighted.m.grad is not None and torch.count_nonzero(weighted.m.grad) > 0


def test_late_interaction_head_state_dict_round_trip():
    loss = LateInteractionLoss(dim=3, init="uniform")
    assert loss.m.shape == (12,) and loss.m.abs().max() <= 1 / math.sqrt(12)
    buffer = io.BytesIO()
    torch.save(loss.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer)
    eager = LateInteractionLoss(dim=3)
    eager.load_state_dict(state)
    torch.testing.assert_close(eager.m, loss.m)
    lazy = LateInteractionLoss()  # dim unknown: the checkpoint gives the head's shape
    lazy.load_state_dict(state)
    torch.testing.assert_close(lazy.m, loss.m)
    q, p, pos = torch.randn(2, 3), torch.randn(4, 3), torch.tensor([0, 1])
    torch.testing.assert_close(lazy(q, p, pos)["loss"], loss(q, p, pos)["loss"])
    with pytest.raises(RuntimeError):
        LateInteractionLoss(dim=4).load_state_dict(state)


def test_late_interaction_lazy_head_created_by_first_forward():
    loss = LateInteractionLoss()
    q, p, pos = torch.randn(2, 5), torch.randn(4, 5), torch.tensor([1, 3])
    out = loss(q, p, pos)
    assert loss.m.shape == (20,) and isinstance(loss.m, torch.nn.Parameter)
    assert torch.count_nonzero(loss.m) == 0
    assert out["late"].item() == pytest.approx(math.log(4), abs=1e-6)
    copy = LateInteractionLoss(dim=5)
    copy.load_state_dict(loss.state_dict())
    with pytest.raises(ValueError):
        loss(torch.randn(2, 6), torch.randn(4, 6), pos)


def test_parts_are_detached_and_total_differentiable():
    q, p, pos = random_batch(seed=5)
    for name in IN_BATCH:
        options = {"dim": 4} if name == "late-interaction" else {}
        out = build_loss(name, **options).double()(q, p, pos)
        assert out["loss"].requires_grad and out["loss"].dim() == 0
        for part, value in out.items():
            assert value.dim() == 0, (name, part)
            if part != "loss":
                assert not value.requires_grad, (name, part)


@pytest.mark.parametrize(
    "name, options",
    [
        ("multi-sim", {"lambda_qq": -0.1}),
        ("multi-sim", {"lambda_pp": float("nan")}),
        ("multi-sim", {"pp_passages": "negatives"}),
        ("late-interaction", {"lambda_late": -1}),
        ("late-interaction", {"dim": 0}),
        ("late-interaction", {"init": "normal"}),
        ("dpr", {"scale": 2.0}),
        ("nope", {}),
    ],
)
def test_bad_options_raise_value_error(name, options):
    with pytest.raises(ValueError):
        build_loss(name, **options)


def test_bad_shapes_raise_value_error():
    q, p, pos = random_batch()
    with pytest.raises(ValueError):
        DPRLoss()(q, p[:, :3], pos)
    with pytest.raises(ValueError):
        DPRLoss()(q, p, pos[:2])
    with pytest.raises(ValueError):
        FlippedLoss()(q, p, pos.double())
    with pytest.raises(ValueError):
        DPRLoss()(q[:0], p, pos[:0])


def test_registry_entries_build_with_defaults():
    for name, spec in LOSSES.items():
        assert spec.description and spec.citation and callable(spec.load)
        if name == "art":  # a teacher model is required
            with pytest.raises(ValueError, match="teacher"):
                spec.load()
            continue
        module = spec.load()
        assert isinstance(module, torch.nn.Module)
        assert isinstance(module, InLoopLoss if spec.in_loop else Loss)
    assert sorted(LOSSES) == ["art", "dpr", "flip", "late-interaction", "multi-sim", "qsft", "stopgrad"]
    assert sorted(IN_LOOP_LOSSES) == ["art", "qsft"]

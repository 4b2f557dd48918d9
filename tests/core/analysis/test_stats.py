"""The statistics of ``harness compare`` against values computed by hand and by scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from harness.analysis import stats


def rng(seed=0):
    return np.random.default_rng(seed)


def test_hits_and_reciprocal_ranks_follow_dpr_ranks():
    ranks = [0, 4, None, 19, 20]
    assert stats.hits(ranks, 5).tolist() == [1, 1, 0, 0, 0]
    assert stats.hits(ranks, 20).tolist() == [1, 1, 0, 1, 0]
    assert stats.reciprocal_ranks(ranks, 20).tolist() == [1.0, 0.2, 0.0, 0.05, 0.0]


def test_macro_mean_is_the_unweighted_mean_of_part_means():
    assert stats.macro_mean([np.array([1.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0])]) == pytest.approx((0.5 + 0.75) / 2)


def test_bootstrap_of_four_binary_outcomes_is_binomial():
    # Resampling [1, 1, 0, 0] gives X/4 with X ~ Binomial(4, 1/2): P(0) = P(4) = 1/16 > 2.5%,
    # so the 95% percentile interval is [0, 1].
    dist = stats.bootstrap_distribution([np.array([1.0, 1.0, 0.0, 0.0])], resamples=20_000, rng=rng())
    assert set(np.unique(dist)) <= {0.0, 0.25, 0.5, 0.75, 1.0}
    assert np.mean(dist == 0.0) == pytest.approx(1 / 16, abs=0.01)
    assert np.mean(dist == 0.5) == pytest.approx(6 / 16, abs=0.015)
    assert stats.percentile_interval(dist) == (0.0, 1.0)


def test_multinomial_resampling_matches_index_resampling():
    values = np.array([1.0] * 30 + [0.5] * 10 + [0.0] * 60)
    fast = stats.bootstrap_distribution([values], resamples=40_000, rng=rng(1))
    r = rng(2)
    slow = values[r.integers(0, len(values), size=(40_000, len(values)))].mean(axis=1)
    assert fast.mean() == pytest.approx(slow.mean(), abs=0.002)
    assert fast.std() == pytest.approx(slow.std(), rel=0.03)
    assert fast.std() == pytest.approx(values.std() / math.sqrt(len(values)), rel=0.03)


def test_bootstrap_interval_agrees_with_scipy_percentile_bootstrap():
    values = (np.arange(200) % 7 == 0).astype(float) + (np.arange(200) % 3 == 0)
    ours = stats.bootstrap_ci([values], resamples=50_000, rng=rng(3))
    theirs = scipy_stats.bootstrap((values,), np.mean, n_resamples=50_000, method="percentile", random_state=4).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.01)
    assert ours[1] == pytest.approx(theirs.high, abs=0.01)


def test_stratified_bootstrap_keeps_each_part_size():
    # A part that always hits and a part that never hits: every resample's macro mean is exactly 1/2.
    dist = stats.bootstrap_distribution([np.ones(5), np.zeros(50)], resamples=1000, rng=rng())
    assert np.all(dist == 0.5)


def test_bootstrap_is_deterministic_for_a_seed():
    values = [np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])]
    assert stats.bootstrap_ci(values, rng=rng(7)) == stats.bootstrap_ci(values, rng=rng(7))


@pytest.mark.parametrize(
    "only_a, only_b, expected",
    [
        (1, 5, 2 * (1 + 6) / 64),  # 2 * (C(6,0) + C(6,1)) / 2^6
        (0, 6, 2 / 64),
        (3, 3, 1.0),  # 2 * (1 + 6 + 15 + 20) / 64 > 1
        (0, 0, 1.0),
        (10, 0, 2 / 1024),
    ],
)
def test_exact_mcnemar_by_hand(only_a, only_b, expected):
    both = 4
    a = np.array([1] * both + [1] * only_a + [0] * only_b + [0, 0])
    b = np.array([1] * both + [0] * only_a + [1] * only_b + [0, 0])
    result = stats.mcnemar_exact(a, b)
    assert (result.b, result.c) == (only_a, only_b)
    assert result.p_value == pytest.approx(expected, rel=1e-12)


def test_sign_flip_test_enumerates_small_cases_by_hand():
    # d = (1, 1, 1): of the 8 sign patterns only (+,+,+) and (-,-,-) reach |T| = 1.
    assert stats.paired_randomization([np.array([1.0, 1.0, 1.0])], rng=rng()) == pytest.approx(2 / 8)
    # d = (1, -1): every pattern gives |T| in {0, 1}; |T_obs| = 0, so p = 1.
    assert stats.paired_randomization([np.array([1.0, -1.0])], rng=rng()) == 1.0
    # zeros carry no sign: (2, 0, 0) behaves as (2,) -> p = 1 (both signs reach |T| = 2/3).
    assert stats.paired_randomization([np.array([2.0, 0.0, 0.0])], rng=rng()) == 1.0
    assert stats.paired_randomization([np.zeros(4)], rng=rng()) == 1.0


def test_sign_flip_test_equals_scipy_exact_paired_permutation_test():
    x = np.array([0.5, 1.0, 0.0, 1.0, 0.25, 1.0, 0.2, 1.0, 0.0, 0.5])
    y = np.array([0.0, 1.0, 0.0, 0.5, 0.0, 0.2, 0.2, 1.0, 0.5, 0.0])
    ours = stats.paired_randomization([x - y], rng=rng())
    theirs = scipy_stats.permutation_test(
        (x, y), lambda a, b: np.mean(a - b), permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert ours == pytest.approx(theirs, rel=1e-9)


def test_sign_flip_monte_carlo_approaches_the_exact_value():
    d = np.array([1.0, 0.5, 0.25, 1.0, -0.5, 1.0, 0.2, 0.3, -0.1, 1.0, 0.5, 0.5, 0.1, 0.7])
    exact = stats.paired_randomization([d], permutations=2 ** 14, rng=rng())
    sampled = stats.paired_randomization([d], permutations=5_000, rng=rng(5))
    assert sampled == pytest.approx(exact, abs=0.01)
    assert sampled >= 1 / 5001  # Monte Carlo p-values are never zero


def test_sign_flip_weights_parts_as_the_macro_average():
    # Part one (1 question) and part two (4 questions): T = (1/2)(d1) + (1/8)(sum of part two).
    # With d = [1] and [1, 0, 0, 0] only the patterns giving |T| >= 5/8 count: both signs equal -> 2/4.
    assert stats.paired_randomization([np.array([1.0]), np.array([1.0, 0, 0, 0])], rng=rng()) == pytest.approx(0.5)


def test_holm_by_hand():
    # sorted: 0.005 -> 4 x = 0.02; 0.01 -> 3 x = 0.03; 0.03 -> 2 x = 0.06; 0.04 -> max(0.06, 0.04)
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


def test_interval_arguments_are_checked():
    with pytest.raises(ValueError):
        stats.percentile_interval(np.zeros(3), confidence=1.5)
    with pytest.raises(ValueError):
        stats.bootstrap_distribution([np.array([])], rng=rng())


def test_seeded_streams_are_pinned():
    """``seeded`` draws from numpy's legacy Mersenne Twister, whose streams numpy keeps across
    releases: the committed leaderboard's intervals are recomputed exactly in a fresh install."""
    assert stats.seeded(0, "x").multinomial(10, [0.5, 0.5], size=3).tolist() == [[4, 6], [4, 6], [8, 2]]
    assert stats.seeded(0, "x", 1).randint(0, 100, size=4).tolist() == [91, 37, 21, 60]
    # a RandomState works wherever a Generator does
    assert stats.paired_randomization([np.array([1.0, 1.0, 1.0])], rng=stats.seeded(0)) == pytest.approx(0.25)
    d = np.array([1.0, 0.5, 0.25, 1.0, -0.5, 1.0, 0.2, 0.3, -0.1, 1.0, 0.5, 0.5, 0.1, 0.7])
    assert 0 < stats.paired_randomization([d], permutations=500, rng=stats.seeded(1)) <= 1

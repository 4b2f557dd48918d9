"""Statistics over per-question outcomes: bootstrap confidence intervals, exact McNemar, paired
randomisation, Holm's correction.

Every function works on per-question values grouped by *part* (a suite's relation, bucket, ...).
A suite's score is the macro average over parts, ``S = (1/P) * sum_p mean(x_p)``, which for a suite
of one part is the plain mean. Resampling is *stratified*: each part is resampled on its own, with
its own size, so every resample has the structure of the suite (the EntityQuestions relations keep
their sizes).

Determinism: the harness draws from :func:`seeded`, a ``numpy.random.RandomState`` (Mersenne
Twister), whose streams numpy keeps identical across versions (NEP 19), so the same values and seed
give the same numbers on every machine and numpy release; that is what lets ``harness leaderboard
--check`` compare intervals in a fresh install. The functions also accept a
``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

def seeded(seed: int, *names: object):
    """A ``RandomState`` seeded by ``seed`` and a statistic's names (``SeedSequence`` mixes them;
    a name is hashed with CRC-32), so every statistic has its own stream whatever else is drawn."""
    import zlib

    words = [zlib.crc32(str(n).encode("utf-8")) for n in names]
    state = np.random.SeedSequence([seed, *words]).generate_state(1)[0]
    return np.random.RandomState(int(state))


def _signs(rng, shape: tuple[int, int]) -> np.ndarray:
    """Random +-1 of ``shape`` from a ``RandomState`` or a ``Generator``."""
    if hasattr(rng, "integers"):
        bits = rng.integers(0, 2, size=shape, dtype=np.int8)
    else:
        bits = rng.randint(0, 2, size=shape).astype(np.int8)
    return bits * 2 - 1


#: Default number of bootstrap resamples and of randomisation permutations.
RESAMPLES = 10_000
#: Cap on the number of draws held in memory at once (resamples x distinct values).
_CHUNK_CELLS = 4_000_000


def hits(ranks: Sequence[int | None], k: int) -> np.ndarray:
    """``1.0`` where a question's first-hit rank is below ``k`` (DPR's top-k hit), else ``0.0``."""
    return np.array([1.0 if r is not None and r < k else 0.0 for r in ranks])


def reciprocal_ranks(ranks: Sequence[int | None], k: int) -> np.ndarray:
    """``1 / (rank + 1)`` where the first-hit rank is below ``k``, else ``0``; their mean is MRR@k."""
    return np.array([1.0 / (r + 1) if r is not None and r < k else 0.0 for r in ranks])


def macro_mean(parts: Sequence[np.ndarray]) -> float:
    """``S = (1/P) * sum_p mean(x_p)``: the unweighted mean over parts of each part's mean."""
    return float(np.mean([p.mean() for p in parts]))


def _resampled_means(values: np.ndarray, resamples: int, rng) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of ``values`` (``n`` draws with replacement).

    Drawing ``n`` indices uniformly with replacement and averaging is the same distribution as
    drawing how often each *distinct* value is picked, ``c ~ Multinomial(n, f)`` with ``f`` the
    distinct values' frequencies, and averaging ``c . v / n``. Per-question outcomes take few
    distinct values (a hit is 0 or 1; a paired hit difference -1, 0 or 1; MRR@k at most k + 1), so
    this costs ``resamples x distinct`` instead of ``resamples x n``.
    """
    levels, counts = np.unique(values, return_counts=True)
    n = len(values)
    out = np.empty(resamples)
    chunk = max(1, _CHUNK_CELLS // len(levels))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        drawn = rng.multinomial(n, counts / n, size=size)
        out[start : start + size] = drawn @ levels / n
    return out


def bootstrap_distribution(
    parts: Sequence[np.ndarray], *, resamples: int = RESAMPLES, rng
) -> np.ndarray:
    """The stratified bootstrap distribution of the macro mean: for each resample ``b``,
    ``S*_b = (1/P) * sum_p mean(x*_p,b)`` with ``x*_p,b`` drawn with replacement from part ``p``."""
    if not parts or any(len(p) == 0 for p in parts):
        raise ValueError("every part needs at least one question")
    return np.mean([_resampled_means(np.asarray(p, dtype=float), resamples, rng) for p in parts], axis=0)


def percentile_interval(distribution: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval: the ``(1 - c)/2`` and ``(1 + c)/2`` quantiles of the bootstrap
    distribution (numpy's default linear interpolation between order statistics)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    low, high = np.quantile(distribution, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def bootstrap_ci(
    parts: Sequence[np.ndarray],
    *,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    rng,
) -> tuple[float, float]:
    """A percentile bootstrap confidence interval of the macro mean over ``parts`` (questions
    resampled within each part). For paired differences pass ``x_A - x_B`` per question."""
    return percentile_interval(bootstrap_distribution(parts, resamples=resamples, rng=rng), confidence)


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of two systems' per-question hits.

    ``b``: questions only A answers; ``c``: questions only B answers. Under H0 (both systems are
    equally likely to win a discordant question) ``b ~ Binomial(b + c, 1/2)``, and the two-sided
    exact p-value is ``min(1, 2 * sum_{i <= min(b, c)} C(b + c, i) / 2^(b + c))``; 1 when
    ``b + c = 0``.
    """

    b: int
    c: int
    p_value: float


def mcnemar_exact(a_hits: np.ndarray, b_hits: np.ndarray) -> McNemar:
    """Exact McNemar on paired 0/1 outcomes (the same questions in the same order)."""
    a = np.asarray(a_hits, dtype=bool)
    b = np.asarray(b_hits, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("paired outcomes must have the same length")
    only_a = int(np.sum(a & ~b))
    only_b = int(np.sum(~a & b))
    if only_a + only_b == 0:
        return McNemar(only_a, only_b, 1.0)
    from scipy.stats import binomtest

    p = binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue
    return McNemar(only_a, only_b, min(1.0, float(p)))


def paired_randomization(
    differences: Sequence[np.ndarray],
    *,
    permutations: int = RESAMPLES,
    rng,
) -> float:
    """Two-sided paired randomisation (sign-flip) test of a macro-averaged difference.

    ``d_i = x_A,i - x_B,i`` per question, weight ``w_i = 1 / (P * n_p)`` for a question of part
    ``p``, so ``T = sum_i w_i d_i`` is the macro difference. Under H0 the labels A and B are
    exchangeable within each question, so each ``d_i`` keeps or flips its sign with probability 1/2:
    ``T* = sum_i w_i s_i d_i``, ``s_i`` in {-1, +1}.

    Exact when ``2^m <= permutations`` for the ``m`` questions with ``d_i != 0`` (every sign
    pattern enumerated; p = share of patterns with ``|T*| >= |T|``); otherwise Monte Carlo with
    ``p = (1 + #{|T*| >= |T|}) / (1 + permutations)``, which never reports 0. Comparisons allow a
    relative tolerance of 1e-9 for floating-point ties.
    """
    if not differences or any(len(d) == 0 for d in differences):
        raise ValueError("every part needs at least one question")
    weights = np.concatenate([np.full(len(d), 1.0 / (len(differences) * len(d))) for d in differences])
    d = np.concatenate([np.asarray(x, dtype=float) for x in differences]) * weights
    d = d[d != 0]
    observed = abs(d.sum())
    if len(d) == 0:
        return 1.0
    tolerance = 1e-9 * max(observed, np.abs(d).max())
    if 2 ** len(d) <= permutations:
        signs = ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1) * 2 - 1
        stats = np.abs(signs @ d)
        return float(np.mean(stats >= observed - tolerance))
    extreme = 0
    chunk = max(1, _CHUNK_CELLS // len(d))
    for start in range(0, permutations, chunk):
        size = min(chunk, permutations - start)
        signs = _signs(rng, (size, len(d)))
        extreme += int(np.sum(np.abs(signs @ d) >= observed - tolerance))
    return (1 + extreme) / (1 + permutations)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    With the ``m`` p-values sorted ascending, ``p_(1) <= ... <= p_(m)``:
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where ``adj <= alpha``
    controls the family-wise error rate at ``alpha``.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * p_values[index]))
        adjusted[index] = running
    return adjusted


def format_p(p: float) -> str:
    """A p-value as every output prints it (compare, the re-ranking ceiling, the HTML board): four
    decimals from 0.001 up (``0.0123``, ``1.0000``), else scientific with two significant digits
    (``2.0e-04``, ``3.6e-20``)."""
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"

"""Bounds on the error of a computed inner product, for proving that a candidate set holds the
exact top-k.

A search computes approximate scores ``s~(p)`` of a question ``q`` against its copy of the rows
(float32 or float16) and keeps the best ``m``. The final ranking re-scores those candidates from
the reference vectors (the encoder's float32 values) and orders them. Every row the search did not
keep has ``s~(p) <= s~_m``, the smallest kept approximate score, so its exact score ``q . r`` is at
most ``s~_m + E(q)`` when ``|s~(p) - q . r| <= E(q)`` for every row: that is the question's
*ceiling*. When the ``k``-th best re-scored candidate lies above the ceiling (by more than the
re-scoring's own rounding), no row outside the candidates can enter the top ``k``: the ranking is
proven exact. Each ``E`` below is a worst-case bound (any summation order, any hardware
rounding direction: a factor 2 over round-to-nearest), in terms of the question's norms and the
largest row norm ``vmax`` of the searched copy.
"""

from __future__ import annotations

import math

import numpy as np

#: float32's unit roundoff.
U32 = 2.0**-24


def gamma(n: int, u: float = U32) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error bound of a sum of ``n`` terms."""
    return n * u / (1 - n * u)


def norms(queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|q|_2, |q|_1)`` of each question, in float64."""
    wide = np.asarray(queries, np.float64)
    return np.sqrt(np.einsum("ij,ij->i", wide, wide)), np.abs(wide).sum(axis=1)


def float32_dot(dim: int, q2: np.ndarray, vmax: float) -> np.ndarray:
    """``|fl32(q . v) - q . v|`` for float32 ``q`` and ``v`` summed in float32 in any order (BLAS,
    cuBLAS without TF32): ``gamma_d sum |q_i v_i| <= gamma_d |q| |v|``, doubled for hardware that
    truncates instead of rounding."""
    return 2 * gamma(dim) * q2 * vmax


def split_float16_dot(dim: int, q2: np.ndarray, vmax: float) -> np.ndarray:
    """The split-float16 GEMM of :mod:`~harness_builtins.dense.gpu_flat`, in the unscaled
    question's units: ``hi + lo`` is the scaled question to ``2^-22`` of each component plus half
    float16's smallest subnormal (``2^-25``, at most ``2^-39 |q|_inf`` unscaled), and ``2 d``
    exact float16 products are accumulated in float32 by tensor cores (which may truncate:
    ``4 gamma_2d``)."""
    return (2.0**-22 + 2.0**-38 * math.sqrt(dim) + 4 * gamma(2 * dim) * (1 + 2.0**-10)) * q2 * vmax


def float16_rounding(q2: np.ndarray, q1: np.ndarray, vmax: float) -> np.ndarray:
    """``|q . r - q . fp16(r)|`` over rows whose float16 copy has norm at most ``vmax``: each
    coordinate rounds by at most ``2^-11 |r_i|`` with ``|r_i| <= |fp16(r_i)| (1 + 2^-11)``, or by
    ``2^-25`` below float16's normal range (see :func:`~harness_builtins.dense.index.rounding_bounds`)."""
    return (2.0**-11 + 2.0**-22) * q2 * vmax + 2.0**-25 * q1


def rescored(dim: int, q2: np.ndarray, vmax: float) -> np.ndarray:
    """``|fl32(fl64-sum(q . v)) - q . v|`` for an inner product of float32 or float16 numbers
    summed in float64 (each product exact) and rounded once to float32."""
    return (2 * U32 + 2 * gamma(dim, 2.0**-53)) * q2 * vmax

"""Exact inner-product search on GPUs with torch: the ``flat`` index when a GPU is visible.

Why torch and not faiss: PyPI's faiss GPU wheels are built for one CUDA major version, bring
their own copies of cuBLAS (hundreds of MB) and install the same ``faiss`` package as the
``faiss-cpu`` dependency, so which build wins depends on install order. torch with CUDA is already
there wherever a dense encoder runs on a GPU, and a flat search is one matrix product and a
selection. No extra install, no limit on ``k`` (faiss's GPU k-selection stops at 2048).

**Layout.** The vectors are float32 when the cache's are and they fit the devices (a corpus of up
to 2M passages: 2M x 768 = 5.7 GiB), else float16 (21M x 768 = 30 GiB). Rows are
split into contiguous ranges, one per device (row numbers are the cache's). Each device's
tensor is allocated once at its final size and filled shard by shard through one pinned host
buffer, so building peaks at the final size plus one staging buffer on the host.

**Scores.** Over float32 rows the scores are one float32 GEMM (TF32 switched off while it runs).
Over float16 rows a float32 query ``q`` is split into two float16 parts, ``hi = fp16(q)`` and
``lo = fp16(q - hi)``; every product of float16 numbers is exact in float32, and tensor cores
accumulate in float32, so ``hi . p + lo . p`` (two float16 GEMMs with float32 output, the second
adding into the first) equals the
float32 score ``q . p`` to about 2^-22 of ``|q| |p|`` (where a float16 query alone, as faiss's
``useFloat16`` search does, is off by about 2^-11). The best ``k + margin`` candidates of each
query are then re-scored exactly (``q`` against the float16 row, summed in float64 and rounded
to float32: what the CPU ``IndexFlatIP`` search computes, up to its float32 summation order) and
ordered by that score, ties by the lower row (equal rows get equal scores).

**Proof.** Every row left out of a device's candidates has an approximate score no higher than
the lowest kept one; with the worst-case error of that score (:mod:`~harness_builtins.dense.bounds`:
the GEMM's, and the float16 rounding of the rows when the copy is float16 and the reference
vectors are not) this gives each question a *ceiling* on the exact score of every row not
returned (:meth:`TorchFlatIP.search_bounded`). The caller proves its ranking against it, and asks
for more candidates where it cannot.

**Selection.** ``torch.topk`` over 21M columns is the slow part of a naive version (it reads the
scores several times). Each chunk of scores is cut into groups of :data:`GROUP` columns; the top
``m`` elements of a row lie in its ``m`` groups with the largest maxima (a group outside them has
a maximum no larger than the ``m``-th largest group maximum, hence no element above the ``m``-th
element), so one pass computes the group maxima, ``topk`` selects ``m`` groups, and ``topk`` over
their ``m x GROUP`` elements gives the chunk's top ``m``. Ties at the cut are decided by the
final float32 re-scoring only among the candidates; exact ties beyond ``k + margin`` are not
looked at.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from harness.errors import HarnessError

from harness_builtins.dense import bounds

#: Columns per group of the two-pass selection.
GROUP = 32
#: Extra candidates re-scored in float32 beyond ``k`` (at least this many, or k/8).
MARGIN = 16
#: Bytes of float32 scores one chunk may hold on a device (at most; less when the device has
#: less free): three [queries, rows] buffers (the two products' outputs, a padded copy).
SCORE_BYTES = 8 << 30
#: Device memory left free beside the index for the search's other buffers (candidates,
#: re-scoring) and the framework.
HEADROOM_BYTES = 2 << 30
#: Queries searched together (a block's scores are computed chunk by chunk).
QUERY_BLOCK = 4096
#: Rows of the host staging buffer used while building (float16).
STAGING_ROWS = 131_072

SEARCH_PRECISION = "fp16x2-fp32-rescored"
#: The precision recorded for a float32 copy of the rows.
SEARCH_PRECISION_FP32 = "fp32-rescored"


def _torch():
    import torch

    return torch


def cuda_devices() -> list[str]:
    """Every visible CUDA device as ``cuda:N`` (none without torch's CUDA)."""
    torch = _torch()
    if not torch.cuda.is_available():
        return []
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def free_bytes(device: str) -> int:
    """Free memory of a CUDA device (what torch's allocator holds unused counts as free)."""
    torch = _torch()
    free, _ = torch.cuda.mem_get_info(device)
    return int(free) + int(torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def shortfall(dim: int, count: int, devices: list[str], itemsize: int = 2) -> str | None:
    """Why ``count`` rows of ``dim`` numbers of ``itemsize`` bytes (float16: 2) cannot be searched
    on ``devices`` (each device's share plus :data:`HEADROOM_BYTES` against its free memory), or
    None when they fit."""
    for i, dev in enumerate(devices):
        rows = count * (i + 1) // len(devices) - count * i // len(devices)
        need = rows * dim * itemsize + HEADROOM_BYTES
        if dev.startswith("cuda") and need > (have := free_bytes(dev)):
            return f"{dev} has {have / 2**30:.1f} GiB free, the index needs {need / 2**30:.1f} GiB there"
    return None


#: A split question's largest component is scaled into [2^14, 2^15): below float16's largest
#: finite value (65504), and 2^38 above its smallest subnormal, so ``hi`` and ``lo`` carry each
#: component to float32's precision whatever its magnitude.
SPLIT_TOP_EXPONENT = 15


def query_scales(queries):
    """The power of two (float64, ``[Q, 1]``) :func:`split_queries` multiplies each question by."""
    torch = _torch()
    largest = queries.abs().amax(dim=1, keepdim=True)
    _, exponent = torch.frexp(largest)  # largest = mantissa * 2^exponent, mantissa in [0.5, 1)
    shift = torch.where(largest > 0, SPLIT_TOP_EXPONENT - exponent, torch.zeros_like(exponent))
    # in float64, where 2^shift exists for every float32 (a subnormal largest component needs 2^164)
    return torch.pow(2.0, shift.double())


def split_queries(queries):
    """``(hi, lo)`` float16 parts of float32 ``queries`` with ``hi + lo`` ~ ``queries * s``, where
    ``s`` is a power of two per question (exact in float32) that puts its largest component in
    ``[2^14, 2^15)``. A question's scores scaled by a positive ``s`` rank its rows as the unscaled
    ones do, and only the ranking is used: the chosen candidates are re-scored from the unscaled
    float32 question (:func:`rescore`). Without the scaling a component above 65504 makes ``hi``
    infinite (every score NaN) and components below float16's normal range (6.1e-5) lose their
    digits. ``queries`` must be finite (:meth:`TorchFlatIP.search` checks)."""
    torch = _torch()
    scaled = (queries.double() * query_scales(queries)).float()
    hi = scaled.to(torch.float16)
    lo = (scaled - hi.float()).to(torch.float16)
    return hi, lo


def split_scores(hi, lo, block):
    """float32 ``[Q, R]`` scores of the split queries against float16 rows ``block``."""
    torch = _torch()
    if block.is_cuda:
        scores = torch.mm(hi, block.T, out_dtype=torch.float32)
        return torch.addmm(scores, lo, block.T, out_dtype=torch.float32)
    # CPU (tests): the same function in float32 arithmetic.
    wide = block.float()
    return hi.float() @ wide.T + lo.float() @ wide.T


def chunk_top(scores, m: int, group: int = GROUP):
    """``(values, columns)`` of the top ``m`` of each row of float32 ``scores`` (``[Q, R]``),
    through group maxima (see the module notes); fewer when ``R < m``."""
    torch = _torch()
    q, r = scores.shape
    m = min(m, r)
    if r <= 4 * group or m * group >= r:
        return torch.topk(scores, m, dim=1)
    groups = -(-r // group)
    if groups * group != r:
        padded = scores.new_full((q, groups * group), -math.inf)
        padded[:, :r] = scores
        scores = padded
    maxima = scores.view(q, groups, group).amax(dim=2)
    chosen = torch.topk(maxima, min(m, groups), dim=1).indices
    columns = (chosen.unsqueeze(2) * group + torch.arange(group, device=scores.device)).reshape(q, -1)
    values = scores.gather(1, columns)
    top = torch.topk(values, m, dim=1)
    return top.values, columns.gather(1, top.indices)


#: Bytes of candidate work (gathered float16 rows, their float64 copies and products) at once.
RESCORE_BYTES = 1 << 30


def rescore(queries, vectors, rows):
    """The scores of ``queries`` (``[Q, d]`` float32) against the rows ``rows`` (``[Q, c]``) of
    float16 ``vectors``: each inner product summed in float64 and rounded to float32, so it is the
    float32 rounding of the exact value, and equal rows get equal scores wherever they sit."""
    torch = _torch()
    q, c = rows.shape
    step = max(1, RESCORE_BYTES // (18 * max(1, c) * vectors.shape[1]))
    out = []
    for start in range(0, q, step):
        picked = vectors[rows[start : start + step].clamp(min=0)].double()  # [q, c, d]
        out.append((picked * queries[start : start + step].double().unsqueeze(1)).sum(dim=2).float())
    scores = torch.cat(out) if out else queries.new_zeros((0, c))
    return scores.masked_fill(rows < 0, -math.inf)


def order_exact(scores, rows, k: int):
    """The best ``k`` of each row by score, ties by the lower row (``rows`` -1 last)."""
    torch = _torch()
    key_rows = torch.where(rows < 0, torch.iinfo(torch.int64).max, rows)
    by_row = torch.argsort(key_rows, dim=1, stable=True)
    scores, rows = scores.gather(1, by_row), rows.gather(1, by_row)
    by_score = torch.argsort(scores, dim=1, descending=True, stable=True)[:, :k]
    return scores.gather(1, by_score), rows.gather(1, by_score)


class _DeviceSlice:
    """Rows ``[first, first + n)`` of the index, float16 or float32 on one device."""

    def __init__(self, device: str, first: int, n: int, dim: int, dtype):
        torch = _torch()
        self.device, self.first, self.n = device, first, n
        self.vectors = torch.empty((n, dim), dtype=dtype, device=device)
        #: The largest row norm (an upper bound), set once the rows are in (:meth:`measure`).
        self.vmax = math.inf

    def measure(self, rows_per_chunk: int = 1 << 20) -> None:
        """Set :attr:`vmax`: the largest row norm, from float32 sums of squares (raised by their
        worst-case relative error, so it bounds the exact norm)."""
        torch = _torch()
        largest = 0.0
        for start in range(0, self.n, rows_per_chunk):
            block = self.vectors[start : start + rows_per_chunk].float()
            largest = max(largest, float(block.mul(block).sum(dim=1).max()))
        self.vmax = math.sqrt(largest * (1 + 4 * bounds.gamma(self.vectors.shape[1] + 1)))

    def scores(self, q32, hi, lo, block):
        """float32 ``[Q, R]`` approximate scores of the questions against ``block``: one float32
        GEMM over float32 rows, the split-float16 one (scaled questions) over float16 rows."""
        if block.dtype == _torch().float32:
            return q32 @ block.T
        return split_scores(hi, lo, block)

    def candidates(self, queries, m: int, rows_per_chunk: int):
        """``(scores, rows, floor)`` on the device: this slice's top ``m`` per query by the
        approximate scores, re-scored exactly from this slice's rows; ``floor`` (float64, ``[Q]``,
        in the unscaled questions' units) is the lowest approximate score kept, which no row left
        out exceeds (``-inf`` when every row is kept)."""
        torch = _torch()
        q32 = queries.to(self.device)
        half = self.vectors.dtype == torch.float16
        hi, lo = split_queries(q32) if half else (None, None)
        values = columns = None
        for start in range(0, self.n, rows_per_chunk):
            block = self.vectors[start : start + rows_per_chunk]
            chunk_values, chunk_columns = chunk_top(self.scores(q32, hi, lo, block), m)
            chunk_columns = chunk_columns + start
            if values is None:
                values, columns = chunk_values, chunk_columns
                continue
            # a running top m: memory stays [Q, 2m] however many chunks there are
            values, columns = torch.cat([values, chunk_values], 1), torch.cat([columns, chunk_columns], 1)
            if values.shape[1] > m:
                top = torch.topk(values, m, dim=1)
                values, columns = top.values, columns.gather(1, top.indices)
        if m >= self.n:
            floor = torch.full((len(q32),), -math.inf, dtype=torch.float64)
        else:
            floor = values.amin(dim=1).double()
            if half:
                floor = floor / query_scales(q32).squeeze(1)  # a power of two: exact
            floor = floor.cpu()
        return rescore(q32, self.vectors, columns), columns + self.first, floor


class TorchFlatIP:
    """Exact inner-product search over float16 or float32 vectors on one or more torch devices.

    Quacks like the faiss index :class:`~harness_builtins.dense.index.DenseIndex` needs
    (``ntotal``, ``d``, ``search``)."""

    def __init__(self, dim: int, count: int, devices: list[str], dtype=None):
        if not devices:
            raise HarnessError("the GPU flat index needs at least one device")
        torch = _torch()
        self.d, self.ntotal, self.devices = dim, count, list(devices)
        self.dtype = dtype or torch.float16
        bounds_ = [count * i // len(devices) for i in range(len(devices) + 1)]
        self.slices = [_DeviceSlice(dev, bounds_[i], bounds_[i + 1] - bounds_[i], dim, self.dtype)
                       for i, dev in enumerate(devices)]
        #: Whether the rows here are a float16 rounding of the reference vectors (the rows the
        #: final ranking is made from): the ceilings then add that rounding.
        self.rounded = False

    @classmethod
    def from_shards(cls, shards: Iterable[np.ndarray], dim: int, count: int, devices: list[str],
                    on_rows: Callable[[int], None] | None = None, dtype=None) -> TorchFlatIP:
        """Fill an index from row blocks in order (the cache's memory-mapped shards), float16 on
        the devices unless ``dtype`` says float32; float32 blocks copied to float16 make it
        :attr:`rounded`."""
        torch = _torch()
        index = cls(dim, count, devices, dtype)
        pinned = any(dev.startswith("cuda") for dev in devices)
        staging = torch.empty((STAGING_ROWS, dim), dtype=index.dtype, pin_memory=pinned)
        row = 0
        for shard in shards:
            if index.dtype == torch.float16 and shard.dtype != np.float16:
                index.rounded = True
            for start in range(0, len(shard), STAGING_ROWS):
                piece = shard[start : start + STAGING_ROWS]
                n = len(piece)
                if row + n > count:
                    raise HarnessError(f"the embeddings hold more than the {count} rows they declare")
                staging.numpy()[:n] = piece  # straight from the memory map into pinned memory
                index._place(row, staging[:n])
                row += n
                if on_rows is not None:
                    on_rows(n)
        if row != count:
            raise HarnessError(f"the embeddings hold {row} rows, expected {count}")
        for piece in index.slices:
            piece.measure()
        return index

    def _place(self, row: int, block) -> None:
        """Copy ``block`` (host, pinned) to the devices holding rows ``row..``; waits for the copies
        (the staging buffer is reused right after)."""
        torch = _torch()
        taken = 0
        for piece in self.slices:
            lo, hi = max(row, piece.first), min(row + len(block), piece.first + piece.n)
            if lo < hi:
                piece.vectors[lo - piece.first : hi - piece.first].copy_(block[lo - row : hi - row], non_blocking=True)
                taken += hi - lo
        for dev in self.devices:
            if dev.startswith("cuda"):
                torch.cuda.synchronize(dev)

    def memory_bytes(self) -> int:
        return sum(s.vectors.numel() * s.vectors.element_size() for s in self.slices)

    def _rows_per_chunk(self, queries: int) -> int:
        budget = min([SCORE_BYTES, *(free_bytes(dev) // 2 for dev in self.devices if dev.startswith("cuda"))])
        rows = max(GROUP, budget // (12 * max(1, queries)))
        return rows - rows % GROUP

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)`` ``[Q, min(k, ntotal)]``: float32 scores, best first, ties by row."""
        scores, rows, _ = self.search_bounded(queries, k)
        return scores, rows

    def _ceiling(self, queries: np.ndarray, floors: list, dropped: np.ndarray) -> np.ndarray:
        """Each question's bound on the exact score (against the reference vectors) of every row
        not returned: a slice's floor plus its GEMM's error bound, the best dropped candidate's
        re-scored value plus the re-scoring's; each plus the float16 rounding of the rows when
        :attr:`rounded`."""
        q2, q1 = bounds.norms(queries)
        gemm = bounds.float32_dot if self.dtype != _torch().float16 else bounds.split_float16_dot
        vmax = max(s.vmax for s in self.slices if s.n)
        ceiling = dropped.astype(np.float64) + bounds.rescored(self.d, q2, vmax)
        for piece, floor in zip([s for s in self.slices if s.n], floors):
            ceiling = np.maximum(ceiling, floor + gemm(self.d, q2, piece.vmax))
        if self.rounded:
            ceiling = ceiling + bounds.float16_rounding(q2, q1, vmax)
        return ceiling

    def search_bounded(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`search`'s ``(scores, rows)`` and each question's ceiling (float64 ``[Q]``): an
        upper bound on the exact inner product of the question with the reference vector of any
        row not returned (``-inf`` when every row is)."""
        torch = _torch()
        k = min(int(k), self.ntotal)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if k == 0 or len(queries) == 0:
            return (np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64),
                    np.full(len(queries), math.inf))
        finite = np.isfinite(queries).all(axis=1)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise HarnessError(f"question vector {bad} of this batch holds a non-finite value (inf or NaN): "
                               "the question encoder gave no usable vector")
        m = k + max(MARGIN, k // 8)
        out_s = np.empty((len(queries), k), np.float32)
        out_r = np.empty((len(queries), k), np.int64)
        out_c = np.empty(len(queries), np.float64)
        full = self.dtype == torch.float32
        saved = torch.backends.cuda.matmul.allow_tf32
        try:
            if full:
                torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMMs stay float32
            with ThreadPoolExecutor(len(self.slices)) as pool:
                for start in range(0, len(queries), QUERY_BLOCK):
                    block = torch.from_numpy(queries[start : start + QUERY_BLOCK])
                    chunk = self._rows_per_chunk(len(block))
                    live = [s for s in self.slices if s.n]
                    found = list(pool.map(lambda s: s.candidates(block, min(m, s.n), chunk), live))
                    home = found[0][0].device
                    scores = torch.cat([f[0].to(home) for f in found], 1)
                    rows = torch.cat([f[1].to(home) for f in found], 1)
                    scores, rows = (t.cpu() for t in order_exact(scores, rows, k + 1))
                    dropped = scores[:, k].numpy() if scores.shape[1] > k else np.full(len(block), -np.inf)
                    out_s[start : start + len(block)] = scores[:, :k].numpy()
                    out_r[start : start + len(block)] = rows[:, :k].numpy()
                    out_c[start : start + len(block)] = self._ceiling(block.numpy(), [f[2].numpy() for f in found],
                                                                      dropped)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        return out_s, out_r, out_c

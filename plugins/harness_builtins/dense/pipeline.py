"""The encoding engine shared by every built-in encoder: the encoders' precision
(:func:`encoder_precision`; devices are resolved by :mod:`harness_builtins.common.devices`) and
:func:`encode_batches`, the pipeline that keeps a GPU busy (tokenising and padding in background
threads, pinned batches, vectors copied back in blocks).

:mod:`.encoders` (transformers), :mod:`.art` and :mod:`.realm` run their models through it.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from harness_builtins.common.devices import resolve_precision

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: What ``precision: auto`` is on a GPU for the encoders (fp16 autocast).
GPU_AUTO_PRECISION = "fp16"


# --- devices and precision ----------------------------------------------------------------------


def encoder_precision(precision: str | None, device: str) -> str:
    """An encoder's ``precision`` option on ``device``: ``auto`` is fp16 autocast on GPU, fp32 on
    CPU (:func:`harness_builtins.common.devices.resolve_precision`)."""
    return resolve_precision(precision, device, gpu_auto=GPU_AUTO_PRECISION)


def compute_precision(precision: str, device: str) -> str:
    """The arithmetic a resolved ``precision`` runs with on ``device``, as encoders record it:
    ``tf32`` for fp32 on CUDA (its matmuls use TF32 tensor cores), else the precision itself."""
    return "tf32" if precision == "fp32" and device.startswith("cuda") else precision


def autocast_for(device: str, precision: str):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype)


@contextlib.contextmanager
def matmul_precision(device: str, precision: str) -> Iterator[None]:
    """TF32 matmuls while fp32 runs on CUDA (:func:`compute_precision`); the previous setting is
    restored on exit."""
    if compute_precision(precision, device) != "tf32":
        yield
        return
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


# --- the encoding pipeline ----------------------------------------------------------------------
#
# Three stages run at once: a tokenizer thread turns windows of inputs into tokens, a padder
# thread sorts each window by length and pads it into batches (in pinned memory on CUDA), and
# the calling thread copies each batch to the device and runs the model. Vectors stay on a CUDA
# device until a block of them is ready, then go back to the host in one asynchronous copy.

#: Padded batches the padder thread may hold ready ahead of the model.
PREFETCH_BATCHES = 4
#: On CUDA, vectors go back to the host in blocks of at least this many rows.
COPY_BLOCK_ROWS = 8192


@dataclass
class Packed:
    """Tokenised inputs end to end: ``columns`` maps each model input (``input_ids``, ...) to the
    tokens of every input, concatenated (``None``: all 0, like DPR's token types); ``lengths``
    gives each input's token count."""

    columns: dict[str, np.ndarray | None]
    lengths: np.ndarray

    def __post_init__(self) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    @classmethod
    def from_features(cls, features: Sequence[dict[str, list[int]]]) -> Packed:
        """Features as :meth:`TransformersEncoder.tokenize_passages` gives them (one dict of token
        lists per input; an ``attention_mask`` is ignored: padding makes its own)."""
        lengths = np.fromiter((len(f["input_ids"]) for f in features), dtype=np.int64, count=len(features))
        keys = [k for k in features[0] if k != "attention_mask"] if features else ["input_ids"]
        columns: dict[str, np.ndarray | None] = {}
        for key in keys:
            column = np.fromiter(itertools.chain.from_iterable(f[key] for f in features), dtype=np.int64)
            if len(column) != int(lengths.sum()):
                raise ValueError(f"feature {key!r} does not have one entry per input token")
            columns[key] = column
        return cls(columns, lengths)

    @classmethod
    def from_lists(cls, ids: Sequence[Sequence[int]], *, zeros: Iterable[str] = ()) -> Packed:
        """``input_ids`` from one token list per input; ``zeros`` names inputs that are all 0."""
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        return cls({"input_ids": flat, **dict.fromkeys(zeros)}, lengths)

    def column(self, key: str) -> np.ndarray:
        """The tokens of input ``key`` (zeros for a ``None`` column)."""
        column = self.columns[key]
        return np.zeros(int(self.lengths.sum()), dtype=np.int64) if column is None else column

    def pad(self, rows: np.ndarray, pad_id: int, *, pin: bool = False) -> dict[str, torch.Tensor]:
        """Inputs ``rows`` right-padded to the longest of them (``pad_id`` for ``input_ids``, 0
        elsewhere), with an attention mask (1 on real tokens); int64 tensors, pinned if ``pin``."""
        import torch

        lengths = self.lengths[rows]
        width = int(lengths.max())
        mask = np.arange(width) < lengths[:, None]
        where = (self.offsets[rows][:, None] + np.arange(width))[mask]  # each real token's place in the columns
        batch: dict[str, torch.Tensor] = {}
        for key, column in [*self.columns.items(), ("attention_mask", None)]:
            tensor = torch.empty((len(rows), width), dtype=torch.long, pin_memory=pin)
            array = tensor.numpy()
            if key == "attention_mask":
                array[...] = mask
            else:
                array.fill(pad_id if key == "input_ids" else 0)
                if column is not None:
                    array[mask] = column[where]
            batch[key] = tensor
        return batch


class LazyFeatures:
    """``n`` inputs that :func:`encode_batches` tokenises itself, window by window, in its
    tokenizer thread: ``pack(start, stop)`` gives inputs ``start:stop`` as :class:`Packed`."""

    def __init__(self, n: int, pack: Callable[[int, int], Packed]):
        self.n, self.pack = n, pack

    def __len__(self) -> int:
        return self.n


def sort_windows(n: int, batch_size: int, device: str) -> list[tuple[int, int]]:
    """The slices of the input that are tokenised and length-sorted as one. On CPU the whole
    input: the batches of sorting every input, so the vectors are exactly those of a plain
    sorted loop. On CUDA windows of 1, 2, 4, ... batches: the model starts once one batch is
    tokenised, and each window is tokenised while the model runs on the one before (a tokenizer
    twice as fast as the model keeps it busy), at some cost in padding."""
    if not device.startswith("cuda"):
        return [(0, n)] if n else []
    windows, start, size = [], 0, batch_size
    while start < n:
        windows.append((start, min(start + size, n)))
        start, size = start + size, 2 * size
    return windows


class _Producer:
    """Runs ``items`` in a background thread, at most ``depth`` items ahead of the consumer that
    iterates over it; an exception in the thread is raised in the consumer; leaving the ``with``
    block (done or failing) stops the thread and waits for it."""

    def __init__(self, items: Iterator[Any], depth: int, name: str):
        self._items = items
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> _Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        while self._thread.is_alive():  # empty the queue until the thread has seen the stop
            with contextlib.suppress(queue.Empty):
                while True:
                    self._queue.get_nowait()
            self._thread.join(timeout=0.01)

    def _run(self) -> None:
        # puts block without polling (a waking thread would take the GIL from the model's thread)
        try:
            for item in self._items:
                self._queue.put((True, item))
                if self._stop.is_set():
                    return
            self._queue.put((False, None))
        except BaseException as exc:  # handed to the consumer, which raises it
            self._queue.put((False, exc))

    def __iter__(self) -> Iterator[Any]:
        while True:
            more, value = self._queue.get()
            if more:
                yield value
            elif value is not None:
                raise value
            else:
                return


def _padded_batches(packed_windows: Iterable[tuple[int, Packed]], *, batch_size: int, pad_id: int,
                    sort: bool, pin: bool) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
    """``(input rows, padded batch)`` per batch: each window longest first (a stable sort) unless
    not ``sort``, cut into ``batch_size`` rows."""
    for start, packed in packed_windows:
        n = len(packed.lengths)
        order = np.argsort(-packed.lengths, kind="stable") if sort else np.arange(n)
        for first in range(0, n, batch_size):
            rows = order[first : first + batch_size]
            yield rows + start, packed.pad(rows, pad_id, pin=pin)


class _Collector:
    """Vectors put back in input order, in a float32 array. On CUDA they stay on the device until
    :data:`COPY_BLOCK_ROWS` rows are ready and then go to pinned host memory in one non-blocking
    copy, which is waited for when the next block is sent or at the end: no synchronisation per
    batch."""

    def __init__(self, n: int, cuda: bool):
        self.n, self.cuda = n, cuda
        self.out: np.ndarray | None = None
        self._pending: list[tuple[np.ndarray, torch.Tensor]] = []
        self._pending_rows = 0
        self._in_flight: tuple[np.ndarray, torch.Tensor, Any] | None = None

    def add(self, rows: np.ndarray, vectors: torch.Tensor) -> None:
        vectors = vectors.float()
        if not self.cuda:
            self._store(rows, vectors.numpy())
            return
        self._pending.append((rows, vectors.clone()))  # a copy: a pooled [CLS] view holds the whole batch
        self._pending_rows += len(rows)
        if self._pending_rows >= COPY_BLOCK_ROWS:
            self._send()

    def _send(self) -> None:
        import torch

        rows = np.concatenate([r for r, _ in self._pending])
        block = torch.cat([v for _, v in self._pending])
        host = torch.empty(block.shape, dtype=block.dtype, pin_memory=True)
        host.copy_(block, non_blocking=True)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(block.device))
        self._receive()
        self._in_flight = (rows, host, done)
        self._pending, self._pending_rows = [], 0

    def _receive(self) -> None:
        if self._in_flight is not None:
            rows, host, done = self._in_flight
            done.synchronize()
            self._store(rows, host.numpy())
            self._in_flight = None

    def _store(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        if self.out is None:
            self.out = np.empty((self.n, vectors.shape[1]), dtype=np.float32)
        self.out[rows] = vectors

    def result(self) -> np.ndarray:
        if self._pending:
            self._send()
        self._receive()
        if self.out is None:
            raise RuntimeError("encode_batches collected no vectors")
        return self.out


def encode_batches(
    forward: Callable[[dict[str, torch.Tensor]], Any],
    inputs: Sequence[dict[str, list[int]]] | LazyFeatures,
    *,
    dim: int,
    batch_size: int,
    device: str,
    precision: str,
    pad_id: int = 0,
    sort: bool = True,
    pool: Callable[[Any, dict[str, torch.Tensor]], torch.Tensor] | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """float32 vectors of ``inputs`` (feature dicts, or :class:`LazyFeatures` tokenised here), in
    input order: ``forward(batch)`` runs under inference mode and ``precision``'s autocast (TF32
    matmuls for fp32 on CUDA) on each padded batch on ``device``; ``pool(outputs, batch)``, when
    given, turns its outputs into one vector per row, outside autocast. Batches are length-sorted
    within :func:`sort_windows` (unless not ``sort``); ``on_batch(rows, width)`` sees each."""
    import torch

    n = len(inputs)
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    cuda = device.startswith("cuda")
    if isinstance(inputs, LazyFeatures):
        pack = inputs.pack
    else:
        def pack(start: int, stop: int) -> Packed:
            return Packed.from_features(inputs[start:stop])
    windows = ((start, pack(start, stop)) for start, stop in sort_windows(n, batch_size, device))
    collector = _Collector(n, cuda)
    with _Producer(windows, 1, "harness-encode-tokenize") as packed, _Producer(
        _padded_batches(packed, batch_size=batch_size, pad_id=pad_id, sort=sort, pin=cuda), PREFETCH_BATCHES,
        "harness-encode-pad",
    ) as batches, torch.inference_mode(), matmul_precision(device, precision):
        for rows, batch in batches:
            if on_batch is not None:
                on_batch(len(rows), batch["input_ids"].shape[1])
            batch = {k: v.to(device, non_blocking=cuda) for k, v in batch.items()}
            with autocast_for(device, precision):
                outputs = forward(batch)
            collector.add(rows, pool(outputs, batch) if pool is not None else outputs)
    return collector.result()

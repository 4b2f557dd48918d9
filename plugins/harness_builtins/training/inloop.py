"""Retrieval inside the training loop: the in-loop index and the loss module that searches it.

**The index** (:class:`InLoopIndex`) holds the corpus's passage embeddings made by the model's
passage side, with the dense retrievers' encoding engine and embedding cache
(:func:`~harness_builtins.dense.distributed.encode_corpus_distributed`: float16 shards, resumable,
verified when opened). Its cache key is a digest of the passage side's weights
(:func:`~harness_builtins.dense.passage_identity.passage_identity`: the same key as the
evaluation encoder's), the passage format and length: a frozen passage encoder finds
the embeddings made by an earlier run (one run per question distribution shares one index).

**At most two copies on disk.** A re-embedding after training steps makes a new index (another
key); the one it replaces is deleted *before* the new one is written, unless the newest training
checkpoint searches it (:meth:`InLoopIndex.pin`: a resumed run must search the very index its
checkpoint did, or it would not train what the uninterrupted run trained). So a run holds at most
two copies of the corpus's embeddings that it made (30 GiB each at DPR's 21M passages): the one it
searches and the one its newest checkpoint names, which is deleted when a newer checkpoint names
another (a checkpoint saved at the step of a re-embedding names the new one, so with
``refresh_every`` a multiple of ``save_steps`` the second copy exists only while re-embedding);
besides a starting index it found in the cache:

- a frozen passage side (QSFT) always finds its own key again: its index is never replaced nor
  deleted, and stays in the cache for the next run over the same passage encoder;
- a trained passage side (ART): the starting index stays when this run found it (an earlier run
  made it, e.g. a QSFT run from the same model: same key), and is deleted at the first
  re-embedding when this run made it. Keeping it would double the run's disk for a cache only an
  identical run (same model, format and length) could reuse; a run that ends before its first
  re-embedding keeps it (then its only copy). Every mid-training index is deleted when replaced
  and after the last step (:meth:`InLoopIndex.discard`).

A resumed run searches the index its checkpoint names (:meth:`InLoopIndex.restore`); when that
one is gone (the run resumes from an older checkpoint than its newest, or the files were deleted
by hand), it embeds the corpus anew with the checkpoint's weights.

**Sharded across processes.** Under ``torchrun`` every rank encodes the cache shards it owns
(shard ``s`` belongs to rank ``s mod world``) and holds only those in memory (on its own device:
its GPU, ``cuda:LOCAL_RANK`` or the model's, when it has one; :func:`local_device`). A search
all-gathers the question vectors of every rank, each rank scores them against its slice, the
per-rank top ``k`` are all-gathered and merged: every rank gets the same top ``k`` one process
holding the whole index would (by float32 scores, ties broken by the lower row; on a GPU each
rank's slice is the dense engine's exact flat index,
:class:`~harness_builtins.dense.gpu_flat.TorchFlatIP`). Vectors of retrieved rows are read from the
memory-mapped cache, which every rank can open.

**The loss module** (:func:`in_loop_loss`) encodes the batch's questions, searches the index with
the detached embeddings, and hands the variant's in-loop loss the questions with gradient and a
:class:`~harness.api.RetrievedBatch`. Its ``encode_passages`` (ART re-encodes the ``B x K``
retrieved passages with gradient: 64 x 32 passages of 512 tokens are ~164 GB of BERT-base
activations) runs in chunks of ``passage_chunk_size`` passages, each under activation
checkpointing (:func:`torch.utils.checkpoint.checkpoint`, ``use_reentrant=False``, RNG state
preserved): a chunk keeps only its inputs until the backward pass, which recomputes one chunk's
activations at a time. The chunks call the unwrapped model, not its ``DistributedDataParallel``
wrapper: the recomputation runs inside the backward pass, where the wrapper's forward would
broadcast buffers (a collective) and touch the reducer while it is reducing. The graph stays one
graph with one backward pass, so DDP (``find_unused_parameters=False``) reduces every parameter's
gradient once, however many chunks used it. Gradient caching (sentence-transformers' ``Cached*``
losses) was not chosen: it runs one backward pass per chunk, which DDP only tolerates under
``no_sync`` with a last synchronising pass (and a replay when the last chunk is frozen), and here
the questions' side is not cached but back-propagated by the trainer's own backward pass. With
``B x K <= passage_chunk_size`` (or chunking off: ``None`` / 0) the passages are encoded in one
forward of the (wrapped) model, exactly as without chunking.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.api import Corpus, Passage, RetrievedBatch, TrainingExample
from harness.data.training import AnswerCheck
from harness.errors import HarnessError

from harness_builtins.dense.embeddings import EmbeddingCache
from harness_builtins.training.data import passage_text
from harness_builtins.dense.passage_identity import passage_identity
from harness_builtins.dense.pipeline import compute_precision
from harness_builtins.training.model import DOCUMENT, LossParts, side_modules

#: Rows scored at once per search block (bounds the ``[B, block]`` score matrix).
SEARCH_BLOCK = 65_536

#: Passages re-encoded with gradient per checkpointed chunk (:func:`in_loop_loss`).
PASSAGE_CHUNK_SIZE = 64


def local_device() -> str:
    """This process's device: ``cuda:LOCAL_RANK`` under a launcher that sets ``LOCAL_RANK``
    (torchrun: each rank its own GPU), else ``cuda`` (the current GPU) when there is one, else
    ``cpu``."""
    if not torch.cuda.is_available():
        return "cpu"
    local = os.environ.get("LOCAL_RANK", "").strip()
    return f"cuda:{int(local)}" if local.isdigit() else "cuda"


def _model_device(model) -> str | None:
    """The device of a torch model's first parameter when it is a GPU (None otherwise)."""
    parameters = getattr(model, "parameters", None)
    if not callable(parameters):
        return None
    try:
        device = next(iter(parameters())).device
    except (StopIteration, TypeError, AttributeError):
        return None
    return str(device) if device.type == "cuda" else None


def _unwrapped(model):
    """The module inside ``DistributedDataParallel`` / ``torch.compile`` wrappers."""
    from torch.nn.parallel import DataParallel, DistributedDataParallel

    while True:
        if isinstance(model, (DistributedDataParallel, DataParallel)):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), torch.nn.Module):
            model = model._orig_mod
        else:
            return model


def chunk_size_option(value: Any) -> int | None:
    """``passage_chunk_size`` as given: a positive number of passages, or None / 0 (no chunks)."""
    if value is None or value == 0 and not isinstance(value, bool):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HarnessError(f"passage_chunk_size must be a positive integer, or 0 / None for no chunks; got {value!r}")
    return value


def _passage_side(model) -> tuple[list, bool]:
    """The modules that make passage embeddings (the ``document`` route of a Router model, else
    the whole shared encoder) and whether the model is shared."""
    modules = side_modules(model, "passage")
    return (list(model.children()), True) if modules is None else (modules, False)


class ModelPassageEncoder:
    """The training model's passage side as a dense-retriever :class:`~harness.api.Encoder`
    (passages formatted as in training), so the corpus is embedded by the same engine and cache
    as evaluation. Encodes in eval mode without gradient and restores the model's mode."""

    def __init__(self, model, *, format: str, sep: str, batch_size: int = 64):
        self.model, self.format, self.sep, self.batch_size = model, format, sep, batch_size
        # the evaluation encoder's identity for the same passage side (one cache serves both), as
        # the weights are now
        self._identity = passage_identity(model, format=format, precision=compute_precision("fp32", _model_device(model) or "cpu"))

    def identity(self) -> str:
        return self._identity

    def _encode(self, texts: list[str], method: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_embedding_dimension()), dtype=np.float32)
        was_training = self.model.training
        try:
            encode = getattr(self.model, method, self.model.encode)
            with torch.no_grad():
                out = encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        finally:
            self.model.train(was_training)
        return np.asarray(out, dtype=np.float32)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self._encode(list(queries), "encode_query")

    def encode_passages(self, passages: Sequence[tuple[str, str]]) -> np.ndarray:
        """``(title, text)`` pairs, formatted as in training."""
        return self._encode([passage_text(title, text, self.format, self.sep) for title, text in passages], "encode_document")


def _group():
    """``(rank, world)`` of the current process group, ``(0, 1)`` without one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _all_gather(tensor: torch.Tensor) -> list[torch.Tensor]:
    """Every rank's ``tensor`` (first dimensions may differ between ranks), in rank order."""
    import torch.distributed as dist

    rank, world = _group()
    if world == 1:
        return [tensor]
    sizes = [torch.zeros(1, dtype=torch.long, device=tensor.device) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([tensor.shape[0]], dtype=torch.long, device=tensor.device))
    width = int(max(s.item() for s in sizes))
    padded = torch.zeros((width, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    padded[: tensor.shape[0]] = tensor
    out = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(out, padded)
    return [o[: int(s.item())] for o, s in zip(out, sizes)]


def merge_top(scores: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the ``k`` best of the candidates ``(scores, rows)`` (``[B, w]``; padding has row
    -1 and score -inf): by score, ties by the lower row; fewer than ``k`` real ones are padded."""
    b = scores.shape[0]
    out_s = np.full((b, k), -np.inf, dtype=np.float32)
    out_r = np.full((b, k), -1, dtype=np.int64)
    for i in range(b):
        real = rows[i] >= 0
        s, r = scores[i][real], rows[i][real]
        if len(s) > k:
            threshold = np.partition(s, len(s) - k)[len(s) - k]
            keep = s >= threshold
            s, r = s[keep], r[keep]
        order = np.lexsort((r, -s))[:k]
        out_s[i, : len(order)] = s[order]
        out_r[i, : len(order)] = r[order]
    return out_s, out_r


class InLoopIndex:
    """The corpus's passage embeddings for search during training (see the module notes).

    ``build(model, step)`` embeds the corpus with the model's passage side (or reuses the cache)
    and loads this rank's slice; ``search`` returns every rank the merged top ``k``.

    ``device`` holds the slice (and searches it); by default this process's own: the model's GPU
    when :meth:`build` gets a model on one, else :func:`local_device` (``cuda:LOCAL_RANK`` under
    torchrun)."""

    def __init__(self, corpus: Corpus, *, root: str | Path, format: str, sep: str, shard_size: int,
                 batch_size: int = 64, progress: bool = False, device: str | None = None):
        self.corpus, self.root, self.format, self.sep = corpus, Path(root), format, sep
        self.shard_size, self.batch_size, self.progress = shard_size, batch_size, progress
        self._device_given = bool(device)
        self.device = device or local_device()
        self.cache: EmbeddingCache | None = None
        self._first: Path | None = None  # the starting index (the first build's, or the checkpoint's)
        self._first_reused = True  # found in the cache (an earlier run's): it stays
        self._orphan: Path | None = None  # a checkpoint's index that could not be restored
        self._pinned: Path | None = None  # the index the newest training checkpoint searches
        self._slice: list[tuple[int, Any]] = []  # (first row, vectors) per held shard (CPU)
        self._flat: Any = None  # on a GPU: this rank's rows as one exact flat index
        self._global = np.zeros(0, np.int64)  # its row -> the cache's row
        #: One record per (re-)embedding: step, cache key, seconds, passages per second, reused.
        self.builds: list[dict[str, Any]] = []

    @property
    def dim(self) -> int:
        return 0 if self.cache is None else self.cache.dim

    def __len__(self) -> int:
        return 0 if self.cache is None else len(self.cache)

    def build(self, model, step: int = 0) -> None:
        """Embed the corpus with ``model``'s passage side (a sentence-transformers model being
        trained, or any :class:`~harness.api.Encoder`), reusing its cache, and hold this rank's
        shards. Every process of the group calls it together."""
        from harness.api import Encoder

        from harness_builtins.dense.distributed import encode_corpus_distributed
        from harness_builtins.dense.embeddings import cache_path

        started = time.perf_counter()
        if not self._device_given and (device := _model_device(model)):
            self.device = device
        encoder = model if isinstance(model, Encoder) else ModelPassageEncoder(model, format=self.format, sep=self.sep, batch_size=self.batch_size)
        self._replace(cache_path(self.root, self.corpus, encoder.identity()))
        from harness.util.progress import task

        with task(f"in-loop index at step {step}: embedding {len(self.corpus):,} passages", enabled=self.progress and _group()[0] == 0):
            result = encode_corpus_distributed(encoder, self.corpus, self.root, shard_size=self.shard_size, progress=self.progress)
        self._hold(EmbeddingCache.open(result.path))
        seconds = time.perf_counter() - started
        encoded = sum(len(v) for v in result.encoded.values()) * self.cache.shard_size
        self.builds.append({
            "step": step, "cache": result.path.name, "seconds": round(seconds, 3), "passages": len(self.cache),
            "reused": not any(result.encoded.values()),
            "passages_per_second": round(min(encoded, len(self.cache)) / seconds, 1) if seconds > 0 and encoded else None,
        })
        if self._first is None:
            self._first, self._first_reused = result.path, self.builds[-1]["reused"]

    def _deletable(self, path: Path) -> bool:
        """Whether this run may delete ``path``: a mid-training index, or a starting one it made,
        that no training checkpoint searches."""
        return path != self._pinned and (path != self._first or not self._first_reused)

    def pin(self) -> None:
        """A training checkpoint was saved searching the current index: keep it until a newer
        checkpoint searches another (then the one pinned before is deleted, when this run may)."""
        current = self.cache.path if self.cache is not None else None
        before, self._pinned = self._pinned, current
        rank, _ = _group()
        if before is not None and before != current and rank == 0 and self._deletable(before):
            shutil.rmtree(before, ignore_errors=True)

    def _replace(self, target: Path) -> None:
        """Before embedding into ``target``: stop holding the index searched so far and, when
        ``target`` is another and this run may delete it (see the module notes), delete it, so
        that the new one is written with at most one copy of this run's on disk. Every process
        drops its memory maps; rank 0 deletes. No collective: the encoding's own (rank 0 prepares
        the new cache after this returns) orders the deletion before any rank writes."""
        old = self.cache.path if self.cache is not None else self._orphan
        self._orphan = None
        if old is None or old == target:
            return
        self._drop()
        rank, _ = _group()
        if rank == 0 and self._deletable(old):
            shutil.rmtree(old, ignore_errors=True)

    def _drop(self) -> None:
        """Forget the index held (its memory maps closed, its slice freed)."""
        self.cache, self._slice, self._flat, self._global = None, [], None, np.zeros(0, np.int64)

    def _hold(self, cache: EmbeddingCache) -> None:
        """Search ``cache``: this rank's shards in memory; on a GPU as the dense engine's exact
        flat index (:class:`~harness_builtins.dense.gpu_flat.TorchFlatIP`, float32 scores)."""
        from harness_builtins.dense.distributed import shard_owner
        from harness_builtins.dense.gpu_flat import TorchFlatIP, shortfall

        rank, world = _group()
        owned = [s for s in range(len(cache.shards)) if shard_owner(s, world) == rank]
        self.cache, self._slice, self._flat = cache, [], None
        devices = self._flat_devices()
        rows = sum(len(cache.shards[s]) for s in owned)
        if devices and (short := shortfall(cache.dim, rows, devices)):
            raise HarnessError(f"the in-loop index's {rows} rows do not fit this process's GPU ({short}); "
                               f"shard them over more processes (torchrun --nproc_per_node N)")
        if devices:
            self._flat = TorchFlatIP.from_shards([cache.shards[s] for s in owned], cache.dim,
                                                 sum(len(cache.shards[s]) for s in owned), devices)
            self._global = np.concatenate([np.arange(s * cache.shard_size, s * cache.shard_size + len(cache.shards[s]))
                                           for s in owned] or [np.zeros(0, np.int64)])
            return
        for s in owned:
            vectors = torch.from_numpy(np.ascontiguousarray(cache.shards[s], dtype=np.float32))
            self._slice.append((s * cache.shard_size, vectors.to(self.device)))

    def _flat_devices(self) -> list[str]:
        """Where this rank's slice goes as an exact flat index: its GPU (none on CPU)."""
        return [self.device] if self.device.startswith("cuda") else []

    def state(self) -> dict[str, Any]:
        """What a resumed run needs to search the same index: the current and the starting
        embeddings' folders, whether the starting one was found in the cache (then it stays) and
        the builds so far (saved with each training checkpoint)."""
        return {"current": str(self.cache.path) if self.cache else None, "first": str(self._first) if self._first else None,
                "first_reused": self._first_reused, "builds": self.builds}

    def restore(self, state: dict[str, Any]) -> bool:
        """Search the index a checkpoint's :meth:`state` names again, when its embeddings are still
        there and complete. When not (False; the caller embeds the corpus anew with :meth:`build`),
        nothing is held, but the checkpoint's starting index is still taken as this run's, and
        what it names is deleted by that re-embedding when this run made it (module notes)."""
        from harness_builtins.dense.embeddings import damaged_shards

        try:
            builds = list(state.get("builds") or [])
            first = Path(state["first"]) if state.get("first") else (Path(state["current"]) if state.get("current") else None)
            reused = state.get("first_reused", builds[0].get("reused", True) if builds and isinstance(builds[0], dict) else True)
        except (AttributeError, TypeError, ValueError):
            return False
        self._first, self._first_reused = first, bool(reused)
        try:
            cache = EmbeddingCache.open(state["current"])
            damaged = damaged_shards(cache.path, cache.meta)
        except (OSError, ValueError, KeyError, TypeError, HarnessError):
            cache, damaged = None, True
        if damaged:
            self._orphan = Path(state["current"]) if state.get("current") else None
            return False
        self._hold(cache)
        self.builds = builds
        self._pinned = cache.path
        return True

    def discard(self) -> None:
        """Delete the current embeddings when they were made during training (after the last
        step nothing uses them); the starting ones stay in the cache."""
        rank, _ = _group()
        pinned, self._pinned = self._pinned, None  # training is over: no checkpoint resumes it
        if pinned is not None and rank == 0 and (self.cache is None or pinned != self.cache.path) and self._deletable(pinned):
            shutil.rmtree(pinned, ignore_errors=True)
        if self.cache is not None and self.cache.path != self._first:
            path = self.cache.path
            self._drop()
            if rank == 0:
                shutil.rmtree(path, ignore_errors=True)

    def _local_top(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The top ``k`` of this rank's slice for ``queries`` (``[Q, d]``)."""
        if self._flat is not None:
            scores, local = self._flat.search(queries.float().cpu().numpy(), k)
            rows = np.where(local >= 0, self._global[local.clip(min=0)], -1)
            return torch.from_numpy(scores), torch.from_numpy(rows)
        q = queries.to(self.device)
        best_s = torch.full((q.shape[0], 0), -float("inf"), device=self.device)
        best_r = torch.full((q.shape[0], 0), -1, dtype=torch.long, device=self.device)
        for first, vectors in self._slice:
            for start in range(0, vectors.shape[0], SEARCH_BLOCK):
                block = vectors[start : start + SEARCH_BLOCK]
                scores = (q.to(block.dtype) @ block.T).float()
                rows = torch.arange(first + start, first + start + block.shape[0], device=self.device).expand_as(scores)
                best_s, best_r = torch.cat([best_s, scores], 1), torch.cat([best_r, rows], 1)
                if best_s.shape[1] > 4 * k:
                    best_s, best_r = self._cut(best_s, best_r, k)
        return self._cut(best_s, best_r, k)

    @staticmethod
    def _cut(scores: torch.Tensor, rows: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        if scores.is_cuda:
            top = torch.topk(scores, min(k, scores.shape[1]), dim=1)
            return top.values, rows.gather(1, top.indices)
        s, r = merge_top(scores.numpy(), rows.numpy(), min(k, scores.shape[1]))
        return torch.from_numpy(s), torch.from_numpy(r)

    def search(self, queries: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)``, ``[B, k]`` each, for this rank's ``queries`` (``[B, d]``, detached):
        the top ``k`` of the whole index (row -1 and score -inf pad a corpus smaller than k)."""
        if self.cache is None:
            raise RuntimeError("InLoopIndex.search called before build()")
        queries = queries.detach().float()
        if queries.shape[1] != self.dim:
            raise HarnessError(f"question vectors are {queries.shape[1]}-d but the in-loop index is {self.dim}-d")
        rank, world = _group()
        transport = queries.device if queries.is_cuda else torch.device("cpu")  # this rank's own GPU
        every = _all_gather(queries.to(transport))
        counts = [len(e) for e in every]
        scores, rows = self._local_top(torch.cat(every), k)
        width = k
        pad_s = torch.full((scores.shape[0], width), -float("inf"))
        pad_r = torch.full((rows.shape[0], width), -1, dtype=torch.long)
        pad_s[:, : scores.shape[1]], pad_r[:, : rows.shape[1]] = scores.cpu(), rows.cpu()
        all_s = torch.cat(_all_gather(pad_s.to(transport)), 1).cpu().numpy() if world > 1 else pad_s.numpy()
        all_r = torch.cat(_all_gather(pad_r.to(transport)), 1).cpu().numpy() if world > 1 else pad_r.numpy()
        merged_s, merged_r = merge_top(all_s, all_r, k)
        start = sum(counts[:rank])
        return merged_s[start : start + counts[rank]], merged_r[start : start + counts[rank]]

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """float32 vectors of ``rows`` (any shape; padding rows give zeros), read from the cache."""
        flat = np.asarray(rows, dtype=np.int64).ravel()
        out = np.zeros((len(flat), self.dim), dtype=np.float32)
        size = self.cache.shard_size
        for i, row in enumerate(flat.tolist()):
            if row >= 0:
                out[i] = self.cache.shards[row // size][row % size]
        return out.reshape(*np.shape(rows), self.dim)

    def passages(self, rows: np.ndarray) -> list[list[Passage]]:
        ids = self.cache.passage_ids(np.clip(rows, 0, None))
        width = rows.shape[1]
        return [[self.corpus.get(ids[i * width + j]) for j in range(width) if rows[i, j] >= 0] for i in range(rows.shape[0])]


def in_loop_loss(model, loss, index: InLoopIndex, examples: Sequence[TrainingExample], *, k: int, format: str, sep: str,
                 match: str = "string", passage_chunk_size: int | None = PASSAGE_CHUNK_SIZE):
    """The ``torch.nn.Module`` the trainer calls for an in-loop recipe: its batches are the
    question column and ``label`` (the example's index in ``examples``); ``has_answer`` is DPR's
    rule in ``match`` mode (the corpus suite's). ``encode_passages`` re-encodes passages with
    gradient in activation-checkpointed chunks of ``passage_chunk_size`` (None or 0: one forward;
    see the module notes)."""

    _, shared = _passage_side(model)
    chunk_size = chunk_size_option(passage_chunk_size)

    class _InLoopLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.loss = loss
            self.parts = LossParts()
            self.passage_chunk_size = chunk_size
            self._answers: dict[tuple[int, int], bool] = {}

        def _has_answer(self, example: int, rows: np.ndarray, passages: list[Passage]) -> list[bool]:
            out = []
            check = None
            for row, passage in zip(rows.tolist(), passages):
                key = (example, row)
                if key not in self._answers:
                    check = check or AnswerCheck(examples[example].answers, match=match)
                    if len(self._answers) > 2_000_000:
                        self._answers.clear()
                    self._answers[key] = check.in_text(passage)
                out.append(self._answers[key])
            return out

        def _features(self, texts: list[str]) -> dict[str, Any]:
            features = self.model.preprocess(texts, **({} if shared else {"task": DOCUMENT}))
            device = next(self.model.parameters()).device
            return {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in features.items()}

        def encode_passages(self, passages: Sequence[Passage]) -> torch.Tensor:
            """``[n, d]`` embeddings by the current passage side, with gradient; more than
            ``passage_chunk_size`` passages are encoded chunk by chunk, each chunk checkpointed
            (only its inputs are kept for the backward pass, which recomputes it)."""
            texts = [passage_text(p.title, p.text, format, sep) for p in passages]
            if chunk_size is None or len(texts) <= chunk_size:
                return self.model(self._features(texts))["sentence_embedding"]
            from torch.utils.checkpoint import checkpoint

            # the bare module: the backward pass recomputes a chunk, and a DDP wrapper's forward
            # there would broadcast buffers mid-reduction (the one backward pass reduces the
            # chunks' gradients all the same)
            inner = _unwrapped(self.model)
            checkpointed = torch.is_grad_enabled()
            out = []
            for start in range(0, len(texts), chunk_size):
                features = self._features(texts[start : start + chunk_size])
                keys = [key for key, value in features.items() if isinstance(value, torch.Tensor)]

                def embed(*tensors, features=features, keys=keys):
                    # a fresh dict each time: the modules add their outputs (token embeddings) to it
                    return inner({**features, **dict(zip(keys, tensors))})["sentence_embedding"]

                tensors = [features[key] for key in keys]
                out.append(checkpoint(embed, *tensors, use_reentrant=False, preserve_rng_state=True) if checkpointed
                           else embed(*tensors))
            return torch.cat(out)

        def forward(self, sentence_features, labels=None):
            if labels is None:
                raise HarnessError("an in-loop loss needs each batch's example indices (the 'label' column)")
            questions = self.model(sentence_features[0])["sentence_embedding"]
            which = [int(i) for i in labels.tolist()]
            scores, rows = index.search(questions, k)
            if (rows < 0).any():
                raise HarnessError(f"the in-loop index holds {len(index)} passages, fewer than k={k}")
            passages = index.passages(rows)
            has_answer = [self._has_answer(e, rows[i], passages[i]) for i, e in enumerate(which)]
            device = questions.device
            batch = RetrievedBatch(
                questions=[examples[e].question for e in which],
                answers=[examples[e].answers for e in which],
                rows=torch.from_numpy(rows).to(device),
                scores=torch.from_numpy(scores).to(device),
                vectors=torch.from_numpy(index.vectors(rows)).to(device),
                passages=passages,
                has_answer=torch.tensor(has_answer, dtype=torch.bool, device=device),
                encode_passages=self.encode_passages,
            )
            out = self.loss(questions, batch)
            self.parts.add(self.loss, out)
            return out["loss"]

        def take_parts(self) -> dict[str, float]:
            """The mean of each loss part since the last call."""
            return self.parts.take()

    return _InLoopLoss()

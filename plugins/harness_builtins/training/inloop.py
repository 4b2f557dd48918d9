"""Retrieval inside the training loop: the in-loop index and the loss module that searches it.

**The index** (:class:`InLoopIndex`) holds the corpus's passage embeddings made by the model's
passage side, with the dense retrievers' encoding engine and embedding cache
(:func:`~harness_builtins.dense.distributed.encode_corpus_distributed`: float16 shards, resumable,
verified when opened). Its cache key is a digest of the passage side's weights
(:func:`passage_weights_digest`), the passage format and length: a frozen passage encoder finds
the embeddings made by an earlier run (one run per question distribution shares one index), and a
re-embedding after training steps makes a new one (the one it replaces is deleted, unless it
is the starting one).

**Sharded across processes.** Under ``torchrun`` every rank encodes the cache shards it owns
(shard ``s`` belongs to rank ``s mod world``) and holds only those in memory (on its GPU when it
has one). A search all-gathers the question vectors of every rank, each rank scores them against
its slice, the per-rank top ``k`` are all-gathered and merged: every rank gets the same top ``k``
one process holding the whole index would (by float32 scores, ties broken by the lower row; on a
GPU each rank's slice is the dense engine's exact flat index,
:class:`~harness_builtins.dense.gpu_flat.TorchFlatIP`). Vectors of retrieved rows are read from the
memory-mapped cache, which every rank can open.

**The loss module** (:func:`in_loop_loss`) encodes the batch's questions, searches the index with
the detached embeddings, and hands the variant's in-loop loss the questions with gradient and a
:class:`~harness.api.RetrievedBatch`.
"""

from __future__ import annotations

import hashlib
import json
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
from harness_builtins.training.engine import passage_text
from harness_builtins.training.model import DOCUMENT, LossParts, side_modules

#: Rows scored at once per search block (bounds the ``[B, block]`` score matrix).
SEARCH_BLOCK = 65_536


def _passage_side(model) -> tuple[list, bool]:
    """The modules that make passage embeddings (the ``document`` route of a Router model, else
    the whole shared encoder) and whether the model is shared."""
    modules = side_modules(model, "passage")
    return (list(model.children()), True) if modules is None else (modules, False)


def passage_parameters(model) -> list[tuple[str, torch.Tensor]]:
    """The named parameters and buffers that make passage embeddings, sorted by name."""
    modules, _ = _passage_side(model)
    named = [(f"{i}.{name}", t) for i, m in enumerate(modules) for name, t in m.state_dict().items()]
    return sorted(named, key=lambda item: item[0])


def passage_modules(model) -> list[list]:
    """The passage side's modules as ``[class name, configuration, token limit]`` (pooling mode,
    lower-casing, ``max_seq_length``): what makes embeddings besides the weights."""
    modules, _ = _passage_side(model)
    return [[type(m).__name__, m.get_config_dict() if hasattr(m, "get_config_dict") else {}, getattr(m, "max_seq_length", None)]
            for m in modules]


def passage_weights_digest(model) -> str:
    """sha256 over the passage side's tensors (names, dtypes, shapes and bytes)."""
    digest = hashlib.sha256()
    for name, tensor in passage_parameters(model):
        value = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape)}\n".encode())
        digest.update(value.view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    return digest.hexdigest()


class ModelPassageEncoder:
    """The training model's passage side as a dense-retriever :class:`~harness.api.Encoder`
    (passages formatted as in training), so the corpus is embedded by the same engine and cache
    as evaluation. Encodes in eval mode without gradient and restores the model's mode."""

    def __init__(self, model, *, format: str, sep: str, batch_size: int = 64):
        self.model, self.format, self.sep, self.batch_size = model, format, sep, batch_size
        self.digest = passage_weights_digest(model)

    def identity(self) -> str:
        return json.dumps({"backend": "harness-train", "passage_weights": self.digest, "format": self.format,
                           "modules": passage_modules(self.model)}, sort_keys=True, default=str)

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
    and loads this rank's slice; ``search`` returns every rank the merged top ``k``."""

    def __init__(self, corpus: Corpus, *, root: str | Path, format: str, sep: str, shard_size: int,
                 batch_size: int = 64, progress: bool = False, device: str | None = None):
        self.corpus, self.root, self.format, self.sep = corpus, Path(root), format, sep
        self.shard_size, self.batch_size, self.progress = shard_size, batch_size, progress
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.cache: EmbeddingCache | None = None
        self._first: Path | None = None
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

        started = time.perf_counter()
        encoder = model if isinstance(model, Encoder) else ModelPassageEncoder(model, format=self.format, sep=self.sep, batch_size=self.batch_size)
        result = encode_corpus_distributed(encoder, self.corpus, self.root, shard_size=self.shard_size, progress=self.progress)
        previous = self.cache.path if self.cache is not None else None
        self._hold(EmbeddingCache.open(result.path))
        rank, _ = _group()
        seconds = time.perf_counter() - started
        encoded = sum(len(v) for v in result.encoded.values()) * self.cache.shard_size
        self.builds.append({
            "step": step, "cache": result.path.name, "seconds": round(seconds, 3), "passages": len(self.cache),
            "reused": not any(result.encoded.values()),
            "passages_per_second": round(min(encoded, len(self.cache)) / seconds, 1) if seconds > 0 and encoded else None,
        })
        if self._first is None:
            self._first = result.path
        elif previous is not None and previous not in (self._first, result.path) and rank == 0:
            shutil.rmtree(previous, ignore_errors=True)  # a mid-training index nothing else uses

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
        embeddings' folders and the builds so far (saved with each training checkpoint)."""
        return {"current": str(self.cache.path) if self.cache else None, "first": str(self._first) if self._first else None,
                "builds": self.builds}

    def restore(self, state: dict[str, Any]) -> bool:
        """Search the index a checkpoint's :meth:`state` names again, when its embeddings are still
        there and complete (False, nothing changed, when not)."""
        from harness_builtins.dense.embeddings import damaged_shards

        try:
            cache = EmbeddingCache.open(state["current"])
            if damaged_shards(cache.path, cache.meta):
                return False
        except (OSError, ValueError, KeyError, TypeError, HarnessError):
            return False
        self._hold(cache)
        self._first = Path(state["first"]) if state.get("first") else cache.path
        self.builds = list(state.get("builds") or [])
        return True

    def discard(self) -> None:
        """Delete the current embeddings when they were made during training (after the last
        step nothing uses them); the starting ones stay in the cache."""
        rank, _ = _group()
        if self.cache is not None and self.cache.path != self._first and rank == 0:
            shutil.rmtree(self.cache.path, ignore_errors=True)

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
        transport = "cuda" if queries.is_cuda else "cpu"
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
                 match: str = "string"):
    """The ``torch.nn.Module`` the trainer calls for an in-loop recipe: its batches are the
    question column and ``label`` (the example's index in ``examples``); ``has_answer`` is DPR's
    rule in ``match`` mode (the corpus suite's)."""

    _, shared = _passage_side(model)

    class _InLoopLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.loss = loss
            self.parts = LossParts()
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

        def encode_passages(self, passages: Sequence[Passage]) -> torch.Tensor:
            texts = [passage_text(p.title, p.text, format, sep) for p in passages]
            features = self.model.preprocess(texts, **({} if shared else {"task": DOCUMENT}))
            device = next(self.model.parameters()).device
            features = {key: value.to(device) if isinstance(value, torch.Tensor) else value for key, value in features.items()}
            return self.model(features)["sentence_embedding"]

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

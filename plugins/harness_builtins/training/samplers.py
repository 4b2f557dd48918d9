"""Batch samplers: how an epoch's examples are cut into batches; the classes the ``harness list
samplers`` specs build (each spec is a module of :mod:`harness_builtins.training.parts.samplers`).

A sampler is built with its options and called as ``sampler(examples, batch_size, rng)`` with
``rng`` a ``random.Random``; it returns the epoch's batches as lists of indices into ``examples``.
Every random choice comes from ``rng``, so a seed gives the same batches.

Duplicate positives. Two examples of one batch that share a positive passage make that passage
a false in-batch negative for one of them (DPR's sampler ignores this). With
``unique_positives=True`` (the default) a sampler first builds its batches, then, for every
example whose positive passage id (any of its ``positives``; a passage without an id is keyed by
title and text) already occurs in its batch, tries up to 64 random swaps with an example of
another batch that removes the clash without creating one there. Batch sizes never change; when
no swap is found (e.g. one passage is the positive of more examples than there are batches) the
duplicate stays. Data without duplicates gets exactly the batches of ``unique_positives=False``.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from harness.api import TrainingExample, integer

_SWAP_TRIES = 64
_KMEANS_ITERATIONS = 50


#: A sampler's ``batch_size`` argument, checked like an option (an ``OptionError`` is a ``ValueError``).
_BATCH_SIZE = integer(1, min=1)


def _check_batch_size(batch_size: Any) -> int:
    return _BATCH_SIZE.check(batch_size, "batch_size")


def _positive_keys(example: TrainingExample) -> frozenset[str]:
    return frozenset(p.id if p.id else f"\x00{p.title}\x00{p.text}" for p in example.positives)


def _fits(keys: Sequence[frozenset[str]], item: int, counts: Counter, leaving: int) -> bool:
    """Whether ``item`` can replace ``leaving`` in the batch whose key counts are ``counts``."""
    return all(counts[k] - (k in keys[leaving]) == 0 for k in keys[item])


def separate_duplicate_positives(
    batches: list[list[int]],
    examples: Sequence[TrainingExample],
    rng: random.Random,
    tags: Sequence[Hashable | None] | None = None,
) -> list[list[int]]:
    """Swap examples between batches (in place) so no batch holds two examples sharing a positive
    passage, where a swap can do it. ``tags`` (one per batch, or None) make swaps try batches
    with the same tag first (harder-batches keeps a category's batches together). Draws from
    ``rng`` only when a duplicate exists."""
    keys = [_positive_keys(e) for e in examples]
    counts = [Counter(k for i in batch for k in keys[i]) for batch in batches]
    if not any(c > 1 for counter in counts for c in counter.values()):
        return batches
    same_tag: dict[Hashable, list[int]] = defaultdict(list)
    if tags is not None:
        for b, tag in enumerate(tags):
            if tag is not None:
                same_tag[tag].append(b)
    for a, batch in enumerate(batches):
        for pos, item in enumerate(batch):
            if not any(counts[a][k] > 1 for k in keys[item]):
                continue
            pool = [b for b in same_tag.get(tags[a], ()) if b != a] if tags is not None and tags[a] is not None else []
            for attempt in range(_SWAP_TRIES):
                b = rng.choice(pool) if pool and attempt < _SWAP_TRIES // 2 else rng.randrange(len(batches))
                if b == a:
                    continue
                pos_b = rng.randrange(len(batches[b]))
                other = batches[b][pos_b]
                if _fits(keys, other, counts[a], item) and _fits(keys, item, counts[b], other):
                    batch[pos], batches[b][pos_b] = other, item
                    counts[a].subtract(keys[item])
                    counts[a].update(keys[other])
                    counts[b].subtract(keys[other])
                    counts[b].update(keys[item])
                    break
    return batches


def _cut(order: Sequence[int], batch_size: int) -> list[list[int]]:
    return [list(order[i : i + batch_size]) for i in range(0, len(order), batch_size)]


class RandomSampler:
    """DPR's batches (Karpukhin et al. 2020, arXiv:2004.04906; Sciavolino 2022 §2.3; Hoang 2022
    §2.2.1): shuffle the examples with ``rng`` and cut them into batches of ``batch_size`` in
    order; the last batch is smaller when ``batch_size`` does not divide the count, or dropped
    with ``drop_last=True``. ``unique_positives`` (module doc)
    then separates duplicate positives; ``False`` gives DPR's sampler exactly."""

    def __init__(self, *, drop_last: bool = False, unique_positives: bool = True) -> None:
        self.drop_last = bool(drop_last)
        self.unique_positives = bool(unique_positives)

    def __call__(self, examples: Sequence[TrainingExample], batch_size: int, rng: random.Random) -> list[list[int]]:
        batch_size = _check_batch_size(batch_size)
        order = list(range(len(examples)))
        rng.shuffle(order)
        batches = _cut(order, batch_size)
        if self.drop_last and batches and len(batches[-1]) < batch_size:
            batches.pop()
        if self.unique_positives:
            separate_duplicate_positives(batches, examples, rng)
        return batches


def _kmeans_numpy(x: Any, k: int, seed: int) -> list[int]:
    """Lloyd's k-means with a seeded k-means++ initialisation (numpy only)."""
    import numpy as np

    gen = np.random.default_rng(seed)
    n = x.shape[0]
    sq = (x * x).sum(axis=1)
    centres = [int(gen.integers(n))]
    nearest = np.maximum(sq - 2.0 * x @ x[centres[0]] + sq[centres[0]], 0.0)
    for _ in range(1, k):
        total = float(nearest.sum())
        pick = int(gen.choice(n, p=nearest / total)) if total > 0 else int(gen.integers(n))
        centres.append(pick)
        nearest = np.minimum(nearest, np.maximum(sq - 2.0 * x @ x[pick] + sq[pick], 0.0))
    c = x[centres].copy()
    assign = np.full(n, -1)
    for _ in range(_KMEANS_ITERATIONS):
        new = np.empty(n, dtype=np.int64)
        for start in range(0, n, 8192):
            chunk = x[start : start + 8192]
            dist = (c * c).sum(axis=1)[None, :] - 2.0 * chunk @ c.T
            new[start : start + 8192] = dist.argmin(axis=1)
        if np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            members = x[assign == j]
            if len(members):
                c[j] = members.mean(axis=0)
    return assign.tolist()


def kmeans(vectors: Any, k: int, *, seed: int = 0, normalize: bool = True, backend: str = "auto") -> list[int]:
    """Cluster ids (``0..k-1``) of ``vectors`` (``[n, d]``) by k-means seeded with ``seed``.
    ``backend``: ``"sklearn"`` (``KMeans(n_init=1)``), ``"numpy"`` (:func:`_kmeans_numpy`) or
    ``"auto"`` (sklearn when installed). ``normalize`` clusters unit vectors (cosine)."""
    import numpy as np

    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"vectors must be a non-empty [n, d] array, got shape {x.shape}")
    if normalize:
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1.0)
    k = min(k, x.shape[0])
    if backend not in ("auto", "sklearn", "numpy"):
        raise ValueError(f"backend must be 'auto', 'sklearn' or 'numpy', got {backend!r}")
    if backend != "numpy":
        try:
            from sklearn.cluster import KMeans
        except ImportError:
            if backend == "sklearn":
                raise
        else:
            model = KMeans(n_clusters=k, n_init=1, max_iter=_KMEANS_ITERATIONS * 6, random_state=seed)
            return [int(label) for label in model.fit_predict(x)]
    return _kmeans_numpy(x, k, seed)


class HarderBatchesSampler:
    """Harder in-batch negatives (Hoang 2022, "Open Domain Question Answering System", ch. 6, §6.1): batches whose examples share a category, so
    the in-batch negatives are similar passages. The thesis classifies passages into DBpedia
    categories and greedily builds batches whose positives share a category, with randomness so
    epochs differ. Here the category is

    - ``by="label"``: ``TrainingExample.label`` (examples without a label form one more group);
    - ``by="cluster"``: a k-means cluster of the examples' vectors: ``vectors`` (``[n, d]``,
      aligned with ``examples``) or ``embed`` (``examples -> [n, d]``); the clusters are computed
      once and reused while the examples are equal (a new epoch re-batches, not re-clusters);
      ``clusters`` clusters (default ``n // (4 * batch_size)``, at least 1, so a cluster fills
      about four batches), ``seed`` and ``normalize`` as in :func:`kmeans` (sklearn if
      installed, else numpy; ``backend`` forces one);
    - ``by="auto"`` (default): ``"label"`` when any example has a label, else ``"cluster"``.

    Each epoch, from ``rng``: the groups are shuffled and so are their members; each group is cut
    into full batches; the groups' remainders, kept group by group, are cut into mixed batches;
    the full batches are shuffled and the one partial batch (if any) comes last, or is dropped
    with ``drop_last=True``. ``unique_positives`` (module doc) then separates duplicate positives,
    preferring swaps between batches of the same group.
    """

    def __init__(
        self,
        *,
        by: str = "auto",
        clusters: int | None = None,
        vectors: Any = None,
        embed: Callable[[Sequence[TrainingExample]], Any] | None = None,
        normalize: bool = True,
        seed: int = 0,
        backend: str = "auto",
        drop_last: bool = False,
        unique_positives: bool = True,
    ) -> None:
        # by, clusters and backend are checked by the options' declarations (the spec's)
        if vectors is not None and embed is not None:
            raise ValueError("give vectors or embed, not both")
        if embed is not None and not callable(embed):
            raise ValueError("embed must be callable")
        self.by = by
        self.clusters = clusters
        self.vectors = vectors
        self.embed = embed
        self.normalize = bool(normalize)
        self.seed = int(seed)
        self.backend = backend
        self.drop_last = bool(drop_last)
        self.unique_positives = bool(unique_positives)
        self._cache: tuple[int, int, int, list[int]] | None = None

    def _cluster_ids(self, examples: Sequence[TrainingExample], batch_size: int) -> list[int]:
        n = len(examples)
        k = self.clusters if self.clusters is not None else max(1, n // (4 * batch_size))
        try:
            identity = hash(tuple(examples))
        except TypeError:
            identity = id(examples)
        if self._cache is not None and self._cache[:3] == (identity, n, k):
            return self._cache[3]
        if self.vectors is not None:
            vectors = self.vectors
        elif self.embed is not None:
            vectors = self.embed(examples)
        else:
            raise ValueError("harder-batches by cluster needs vectors or embed (or labelled examples)")
        shape = getattr(vectors, "shape", None) or (len(vectors),)
        if shape[0] != n:
            raise ValueError(f"got {shape[0]} vectors for {n} examples")
        ids = kmeans(vectors, k, seed=self.seed, normalize=self.normalize, backend=self.backend)
        self._cache = (identity, n, k, ids)
        return ids

    def groups(self, examples: Sequence[TrainingExample], batch_size: int) -> list[Hashable]:
        """Each example's category (a label, ``None`` for unlabelled, or a cluster id)."""
        by = self.by
        if by == "auto":
            by = "label" if any(e.label is not None for e in examples) else "cluster"
        if by == "label":
            return [e.label for e in examples]
        return list(self._cluster_ids(examples, batch_size))

    def __call__(self, examples: Sequence[TrainingExample], batch_size: int, rng: random.Random) -> list[list[int]]:
        batch_size = _check_batch_size(batch_size)
        if not examples:
            return []
        members: dict[Hashable, list[int]] = defaultdict(list)
        for index, group in enumerate(self.groups(examples, batch_size)):
            members[group].append(index)
        names = sorted(members, key=lambda g: (g is None, type(g).__name__, str(g)))
        rng.shuffle(names)
        full: list[tuple[list[int], Hashable]] = []
        remainder: list[int] = []
        for name in names:
            order = members[name]
            rng.shuffle(order)
            cut = len(order) - len(order) % batch_size
            full.extend((order[i : i + batch_size], name) for i in range(0, cut, batch_size))
            remainder.extend(order[cut:])
        mixed = _cut(remainder, batch_size)
        partial = mixed.pop() if mixed and len(mixed[-1]) < batch_size else None
        full.extend((batch, None) for batch in mixed)
        rng.shuffle(full)
        batches = [batch for batch, _ in full]
        tags: list[Hashable | None] = [tag for _, tag in full]
        if partial is not None and not self.drop_last:
            batches.append(partial)
            tags.append(None)
        if self.unique_positives:
            separate_duplicate_positives(batches, examples, rng, tags)
        return batches

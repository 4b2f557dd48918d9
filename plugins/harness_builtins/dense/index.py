"""faiss indexes over an embedding cache: exact inner product by default, HNSW or IVF-PQ on request.

- ``flat``: ``IndexFlatIP``, exact maximum inner product (DPR's default, PROTOCOL section 5).
- ``hnsw``: ``IndexHNSWFlat(d, M, METRIC_INNER_PRODUCT)`` with ``efConstruction`` / ``efSearch``.
  Inner product is not a metric and HNSW's graph suffers on vectors of varying norms (DPR's are);
  ``hnsw_metric="l2"`` uses DPR's ``DenseHNSWFlatIndexer`` transform instead: each passage gets an
  extra coordinate ``sqrt(phi - |p|^2)`` (``phi`` the largest squared norm), each query a 0, so
  the nearest neighbour in L2 is the best inner product; scores are converted back to inner
  products (``(|q|^2 + phi - distance) / 2``).
- ``ivfpq``: ``IndexIVFPQ`` over an ``IndexFlatIP`` coarse quantizer, inner-product metric,
  ``nlist`` lists, ``m`` sub-quantizers of ``nbits`` bits, ``nprobe`` lists visited per query;
  trained on a uniform sample of up to ``max(64 * nlist, 100k)`` vectors (seed 0).

Vectors are added shard by shard from the float16 memory maps (each converted to float32 on its
own), so building never holds more than the index plus one shard. Built HNSW and IVF-PQ indexes
are saved next to the embeddings (``index-<kind>-<digest>.faiss``) and reused.

The ``gpu`` option (``auto``, ``true``, ``false``) says where searches run:

- ``flat`` on GPUs is :class:`~harness_builtins.dense.gpu_flat.TorchFlatIP` whenever torch sees
  CUDA devices: a float32 cache's rows in float32 where they fit (float32 products, TF32 off),
  else float16 rows with split-float16 products with float32 output; rows split over every
  visible GPU, candidates re-scored in float32 (the CPU search's scores), ties by the lower row
  among the candidates, any ``k``. It needs no faiss GPU build. When the rows (plus 2 GiB) do not fit the GPUs' free
  memory, ``gpu=auto`` searches on CPU (said once on stderr) and ``gpu=true`` is an error.
- ``ivfpq`` runs on GPU 0 when the installed faiss has GPU support (faiss's own
  ``GpuIndexIVFPQ``; its CPU original answers ``k`` above 2048, faiss's GPU limit); otherwise on
  CPU, with one line on stderr when a GPU is visible. HNSW stays on CPU.

Every exact search is proven (:meth:`DenseIndex.ranked`): each search returns, per question, a
ceiling on the exact score of every row it left out (:meth:`DenseIndex.search_bounded`, from the
bounds of :mod:`~harness_builtins.dense.bounds`), a question whose ``k``-th re-scored score is not
above it is searched again with more candidates, and what stays unproven is counted. HNSW and
IVF-PQ are approximate: their ``compute`` says ``search_precision: approximate`` with their
settings (``search_index``).

Exact search at Wikipedia scale (21M x 768 = 32 GB in float16, 64 GB in float32):

- on GPUs as above: the float16 rows (30 GiB) fit one 80 GB GPU, with room for the scores;
- on CPU, ``flat`` is an ``IndexFlatIP`` in RAM when its float32 copy fits in
  :data:`FLAT_RAM_SHARE` of physical memory, else :class:`MappedFlatIP`, which searches the
  cache's memory-mapped float16 shards block by block (converted to float32 one block at a time)
  and merges the blocks' exact top-k, so memory stays at about one block plus the page cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError, warn
from harness.util.progress import progress as progress_bar

from harness_builtins.dense import bounds
from harness_builtins.dense.embeddings import EmbeddingCache
from harness_builtins.dense.options import INDEX_OPTIONS


@dataclass(frozen=True, kw_only=True)
class IndexConfig:
    """Which faiss index to build, and its parameters."""

    kind: str = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    hnsw_metric: str = "ip"
    ivf_nlist: int = 4096
    ivf_nprobe: int = 64
    pq_m: int = 64
    pq_nbits: int = 8
    gpu: str = "auto"

    def __post_init__(self) -> None:
        # checked by the options' declarations (INDEX_OPTIONS), as when loaded by name
        values = {name: getattr(self, name) for name in asdict(self) if name != "kind"}
        checked = INDEX_OPTIONS.check({"index": self.kind, **values}, where="dense index")
        gpu = checked["gpu"]
        object.__setattr__(self, "gpu", gpu if gpu == "auto" else ("true" if gpu else "false"))

    def parameters(self) -> dict[str, Any]:
        """The settings that change the ranking: the kind and its own parameters."""
        if self.kind == "flat":
            return {"index": "flat"}
        if self.kind == "hnsw":
            return {"index": "hnsw", "hnsw_m": self.hnsw_m, "hnsw_ef_construction": self.hnsw_ef_construction,
                    "hnsw_ef_search": self.hnsw_ef_search, "hnsw_metric": self.hnsw_metric}
        return {"index": "ivfpq", "ivf_nlist": self.ivf_nlist, "ivf_nprobe": self.ivf_nprobe,
                "pq_m": self.pq_m, "pq_nbits": self.pq_nbits}

    def build_key(self) -> str:
        """Digest of what the built index depends on (search-time settings excluded)."""
        params = self.parameters()
        params.pop("hnsw_ef_search", None)
        params.pop("ivf_nprobe", None)
        return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> IndexConfig:
        fields = {k: options[k] for k in asdict(cls()) if k in options and options[k] is not None}
        if "index" in options and options["index"] is not None:
            fields["kind"] = options["index"]
        return cls(**fields)


#: CPU ``flat`` keeps a float32 copy in RAM only up to this share of physical memory.
FLAT_RAM_SHARE = 0.5

#: Rows per block of :class:`MappedFlatIP` (262,144 x 768 float32 = 805 MB).
MAPPED_BLOCK_ROWS = 262_144
#: Questions per search call over a :class:`MappedFlatIP`: each call reads every stored row once,
#: so NQ's 3,610 test questions take one pass instead of 15; its result heap (4,096 x k) stays
#: small (k = 1,000: 50 MB) and candidates are re-scored one question at a time.
MAPPED_SEARCH_BATCH = 4096


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


class MappedFlatIP:
    """Exact inner-product search over an :class:`EmbeddingCache`'s memory-mapped float16 shards.

    Quacks like the faiss index :class:`DenseIndex` needs (``ntotal``, ``d``, ``search``): each
    block of rows is converted to float32, searched exactly (``faiss.knn``), and its top-k merged
    into a running top-k per query (``faiss.ResultHeap``), so the result is the exact top-k over
    all rows; rows are the cache's row numbers.
    """

    def __init__(self, cache: EmbeddingCache, block_rows: int | None = None):
        self.cache = cache
        self.block_rows = block_rows or MAPPED_BLOCK_ROWS
        self.ntotal = len(cache)
        self.d = cache.dim
        #: The largest row norm, learnt by the first search (each block's, as it is read).
        self.vmax: float | None = None

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        heap = faiss.ResultHeap(len(queries), k, keep_max=True)
        offset = 0
        largest = 0.0
        for shard in self.cache.shards:
            for start in range(0, len(shard), self.block_rows):
                block = np.ascontiguousarray(shard[start : start + self.block_rows], dtype=np.float32)
                if self.vmax is None and len(block):
                    largest = max(largest, _largest_norm(block))
                scores, rows = faiss.knn(queries, block, min(k, len(block)), metric=faiss.METRIC_INNER_PRODUCT)
                heap.add_result(scores, np.where(rows >= 0, rows + (offset + start), -1))
            offset += len(shard)
        heap.finalize()
        if self.vmax is None:
            self.vmax = largest
        return heap.D, heap.I


def _largest_norm(vectors: np.ndarray) -> float:
    """The largest row norm of ``vectors`` (summed in float64, raised by a relative 2^-40 so that
    it bounds the exact norm)."""
    wide = np.asarray(vectors, np.float64)
    return float(np.sqrt(np.einsum("ij,ij->i", wide, wide).max())) * (1 + 2.0**-40)


#: faiss's GPU k-selection handles k up to this; larger k searches a CPU copy.
FAISS_GPU_MAX_K = 2048


def gpu_available() -> bool:
    """Whether the faiss build has GPU support and sees a GPU (used for ``ivfpq``)."""
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Say ``message`` on stderr the first time ``key`` is seen in this process."""
    if key not in _warned:
        _warned.add(key)
        warn(message)


def gpu_device_visible() -> bool:
    """Whether the machine shows an NVIDIA GPU (its device node), whatever torch and faiss see."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def flat_devices(config: IndexConfig) -> list[str]:
    """The torch devices an exact ``flat`` index goes on: every visible CUDA device unless
    ``gpu=false``; none (CPU faiss) without CUDA. Says once on stderr when a GPU is visible but
    torch cannot use it."""
    from harness_builtins.dense import gpu_flat

    if config.gpu == "false":
        return []
    devices = gpu_flat.cuda_devices()
    if not devices:
        if config.gpu == "true":
            raise HarnessError("gpu=true but torch sees no CUDA device (a CPU build of torch, or no GPU)")
        if gpu_device_visible():
            warn_once("flat", "a GPU is visible but torch has no CUDA support: exact dense search runs on CPU "
                               "(install a CUDA build of torch)")
    return devices


class DenseIndex:
    """A faiss index over an :class:`EmbeddingCache`, searched by inner product."""

    def __init__(self, index: Any, cache: EmbeddingCache, config: IndexConfig, *, on_gpu: bool = False):
        self.index = index
        self.cache = cache
        self.config = config
        self.on_gpu = on_gpu
        self._tie_keys: np.ndarray | None = None  # tie_key of each row, where ``_tie_known``
        self._tie_known: np.ndarray | None = None
        #: Objects the index needs alive (GPU resources and sub-indexes of a sharded index).
        self.keep: list[Any] = []
        #: hnsw_metric="l2": the squared norm the passages were lifted to (DPR's transform).
        self.phi: float | None = None
        #: A GPU faiss index's CPU original (searched for k above :data:`FAISS_GPU_MAX_K`).
        self.cpu_index: Any | None = None
        #: How searches are computed: device kind and count, score precision (for the result).
        self.compute: dict[str, Any] = {"search_device": "cpu", "search_devices": 1, "search_precision": "fp32"}
        if config.kind != "flat":
            self.compute.update(approximate_search(config))
        #: The largest norm of the rows the index searches (a faiss flat index's, set when added).
        self.vmax: float | None = None

    @property
    def dim(self) -> int:
        return self.cache.dim

    def index_bytes(self) -> int:
        """The bytes of the search structure itself: a GPU index's own (``compute``), a faiss
        index's codes (``ntotal x code_size``; HNSW's graph and IVF's lists are counted by its
        saved file's size), and 0 for a search over the memory-mapped cache in place."""
        if "index_bytes" in self.compute:
            return int(self.compute["index_bytes"])
        if isinstance(self.index, MappedFlatIP):
            return 0
        if self.config.kind != "flat":
            saved = self.cache.path / f"index-{self.config.kind}-{self.config.build_key()}.faiss"
            if saved.is_file():
                return saved.stat().st_size
        return int(self.index.ntotal) * int(getattr(self.index, "code_size", 4 * self.index.d))

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def build(cls, cache: EmbeddingCache, config: IndexConfig | None = None, *, progress: bool = True,
              save: bool = True) -> DenseIndex:
        """Build (or, for HNSW / IVF-PQ, load a saved) index over ``cache``."""
        import faiss

        config = config or IndexConfig()
        d = cache.dim
        if config.kind == "flat":
            from harness_builtins.dense import gpu_flat

            devices = flat_devices(config)
            # a float32 cache is searched in float32 where it fits, else from a float16 copy
            full = bool(cache.shards) and cache.shards[0].dtype == np.float32
            if devices and full and not gpu_flat.shortfall(d, len(cache), devices, itemsize=4):
                return cls._torch_flat(cache, config, devices, progress, full=True)
            if devices and (short := gpu_flat.shortfall(d, len(cache), devices)):
                if config.gpu == "true":
                    raise HarnessError(f"gpu=true but the exact index does not fit: {short}")
                warn_once("fit", f"the exact index does not fit the GPUs ({short}): it searches on CPU")
                devices = []
            if devices:
                return cls._torch_flat(cache, config, devices, progress, full=False)
            if 4 * d * len(cache) > FLAT_RAM_SHARE * physical_memory():
                return cls(MappedFlatIP(cache), cache, config)
            index = faiss.IndexFlatIP(d)
            built = cls(index, cache, config)
            built.vmax = _add(index, cache, progress)
            return built

        saved = cache.path / f"index-{config.kind}-{config.build_key()}.faiss"
        phi = None
        if saved.is_file():
            index = faiss.read_index(str(saved))
            expected_d = d + 1 if config.kind == "hnsw" and config.hnsw_metric == "l2" else d
            if index.ntotal != len(cache) or index.d != expected_d:
                raise HarnessError(f"{saved} does not match its embeddings; delete it")
            if expected_d != d:
                phi = float(json.loads(saved.with_suffix(".json").read_text())["phi"])
        else:
            index = cls._new_trained(config, cache, d)
            if config.kind == "hnsw" and config.hnsw_metric == "l2":
                phi = max((float(np.einsum("ij,ij->i", v, v).max()) for v in cache.vectors() if len(v)), default=0.0)
                _add(index, cache, progress, phi=phi)
            else:
                _add(index, cache, progress)
            if save:
                if phi is not None:
                    saved.with_suffix(".json").write_text(json.dumps({"phi": phi}))
                tmp = saved.with_name(f".{saved.name}.{os.getpid()}.tmp")
                faiss.write_index(index, str(tmp))
                os.replace(tmp, saved)
        built = cls(index, cache, config)
        built.phi = phi
        if config.kind == "ivfpq":
            built._ivfpq_to_gpu(config)
        return built

    @classmethod
    def _torch_flat(cls, cache: EmbeddingCache, config: IndexConfig, devices: list[str], progress: bool, *,
                    full: bool) -> DenseIndex:
        """The torch flat index: float32 rows (``full``, a float32 cache that fits) or float16."""
        import torch

        from harness_builtins.dense.gpu_flat import SEARCH_PRECISION, SEARCH_PRECISION_FP32, TorchFlatIP

        with progress_bar(total=len(cache), desc="dense index (gpu)", unit="vec", enabled=progress) as bar:
            index = TorchFlatIP.from_shards(cache.shards, cache.dim, len(cache), devices, on_rows=bar.update,
                                            dtype=torch.float32 if full else torch.float16)
        if cache.reference is not None:
            index.rounded = True  # float16 rows of a cache whose ranking comes from its float32 copy
        built = cls(index, cache, config, on_gpu=True)
        built.compute = {"search_device": devices[0].split(":")[0], "search_devices": len(devices),
                         "search_precision": SEARCH_PRECISION_FP32 if full else SEARCH_PRECISION,
                         "index_bytes": index.memory_bytes()}
        return built

    def _ivfpq_to_gpu(self, config: IndexConfig) -> None:
        """Move an IVF-PQ index to GPU 0 when faiss can (``gpu`` auto or true); the CPU index stays
        for k above faiss's GPU limit."""
        import faiss

        if config.gpu == "false":
            return
        if not gpu_available():
            if config.gpu == "true":
                raise HarnessError("gpu=true but this faiss build has no GPU support or sees no GPU (ivfpq)")
            if gpu_device_visible():
                warn_once("ivfpq", "a GPU is visible but this faiss build has no GPU support: the ivfpq index "
                                    "searches on CPU (README: GPU search)")
            return
        resources = faiss.StandardGpuResources()
        options = faiss.GpuClonerOptions()
        options.useFloat16LookupTables = True
        self.cpu_index = self.index
        self.index = faiss.index_cpu_to_gpu(resources, 0, self.index, options)
        self.keep.append(resources)
        self.on_gpu = True
        self.compute = {"search_device": "cuda", "search_devices": 1,
                        **approximate_search(config, {"ivfpq_lookup_tables": "fp16"})}

    @staticmethod
    def _new_trained(config: IndexConfig, cache: EmbeddingCache, d: int) -> Any:
        import faiss

        if config.kind == "hnsw":
            if config.hnsw_metric == "l2":
                index = faiss.IndexHNSWFlat(d + 1, config.hnsw_m, faiss.METRIC_L2)
            else:
                index = faiss.IndexHNSWFlat(d, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = config.hnsw_ef_construction
            return index
        if config.ivf_nlist > len(cache):
            raise HarnessError(f"ivf_nlist={config.ivf_nlist} exceeds the corpus size {len(cache)}")
        if d % config.pq_m:
            raise HarnessError(f"pq_m={config.pq_m} must divide the vector dimension {d}")
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFPQ(quantizer, d, config.ivf_nlist, config.pq_m, config.pq_nbits, faiss.METRIC_INNER_PRODUCT)
        index.train(cache.sample(max(64 * config.ivf_nlist, 100_000)))
        return index

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)``, each ``(len(queries), min(k, len(index)))``, best first; a row of -1
        (score -inf) where an approximate index found fewer than k."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise HarnessError(f"query vectors of shape {queries.shape} for a {self.dim}-d index")
        k = min(int(k), len(self))
        if len(queries) == 0 or k == 0:
            return np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64)
        if self.config.kind == "hnsw":
            self.index.hnsw.efSearch = max(self.config.hnsw_ef_search, k)
        elif self.config.kind == "ivfpq":
            for index in (self.index, self.cpu_index):
                if index is not None:
                    index.nprobe = self.config.ivf_nprobe
        if self.phi is not None:
            lifted = np.hstack([queries, np.zeros((len(queries), 1), np.float32)])
            distances, rows = self.index.search(lifted, k)
            norms = np.einsum("ij,ij->i", queries, queries)[:, None]
            scores = np.where(rows >= 0, (norms + self.phi - distances) / 2, -np.inf).astype(np.float32)
        else:
            index = self.cpu_index if self.cpu_index is not None and k > FAISS_GPU_MAX_K else self.index
            scores, rows = index.search(queries, k)
        return scores, rows.astype(np.int64, copy=False)

    def passage_ids(self, rows: np.ndarray) -> list[str]:
        return self.cache.passage_ids(rows)

    def search_bounded(self, queries: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray | None]:
        """``(rows, ceiling)``: each question's best ``m`` candidate rows (``-1`` where fewer) and an
        upper bound on the re-scored value (:func:`exact_scores` of the reference vectors) of every
        row not among them (``-inf`` when every row is; see :mod:`~harness_builtins.dense.bounds`).
        ``ceiling`` is None for an approximate index: it proves nothing."""
        from harness_builtins.dense.gpu_flat import TorchFlatIP

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        m = min(int(m), len(self))
        if self.config.kind != "flat":
            return self.search(queries, m)[1], None
        q2, q1 = bounds.norms(queries)
        if isinstance(self.index, TorchFlatIP):
            _, rows, ceiling = self.index.search_bounded(queries, m)
            vmax = max(s.vmax for s in self.index.slices)
        else:
            scores, rows = self.search(queries, m)
            vmax = self.index.vmax if isinstance(self.index, MappedFlatIP) else self.vmax
            if vmax is None:
                return rows, np.full(len(queries), np.inf)
            ceiling = scores[:, -1].astype(np.float64) + bounds.float32_dot(self.dim, q2, vmax)
            if self.cache.reference is not None:  # searched float16 rows, ranked by their float32 copy
                ceiling = ceiling + bounds.float16_rounding(q2, q1, vmax)
            if m >= len(self):
                ceiling = np.full(len(queries), -np.inf)
        if self.cache.reference is not None:
            vmax = vmax * (1 + 2.0**-10)  # the float32 copy's norms, from the float16 rows'
        return rows, ceiling + bounds.rescored(self.dim, q2, vmax)

    def ranked(self, queries: np.ndarray, k: int) -> Ranked:
        """The final top ``k`` of each query: the index's top ``k +`` :data:`RESCORE_MARGIN`
        candidates re-scored exactly from the reference vectors (a float16 cache's float32 copy,
        else the cached vectors: :func:`exact_scores`) and ordered by those scores, equal scores by
        :func:`tie_key` of the passage id, never by row (corpus position).

        An exact index's ranking is proven: its ``k``-th re-scored score must lie above the
        ceiling of every row not among the candidates (:meth:`search_bounded`); where it does not
        (many near-equal scores: a collapsed encoder), the question is searched again with
        :data:`CANDIDATE_GROWTH` times the candidates, up to :data:`MAX_CANDIDATES` (or every row).
        ``decided_by_rounding`` counts the questions left unproven, and, for a float16 cache
        without its float32 copy, those whose top ``k`` (its rows or their order) the float16
        rounding could have changed (:func:`rounding_bounds`)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(int(k), len(self))
        if len(queries) == 0 or k == 0:
            return Ranked(np.zeros((len(queries), 0), np.float32), [[] for _ in queries], 0)
        scores = np.full((len(queries), k), -np.inf, np.float32)
        ids: list[list[str]] = [[] for _ in queries]
        unproven: dict[int, int] = {}
        todo = np.arange(len(queries))
        m = min(k + RESCORE_MARGIN, len(self))
        while len(todo):
            rows, ceilings = self.search_bounded(queries[todo], m)
            again = []
            for j, q in enumerate(todo.tolist()):
                found = rows[j][rows[j] >= 0]
                vectors = self.cache.reference_rows(found)
                exact = exact_scores(vectors, queries[q])
                order = _by_score_then_id(exact, found, self._tie_keys_of)
                top = order[:k]
                scores[q, :] = -np.inf
                scores[q, : len(top)] = exact[top]
                ids[q] = self.cache.passage_ids(found[top])
                ceiling = None if ceilings is None else float(ceilings[j])
                proven = ceiling is None or (len(top) == k and ceiling < float(exact[top[-1]]))
                if self.cache.rounded and ceiling is not None:
                    unproven[q] = int(not proven or _rounding_could_change(vectors, exact, order, k, queries[q], ceiling))
                else:
                    unproven[q] = int(not proven)
                if not proven:
                    again.append(q)
            if m >= min(len(self), MAX_CANDIDATES):
                break
            todo = np.array(again, dtype=np.int64)
            m = min(m * CANDIDATE_GROWTH, len(self), MAX_CANDIDATES)
        return Ranked(scores, ids, sum(unproven.values()))

    def _tie_keys_of(self, rows: np.ndarray) -> np.ndarray:
        """:func:`tie_key` of each row's passage id, each row's computed once per index (a
        collapsed encoder ties most rows on every question)."""
        if self._tie_keys is None:
            self._tie_keys = np.zeros(len(self), dtype=np.uint64)
            self._tie_known = np.zeros(len(self), dtype=bool)
        new = np.unique(rows[~self._tie_known[rows]])
        if len(new):
            self._tie_keys[new] = np.array([tie_key(n) for n in self.cache.passage_ids(new)], dtype=np.uint64)
            self._tie_known[new] = True
        return self._tie_keys[rows]


def _by_score_then_id(exact: np.ndarray, rows: np.ndarray, tie_keys: Any) -> np.ndarray:
    """The order of ``rows`` by ``exact`` score, best first, equal scores by :func:`tie_key` of
    their passage ids (``tie_keys(rows)``, asked only for the rows that tie: the order is that of
    sorting every row by (score, tie key))."""
    negated = -exact.astype(np.float64)
    by_score = np.argsort(negated, kind="stable")
    sorted_scores = negated[by_score]
    same = sorted_scores[1:] == sorted_scores[:-1]
    tied = np.zeros(len(by_score), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    keys = np.zeros(len(exact), dtype=np.uint64)
    if tied.any():
        which = by_score[tied]
        keys[which] = tie_keys(rows[which])
    return np.lexsort((keys, negated))


#: A question whose ranking the candidates cannot prove is searched again with this many times
#: the candidates, up to :data:`MAX_CANDIDATES` (or every row).
CANDIDATE_GROWTH = 8
MAX_CANDIDATES = 16_384


def _rounding_could_change(vectors: np.ndarray, exact: np.ndarray, order: np.ndarray, k: int, query: np.ndarray,
                           ceiling: float) -> bool:
    """Whether float16 rounding of the stored ``vectors`` (the encoder's values unknown) could have
    changed the top ``k`` that ``order`` gives: two neighbours in it whose scores' rounding
    intervals meet (equal scores included), or its last one's meeting a lower candidate's or the
    ceiling of the rows not re-scored (raised by the largest rounding)."""
    bound = rounding_bounds(vectors, query)
    top = order[:k]
    low = exact[top].astype(np.float64) - bound[top]
    high = exact[top].astype(np.float64) + bound[top]
    if len(top) > 1 and np.any(low[:-1] <= high[1:]):
        return True
    rest = order[k:]
    beyond = max([float((exact[rest].astype(np.float64) + bound[rest]).max())] if len(rest) else [-np.inf])
    q2, q1 = bounds.norms(query[None, :])
    largest = float(np.sqrt(np.einsum("ij,ij->i", vectors, vectors).max())) if len(vectors) else 0.0
    outside = ceiling + float(bounds.float16_rounding(q2, q1, largest * (1 + 2.0**-10))[0])
    return bool(len(top)) and low[-1] <= max(beyond, outside)


#: Candidates beyond ``k`` the final ranking re-scores, so equal or nearly equal scores at the
#: ``k``-th place are ordered by exact scores and passage ids, not by the index's order.
RESCORE_MARGIN = 16


@dataclass
class Ranked:
    """:meth:`DenseIndex.ranked`'s answer: per query, the scores and passage ids best first, and
    how many queries' top-k scores all lie within the float16 rounding of the stored vectors."""

    scores: np.ndarray
    ids: list[list[str]]
    decided_by_rounding: int


def exact_scores(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``vectors . query`` summed in float64 and rounded once to float32: the same number whatever
    the index, device or BLAS computed the candidates with."""
    return (np.asarray(vectors, np.float64) @ np.asarray(query, np.float64)).astype(np.float32)


def rounding_bounds(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For float16-stored ``vectors``, a bound on ``|q . p - q . fp16(p)|`` for the encoder's
    float32 ``p``: each coordinate rounds by at most ``2^-11 |p_i|`` (normal numbers, ``|p_i| <=
    |fp16(p_i)| (1 + 2^-11)``) or ``2^-25`` (subnormals), so the error is at most
    ``(2^-11 + 2^-22) sum |q_i| |fp16(p_i)| + 2^-25 sum |q_i|``."""
    q = np.abs(np.asarray(query, np.float64))
    return (2.0**-11 + 2.0**-22) * (np.abs(np.asarray(vectors, np.float64)) @ q) + 2.0**-25 * q.sum()


def tie_key(passage_id: str) -> int:
    """The order among equal scores: the first 8 bytes of the passage id's blake2b digest, a fixed
    order unrelated to where the passage sits in the corpus."""
    return int.from_bytes(hashlib.blake2b(passage_id.encode("utf-8"), digest_size=8).digest(), "big")


def _add(index: Any, cache: EmbeddingCache, progress: bool, *, phi: float | None = None) -> float:
    """Add the cache's vectors to ``index`` shard by shard; returns their largest norm."""
    largest = 0.0
    with progress_bar(total=len(cache), desc="dense index", unit="vec", enabled=progress) as bar:
        for vectors in cache.vectors(np.float32):
            if len(vectors):
                largest = max(largest, _largest_norm(vectors))
            if phi is not None:  # DPR's lift: |p'|^2 = phi for every passage
                extra = np.sqrt(np.maximum(phi - np.einsum("ij,ij->i", vectors, vectors), 0.0))
                vectors = np.hstack([vectors, extra[:, None].astype(np.float32)])
            index.add(vectors)
            bar.update(len(vectors))
    return largest


def approximate_search(config: IndexConfig, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``compute`` fields of an approximate index (HNSW, IVF-PQ): ``search_precision`` says
    ``approximate`` (its rankings are not the exact inner-product top-k), ``search_index`` its
    kind and settings."""
    return {"search_precision": "approximate", "search_index": {**config.parameters(), **(extra or {})}}


def brute_force_search(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by inner product in numpy (a reference for tests)."""
    scores = np.asarray(queries, np.float32) @ np.asarray(vectors, np.float32).T
    k = min(k, scores.shape[1])
    rows = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, rows, axis=1), rows


"""The dense engine's option declarations (:class:`harness.api.Option`): the encoders' runtime
options, the index options the engine adds to every encoder's retriever, and the values the
encoders' and index's constructors accept. Imports nothing heavy and nothing of the plugin, so
every module of it may import this one.
"""

from __future__ import annotations

from harness.api import Option, Options, boolean, choice, non_negative_int, positive_int, text

#: Input formats and poolings of the transformers encoders, and the formats a sentence-transformers
#: model accepts (it takes strings, not segment pairs); :mod:`.encoders` documents them.
FORMATS: tuple[str, ...] = ("dpr", "title_text", "text")
ST_FORMATS: tuple[str, ...] = ("title_text", "text", "dpr")
POOLINGS: tuple[str, ...] = ("cls", "mean", "pooler")
#: faiss index kinds and HNSW metrics (:mod:`.index`).
INDEX_KINDS: tuple[str, ...] = ("flat", "hnsw", "ivfpq")
HNSW_METRICS: tuple[str, ...] = ("ip", "l2")
#: Encoding precisions (``auto``: fp16 on GPU, fp32 on CPU).
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "fp16", "bf16")

#: Upper bounds of the numeric options, far above any use (the largest faiss settings published
#: for 21M-passage Wikipedia: HNSW M 512, ef 2,048, 262,144 IVF lists), so a typo's extra digits
#: are refused in one line naming the option before anything is loaded, encoded or written.
MAX_BATCH_SIZE = 65_536
MAX_TOKENS = 131_072
MAX_HNSW_M = 1_024
MAX_HNSW_EF = 1_000_000
MAX_IVF_LISTS = 4_194_304
MAX_PQ_M = 4_096
MAX_PQ_NBITS = 16
#: Passages per embedding shard: a shard's ids are held in memory while it is written.
MAX_SHARD_SIZE = 10_000_000

#: Declarations shared by the encoders' options and their constructors' checks.
BATCH_SIZE = positive_int(None, max=MAX_BATCH_SIZE, help="inputs per forward pass (null: 128 on GPU, 32 on CPU)")
DEVICE = text("auto", help="auto | cpu | cuda | cuda:N")
PRECISION = choice("auto", PRECISIONS, help="auto: fp16 on GPU, fp32 on CPU")
MAX_LENGTH = positive_int(None, max=MAX_TOKENS, help="tokens per input (null: the model's)")
REVISION = text(None, help="hub revision (branch, tag or commit)")


def model_option(default: str | None = None, help: str = "hub id or local directory") -> Option:
    """A model location option: a hub id or a local directory."""
    return text(default, help=help)


#: Options every built-in encoder accepts (``None`` / ``auto``: decided at run time).
RUNTIME_OPTIONS = Options({"batch_size": BATCH_SIZE, "device": DEVICE, "precision": PRECISION})

#: The most passages ``-o embeddings_check`` re-encodes: a check, not a second encoding of the corpus
#: (100,000 passages take about an hour on a CPU; a larger corpus than that is released to avoid it).
MAX_EMBEDDINGS_CHECK = 100_000

#: Options of the dense engine, added to every encoder's options in its retriever.
INDEX_OPTIONS = Options({
    "index": choice("flat", INDEX_KINDS, help="faiss index kind"),
    "hnsw_m": positive_int(32, max=MAX_HNSW_M),
    "hnsw_ef_construction": positive_int(200, max=MAX_HNSW_EF),
    "hnsw_ef_search": positive_int(128, max=MAX_HNSW_EF),
    # DPR's inner-product-to-L2 transform: better recall on unnormalised vectors
    "hnsw_metric": choice("ip", HNSW_METRICS),
    "ivf_nlist": positive_int(4096, max=MAX_IVF_LISTS),
    "ivf_nprobe": positive_int(64, max=MAX_IVF_LISTS),
    "pq_m": positive_int(64, max=MAX_PQ_M),
    "pq_nbits": positive_int(8, max=MAX_PQ_NBITS),
    "gpu": boolean("auto", literals=("auto",), help="search on GPU: auto | true | false"),
    "shard_size": positive_int(100_000, max=MAX_SHARD_SIZE, help="passages per embedding shard on disk"),
    # released passage vectors searched instead of encoding the corpus (harness list embeddings)
    "embeddings": text(None, help="a released embeddings name: search its vectors instead of encoding the corpus"),
    "embeddings_check": non_negative_int(64, max=MAX_EMBEDDINGS_CHECK,
                                         help="passages re-encoded to check a release against the encoder (0: none)"),
})

"""harness: a plugin-based benchmark harness for open-domain QA retrievers.

The core is layered; each folder is one layer, each module one idea:

- :mod:`harness.api`        records and protocols per extension family (corpus, suites,
  retrievers, metrics, encoders); :mod:`harness.types` re-exports them under their old name
- :mod:`harness.hookspecs`  the extension points plugins implement
- :mod:`harness.plugins`    finding and loading plugins, isolating their failures
- :mod:`harness.registry`   looking up and loading what plugins offer, by kind and name
- :mod:`harness.data`       the dataset catalogue, downloads, question readers, corpora, the store
- :mod:`harness.scoring`    DPR's answer matcher, first-hit ranks, top-k accuracy, re-ranking
- :mod:`harness.evaluate`   running a retriever on a suite
- :mod:`harness.runfiles`   reading, writing and scoring other systems' run files
- :mod:`harness.results`    the result file schema, the leaderboard, the terminal table
- :mod:`harness.util`       atomic files, cache folders, progress bars, environment facts
- :mod:`harness.cli`        the ``harness`` command line, a thin layer over the above
- :mod:`harness.testing`    helpers for plugin authors' tests

Imports go one way: plugins (built-in ones included) import the core's public modules
(:data:`PUBLIC_MODULES`), and nothing in the core imports a plugin.
"""

__version__ = "0.1.0"

import pluggy

#: Decorator for plugin hook implementations: ``@harness.hookimpl``.
hookimpl = pluggy.HookimplMarker("harness")

#: The modules plugins may import. Everything else is internal and may change without notice.
PUBLIC_MODULES: tuple[str, ...] = (
    "harness",
    "harness.api",
    "harness.types",
    "harness.errors",
    "harness.registry",
    "harness.plugins",
    "harness.evaluate",
    "harness.scoring.rerank",
    "harness.testing",
    "harness.analysis.published",
    "harness.data.training",
    "harness.util.models",
    "harness.util.resources",
    "harness.matching",
    "harness.scoring",
    "harness.scoring.matching",
    "harness.scoring.ranks",
    "harness.data.catalog",
    "harness.data.corpora",
    "harness.data.corpus_store",
    "harness.data.archives",
    "harness.data.download",
    "harness.data.embeddings",
    "harness.data.passages",
    "harness.data.questions",
    "harness.runfiles.readers",
    "harness.runfiles.published",
    "harness.runfiles.ranks",
    "harness.runfiles.writers",
    "harness.results",
    "harness.results.checkpoint",
    "harness.util.atomic",
    "harness.util.cache",
    "harness.util.jsonio",
    "harness.util.progress",
    "harness.cli.common",
)

__all__ = ["PUBLIC_MODULES", "__version__", "hookimpl"]

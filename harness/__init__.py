"""harness: a plugin-based benchmark harness for open-domain QA retrievers.

The core is layered; each folder is one layer, each module one idea. Roughly from the bottom up:

- :mod:`harness.errors`     the one-line errors every layer raises (exit status 2 on the command line)
- :mod:`harness.util`       atomic files, cache folders, progress bars, model references,
  measured resources, environment facts
- :mod:`harness.api`        records and protocols per extension family (corpora, suites, retrievers,
  re-rankers, encoders, metrics, released embeddings, published tables and runs, run formats,
  training parts) and the option declarations; :mod:`harness.types` re-exports them under their
  old name
- :mod:`harness.hookspecs`  the extension points plugins implement
- :mod:`harness.plugins`    finding and loading plugins, isolating their failures
- :mod:`harness.registry`   looking up what plugins offer, by kind and name; checking options and loading
- :mod:`harness.scoring`    DPR's answer matcher (:mod:`harness.matching` is its old name), checked
  rankings, first-hit ranks, top-k accuracy, re-ranking, retrieving a question set
- :mod:`harness.data`       the dataset catalogue, downloads, question readers, corpora, the corpus
  store, training examples
- :mod:`harness.results`    the result and checkpoint records, building a result, selecting and
  labelling results, the terminal table
- :mod:`harness.runfiles`   other systems' run files: formats, reading, writing, scoring
- :mod:`harness.evaluate`   running a retriever (and a re-ranker) on a suite
- :mod:`harness.analysis`   analyses over result files: paired comparisons, intervals, published
  numbers, ceilings, seen/unseen splits, plots
- :mod:`harness.board`      the leaderboard's markdown and HTML pages, built from result files
- :mod:`harness.cli`        the ``harness`` command line, a thin layer over the above
- :mod:`harness.testing`    helpers for plugin authors' tests

Imports go one way. No module imports one that imports it back, directly or through others;
``data`` and ``runfiles`` never import the runner (``evaluate``), ``results`` never imports
``analysis``, ``util`` never imports the plugin machinery (``tests/rules/test_architecture.py`` holds
these rules). Plugins (built-in ones included) import the core's public modules
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
    "harness.data.needs",
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

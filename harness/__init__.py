"""harness: a plugin-based benchmark harness for open-domain QA retrievers.

The public API lives in small modules with self-explaining names:

- :mod:`harness.types`     records (questions, passages, suites, specs) and the retriever protocol
- :mod:`harness.hookspecs` the extension points plugins implement
- :mod:`harness.registry`  looking plugins' retrievers, suites and metrics up by name
- :mod:`harness.matching`  DPR's ``has_answer`` (string and regex modes)
- :mod:`harness.scoring`   first-hit ranks and top-k accuracy
- :mod:`harness.evaluate`  running a retriever on a suite
- :mod:`harness.results`   the result file schema
- :mod:`harness.leaderboard` rendering results as markdown
"""

__version__ = "0.1.0"

import pluggy

#: Decorator for plugin hook implementations: ``@harness.hookimpl``.
hookimpl = pluggy.HookimplMarker("harness")

__all__ = ["__version__", "hookimpl"]

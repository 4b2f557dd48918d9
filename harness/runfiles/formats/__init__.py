"""Run formats: one module per format, each a :class:`~harness.api.RunFormatSpec` named ``SPEC``.

The core's formats are registered through the same ``register_run_formats`` hook as a plugin's
(:func:`register_run_formats`, registered by :func:`harness.plugins.new_plugin_manager` under the
core's name), so :mod:`harness.runfiles.registered` (lookup by name or alias, detection) sees the core's and
the plugins' formats alike, and a format's name and aliases are written only in its module.

The core's formats live in the core, not in a built-in plugin: their readers share the core's
reading engines (:mod:`harness.runfiles.columns`, :mod:`~harness.runfiles.split`,
:mod:`~harness.runfiles.stream`), and the core reads run files itself (published runs,
``harness reproduce --runs``), so scoring a file works with every plugin disabled.
"""

from __future__ import annotations

import importlib

from harness import hookimpl

#: The core's format modules, in this package.
CORE_FORMATS = (
    "trec", "dpr_json", "pyserini_json", "upr_json", "rankify_json",
    "tevatron", "ranx", "flashrag", "rankify_dataset", "rankify_reranked",
)


@hookimpl
def register_run_formats(register):
    for module in CORE_FORMATS:
        register(importlib.import_module(f"{__name__}.{module}").SPEC)


__all__ = ["CORE_FORMATS", "register_run_formats"]

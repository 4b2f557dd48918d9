"""``rankify-json``: Rankify's released runs (Hugging Face ``abdoelsayed/reranking-datasets`` and
``-light``).

DPR's list shape, ids integers or strings, contexts ``{"id", "score", "has_answer", "title"?,
"text"?}`` (the light files carry no text), an optional ``query_id``. Items are matched to the
suite by question text (with or without the ``?`` Rankify's ``Question`` appends). Always read as
a stream (:mod:`harness.runfiles.stream`).
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.stream import iter_entries


def entries(body, name, chunk):
    return iter_entries(body, name, SPEC.name, chunk)


SPEC = RunFormatSpec(
    name="rankify-json",
    description="Rankify's released runs (DPR's list shape, integer ids), matched by question text",
    aliases=("rankify",),
    entries=entries,
    match="text",
    homepage="https://github.com/DataScienceUIBK/Rankify",
)

"""``rankify-json``: Rankify's released runs (Hugging Face ``abdoelsayed/reranking-datasets`` and
``-light``).

DPR's list shape, ids integers or strings, contexts ``{"id", "score", "has_answer", "title"?,
"text"?}`` (the light files carry no text), an optional ``query_id``. Items are matched to the
suite by question text (with or without the ``?`` Rankify's ``Question`` appends). Always read as
a stream (:mod:`harness.runfiles.stream`).
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.stream import JsonLayout, iter_entries

LAYOUT = JsonLayout("list", 'expected a JSON list of {"question", "answers", "ctxs"} objects (rankify-json)', ("ctxs",))


def entries(body, name, chunk):
    return iter_entries(body, name, LAYOUT, chunk)


SPEC = RunFormatSpec(
    name="rankify-json",
    description="Rankify's released runs (DPR's list shape, integer ids), matched by question text",
    aliases=("rankify",),
    entries=entries,
    match="text",
    homepage="https://github.com/DataScienceUIBK/Rankify",
)

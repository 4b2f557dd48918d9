"""``upr-json``: UPR's first-stage outputs (``utils/download_data.py`` of
DevSinghSachan/unsupervised-passage-reranking).

A list of ``{"question", "answers", "ctxs"}`` (``"contexts"`` accepted too), contexts ``{"id",
"score"?, "has_answer"}`` without text (the suite's corpus gives it); ids integers or strings;
``score`` may be absent in every context of a question, which then keeps its file order. Items are
matched to the suite by question text; an object ``{qid: ...}`` (UPR's BM25 files come from
pyserini) by qid. Always read as a stream (:mod:`harness.runfiles.stream`).
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.stream import JsonLayout, iter_entries

LAYOUT = JsonLayout(None, "", ("ctxs", "contexts"), unscored=True)


def entries(body, name, chunk):
    return iter_entries(body, name, LAYOUT, chunk)


SPEC = RunFormatSpec(
    name="upr-json",
    description="UPR's released first-stage runs (DPR's list shape, no texts), matched by question text",
    aliases=("upr",),
    entries=entries,
    match="text",
    homepage="https://github.com/DevSinghSachan/unsupervised-passage-reranking",
)

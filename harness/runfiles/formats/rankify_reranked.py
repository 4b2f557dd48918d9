"""``rankify-reranked``: The same files' re-ranked contexts, ``"reranked_ctxs"`` (``save_dataset(...,
save_reranked=True)``): the list order is the ranking and scores are not used, since a
listwise re-ranker reorders contexts and keeps their first-stage scores.

Never detected: the same files are detected as ``rankify-dataset``; name it with ``--format``.
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.othertools import item_entries


def locate(record, fail):
    if "reranked_ctxs" not in record:
        fail("missing 'reranked_ctxs' (Rankify's save_dataset(..., save_reranked=True) writes it)")
    return record.get("query_id", record.get("id")), record.get("answers"), "reranked_ctxs", record["reranked_ctxs"]


def entries(body, name, chunk):
    return item_entries(body, name, chunk, locate, ordered=True)


SPEC = RunFormatSpec(
    name="rankify-reranked",
    description="Rankify's saved documents' re-ranked contexts (reranked_ctxs); the list order is the ranking",
    entries=entries,
    match="record",
    question_suffix="?",
    homepage="https://github.com/DataScienceUIBK/Rankify",
)

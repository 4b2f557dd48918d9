"""``rankify-dataset``: Rankify's saved documents: ``Dataset.save_dataset`` / ``Dataset.save_documents`` in
``rankify/dataset/dataset.py`` of DataScienceUIBK/Rankify write, as a JSON list (``.json``)
or JSON lines (``.jsonl``), ``{"question", "answers", "ctxs": [Context.to_dict(), ...]}``
with ``Context.to_dict()`` = ``{"score", "has_answer", "id", "text"?, "title"?}`` (text and
title only with ``save_text=True``); ``Document.to_dict()`` writes the same under
``"contexts"``. Contexts are best first; ids integers or strings; scores numbers (then
descending) or null for every context of a question (then the list order is the ranking).
Rankify's ``Question`` appends ``?`` to a question that lacks one, so a question matches the
suite's question with or without that added ``?``. The released runs Rankify downloads (DPR's
shape with ``query_id``) are the ``rankify-json`` format.
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.othertools import item_entries, item_keys, json_head


def locate(record, fail):
    key = next((k for k in ("ctxs", "contexts") if k in record), None)
    if key is None:
        fail("missing 'ctxs' (or 'contexts'): the list of retrieved passages")
    return record.get("query_id", record.get("id")), record.get("answers"), key, record[key]


def entries(body, name, chunk):
    return item_entries(body, name, chunk, locate)


def sniff(head: str, reopen) -> bool:
    """A JSON list whose first item has ``contexts`` or ``reranked_ctxs`` (not DPR's ``ctxs``
    only), or whose first context starts with ``score`` (the key order of Rankify's
    ``Context.to_dict``; DPR's starts with ``id``); JSON lines of items with contexts. Asked after
    ``flashrag``."""
    found = json_head(head, reopen)
    keys = item_keys(found)
    if keys is None:
        return False
    if not found.is_list:
        return bool(keys & {"ctxs", "contexts", "reranked_ctxs"})
    if "reranked_ctxs" in keys or ("contexts" in keys and "ctxs" not in keys):
        return True
    ctxs = found.value.get("ctxs")
    return isinstance(ctxs, list) and bool(ctxs) and isinstance(ctxs[0], dict) and next(iter(ctxs[0]), None) == "score"


SPEC = RunFormatSpec(
    name="rankify-dataset",
    description="Rankify's saved documents (Dataset.save_dataset): {question, answers, ctxs}, JSON or JSON lines",
    entries=entries,
    match="record",
    sniff=sniff,
    sniff_order=20,
    sniff_compressed=False,
    question_suffix="?",
    homepage="https://github.com/DataScienceUIBK/Rankify",
)

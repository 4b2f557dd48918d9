"""``flashrag``: FlashRAG's saved dataset (``intermediate_data.json``): ``Dataset.save`` in
``flashrag/dataset/dataset.py`` of RUC-NLPIR/FlashRAG writes a JSON list of ``Item.to_dict()``,
``{"id", "question", "golden_answers", "output": {"retrieval_result": [doc, ...], ...}}``,
where each doc is the corpus row the retriever returned (``flashrag/retriever/retriever.py``,
``load_docs``): ``{"id", "contents", ...}`` with ``contents`` = ``"Title"\\ntext``. JSON lines
of such items, and ``retrieval_result`` at the top level of an item, are read too. A doc's
``id`` is its passage id; the text matched is ``contents`` after its first line (FlashRAG's
own ``format_reference`` split; a doc's ``text`` key, where there is one, wins), or the suite
corpus's text where ``contents`` has no newline. ``score`` (which FlashRAG keeps only in its
retrieval cache) is optional: given for every doc of an item it must be numeric and
descending, absent from every doc the list order is the ranking. Docs without ``id`` (what
FlashRAG's BM25 returns from a pyserini index that stores contents) cannot be scored.
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.othertools import item_entries, item_keys, json_head

#: Keys only FlashRAG's items have.
KEYS = frozenset({"golden_answers", "retrieval_result", "output"})


def locate(record, fail):
    output = record.get("output")
    if isinstance(output, dict) and "retrieval_result" in output:
        key, docs = "output.retrieval_result", output["retrieval_result"]
    elif "retrieval_result" in record:
        key, docs = "retrieval_result", record["retrieval_result"]
    else:
        fail("missing 'retrieval_result' (FlashRAG's Dataset.save writes it in 'output')")
    return record.get("id"), record.get("golden_answers"), key, docs


def entries(body, name, chunk):
    return item_entries(body, name, chunk, locate, contents=True)


def sniff(head: str, reopen) -> bool:
    """A JSON list or JSON lines whose first item has FlashRAG's keys."""
    keys = item_keys(json_head(head, reopen))
    return keys is not None and bool(keys & KEYS)


SPEC = RunFormatSpec(
    name="flashrag",
    description="FlashRAG's saved items (intermediate_data.json) with output.retrieval_result",
    entries=entries,
    match="record",
    sniff=sniff,
    sniff_order=10,
    sniff_compressed=False,
    homepage="https://github.com/RUC-NLPIR/FlashRAG",
)

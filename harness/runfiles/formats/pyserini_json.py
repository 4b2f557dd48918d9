"""``pyserini-json``: pyserini's DPR-run file (``convert_trec_run_to_dpr_retrieval_run.py``).

``{qid: {"question", "answers", "contexts": [{"docid", "score", "has_answer", "text"?}]}}``,
contexts best first. Questions are named by qid (suite ids, or positions as pyserini numbers DPR
topics). With ``--store-raw`` pyserini stores each passage's ``title + "\\n" + text``; the text
matched is its second line, as ``evaluate_dpr_retrieval.py`` does (a stored text without a newline
is an error). Read like ``dpr-json``: mapped whole, split when large, streamed when compressed.
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.readers import align, read_pyserini_json
from harness.runfiles import split as split_engine
from harness.runfiles.stream import JsonLayout, iter_entries

LAYOUT = JsonLayout(
    "object", 'expected a JSON object {qid: {"question", "answers", "contexts"}} (pyserini DPR run)', ("contexts",), ids=("docid",)
)


def read_whole(path, questions, allow_index):
    return align(read_pyserini_json(path), questions, path, SPEC.name, allow_index, shape=LAYOUT.shape)


def split(path, questions, **options):
    return split_engine.score_json_split(path, questions, LAYOUT.shape, **options)


def entries(body, name, chunk):
    return iter_entries(body, name, LAYOUT, chunk)


SPEC = RunFormatSpec(
    name="pyserini-json",
    description="pyserini's DPR-run JSON: {qid: {question, answers, contexts: [{docid, score, text?}]}}",
    aliases=("pyserini",),
    entries=entries,
    match="items",
    sniff=lambda head, reopen: head[0] == "{",
    sniff_order=900,
    whole=read_whole,
    split=split,
    homepage="https://github.com/castorini/pyserini",
)

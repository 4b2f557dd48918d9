"""``dpr-json``: DPR's results file (``dense_retriever.py``'s ``save_results``).

``[{"question", "answers", "ctxs": [{"id", "title", "text", "score", "has_answer"}]}]``. Items
are positional (item *i* answers the suite's question *i*, and its ``question`` must equal the
suite's), ``ctxs`` best first; scores numbers or numeric strings (DPR writes strings). The text
matched is the ctx's ``text`` (never its title), as DPR does. A plain file is memory-mapped and
decoded whole (a large one scored in two halves); a compressed one is streamed.
"""

from __future__ import annotations

from harness.api import RunFormatSpec
from harness.runfiles.readers import align, read_dpr_json
from harness.runfiles import split as split_engine
from harness.runfiles.stream import JsonLayout, iter_entries

LAYOUT = JsonLayout("list", 'expected a JSON list of {"question", "answers", "ctxs"} objects (dpr-json)', ("ctxs",))


def read_whole(path, questions, allow_index):
    return align(read_dpr_json(path), questions, path, SPEC.name, allow_index, shape=LAYOUT.shape)


def split(path, questions, **options):
    return split_engine.score_json_split(path, questions, LAYOUT.shape, **options)


def entries(body, name, chunk):
    return iter_entries(body, name, LAYOUT, chunk)


SPEC = RunFormatSpec(
    name="dpr-json",
    description="DPR's results JSON: [{question, answers, ctxs: [{id, title, text, score, has_answer}]}]",
    aliases=("dpr",),
    entries=entries,
    match="items",
    sniff=lambda head, reopen: head[0] == "[",
    sniff_order=900,
    whole=read_whole,
    split=split,
    homepage="https://github.com/facebookresearch/DPR",
)

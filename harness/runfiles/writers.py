"""Writing run files: TREC runs, DPR results JSON and pyserini DPR-run JSON (see :mod:`harness.runfiles.readers`
for the formats). Every writer is atomic (:mod:`harness.util.atomic`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.util.atomic import write_text_atomic
from harness.errors import HarnessError
from harness.runfiles.ranks import check_aligned, corpus_passage
from harness.runfiles.model import Run, RunHit
from harness.api import Corpus, MatchMode, Question



def _score_text(score: float) -> str:
    return repr(float(score))


# One question per line: json's C encoder is only used without ``indent``, and DPR-sized files
# (thousands of questions, 100 passages each) take many times longer to write indented.


def _json_list(items: Sequence[Any]) -> str:
    return "[\n" + ",\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n]\n"


def _json_object(mapping: Mapping[str, Any]) -> str:
    body = ",\n".join(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}" for key, value in mapping.items())
    return "{\n" + body + "\n}\n"


def write_trec(path: str | Path, run: Run, *, tag: str = "harness") -> Path:
    """Write ``run`` as a TREC run (ranks from 1; questions without hits have no lines)."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"TREC run tag must be one word, got {tag!r}")
    lines = []
    for qid, hits in run.rankings.items():
        if not qid or any(c.isspace() for c in qid):
            raise HarnessError(f"question id {qid!r} cannot be written to a TREC run (whitespace)")
        for rank, hit in enumerate(hits, start=1):
            if any(c.isspace() for c in hit.passage_id):
                raise HarnessError(f"passage id {hit.passage_id!r} cannot be written to a TREC run (whitespace)")
            lines.append(f"{qid} Q0 {hit.passage_id} {rank} {_score_text(hit.score)} {tag}\n")
    return write_text_atomic(path, "".join(lines))


def _title_text(hit: RunHit, corpus: Corpus | None, run: Run) -> tuple[str, str]:
    if corpus is not None:
        passage = corpus_passage(corpus, hit.passage_id, run)
        return passage.title, passage.text
    if hit.text is None:
        raise HarnessError(f"passage {hit.passage_id!r}: no text in the run and no corpus given")
    return hit.title or "", hit.text


def _flags(question: Question, texts: Sequence[str], mode: MatchMode, cache: dict[str, str]) -> list[bool]:
    from harness.scoring.matching import AnswerMatcher, prepare

    matcher = AnswerMatcher(question.answers, mode=mode)
    out = []
    for text in texts:
        prepared = cache.get(text)
        if prepared is None:
            prepared = cache[text] = prepare(text, mode)
        out.append(matcher.matches_prepared(prepared))
    return out


def write_dpr_json(
    path: str | Path,
    run: Run,
    questions: Sequence[Question],
    corpus: Corpus | None,
    *,
    mode: MatchMode,
    id_prefix: str = "",
) -> Path:
    """Write ``run`` as DPR results JSON, one item per question in order (as DPR's ``save_results``).

    Titles and texts come from ``corpus`` (or, with ``corpus=None``, from the run); ``has_answer``
    is computed with :mod:`harness.scoring.matching` on the text only, as DPR does; scores are written as
    strings, as DPR does. ``id_prefix="wiki:"`` writes ids the way current DPR does.
    """
    check_aligned(run, questions)
    cache: dict[str, str] = {}
    items = []
    for question in questions:
        hits = run.rankings[question.id]
        passages = [_title_text(hit, corpus, run) for hit in hits]
        flags = _flags(question, [text for _title, text in passages], mode, cache)
        items.append(
            {
                "question": question.text,
                "answers": list(question.answers),
                "ctxs": [
                    {
                        "id": id_prefix + hit.passage_id,
                        "title": title,
                        "text": text,
                        "score": _score_text(hit.score),
                        "has_answer": flag,
                    }
                    for hit, (title, text), flag in zip(hits, passages, flags)
                ],
            }
        )
    return write_text_atomic(path, _json_list(items))


def write_pyserini_json(
    path: str | Path,
    run: Run,
    questions: Sequence[Question],
    corpus: Corpus | None,
    *,
    mode: MatchMode,
    store_text: bool = True,
    has_answer: bool = True,
) -> Path:
    """Write ``run`` as pyserini's DPR-run JSON (as ``convert_trec_run_to_dpr_retrieval_run.py``).

    Keys are question ids; questions without hits are left out (pyserini only writes questions
    its TREC run has). ``store_text`` stores ``title + "\\n" + text`` (pyserini's ``--store-raw``);
    ``has_answer`` adds flags computed on the text only (as pyserini's converter does). Titles
    and texts containing a newline are refused: pyserini's format cannot hold them.
    """
    check_aligned(run, questions)
    cache: dict[str, str] = {}
    out: dict[str, Any] = {}
    for question in questions:
        hits = run.rankings[question.id]
        if not hits:
            continue
        passages = [_title_text(hit, corpus, run) for hit in hits] if (store_text or has_answer) else []
        for hit, (title, text) in zip(hits, passages):
            if "\n" in title or "\n" in text:
                raise HarnessError(f"passage {hit.passage_id!r}: a newline in its title or text cannot be stored as title\\ntext")
        flags = _flags(question, [text for _title, text in passages], mode, cache) if has_answer else []
        contexts = []
        for i, hit in enumerate(hits):
            ctx: dict[str, Any] = {"docid": hit.passage_id, "score": _score_text(hit.score)}
            if store_text:
                ctx["text"] = passages[i][0] + "\n" + passages[i][1]
            if has_answer:
                ctx["has_answer"] = flags[i]
            contexts.append(ctx)
        out[question.id] = {"question": question.text, "answers": list(question.answers), "contexts": contexts}
    return write_text_atomic(path, _json_object(out))


__all__ = ["write_dpr_json", "write_pyserini_json", "write_trec"]

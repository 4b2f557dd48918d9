"""Write the run files of ``tests/data/tool_runs/`` through each tool's own writing code.

One fixed ranking over the built-in ``demo`` suite (12 questions spread over its parts, 6
passages each, chosen by answer matching so that first-hit ranks vary: 0, 1, ..., 5 or no hit) is
written by:

- Tevatron 0.1.0: ``tevatron.faiss_retriever.__main__.write_ranking`` (what ``python -m
  tevatron.faiss_retriever ... --save_text`` calls) -> ``tevatron.rank.txt``;
- ranx 0.3.21: ``ranx.Run.save`` -> ``ranx.run.json`` (JSON) and ``ranx.run.trec`` (TREC);
- FlashRAG (PyPI ``flashrag-dev`` 0.1.2; the PyPI name ``flashrag`` is another project):
  ``flashrag.dataset.dataset.Dataset.save`` of items loaded by FlashRAG's ``Dataset`` from a
  JSON lines question file, their ``retrieval_result`` set by ``Dataset.update_output`` ->
  ``flashrag.intermediate_data.json``;
- Rankify 0.1.4: ``rankify.dataset.dataset.Dataset.save_dataset(..., save_reranked=True)`` ->
  ``rankify.dataset.json`` (string ids, no texts, ``reranked_ctxs``), and
  ``Dataset.save_documents(..., save_text=True)`` -> ``rankify.documents.jsonl`` (integer ids,
  passage texts and titles).

Every ``has_answer`` flag written (Rankify's contexts) is ``true``, whatever the passage says, so a
reader that trusted them would score every question a hit at rank 0. Beside them:
``ranking.trec`` (the same ranking as a TREC run, written here), ``reranked.trec`` (the order of
Rankify's ``reranked_ctxs``: each question's passages reversed, keeping their first-stage
scores, as a listwise re-ranker does) and ``PROVENANCE.json`` (for each file: tool, distribution,
version, writer, the harness format that reads it and the TREC run it must score like).

The tools are installed into a throwaway folder, never into the project's environment; the
script runs with the project's Python (harness, numpy, pandas, faiss-cpu, orjson, scipy, rich,
requests, tqdm, matplotlib are already there) and that folder on ``PYTHONPATH``. From the
repository root::

    python -m pip install --no-deps --target /tmp/toolsite \\
        tevatron==0.1.0 flashrag-dev==0.1.2 rankify==0.1.4 prettytable==3.11.0 wcwidth==0.9.4 \\
        ranx==0.3.21 numba==0.68.1 llvmlite==0.50.0 lz4==4.4.5 cbor2==6.3.0 \\
        ir-datasets==0.6.3 seaborn==0.13.2
    PYTHONPATH=/tmp/toolsite python scripts/make_tool_runs.py [--output tests/data/tool_runs]
    rm -rf /tmp/toolsite

(``--no-deps``: the tools' own requirements pin torch, transformers, vllm and the like, which
their writers do not import.) ``HOME`` is pointed at a temporary folder while the tools are
imported, since ``import rankify`` creates ``~/.cache/rankify`` and ``import ranx`` (through
ir_datasets) ``~/.ir_datasets``. With the same ``PYTHONPATH``, ``python -m pytest
tests/core/runfiles/test_other_tool_runs.py`` also runs the tests that write files with the installed tools
(skipped without them) and compares those with the committed ones.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "tests" / "data" / "tool_runs"

QUESTIONS = 12
HITS = 6
#: The position each question's one answer-bearing passage is put at (None: no such passage).
FIRST_HIT = (0, 2, None, 1, 5, 0, 4, None, 3, 5, 2, 1)

#: The PyPI distribution of each tool, and the version the files are written with.
DISTRIBUTIONS = {
    "tevatron": ("tevatron", "0.1.0"),
    "ranx": ("ranx", "0.3.21"),
    "flashrag": ("flashrag-dev", "0.1.2"),
    "rankify": ("rankify", "0.1.4"),
}


def score(n: int, i: int) -> float:
    """Question ``n``'s score at position ``i``: distinct, descending, exact in binary (float32 too)."""
    return 90.0 - 2.5 * i - 0.25 * n


@dataclass
class Fixed:
    """A ranking to write: the suite, its question ids in order, and each one's passages and
    scores, best first."""

    suite: Any
    qids: list[str]
    rankings: dict[str, list[str]]
    scores: dict[str, list[float]]

    def question(self, qid: str):
        return next(q for q in self.suite.questions if q.id == qid)

    @classmethod
    def from_trec(cls, suite, path: Path) -> "Fixed":
        """The ranking of a TREC run (``ranking.trec``), its lines in rank order."""
        rankings: dict[str, list[str]] = {}
        scores: dict[str, list[float]] = {}
        for line in Path(path).read_text().splitlines():
            qid, _q0, pid, _rank, value, _tag = line.split()
            rankings.setdefault(qid, []).append(pid)
            scores.setdefault(qid, []).append(float(value))
        return cls(suite, list(rankings), rankings, scores)


def fixed_ranking(suite) -> Fixed:
    """:data:`QUESTIONS` questions spread over the suite, each with its answer-bearing passage at
    :data:`FIRST_HIT` among passages without any answer."""
    from harness.scoring.matching import AnswerMatcher

    passages = list(suite.corpus)
    stride = len(suite.questions) // QUESTIONS
    rankings = {}
    for n, question in enumerate(suite.questions[::stride][:QUESTIONS]):
        matcher = AnswerMatcher(question.answers, mode=suite.match)
        good = next(p.id for p in passages if matcher.matches_text(p.text))
        others: list[str] = []
        start = (n * 613) % len(passages)
        for k in range(len(passages)):
            p = passages[(start + k) % len(passages)]
            if not matcher.matches_text(p.text):
                others.append(p.id)
                if len(others) == HITS:
                    break
        position = FIRST_HIT[n]
        pids = others[: HITS - 1] if position is not None else others
        if position is not None:
            pids.insert(position, good)
        rankings[question.id] = pids
    qids = list(rankings)
    scores = {qid: [score(n, i) for i in range(len(rankings[qid]))] for n, qid in enumerate(qids)}
    return Fixed(suite, qids, rankings, scores)


def write_trec(path: Path, rankings: dict[str, list[str]], scores: dict[str, list[float]], tag: str) -> None:
    with open(path, "w") as f:
        for qid, pids in rankings.items():
            for rank, (pid, value) in enumerate(zip(pids, scores[qid]), start=1):
                f.write(f"{qid} Q0 {pid} {rank} {value!r} {tag}\n")


def _record(name: str, tool: str, writer: str, fmt: str, ranking: str = "ranking.trec", **more) -> dict:
    dist = DISTRIBUTIONS[tool][0]
    return {"file": name, "tool": tool, "distribution": dist, "version": version(dist), "writer": writer,
            **more, "format": fmt, "ranking": ranking}


# ---- one writer per tool: each calls the tool's own code and returns what it wrote ---------------


def write_tevatron(out: Path, fixed: Fixed) -> list[dict]:
    """``tevatron.rank.txt``, by ``write_ranking`` given what Tevatron's ``search_queries``
    gives it: faiss's float32 scores and a string array of passage ids."""
    import numpy as np
    from tevatron.faiss_retriever.__main__ import write_ranking

    path = out / "tevatron.rank.txt"
    indices = np.array([fixed.rankings[q] for q in fixed.qids])
    scores = np.array([fixed.scores[q] for q in fixed.qids], dtype=np.float32)
    write_ranking(indices, scores, fixed.qids, str(path))
    return [_record(path.name, "tevatron", "tevatron.faiss_retriever.__main__.write_ranking", "tevatron")]


def write_ranx(out: Path, fixed: Fixed) -> list[dict]:
    """``ranx.run.json`` and ``ranx.run.trec``, by ``Run.save`` (the kind from the extension)."""
    from ranx import Run

    run = Run({q: dict(zip(fixed.rankings[q], fixed.scores[q])) for q in fixed.qids}, name="fixed")
    records = []
    for name, fmt in (("ranx.run.json", "ranx"), ("ranx.run.trec", "trec")):
        run.save(str(out / name))
        records.append(_record(name, "ranx", "ranx.Run.save", fmt))
    return records


def write_flashrag(out: Path, fixed: Fixed) -> list[dict]:
    """``flashrag.intermediate_data.json``: FlashRAG's ``Dataset`` loads the questions from a JSON
    lines file (ids as in FlashRAG's own test files, ``test_0``, ...), ``update_output`` stores
    each one's retrieved corpus rows (``{"id", "contents": '"Title"\\ntext'}``, as FlashRAG's
    corpora and retrievers give them) as ``retrieval_result``, and ``Dataset.save`` writes it."""
    from flashrag.dataset.dataset import Dataset

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "test.jsonl"
        source.write_text("".join(
            json.dumps({"id": f"test_{n}", "question": fixed.question(q).text, "golden_answers": list(fixed.question(q).answers)}) + "\n"
            for n, q in enumerate(fixed.qids)
        ))
        dataset = Dataset(config={"dataset_name": "demo"}, dataset_path=str(source))
    results = []
    for q in fixed.qids:
        rows = []
        for pid in fixed.rankings[q]:
            p = fixed.suite.corpus.get(pid)
            rows.append({"id": pid, "contents": f'"{p.title}"\n{p.text}'})
        results.append(rows)
    dataset.update_output("retrieval_result", results)
    path = out / "flashrag.intermediate_data.json"
    dataset.save(str(path))
    return [_record(path.name, "flashrag", "flashrag.dataset.dataset.Dataset.save", "flashrag")]


def write_rankify(out: Path, fixed: Fixed) -> list[dict]:
    """``rankify.dataset.json`` (``Dataset.save_dataset``: string ids, no texts, with
    ``reranked_ctxs``) and ``rankify.documents.jsonl`` (``Dataset.save_documents``: integer ids,
    texts). Every context's ``has_answer`` is true; each ``reorder_contexts`` is the contexts
    reversed, keeping their first-stage scores."""
    from rankify.dataset.dataset import Answer, Context, Dataset, Document, Question

    def documents(ids_as_int: bool) -> list:
        made = []
        for q in fixed.qids:
            contexts = []
            for pid, value in zip(fixed.rankings[q], fixed.scores[q]):
                p = fixed.suite.corpus.get(pid)
                contexts.append(Context(score=value, has_answer=True, id=int(pid) if ids_as_int else pid, title=p.title, text=p.text))
            question = fixed.question(q)
            doc = Document(question=Question(question.text), answers=Answer(list(question.answers)), contexts=contexts)
            doc.reorder_contexts = contexts[::-1]
            made.append(doc)
        return made

    saved = Dataset(retriever="bm25", dataset_name="demo", n_docs=HITS)
    saved.documents = documents(ids_as_int=False)
    path = out / "rankify.dataset.json"
    saved.save_dataset(str(path), save_reranked=True, save_text=False)
    call = "save_dataset(path, save_reranked=True, save_text=False)"
    writer = "rankify.dataset.dataset.Dataset.save_dataset"
    records = [_record(path.name, "rankify", writer, "rankify-dataset", call=call),
               _record(path.name, "rankify", writer, "rankify-reranked", "reranked.trec", call=call)]
    path = out / "rankify.documents.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):  # save_documents prints a line
        Dataset.save_documents(documents(ids_as_int=True), str(path), save_reranked=False, save_text=True)
    records.append(_record(path.name, "rankify", "rankify.dataset.dataset.Dataset.save_documents", "rankify-dataset",
                           call="save_documents(documents, path, save_reranked=False, save_text=True)"))
    return records


#: Each tool's writer.
WRITERS = {"tevatron": write_tevatron, "ranx": write_ranx, "flashrag": write_flashrag, "rankify": write_rankify}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    out: Path = args.output
    out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home  # rankify (its cache folder) and ranx write under ~
        os.environ["RERANKING_CACHE_DIR"] = os.path.join(home, "rankify")
        problems = []
        for tool, (dist, want) in DISTRIBUTIONS.items():
            try:
                have = version(dist)
            except PackageNotFoundError:
                problems.append(f"{dist} is not installed")
                continue
            if have != want:
                problems.append(f"{dist} {have} is installed, not {want}")
        if problems:
            print(f"make_tool_runs: {'; '.join(problems)}: install the tools as this script's docstring says", file=sys.stderr)
            return 1

        from harness import registry

        fixed = fixed_ranking(registry.suites().get("demo").load())
        write_trec(out / "ranking.trec", fixed.rankings, fixed.scores, "fixed")
        # the order of Rankify's reranked_ctxs, its scores descending
        write_trec(out / "reranked.trec", {q: p[::-1] for q, p in fixed.rankings.items()}, fixed.scores, "reranked")
        files = [record for write in WRITERS.values() for record in write(out, fixed)]

    provenance = {
        "written_by": "scripts/make_tool_runs.py",
        "suite": "demo",
        "questions": fixed.qids,
        "hits": HITS,
        "has_answer": "every flag written is true, whatever the passage says",
        "files": files,
    }
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n")
    for name in sorted({entry["file"] for entry in files} | {"ranking.trec", "reranked.trec", "PROVENANCE.json"}):
        print(f"{out / name}  {(out / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Test helpers: read the real question sets under ``../shared/data`` and build generated runs.

The data folder is found by ``helpers.real_data`` (``../shared/data``, a fetched copy, or a fetch
now); tests that need it skip with a clear reason when none is there.
Question files are read the way PROTOCOL section 3 prescribes: the "TSV" files with
``csv.reader(f, delimiter="\\t")`` and ``ast.literal_eval`` on the answer list, the JSONL files
with ``json``, EntityQuestions as one JSON list per relation.
"""

from __future__ import annotations

import ast
import csv
import json
import random
from dataclasses import dataclass
from pathlib import Path

from helpers.real_data import real_data_dir

QA = list[tuple[str, list[str]]]


def shared_data_dir() -> Path:
    """The real question sets' folder (``helpers.real_data``), or skip the calling test."""
    return real_data_dir()


def read_tsv(path: Path) -> QA:
    """A DPR ``*.qa.csv``-style file: ``question \\t ['a', 'b']``, CSV-quoted, no header."""
    out: QA = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f, delimiter="\t"):
            if not row:
                continue
            question, answers = row[0], ast.literal_eval(row[1])
            out.append((question, list(answers)))
    return out


def read_jsonl(path: Path, key: str = "answer") -> QA:
    out: QA = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                out.append((record["question"], list(record[key])))
    return out


def read_entityquestions(folder: Path) -> dict[str, QA]:
    """Every relation file of one EntityQuestions split folder, by relation id."""
    out: dict[str, QA] = {}
    for path in sorted(folder.glob("P*.json")):
        with open(path, encoding="utf-8") as f:
            out[path.name.split(".")[0]] = [(r["question"], list(r["answers"])) for r in json.load(f)]
    return out


def _eq_test(data: Path) -> QA:
    return [qa for rel in read_entityquestions(data / "entityquestions" / "test").values() for qa in rel]


#: The string-mode question sets, by name: how to read each from the data folder.
STRING_SETS = {
    "nq-dpr-test": lambda d: read_tsv(d / "dpr-qas" / "topics.dpr.nq.test.txt"),
    "nq-open-test": lambda d: read_tsv(d / "dpr-qas" / "topics.nq.test.txt"),
    "nq-open-dev-jsonl": lambda d: read_jsonl(d / "nq-open" / "NQ-open.dev.jsonl"),
    "trivia-test": lambda d: read_tsv(d / "dpr-qas" / "topics.dpr.trivia.test.txt"),
    "wq-test": lambda d: read_jsonl(d / "dpr-qas" / "topics.dpr.wq.test.txt"),
    "squad-test": lambda d: read_jsonl(d / "dpr-qas" / "topics.dpr.squad.test.txt"),
    "entityquestions-test": _eq_test,
}

_CACHE: dict[str, QA] = {}


def load_set(name: str) -> QA:
    """A question set as ``[(question, answers)]`` (skips the test when the data is missing)."""
    if name not in _CACHE:
        data = shared_data_dir()
        if name == "curated-test":
            _CACHE[name] = read_jsonl(data / "dpr-qas" / "topics.dpr.curated.test.txt")
        else:
            _CACHE[name] = STRING_SETS[name](data)
    return _CACHE[name]


# ---- a generated retrieval run over real questions --------------------------------------------


@dataclass
class GeneratedRun:
    """Real questions, generated passages, and a ranking of passage ids for every question."""

    questions: QA
    texts: dict[str, str]  # passage id -> text
    titles: dict[str, str]  # passage id -> title (never matched)
    rankings: list[list[str]]
    planted: list[int | None]  # rank at which an answer passage was placed, per question


def build_run(
    qa: QA,
    *,
    pool_size: int = 20_000,
    depth: int = 100,
    words_per_passage: int = 100,
    answer_passages: float = 0.35,
    planted_fraction: float = 0.8,
    seed: int = 0,
) -> GeneratedRun:
    """A realistic top-``depth`` run: ``pool_size`` passages of ``words_per_passage`` words.

    The vocabulary is the whitespace-split words of the questions and their answers. A fraction
    ``answer_passages`` of the pool has one real answer of some question spliced in at a random
    word position; for a fraction ``planted_fraction`` of questions one of their own answer
    passages is placed in the ranking at a rank drawn from a long-tailed distribution over
    ``0..depth-1``; the other ranks are random pool passages (which can also hit by chance).
    """
    rng = random.Random(seed)
    vocab = sorted({w for q, answers in qa for s in [q, *answers] for w in s.split()})
    n_answer = int(pool_size * answer_passages)
    texts: dict[str, str] = {}
    by_question: dict[int, list[str]] = {}
    for i in range(pool_size):
        words = rng.choices(vocab, k=words_per_passage)
        if i < n_answer:
            qi = i % len(qa)
            answers = qa[qi][1]
            if answers:
                answer = rng.choice(answers)
                pos = rng.randrange(words_per_passage)
                words[pos : pos + max(1, len(answer.split()))] = [answer]
                by_question.setdefault(qi, []).append(str(i))
        texts[str(i)] = " ".join(words)
    ids = list(texts)
    titles = {pid: " ".join(rng.choices(vocab, k=3)) for pid in ids}
    rankings: list[list[str]] = []
    planted: list[int | None] = []
    for qi in range(len(qa)):
        ranking = rng.sample(ids, depth)
        rank = None
        own = by_question.get(qi)
        if own and rng.random() < planted_fraction:
            rank = min(int(rng.expovariate(1 / 10)), depth - 1)
            pid = rng.choice(own)
            if pid in ranking:
                ranking.remove(pid)
                ranking.insert(rank, pid)
            else:
                ranking[rank] = pid
        rankings.append(ranking)
        planted.append(rank)
    return GeneratedRun(questions=qa, texts=texts, titles=titles, rankings=rankings, planted=planted)


# ---- a BM25-like run written as pyserini's DPR-run JSON ---------------------------------------

#: Cumulative share of questions whose first hit is within the top k in BM25 runs on NQ test
#: (pyserini's published BM25 numbers on wikipedia-dpr-100w, rounded), used to place hits.
BM25_LIKE_TOPK = {1: 0.22, 5: 0.44, 20: 0.63, 100: 0.78}

_PUNCT = [",", ".", ",", "(", ")", ";", ":", "'s", "-", "\u2013", '"']


def _first_hit_rank(rng: random.Random, depth: int) -> int | None:
    """A rank drawn so that top-k shares follow :data:`BM25_LIKE_TOPK` (uniform within a band)."""
    u = rng.random()
    lower = 0
    previous = 0.0
    for k, share in BM25_LIKE_TOPK.items():
        if u < share:
            return min(rng.randrange(lower, k), depth - 1)
        lower, previous = k, share
    return None


def bm25_like_pyserini_run(
    qa: QA,
    path: Path,
    *,
    depth: int = 100,
    pool_size: int = 112_000,
    words_per_passage: int = 100,
    seed: int = 0,
) -> dict:
    """Write a realistic pyserini DPR-run file (``{qid: {question, answers, contexts}}``) for ``qa``.

    Every question gets ``depth`` distinct passages of about ``words_per_passage`` words (words of
    the questions and answers, with Wikipedia-like punctuation), drawn from a shared pool of
    ``pool_size`` passages (so about 110,000 distinct passages for NQ test), each stored as
    ``title\\ntext`` as pyserini's ``--store-raw`` does. For each question a first-hit rank is drawn
    to follow BM25's top-k shares on NQ; a passage with one of its answers spliced in is put
    there, and the passages above it are pool passages that contain none of its answers as a
    plain substring (pool passages below can still hit). ``has_answer`` is not written, so
    pyserini's evaluator computes it. Returns ``{"planted": [rank or None], "distinct": n}``.
    """
    import json as _json

    rng = random.Random(seed)
    vocab = sorted({w.strip(",.?;:()\"'") for q, answers in qa for s in [q, *answers] for w in s.split()} - {""})

    def passage() -> str:
        words = rng.choices(vocab, k=words_per_passage)
        for i in range(0, words_per_passage, 9):
            j = i + rng.randrange(9)
            if j < words_per_passage:
                words[j] += rng.choice(_PUNCT)
        return " ".join(words)

    pool = [passage() for _ in range(pool_size)]
    lowered = [t.lower() for t in pool]
    titles = [" ".join(rng.choices(vocab, k=2)) for _ in range(pool_size)]
    planted: list[int | None] = []
    distinct: set[str] = set()
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for qi, (question, answers) in enumerate(qa):
            needles = [a.lower() for a in answers if a.strip()]
            rank = _first_hit_rank(rng, depth) if needles else None
            picks: list[int] = []
            chosen: set[int] = set()
            tries = 0
            while len(picks) < depth:
                p = rng.randrange(pool_size)
                tries += 1
                if p in chosen:
                    continue
                # An answer found in most passages (a short word) cannot be avoided: give up trying.
                if rank is not None and len(picks) < rank and tries < 50 * depth and any(n in lowered[p] for n in needles):
                    continue
                chosen.add(p)
                picks.append(p)
            contexts = []
            for position, p in enumerate(picks):
                docid, title, text = str(p), titles[p], pool[p]
                if position == rank:
                    words = text.split(" ")
                    at = rng.randrange(len(words))
                    words[at] = rng.choice(answers) + rng.choice(["", ",", ".", ""])
                    docid, text = f"a{qi}", " ".join(words)
                distinct.add(docid)
                contexts.append({"docid": docid, "score": round(40.0 - position * 0.1, 4), "text": f"{title}\n{text}"})
            planted.append(rank)
            record = {"question": question, "answers": answers, "contexts": contexts}
            f.write(f'{_json.dumps(str(qi))}: {_json.dumps(record, ensure_ascii=False)}')
            f.write(",\n" if qi < len(qa) - 1 else "\n")
        f.write("}\n")
    return {"planted": planted, "distinct": len(distinct)}

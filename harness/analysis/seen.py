"""Accuracy on test questions seen and unseen in training data (seed 000 §3.3, EntityQuestions).

Four splits of a suite's questions, each against the training questions and answers:

- ``relation``: for suites with several parts (EntityQuestions relations), a part is *seen* when a
  training question has that part's label (a ``label`` / ``relation`` / ``part`` field, or a file
  named after the part, e.g. ``P19.train.json``); when no training question has a label, when one
  follows the part's question pattern (two relations may share one). A part's pattern is
  the longest word prefix and suffix all its questions share (``Where was [X] born?``); a training
  question follows it when it starts with the prefix, ends with the suffix and has words between.
  Reported as macro averages over the seen parts and over the unseen ones.
- ``entity``: a question whose part has a pattern has an entity, the words between prefix and
  suffix; it is *seen* when those words occur, as consecutive words, in some training question.
- ``answer``: *seen* when one of the question's answers equals a training answer after SQuAD's
  answer normalisation (lowercase, punctuation and the articles a/an/the removed, whitespace
  collapsed), the answer-overlap test of Lewis et al. (2021).
- ``question``: *seen* when the normalised question text equals a training question's.

The ``entity``, ``answer`` and ``question`` splits are micro averages over the questions in each
subset (they cut across parts). Words are lowercased runs of letters, digits and apostrophes.
"""

from __future__ import annotations

import gzip
import io
import re
import string
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, InputFileError
from harness.util import jsonio

_WORD = re.compile(r"[\w']+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's ``normalize_answer``: lowercase, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class TrainingItem:
    question: str
    answers: tuple[str, ...]
    part: str | None


def _open_text(path: Path):
    raw = path.open("rb")
    if path.name.endswith(".gz"):
        raw = gzip.open(raw)
    return io.TextIOWrapper(raw, encoding="utf-8-sig")


def _item(value: Any, path: Path, line: int | None, part: str | None) -> TrainingItem:
    if not isinstance(value, dict) or not isinstance(value.get("question"), str):
        raise InputFileError(path, "each item must be an object with a 'question' string", line=line)
    answers = value.get("answers", value.get("answer", []))
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InputFileError(path, "'answers' must be a list of strings", line=line)
    label = value.get("label", value.get("relation", value.get("part", part)))
    return TrainingItem(value["question"], tuple(answers), label if isinstance(label, str) else part)


def read_training(path: Path, *, part_names: Sequence[str] = ()) -> Iterator[TrainingItem]:
    """Training questions from DPR's training JSON (``[{"question", "answers", ...}]``, streamed,
    optionally gzipped), JSON lines, or a DPR ``question<TAB>answers`` file (``.csv``/``.tsv``/``.txt``).

    A file whose name starts with a part's name followed by ``.``, ``_`` or ``-`` labels its items
    with that part unless they carry their own ``relation`` / ``part``.
    """
    if not path.is_file():
        raise HarnessError(f"{path}: no such training file")
    part = next((p for p in part_names if re.match(re.escape(p) + r"[._-]", path.name)), None)
    name = path.name.removesuffix(".gz")
    try:
        if name.endswith((".csv", ".tsv", ".txt")):
            from harness.data.questions import read_questions

            for q in read_questions(path, "dpr-tsv"):
                yield TrainingItem(q.text, q.answers, part)
        elif name.endswith(".jsonl"):
            with _open_text(path) as f:
                for number, line in enumerate(f, 1):
                    if line.strip():
                        yield _item(jsonio.loads(line, source=path, line=number), path, number, part)
        else:
            with _open_text(path) as f:
                for number, value in jsonio.iter_array(f, source=path, lines=True):
                    yield _item(value, path, number, part)
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        raise InputFileError(path, f"cannot read training data: {getattr(exc, 'strerror', None) or exc}") from None


def pattern(questions: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The longest word prefix and suffix every question shares, or None when they share neither
    or a question would have no words left between them (fewer than two questions: None)."""
    tokenized = [words(q) for q in questions]
    if len(tokenized) < 2:
        return None
    shortest = min(len(t) for t in tokenized)
    prefix = 0
    while prefix < shortest and all(t[prefix] == tokenized[0][prefix] for t in tokenized):
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and all(t[-1 - suffix] == tokenized[0][-1 - suffix] for t in tokenized):
        suffix += 1
    if prefix + suffix == 0 or any(len(t) <= prefix + suffix for t in tokenized):
        return None
    first = tokenized[0]
    return first[:prefix], first[len(first) - suffix:] if suffix else ()


def _follows(question: tuple[str, ...], p: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
    prefix, suffix = p
    return (
        len(question) > len(prefix) + len(suffix)
        and question[: len(prefix)] == prefix
        and (not suffix or question[-len(suffix):] == suffix)
    )


@dataclass
class Split:
    """One split: per question id, seen or not; ``macro`` when accuracy is averaged over parts."""

    kind: str
    seen: dict[str, bool]
    macro: bool = False
    parts_seen: list[str] = field(default_factory=list)


@dataclass
class SeenUnseen:
    ks: list[int]
    training: list[str]
    splits: list[Split]
    #: accuracy[system][split kind]["seen"|"unseen"][k] -> fraction (None when the subset is empty)
    accuracy: dict[str, dict[str, dict[str, dict[int, float | None]]]]
    counts: dict[str, tuple[int, int]]

    def to_json(self) -> dict[str, Any]:
        return {
            "training": self.training,
            "splits": {
                s.kind: {"seen": self.counts[s.kind][0], "unseen": self.counts[s.kind][1], "macro_over_parts": s.macro,
                         **({"parts_seen": s.parts_seen} if s.macro else {})}
                for s in self.splits
            },
            "accuracy": {
                system: {kind: {side: {str(k): v for k, v in by_k.items()} for side, by_k in sides.items()} for kind, sides in kinds.items()}
                for system, kinds in self.accuracy.items()
            },
        }


def splits_for(suite, training: Sequence[Path]) -> list[Split]:
    """Each question of the loaded ``suite`` marked seen or unseen in ``training``, per split."""
    part_names = [p.name for p in suite.parts]
    patterns = {p.name: pattern([q.text for q in p.questions]) for p in suite.parts}
    labelled: set[str] = set()
    followed: set[str] = set()
    answers: set[str] = set()
    questions: set[str] = set()
    train_words: list[tuple[str, ...]] = []
    for path in training:
        for item in read_training(Path(path), part_names=part_names):
            w = words(item.question)
            train_words.append(w)
            questions.add(" ".join(normalize_answer(item.question).split()))
            answers.update(normalize_answer(a) for a in item.answers)
            if item.part is not None:
                labelled.add(item.part)
            for name, p in patterns.items():
                if p is not None and name not in followed and _follows(w, p):
                    followed.add(name)
    splits: list[Split] = []
    if len(suite.parts) > 1:
        # labels, when the training data has them, are the relations; patterns only stand in for them
        # (two relations may share a question pattern: "Where is [X] located?")
        seen_parts = [n for n in part_names if (n in labelled if labelled else n in followed)]
        splits.append(Split("relation", {q.id: p.name in seen_parts for p in suite.parts for q in p.questions}, True, seen_parts))
    entities: dict[str, tuple[str, ...]] = {}
    for p in suite.parts:
        pat = patterns[p.name]
        if pat is None:
            continue
        for q in p.questions:
            w = words(q.text)
            if _follows(w, pat):
                entities[q.id] = w[len(pat[0]): len(w) - len(pat[1])]
    if entities:
        lengths = {len(e) for e in entities.values()}
        grams = {w[i: i + n] for w in train_words for n in lengths for i in range(len(w) - n + 1)}
        splits.append(Split("entity", {qid: e in grams for qid, e in entities.items()}))
    splits.append(Split("answer", {q.id: any(normalize_answer(a) in answers for a in q.answers) for q in suite.questions}))
    splits.append(Split("question", {q.id: " ".join(normalize_answer(q.text).split()) in questions for q in suite.questions}))
    return splits


def seen_unseen(systems, training: Sequence[Path], *, ks: Sequence[int]) -> SeenUnseen:
    """Accuracy of each compared system on each split's seen and unseen questions.

    The suite is loaded by name; its questions must be the ones the results were made on (same
    questions fingerprint), or this is an error.
    """
    from harness import registry
    from harness.analysis.stats import hits

    first = systems[0].result.data["suite"]
    suite = registry.load("suites", first["name"], {}).value
    if suite.questions_fingerprint != first["questions_fingerprint"]:
        raise HarnessError(
            f"suite {first['name']} now has other questions than the results were made on "
            f"({suite.questions_fingerprint} vs {first['questions_fingerprint']}); cannot split them"
        )
    splits = splits_for(suite, training)
    part_of = {q.id: p.name for p in suite.parts for q in p.questions}
    accuracy: dict[str, dict[str, dict[str, dict[int, float | None]]]] = {}
    counts = {s.kind: (sum(s.seen.values()), len(s.seen) - sum(s.seen.values())) for s in splits}
    for system in systems:
        ranks = {qid: r for part in system.result.ranks.values() for qid, r in part.items()}
        accuracy[system.label] = {}
        for split in splits:
            sides: dict[str, dict[int, float | None]] = {}
            for side, flag in (("seen", True), ("unseen", False)):
                ids = [qid for qid, s in split.seen.items() if s is flag]
                sides[side] = {}
                for k in ks:
                    if not ids:
                        sides[side][k] = None
                    elif split.macro:
                        by_part: dict[str, list[int | None]] = {}
                        for qid in ids:
                            by_part.setdefault(part_of[qid], []).append(ranks[qid])
                        sides[side][k] = sum(float(hits(r, k).mean()) for r in by_part.values()) / len(by_part)
                    else:
                        sides[side][k] = float(hits([ranks[qid] for qid in ids], k).mean())
            accuracy[system.label][split.kind] = sides
    return SeenUnseen(list(ks), [str(p) for p in training], splits, accuracy, counts)


def format_seen(result: SeenUnseen) -> str:
    """Tables of seen / unseen accuracy, one per split."""
    from tabulate import tabulate

    from harness.results.report import markdown_text

    lines = [f"Seen and unseen in {', '.join(markdown_text(t) for t in result.training)}:"]
    for split in result.splits:
        seen, unseen = result.counts[split.kind]
        how = "macro over parts" if split.macro else "over questions"
        lines += ["", f"{split.kind}: {seen} questions seen, {unseen} unseen ({how})"
                  + (f"; seen parts: {', '.join(markdown_text(x) for x in split.parts_seen) or 'none'}" if split.macro else "")]
        headers = ["system"] + [f"{side} top-{k}" for side in ("seen", "unseen") for k in result.ks]
        rows = [
            [markdown_text(system)] + ["–" if (v := kinds[split.kind][side][k]) is None else f"{100 * v:.2f}" for side in ("seen", "unseen") for k in result.ks]
            for system, kinds in result.accuracy.items()
        ]
        lines.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
    return "\n".join(lines) + "\n"

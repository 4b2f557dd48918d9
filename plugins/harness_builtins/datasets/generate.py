"""Synthetic training data: questions generated from corpus passages (PAQ, Lewis et al. 2021).

:func:`generate_questions` turns passages of a corpus into (passage, question, answer) triples
with a sequence-to-sequence question generator, keeps those that pass the filter below, adds BM25
hard negatives, and writes DPR's training format (:func:`harness.data.training.write_training_examples`).

Answer modes:

- ``extract``: answer candidates are taken from the passage text (:func:`extract_answers`), at most
  ``per_passage`` per passage (:func:`choose_answers`); the generator reads ``prompt`` with
  ``{answer}``, ``{title}`` and ``{text}`` filled in, and its output is the question.
- ``generate``: the generator reads ``prompt`` with ``{title}`` and ``{text}`` and writes
  ``question SEPARATOR answer`` (:func:`parse_output`); ``per_passage`` N returns N beams.

The filter (:func:`filter_pair`), in this order, each dropped triple counted under the first rule
it fails (:data:`DROP_REASONS`): ``unparsed`` (generate mode: no non-empty question and answer
around the separator), ``empty_question``, ``answer_not_in_passage`` (DPR's ``has_answer`` in
string mode on the passage text, :meth:`AnswerCheck.in_text`), ``answer_in_question`` (the same
rule on the question: it gives the answer away), ``duplicate`` (the same question and answer
already kept for this passage). Whitespace is collapsed to single spaces in questions and answers;
a question not ending in ``?`` gets one.

Progress is kept in ``OUTPUT.partial.jsonl``: first line the settings that change what is
generated, then one line per processed passage (its kept pairs and counts). A rerun with the same
settings goes on where a killed run stopped (a last line cut short is ignored); other settings are
an error, and so is a record naming a passage the corpus does not have (``file:line``). The output
is written whole at the end, then ``OUTPUT.meta.json``; then the partial file is removed.

One run at a time writes an output: a run holds an exclusive ``flock`` on ``OUTPUT.lock`` from
before it reads the partial file until it removed it; a second run into the same output stops
with one line. The lock file is removed when the run ends (a killed run leaves it, unlocked, and
the next run takes it).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import string
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from harness.api import (
    MAX_K,
    Corpus,
    Options,
    Passage,
    Question,
    Retriever,
    RunContext,
    TrainingExample,
    choice,
    non_negative_int,
    positive_int,
)
from harness.data.training import AnswerCheck, hard_negatives, write_training_examples
from harness.errors import HarnessError, UnknownNameError
from harness.scoring.matching import has_answer
from harness.util.atomic import write_text_atomic
from harness.util.models import ModelRef
from harness.util.progress import progress as progress_bar

from harness_builtins.common.devices import default_batch_size, resolve_device, resolve_precision

ANSWER_MODES = ("extract", "generate")

#: The settings of :func:`generate_questions` that stand alone, declared like a spec's options
#: (checked by :meth:`harness.api.Options.check`); the prompt, separator and label depend on the
#: answer mode or need more than a type, and are checked where they are used.
SETTINGS = Options({
    "answers": choice("extract", ANSWER_MODES),
    "per_passage": positive_int(1),
    "passages": positive_int(None),
    "negatives": non_negative_int(1),
    "depth": positive_int(100, max=MAX_K),
    "batch_size": positive_int(None),
    "max_new_tokens": positive_int(32),
    "num_beams": positive_int(1),
    "max_input_length": positive_int(512),
    "seed": non_negative_int(0),
})
#: The generator's input per mode (the common T5 question-generation conventions).
PROMPTS = {"extract": "answer: {answer} context: {title} {text}", "generate": "generate question and answer: {title} {text}"}
SEPARATOR = " answer: "
DROP_REASONS = ("unparsed", "empty_question", "answer_not_in_passage", "answer_in_question", "duplicate")
#: Recorded in the partial and meta files; bumped when the same settings would give other triples.
FORMAT = "generate-questions/2"
#: Lower-case words a name may hold between capitalised words ("Academy of Sciences").
CONNECTORS = frozenset("of the de del der du da di la le van von".split())
#: Capitalised words that open sentences without being names.
OPENERS = frozenset(
    "The A An In On At By For From To With Of As After Before During When While Since Although If "
    "He She It They We I You His Her Its Their Our My This That These Those There Here Some Many Most".split()
)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = re.compile(rf"\b(?:\d{{1,2}} (?:{_MONTHS})(?: \d{{4}})?|(?:{_MONTHS}) \d{{1,2}}(?:, \d{{4}})?|(?:{_MONTHS}) \d{{4}})\b")
_NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)")
_TOKEN = re.compile(r"\w+(?:[-'\u2019]\w+)*|\S")

#: Prompts in, per prompt one output (a string) or several (a sequence of strings) out.
Generate = Callable[[list[str]], Sequence["str | Sequence[str]"]]


def extract_answers(text: str) -> list[str]:
    """Answer candidates of a passage text, in order of first occurrence, each text once.

    - Dates: ``8 April 1953``, ``8 April``, ``April 8, 1953``, ``April 1953`` (English month names).
    - Numbers outside dates: digits with optional thousands commas and decimals (``1953``,
      ``41,603``, ``2.5``), not inside a word (``2010s`` and ``B12`` hold no number).
    - Names outside dates: maximal runs of capitalised words (words: letters and digits, with inner
      hyphens and apostrophes; capitalised: the first character is upper case). A run may hold up
      to two connectors (:data:`CONNECTORS`) in a row between capitalised words; punctuation ends
      it, as does a possessive ``'s`` (left out). A run that starts a sentence (the text's start,
      or the first word after ``.``, ``!`` or ``?``, so abbreviations such as ``St.`` end one too)
      loses its first word when that is one of :data:`OPENERS`, and is dropped when it is a single
      word otherwise (capitalised perhaps only for starting the sentence). Runs of openers only
      are dropped.
    """
    taken = [(m.start(), m.end()) for m in _DATE.finditer(text)]
    found = [(a, text[a:b]) for a, b in taken]

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    found += [(m.start(), m.group()) for m in _NUMBER.finditer(text) if free(m.start(), m.end())]
    run: list[tuple[int, int, str]] = []
    pending: list[tuple[int, int, str]] = []
    run_at_start = at_start = True

    def close() -> None:
        words = run[:]
        if run_at_start and words[0][2] in OPENERS:
            words = words[1:]
            while words and words[0][2] in CONNECTORS:  # "In the Netherlands": Netherlands
                words = words[1:]
        elif run_at_start and len(words) == 1:
            words = []
        if words and not all(w[2] in OPENERS for w in words) and free(words[0][0], words[-1][1]):
            found.append((words[0][0], text[words[0][0] : words[-1][1]]))
        run.clear()

    for m in _TOKEN.finditer(text):
        token, start, end = m.group(), m.start(), m.end()
        possessive = len(token) > 2 and token.endswith(("'s", "\u2019s"))
        if possessive:
            token, end = token[:-2], end - 2
        word = token[0].isalnum()
        if word and token[0].isupper():
            run_at_start = run_at_start if run else at_start
            run.extend(pending)
            run.append((start, end, token))
        elif run and token in CONNECTORS and len(pending) < 2:
            pending.append((start, end, token))
            continue
        elif run:
            close()
        pending.clear()
        if run and possessive:
            close()
        at_start = False if word else (True if token in ".!?" else at_start)
    if run:
        close()
    return list(dict.fromkeys(text for _, text in sorted(found)))


def choose_answers(passage: Passage, count: int, seed: int) -> list[str]:
    """At most ``count`` of the passage's :func:`extract_answers`: all when there are that few,
    else a sample drawn with ``random.Random(f"{seed}:{passage.id}")``, kept in passage order."""
    candidates = extract_answers(passage.text)
    if len(candidates) <= count:
        return candidates
    return [candidates[i] for i in sorted(random.Random(f"{seed}:{passage.id}").sample(range(len(candidates)), count))]


def parse_output(output: str, separator: str) -> tuple[str, str] | None:
    """Generate mode: ``(question, answer)`` from ``question SEPARATOR answer``, split at the first
    occurrence of ``separator.strip()`` (the separator's surrounding whitespace does not matter);
    ``None`` when it does not occur or a side is empty once whitespace is collapsed."""
    question, found, answer = output.partition(separator.strip())
    question, answer = " ".join(question.split()), " ".join(answer.split())
    return (question, answer) if found and question and answer else None


def question_text(question: str) -> str:
    """Whitespace collapsed to single spaces, ``?`` appended unless it ends with one (empty stays empty)."""
    question = " ".join(question.split())
    return question if not question or question.endswith("?") else question + "?"


def filter_pair(passage: Passage, question: str, answer: str, kept: set[tuple[str, str]]) -> str | None:
    """The first drop reason (:data:`DROP_REASONS` after ``unparsed``) that ``(question, answer)``
    meets for ``passage`` (the question through :func:`question_text` already), ``None`` when it
    is kept; ``kept`` holds the pairs already kept for this passage."""
    if not question.rstrip("?").strip():
        return "empty_question"
    if not AnswerCheck([answer], match="string").in_text(passage):
        return "answer_not_in_passage"
    if has_answer([answer], question, mode="string"):
        return "answer_in_question"
    return "duplicate" if (question, answer) in kept else None


@dataclass
class GenerationStats:
    """What :func:`generate_questions` did over the whole output (resumed passages included)."""

    passages: int = 0  # passages selected
    resumed: int = 0  # of those, read back from the partial file
    without_answers: int = 0  # extract mode: passages without an answer candidate
    outputs: int = 0  # generator outputs read
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    fewer_negatives: int = 0  # kept examples with fewer hard negatives than asked for
    seconds: float = 0.0  # this call's wall-clock time

    def summary(self) -> str:
        reasons = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in self.dropped.items())
        return f"{self.kept} kept from {self.passages} passages ({self.outputs} generated); dropped: {reasons}"


def load_generator(
    model: str | os.PathLike, *, revision: str | None = None, device: str = "auto", precision: str = "auto",
    max_new_tokens: int = 32, num_beams: int = 1, outputs: int = 1, max_input_length: int = 512, seed: int = 0,
    keep: str | None = None,
) -> Generate:
    """A :data:`Generate` function running the sequence-to-sequence ``model`` (hub id or directory)
    on ``device`` in ``precision``: per prompt a list of ``outputs`` texts; inputs truncated to
    ``max_input_length`` tokens, greedy (``num_beams`` 1) or beam search, at most ``max_new_tokens``
    new tokens, ``torch.manual_seed(seed)`` before each call, under ``torch.inference_mode``.
    Outputs are decoded without the tokenizer's special tokens (padding, start and end of sequence,
    ``[CLS]``, ...) except ``keep`` when it is one (a separator such as ``<sep>``)."""
    import torch

    from harness_builtins.common.seq2seq import load_seq2seq

    device = resolve_device(device)
    net, tokenizer = load_seq2seq(ModelRef(model, revision), device, resolve_precision(precision, device), who="question generator")
    drop = dropped_ids(tokenizer, keep) | ({net.config.decoder_start_token_id} - {None})

    def generate(prompts: list[str]) -> list[list[str]]:
        torch.manual_seed(seed)
        encoded = tokenizer(prompts, max_length=max_input_length, truncation=True, padding=True, return_tensors="pt")
        with torch.inference_mode():
            ids = net.generate(
                input_ids=encoded.input_ids.to(device), attention_mask=encoded.attention_mask.to(device),
                max_new_tokens=max_new_tokens, num_beams=num_beams, num_return_sequences=outputs, do_sample=False,
            )
        texts = decode(tokenizer, ids.tolist(), drop)
        return [texts[i * outputs : (i + 1) * outputs] for i in range(len(prompts))]

    return generate


def dropped_ids(tokenizer, keep: str | None = None) -> set[int]:
    """The token ids left out of generated text: every special token of ``tokenizer`` (padding,
    start and end of sequence, ``[CLS]``, ...) but ``keep`` when it is one."""
    kept = set(tokenizer.convert_tokens_to_ids([keep.strip()])) if keep and keep.strip() in tokenizer.all_special_tokens else set()
    return ({*tokenizer.all_special_ids, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id} - kept) - {None}


def decode(tokenizer, rows: list[list[int]], drop: set[int]) -> list[str]:
    """Each row of generated ids as text, without the ids in ``drop``."""
    return [tokenizer.decode([i for i in row if i not in drop]) for row in rows]


def open_corpus(corpus: str | os.PathLike | Corpus, *, cache_dir: str | os.PathLike | None = None,
                progress: bool = True) -> Corpus:
    """A :class:`Corpus` as it is; an existing DPR TSV or JSONL corpus file (``.tsv``, ``.jsonl``,
    either ``.gz``) through a corpus store built once under ``CACHE/corpora``; else a suite's corpus."""
    if isinstance(corpus, Corpus):
        return corpus
    text = os.fspath(corpus)
    path = Path(text).expanduser()
    base = Path(path.name.removesuffix(".gz"))
    formats = {".tsv": "dpr-tsv", ".jsonl": "jsonl"}
    if path.is_file():
        if base.suffix not in formats:
            raise HarnessError(f"{path}: a corpus file must be a DPR .tsv or a .jsonl (optionally .gz)")
        import hashlib

        from harness.data.corpus_store import open_or_build
        from harness.util.cache import cache_dir as default_cache_dir

        store = f"{base.stem}-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        return open_or_build(path, root / "corpora" / store, format=formats[base.suffix], name=base.stem, progress=progress)
    from harness import registry
    from harness.data.corpora import LazyCorpus

    try:
        opened = registry.load("suites", text, {}).value.corpus
        return opened.open() if isinstance(opened, LazyCorpus) else opened  # a store samples by row
    except UnknownNameError:
        if os.sep in text or base.suffix in formats:
            raise HarnessError(f"{text}: no such corpus file") from None
        raise


def _select(corpus: Corpus, count: int | None, seed: int) -> tuple[int, Iterator[Passage]]:
    """How many passages and which: all, or ``count`` positions drawn with
    ``random.Random(f"{seed}:passages")``; in corpus order either way."""
    if count is None or count >= len(corpus):
        return len(corpus), iter(corpus)
    chosen = sorted(random.Random(f"{seed}:passages").sample(range(len(corpus)), count))
    if hasattr(corpus, "passage_at"):  # a corpus store: straight to the rows
        return count, (corpus.passage_at(i) for i in chosen)
    wanted = set(chosen)
    return count, (p for i, p in enumerate(corpus) if i in wanted)


def _template(value: Any, fields: tuple[str, ...]) -> str:
    try:
        used = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None} if isinstance(value, str) else None
    except ValueError as exc:
        raise HarnessError(f"prompt: {value!r} is not a valid template ({exc})") from None
    if used != set(fields):
        raise HarnessError(f"prompt must be text using exactly {', '.join('{' + f + '}' for f in fields)}, got {value!r}")
    return value


def _resume(path: Path, settings: dict[str, Any]) -> bool:
    """Whether partial file ``path`` holds progress made with ``settings`` (a last line cut short
    is cut off); ``False`` when there is none (no file, or its first line cut short: removed);
    other settings are an error."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    end = data.rfind(b"\n") + 1
    if end == 0:
        path.unlink()
        return False
    try:
        recorded = json.loads(data[: data.index(b"\n")])["settings"]
    except (ValueError, KeyError, TypeError):
        recorded = None
    if recorded != settings:
        recorded = recorded if isinstance(recorded, dict) else {}
        differ = sorted(k for k in {*settings, *recorded} if settings.get(k) != recorded.get(k))
        raise HarnessError(f"{path} holds the progress of a run with other settings ({', '.join(differ)}); "
                           "delete it to start over, or write to another output")
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
    return True


@contextlib.contextmanager
def _output_lock(output: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``OUTPUT.lock`` while the run writes ``output`` and its partial
    and meta files (:func:`harness.util.atomic.exclusive_lock`, a sidecar removed at the end);
    another run holding it is a one-line error."""
    from harness.data.passages import write_error
    from harness.util.atomic import exclusive_lock

    lock = output.with_name(output.name + ".lock")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(output, exc) from None
    with exclusive_lock(lock, f"{output} is being written by another generate-questions run (it holds {lock.name}); "
                              "wait for it to end, or write to another output", sidecar=True):
        yield


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The passage records of a partial file (its lines after the first)."""
    for _number, record in _numbered_records(path):
        yield record


def _numbered_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for the passage records of a partial file (its lines after the first)."""
    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    with open(path, "rb") as f:
        for number, raw in enumerate(islice(f, 1, None), start=2):
            try:
                record = json.loads(raw.decode("utf-8"))
                if (not isinstance(record["id"], str) or not isinstance(record["kept"], list)
                        or any(not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, str) for x in pair) for pair in record["kept"])
                        or not count(record["outputs"]) or not (record["answers"] is None or count(record["answers"]))
                        or not isinstance(record["dropped"], dict)
                        or any(r not in DROP_REASONS or not count(n) for r, n in record["dropped"].items())):
                    raise TypeError
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                raise HarnessError(f"{path}:{number}: damaged progress record; delete the file to start over") from None
            yield number, record


def _unknown_passage(path: Path, number: int, passage_id: str, corpus: Corpus) -> HarnessError:
    return HarnessError(f"{path}:{number}: the progress record names passage {passage_id!r}, which corpus "
                        f"{corpus.name} does not have; delete the file to start over")


def _tally(stats: GenerationStats, record: dict[str, Any]) -> None:
    stats.kept += len(record["kept"])
    stats.outputs += record["outputs"]
    stats.without_answers += record["answers"] == 0
    for reason, n in record["dropped"].items():
        stats.dropped[reason] = stats.dropped.get(reason, 0) + n


def _process(group: list[Passage], run: Generate, *, answers: str, prompt: str, separator: str, per_passage: int,
             seed: int, batch_size: int) -> list[dict[str, Any]]:
    """The partial-file records of ``group``: its prompts generated ``batch_size`` at a time
    (shortest first), the outputs filtered."""
    records, items = [], []  # items: (record, passage, answer or None, prompt)
    for p in group:
        chosen = choose_answers(p, per_passage, seed) if answers == "extract" else None
        records.append({"id": p.id, "kept": [], "dropped": {}, "outputs": 0, "answers": None if chosen is None else len(chosen)})
        if chosen is None:
            items.append((records[-1], p, None, prompt.format(title=p.title, text=p.text)))
        items += [(records[-1], p, a, prompt.format(answer=a, title=p.title, text=p.text)) for a in chosen or ()]
    order = sorted(range(len(items)), key=lambda i: len(items[i][3]))
    outputs: list[list[str]] = [[] for _ in items]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        got = list(run([items[i][3] for i in chunk]))
        if len(got) != len(chunk):
            raise HarnessError(f"the generator returned {len(got)} outputs for {len(chunk)} prompts")
        for i, out in zip(chunk, got):
            outputs[i] = [out] if isinstance(out, str) else list(out)
    kept: dict[str, set[tuple[str, str]]] = {p.id: set() for p in group}
    for (record, passage, answer, _), texts in zip(items, outputs):
        for text in texts:
            record["outputs"] += 1
            pair = (text, answer) if answer is not None else parse_output(text, separator)
            if pair is not None:
                pair = (question_text(pair[0]), pair[1])
            reason = "unparsed" if pair is None else filter_pair(passage, *pair, kept[passage.id])
            if reason is None:
                kept[passage.id].add(pair)
                record["kept"].append(list(pair))
            else:
                record["dropped"][reason] = record["dropped"].get(reason, 0) + 1
    return records


def _examples(partial: Path, corpus: Corpus, *, label: str | None, negatives: int, depth: int, retriever: Retriever | None,
              name: str, context: RunContext, stats: GenerationStats) -> Iterator[TrainingExample]:
    """The kept triples of the partial file as training examples, hard negatives retrieved for
    4096 questions at a time."""
    from harness.evaluate import retrieve

    def finish(chunk: list[tuple[Passage, str, str]]) -> Iterator[TrainingExample]:
        rankings = [[]] * len(chunk)
        if negatives and chunk:
            questions = [Question(id=str(i), text=q, answers=(a,)) for i, (_, q, a) in enumerate(chunk)]
            rankings = retrieve(retriever, questions, depth, context, name=name, corpus=corpus)
        for (passage, question, answer), ranking in zip(chunk, rankings):
            found = hard_negatives((corpus.get(h.passage_id) for h in ranking), [answer], count=negatives, exclude=(passage,))
            stats.fewer_negatives += len(found) < negatives
            yield TrainingExample(question=question, answers=(answer,), positives=(passage,), hard_negatives=found, label=label)

    chunk: list[tuple[Passage, str, str]] = []
    for number, record in _numbered_records(partial):
        try:
            passage = corpus.get(record["id"])
        except KeyError:
            raise _unknown_passage(partial, number, record["id"], corpus) from None
        chunk += [(passage, q, a) for q, a in record["kept"]]
        if len(chunk) >= 4096:
            yield from finish(chunk)
            chunk = []
    yield from finish(chunk)


def generate_questions(
    corpus: str | os.PathLike | Corpus, generator: str | os.PathLike | None, *, output: str | os.PathLike,
    answers: str = "extract", prompt: str | None = None, separator: str = SEPARATOR, per_passage: int = 1,
    passages: int | None = None, negatives: int = 1, depth: int = 100, batch_size: int | None = None,
    max_new_tokens: int = 32, num_beams: int = 1, max_input_length: int = 512, seed: int = 0,
    label: str | None = "generated", revision: str | None = None, device: str = "auto", precision: str = "auto",
    generate: Generate | None = None, retriever: Retriever | None = None, cache_dir: str | os.PathLike | None = None,
    threads: int | None = None, progress: bool = True,
) -> GenerationStats:
    """Generate (passage, question, answer) triples from ``corpus`` and write them to ``output`` as
    DPR training examples (the module notes give the answer modes, the filter and resumption).

    ``corpus``: a suite name (its corpus), a corpus file (:func:`open_corpus`) or a :class:`Corpus`.
    ``generator``: a sequence-to-sequence model, hub id (``revision``) or directory, run by
    :func:`load_generator`. ``generate``, when given, is called instead of loading a model; then
    ``generator`` only names it in the recorded settings (``None``: the function's name).
    ``passages``: how many passages, a sample drawn with the seed (a corpus in article order would
    otherwise give its first articles only), processed in corpus order; default all. Per passage at
    most ``per_passage`` answers (extract) or beams (generate: needs ``num_beams >= per_passage``).
    ``batch_size`` passages are processed at a time (then recorded), their prompts given to the
    generator ``batch_size`` at a time, shortest first.

    Each kept triple is one example (positive: the passage; ``label``); its ``negatives`` hard
    negatives are the first passages of ``retriever``'s top ``depth`` for the question (default the
    registered ``bm25``) that :func:`harness.data.training.hard_negatives` accepts. Examples with
    fewer are kept and counted. Returns the counts, also written with the settings to
    ``OUTPUT.meta.json``.
    """
    started = time.perf_counter()
    checked = SETTINGS.check({
        "answers": answers, "per_passage": per_passage, "passages": passages, "negatives": negatives, "depth": depth,
        "batch_size": batch_size, "max_new_tokens": max_new_tokens, "num_beams": num_beams,
        "max_input_length": max_input_length, "seed": seed,
    }, where="generate-questions")
    per_passage, passages, negatives, depth = checked["per_passage"], checked["passages"], checked["negatives"], checked["depth"]
    max_new_tokens, num_beams, max_input_length = checked["max_new_tokens"], checked["num_beams"], checked["max_input_length"]
    batch_size, seed = checked["batch_size"], checked["seed"]
    fields = ("title", "text") if answers == "generate" else ("answer", "title", "text")
    prompt = _template(PROMPTS[answers] if prompt is None else prompt, fields)
    if answers == "generate" and (not isinstance(separator, str) or not separator.strip()):
        raise HarnessError(f"separator must be text other than whitespace, got {separator!r}")
    if answers == "generate" and per_passage > num_beams:
        raise HarnessError(f"generate mode returns per_passage beams: per_passage {per_passage} needs num_beams >= {per_passage}")
    if label is not None and not (isinstance(label, str) and label.strip()):
        raise HarnessError(f"label must be non-empty text, got {label!r}")
    if generate is None and generator is None:
        raise HarnessError("a question generator is needed: a sequence-to-sequence model's hub id or directory")
    from harness.data.passages import check_output

    output = check_output(output)
    partial, meta = output.with_name(output.name + ".partial.jsonl"), output.with_name(output.name + ".meta.json")
    device = resolve_device(device)
    precision = resolve_precision(precision, device)
    batch_size = default_batch_size(batch_size, device)
    ref = ModelRef(generator, revision) if generator is not None else None
    identity = ref.identity() if ref else f"function:{getattr(generate, '__qualname__', type(generate).__name__)}"

    with _output_lock(output):
        return _generate(
            corpus, ref, identity, output=output, partial=partial, meta=meta, answers=answers, prompt=prompt,
            separator=separator, per_passage=per_passage, passages=passages, negatives=negatives, depth=depth,
            batch_size=batch_size, max_new_tokens=max_new_tokens, num_beams=num_beams,
            max_input_length=max_input_length, seed=seed, label=label, revision=revision, device=device,
            precision=precision, generate=generate, retriever=retriever, cache_dir=cache_dir, threads=threads,
            progress=progress, started=started,
        )


def _generate(
    corpus: str | os.PathLike | Corpus, ref: ModelRef | None, identity: str, *, output: Path, partial: Path, meta: Path,
    answers: str, prompt: str, separator: str, per_passage: int, passages: int | None, negatives: int, depth: int,
    batch_size: int, max_new_tokens: int, num_beams: int, max_input_length: int, seed: int, label: str | None,
    revision: str | None, device: str, precision: str, generate: Generate | None, retriever: Retriever | None,
    cache_dir: str | os.PathLike | None, threads: int | None, progress: bool, started: float,
) -> GenerationStats:
    """:func:`generate_questions` once its settings are checked, holding the output's lock."""
    opened = open_corpus(corpus, cache_dir=cache_dir, progress=progress)
    settings = {
        "format": FORMAT, "corpus": opened.name, "corpus_fingerprint": opened.fingerprint, "generator": identity,
        "answers": answers, "prompt": prompt, "separator": separator if answers == "generate" else None,
        "per_passage": per_passage, "passages": passages, "seed": seed, "max_new_tokens": max_new_tokens,
        "num_beams": num_beams, "max_input_length": max_input_length, "precision": precision,
    }
    total, selected = _select(opened, passages, seed)
    stats, done = GenerationStats(passages=total), set()
    resuming = _resume(partial, settings)
    for number, record in _numbered_records(partial) if resuming else ():
        try:
            opened.get(record["id"])
        except KeyError:
            raise _unknown_passage(partial, number, record["id"], opened) from None
        done.add(record["id"])
        _tally(stats, record)
    stats.resumed = len(done)
    todo = (p for p in selected if p.id not in done)
    group, run = list(islice(todo, batch_size)), generate
    if group and run is None:  # loaded before any file is written: a model that does not load leaves none
        run = load_generator(ref.name_or_path, revision=revision, device=device, precision=precision,
                             max_new_tokens=max_new_tokens, num_beams=num_beams, seed=seed,
                             outputs=per_passage if answers == "generate" else 1, max_input_length=max_input_length,
                             keep=separator if answers == "generate" else None)
    if not resuming:
        write_text_atomic(partial, json.dumps({"settings": settings}, ensure_ascii=False) + "\n")
    with open(partial, "a", encoding="utf-8") as f, progress_bar(
        total=total, initial=len(done), desc="generate", unit="psg", enabled=progress
    ) as bar:
        while group:
            records = _process(group, run, answers=answers, prompt=prompt, separator=separator,
                               per_passage=per_passage, seed=seed, batch_size=batch_size)
            f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            f.flush()
            os.fsync(f.fileno())
            for record in records:
                _tally(stats, record)
            bar.update(len(group))
            group = list(islice(todo, batch_size))

    from harness.util.cache import cache_dir as default_cache_dir

    context = RunContext(cache_dir=Path(cache_dir) if cache_dir is not None else default_cache_dir(),
                         threads=threads or max(1, os.cpu_count() or 1), progress=progress)
    name = "bm25" if retriever is None else type(retriever).__name__
    if negatives and stats.kept:
        if retriever is None:
            from harness import registry

            retriever = registry.load("retrievers", "bm25", {}).value
        retriever.index(opened, context)
    write_training_examples(output, _examples(partial, opened, label=label, negatives=negatives, depth=depth,
                                              retriever=retriever, name=name, context=context, stats=stats))
    stats.seconds = round(time.perf_counter() - started, 3)
    extra = {"negatives": negatives, "depth": depth, "retriever": name if negatives else None, "label": label,
             "batch_size": batch_size, "device": device}
    record = {"format": FORMAT, "output": str(output), "generator": ref.describe() if ref else identity,
              "settings": {**settings, **extra}, "counts": asdict(stats)}
    write_text_atomic(meta, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    partial.unlink()
    return stats

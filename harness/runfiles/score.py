"""Scoring a run file made elsewhere, recorded like a ``harness run`` result (``harness score``)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import registry
from harness.api import Hit, Passage, Suite
from harness.errors import HarnessError, InputFileError
from harness.results.build import build_result, check_metrics, compute_record, parse_k
from harness.scoring.context import make_context
from harness.scoring.retrieval import normalize_question
from harness.results.cost import cost_record
from harness.util.environment import accelerators
from harness.util.resources import PeakMemory
from harness.scoring.rerank import most_reranked, reranker_record
from harness.runfiles.ranks import _warn as _warn_run, run_depth, score_run
from harness.scoring.ranks import ranks_by_part
from harness.runfiles.registered import detect_format, run_format, spellings
from harness.runfiles.model import Run, RunHit, RunWarning
from harness.runfiles.readers import read_run
from harness.runfiles.strategy import reading_strategy
from harness.scoring.metrics import DEFAULT_METRIC


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def score_file(
    suite: str,
    run_file: str | Path,
    *,
    format: str | None = None,
    name: str | None = None,
    k: Sequence[int] | None = None,
    metrics: Sequence[str] = (DEFAULT_METRIC,),
    warn: Callable[[str], None] | None = None,
    rerank: str | None = None,
    rerank_options: Mapping[str, Any] | None = None,
    rerank_depth: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    show_progress: bool = True,
    compression: str | None = None,
    member: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The result document for ``run_file`` scored on ``suite`` with DPR's protocol.

    The retriever is recorded as ``name`` (default: the file's name without extension) with the
    file's name, format and sha256 as parameters. Cutoffs deeper than the run are dropped.

    With ``rerank`` (a re-ranker's name, loaded with ``rerank_options``) each question's top
    ``rerank_depth`` passages (default: the re-ranker's own depth) are re-ranked first
    (:func:`rerank_run`) and the result records the chain; ``cache_dir`` is the re-ranker's
    cache folder.

    A compressed file (``compression``: ``"gzip"``, or ``"tar.gz"`` with the ``member`` to read;
    detected from the file when None) and the formats without a ``whole`` reader (``upr-json``,
    ``rankify-json``, the other tools', a plugin's) are read as a stream
    (:func:`harness.runfiles.strategy.reading_strategy`): scored one question at a time, or, with ``rerank``,
    kept to each question's top ``max(rerank_depth, largest cutoff)`` hits. ``parameters`` are
    recorded with the retriever's (a published run's name and URL).
    """
    from harness.runfiles.archives import detect_compression

    run_file = Path(run_file)
    spec = None
    if format is not None:
        known = spellings()
        if format not in known:
            raise HarnessError(f"--format must be one of {', '.join(sorted(known))}; got {format!r}")
        spec = run_format(known[format])
    if compression is None:
        compression = detect_compression(run_file)
    if member is not None and compression != "tar.gz":
        raise HarnessError(f"--member {member}: {run_file} is not a .tar.gz archive; a member is read from one")
    check_metrics(metrics)
    if rerank is None and (rerank_options or rerank_depth is not None):
        raise HarnessError("re-ranker options or depth were given without a re-ranker (--rerank NAME)")
    if rerank is not None:
        from harness.scoring.rerank import check_depth, default_depth

        found = registry.resolve("rerankers", rerank, rerank_options)  # names and options before any work
        rerank_depth = check_depth(rerank_depth if rerank_depth is not None else default_depth(found.spec))
    timings: dict[str, float] = {}
    memory = PeakMemory().start()
    start = time.perf_counter()
    loaded = registry.suites().get(suite).load()
    timings["load_suite"] = round(time.perf_counter() - start, 4)
    start = time.perf_counter()
    given = spec is not None
    spec = spec or run_format(detect_format(run_file, compression, member))
    with _detected_format_named(run_file, spec.name if given else None, compression, member):
        return _score(
            loaded, suite, run_file, spec, compression=compression, member=member, name=name, k=k, metrics=metrics,
            warn=warn, rerank=rerank, rerank_options=rerank_options, rerank_depth=rerank_depth, cache_dir=cache_dir,
            show_progress=show_progress, parameters=parameters, timings=timings, memory=memory, start=start,
        )


@contextlib.contextmanager
def _detected_format_named(run_file: Path, given: str | None, compression: str | None, member: str | None):
    """A problem reading a file in the ``given`` format (``--format``) whose beginning that format
    does not recognise says which format the file looks like."""
    from harness.runfiles.registered import looks_like

    try:
        yield
    except InputFileError as exc:
        if given is None:
            raise
        try:
            if looks_like(run_file, given, compression, member):
                raise exc from None
            detected = detect_format(run_file, compression, member)
        except HarnessError:
            raise exc from None
        if detected == given:
            raise
        hint = f"; the file looks like a {detected} run (--format {detected}, or no --format to detect it)"
        raise InputFileError(exc.path, exc.problem + hint, line=exc.line) from None


def _score(loaded, suite, run_file, spec, *, compression, member, name, k, metrics, warn, rerank, rerank_options,
           rerank_depth, cache_dir, show_progress, parameters, timings, memory, start) -> dict[str, Any]:
    strategy = reading_strategy(spec, run_file, compression, scoring=rerank is None)
    streamed = strategy == "stream"
    split = None
    if strategy == "stream" and rerank is None:
        split = _score_streamed(run_file, loaded, spec, compression, member)
    elif strategy == "split":
        split = _score_split(run_file, loaded, spec)
    keep = None
    if streamed and rerank is not None:
        keep = max(rerank_depth, *parse_k(k if k is not None else loaded.default_k))
    reranker = reranker_object = first_stage = None
    if split is not None:
        run, sha256, depth = split.run, split.sha256, split.depth
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RunWarning)
            _warn_run(run, len(loaded.questions))
        ranks = ranks_by_part(loaded.parts, split.ranks)
    else:
        # The file's digest is computed on a thread while it is read and scored (hashlib
        # releases the GIL on large blocks), which hides its cost on large runs.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            digest = pool.submit(_sha256, run_file)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", RunWarning)
                run = read_run(run_file, loaded, format=spec.name, compression=compression, member=member, keep=keep)
                if rerank is not None:
                    timings["read"] = round(time.perf_counter() - start, 4)
                    start = time.perf_counter()
                    found = registry.load("rerankers", rerank, rerank_options)
                    context = make_context(loaded, cache_dir=cache_dir, show_progress=show_progress)
                    reranked = most_reranked(run.rankings.values(), rerank_depth)
                    first_stage = score_run(loaded, run)
                    reranker_object = found.value
                    run = rerank_run(run, loaded, found.value, rerank_depth, context, name=rerank)
                    reranker = reranker_record(rerank, found.plugin, found.value.parameters(), rerank_depth, reranked)
                    timings["rerank"] = round(time.perf_counter() - start, 4)
                    start = time.perf_counter()
                ranks = score_run(loaded, run)
            sha256 = digest.result()
        depth = run_depth(run)
    timings["score"] = round(time.perf_counter() - start, 4)
    for w in caught:
        if warn is not None and issubclass(w.category, RunWarning):
            warn(str(w.message))
    if depth == 0:
        raise HarnessError(f"{run_file}: the run retrieves no passage for any question of suite {suite!r}")
    ks = parse_k(k if k is not None else loaded.default_k)
    kept = tuple(x for x in ks if x <= depth)
    if len(kept) < len(ks) and warn is not None:
        warn(f"the run has at most {depth} passages per question; top-{', top-'.join(str(x) for x in ks if x > depth)} not reported")
    if not kept:
        raise HarnessError(f"{run_file}: the run is shallower ({depth}) than every cutoff asked for ({', '.join(map(str, ks))})")
    stem = default_name(run_file)
    computed = compute_record(None, reranker_object)
    extra: dict[str, Any] = {"compute": computed,
                             "cost": cost_record(computed, timings, len(loaded.questions), memory.stop(), accelerators())}
    if first_stage is not None:
        extra["first_stage_ranks"] = {part: dict(by_q) for part, by_q in first_stage.items()}
    return build_result(
        loaded,
        retriever={
            "name": name or stem,
            "plugin": "run-file",
            "parameters": {"run_file": run_file.name, "format": run.format, "sha256": sha256, **(parameters or {})},
        },
        ranks=ranks,
        ks=kept,
        depth=depth,
        metrics=metrics,
        timings=timings,
        reranker=reranker,
        extra=extra,
    )


#: Endings a run file's default name drops: a compression's, then one file type's.
_COMPRESSED = (".tar.gz", ".tgz", ".gz")
_FILE_TYPES = (".json", ".jsonl", ".txt", ".tsv", ".trec", ".run", ".res", ".tar")


def default_name(run_file: Path) -> str:
    """The row name of a run file scored without ``--name``: its file name without a compression
    ending and one file-type ending (``tfidf.ranx.json`` is ``tfidf.ranx``, ``tfidf.tevatron.txt``
    ``tfidf.tevatron``, ``nq-test.json.gz`` ``nq-test``), so files of one system in several
    formats keep apart."""
    stem = run_file.name
    for ending in _COMPRESSED:
        if stem.lower().endswith(ending) and len(stem) > len(ending):
            stem = stem[: -len(ending)]
            break
    for ending in _FILE_TYPES:
        if stem.lower().endswith(ending) and len(stem) > len(ending):
            stem = stem[: -len(ending)]
            break
    return stem or "run"


def _score_streamed(run_file: Path, suite: Suite, spec, compression: str | None, member: str | None):
    """:func:`harness.runfiles.stream.score_streamed`, with the file's sha256 computed meanwhile."""
    from harness.runfiles.split import SplitScore
    from harness.runfiles.stream import score_streamed, source_name

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        digest = pool.submit(_sha256, run_file)
        found = score_streamed(run_file, suite, spec, compression=compression, member=member)
        sha256 = digest.result()
    run = Run(
        rankings={q.id: () for q in suite.questions}, missing=found.missing, answer_mismatches=found.answer_mismatches,
        format=spec.name, source=source_name(run_file, member),
    )
    return SplitScore(run, found.ranks, found.depth, sha256)


def _score_split(run_file: Path, suite: Suite, spec):
    """The format's split scorer (:func:`harness.runfiles.split.score_json_split`) for a large run,
    else None."""
    return spec.split(run_file, suite.questions, mode=suite.match, allow_index=len(suite.parts) == 1, name=spec.name)


def rerank_run(run: Run, suite: Suite, reranker, depth: int, context, *, name: str) -> Run:
    """``run`` with each question's top ``depth`` passages re-ranked by a loaded re-ranker
    (:func:`harness.scoring.rerank.rerank_rankings`). A passage's title and text are those the run
    carries when it carries a text (a missing title is empty), else the suite corpus's. Every
    ranking is checked first, as scoring would."""
    from harness.scoring.rerank import rerank_rankings
    from harness.scoring.rankings import check_ranking

    source = run.source or "run"
    carried: dict[str, RunHit] = {}
    for qid, hits in run.rankings.items():
        check_ranking([(h.passage_id, h.score) for h in hits], question=qid, source=source)
        for hit in hits:
            if hit.text is not None:
                carried.setdefault(hit.passage_id, hit)

    def passage(passage_id: str) -> Passage:
        hit = carried.get(passage_id)
        if hit is not None:
            return Passage(id=passage_id, title=hit.title or "", text=hit.text or "")
        return suite.corpus.get(passage_id)

    by_id = {q.id: q for q in suite.questions}
    qids = list(run.rankings)
    first = [[Hit(passage_id=h.passage_id, score=h.score) for h in run.rankings[qid]] for qid in qids]
    new = rerank_rankings(
        reranker, [normalize_question(by_id[qid].text) for qid in qids], qids, first, depth, context,
        name=name, passage=passage,
    )
    rankings: dict[str, tuple[RunHit, ...]] = {}
    for qid, hits in zip(qids, new):
        old = {h.passage_id: h for h in run.rankings[qid]}
        rankings[qid] = tuple(dataclasses.replace(old[h.passage_id], score=h.score) for h in hits)
    return dataclasses.replace(run, rankings=rankings)

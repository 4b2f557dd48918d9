"""The board's section model: what the markdown leaderboard and the HTML board show, computed
once from result files as plain records (:class:`Section`, :class:`BoardRow`, :class:`BoardCell`,
:class:`PublishedEntry`).

One section per suite and question set, one row per retriever configuration (name and
parameters), top-k recomputed from each result's first-hit ranks (the macro average over parts),
from the newest result of each configuration (:func:`harness.results.selection.newest`).

Each number carries its 95% percentile bootstrap interval (questions resampled within parts,
10,000 resamples, a fixed seed per cell: :mod:`harness.analysis.stats`), and at each cutoff the best
configuration and every one not significantly different from it are marked (exact McNemar test
against the best on the per-question hits, Holm-corrected across the section's tests, alpha 0.05).
Results of one configuration that differ only in seeds (parameters named ``seed``, at any depth)
form one row: the mean and sample standard deviation over the seeds (a result without any
``seed`` parameter is never folded into one). Published numbers of the suite
(``register_published``) follow as their own entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis import stats
from harness.analysis.ceiling import Ceiling, ceiling_of
from harness.api import PublishedTable
from harness.results.labels import describe, trained_parts, training_data_entries, training_seeds, training_variant
from harness.results.report import corpus_size, format_parameters
from harness.results.schema import Result, config_digest
from harness.results.selection import newest
from harness.results.selection import question_set as question_set_of

#: Resamples behind each interval, and the seed they are drawn with.
RESAMPLES = 10_000
SEED = 0
ALPHA = 0.05

#: Rows are ordered by these cutoffs first (those a suite reports), then by its others, deepest first.
ORDER_K: tuple[int, ...] = (20, 100, 5, 1)


#: A summary cell holds whole ``key=value`` items up to about this many characters.
SUMMARY_WIDTH = 100
#: A single value longer than this is shortened in the summary (never in the details block).
_MAX_VALUE = 60
_DIGEST = re.compile(r"\s*\((?:sha256:|dir:)[^()]*\)")


def _merge_sides(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``query_X`` and ``passage_X`` with equal values become one ``X``."""
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        for side, other in (("query_", "passage_"), ("passage_", "query_")):
            if key.startswith(side):
                twin = other + key[len(side):]
                if twin in parameters and parameters[twin] == value:
                    if side == "query_":
                        out[key[len(side):]] = value
                    break
        else:
            out[key] = value
    return out


def _short_value(value: Any, digests: bool = False) -> str:
    if isinstance(value, Mapping):
        return str(value["name"]) if "name" in value else "{…}"
    if isinstance(value, (list, tuple)):
        return "+".join(_short_value(x, digests) for x in value)
    text = str(value) if digests else _DIGEST.sub("", str(value))
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def _flat(parameters: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``parameters`` with nested settings (mappings without a ``name``) as dotted keys."""
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, Mapping) and "name" not in value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


#: A setting a configuration does not have.
_MISSING = object()
#: Settings a trained checkpoint's label already shows (:func:`~harness.results.labels.describe`): not
#: repeated first in its parameter cell.
_LABELLED = ("variant", "model", "training.variant")


def distinguishing(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The settings (dotted keys, :func:`_flat`) whose values differ between configurations of one
    retriever, each row's parameters given: key -> each row's value as a summary shows it (a
    content digest kept where leaving it out would make two different values look alike). The
    settings with the most different values come first; a nested one is named by its last key
    where no other setting has that name."""
    flats = [_flat(_merge_sides(p)) for p in rows]
    trained = all(isinstance(p.get("training"), Mapping) for p in rows)
    keys = [k for k in dict.fromkeys(k for flat in flats for k in flat) if not (trained and k in _LABELLED)]
    out: dict[str, list[str]] = {}
    for key in keys:
        raw = [flat.get(key, _MISSING) for flat in flats]
        texts = [json.dumps(v, sort_keys=True, default=str) for v in raw]
        if len(set(texts)) < 2:
            continue
        short = ["–" if v is _MISSING else _short_value(v) for v in raw]
        if len(set(short)) < len(set(texts)):
            short = ["–" if v is _MISSING else _short_value(v, digests=True) for v in raw]
        out[key] = short
    # the settings with the most different values first; a nested one by its last name where that is unambiguous
    order = sorted(out, key=lambda key: -len(set(out[key])))
    names = {key: key.rsplit(".", 1)[-1] for key in order}
    every = {k for flat in flats for k in flat}
    return {
        (names[key] if list(names.values()).count(names[key]) == 1 and (names[key] == key or names[key] not in every) else key): out[key]
        for key in order
    }


def summarize_parameters(parameters: Mapping[str, Any], width: int = SUMMARY_WIDTH, first: Mapping[str, str] | None = None) -> str:
    """A short summary for a table cell, made of whole ``key=value`` items: a question and passage
    setting that agree shown once, content digests left out, nested retrievers by name, and
    ``… +N more`` when the items do not fit in ``width``. A trained checkpoint's ``variant`` and
    ``model`` are left out: its label names the variant, training data and digest
    (:func:`~harness.results.labels.describe`). ``first``: items shown before the others (the
    settings that tell the row from others of its retriever, :func:`distinguishing`, key -> value
    as shown). The details block and the result file have every parameter in full."""
    trained = isinstance(parameters.get("training"), Mapping)
    first = first or {}
    items = [f"{key}={value}" for key, value in first.items()] + [
        f"{key}={_short_value(value)}"
        for key, value in _merge_sides(parameters).items()
        if not (isinstance(value, Mapping) and "name" not in value)
        and not (trained and key in ("variant", "model"))
        and key not in first
    ]
    shown: list[str] = []
    used = 0
    for i, item in enumerate(items):
        if shown and used + len(item) > width:
            shown.append(f"… +{len(items) - i} more")
            break
        shown.append(item)
        used += len(item) + 2
    return ", ".join(shown)


def _seedless(value: Any) -> Any:
    """``value`` without any mapping key named ``seed``, at any depth."""
    if isinstance(value, Mapping):
        return {k: _seedless(v) for k, v in value.items() if k != "seed"}
    if isinstance(value, (list, tuple)):
        return [_seedless(v) for v in value]
    return value


class Row:
    """One leaderboard row: one result, or the results of one configuration over several seeds."""

    def __init__(self, results: list[Result]):
        self.results = sorted(results, key=lambda r: (str(r.path or ""), r.config_key()))
        self.first = self.results[0]
        # the configuration's label as compare and plot show it: the chain's for a re-ranked one, a
        # trained checkpoint's variant, training data and digest (:mod:`harness.results.labels`)
        self.retriever = describe(self.first.retriever, self.parameters, self.first.reranker, digest=self.config_key())

    @property
    def seeds(self) -> int:
        return len(self.results)

    @property
    def parameters(self) -> Mapping[str, Any]:
        return _seedless(self.first.parameters) if self.seeds > 1 else self.first.parameters

    def config_key(self) -> str:
        return config_digest(self.first.retriever, self.parameters, self.first.reranker)

    def accuracy(self, k: int) -> tuple[dict[str, float], float] | None:
        """Per part and macro top-k; over seeds, their means."""
        each = [r.accuracy(k) for r in self.results]
        if any(a is None for a in each):
            return None
        parts = {p: sum(a[0][p] for a in each) / len(each) for p in each[0][0]}
        return parts, sum(a[1] for a in each) / len(each)

    def std(self, k: int) -> float:
        values = [r.accuracy(k)[1] for r in self.results]
        mean = sum(values) / len(values)
        return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5

    def hits(self, k: int) -> list:
        return [stats.hits(list(part.values()), k) for part in self.first.ranks.values()]


def _seed_paths(value: Any, path: str = "") -> tuple[str, ...]:
    """Where ``value`` has a mapping key named ``seed`` (dotted paths, list items by position)."""
    if isinstance(value, Mapping):
        return tuple(
            found for k, v in value.items()
            for found in ((f"{path}{k}",) if k == "seed" else ()) + _seed_paths(v, f"{path}{k}.")
        )
    if isinstance(value, (list, tuple)):
        return tuple(found for i, v in enumerate(value) for found in _seed_paths(v, f"{path}{i}."))
    return ()


def _group_seeds(results: Sequence[Result]) -> list[Row]:
    """Rows: results whose parameters differ only in the values of their ``seed`` parameters
    share one; a result without a ``seed`` parameter where others have one is a row of its own."""
    groups: dict[tuple[str, tuple[str, ...]], list[Result]] = {}
    for r in results:
        key = (config_digest(r.retriever, _seedless(r.parameters), r.reranker), _seed_paths(r.parameters))
        groups.setdefault(key, []).append(r)
    return [Row(group) for group in groups.values()]


def _cutoffs(results: Sequence[Result]) -> list[int]:
    """The cutoffs the group's results report (each suite's own, e.g. 1, 3, 5, 10)."""
    return sorted({k for r in results for k in r.data["k"]})


def _order_cutoffs(ks: Sequence[int]) -> list[int]:
    return [k for k in ORDER_K if k in ks] + sorted((k for k in ks if k not in ORDER_K), reverse=True)


def _interval(row: Row, k: int) -> tuple[float, float]:
    return stats.bootstrap_ci(row.hits(k), resamples=RESAMPLES, rng=stats.seeded(SEED, row.config_key(), k))


def _tied_with_best(rows: list[Row], ks: Sequence[int]) -> dict[int, set[int]]:
    """Per cutoff, the indices of single-result rows that are the best or not significantly
    different from it (exact McNemar against the best, Holm over every test of the section)."""
    tests: list[tuple[int, int, float]] = []
    best_of: dict[int, int] = {}
    for k in ks:
        single = [i for i, row in enumerate(rows) if row.seeds == 1 and row.accuracy(k) is not None]
        if not single:
            continue
        best = max(single, key=lambda i: (rows[i].accuracy(k)[1], -i))
        best_of[k] = best
        best_hits = np.concatenate(rows[best].hits(k))
        for i in single:
            if i != best:
                tests.append((k, i, stats.mcnemar_exact(best_hits, np.concatenate(rows[i].hits(k))).p_value))
    adjusted = stats.holm([p for _, _, p in tests])
    tied = {k: {best} for k, best in best_of.items()}
    for (k, i, _), p in zip(tests, adjusted):
        if p > ALPHA:
            tied[k].add(i)
    return tied


@dataclass(frozen=True)
class BoardCell:
    """One row's top-k at cutoff ``k``, as fractions from 0 to 1.

    ``value``: the macro average over parts (a row over seeds: the mean over them), None when
    ``k`` is deeper than a result's retrieval; ``low`` and ``high``: its 95% percentile bootstrap
    interval (single-result rows, :func:`_interval`); ``std``: the sample standard deviation over
    seeds (rows over several seeds); ``tier``: the row is the best at ``k`` or not significantly
    different from it (exact McNemar against the best, Holm over the section, alpha 0.05:
    :func:`_tied_with_best`); ``parts``: top-k per part (over seeds, the mean)."""

    k: int
    value: float | None
    low: float | None
    high: float | None
    std: float | None
    tier: bool
    parts: Mapping[str, float]


@dataclass(frozen=True)
class BoardRow:
    """One row of a section: one configuration (over seeds, when its results differ only in them).

    ``label``: :func:`~harness.results.labels.describe` of the configuration; ``variant``: a trained
    checkpoint's training variant; ``training_data``: its ``training.data`` entries as recorded;
    ``parameters``: the short summary (:func:`summarize_parameters`), ``all_parameters`` every
    parameter (the re-ranker's included); ``cells``: one per cutoff of the section, in its order;
    ``trained_on``: the categories its training data held (``training.seen``); ``cost``: its
    first result's ``cost`` block (:mod:`harness.results.cost`), None without one; ``ceiling``: for a
    re-ranked row whose results record ``first_stage_ranks``, its :class:`~harness.analysis.ceiling.Ceiling`
    (:func:`rerank_ceiling`); ``training_seeds``: the seeds its results' checkpoints were trained
    with (:func:`training_seeds`), empty for a row not trained."""

    label: str
    retriever: str
    reranker: str | None
    variant: str | None
    training_data: tuple[str, ...]
    seeds: int
    parameters: str
    all_parameters: str
    config: str
    cells: tuple[BoardCell, ...]
    results: tuple[Result, ...]
    trained_on: frozenset[str]
    cost: Mapping[str, Any] | None
    ceiling: Ceiling | None
    training_seeds: tuple[int, ...] = ()
    #: ``in-domain``, ``zero-shot`` or ``unknown`` on the section's suite: whether the model saw
    #: the suite's training split (:func:`harness.results.meta.result_domain`).
    domain: str = "unknown"


@dataclass(frozen=True)
class PublishedEntry:
    """A published row beside a section's results: the system, its table's name, citation and
    address, the row's note, and its values in percent (``printed``: as printed, with the digits
    the table gives)."""

    system: str
    table: str
    citation: str
    url: str
    note: str
    values: Mapping[int, float]
    printed: Mapping[int, str]


@dataclass(frozen=True)
class Section:
    """One suite and question set of the board: what the markdown and the HTML board show.

    ``question_sets``: every question set the suite's results were made on (a section each);
    ``corpus``: the corpus in words (``7903 passages (demo-synthetic-wiki)``); ``ks``: the cutoffs
    the results report; ``order``: the cutoffs rows are ordered by (:data:`ORDER_K` first);
    ``rows``: best first (:func:`_row_order`); ``published``: published rows of the suite with a
    value at one of ``ks`` (none for a synthetic suite); ``superseded``: each result left out with
    the newer one of its configuration shown instead; ``seen``: the sets of parts some rows were
    trained on (the seen/unseen comparison), in the order the rows name them."""

    suite: str
    question_set: str
    question_sets: tuple[str, ...]
    synthetic: bool
    questions: int
    parts: tuple[str, ...]
    part_questions: Mapping[str, int]
    corpus: str
    match: str
    ks: tuple[int, ...]
    order: tuple[int, ...]
    rows: tuple[BoardRow, ...]
    published: tuple[PublishedEntry, ...]
    superseded: tuple[tuple[Result, Result], ...]
    seen: tuple[frozenset[str], ...]
    #: Groups of rows (their labels, in row order) whose first hit is at the same rank on every
    #: question: the same numbers at every cutoff and in every part (:func:`identical_rows`).
    identical: tuple[tuple[str, ...], ...] = ()
    #: The training variants the rows name, each with its registered description (in row order).
    variants: tuple[tuple[str, str], ...] = ()


def sections(
    results: Sequence[Result], published: Sequence[PublishedTable] = (), variants: Mapping[str, str] | None = None
) -> list[Section]:
    """The board's sections, one per suite and question set (sorted by suite name, then question
    set), from the newest result of each configuration (:func:`newest`); ``published`` tables give
    the sections of their suites published rows; ``variants``: training variants' descriptions by
    name (a section lists those its rows name)."""
    groups: dict[tuple[str, str], list[Result]] = {}
    chosen, superseded = newest(results)
    for r in chosen:
        groups.setdefault((r.suite, question_set_of(r)), []).append(r)
    sets_of: dict[str, list[str]] = {}
    for suite, question_set in groups:
        sets_of.setdefault(suite, []).append(question_set)
    return [
        _section(
            groups[suite, question_set], question_set, tuple(sorted(sets_of[suite])),
            tuple((old, new) for old, new in superseded if (new.suite, question_set_of(new)) == (suite, question_set)),
            published, variants or {},
        )
        for suite, question_set in sorted(groups)
    ]


def _section(
    group: list[Result], question_set: str, question_sets: tuple[str, ...],
    superseded: tuple[tuple[Result, Result], ...], published: Sequence[PublishedTable], variants: Mapping[str, str],
) -> Section:
    ks = _cutoffs(group)
    order = _order_cutoffs(ks)
    rows = sorted(_group_seeds(group), key=lambda row: _row_order(row, order))
    first = rows[0].first.data["suite"]
    parts = tuple(p["name"] for p in first["parts"])
    corpus = first["corpus"]
    size = corpus_size(corpus) if corpus.get("passages") is None else f"{corpus['passages']} passages ({corpus['name']})"
    tied = _tied_with_best(rows, ks)
    synthetic = bool(first.get("synthetic"))
    shown_first: list[dict[str, str]] = [{} for _ in rows]
    by_retriever: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_retriever.setdefault(row.first.retriever, []).append(i)
    for indices in by_retriever.values():
        if len(indices) > 1:
            for key, values in distinguishing([rows[i].parameters for i in indices]).items():
                for i, value in zip(indices, values):
                    shown_first[i][key] = value
    return Section(
        suite=rows[0].first.suite, question_set=question_set, question_sets=question_sets, synthetic=synthetic,
        questions=sum(p["questions"] for p in first["parts"]), parts=parts,
        part_questions={p["name"]: p["questions"] for p in first["parts"]}, corpus=size, match=first["match"],
        ks=tuple(ks), order=tuple(order),
        rows=tuple(_board_row(row, ks, {k for k in ks if i in tied.get(k, ())}, shown_first[i]) for i, row in enumerate(rows)),
        published=() if synthetic else tuple(_published_entries(published, rows[0].first.suite, ks)),
        superseded=superseded, seen=tuple(seen_sets(rows, list(parts))),
        identical=tuple(tuple(rows[i].retriever for i in group) for group in identical_rows(rows)),
        variants=tuple(_variants(rows, variants)),
    )


def identical_rows(rows: Sequence[Row]) -> list[list[int]]:
    """Groups (of two or more, by index, in row order) of single-result rows whose first hit is at
    the same rank on every question of every part: rows that agree at every cutoff and in every
    part, which a reader would otherwise take for a mistake."""
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if row.seeds == 1:
            key = json.dumps([row.first.depth, row.first.ranks], sort_keys=True)
            groups.setdefault(key, []).append(i)
    return sorted((group for group in groups.values() if len(group) > 1), key=lambda group: group[0])


def _variants(rows: Sequence[Row], descriptions: Mapping[str, str]) -> list[tuple[str, str]]:
    """The training variants the rows name (first appearance first) with their descriptions."""
    out: dict[str, str] = {}
    for row in rows:
        variant = training_variant(row.parameters)
        if variant and variant not in out and variant in descriptions:
            out[variant] = descriptions[variant]
    return list(out.items())


def _board_row(row: Row, ks: Sequence[int], tiers: set[int], first: Mapping[str, str] | None = None) -> BoardRow:
    cells = []
    for k in ks:
        accuracy = row.accuracy(k)
        if accuracy is None:
            cells.append(BoardCell(k, None, None, None, None, False, {}))
        elif row.seeds > 1:
            cells.append(BoardCell(k, accuracy[1], None, None, row.std(k), False, accuracy[0]))
        else:
            low, high = _interval(row, k)
            cells.append(BoardCell(k, accuracy[1], float(low), float(high), None, k in tiers, accuracy[0]))
    ceiling = rerank_ceiling(row.results)
    return BoardRow(
        label=row.retriever, retriever=row.first.retriever,
        reranker=row.first.reranker["name"] if row.first.reranker else None,
        variant=training_variant(row.parameters), training_data=training_data_entries(row.parameters), seeds=row.seeds,
        parameters=_with_search(row.first, summarize_parameters(row.parameters, first=first)),
        all_parameters=format_parameters(row.parameters) + reranker_parameters(row.first),
        config=row.config_key(), cells=tuple(cells), results=tuple(row.results),
        trained_on=trained_parts(row.parameters), cost=row.first.data.get("cost"),
        ceiling=ceiling, training_seeds=training_seeds(row.results), domain=_domain(row.results),
    )


def _domain(results: Sequence[Result]) -> str:
    """The row's domain on its suite: its results' when they agree, else unknown."""
    from harness.results.meta import result_domain

    found = {result_domain(r) for r in results}
    return found.pop() if len(found) == 1 else "unknown"


def _with_search(result: Result, summary: str) -> str:
    """A row's parameter summary, led by ``approximate search (...)`` when its rankings come from
    an approximate index (:func:`harness.analysis.compare.approximate_search`)."""
    from harness.analysis.compare import approximate_search

    note = approximate_search(result)
    return summary if note is None else f"{note}; {summary}" if summary else note


def rerank_ceiling(results: Sequence[Result]) -> Ceiling | None:
    """A re-ranked row against its ceiling (:func:`harness.analysis.ceiling.ceiling_of` of its
    first result: the share of questions whose first stage had an answer within the re-ranked
    depth, the first stage's and the re-ranked top-k, wins and losses); None when it is not
    re-ranked or its results do not record ``first_stage_ranks``. The schema checked the ranks."""
    if any(ceiling_of(r) is None for r in results):
        return None
    return ceiling_of(results[0])


def _published_entries(published: Sequence[PublishedTable], suite: str, ks: Sequence[int]) -> list[PublishedEntry]:
    from harness.analysis.published import printed_digits, rows_for_suite

    entries = []
    for table, row in rows_for_suite(published, suite):
        if not any(k in row.values for k in ks):
            continue
        digits = printed_digits(table, row)
        entries.append(PublishedEntry(
            system=row.system, table=table.name, citation=table.citation, url=table.url, note=row.note,
            values={k: row.values[k] for k in ks if k in row.values},
            printed={k: f"{row.values[k]:.{digits}f}" for k in ks if k in row.values},
        ))
    return entries


def _row_order(row: Row, order: Sequence[int]) -> tuple:
    """Best at the first ordering cutoff (top-20 when reported), then the next ones; ties by
    name and configuration."""
    keys = [-(acc[1] if (acc := row.accuracy(k)) is not None else -1.0) for k in order]
    return (*keys, row.retriever, row.config_key())


def seen_sets(rows: list[Row], parts: list[str]) -> list[frozenset[str]]:
    """The sets of the suite's parts that some rows were trained on (some parts, not all), in the
    order the rows name them."""
    names = set(parts)
    sets: list[frozenset[str]] = []
    for row in rows:
        seen = trained_parts(row.parameters) & names
        if seen and seen != names and seen not in sets:
            sets.append(seen)
    return sets


def reranker_parameters(result: Result) -> str:
    """A re-ranked row's second stage in the details block: ``; » upr: depth=100, model=...``."""
    reranker = result.reranker
    if not reranker:
        return ""
    settings: dict[str, Any] = {"depth": reranker["depth"]}
    reranked = reranker.get("reranked")
    if reranked is not None and reranked < reranker["depth"]:
        settings["reranked"] = f"{reranked} at most (the first stage had fewer hits)"
    settings.update(reranker["parameters"])
    return f"; » {reranker['name']}: {format_parameters(settings)}"


@dataclass(frozen=True)
class LiteratureEntry:
    """A published row in a suite's literature section: the system, its table (name, citation,
    address, version), its note, its values as printed (top-k in percent) and its domain on the
    suite (from the metadata of the harness retriever the row names; unknown without one)."""

    system: str
    table: str
    citation: str
    url: str
    version: str
    note: str
    printed: Mapping[int, str]
    domain: str


@dataclass(frozen=True)
class LiteratureSection:
    """A real suite's published rows (the tables we hold), best first at the deepest common
    cutoff: where the field stands, and where harness rows land once run (``results``: whether
    the board has results of the suite)."""

    suite: str
    ks: tuple[int, ...]
    entries: tuple[LiteratureEntry, ...]
    results: bool


def literature(published: Sequence[PublishedTable], board: Sequence[Section]) -> list[LiteratureSection]:
    """One :class:`LiteratureSection` per suite the published tables report (whole-suite rows),
    sorted by suite name; a suite registered as synthetic gets none."""
    from harness import registry
    from harness.analysis.published import printed_digits, rows_for_suite
    from harness.api import domain, meta_of
    from harness.results.meta import suite_train

    suites = registry.suites()
    retrievers = registry.retrievers()
    names = sorted({row.suite for table in published for row in table.rows if row.part is None})
    shown = {s.suite for s in board}
    out = []
    for suite in names:
        if suite in suites and suites.get(suite).synthetic:
            continue
        pairs = rows_for_suite(published, suite)
        ks = tuple(sorted({k for _, row in pairs for k in row.values}))
        if not ks:
            continue
        entries = []
        for table, row in pairs:
            digits = printed_digits(table, row)
            meta = None
            base = (row.retriever or "").split(":", 1)[0]
            if base in retrievers:
                options = dict(row.options)
                if ":" in (row.retriever or ""):
                    options["argument"] = row.retriever.split(":", 1)[1]
                meta = meta_of(retrievers.get(base).meta, options)
            entries.append((row, LiteratureEntry(
                system=row.system, table=table.name, citation=table.citation, url=table.url, version=table.version or "",
                note=row.note, printed={k: f"{row.values[k]:.{digits}f}" for k in ks if k in row.values},
                domain=domain(meta, suite_train(suite)),
            )))
        order = [k for k in ORDER_K if k in ks] + sorted((k for k in ks if k not in ORDER_K), reverse=True)
        entries.sort(key=lambda pair: tuple(-pair[0].values.get(k, -1.0) for k in order) + (pair[1].system, pair[1].table))
        out.append(LiteratureSection(suite=suite, ks=ks, entries=tuple(e for _, e in entries), results=suite in shown))
    return out

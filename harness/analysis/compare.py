"""Paired comparison of retrievers on one suite, from result files alone.

For each cutoff ``k`` every system gets its top-k accuracy with a percentile bootstrap confidence
interval (questions resampled within each part; :mod:`harness.analysis.stats`). Each compared pair
``(A, B)`` gets:

- at each ``k``: the macro-averaged difference ``top-k(A) - top-k(B)`` with a paired bootstrap
  interval (the per-question differences resampled within parts), and an exact McNemar test on the
  per-question hits at ``k`` over all questions (``b`` = questions only A answers within ``k``,
  ``c`` = only B);
- MRR@``mrr_k``: the macro difference with its paired bootstrap interval and a paired sign-flip
  randomisation test of that macro difference.

Every p-value of one comparison is one family: Holm's correction is applied across all of them
(pairs x (cutoffs + 1)). With ``by_part`` each pair also gets, in each part, the same statistics
on that part's questions alone (the difference with its paired bootstrap interval, the exact McNemar
test at each cutoff, the randomisation test of MRR), from the same functions; those per-part tests
are a second family, Holm-corrected among themselves, so asking for them never changes the overall
numbers. Random draws come from a seed per statistic, derived from ``seed`` and the statistic's name
(systems, cutoff, part), so adding a system never changes another's numbers.

Systems are named by :func:`harness.results.labels.result_label` (a trained checkpoint by its
variant, training data and configuration digest), as ``harness plot`` and the leaderboard name
them; a system (and ``baseline``) may be named by its result file, its label, or a retriever name
that only one compared result has.

An interval is *degenerate* when every resample gives the same value: every question (within each
part) has the same outcome, e.g. all 42 questions of a part hit at k = 100. Such an interval is a
single point that says nothing of the uncertainty; the text output marks it with the reason.

p-values are printed in one format (:func:`format_p`): four decimals from 0.001 up, scientific
notation with two significant digits below; ``to_json`` keeps the raw floats.

The text output's tables are markdown: names from result files (systems, suite, parts) are
written through :func:`harness.results.report.markdown_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis import stats
from harness.analysis.stats import format_p
from harness.errors import HarnessError
from harness.results.labels import require_distinct, result_label, unique_labels
from harness.results.meta import result_domain
from harness.results.selection import pick_newest
from harness.results.report import markdown_text, one_line
from harness.results.schema import Result, read_result, read_results

#: Significance level at which pairs are marked.
ALPHA = 0.05


@dataclass(frozen=True)
class System:
    """A compared configuration: its label (unique within one comparison), its result, and how
    it was named on the command line (a file or a name), if it was."""

    label: str
    result: Result
    reference: str | None = None


@dataclass(frozen=True)
class Estimate:
    """A point estimate (fraction) and its confidence interval; ``degenerate`` says why, when
    every resample gave the same value (the interval is then a single point)."""

    value: float
    low: float
    high: float
    degenerate: str | None = None


@dataclass(frozen=True)
class PairTest:
    """One paired test. ``measure`` is ``top-K`` or ``MRR@K``; ``difference`` is A minus B."""

    a: str
    b: str
    measure: str
    difference: Estimate
    test: str
    p_value: float
    p_holm: float = 1.0
    a_only: int | None = None
    b_only: int | None = None
    #: The part whose questions alone were tested (``by_part``), or None for the whole suite.
    part: str | None = None

    @property
    def significant(self) -> bool:
        return self.p_holm <= ALPHA


@dataclass
class Comparison:
    suite: Mapping[str, Any]
    systems: list[System]
    ks: list[int]
    mrr_k: int
    seed: int
    resamples: int
    permutations: int
    confidence: float
    accuracy: dict[str, dict[int, Estimate]] = field(default_factory=dict)
    accuracy_by_part: dict[str, dict[int, dict[str, Estimate]]] = field(default_factory=dict)
    mrr: dict[str, Estimate] = field(default_factory=dict)
    pairs: list[PairTest] = field(default_factory=list)
    #: Per-part tests (``by_part``): their own Holm family; None when not asked for.
    pairs_by_part: list[PairTest] | None = None

    def to_json(self) -> dict[str, Any]:
        def est(e: Estimate) -> dict[str, Any]:
            return {"value": e.value, "low": e.low, "high": e.high, "degenerate": e.degenerate}

        def pair(t: PairTest) -> dict[str, Any]:
            out = {
                "a": t.a, "b": t.b, "measure": t.measure, "difference": est(t.difference), "test": t.test,
                "a_only": t.a_only, "b_only": t.b_only, "p": t.p_value, "p_holm": t.p_holm,
                "significant": t.significant,
            }
            if t.part is not None:
                out = {"part": t.part, **out}
            return out

        return {
            "suite": self.suite["name"],
            "questions_fingerprint": self.suite["questions_fingerprint"],
            "seed": self.seed,
            "resamples": self.resamples,
            "permutations": self.permutations,
            "confidence": self.confidence,
            "alpha": ALPHA,
            "systems": [
                {
                    "label": s.label,
                    "result": str(s.result.path) if s.result.path else None,
                    "accuracy": {str(k): est(e) for k, e in self.accuracy[s.label].items()},
                    "accuracy_by_part": {
                        str(k): {p: est(e) for p, e in parts.items()} for k, parts in self.accuracy_by_part[s.label].items()
                    },
                    f"mrr@{self.mrr_k}": est(self.mrr[s.label]),
                    "cost": s.result.data.get("cost"),
                    "approximate_search": approximate_search(s.result),
                    "domain": result_domain(s.result),
                }
                for s in self.systems
            ],
            "pairs": [pair(t) for t in self.pairs],
            **({"pairs_by_part": [pair(t) for t in self.pairs_by_part]} if self.pairs_by_part is not None else {}),
        }


#: Dense index kinds whose rankings are approximate (not the exact inner-product top-k).
APPROXIMATE_INDEXES = {"hnsw": ("hnsw_",), "ivfpq": ("ivf_", "pq_")}


def approximate_search(result: Result) -> str | None:
    """``approximate search (hnsw: hnsw_m=32, ...)`` when the result's rankings come from an
    approximate index, with its settings: as its ``compute.retriever`` records them
    (``search_precision: approximate``, ``search_index``), else as its parameters name them (a
    result written before that was recorded); None for an exact search."""
    compute = result.data.get("compute")
    retriever = compute.get("retriever") if isinstance(compute, Mapping) else None
    settings: Mapping[str, Any] | None = None
    if isinstance(retriever, Mapping) and retriever.get("search_precision") == "approximate":
        recorded = retriever.get("search_index")
        settings = recorded if isinstance(recorded, Mapping) else {}
    parameters = result.data.get("retriever", {}).get("parameters")
    if settings is None and isinstance(parameters, Mapping) and parameters.get("index") in APPROXIMATE_INDEXES:
        prefixes = APPROXIMATE_INDEXES[parameters["index"]]
        settings = {k: v for k, v in parameters.items() if k == "index" or k.startswith(prefixes)}
    if settings is None:
        return None
    kind = settings.get("index", "approximate index")
    shown = ", ".join(f"{k}={v}" for k, v in settings.items() if k != "index")
    return f"approximate search ({kind}{': ' + shown if shown else ''})"


def _rng(seed: int, *names: object):
    """The random stream of one statistic: :func:`harness.analysis.stats.seeded`."""
    return stats.seeded(seed, *names)


def _names(result: Result) -> set[str]:
    """What a system may be called on the command line: its label (:func:`result_label`), its
    retriever's (chain's) name, and either with the configuration digest; a re-ranked one also
    by its two stages' names alone, ``RETRIEVER » RERANKER`` (or ``>>`` or ``+`` between them, as
    its result file is named), without the model and depth of its full label."""
    label, key = result_label(result), result.config_key()
    names = {label, result.label, f"{result.label} ({key})", f"{label} ({key})"}
    if result.reranker:
        for joint in (" » ", "»", " >> ", ">>", "+"):
            names.add(f"{result.retriever}{joint}{result.reranker['name']}")
    return names


def find_result(reference: str, *, suite: str | None, results: Sequence[Result]) -> Result:
    """A result file path, or a label or retriever name (as compare, plot and the leaderboard show
    it) among ``results``. A name several configurations share is refused with their labels."""
    path = Path(reference)
    if reference.endswith(".json") or path.is_file():
        if not path.is_file():
            raise HarnessError(f"{reference}: no such result file")
        return read_result(path)
    if suite is None:
        raise HarnessError(f"{reference!r} is not a result file; to look results up by retriever name, give --suite")
    of_suite = [r for r in results if r.suite == suite]
    matches = [r for r in of_suite if reference in _names(r)]
    if not matches:
        known = sorted({result_label(r) for r in of_suite})
        hint = f" (results of {suite}: {', '.join(one_line(k) for k in known)})" if known else f" (no results of suite {suite})"
        raise HarnessError(f"no result of {reference!r} on suite {suite}{hint}")
    configs: dict[str, list[Result]] = {}
    for r in matches:
        configs.setdefault(r.config_key(), []).append(r)
    if len(configs) > 1:
        labels = dict(zip((id(r) for r in matches), unique_labels(matches)))
        each = "; ".join(
            sorted(f"{one_line(labels[id(group[0])])} ({', '.join(sorted(one_line(r.path.name) for r in group if r.path))})"
                   for group in configs.values())
        )
        raise HarnessError(
            f"{reference!r} on {suite} has {len(configs)} configurations: name one by its label or result file: {each}"
        )
    return pick_newest(matches)


def load_systems(references: Sequence[str], *, suite: str | None, results_dir: Path) -> list[System]:
    """Resolve each reference (file, label or name) and give each a unique label
    (:func:`harness.results.labels.unique_labels`); the same result named twice is refused,
    naming both files."""
    by_name = any(not r.endswith(".json") and not Path(r).is_file() for r in references)
    if by_name and not Path(results_dir).is_dir():
        raise HarnessError(f"--results-dir {results_dir}: no such folder (results named by retriever are looked up there)")
    pool = read_results(results_dir) if by_name else []
    chosen = [find_result(ref, suite=suite, results=pool) for ref in references]
    labels = unique_labels(chosen)
    require_distinct(chosen, labels, what="compared")
    return [System(label, result, ref) for ref, result, label in zip(references, chosen, labels)]


def resolve_system(name: str, systems: Sequence[System], *, option: str = "--baseline") -> str:
    """The label of the system ``name`` names: its label, its result file (any spelling of the
    path), the reference it was given by, or a retriever name only one of them has."""
    labels = [s.label for s in systems]
    if name in labels:
        return name
    path = Path(name)
    if name.endswith(".json") or path.is_file():
        try:
            wanted = path.resolve()
        except OSError:
            wanted = path
        for s in systems:
            if s.result.path is not None and Path(s.result.path).resolve() == wanted:
                return s.label
        raise HarnessError(f"{option} {name}: not one of the compared result files ({', '.join(one_line(_name(s)) for s in systems)})")
    for s in systems:
        if s.reference is not None and s.reference == name:
            return s.label
    named = [s for s in systems if name in _names(s.result)]
    if len(named) == 1:
        return named[0].label
    if len(named) > 1:
        raise HarnessError(f"{option} {name!r} names {len(named)} of the compared systems "
                           f"({', '.join(one_line(s.label) for s in named)}): give its label or result file")
    raise HarnessError(f"{option} {name!r} is not among the compared systems ({', '.join(one_line(x) for x in labels)})")


def check_comparable(systems: Sequence[System]) -> None:
    """One-line errors unless every result is on the same suite, question set, parts and questions."""
    if len(systems) < 2:
        raise HarnessError("compare needs at least two results")
    first = systems[0]
    f_suite = first.result.data["suite"]
    for other in systems[1:]:
        o_suite = other.result.data["suite"]
        where = f"{_name(other)} and {_name(first)}"
        if o_suite["name"] != f_suite["name"]:
            raise HarnessError(f"{where} are results of different suites ({o_suite['name']} vs {f_suite['name']})")
        if o_suite["questions_fingerprint"] != f_suite["questions_fingerprint"]:
            raise HarnessError(
                f"{where} were run on different question sets (fingerprints {o_suite['questions_fingerprint']} vs "
                f"{f_suite['questions_fingerprint']}); their questions cannot be paired"
            )
        if other.result.record.matcher != first.result.record.matcher:
            raise HarnessError(f"{where} were scored by different matchers")
        a_ranks, b_ranks = other.result.ranks, first.result.ranks
        if list(a_ranks) != list(b_ranks) or any(list(a_ranks[p]) != list(b_ranks[p]) for p in a_ranks):
            raise HarnessError(f"{where} do not hold the same questions in the same parts; their questions cannot be paired")


def _name(system: System) -> str:
    return str(system.result.path) if system.result.path else system.label


def _degenerate(values: Sequence[np.ndarray], kind: str) -> str | None:
    """Why every bootstrap resample of ``values`` (per part) gives one value, or None when they do
    not: every part's questions have one outcome. ``kind``: ``hits``, ``hit-difference``, ``rr``
    (reciprocal ranks) or ``rr-difference``."""
    if not all(len(v) and np.all(v == v[0]) for v in values):
        return None
    n = sum(len(v) for v in values)
    firsts = {float(v[0]) for v in values}
    if len(firsts) > 1:
        return f"each part's questions all have one outcome, n={n}"
    x = firsts.pop()
    if kind == "hits":
        return f"all n={n} questions hit" if x == 1 else f"no question of n={n} hit"
    if kind == "hit-difference":
        if x == 0:
            return f"A and B agree on all n={n} questions"
        return f"{'A' if x > 0 else 'B'} alone hits all n={n} questions"
    if kind == "rr":
        return f"no question of n={n} hit" if x == 0 else f"all n={n} questions have reciprocal rank {x:.4g}"
    return f"A and B agree on all n={n} questions" if x == 0 else f"all n={n} questions differ by {x:+.4g}"


def compare(
    systems: Sequence[System],
    *,
    ks: Sequence[int] | None = None,
    baseline: str | None = None,
    mrr_k: int | None = None,
    seed: int = 0,
    resamples: int = stats.RESAMPLES,
    permutations: int = stats.RESAMPLES,
    confidence: float = 0.95,
    by_part: bool = False,
) -> Comparison:
    """Compare ``systems`` (every pair, or each against ``baseline``: a label, a result file or a
    name, :func:`resolve_system`); with ``by_part`` also each part's paired tests. See the module
    docstring."""
    check_comparable(systems)
    depth = min(s.result.depth for s in systems)
    ks = sorted(set(ks or systems[0].result.ks))
    too_deep = [k for k in ks if k > depth]
    if too_deep:
        raise HarnessError(f"cutoff {too_deep[0]} is deeper than the shallowest result's depth ({depth})")
    if any(k < 1 for k in ks):
        raise HarnessError("cutoffs must be positive")
    mrr_k = max(ks) if mrr_k is None else mrr_k
    if not 1 <= mrr_k <= depth:
        raise HarnessError(f"--mrr-k {mrr_k} must be between 1 and the shallowest result's depth ({depth})")
    if resamples < 1 or permutations < 1:
        raise HarnessError("resamples and permutations must be positive")
    labels = [s.label for s in systems]
    if baseline is not None:
        baseline = resolve_system(baseline, systems)
    out = Comparison(
        suite=systems[0].result.data["suite"], systems=list(systems), ks=ks, mrr_k=mrr_k, seed=seed,
        resamples=resamples, permutations=permutations, confidence=confidence,
    )
    parts = list(systems[0].result.ranks)
    ranks = {s.label: [list(s.result.ranks[p].values()) for p in parts] for s in systems}

    def interval(values: list[np.ndarray], kind: str, *names: object) -> Estimate:
        low, high = stats.bootstrap_ci(values, confidence=confidence, resamples=resamples, rng=_rng(seed, *names))
        return Estimate(stats.macro_mean(values), low, high, _degenerate(values, kind))

    for label in labels:
        out.accuracy[label] = {}
        out.accuracy_by_part[label] = {}
        for k in ks:
            per_part = [stats.hits(r, k) for r in ranks[label]]
            out.accuracy[label][k] = interval(per_part, "hits", "accuracy", label, k)
            out.accuracy_by_part[label][k] = {
                p: interval([h], "hits", "accuracy", label, k, p) for p, h in zip(parts, per_part)
            }
        out.mrr[label] = interval([stats.reciprocal_ranks(r, mrr_k) for r in ranks[label]], "rr", "mrr", label, mrr_k)

    if baseline is None:
        pairs = list(combinations(labels, 2))
    else:
        pairs = [(other, baseline) for other in labels if other != baseline]

    def pair_tests(a: str, b: str, part: int | None) -> list[PairTest]:
        """The paired tests of ``a`` and ``b`` over all parts (``part`` None), or over one part's
        questions alone; the same functions either way, the part in each statistic's seed name."""
        chosen = range(len(parts)) if part is None else [part]
        where = () if part is None else (parts[part],)
        name = None if part is None else parts[part]
        found = []
        for k in ks:
            a_hits = [stats.hits(ranks[a][i], k) for i in chosen]
            b_hits = [stats.hits(ranks[b][i], k) for i in chosen]
            diff = interval([x - y for x, y in zip(a_hits, b_hits)], "hit-difference", "accuracy-difference", a, b, k, *where)
            mc = stats.mcnemar_exact(np.concatenate(a_hits), np.concatenate(b_hits))
            found.append(PairTest(a, b, f"top-{k}", diff, "exact McNemar", mc.p_value, a_only=mc.b, b_only=mc.c, part=name))
        a_rr = [stats.reciprocal_ranks(ranks[a][i], mrr_k) for i in chosen]
        b_rr = [stats.reciprocal_ranks(ranks[b][i], mrr_k) for i in chosen]
        d = [x - y for x, y in zip(a_rr, b_rr)]
        diff = interval(d, "rr-difference", "mrr-difference", a, b, mrr_k, *where)
        p = stats.paired_randomization(d, permutations=permutations, rng=_rng(seed, "mrr-randomization", a, b, mrr_k, *where))
        found.append(PairTest(a, b, f"MRR@{mrr_k}", diff, "paired randomisation", p, part=name))
        return found

    def corrected(tests: list[PairTest]) -> list[PairTest]:
        adjusted = stats.holm([t.p_value for t in tests])
        return [replace(t, p_holm=p) for t, p in zip(tests, adjusted)]

    out.pairs = corrected([t for a, b in pairs for t in pair_tests(a, b, None)])
    if by_part:
        out.pairs_by_part = corrected([t for a, b in pairs for i in range(len(parts)) for t in pair_tests(a, b, i)])
    return out


def _points(value: float, signed: bool = False) -> str:
    return f"{100 * value:+.2f}" if signed else f"{100 * value:.2f}"


def _ci(e: Estimate) -> str:
    interval = f"[{100 * e.low:.2f}, {100 * e.high:.2f}]"
    return f"{interval} (degenerate: {e.degenerate})" if e.degenerate else interval


_p = format_p

#: The note under tables with a degenerate interval.
_DEGENERATE_NOTE = (
    "An interval marked degenerate is a single point because every bootstrap resample gives the same "
    "value: every question (within each part) has the same outcome, e.g. all of them hit. It does not "
    "mean there is no uncertainty; the sample cannot show any."
)


def domain_note(systems: Sequence[tuple[str, Result]]) -> str | None:
    """When the systems differ in how they stand to the suite (in-domain, zero-shot, unknown:
    :func:`harness.results.meta.result_domain`), a line saying which is which; None when they agree."""
    domains = [(label, result_domain(result)) for label, result in systems]
    if len({d for _, d in domains}) < 2:
        return None
    shown = "; ".join(f"{markdown_text(label)}: {d}" for label, d in domains)
    return (f"Not alike in training: {shown} (in-domain: trained on the suite's training split; zero-shot: on none "
            "of it): a difference between them is the model's and its training data's together.")


def format_comparison(c: Comparison, *, by_part: bool = False) -> str:
    """The comparison as text: what was computed, a table of estimates, a table of paired tests;
    with ``by_part`` each part's estimates and (when computed: ``compare(by_part=True)``) each
    part's paired tests. Degenerate intervals say why; p-values are in one format (:func:`format_p`)."""
    from tabulate import tabulate

    suite = c.suite
    n = sum(p["questions"] for p in suite["parts"])
    parts = len(suite["parts"])
    level = f"{100 * c.confidence:g}%"
    md = markdown_text
    shown: list[Estimate] = []

    def cell(e: Estimate, signed: bool = False) -> str:
        shown.append(e)
        return f"{_points(e.value, signed)} {_ci(e)}"

    def tests_table(tests: Sequence[PairTest], *, with_part: bool = False) -> str:
        table = []
        for t in tests:
            shown.append(t.difference)
            table.append(
                ([md(t.part)] if with_part else [])
                + [md(t.a), md(t.b), t.measure, _points(t.difference.value, True), _ci(t.difference),
                   "" if t.a_only is None else f"{t.a_only} / {t.b_only}", format_p(t.p_value), format_p(t.p_holm),
                   "*" if t.significant else ""]
            )
        headers = (["part"] if with_part else []) + ["A", "B", "measure", "A - B", f"{level} CI", "A only / B only", "p", "p (Holm)", ""]
        return tabulate(table, headers=headers, tablefmt="github", disable_numparse=True)

    lines = [
        f"{md(suite['name'])}{' (SYNTHETIC)' if suite.get('synthetic') else ''}: {n} questions"
        + (f" in {parts} parts, macro-averaged" if parts > 1 else ""),
        f"{level} percentile bootstrap intervals over {c.resamples:,} resamples of the questions"
        + (" (within each part)" if parts > 1 else "")
        + f"; seed {c.seed}.",
        "",
    ]
    headers = ["system"] + [f"top-{k} {level} CI" for k in c.ks] + [f"MRR@{c.mrr_k}"]
    rows = [
        [md(s.label)] + [cell(e) for e in c.accuracy[s.label].values()] + [cell(c.mrr[s.label])]
        for s in c.systems
    ]
    lines.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
    approximate = [(s.label, note) for s in c.systems if (note := approximate_search(s.result))]
    if approximate:
        lines += ["", "Not exact: " + "; ".join(f"{md(label)}: {note}" for label, note in approximate)
                  + ": its rankings need not be the exact inner-product top-k."]
    if (note := domain_note([(s.label, s.result) for s in c.systems])) is not None:
        lines += ["", note]
    if by_part and parts == 1:
        lines += ["", "(one part: its numbers are the ones above)"]
    if by_part and parts > 1:
        for k in c.ks:
            table = [
                [md(p)] + [cell(e) for e in (c.accuracy_by_part[s.label][k][p] for s in c.systems)]
                for p in c.accuracy_by_part[c.systems[0].label][k]
            ]
            lines += ["", f"top-{k} by part:", tabulate(table, headers=["part"] + [md(s.label) for s in c.systems], tablefmt="github", disable_numparse=True)]
    lines += [
        "",
        f"Paired tests ({len(c.pairs)}; p-values Holm-corrected across all of them; * where corrected p <= {ALPHA}): "
        f"top-k by an exact McNemar test on each question's hit (A only / B only: questions one system answers "
        f"within k and the other does not); MRR@{c.mrr_k} by a paired sign-flip randomisation test of the macro "
        f"difference ({c.permutations:,} permutations, exact when fewer sign patterns exist). Differences are A - B "
        f"in points with {level} paired bootstrap intervals.",
        "",
        tests_table(c.pairs),
    ]
    if by_part and parts > 1 and c.pairs_by_part is not None:
        lines += [
            "",
            f"Paired tests by part ({len(c.pairs_by_part)}): the same tests and intervals on each part's questions "
            f"alone; p-values Holm-corrected across these per-part tests (a family of their own, so the overall "
            f"numbers above do not change); * where corrected p <= {ALPHA}.",
        ]
        measures = list(dict.fromkeys(t.measure for t in c.pairs_by_part))
        for measure in measures:
            lines += ["", f"{measure} differences by part:",
                      tests_table([t for t in c.pairs_by_part if t.measure == measure], with_part=True)]
    if any(e.degenerate for e in shown):
        lines += ["", _DEGENERATE_NOTE]
    return "\n".join(lines) + "\n"

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
(pairs x (cutoffs + 1)). Random draws come from a seed per statistic, derived from ``seed`` and the
statistic's name (systems, cutoff), so adding a system never changes another's numbers.

The text output's tables are markdown: names from result files (systems, suite, parts) are
written through :func:`harness.results.report.markdown_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis import stats
from harness.errors import HarnessError
from harness.results.leaderboard import pick_newest
from harness.results.report import markdown_text, one_line
from harness.results.schema import Result, read_result, read_results

#: Significance level at which pairs are marked.
ALPHA = 0.05


@dataclass(frozen=True)
class System:
    """A compared configuration: its label (unique within one comparison) and its result."""

    label: str
    result: Result


@dataclass(frozen=True)
class Estimate:
    """A point estimate (fraction) and its confidence interval."""

    value: float
    low: float
    high: float


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

    def to_json(self) -> dict[str, Any]:
        def est(e: Estimate) -> dict[str, float]:
            return {"value": e.value, "low": e.low, "high": e.high}

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
                }
                for s in self.systems
            ],
            "pairs": [
                {
                    "a": t.a, "b": t.b, "measure": t.measure, "difference": est(t.difference), "test": t.test,
                    "a_only": t.a_only, "b_only": t.b_only, "p": t.p_value, "p_holm": t.p_holm,
                    "significant": t.significant,
                }
                for t in self.pairs
            ],
        }


def _rng(seed: int, *names: object):
    """The random stream of one statistic: :func:`harness.analysis.stats.seeded`."""
    return stats.seeded(seed, *names)


def find_result(reference: str, *, suite: str | None, results: Sequence[Result]) -> Result:
    """A result file path, or a retriever name (as the leaderboard shows it) among ``results``."""
    path = Path(reference)
    if reference.endswith(".json") or path.is_file():
        if not path.is_file():
            raise HarnessError(f"{reference}: no such result file")
        return read_result(path)
    if suite is None:
        raise HarnessError(f"{reference!r} is not a result file; to look results up by retriever name, give --suite")
    matches = [r for r in results if r.suite == suite and r.label == reference]
    if not matches:
        known = sorted({r.label for r in results if r.suite == suite})
        hint = f" (results of {suite}: {', '.join(one_line(k) for k in known)})" if known else f" (no results of suite {suite})"
        raise HarnessError(f"no result of {reference!r} on suite {suite}{hint}")
    configs = {r.config_key() for r in matches}
    if len(configs) > 1:
        files = ", ".join(sorted(one_line(r.path.name) for r in matches if r.path))
        raise HarnessError(f"{reference!r} on {suite} has {len(configs)} configurations ({files}): name the result file")
    return pick_newest(matches)


def load_systems(references: Sequence[str], *, suite: str | None, results_dir: Path) -> list[System]:
    """Resolve each reference (file or name) and give each a unique label."""
    by_name = any(not r.endswith(".json") and not Path(r).is_file() for r in references)
    if by_name and not Path(results_dir).is_dir():
        raise HarnessError(f"--results-dir {results_dir}: no such folder (results named by retriever are looked up there)")
    pool = read_results(results_dir) if by_name else []
    chosen = [find_result(ref, suite=suite, results=pool) for ref in references]
    labels = [r.label for r in chosen]
    systems = []
    for ref, result, label in zip(references, chosen, labels):
        if labels.count(label) > 1:
            label = f"{label} ({result.config_key()})"
        systems.append(System(label, result))
    seen: dict[str, str] = {}
    for ref, s in zip(references, systems):
        if s.label in seen:
            raise HarnessError(f"{ref} and {seen[s.label]} are the same result; compare different ones")
        seen[s.label] = ref
    return systems


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
        if other.result.data["matcher"] != first.result.data["matcher"]:
            raise HarnessError(f"{where} were scored by different matchers")
        a_ranks, b_ranks = other.result.ranks, first.result.ranks
        if list(a_ranks) != list(b_ranks) or any(list(a_ranks[p]) != list(b_ranks[p]) for p in a_ranks):
            raise HarnessError(f"{where} do not hold the same questions in the same parts; their questions cannot be paired")


def _name(system: System) -> str:
    return str(system.result.path) if system.result.path else system.label


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
) -> Comparison:
    """Compare ``systems`` (every pair, or each against ``baseline``); see the module docstring."""
    check_comparable(systems)
    depth = min(s.result.depth for s in systems)
    ks = sorted(set(ks or [k for k in systems[0].result.data["k"]]))
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
    if baseline is not None and baseline not in labels:
        raise HarnessError(f"--baseline {baseline!r} is not among the compared systems ({', '.join(labels)})")
    out = Comparison(
        suite=systems[0].result.data["suite"], systems=list(systems), ks=ks, mrr_k=mrr_k, seed=seed,
        resamples=resamples, permutations=permutations, confidence=confidence,
    )
    parts = list(systems[0].result.ranks)
    ranks = {s.label: [list(s.result.ranks[p].values()) for p in parts] for s in systems}

    def interval(values: list[np.ndarray], *names: object) -> Estimate:
        low, high = stats.bootstrap_ci(values, confidence=confidence, resamples=resamples, rng=_rng(seed, *names))
        return Estimate(stats.macro_mean(values), low, high)

    for label in labels:
        out.accuracy[label] = {}
        out.accuracy_by_part[label] = {}
        for k in ks:
            per_part = [stats.hits(r, k) for r in ranks[label]]
            out.accuracy[label][k] = interval(per_part, "accuracy", label, k)
            out.accuracy_by_part[label][k] = {
                p: interval([h], "accuracy", label, k, p) for p, h in zip(parts, per_part)
            }
        out.mrr[label] = interval([stats.reciprocal_ranks(r, mrr_k) for r in ranks[label]], "mrr", label, mrr_k)

    if baseline is None:
        pairs = list(combinations(labels, 2))
    else:
        pairs = [(other, baseline) for other in labels if other != baseline]
    tests: list[PairTest] = []
    for a, b in pairs:
        for k in ks:
            a_hits = [stats.hits(r, k) for r in ranks[a]]
            b_hits = [stats.hits(r, k) for r in ranks[b]]
            diff = interval([x - y for x, y in zip(a_hits, b_hits)], "accuracy-difference", a, b, k)
            mc = stats.mcnemar_exact(np.concatenate(a_hits), np.concatenate(b_hits))
            tests.append(PairTest(a, b, f"top-{k}", diff, "exact McNemar", mc.p_value, a_only=mc.b, b_only=mc.c))
        a_rr = [stats.reciprocal_ranks(r, mrr_k) for r in ranks[a]]
        b_rr = [stats.reciprocal_ranks(r, mrr_k) for r in ranks[b]]
        d = [x - y for x, y in zip(a_rr, b_rr)]
        diff = interval(d, "mrr-difference", a, b, mrr_k)
        p = stats.paired_randomization(d, permutations=permutations, rng=_rng(seed, "mrr-randomization", a, b, mrr_k))
        tests.append(PairTest(a, b, f"MRR@{mrr_k}", diff, "paired randomisation", p))
    adjusted = stats.holm([t.p_value for t in tests])
    out.pairs = [
        PairTest(t.a, t.b, t.measure, t.difference, t.test, t.p_value, p, t.a_only, t.b_only)
        for t, p in zip(tests, adjusted)
    ]
    return out


def _points(value: float, signed: bool = False) -> str:
    return f"{100 * value:+.2f}" if signed else f"{100 * value:.2f}"


def _ci(e: Estimate) -> str:
    return f"[{100 * e.low:.2f}, {100 * e.high:.2f}]"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def format_comparison(c: Comparison, *, by_part: bool = False) -> str:
    """The comparison as text: what was computed, a table of estimates, a table of paired tests."""
    from tabulate import tabulate

    suite = c.suite
    n = sum(p["questions"] for p in suite["parts"])
    parts = len(suite["parts"])
    level = f"{100 * c.confidence:g}%"
    md = markdown_text
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
        [md(s.label)] + [f"{_points(e.value)} {_ci(e)}" for e in c.accuracy[s.label].values()]
        + [f"{_points(c.mrr[s.label].value)} {_ci(c.mrr[s.label])}"]
        for s in c.systems
    ]
    lines.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
    if by_part and parts > 1:
        for k in c.ks:
            table = [
                [md(p)] + [f"{_points(e.value)} {_ci(e)}" for e in (c.accuracy_by_part[s.label][k][p] for s in c.systems)]
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
    ]
    table = [
        [md(t.a), md(t.b), t.measure, _points(t.difference.value, True), _ci(t.difference),
         "" if t.a_only is None else f"{t.a_only} / {t.b_only}", _p(t.p_value), _p(t.p_holm), "*" if t.significant else ""]
        for t in c.pairs
    ]
    headers = ["A", "B", "measure", "A - B", f"{level} CI", "A only / B only", "p", "p (Holm)", ""]
    lines.append(tabulate(table, headers=headers, tablefmt="github", disable_numparse=True))
    return "\n".join(lines) + "\n"

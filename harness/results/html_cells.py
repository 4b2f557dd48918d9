"""Cells of the HTML board that explain a number: what a run cost (:func:`cost_summary`,
:func:`cost_details`) and a re-ranked row against its ceiling (the first stage's top-N, and the
questions won and lost: :mod:`harness.analysis.ceiling`). Every text goes through :func:`e`
(:func:`html.escape` of :func:`~harness.results.report.one_line`), attributes double-quoted."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.ceiling import Ceiling, question_list
from harness.analysis.stats import format_p
from harness.results.leaderboard import BoardRow
from harness.results.report import one_line

#: How many ids of each list of questions won or lost a row's details show before "… and N more".
IDS_IN_HTML = 50


def e(text: object) -> str:
    """``text`` on one line (:func:`one_line`), escaped for HTML text and double-quoted attributes."""
    return html.escape(one_line(text), quote=True)


def pct(value: float) -> str:
    return f"{100 * value:.2f}"


def ceiling_td(row: BoardRow) -> str:
    """The ceiling cell of a re-ranked row: the share of questions whose first-stage top N held an
    answer, and N; its title gives the wins and losses at the deepest cutoff."""
    c = row.ceiling
    if c is None:
        return '<td class="num" data-sort="">–</td>'
    deepest = c.at[-1] if c.at else None
    title = (f"share of questions the first stage answered within the {c.depth} hits re-ranked: the best any "
             "re-ranking of them can reach")
    if deepest is not None:
        title += f"; at top-{deepest.k}: {deepest.wins} won, {deepest.losses} lost against the first stage"
    return (
        f'<td class="num" data-sort="{100 * c.ceiling:.6f}" title="{e(title)}">ceiling {100 * c.ceiling:.1f}'
        f'<small class="ceiling-depth">(first stage top-{c.depth})</small></td>'
    )


def ceiling_table(row: BoardRow) -> str:
    """A re-ranked row's details against its first stage: per cutoff the first stage's and the
    re-ranked top-k, the questions won and lost, and the exact McNemar p-value."""
    c = row.ceiling
    if c is None:
        return ""
    lines = "".join(
        f'<tr><th>top-{a.k}</th><td class="num">{pct(a.first_stage)}</td><td class="num">{pct(a.reranked)}</td>'
        f'<td class="num">{100 * (a.reranked - a.first_stage):+.2f}</td><td class="num">{a.wins} / {a.losses}</td>'
        f'<td class="num">{e(format_p(a.p_value))}</td></tr>'
        for a in c.at
    )
    return (
        f'<table class="parts"><caption>Re-ranking against its ceiling: {pct(c.ceiling)}% of questions had an answer in '
        f"the first stage's top {c.depth}{' (first seed)' if row.seeds > 1 else ''}</caption><thead><tr><th>cutoff</th>"
        '<th class="num">first stage</th><th class="num">re-ranked</th><th class="num">change</th>'
        '<th class="num">wins / losses</th><th class="num">p (exact McNemar)</th></tr></thead>'
        f"<tbody>{lines}</tbody></table>{_won_lost(c)}"
    )


def _won_lost(c: Ceiling) -> str:
    """The questions a re-ranking won and lost at each cutoff with any (won at k: answered within k
    after re-ranking and not by the first stage; lost: the other way round), the first
    :data:`IDS_IN_HTML` ids of each (:func:`~harness.analysis.ceiling.question_list`)."""
    def listed(what: str, questions: Sequence[tuple[str, str]]) -> str:
        if not questions:
            return f"{what} 0"
        return f"{what} {len(questions)}: " + e(question_list(questions, parts=len(c.parts), shown=IDS_IN_HTML))

    items = "".join(
        f"<li>top-{a.k}: {listed('won', a.won)}; {listed('lost', a.lost)}</li>" for a in c.at if a.won or a.lost
    )
    if not items:
        return ""
    named = "part/id" if len(c.parts) != 1 else "id"
    return (
        f'<p class="note">Questions won (answered within k only after re-ranking) and lost (only before), by {named}; '
        f"the first {IDS_IN_HTML} of each (<code>harness compare --json</code> lists every one):</p>"
        f'<ul class="questions">{items}</ul>'
    )


def _size(count: int) -> str:
    """A byte count in decimal units: ``812 B``, ``1.2 GB``."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} B"


def cost_summary(cost: Mapping[str, Any]) -> str:
    """The compact cost cell: ``cpu ×1 · 0.00 GPU-h · host 1.2 GB · 3,610 q/s`` (fields a record
    lacks are left out)."""
    items: list[str] = []
    if cost.get("device_kind"):
        items.append(f"{cost['device_kind']} ×{cost['device_count']}" if cost.get("device_count") is not None else cost["device_kind"])
    if cost.get("gpu_hours") is not None:
        items.append(f"{cost['gpu_hours']:.2f} GPU-h")
    if cost.get("peak_host_bytes") is not None:
        items.append(f"host {_size(cost['peak_host_bytes'])}")
    if cost.get("peak_gpu_bytes") is not None:
        items.append(f"GPU {_size(cost['peak_gpu_bytes'])}")
    if cost.get("search_queries_per_s") is not None:
        items.append(f"{cost['search_queries_per_s']:,.0f} q/s")
    return " · ".join(items)


def cost_details(cost: Mapping[str, Any]) -> str:
    """Every field of a cost record in words, for a row's details."""
    items = [cost_summary(cost)]
    for key, label in (("index_bytes", "index"), ("embedding_bytes", "embeddings")):
        if cost.get(key) is not None:
            items.append(f"{label} {_size(cost[key])}")
    if cost.get("encode_passages_per_s") is not None:
        items.append(f"{cost['encode_passages_per_s']:,.0f} passages/s encoded")
    if cost.get("seconds") is not None:
        items.append(f"{cost['seconds']:,.1f} s in all")
    return " · ".join(item for item in items if item)


def cost_td(cost: Mapping[str, Any] | None) -> str:
    if cost is None:
        return '<td class="num" data-sort="">–</td>'
    key = cost.get("gpu_hours") if cost.get("gpu_hours") is not None else cost.get("seconds")
    sort = "" if key is None else f"{float(key):.6f}"
    return f'<td class="num cost" data-sort="{sort}" title="{e(cost_details(cost))}">{e(cost_summary(cost))}</td>'

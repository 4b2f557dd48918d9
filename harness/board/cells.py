"""Texts of the HTML board's cells that explain a number: percentages, and what a run cost
(:func:`cost_summary` in its cell, :func:`cost_details` in its title and a row's details). The
templates escape them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: How many ids of each list of questions won or lost a row's details show before "… and N more".
IDS_IN_HTML = 50


def pct(value: float) -> str:
    """A fraction as a percentage with two decimals: ``0.5`` -> ``50.00``."""
    return f"{100 * value:.2f}"


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


def cost_sort(cost: Mapping[str, Any]) -> str:
    """What a cost cell sorts by: its GPU hours, else its seconds (empty without either)."""
    key = cost.get("gpu_hours") if cost.get("gpu_hours") is not None else cost.get("seconds")
    return "" if key is None else f"{float(key):.6f}"

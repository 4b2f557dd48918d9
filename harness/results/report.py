"""Rendering one result as a terminal table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabulate import tabulate


def format_parameters(parameters: Mapping[str, Any], prefix: str = "") -> str:
    """``k1=0.9, b=0.4``; nested mappings as dotted keys (``sparse.parameters.k1=0.9``), lists of
    mappings by position (``components[0].name=bm25``)."""
    items = []
    for key, value in parameters.items():
        if isinstance(value, Mapping):
            items.append(format_parameters(value, f"{prefix}{key}."))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            for i, v in enumerate(value):
                if isinstance(v, Mapping):
                    items.append(format_parameters(v, f"{prefix}{key}[{i}]."))
                else:
                    items.append(f"{prefix}{key}[{i}]={v}")
        else:
            items.append(f"{prefix}{key}={value}")
    return ", ".join(item for item in items if item)


def corpus_size(corpus: Mapping[str, Any]) -> str:
    """``21015324 passages``, or ``corpus not opened`` when scoring never needed it (a run file
    that carries passage text)."""
    passages = corpus.get("passages")
    return f"corpus not opened ({corpus.get('name')})" if passages is None else f"{passages} passages"


def _label(metric: str, k: str) -> str:
    from harness import registry

    if metric in registry.metrics():
        return registry.metrics().get(metric).label.format(name=metric, k=k)
    return f"{metric}@{k}"


def format_result_table(result: Mapping[str, Any]) -> str:
    """Each part's metrics and the macro average over parts, in percent."""
    suite, retriever = result["suite"], result["retriever"]
    n_questions = sum(p["questions"] for p in suite["parts"])
    synthetic = " (SYNTHETIC data)" if suite.get("synthetic") else ""
    header = (
        f"suite {suite['name']}{synthetic}: {n_questions} questions in {len(suite['parts'])} part(s), "
        f"{corpus_size(suite['corpus'])}, {suite['match']} matching\n"
        f"retriever {retriever['name']} ({format_parameters(retriever['parameters'])})"
    )
    reranker = result.get("reranker")
    if reranker:
        header += (
            f"\nre-ranked by {reranker['name']} (top {reranker['depth']}; "
            f"{format_parameters(reranker['parameters'])})"
        )
    columns = [(metric, k) for metric, values in result["metrics"].items() for k in values["macro"]]
    headers = ["part", "questions"] + [_label(m, k) for m, k in columns]
    sizes = {p["name"]: p["questions"] for p in suite["parts"]}
    rows = []
    parts = list(result["first_hit_ranks"])
    if len(parts) > 1:
        for part in parts:
            rows.append([part, sizes.get(part, "")] + [100 * result["metrics"][m]["parts"][part][k] for m, k in columns])
        average = f"macro average ({len(parts)} parts)"
    else:
        average = parts[0]
    rows.append([average, n_questions] + [100 * result["metrics"][m]["macro"][k] for m, k in columns])
    return header + "\n\n" + tabulate(rows, headers=headers, floatfmt=".2f")

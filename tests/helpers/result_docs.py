"""Result documents built in tests (valid ``harness-result/1``)."""

from __future__ import annotations

from harness.results.schema import SCHEMA


def make_result(retriever="r", params=None, ranks=None, suite="s", created="2026-01-01T00:00:00Z", depth=100, k=None):
    ranks = ranks if ranks is not None else {"all": {"q1": 0, "q2": 4, "q3": None, "q4": 30}}
    return {
        "schema": SCHEMA,
        "created": created,
        "suite": {
            "name": suite, "description": "", "synthetic": True, "match": "string",
            "questions_fingerprint": "sha256:x",
            "parts": [{"name": p, "questions": len(q)} for p, q in ranks.items()],
            "corpus": {"name": "c", "passages": 10, "fingerprint": "sha256:y"},
        },
        "retriever": {"name": retriever, "plugin": "p", "parameters": params or {"a": 1}},
        "matcher": "dpr-has-answer/1",
        "k": k or [x for x in (1, 5, 20, 100) if x <= depth],
        "depth": depth,
        "first_hit_ranks": ranks,
        "metrics": {},
        "timings": {"search": 0.1},
        "versions": {},
        "machine": {},
    }

"""Corpus files written the way users write them (TSV with a header), for the corpus store and import tests."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path


def write_tsv(path: Path, passages, *, header=("id", "text", "title")) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        for p in passages:
            writer.writerow([p.id, p.text, p.title])
    return path


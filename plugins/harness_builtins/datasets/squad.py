"""SQuAD v1.1 dev as a small real corpus: its paragraphs split into DPR-style 100-word passages."""

from __future__ import annotations

from pathlib import Path

from harness.data.passages import split_article
from harness.data.questions import load_squad
from harness.api import InMemoryCorpus, Passage


def squad_paragraph_corpus(path: Path, *, name: str) -> InMemoryCorpus:
    """Each paragraph split into 100-word passages (the last one shorter), titled by its article
    (SQuAD's ``Super_Bowl_50`` becomes ``Super Bowl 50``); ids are 1-based in file order."""
    passages = []
    for article in load_squad(path):
        title = article["title"].replace("_", " ")
        for paragraph in article["paragraphs"]:
            for chunk_title, text in split_article(title, paragraph["context"]):
                passages.append(Passage(id=str(len(passages) + 1), title=chunk_title, text=text))
    return InMemoryCorpus(name, passages)

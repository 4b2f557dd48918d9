"""A tiny suite over a handful of passages for the dense retriever's tests."""

from __future__ import annotations

from harness.api import Part, Question, Suite
from helpers.dense_models import corpus_of

PASSAGES = [
    ("1", "Paris", "Paris is the capital of France."),
    ("2", "Berlin", "Berlin is the capital of Germany."),
    ("3", "Banana", "The banana is a long yellow fruit."),
    ("4", "Carrot", "The carrot is an orange root vegetable."),
    ("5", "Oak", "The oak is a tree whose fruit is the acorn."),
    ("6", "Salt", "Table salt is sodium chloride."),
    ("7", "Everest", "Everest is the highest mountain on Earth."),
]


def tiny_suite() -> Suite:
    questions = (
        Question(id="q1", text="What is the capital of France?", answers=("Paris",)),
        Question(id="q2", text="What colour is a banana?", answers=("yellow",)),
        Question(id="q3", text="What is salt made of?", answers=("sodium chloride",)),
    )
    return Suite(name="tiny", parts=(Part(name="a", questions=questions[:2]), Part(name="b", questions=questions[2:])),
                 corpus=corpus_of(PASSAGES), default_k=(1, 5))


"""``example-capitals``: ten hand-written questions about the capitals of made-up countries.

The corpus has one passage per capital and ten distractors: a few are built to fool a word-overlap
retriever (Brellin's "capital markets", Tamsk's former capital), the rest only mention a country.
Answers are matched as strings in passage text (DPR's ``has_answer``), never in titles.
"""

from __future__ import annotations

from harness.api import InMemoryCorpus, Part, Passage, Question, Suite

#: (id, title, text)
PASSAGES = (
    ("p01", "Valdoria", "The capital of Valdoria is Mirrel, a river port famous for glass."),
    ("p02", "Quenmark", "The capital of Quenmark is Ostbury, a market town."),
    ("p03", "Osterhal", "The capital of Osterhal is Drev, a small town in the mountains."),
    ("p04", "Brellin", "The capital of Brellin is Kessary."),
    ("p05", "Tamsk", "The capital of Tamsk is Lindra."),
    ("p06", "Ilvaria", "The capital of Ilvaria is Port Selm, on the western coast."),
    ("p07", "Corvenna", "The capital of Corvenna is Abberley."),
    ("p08", "Juntal", "The capital of Juntal is Hesk, known for its salt mines."),
    ("p09", "Maresk", "The capital of Maresk is Tollan."),
    ("p10", "Pelloria", "Pelloria's parliament sits in Caddon."),
    # Distractors.
    ("d01", "Republic of Brellin", "The Republic of Brellin is a city state whose capital markets are the largest in the region."),
    ("d02", "History of Tamsk", "Until 1920 the capital of Tamsk was Vorny; today the town is a quiet market."),
    ("d03", "New Valdoria", "New Valdoria is a province whose chief town is Sarn."),
    ("d04", "Quenmark national football team", "Quenmark played its first match in 1931 and lost."),
    ("d05", "Osterhal cuisine", "Osterhal is known for smoked fish and rye bread."),
    ("d06", "Ilvarian language", "Ilvarian is spoken by about two million people."),
    ("d07", "Juntal River", "The Juntal River flows north for 300 kilometres."),
    ("d08", "Maresk (surname)", "Maresk is a surname common in the north."),
    ("d09", "Capital punishment in Corvenna", "Corvenna abolished capital punishment in 1962."),
    ("d10", "Pelloria Airlines", "Pelloria Airlines flies to twelve countries from its hub at Orm."),
)

#: part name -> (question id, question, answers)
QUESTIONS = {
    "plain": (
        ("q01", "What is the capital of Valdoria?", ("Mirrel",)),
        ("q03", "What is the capital of Osterhal?", ("Drev",)),
        ("q06", "What is the capital of Ilvaria?", ("Port Selm",)),
        ("q08", "What is the capital of Juntal?", ("Hesk",)),
        ("q09", "What is the capital of Maresk?", ("Tollan",)),
    ),
    "tricky": (
        ("q02", "Which town is the capital of Quenmark?", ("Ostbury",)),
        ("q04", "Which city is the capital of the Republic of Brellin?", ("Kessary",)),
        ("q05", "What is the capital of Tamsk today?", ("Lindra",)),
        ("q07", "Name the capital of Corvenna.", ("Abberley",)),
        ("q10", "Which city hosts the government of Pelloria?", ("Caddon",)),
    ),
}


def capitals_suite() -> Suite:
    corpus = InMemoryCorpus(
        "example-capitals-corpus",
        (Passage(id=pid, title=title, text=text) for pid, title, text in PASSAGES),
    )
    parts = tuple(
        Part(name=name, questions=tuple(Question(id=qid, text=text, answers=answers) for qid, text, answers in rows))
        for name, rows in QUESTIONS.items()
    )
    return Suite(
        name="example-capitals",
        parts=parts,
        corpus=corpus,
        match="string",
        default_k=(1, 5, 20),
        synthetic=True,
        description="capitals of made-up countries (example plugin)",
    )

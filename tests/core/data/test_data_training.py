"""Training data: DPR biencoder files (harness.data.training), distant supervision, the
``harness data make-training`` command and the ``retriever`` negative miner."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from harness.api import Hit, InMemoryCorpus, Passage, Question, RunContext, TrainingExample
from harness.cli.main import main
from harness.data.training import (
    AnswerCheck,
    ReadStats,
    derived_passage_id,
    distant_supervision,
    hard_negatives,
    read_training_examples,
    write_training_examples,
)
from harness.errors import InputFileError

# ------------------------------------------------------------------------------------------ reader

RECORDS = [
    {
        "dataset": "nq_train_psgs_w100",
        "question": "who wrote hamlet",
        "answers": ["William Shakespeare", "Shakespeare"],
        "positive_ctxs": [
            {"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare.", "score": 1000,
             "title_score": 1, "passage_id": "11828866"}
        ],
        "negative_ctxs": [{"title": "Macbeth", "text": "A play.", "psg_id": 42}],
        "hard_negative_ctxs": [
            {"title": "Hamlet (film)", "text": "A 1948 film.", "passage_id": "7"},
            {"title": "Elsinore", "text": "A castle in Denmark.", "id": "wiki:9"},
        ],
    },
    {
        "question": "where was Ann Lee born?",
        "answers": ["Oslo"],
        "positive_ctxs": [{"title": "Ann Lee", "text": "Ann Lee was born in Oslo.", "psg_id": 12}],
        "label": "P19",
    },
    {
        "question": "what is the capital of France",
        "answers": ["Paris"],
        "positive_ctxs": [{"text": "Paris is the capital of France."}],  # no title, no id
        "relation": "P36",
    },
]


def _write_array(path: Path, records, *, gz=False) -> Path:
    text = "[\n" + ",\n".join(json.dumps(r, indent=1) for r in records) + "\n]\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _check_examples(examples):
    first, second, third = examples
    assert first.question == "who wrote hamlet"
    assert first.answers == ("William Shakespeare", "Shakespeare")
    assert first.positives == (
        Passage(id="11828866", title="Hamlet", text="Hamlet is a tragedy by William Shakespeare."),
    )
    assert first.negatives == (Passage(id="42", title="Macbeth", text="A play."),)  # psg_id, a number
    assert [p.id for p in first.hard_negatives] == ["7", "wiki:9"]
    assert first.label is None
    assert second.positives[0].id == "12" and second.label == "P19"
    assert second.hard_negatives == () and second.negatives == ()
    derived = derived_passage_id("", "Paris is the capital of France.")
    assert third.positives == (Passage(id=derived, title="", text="Paris is the capital of France."),)
    assert third.label == "P36"  # "relation" is read as the label
    assert derived.startswith("sha256:") and derived == derived_passage_id("", "Paris is the capital of France.")
    assert derived != derived_passage_id("Paris", " is the capital of France.")


def test_read_plain_gzip_and_json_lines(tmp_path):
    _check_examples(list(read_training_examples(_write_array(tmp_path / "train.json", RECORDS))))
    # gzip is recognised by its content, whatever the name
    _check_examples(list(read_training_examples(_write_array(tmp_path / "train.json.gz", RECORDS, gz=True))))
    _check_examples(list(read_training_examples(_write_array(tmp_path / "odd-name", RECORDS, gz=True))))
    lines = tmp_path / "train.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n\n" for r in RECORDS), encoding="utf-8")
    _check_examples(list(read_training_examples(lines)))


def test_reading_is_streamed(tmp_path):
    """The first example comes before the file's end is read: a broken tail fails only later."""
    path = tmp_path / "big.json"
    path.write_text("[" + json.dumps(RECORDS[0]) + ",\n" + "x" * 5_000_000, encoding="utf-8")
    examples = read_training_examples(path)
    assert next(examples).question == "who wrote hamlet"
    with pytest.raises(InputFileError, match=r"big.json:2: invalid JSON"):
        next(examples)


def test_examples_without_positives_are_skipped_and_counted(tmp_path):
    records = [
        RECORDS[1],
        {"question": "no positives", "answers": ["x"], "positive_ctxs": [], "hard_negative_ctxs": [{"text": "t"}]},
        {"question": "no positive key", "answers": ["x"]},
        RECORDS[2],
    ]
    stats = ReadStats()
    examples = list(read_training_examples(_write_array(tmp_path / "t.json", records), stats=stats))
    assert [e.question for e in examples] == [RECORDS[1]["question"], RECORDS[2]["question"]]
    assert stats == ReadStats(examples=2, without_positives=2)


@pytest.mark.parametrize(
    "element, problem",
    [
        ('"just a string"', 'each example must be an object with "question" and "answers", got str'),
        ('{"answers": ["a"]}', '"question" must be a non-empty string'),
        ('{"question": "  ", "answers": ["a"]}', '"question" must be a non-empty string'),
        ('{"question": "q", "answers": "a"}', '"answers" must be a list of strings'),
        ('{"question": "q", "answers": [1]}', '"answers" must be a list of strings'),
        ('{"question": "q", "answers": ["a", 3.5]}', '"answers" must be a list of strings; "answers"\\[1\\] is float 3.5'),
        ('{"question": "q", "answers": ["a", null]}', '"answers" must be a list of strings; "answers"\\[1\\] is NoneType null'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": {"text": "t"}}', '"positive_ctxs" must be a list of passages, got dict'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"title": "t"}]}', 'positive_ctxs\\[0\\]: a passage needs "text"'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t"}, 3]}', "positive_ctxs\\[1\\]: each passage must be an object"),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t", "title": 5}]}', '"title" must be a string'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t", "passage_id": [1]}]}', '"passage_id" must be a string or an integer'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t", "psg_id": ""}]}', '"psg_id" is empty'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t"}], "hard_negative_ctxs": [{"text": 1}]}', 'hard_negative_ctxs\\[0\\]: a passage needs "text"'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t"}], "label": 19}', '"label" must be a string'),
        ('{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t"}] oops', "invalid JSON"),
    ],
)
def test_malformed_elements_are_one_line_errors_with_the_line(tmp_path, element, problem):
    path = tmp_path / "bad.json"
    good = json.dumps(RECORDS[1])
    path.write_text(f"[\n{good},\n{good},\n\n{element}\n]\n", encoding="utf-8")
    with pytest.raises(InputFileError) as caught:
        list(read_training_examples(path))
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.line == 5
    assert message.startswith(f"{path}:5: ")
    import re

    assert re.search(problem, message), message
    # the same element in JSON lines: its own line
    lines = tmp_path / "bad.jsonl"
    lines.write_text(f"{good}\n{good}\n{element}\n", encoding="utf-8")
    with pytest.raises(InputFileError) as caught:
        list(read_training_examples(lines))
    assert caught.value.line == 3 and re.search(problem, str(caught.value))


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "the file is empty"),
        (b'{"question": 1}', '"question" must be a non-empty string'),
        (b'"text"', "expected a JSON array of examples"),
        (b'[{"question": "q", "answers": ["a"], "positive_ctxs": [{"text": "t"}]}', "the array is not closed"),
        (b'[{"question": "q", "answers": ["a\xff"], "positive_ctxs": [{"text": "t"}]}]', "not UTF-8 text"),
        (gzip.compress(b'[{"question": "q"}]')[:-6], "damaged gzip data"),
    ],
)
def test_malformed_files(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=problem) as caught:
        list(read_training_examples(path))
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_missing_file_is_a_one_line_error(tmp_path):
    with pytest.raises(InputFileError, match="cannot read training file"):
        list(read_training_examples(tmp_path / "nope.json"))


# ------------------------------------------------------------------------------------------ writer


def _examples():
    return [
        TrainingExample(
            question="who wrote “hamlet”?",
            answers=("William Shakespeare",),
            positives=(Passage(id="1", title="Hamlet", text="Hamlet is by William Shakespeare."),),
            hard_negatives=(Passage(id="2", title="Elsinore", text="A castle."),),
            negatives=(Passage(id="3", title="", text="Random ünïcode."),),
            label="P50",
        ),
        TrainingExample(
            question="q2", answers=(), positives=(Passage(id=derived_passage_id("T", "x"), title="T", text="x"),),
        ),
    ]


@pytest.mark.parametrize("name", ["train.json", "train.json.gz", "train.jsonl", "train.jsonl.gz"])
def test_writer_round_trip(tmp_path, name):
    path = tmp_path / "out" / name
    assert write_training_examples(path, iter(_examples())) == 2
    assert list(read_training_examples(path)) == _examples()
    raw = path.read_bytes()
    assert raw.startswith(b"\x1f\x8b") == name.endswith(".gz")
    text = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")
    if ".jsonl" in name:
        assert len(text.splitlines()) == 2
    else:  # DPR's format, readable by json.load
        data = json.loads(text)
        assert data[0]["positive_ctxs"] == [{"title": "Hamlet", "text": "Hamlet is by William Shakespeare.", "passage_id": "1"}]
        assert data[0]["label"] == "P50" and "label" not in data[1]
        assert set(data[1]) == {"question", "answers", "positive_ctxs", "negative_ctxs", "hard_negative_ctxs"}
    assert os.listdir(path.parent) == [name]


def test_writer_empty(tmp_path):
    assert write_training_examples(tmp_path / "e.json", []) == 0
    assert json.loads((tmp_path / "e.json").read_text()) == []


def test_writer_is_atomic(tmp_path):
    path = tmp_path / "train.json.gz"
    write_training_examples(path, _examples())
    before = path.read_bytes()

    def failing():
        yield from _examples()
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_training_examples(path, failing())
    assert path.read_bytes() == before  # the old file is untouched
    assert os.listdir(tmp_path) == ["train.json.gz"]  # and no temporary file is left

    with pytest.raises(TypeError):
        write_training_examples(tmp_path / "new.json", [_examples()[0], "not an example"])
    assert os.listdir(tmp_path) == ["train.json.gz"]


# ------------------------------------------------------------------------------- distant supervision

P = {
    "t-only": Passage(id="t-only", title="Oslo", text="A city on a fjord, capital of a country."),  # answer in title only
    "neg1": Passage(id="neg1", title="Bergen", text="Ann Lee often visited Bergen."),
    "pos": Passage(id="pos", title="Ann Lee", text="Ann Lee was born in Oslo in 1950."),
    "pos2": Passage(id="pos2", title="Ann Lee", text="Later she returned to oslo."),
    "neg2": Passage(id="neg2", title="Ann Lee (singer)", text="A singer born in Tromsø."),
    "neg3": Passage(id="neg3", title="Lee", text="A surname."),
    "span": Passage(id="span", title="New", text="York is where Bo lives."),  # "New York" across title and text
    "other": Passage(id="other", title="Bo", text="Bo was born in New York."),
}
CORPUS = InMemoryCorpus("tiny", P.values())


def test_distant_supervision_by_hand():
    questions = [
        Question(id="q1", text="Where was Ann Lee born?", answers=("Oslo",)),
        Question(id="q2", text="Where does Bo live?", answers=("New York",)),
        Question(id="q3", text="Where was Cy born?", answers=("Tromsø", "Bergen")),
        Question(id="q4", text="Unanswerable?", answers=("Lima",)),
    ]
    rankings = [
        # t-only has the answer in its title: neither positive (text is judged) nor negative
        [Hit(passage_id=i, score=10 - n) for n, i in enumerate(["t-only", "neg1", "pos", "neg2", "pos2", "neg3"])],
        ["span", "neg3", "other", "neg1"],  # passage ids are accepted too
        ["neg3", "pos"],  # neither text names Tromsø or Bergen
        ["neg1", "neg2"],
    ]
    examples, dropped = distant_supervision(
        questions, rankings, CORPUS, match="string", negatives=2, labels={"q1": "P19", "q2": "P551"}
    )
    assert dropped == 2  # q3 and q4 have no answer-bearing text in their rankings
    first, second = examples
    assert first.question == "Where was Ann Lee born?" and first.answers == ("Oslo",) and first.label == "P19"
    assert first.positives == (P["pos"],)  # the best-ranked passage whose text has "Oslo"
    assert first.hard_negatives == (P["neg1"], P["neg2"])  # t-only skipped (title), pos/pos2 skipped
    assert first.negatives == ()
    assert second.positives == (P["other"],)
    # "span" has "New York" only across title and text: never a negative
    assert second.hard_negatives == (P["neg3"], P["neg1"])
    assert second.label == "P551"

    one, _ = distant_supervision(questions[:1], rankings[:1], CORPUS, match="string")
    assert one[0].hard_negatives == (P["neg1"],) and one[0].label is None
    none, _ = distant_supervision(questions[:1], rankings[:1], CORPUS, match="string", negatives=0)
    assert none[0].hard_negatives == ()


def test_distant_supervision_regex_mode_and_errors():
    questions = [Question(id="q", text="Where was Ann Lee born?", answers=(r"os?lo\b",))]
    examples, dropped = distant_supervision(questions, [["t-only", "neg1", "pos"]], CORPUS, match="regex")
    assert dropped == 0 and examples[0].positives == (P["pos"],) and examples[0].hard_negatives == (P["neg1"],)
    with pytest.raises(ValueError):
        distant_supervision(questions, [], CORPUS, match="string")
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="'missing' is not in corpus 'tiny'"):
        distant_supervision(questions, [["missing"]], CORPUS, match="string")


def test_hard_negatives_rule():
    check = AnswerCheck(["Oslo"])
    assert check.in_text(P["pos"]) and not check.in_text(P["t-only"])
    assert check.anywhere(P["t-only"]) and not check.anywhere(P["neg1"])
    assert AnswerCheck(["New York"]).anywhere(P["span"]) and not AnswerCheck(["New York"]).in_text(P["span"])
    copy = Passage(id="elsewhere", title="x", text="Ann  Lee often\nvisited Bergen.")  # same text as neg1
    got = hard_negatives([P["neg1"], copy, P["neg2"], P["neg2"], P["neg3"]], ["Oslo"], count=5, exclude=[P["neg1"]])
    assert got == (P["neg2"], P["neg3"])  # a positive's id or text is never a negative; no repeats


# ------------------------------------------------------------------------------------ make-training


def test_make_training_on_demo_train(tmp_path, capsys):
    from harness import registry

    out = tmp_path / "out" / "demo-train.json.gz"
    code = main([
        "data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "--negatives", "2",
        "--output", str(out), "--no-progress", "--cache-dir", str(tmp_path / "cache"),
    ])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    suite = registry.load("suites", "demo-train", {}).value
    summary = captured.out.strip().splitlines()[-1]
    examples = list(read_training_examples(out))
    dropped = len(suite.questions) - len(examples)
    assert summary.startswith(
        f"demo-train: {len(suite.questions)} questions, {len(examples)} examples written to {out}, {dropped} dropped"
    )
    assert len(examples) > 0.9 * len(suite.questions)
    assert os.listdir(out.parent) == [out.name]
    by_text = {q.text: (part.name, q) for part in suite.parts for q in part.questions}
    from harness.scoring.matching import has_answer

    for example in examples:
        part, question = by_text[example.question]
        assert example.label == part and example.answers == question.answers
        (positive,) = example.positives
        assert has_answer(example.answers, positive.text) and suite.corpus.get(positive.id) == positive
        assert len(example.hard_negatives) == 2
        for negative in example.hard_negatives:
            assert negative != positive
            assert not has_answer(example.answers, negative.text)
            assert not has_answer(example.answers, negative.title)


def test_make_training_errors(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["data", "make-training", "--suite", "demo-train", "--retriever", "nope", "--output", str(out)]) == 2
    assert "unknown retriever 'nope'" in capsys.readouterr().err
    assert main(["data", "make-training", "--suite", "demo-train", "--retriever", "bm25", "-o", "kk1=1",
                 "--output", str(out)]) == 2
    assert "has no option 'kk1'" in capsys.readouterr().err
    assert main(["data", "make-training", "--suite", "nope", "--retriever", "bm25", "--output", str(out)]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err
    assert not out.exists()


# -------------------------------------------------------------------------------------------- miner


def test_retriever_miner_with_a_fake_retriever(tmp_path, test_registries):
    from harness_builtins.training.mining import SPEC, RetrieverMiner  # the spec, as the class checks options by it

    corpus = InMemoryCorpus("tiny", P.values())
    context = RunContext(cache_dir=tmp_path, progress=False)
    examples = [
        TrainingExample(
            question="Where was Ann Lee born?", answers=("Oslo",),
            positives=(Passage(id="gold", title="Ann Lee", text="Ann Lee was born in Oslo in 1950."),),  # = pos's text
            hard_negatives=(P["neg3"],), negatives=(P["other"],), label="P19",
        ),
        TrainingExample(question="Where does Bo live?", answers=("New York",), positives=(P["other"],)),
    ]
    miner = SPEC.load(retriever="test-overlap", negatives=2, depth=10)
    assert isinstance(miner, RetrieverMiner)
    mined = miner(examples, corpus, context)
    # word overlap ranks for "Where was Ann Lee born?": pos, neg2 (Ann Lee; born), neg1 (Ann Lee), ...
    first, second = mined
    assert first.positives == examples[0].positives and first.negatives == (P["other"],) and first.label == "P19"
    for negative in first.hard_negatives:
        assert negative.id not in {"pos", "pos2", "t-only"}  # the positive's text, or an answer
    assert first.hard_negatives == (P["neg2"], P["neg1"])
    # "Where does Bo live?" retrieves span (New York across title and text) and other (its positive)
    assert second.hard_negatives == ()
    assert miner([], corpus, context) == []
    assert SPEC.name == "retriever" and dict(SPEC.options) == {
        "retriever": "bm25", "options": None, "negatives": 1, "depth": 100, "match": "string"
    }
    with pytest.raises(ValueError):
        RetrieverMiner("test-overlap", negatives=-1)
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="unknown retriever"):
        RetrieverMiner("no-such-retriever")
    with pytest.raises(HarnessError, match="has no option"):
        RetrieverMiner("test-overlap", {"bogus": 1})

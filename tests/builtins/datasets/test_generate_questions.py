"""``harness data generate-questions``: answer extraction, the filter, hard negatives, resumption
after an interruption, and the command line."""

from __future__ import annotations

import json

import pytest

from harness.api import InMemoryCorpus, Passage
from harness.cli.main import main
from harness.data.training import AnswerCheck, read_training_examples
from harness.errors import HarnessError
from harness.scoring.matching import has_answer

from harness_builtins.datasets.generate import (
    DROP_REASONS,
    choose_answers,
    extract_answers,
    generate_questions,
    load_generator,
    parse_output,
    question_text,
)

ANN = Passage(id="ann", title="Ann Lee", text="Ann Lee was born in Oslo in 1950. She moved to Bergen.")
BO = Passage(id="bo", title="Bo", text="Since 2001 Bo lives in New York.")
RAIN = Passage(id="rain", title="Rain", text="It rained all day.")
TINY = InMemoryCorpus("tiny", [ANN, BO])


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def demo_run(t5_dir, cache, output, **options):
    settings = {"passages": 20, "per_passage": 2, "batch_size": 4, "device": "cpu", "cache_dir": cache, "progress": False}
    return generate_questions("demo", str(t5_dir), output=output, **{**settings, **options})


@pytest.fixture(scope="module")
def reference(t5_dir, cache, tmp_path_factory):
    """An uninterrupted run of the tiny T5 over 20 demo passages, two answers each."""
    output = tmp_path_factory.mktemp("reference") / "generated.json"
    return output, demo_run(t5_dir, cache, output)


# ------------------------------------------------------------------------------------ the rules


def test_answer_extraction_rule():
    text = (
        "Gafaivír Tounodaisis (born 8 April 1953 in Rouvos) is a Geisyvic sculptor. He was elected to the "
        "Vinas Academy of Sciences in 1979. The Vekin Marathon has 41,603 runners since the 2010s. "
        "Sitrirnesh is small. In Paris, Ann Lee's house and Bo met on May 5, 2001, with B12."
    )
    assert extract_answers(text) == [
        "Gafaivír Tounodaisis", "8 April 1953", "Rouvos", "Geisyvic", "Vinas Academy of Sciences", "1979",
        "Vekin Marathon", "41,603", "Paris", "Ann Lee", "Bo", "May 5, 2001", "B12",
    ]  # "He", "The", "In" open sentences; a lone "Sitrirnesh" there may be capitalised for that only
    assert extract_answers("Oslo is in Norway. Oslo, Norway and Oslo again.") == ["Norway", "Oslo"]
    assert extract_answers("the bank of the river. 12 and 12.5 and 1,2") == ["12", "12.5", "1"]


def test_answer_choice_is_seeded_and_in_passage_order():
    passage = Passage(id="p", title="", text=" ".join(f"in {1900 + i}," for i in range(11)))
    everything = extract_answers(passage.text)
    assert len(everything) == 11
    chosen = choose_answers(passage, 3, seed=0)
    assert chosen == choose_answers(passage, 3, seed=0) and len(chosen) == 3
    assert chosen == sorted(chosen, key=everything.index)
    assert any(choose_answers(passage, 3, seed=s) != chosen for s in range(1, 5))
    assert choose_answers(passage, 20, seed=0) == everything


def test_output_parsing_and_question_text():
    assert parse_output("Who was born in Oslo?  answer:  Ann   Lee ", " answer: ") == ("Who was born in Oslo?", "Ann Lee")
    assert parse_output("where <sep> Oslo <sep> x", " <sep> ") == ("where", "Oslo <sep> x")  # the first one splits
    assert parse_output("no separator", " answer: ") is None
    assert parse_output(" answer: Oslo", " answer: ") is None and parse_output("Why? answer:  ", " answer: ") is None
    assert question_text("  who\nwas  born ") == "who was born?" and question_text("who?") == "who?"
    assert question_text(" ") == ""


def fake(outputs):
    """A generator that answers each prompt from ``outputs`` (prompt -> output or outputs)."""
    calls = []

    def generate(prompts):
        calls.append(list(prompts))
        return [outputs[p] for p in prompts]

    generate.calls = calls
    return generate


def test_extract_mode_filter_with_a_fake_generator(tmp_path):
    prompt = "{answer}|{title}|{text}"
    asked = {
        f"Ann Lee|Ann Lee|{ANN.text}": "  where   was she\nborn ",
        f"Oslo|Ann Lee|{ANN.text}": "where was Ann Lee born, in oslo",
        f"1950|Ann Lee|{ANN.text}": "",
        f"Bergen|Ann Lee|{ANN.text}": "?",
        f"2001|Bo|{BO.text}": "since when does Bo live in New York",
        f"Bo|Bo|{BO.text}": "where does bo live",
        f"New York|Bo|{BO.text}": "who lives in new york city?",
    }
    generate = fake(asked)
    out = tmp_path / "gen.jsonl"
    stats = generate_questions(InMemoryCorpus("three", [ANN, BO, RAIN]), None, output=out, prompt=prompt,
                               per_passage=4, negatives=0, batch_size=3, generate=generate, progress=False,
                               label="synthetic")
    assert sorted(p for call in generate.calls for p in call) == sorted(asked) and max(map(len, generate.calls)) <= 3
    examples = list(read_training_examples(out))
    assert [(e.question, e.answers, e.positives, e.hard_negatives, e.label) for e in examples] == [
        ("where was she born?", ("Ann Lee",), (ANN,), (), "synthetic"),
        ("since when does Bo live in New York?", ("2001",), (BO,), (), "synthetic"),
    ]
    assert (stats.passages, stats.outputs, stats.kept, stats.without_answers) == (3, 7, 2, 1)
    assert stats.dropped == {"unparsed": 0, "empty_question": 2, "answer_not_in_passage": 0,
                             "answer_in_question": 3, "duplicate": 0}  # has_answer is uncased: "bo", "oslo"
    assert stats.outputs == stats.kept + sum(stats.dropped.values())
    meta = json.loads((tmp_path / "gen.jsonl.meta.json").read_text())
    assert meta["counts"]["dropped"] == stats.dropped and meta["settings"]["generator"].startswith("function:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen.jsonl", "gen.jsonl.meta.json"]


def test_generate_mode_filter_with_a_fake_generator(tmp_path):
    generate = fake({
        f"Q: {ANN.title} / {ANN.text}": [
            "Where was Ann Lee born? <sep> Oslo", "Where was Ann  Lee born <sep>Oslo", "no separator here"],
        f"Q: {BO.title} / {BO.text}": [
            "Where does Bo live? <sep> Paris", " <sep> New York", "Who lives in New York? <sep> New York"],
    })
    out = tmp_path / "gen.json"
    stats = generate_questions(TINY, "my-generator", output=out, answers="generate", prompt="Q: {title} / {text}",
                               separator="<sep>", per_passage=3, num_beams=3, negatives=0, generate=generate,
                               progress=False)
    examples = list(read_training_examples(out))
    assert [(e.question, e.answers, e.label) for e in examples] == [("Where was Ann Lee born?", ("Oslo",), "generated")]
    assert stats.dropped == {"unparsed": 2, "empty_question": 0, "answer_not_in_passage": 1,
                             "answer_in_question": 1, "duplicate": 1}
    meta = json.loads((tmp_path / "gen.json.meta.json").read_text())
    assert meta["settings"]["generator"] == "hub:my-generator@main" and meta["generator"] == "my-generator"


def test_bad_settings_are_one_line_errors(tmp_path, t5_dir):
    def error(**options):
        kwargs = {"output": tmp_path / "x.json", "negatives": 0, "progress": False, **options}
        with pytest.raises(HarnessError) as caught:
            generate_questions(kwargs.pop("corpus", TINY), kwargs.pop("generator", str(t5_dir)), **kwargs)
        message = str(caught.value)
        assert "\n" not in message
        return message

    assert "prompt must be text using exactly {answer}, {title}, {text}" in error(prompt="question: {text}")
    assert "prompt must be text using exactly {title}, {text}" in error(answers="generate", prompt="{answer} {text}")
    assert "not a valid template" in error(prompt="{answer} {title} {text")
    assert "answers must be one of extract, generate" in error(answers="both")
    assert error(per_passage=0) == "generate-questions: option per_passage must be an integer >= 1, got 0"
    assert error(passages=-3) == "generate-questions: option passages must be an integer >= 1 or null, got -3"
    assert error(negatives=-1) == "generate-questions: option negatives must be an integer >= 0, got -1"
    assert error(seed=True) == "generate-questions: option seed must be an integer >= 0, got True"
    assert "needs num_beams >= 2" in error(answers="generate", per_passage=2)
    assert "separator must be text" in error(answers="generate", separator="  ")
    assert "unknown suite 'dmeo'" in error(corpus="dmeo")
    assert "missing.tsv: no such corpus file" in error(corpus=str(tmp_path / "missing.tsv"))
    (tmp_path / "empty-model").mkdir()
    assert "no model files" in error(generator=str(tmp_path / "empty-model"))
    assert "cannot load sequence-to-sequence model" in error(generator="/no/such/model")
    assert not (tmp_path / "x.json").exists()


# --------------------------------------------------------------------------- hard negatives, files


def test_bm25_hard_negatives_on_demo(tmp_path, cache):
    def generate(prompts):  # a question from the passage's title: BM25 finds related passages
        return [f"what is known of {p.split('|')[1]}" for p in prompts]

    out = tmp_path / "neg.json"
    stats = generate_questions("demo", None, output=out, prompt="{answer}|{title}|{text}", passages=15, negatives=2,
                               generate=generate, cache_dir=cache, progress=False)
    examples = list(read_training_examples(out))
    assert len(examples) == stats.kept > 5
    assert stats.fewer_negatives == sum(len(e.hard_negatives) < 2 for e in examples) < len(examples) / 2
    for example in examples:
        (positive,) = example.positives
        for negative in example.hard_negatives:
            assert negative.id != positive.id and not AnswerCheck(example.answers).anywhere(negative)


def test_a_corpus_file_and_another_retriever(tmp_path):
    from helpers.fake_retrievers import OverlapRetriever

    source = tmp_path / "psgs.tsv"
    source.write_text(
        "id\ttext\ttitle\n1\tAnn Lee was born in Oslo in 1950.\tAnn Lee\n2\tBo Nygaard lives in Bergen.\tBo\n"
        "3\tOslo and Bergen are Norwegian towns.\tTowns\n4\tLee often visited Bergen in summer.\tLee\n",
        encoding="utf-8",
    )
    retriever = OverlapRetriever()  # ranks passages 1, 2, 4 for the question (born, lives, visited)
    stats = generate_questions(
        source, None, output=tmp_path / "out.json", per_passage=3, cache_dir=tmp_path / "cache", retriever=retriever,
        generate=lambda prompts: ["who was born or lives or visited"] * len(prompts), progress=False,
    )
    examples = list(read_training_examples(tmp_path / "out.json"))
    got = [(e.answers[0], e.positives[0].id, [n.id for n in e.hard_negatives]) for e in examples]
    assert got == [
        ("Ann Lee", "1", ["2"]), ("Oslo", "1", ["2"]), ("1950", "1", ["2"]), ("Bo Nygaard", "2", ["1"]),
        ("Bergen", "2", ["1"]), ("Bergen", "3", ["1"]), ("Norwegian", "3", ["1"]), ("Bergen", "4", ["1"]),
    ]
    assert stats.kept == 8 and stats.fewer_negatives == 0 and retriever.calls == [8]
    assert [p.name.startswith("psgs-") for p in (tmp_path / "cache" / "corpora").iterdir()] == [True]

    # a sample: the store's rows and an in-memory copy's positions give the same passages
    rows = [line.split("\t") for line in source.read_text(encoding="utf-8").splitlines()[1:]]
    copy = InMemoryCorpus("copy", [Passage(id=i, title=title, text=text) for i, text, title in rows])

    def sample(corpus, name):
        generate_questions(corpus, None, output=tmp_path / name, passages=2, seed=5, negatives=0, progress=False,
                           cache_dir=tmp_path / "cache", generate=lambda prompts: ["which one"] * len(prompts))
        return [e.positives[0].id for e in read_training_examples(tmp_path / name)]

    from_store = sample(source, "store.json")
    assert from_store == sample(copy, "copy.json") and len(set(from_store)) == 2


def test_generated_text_leaves_out_special_tokens_but_the_separator(t5_dir):
    from transformers import AutoTokenizer

    from harness_builtins.datasets.generate import decode, dropped_ids

    tokenizer = AutoTokenizer.from_pretrained(t5_dir)
    ids = tokenizer("where is paris [SEP] france").input_ids + [tokenizer.pad_token_id] * 2
    assert ids[0] == tokenizer.cls_token_id and ids.count(tokenizer.sep_token_id) == 2
    assert decode(tokenizer, [ids], dropped_ids(tokenizer)) == ["where is paris france"]
    assert decode(tokenizer, [ids], dropped_ids(tokenizer, keep=" [SEP] ")) == ["where is paris [SEP] france [SEP]"]
    assert dropped_ids(tokenizer, keep=" answer: ") == dropped_ids(tokenizer)


def test_end_to_end_with_a_tiny_t5(reference):
    output, stats = reference
    examples = list(read_training_examples(output))
    assert stats.passages == 20 and stats.outputs == 40 and len(examples) == stats.kept > 0
    assert stats.outputs == stats.kept + sum(stats.dropped.values()) and set(stats.dropped) == set(DROP_REASONS)
    for example in examples:
        (answer,) = example.answers
        (positive,) = example.positives
        assert has_answer([answer], positive.text) and not has_answer([answer], example.question)
        assert example.question.endswith("?") and example.label == "generated"
        # the tokenizer's special tokens ([CLS] opens every BERT-tokenised target) are not text
        assert not any(token in example.question for token in ("[CLS]", "[SEP]", "[PAD]"))
    meta = json.loads(output.with_name(output.name + ".meta.json").read_text())
    assert meta["counts"]["kept"] == stats.kept and meta["settings"]["generator"].startswith("dir:sha256:")
    assert meta["settings"]["passages"] == 20 and meta["generator"].startswith("tiny-t5 (sha256:")
    assert sorted(p.name for p in output.parent.iterdir()) == [output.name, output.name + ".meta.json"]


def test_same_seed_same_bytes(tmp_path, t5_dir, cache, reference):
    demo_run(t5_dir, cache, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == reference[0].read_bytes()


def test_an_interrupted_run_resumes_to_the_same_bytes(tmp_path, t5_dir, cache, reference):
    model = load_generator(t5_dir, device="cpu")
    calls = []

    def killed_after_three_batches(prompts):
        calls.append(len(prompts))
        if len(calls) > 3:
            raise KeyboardInterrupt
        return model(prompts)

    output = tmp_path / "generated.json"
    partial = tmp_path / "generated.json.partial.jsonl"
    with pytest.raises(KeyboardInterrupt):
        demo_run(t5_dir, cache, output, generate=killed_after_three_batches)
    assert not output.exists()
    lines = partial.read_text().splitlines()
    assert 1 < len(lines) < 21  # the settings, then the groups of 4 passages done before the interruption
    with open(partial, "a") as f:
        f.write('{"id": "12", "kept": [["a que')  # a line cut short by a kill

    with pytest.raises(HarnessError, match=r"other settings \(seed\); delete it to start over"):
        demo_run(t5_dir, cache, output, seed=1)
    stats = demo_run(t5_dir, cache, output)
    assert stats.resumed == len(lines) - 1 and stats.kept == reference[1].kept and stats.dropped == reference[1].dropped
    assert output.read_bytes() == reference[0].read_bytes()
    assert not partial.exists()


# -------------------------------------------------------------------------------------------- CLI


def cli(capsys, *argv):
    code = main(["data", "generate-questions", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_run(tmp_path, t5_dir, cache, capsys):
    out = tmp_path / "gen.json.gz"
    code, stdout, err = cli(capsys, "demo", "--model", str(t5_dir), "--output", str(out), "--passages", "6",
                            "--per-passage", "2", "--batch-size", "8", "--seed", "3", "--label", "qg",
                            "--device", "cpu", "--cache-dir", str(cache), "--no-progress")
    assert code == 0, err
    examples = list(read_training_examples(out))
    assert stdout.count("\n") == 1 and stdout.startswith(f"demo: {len(examples)} kept from 6 passages (12 generated)")
    assert "dropped: " in stdout and stdout.rstrip().endswith(f"written to {out}")
    assert all(e.label == "qg" for e in examples)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["dmeo"], "unknown suite 'dmeo'"),
        (["demo", "--prompt", "question: {text}"], "prompt must be text using exactly {answer}, {title}, {text}"),
        (["demo", "--passages", "0"], "Invalid value for '--passages'"),
        (["demo", "--answers", "generate", "--per-passage", "2"], "needs num_beams >= 2"),
        (["demo", "--device", "cuda:7"], "torch sees no GPU"),
    ],
)
def test_cli_errors_are_one_line_with_exit_2(tmp_path, t5_dir, capsys, argv, fragment):
    import torch

    if "cuda:7" in argv and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    code, _, err = cli(capsys, *argv, "--model", str(t5_dir), "--output", str(tmp_path / "o.json"), "--no-progress")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("harness: error: ") and fragment in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("line", [
    b'{"id": "p1", "kept": []}',
    b'{"id": "p1", "kept": [], "outputs": 1, "answers": 1, "dropped": {"nope": 1}}',
    b'{"id": "p1", "kept": [["q?"]], "outputs": 1, "answers": 1, "dropped": {}}',
    b'{"id": "p1", "kept": [], "outputs": -1, "answers": 1, "dropped": {}}',
    b'\xff\xfe{"id": "p1"}',
])
def test_a_damaged_progress_record_is_a_one_line_error(tmp_path, line):
    from harness_builtins.datasets.generate import _records

    partial = tmp_path / "out.json.partial.jsonl"
    partial.write_bytes(b'{"settings": {}}\n' + line + b"\n")
    with pytest.raises(HarnessError, match=r"out.json.partial.jsonl:2: damaged progress record"):
        list(_records(partial))

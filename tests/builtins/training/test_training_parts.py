"""Training samplers and augmentations: determinism for a seed, batch sizes, label and cluster
grouping, duplicate positives kept apart, word shuffling keeping the words."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from harness.api.corpus import Passage
from harness.api.training import TrainingExample
from harness.api import Augmentation, Sampler
from harness_builtins.training.augmentations import ShuffleWords
from harness_builtins.training.parts import build, specs
from harness_builtins.training.samplers import (
    HarderBatchesSampler,
    RandomSampler,
    kmeans,
)

SAMPLERS = specs("samplers")
AUGMENTATIONS = specs("augmentations")


def build_sampler(name, **options):
    return build("samplers", name, **options)


def build_augmentation(name, **options):
    return build("augmentations", name, **options)


def example(i: int, positive: str | None = None, label: str | None = None) -> TrainingExample:
    pid = positive if positive is not None else f"p{i}"
    return TrainingExample(
        question=f"question {i}",
        answers=("a",),
        positives=(Passage(id=pid, title=f"t{pid}", text=f"text {pid}"),),
        label=label,
    )


def flat(batches):
    return sorted(i for batch in batches for i in batch)


def has_duplicate_positive(batches, examples):
    for batch in batches:
        ids = [p.id for i in batch for p in examples[i].positives]
        if len(ids) != len(set(ids)):
            return True
    return False


# ---------------------------------------------------------------- random


def test_random_sizes_and_cover():
    examples = [example(i) for i in range(10)]
    batches = RandomSampler()(examples, 3, random.Random(0))
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    assert flat(batches) == list(range(10))
    dropped = RandomSampler(drop_last=True)(examples, 3, random.Random(0))
    assert [len(b) for b in dropped] == [3, 3, 3]
    assert dropped == batches[:3]
    assert RandomSampler()(examples, 20, random.Random(0)) == [batches[0] + batches[1] + batches[2] + batches[3]]
    assert RandomSampler(drop_last=True)(examples, 20, random.Random(0)) == []
    assert RandomSampler()([], 4, random.Random(0)) == []


def test_random_is_dprs_shuffle_and_deterministic():
    examples = [example(i) for i in range(11)]
    order = list(range(11))
    random.Random(7).shuffle(order)
    expected = [order[0:4], order[4:8], order[8:11]]
    assert RandomSampler()(examples, 4, random.Random(7)) == expected  # no duplicates: nothing moves
    assert RandomSampler(unique_positives=False)(examples, 4, random.Random(7)) == expected
    assert RandomSampler()(examples, 4, random.Random(8)) != expected


def test_random_separates_duplicate_positives():
    # 24 examples, 8 passages each the positive of 3 examples; batches of 4
    examples = [example(i, positive=f"p{i % 8}") for i in range(24)]
    plain = [RandomSampler(unique_positives=False)(examples, 4, random.Random(s)) for s in range(20)]
    assert any(has_duplicate_positive(b, examples) for b in plain)  # the test case has clashes to fix
    for seed in range(20):
        batches = RandomSampler()(examples, 4, random.Random(seed))
        assert [len(b) for b in batches] == [4] * 6
        assert flat(batches) == list(range(24))
        assert not has_duplicate_positive(batches, examples)
        assert batches == RandomSampler()(examples, 4, random.Random(seed))


def test_duplicates_that_cannot_be_separated_stay():
    # one passage is the positive of every example: no swap helps, sizes stay
    examples = [example(i, positive="same") for i in range(6)]
    batches = RandomSampler()(examples, 3, random.Random(0))
    assert [len(b) for b in batches] == [3, 3] and flat(batches) == list(range(6))


def test_any_shared_positive_counts_and_missing_ids_use_title_and_text():
    examples = [
        TrainingExample(question="a", answers=(), positives=(Passage(id="x", title="", text=""), Passage(id="y", title="", text=""))),
        TrainingExample(question="b", answers=(), positives=(Passage(id="y", title="", text=""),)),
        TrainingExample(question="c", answers=(), positives=(Passage(id="", title="T", text="same"),)),
        TrainingExample(question="d", answers=(), positives=(Passage(id="", title="T", text="same"),)),
    ]
    for seed in range(10):
        batches = RandomSampler()(examples, 2, random.Random(seed))
        assert sorted(sorted(b) for b in batches) in ([[0, 2], [1, 3]], [[0, 3], [1, 2]])


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True, None])
def test_bad_batch_size(batch_size):
    with pytest.raises(ValueError):
        RandomSampler()([example(0)], batch_size, random.Random(0))
    with pytest.raises(ValueError):
        HarderBatchesSampler()([example(0, label="a")], batch_size, random.Random(0))


# ---------------------------------------------------------------- harder-batches


def labelled():
    # labels a: 8 examples, b: 8, c: 5  -> with batches of 4: a, a, b, b, c full, one c left over
    labels = ["a"] * 8 + ["b"] * 8 + ["c"] * 5
    return [example(i, label=label) for i, label in enumerate(labels)]


def test_harder_batches_by_label():
    examples = labelled()
    batches = HarderBatchesSampler()(examples, 4, random.Random(0))
    assert flat(batches) == list(range(21))
    assert [len(b) for b in batches] == [4, 4, 4, 4, 4, 1]
    full_labels = Counter(frozenset(examples[i].label for i in b) for b in batches[:5])
    assert full_labels == Counter({frozenset("a"): 2, frozenset("b"): 2, frozenset("c"): 1})
    assert examples[batches[5][0]].label == "c"
    dropped = HarderBatchesSampler(drop_last=True)(examples, 4, random.Random(0))
    assert dropped == batches[:5]


def test_harder_batches_deterministic_and_varies_by_seed():
    examples = labelled()
    sampler = HarderBatchesSampler(by="label")
    assert sampler(examples, 4, random.Random(3)) == sampler(examples, 4, random.Random(3))
    assert len({str(sampler(examples, 4, random.Random(s))) for s in range(5)}) > 1


def test_harder_batches_remainders_mix_and_unlabelled_group():
    # a: 3, b: 3, None: 2 with batches of 4: no full batch of one group; remainders cut in order
    labels = ["a"] * 3 + ["b"] * 3 + [None] * 2
    examples = [example(i, label=label) for i, label in enumerate(labels)]
    batches = HarderBatchesSampler()(examples, 4, random.Random(1))
    assert [len(b) for b in batches] == [4, 4]
    assert flat(batches) == list(range(8))
    # remainders are cut group by group: one group is split over the two batches, the others
    # lie in one batch each (no prefix of group sizes 3, 3, 2 sums to 4)
    incidences = sum(len({examples[i].label for i in b}) for b in batches)
    assert incidences == 4


def test_harder_batches_keeps_groups_while_separating_duplicates():
    # two labels of 12; within a label, passages repeat (q and q+6 share a positive)
    examples = [example(i, positive=f"p{i % 6}-{i // 12}", label=str(i // 12)) for i in range(24)]
    for seed in range(10):
        batches = HarderBatchesSampler()(examples, 3, random.Random(seed))
        assert not has_duplicate_positive(batches, examples)
        assert all(len({examples[i].label for i in b}) == 1 for b in batches)
        assert flat(batches) == list(range(24))


def blobs():
    # 8 points near (10, 0) and 8 near (0, 10)
    rng = random.Random(0)
    return [[10 + rng.random(), rng.random()] for _ in range(8)] + [[rng.random(), 10 + rng.random()] for _ in range(8)]


@pytest.mark.parametrize("backend", ["numpy", "sklearn"])
def test_kmeans_finds_the_blobs(backend):
    pytest.importorskip("numpy")
    if backend == "sklearn":
        pytest.importorskip("sklearn")
    ids = kmeans(blobs(), 2, seed=0, backend=backend)
    assert len(set(ids[:8])) == 1 and len(set(ids[8:])) == 1 and ids[0] != ids[8]
    assert ids == kmeans(blobs(), 2, seed=0, backend=backend)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_harder_batches_by_cluster(backend):
    pytest.importorskip("numpy")
    examples = [example(i) for i in range(16)]
    sampler = HarderBatchesSampler(vectors=blobs(), clusters=2, backend=backend)
    batches = sampler(examples, 4, random.Random(0))
    assert [len(b) for b in batches] == [4] * 4
    for batch in batches:
        assert all(i < 8 for i in batch) or all(i >= 8 for i in batch)
    assert batches == sampler(examples, 4, random.Random(0))


def test_harder_batches_embed_called_once_per_examples():
    pytest.importorskip("numpy")
    examples = [example(i) for i in range(16)]
    calls = []

    def embed(items):
        calls.append(len(items))
        return blobs()

    sampler = HarderBatchesSampler(embed=embed, clusters=2, backend="numpy")
    first = sampler(examples, 4, random.Random(0))
    second = sampler(examples, 4, random.Random(1))
    assert calls == [16]
    for batch in first + second:
        assert all(i < 8 for i in batch) or all(i >= 8 for i in batch)


def test_harder_batches_needs_labels_or_vectors():
    examples = [example(i) for i in range(4)]
    with pytest.raises(ValueError):
        HarderBatchesSampler()(examples, 2, random.Random(0))
    with pytest.raises(ValueError):
        HarderBatchesSampler(vectors=blobs(), backend="numpy")(examples, 2, random.Random(0))  # 16 vectors, 4 examples
    for options in ({"by": "topic"}, {"clusters": 0}, {"backend": "faiss"}):  # checked by the declarations
        with pytest.raises(ValueError, match=f"^sampler 'harder-batches': option {next(iter(options))} must be "):
            build_sampler("harder-batches", **options)
    with pytest.raises(ValueError, match="vectors or embed, not both"):
        HarderBatchesSampler(vectors=[[1.0]], embed=len)


def test_sampler_registry():
    assert sorted(SAMPLERS) == ["harder-batches", "random"]
    for name, spec in SAMPLERS.items():
        assert spec.description and spec.citation and callable(spec.load())
        assert isinstance(spec.load(), Sampler)
    assert build_sampler("random", drop_last=True).drop_last
    with pytest.raises(ValueError):
        build_sampler("random", shuffle=False)


# ---------------------------------------------------------------- shuffle-words

TEXT = "Who wrote the novel  'War and Peace', and when?\nIt was Tolstoy."


def test_shuffle_words_keeps_the_words():
    out = ShuffleWords()(TEXT, random.Random(0))
    assert sorted(out.split(" ")) == sorted(TEXT.split())
    assert "\n" not in out and "  " not in out  # whitespace runs and newlines become one space
    assert {"Peace',", "when?", "It", "'War"} <= set(out.split(" "))  # punctuation stays on its word


def test_shuffle_words_is_rngs_shuffle_and_deterministic():
    words = TEXT.split()
    random.Random(5).shuffle(words)
    assert ShuffleWords()(TEXT, random.Random(5)) == " ".join(words)
    assert ShuffleWords()(TEXT, random.Random(5)) == ShuffleWords()(TEXT, random.Random(5))
    assert len({ShuffleWords()(TEXT, random.Random(s)) for s in range(10)}) > 1


def test_shuffle_words_edge_cases():
    rng = random.Random(0)
    assert ShuffleWords()("", rng) == ""
    assert ShuffleWords()("  one  ", rng) == "one"
    assert ShuffleWords()("a\tb", random.Random(0)) in ("a b", "b a")


def test_shuffle_words_probability():
    assert ShuffleWords(probability=0.0)(TEXT, random.Random(0)) == TEXT
    half = ShuffleWords(probability=0.5)
    outputs = [half(TEXT, random.Random(s)) for s in range(40)]
    assert TEXT in outputs and any(o != TEXT for o in outputs)
    for bad in (-0.1, 1.5, "x", float("nan"), True):
        with pytest.raises(ValueError, match="^augmentation 'shuffle-words': option probability must be a number from 0 to 1, got "):
            build_augmentation("shuffle-words", probability=bad)
    assert build_augmentation("shuffle-words", probability="0.5").probability == 0.5


def test_augmentation_registry():
    assert sorted(AUGMENTATIONS) == ["shuffle-words"]
    assert AUGMENTATIONS["shuffle-words"].citation
    augment = build_augmentation("shuffle-words")
    assert isinstance(augment, Augmentation)
    assert sorted(augment("b a c", random.Random(0)).split()) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        build_augmentation("shuffle-words", p=0.5)


# ---------------------------------------------------------------- the parts' specs


def test_listing_the_parts_imports_none_of_their_classes():
    """`harness list losses` (and the other kinds) reads the specs alone: no torch, no part class."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness.cli.main import main\n"
        "for kind in ('losses', 'samplers', 'miners', 'augmentations'):\n"
        "    assert main(['list', kind]) == 0\n"
        "heavy = ('torch', 'transformers', 'harness_builtins.training.losses', 'harness_builtins.training.samplers',\n"
        "         'harness_builtins.training.mining', 'harness_builtins.training.augmentations')\n"
        "print('loaded:', sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "loaded: []"
    for name in ("dpr", "multi-sim", "art", "harder-batches", "retriever", "shuffle-words"):
        assert any(line.startswith(name + " ") for line in out.splitlines()), name


def test_every_spec_names_a_class_its_own_module_holds():
    """Each part module gives one spec with a citation (a work, not a seed file) and a lazy target that
    resolves to the class building it; the options its load fills in are the spec's declarations."""
    import importlib
    import pkgutil
    import re

    from harness import registry
    from harness_builtins.training import parts

    targets = {
        "losses": "harness_builtins.training.losses", "samplers": "harness_builtins.training.samplers",
        "miners": "harness_builtins.training.mining", "augmentations": "harness_builtins.training.augmentations",
    }
    for kind, module in targets.items():
        package = importlib.import_module(f"harness_builtins.training.parts.{kind}")
        modules = [m.name for m in pkgutil.iter_modules(package.__path__)]
        found = parts.specs(kind)
        assert sorted(spec.name.replace("-", "_") for spec in found.values()) == sorted(modules)
        assert sorted(found) == registry.registry(kind).names()
        for name, spec in found.items():
            assert registry.registry(kind).get(name) is spec
            assert re.search(r"\b(19|20)\d\d\b", spec.citation) and "seed" not in spec.citation, name
            assert isinstance(spec.load, parts.Lazy) and spec.load.target.startswith(module + ":"), name
            assert isinstance(spec.load.resolve(), type), name
            assert spec.load.defaults == dict(spec.options), name
    with pytest.raises(ValueError, match="unknown loss 'nope'; known: art, dpr"):
        parts.build("losses", "nope")
    with pytest.raises(ValueError, match="package.module:attribute"):
        parts.Lazy("no_colon")

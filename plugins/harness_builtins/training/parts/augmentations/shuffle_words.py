"""The ``shuffle-words`` augmentation: a text's words in random order."""

from harness.api import AugmentationSpec, probability

from harness_builtins.training.parts import Lazy

OPTIONS = {"probability": probability(1.0, help="the chance that a text is shuffled")}

SPEC = AugmentationSpec(
    name="shuffle-words",
    description="the text's words in random order (Sciavolino 2022, Princeton thesis)",
    citation=(
        'Sciavolino 2022, "Towards Universal Dense Retrieval for Open-Domain Question Answering" (M.S.E. thesis, '
        'Princeton University) §4.1 ("Removing Positional Biases")'
    ),
    options=OPTIONS,
    load=Lazy("harness_builtins.training.augmentations:ShuffleWords", OPTIONS),
)

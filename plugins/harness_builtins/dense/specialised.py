"""The ``specialised`` retriever: one question encoder per part of a suite over one passage index
(seed 003, "Towards Robust Dense Retrieval": a question encoder per EntityQuestions relation).

``-o path=OUT`` names the output of ``harness train --variant specialised`` (or
``specialised-fix-passage``): ``OUT/model`` is the starting model (its passage encoder is the
shared, frozen one; its question encoder answers the parts no encoder was trained for),
``OUT/specialised.json`` maps each label (part name) to a checkpoint ``OUT/labels/NAME`` whose
question encoder was trained on that label's questions alone with the passage side frozen.

The corpus is embedded once, by ``OUT/model``'s passage encoder (the dense cache, shared with any
other run of that encoder), into the one passage index every label searches. Each question is
encoded by its part's encoder (the harness tells a :class:`~harness.api.PartAwareRetriever` the
parts); ``search`` without parts uses the start's. One label's question encoder is loaded at a
time: it is released when another label's is needed (the index, 30 GiB for DPR's Wikipedia on a
GPU, leaves little room for a model per label), and the parts of a batch are searched starting
with the loaded label's. A checkpoint whose passage side differs from the start's is refused: its
questions would be searched against passages of another encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.api import Corpus, Hit, RunContext
from harness.errors import HarnessError
from harness.results.checkpoint import Checkpoint

def read_map(path: Path) -> dict[str, str]:
    """``label -> checkpoint directory`` of a per-label training output (its record's labels,
    :meth:`harness.results.checkpoint.Checkpoint.label_folders`); a one-line error when it is not
    one."""
    return {label: str(folder) for label, folder in Checkpoint.read(path).label_folders().items()}


def _passage_state(directory: str) -> dict[str, Any]:
    """The passage (``document``) route's tensors of a checkpoint's model, by name; a BERT pooler
    is left out (sentence-transformers pools token embeddings and never uses it)."""
    from safetensors.torch import load_file

    out = {}
    for file in sorted(Path(directory, "model").rglob("*.safetensors")):
        if "document" in file.parent.name:
            out.update({f"{file.parent.name}/{k}": v for k, v in load_file(str(file)).items() if ".pooler." not in f".{k}"})
    return out


class SpecialisedRetriever:
    """Dense search over the start's passage index with a question encoder per part."""

    def __init__(self, path: str | None = None, **options: Any):
        from harness_builtins.dense.index import IndexConfig
        from harness_builtins.dense.presets import INDEX_OPTIONS, RUNTIME_OPTIONS
        from harness_builtins.dense.retriever import DenseRetriever
        from harness_builtins.dense.trained import TrainedEncoder

        if options.get("embeddings") is not None:
            raise HarnessError("retriever 'specialised' does not search released embeddings (-o embeddings): its "
                               "passages are encoded by the training output's own passage encoder (OUT/model)")
        if not path:
            raise HarnessError("retriever 'specialised' needs the training output: -o path=OUT_OF_HARNESS_TRAIN_SPECIALISED")
        self.path = Path(path).expanduser()
        engine = {k: options[k] for k in RUNTIME_OPTIONS if k in options}
        index = {**INDEX_OPTIONS, **{k: v for k, v in options.items() if k in INDEX_OPTIONS}}
        start = TrainedEncoder(str(self.path), specialised=True, **engine)
        self.labels = read_map(self.path)
        for directory in self.labels.values():
            TrainedEncoder(directory, **engine)  # reads and checks the record; loads no weights
        self.engine = engine
        #: The label whose question encoder is loaded, and that encoder.
        self.loaded: tuple[str, Any] | None = None
        reference = _passage_state(str(self.path))
        for label, directory in self.labels.items():
            state = _passage_state(directory)
            if state.keys() != reference.keys() or any(not state[k].equal(reference[k]) for k in reference):
                raise HarnessError(f"{directory}: its passage encoder differs from {self.path}/model's; "
                                   "specialised encoders must share the (frozen) passage encoder")
        self.start = start
        self.base = DenseRetriever(start, index=IndexConfig.from_options(index), shard_size=index["shard_size"])
        #: Questions searched per part (the start's encoder under None).
        self.counts: dict[str | None, int] = {}

    def parameters(self) -> dict[str, Any]:
        return {**self.base.parameters(), "specialised": {label: Path(d).name for label, d in sorted(self.labels.items())}}

    def index(self, corpus: Corpus, context: RunContext) -> None:
        self.base.index(corpus, context)

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        return self.search_parts(queries, [None] * len(queries), k, context)

    def search_parts(self, queries: Sequence[str], parts: Sequence[str | None], k: int, context: RunContext) -> list[list[Hit]]:
        from harness_builtins.dense.retriever import apply_threads

        if len(parts) != len(queries):
            raise HarnessError(f"{len(parts)} part names for {len(queries)} queries")
        apply_threads(context.threads)
        out: list[list[Hit] | None] = [None] * len(queries)
        groups: dict[str | None, list[int]] = {}
        for i, part in enumerate(parts):
            groups.setdefault(part if part in self.labels else None, []).append(i)
        current = self.loaded[0] if self.loaded is not None else None
        for part in sorted(groups, key=lambda p: p is None or p != current):  # the loaded label's first
            rows = groups[part]
            hits = self.base.search_vectors(self.encoder(part).encode_queries([queries[i] for i in rows]), k)
            for i, ranking in zip(rows, hits):
                out[i] = ranking
            self.counts[part] = self.counts.get(part, 0) + len(rows)
        return out  # type: ignore[return-value]

    def encoder(self, part: str | None) -> Any:
        """The question encoder of ``part``: its label's, else (``None`` or a part no encoder was
        trained for) the start's. A label's replaces the one loaded before, which is released."""
        from harness_builtins.dense.matrix import release_memory
        from harness_builtins.dense.trained import TrainedEncoder

        if part not in self.labels:
            return self.start
        if self.loaded is None or self.loaded[0] != part:
            if self.loaded is not None:
                self.loaded = None
                release_memory()
            self.loaded = (part, TrainedEncoder(self.labels[part], **self.engine))
        return self.loaded[1]


def load_specialised(**options: Any) -> SpecialisedRetriever:
    return SpecialisedRetriever(**options)

"""The late-interaction head (seed 004, chapter 4): ``sim_L(q, p) = m^T [q; p; q*p; q-p]`` over a
dual encoder's question and passage embeddings, re-ranking a first stage's top-n (200 in the seed:
``--rerank-depth 200``).

Two checkpoint layouts are read (``-R path=DIR``):

- a ``harness train --variant late-interaction`` output: ``harness_training.json`` (the training
  record, whose recipe's loss must be ``late-interaction``), ``loss.safetensors`` (the loss's
  state: the head ``m``) and ``model/``; the dual encoder is the ``trained`` encoder of that
  directory (``-o path=DIR``), as the trained retriever would load it;
- a plain head next to any registered encoder::

    DIR/
      late_interaction.json               {"format": "harness-late-interaction/1",
                                           "encoder": "dense",            # a registered encoder
                                           "options": {"query_model": "encoder", "pooling": "cls", ...}}
      late_interaction_head.safetensors   one float32 tensor "m" of shape [4 * d]
      encoder/ ...                        the dual encoder's files, when they live in the checkpoint

:func:`write_checkpoint` writes the two files. ``encoder`` names any encoder of ``harness list
encoders`` (``dense`` for a generic transformers dual encoder, ``st``, ``dpr-nq``, a plugin's);
``options`` are that encoder's options, where a text value naming a file or folder inside ``DIR``
(a relative path) is resolved against ``DIR``. ``d`` is the encoder's embedding size; ``m`` is
read as ``[m_q; m_p; m_qp; m_diff]``, each of size ``d``. The encoder is loaded through
:func:`harness.registry.load`, so the vectors are exactly those the dense retriever of that
encoder would compute.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.api import Hit
from harness.errors import HarnessError
from harness.results.checkpoint import LOSS_STATE_FILE, MODEL_DIR, RECORD_FILE, Checkpoint, is_finished
from harness.util.models import directory_digest

FORMAT = "harness-late-interaction/1"
CONFIG_FILE = "late_interaction.json"
HEAD_FILE = "late_interaction_head.safetensors"
#: The encoder that loads a ``harness train`` checkpoint.
TRAINED_ENCODER = "trained"
#: Passage vectors the re-ranker keeps for candidates that come back (about 87k of 768 float32).
MEMO_BYTES = 256 * 2**20


def _training_checkpoint(root: Path) -> tuple[str, dict[str, Any], Path]:
    checkpoint = Checkpoint.read(root, model=False)
    if checkpoint.loss_name != "late-interaction":
        raise HarnessError(f"{root / RECORD_FILE}: trained with loss {checkpoint.loss_name!r}, which has no late-interaction head to re-rank with")
    return TRAINED_ENCODER, {"path": str(root)}, checkpoint.loss_state or root / LOSS_STATE_FILE


def read_checkpoint(path: Any) -> tuple[str, dict[str, Any], Any]:
    """``(encoder name, encoder options, m)`` of a late-interaction checkpoint folder; any problem
    is a one-line error naming the file."""
    import numpy as np

    if not isinstance(path, str) or not path.strip():
        raise HarnessError("late-interaction needs -R path=CHECKPOINT_DIR")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise HarnessError(f"late-interaction: {root} is not a directory")
    if is_finished(root) and not (root / CONFIG_FILE).is_file():
        encoder, resolved, head_file = _training_checkpoint(root)
    else:
        encoder, resolved, head_file = _plain_checkpoint(root)
    try:
        from safetensors.torch import load_file

        tensors = load_file(str(head_file))
    except Exception as exc:  # safetensors raises its own error types for damaged files
        raise HarnessError(f"{head_file}: cannot read the late-interaction head: {exc}") from None
    m = tensors.get("m")
    m = None if m is None else m.float().numpy()
    if m is None or m.ndim != 1 or m.shape[0] % 4 or not np.isfinite(m).all():
        shape = None if m is None else list(m.shape)
        raise HarnessError(f"{head_file}: expected one finite tensor 'm' of shape [4 * d], got shape {shape}")
    return encoder, resolved, m.astype(np.float32)


def _plain_checkpoint(root: Path) -> tuple[str, dict[str, Any], Path]:
    config_file = root / CONFIG_FILE
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{config_file}: cannot read the checkpoint's configuration: {exc}") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise HarnessError(f"{config_file}: expected \"format\": \"{FORMAT}\"")
    encoder, options = config.get("encoder"), config.get("options", {})
    if not isinstance(encoder, str) or not encoder or not isinstance(options, dict):
        raise HarnessError(f"{config_file}: needs \"encoder\" (a name) and \"options\" (an object)")
    resolved = {
        key: str(root / value) if isinstance(value, str) and value and not Path(value).is_absolute()
        and (root / value).exists() else value
        for key, value in options.items()
    }
    return encoder, resolved, root / HEAD_FILE


def write_checkpoint(directory: Any, m, encoder: str, options: dict[str, Any]) -> Path:
    """Write the checkpoint files (configuration and head) into ``directory``, each atomically;
    the encoder's own files (when ``options`` names folders inside ``directory``) are the
    caller's. ``m`` is a 1-D array of ``4 * d`` numbers."""
    import numpy as np
    from safetensors.numpy import save

    from harness.util.atomic import fsync_path, temp_name, write_text_atomic

    m = np.ascontiguousarray(np.asarray(m, dtype=np.float32))
    if m.ndim != 1 or m.shape[0] % 4:
        raise ValueError(f"m must have shape [4 * d], got {list(m.shape)}")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    config = {"format": FORMAT, "encoder": encoder, "options": dict(options)}
    write_text_atomic(root / CONFIG_FILE, json.dumps(config, indent=1) + "\n")
    head = root / HEAD_FILE
    partial = temp_name(head)
    try:
        partial.write_bytes(save({"m": m}))
        fsync_path(partial)
        partial.replace(head)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return root


def checkpoint_digest(root: Path) -> str:
    """``sha256:<hex>`` of what a checkpoint's scores depend on: for a ``harness train`` output its
    model's contents (:func:`~harness_builtins.common.trained_models.model_digest`), its head's
    bytes and the passage format its record states (not the record's other values: its paths,
    times and versions decide no score; nor its intermediate ``checkpoints/``), else the whole
    folder."""
    import hashlib

    from harness_builtins.common.trained_models import model_digest

    if is_finished(root) and not (root / CONFIG_FILE).is_file():
        checkpoint = Checkpoint.read(root, model=False)
        digest = hashlib.sha256(model_digest(root / MODEL_DIR).encode())
        head = checkpoint.loss_state or root / LOSS_STATE_FILE
        digest.update(LOSS_STATE_FILE.encode() + head.read_bytes())
        digest.update(b"format:" + checkpoint.format.encode())
        return "sha256:" + digest.hexdigest()
    return directory_digest(root)


def late_interaction_scores(q, passages, m):
    """``m^T [q; p; q*p; q-p]`` for one question vector ``q`` (d) and passage vectors (n, d)."""
    import numpy as np

    d = q.shape[0]
    q = q.astype(np.float32)
    p = np.asarray(passages, dtype=np.float32)
    m_q, m_p, m_qp, m_diff = m[:d], m[d : 2 * d], m[2 * d : 3 * d], m[3 * d :]
    return float(q @ m_q) + p @ m_p + (p * q) @ m_qp + (q - p) @ m_diff


def _key(candidate) -> tuple[str, str, str]:
    """What a passage's vector depends on: its id, title and text (another corpus may reuse an id)."""
    return candidate.passage_id, candidate.passage.title, candidate.passage.text


class LateInteractionReranker:
    """The ``late-interaction`` re-ranker."""

    def __init__(self, *, path: Any = None, batch_size: int | None = None, device: str = "auto"):
        from harness import registry

        self.path = path
        self.encoder_name, options, self.m = read_checkpoint(path)
        declared = registry.encoders().get(self.encoder_name).options
        for key, value in (("batch_size", batch_size), ("device", device)):
            if key in declared and value not in (None, "auto"):
                options[key] = value
        self.encoder = registry.load("encoders", self.encoder_name, options).value
        self._dim: int | None = None

    def parameters(self) -> dict[str, Any]:
        root = Path(self.path).expanduser().resolve()
        return {
            "path": f"{root.name} ({checkpoint_digest(root)[:19]})",
            "encoder": self.encoder_name,
            "dim": self.m.shape[0] // 4,
        }

    def rerank(self, questions, candidates, context):
        """Scores for each question's candidates. The questions of the batch are encoded in one
        call, and each distinct passage once: its vector is kept (up to :data:`MEMO_BYTES`, the
        least recently used dropped first) for the later questions and batches that retrieve it
        again, where a first stage's top 200 over a corpus repeats most passages (the vector is
        keyed by the passage's id, title and text)."""
        import numpy as np

        asked = [i for i, cands in enumerate(candidates) if cands]
        out: list[list[Hit]] = [[] for _ in candidates]
        if not asked:
            return out
        q_vectors = self.encoder.encode_queries([questions[i] for i in asked])
        self._encode_missing([c for i in asked for c in candidates[i]])
        for row, i in enumerate(asked):
            q = np.asarray(q_vectors[row])
            p = np.stack([self._memo[_key(c)] for c in candidates[i]])
            if q.shape[0] * 4 != self.m.shape[0] or p.shape[1] != q.shape[0]:
                raise HarnessError(
                    f"late-interaction: the head has {self.m.shape[0]} = 4 x {self.m.shape[0] // 4} weights but encoder "
                    f"{self.encoder_name!r} makes {q.shape[0]}-dimensional vectors"
                )
            scores = late_interaction_scores(q, p, self.m)
            out[i] = [Hit(passage_id=c.passage_id, score=float(s)) for c, s in zip(candidates[i], scores)]
        return out

    def _encode_missing(self, cands) -> None:
        """Encode the passages of ``cands`` not in the memo (each once), then drop the least
        recently used vectors beyond :data:`MEMO_BYTES` (never one of ``cands``)."""
        from collections import OrderedDict

        if not hasattr(self, "_memo"):
            self._memo: OrderedDict = OrderedDict()
        wanted = list(dict.fromkeys(_key(c) for c in cands))
        todo = [key for key in wanted if key not in self._memo]
        if todo:
            vectors = self.encoder.encode_passages([(title, text) for _, title, text in todo])
            for key, vector in zip(todo, vectors):
                self._memo[key] = vector
        for key in wanted:
            self._memo.move_to_end(key)
        row_bytes = next(iter(self._memo.values())).nbytes if self._memo else 0
        while row_bytes and len(self._memo) > max(len(wanted), MEMO_BYTES // row_bytes):
            self._memo.popitem(last=False)
"""What a stage leaves beside its checkpoints, and which checkpoint ``--resume`` continues from.

- the summed step losses up to each checkpoint (:data:`LOSS_SUM_FILE`), so a resumed stage's
  mean loss covers every step (:func:`mean_loss`);
- each process's in-loop state (:func:`write_in_loop_state` / :func:`restore_in_loop`): the
  index it searches and the loss's counts;
- :func:`last_complete_checkpoint` finds the checkpoint ``--resume`` continues from: DDP's files
  (``optimizer.pt``) or FSDP's (``optimizer.bin``, ``optimizer_0/``, ``optimizer_0_rank*.bin``),
  and :func:`checkpoint_damage` refuses one that cannot be loaded;
- :func:`truncate_log` cuts ``train_log.jsonl`` back to the checkpoint's step;
- :func:`remove_checkpoints` deletes a finished stage's checkpoints (nothing is left to resume).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.util.atomic import write_text_atomic

from harness_builtins.training.distributed import group, rank

#: Beside each checkpoint: the summed step losses up to it (``{"step", "loss_sum"}``).
LOSS_SUM_FILE = "harness_loss_sum.json"


def loss_sum(checkpoint: Path | None) -> tuple[int, float] | None:
    """``(step, summed step losses)`` recorded beside ``checkpoint``, or ``None``. Read it when the
    run resumes: the checkpoint itself may be deleted by the time the run ends (only the newest
    ``--save-total-limit`` are kept)."""
    if checkpoint is None:
        return None
    try:
        data = json.loads((checkpoint / LOSS_SUM_FILE).read_text(encoding="utf-8"))
        step, total = int(data["step"]), float(data["loss_sum"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (step, total) if step == int(checkpoint.name.split("-")[1]) else None


_UNREAD = object()


def mean_loss(resumed_mean: float | None, steps: int, resume_from: Path | None,
              record: Any = _UNREAD) -> tuple[float | None, int]:
    """The mean step loss of the whole stage and the steps it covers. The trainer's own mean
    covers only the steps of this process's run; a resumed run adds the sum its checkpoint
    recorded (``record``, :func:`loss_sum` as read when the run resumed; read now when not
    given): ``(sum_before + mean_now x steps_now) / steps``. A checkpoint without that record
    leaves the mean of the resumed steps, and says so by the steps it covers."""
    if resumed_mean is None or resume_from is None:
        return resumed_mean, steps
    if record is _UNREAD:
        record = loss_sum(resume_from)
    start = int(resume_from.name.split("-")[1])
    if record is None:
        return resumed_mean, steps - start
    return (record[1] + resumed_mean * (steps - start)) / max(steps, 1), steps


# --- in-loop state beside checkpoints ---------------------------------------------------------


def _in_loop_state_file(checkpoint: Path) -> Path:
    return checkpoint / f"in_loop_state-rank{rank()}.json"


def write_in_loop_state(checkpoint: Path, index, loss_module) -> None:
    """Into a checkpoint's folder (made if need be), this process's in-loop state: the index it
    searches (and the builds so far) and the loss's counts, so that a resumed run goes on with the
    same index, not one re-embedded by the checkpoint's weights, and counts every step once. The
    trainer writes it before its own files: the trainer state, written last, makes a checkpoint
    complete (:func:`last_complete_checkpoint`), so a complete checkpoint always has it."""
    counts = {"skipped": int(loss_module.skipped), "seen": int(loss_module.seen)} if hasattr(loss_module, "skipped") else None
    checkpoint.mkdir(parents=True, exist_ok=True)
    write_text_atomic(_in_loop_state_file(checkpoint), json.dumps({"index": index.state(), "counts": counts}) + "\n")


def save_in_loop(checkpoint: Path, index, loss_module) -> None:
    """:func:`write_in_loop_state`, then the index is pinned: the one this (now complete)
    checkpoint searches stays until a newer checkpoint's."""
    write_in_loop_state(checkpoint, index, loss_module)
    if hasattr(index, "pin"):
        index.pin()


def restore_in_loop(checkpoint: Path | None, index, loss_module) -> bool:
    """Whether every process took up its checkpoint's in-loop state (:func:`save_in_loop`); when
    any cannot (no state, embeddings deleted), all of them embed the corpus anew."""
    state = None
    if checkpoint is not None and _in_loop_state_file(checkpoint).is_file():
        try:
            state = json.loads(_in_loop_state_file(checkpoint).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = None
    ok = isinstance(state, dict) and isinstance(state.get("index"), dict) and index.restore(state["index"])
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        flags = [None] * dist.get_world_size()
        dist.all_gather_object(flags, bool(ok))
        ok = all(flags)
    if ok and isinstance(state.get("counts"), dict) and hasattr(loss_module, "skipped"):
        loss_module.skipped, loss_module.seen = int(state["counts"]["skipped"]), int(state["counts"]["seen"])
    return bool(ok)


# --- resumable checkpoints --------------------------------------------------------------------

#: The trainer state and scheduler every checkpoint holds, and the optimizer as DDP or one process
#: (``optimizer.pt``) or FSDP (full ``optimizer.bin``; sharded ``optimizer_0/``; local
#: ``optimizer_0_rank{r}.bin``: accelerate's ``save_fsdp_optimizer``) writes it.
_CHECKPOINT_FILES = ("trainer_state.json", "scheduler.pt")


def _has_optimizer(path: Path) -> bool:
    if (path / "optimizer.pt").is_file() or (path / "optimizer.bin").is_file():
        return True
    sharded = path / "optimizer_0"
    if sharded.is_dir() and any(sharded.iterdir()):
        return True
    world = group()[1]  # local shards: one file per process of the run that resumes
    return all((path / f"optimizer_0_rank{r}.bin").is_file() for r in range(world))


def last_complete_checkpoint(checkpoints: Path, before: int | None = None, *, quiet: bool = False) -> Path | None:
    """The newest ``checkpoint-N`` (``N < before`` when given) holding the trainer state,
    optimizer and scheduler; a checkpoint cut short by a kill is skipped (with a warning), so a
    resume never reads it."""
    from harness.errors import warn

    found = []
    for path in checkpoints.glob("checkpoint-*") if checkpoints.is_dir() else []:
        step = path.name.removeprefix("checkpoint-")
        if step.isdigit() and path.is_dir() and (before is None or int(step) < before):
            found.append((int(step), path))
    for step, path in sorted(found, reverse=True):
        if all((path / name).is_file() for name in _CHECKPOINT_FILES) and _has_optimizer(path):
            try:
                state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                state = None
            if isinstance(state, dict) and state.get("global_step") == step:
                return path
        if not quiet:
            warn(f"{path} is incomplete (cut short?); resuming from an earlier checkpoint")
    return None


def checkpoint_damage(path: Path) -> str | None:
    """What is wrong with a complete-looking checkpoint, or None: a JSON file that does not
    parse, a ``modules.json``/``router_config.json`` naming a class outside sentence-transformers
    (loading it would import that code), a safetensors file whose header or length is wrong, or a
    torch file (optimizer, scheduler, RNG state, arguments) whose zip records fail their CRC."""
    import zipfile

    from safetensors import safe_open

    from harness_builtins.common.trained_models import MODULE_PREFIXES, named_types

    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        name = file.relative_to(path).as_posix()
        try:
            if file.suffix == ".json":
                data = json.loads(file.read_text(encoding="utf-8"))
                if file.name in ("modules.json", "router_config.json"):
                    foreign = next((t for t in named_types(data) if not t.startswith(MODULE_PREFIXES)), None)
                    if foreign is not None:
                        return f"{name} names the class {foreign!r}, which is not sentence-transformers'"
            elif file.suffix == ".safetensors":
                with safe_open(str(file), framework="pt") as handle:
                    for key in handle.keys():
                        handle.get_slice(key)
            elif file.suffix in (".pt", ".pth", ".bin"):
                with zipfile.ZipFile(file) as archive:
                    bad = archive.testzip()
                if bad is not None:
                    return f"{name}: the record {bad!r} fails its CRC check"
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return f"{name}: {' '.join(str(exc).split())[:160] or type(exc).__name__}"
        except (zipfile.BadZipFile, EOFError) as exc:
            return f"{name}: not a complete torch file ({' '.join(str(exc).split())[:120]})"
        except Exception as exc:  # safetensors raises its own error type for a bad header
            if type(exc).__module__.split(".")[0] != "safetensors" and type(exc).__name__ != "SafetensorError":
                raise
            return f"{name}: {' '.join(str(exc).split())[:160]}"
    return None


def resume_checkpoint(checkpoints: Path) -> Path | None:
    """The checkpoint ``--resume`` continues from; none when no checkpoint was written yet. When
    checkpoints exist but none is complete the run cannot resume: a one-line error, never a silent
    restart from step 0. A complete-looking checkpoint whose files are damaged
    (:func:`checkpoint_damage`) is one line naming it and the newest sound one before it."""
    found = last_complete_checkpoint(checkpoints)
    if found is None and checkpoints.is_dir() and any(checkpoints.glob("checkpoint-*")):
        raise HarnessError(f"{checkpoints}: no complete checkpoint to resume from (each lacks its trainer state, scheduler or "
                           "optimizer); delete the folder to start over")
    if found is None:
        return None
    problem = checkpoint_damage(found)
    if problem is None:
        return found
    older = found
    while True:
        older = last_complete_checkpoint(checkpoints, int(older.name.split("-")[1]), quiet=True)
        if older is None or checkpoint_damage(older) is None:
            break
    offer = (f"the newest sound checkpoint before it is {older.name}: move {found.name} out of {checkpoints} and --resume again"
             if older is not None else "no sound checkpoint precedes it: delete the folder to start over")
    raise HarnessError(f"{found} is damaged ({problem}); {offer}")


def truncate_log(log_path: Path, step: int) -> None:
    """Keep the log lines up to ``step``: a resumed run logs the steps after it again."""
    if not log_path.exists():
        return
    kept = []
    for line in log_path.read_text(encoding="utf-8").splitlines():
        try:
            if json.loads(line).get("step", 0) <= step:
                kept.append(line)
        except ValueError:
            break  # a line cut short by the kill, and anything after it
    write_text_atomic(log_path, "".join(k + "\n" for k in kept))


def remove_checkpoints(checkpoints: Path) -> tuple[int, int]:
    """Delete every ``checkpoint-N`` folder in ``checkpoints`` (a finished stage's: its model and
    record are written, and a finished stage is never resumed), and the folder itself when nothing
    else is in it (the trainer's TensorBoard logs, ``runs/``, stay). Returns the folders and bytes
    removed."""
    import shutil

    removed = size = 0
    for path in sorted(checkpoints.glob("checkpoint-*")) if checkpoints.is_dir() else []:
        if not path.is_dir() or path.is_symlink():
            continue
        size += sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
        shutil.rmtree(path)
        removed += 1
    if checkpoints.is_dir() and not any(checkpoints.iterdir()):
        checkpoints.rmdir()
    return removed, size

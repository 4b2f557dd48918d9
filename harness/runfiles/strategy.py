"""How a run file is read: the one place that picks the reading strategy for a format and a file.

- ``"stream"``: one question at a time from the (decompressed) bytes, with the format's
  ``entries`` (:mod:`harness.runfiles.stream`): every compressed file, and every format the core
  has no faster engine for (a plugin's, ``upr-json``, the other tools');
- ``"split"``: scoring a large plain JSON file in two halves on two processes
  (:mod:`harness.runfiles.split`; it says None for a small file, which is then read whole);
- ``"whole"``: a plain file read at once by the format's ``whole`` reader
  (:mod:`harness.runfiles.readers`; DPR's and pyserini's JSON memory-mapped and decoded in columns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from harness.api import RunFormatSpec
from harness.errors import InputFileError

Strategy = Literal["stream", "split", "whole"]


def reading_strategy(spec: RunFormatSpec, path: str | Path, compression: str | None, *, scoring: bool = False) -> Strategy:
    """How to read ``path`` in format ``spec`` (``compression``: None, ``"gzip"`` or ``"tar.gz"``);
    ``scoring``: only the ranks are wanted (no :class:`~harness.runfiles.readers.Run`). A
    compressed file in a format that is not read compressed is a one-line error."""
    if compression is not None:
        if not spec.compressed:
            raise InputFileError(path, f"a compressed {spec.name} run is not supported: decompress it first")
        return "stream"
    if scoring and spec.split is not None:
        return "split"
    if spec.whole is not None:
        return "whole"
    return "stream"


__all__ = ["Strategy", "reading_strategy"]

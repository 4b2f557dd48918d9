"""Names (of suites, retrievers, re-rankers) as parts of file names, one to one and short enough
for any file system.

:func:`file_stem` keeps a name that is already a safe, short, lower-case file name as it is
(``demo``, ``nq``, ``entityquestions-p17``) and gives any other name a readable slug followed by
the first 8 hex digits of the name's SHA-256 (``col x`` -> ``col_x-1b4f…``), so two names never
share a file, also on a file system that ignores case, and no name gives a file name longer than
:data:`STEM_MAX` plus 9 characters.
"""

from __future__ import annotations

import hashlib
import re

#: Longest slug kept before the digest is added; file names stay far below the usual 255-byte limit.
STEM_MAX = 60
#: A name kept as it is: lower-case ASCII letters, digits, ``.``, ``_`` and ``-``, not starting with
#: a dot, ``_`` or ``-``.
_SAFE = re.compile(r"[a-z0-9][a-z0-9._-]*")
#: What a slug with a digest ends with; a name ending so is given a digest of its own.
_DIGESTED = re.compile(r".*-[0-9a-f]{8}")


def slug(name: str) -> str:
    """The letters, digits, ``.``, ``_`` and ``-`` of ``name`` (any other run as one ``_``),
    without leading or trailing ``_``, ``-`` or ``.``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_.-")


def file_stem(name: str, *, max_length: int = STEM_MAX) -> str:
    """``name`` as part of a file name, one to one: the name itself when it is a safe lower-case
    file name of at most ``max_length`` characters (and does not end like a digest), else its
    :func:`slug` cut to ``max_length`` characters, then ``-`` and the first 8 hex digits of the
    name's SHA-256 (after ``_`` for a name with no letter or digit)."""
    if len(name) <= max_length and _SAFE.fullmatch(name) and not _DIGESTED.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    short = slug(name)[:max_length].rstrip("_.-")
    return f"{short or '_'}-{digest}"

"""Published runs: retrieval outputs a paper's authors released, described as data.

Plugins register :class:`PublishedRun` records (``register_published_runs``); ``harness list
runs`` shows them, ``harness data fetch NAME`` downloads one, ``harness score --run NAME`` scores it
on its suite and ``harness reproduce --runs`` fetches, scores and checks every one against the
published row it should reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class PublishedRun:
    """One released run file: where it is, how it is read, what it answers and what it reproduces.

    ``url``/``path``/``sha256``/``size`` are as for any download (:mod:`harness.data.download`; no
    ``sha256``: the digest of the first download is recorded). ``format`` is the name of a
    registered run format (``harness list run-formats``); ``compression`` is ``None``, ``"gzip"`` or
    ``"tar.gz"`` (then ``member`` names the file inside the archive). ``suite`` is the suite the
    file's questions are, ``depth`` the passages per question, ``k`` the cutoffs to report (empty:
    the suite's). ``table``/``system`` name the published row (``harness list published``) the run
    should reproduce; empty when there is none.
    """

    name: str
    description: str
    suite: str
    format: str
    url: str
    path: str
    sha256: str | None = None
    size: int | None = None
    compression: str | None = None
    member: str | None = None
    depth: int | None = None
    k: tuple[int, ...] = ()
    retriever: str = ""
    checkpoint: str = ""
    table: str = ""
    system: str = ""
    license: str = ""
    citation: str = ""
    homepage: str = ""
    version: str = ""
    source: str = field(default="", compare=False)  # the spec file it was read from, for messages


__all__ = ["PublishedRun"]

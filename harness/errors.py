"""User-facing errors.

Anything raised as :class:`HarnessError` is a problem with the user's input or environment, not a
bug: the CLI prints its message on one line and exits with status 2, without a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """A problem the user can fix; the message is shown as one line."""

    exit_code = 2


class UnknownNameError(HarnessError):
    """A retriever, suite, metric or other name that no plugin provides."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        known = sorted(known)
        self.kind, self.name, self.known = kind, name, known
        message = f"unknown {kind} {name!r}"
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        if close:
            message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        elif known:
            message += f"; available: {', '.join(known)}"
        else:
            message += f"; no {kind} is installed"
        super().__init__(message)


class InputFileError(HarnessError):
    """A malformed input file: names the file, the line (when known) and the problem."""

    def __init__(self, path: object, problem: str, *, line: int | None = None):
        self.path, self.line, self.problem = path, line, problem
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")


def warn(message: str) -> None:
    """Tell the user something went wrong but was handled (a damaged cache rebuilt, a plugin
    skipped): one line on stderr, ``harness: warning: ...``."""
    import sys

    print(f"harness: warning: {message}", file=sys.stderr, flush=True)

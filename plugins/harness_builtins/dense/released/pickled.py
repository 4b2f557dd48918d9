"""What the restricted unpickler (:mod:`.unpickle`) makes of a released pickle's objects.

Records only, shared by the opcode walker and the whole-row matcher (:mod:`.pickle_rows`): a
:class:`PickledArray` (a numpy array as the pickle describes it, its data in memory or a
:class:`FileSpan` left in the file), a :class:`_Dtype` being unpickled, and the :class:`_Global`
stand-ins for the admitted globals (compared by identity, so each exists once, here). Nothing in
them is ever called from a pickle.
"""

from __future__ import annotations

import numpy as np


class FileSpan:
    """A payload left in the file: ``length`` bytes from byte ``offset``."""

    __slots__ = ("offset", "length")

    def __init__(self, offset: int, length: int):
        self.offset, self.length = offset, length

    def __repr__(self) -> str:
        return f"FileSpan({self.offset}, {self.length})"


class PickledArray:
    """A numpy array as a pickle describes it: ``shape``, ``dtype`` (a numeric dtype), ``order``
    and its raw ``data`` (``bytes``, or a :class:`FileSpan` for a large one)."""

    __slots__ = ("shape", "dtype", "order", "data")

    def __init__(self):
        self.shape: tuple[int, ...] | None = None
        self.dtype: np.dtype | None = None
        self.order = "C"
        self.data: bytes | FileSpan | None = None

    def values(self) -> np.ndarray:
        """The array (read-only, over the pickle's bytes); only for in-memory data."""
        if not isinstance(self.data, bytes):
            raise TypeError("the array's data is in the file")
        return np.frombuffer(self.data, dtype=self.dtype).reshape(self.shape, order=self.order)


class _Global:
    """An admitted global: a stand-in that only records what a pickle asks of it."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


class _Dtype:
    """A numpy dtype being unpickled: ``np.dtype(spec)`` and, after its state, its byte order."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype


_RECONSTRUCT = _Global("numpy _reconstruct")
_NDARRAY = _Global("numpy.ndarray")
_DTYPE = _Global("numpy.dtype")
_SCALAR = _Global("numpy scalar")
_FROMBUFFER = _Global("numpy _frombuffer")
_ENCODE = _Global("_codecs.encode")


__all__ = ["FileSpan", "PickledArray"]

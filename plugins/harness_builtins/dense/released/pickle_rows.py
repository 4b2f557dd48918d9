"""The fast path of :mod:`.unpickle`: DPR's whole ``(id, vector)`` rows and ART's whole
``{row_id: vector}`` items matched as one block of bytes.

Once the first batch has stored numpy's globals, the ``b'b'`` typecode and the dtypes in the
memo, every later row a protocol 3 or 4 pickler writes is the same opcode sequence around its id
and its vector's bytes: two regular expressions (a head up to the data, a tail after it) match
it, and :func:`_dpr_row` / :func:`_art_item` return the row and account for its memo entries,
instead of :class:`~.unpickle.PickleStream` walking it one opcode at a time. This is for speed
only: anything not exactly that layout returns None and is left to the opcode walker, which
remains the reference (a test reads both layouts both ways and compares).
"""

from __future__ import annotations

import re
import struct

import numpy as np

from .pickled import _NDARRAY, _RECONSTRUCT, _SCALAR, PickledArray, _Dtype, _Global

_UNPACK_UI = struct.Struct("<I").unpack_from
_UNPACK_H = struct.Struct("<H").unpack_from

# One row as the publishers' picklers write it (protocols 3 and 4), once the first batch has made
# numpy's globals, the ``b'b'`` typecode and the dtypes memo entries, matched with two regular
# expressions instead of one opcode at a time. A 1-D array is
#   GET(_reconstruct) GET(ndarray) K0 TUPLE1 PUT GET(b'b') TUPLE3 PUT REDUCE PUT
#   MARK K1 K/M(dim) TUPLE1 PUT GET(dtype) NEWFALSE C/B(length) <data> PUT TUPLE PUT BUILD;
# DPR's row is its id string, PUT, the array, TUPLE2 PUT; ART's item is its key, a numpy int64
# scalar (GET(scalar) GET(dtype) C 8 <bytes> PUT TUPLE2 PUT REDUCE PUT), then the array. Anything
# else (a FRAME opcode in between, protocol 2's or 5's arrays, another shape) is left to the
# opcode loop.
_PUT = rb"(?:q(.)|r(....)|\x94)"
_GET = rb"(?:h(.)|j(....))"
_ARRAY = (_GET + _GET + rb"K\x00\x85" + _PUT + _GET + rb"\x87" + _PUT + rb"R" + _PUT
          + rb"\(K\x01(?:K(.)|M(..))\x85" + _PUT + _GET + rb"\x89(?:C(.)|B(....))")
_ROW_HEAD = re.compile(_PUT + _ARRAY, re.S)
_ROW_TAIL = re.compile(_PUT + rb"t" + _PUT + rb"b\x86" + _PUT, re.S)
_ITEM_HEAD = re.compile(_GET + _GET + rb"C\x08(.{8})" + _PUT + rb"\x86" + _PUT + rb"R" + _PUT + _ARRAY, re.S)
_ITEM_TAIL = re.compile(_PUT + rb"t" + _PUT + rb"b", re.S)
#: Bytes of buffer a row is matched in (its id, opcodes and a 768 x float64 vector fit).
_ROW_WINDOW = 8192
_UNPACK_IDX = struct.Struct("<I").unpack
_INT64 = np.dtype("<i8")


def _ref(memo: dict, one, four):
    return memo.get(one[0] if one is not None else _UNPACK_IDX(four)[0])


def _array_at(g: tuple, o: int, memo: dict):
    """(dtype, dim, length) of the 1-D array whose 20 groups of ``_ARRAY`` start at ``g[o]``, or
    None when its references are not numpy's reconstructor, ndarray, typecode and a dtype."""
    if (_ref(memo, g[o], g[o + 1]) is not _RECONSTRUCT or _ref(memo, g[o + 2], g[o + 3]) is not _NDARRAY
            or _ref(memo, g[o + 6], g[o + 7]) != b"b"):
        return None
    dtype = _ref(memo, g[o + 16], g[o + 17])
    if type(dtype) is not _Dtype:
        return None
    dim = g[o + 12][0] if g[o + 12] is not None else _UNPACK_H(g[o + 13])[0]
    length = g[o + 18][0] if g[o + 18] is not None else _UNPACK_IDX(g[o + 19])[0]
    if length != dim * dtype.dtype.itemsize:
        return None
    return dtype.dtype, dim, length


def _count_puts(groups: tuple, pairs: tuple, memo: dict, memo_next: int) -> int:
    """Account for a matched row's PUTs (at ``pairs`` of ``groups``): their entries are not kept
    (rows are never referred back to); returns the next MEMOIZE index."""
    for i in pairs:
        one, four = groups[i], groups[i + 1]
        if one is None and four is None:  # MEMOIZE
            memo_next += 1
        else:
            idx = one[0] if one is not None else _UNPACK_IDX(four)[0]
            memo.pop(idx, None)
            if idx >= memo_next:
                memo_next = idx + 1
    return memo_next


def _array_of(dtype: np.dtype, dim: int, data: bytes) -> PickledArray:
    array = PickledArray()
    array.shape, array.dtype, array.data = (dim,), dtype, data
    return array


def _dpr_row(buf: bytes, at: int, memo: dict, memo_next: int):
    """``((id, PickledArray), end, memo_next)`` for the DPR row whose id string starts at
    ``buf[at]``, or None when the bytes are not exactly that layout."""
    op = buf[at]
    if op == 0x8C:
        n, start = buf[at + 1], at + 2
    elif op == 0x58 and at + 5 <= len(buf):
        n, start = _UNPACK_UI(buf, at + 1)[0], at + 5
    else:
        return None
    head = _ROW_HEAD.match(buf, start + n)
    if head is None:
        return None
    g = head.groups()
    found = _array_at(g, 2, memo)
    if found is None:
        return None
    dtype, dim, length = found
    data_start = head.end()
    tail = _ROW_TAIL.match(buf, data_start + length)
    if tail is None or data_start + length > len(buf):
        return None
    memo_next = _count_puts(g, (0, 6, 10, 12, 16), memo, memo_next)
    memo_next = _count_puts(tail.groups(), (0, 2, 4), memo, memo_next)
    row = (str(buf[start:start + n], "utf-8", "surrogatepass"), _array_of(dtype, dim, buf[data_start:data_start + length]))
    return row, tail.end(), memo_next


def _art_item(buf: bytes, at: int, memo: dict, memo_next: int):
    """``(key, PickledArray, end, memo_next)`` for the ART item (an int64 scalar key, a 1-D
    array) starting at ``buf[at]``, or None when the bytes are not exactly that layout."""
    head = _ITEM_HEAD.match(buf, at)
    if head is None:
        return None
    g = head.groups()
    scalar, key_dtype = _ref(memo, g[0], g[1]), _ref(memo, g[2], g[3])
    if scalar is not _SCALAR or type(key_dtype) is not _Dtype or key_dtype.dtype != _INT64:
        return None
    found = _array_at(g, 11, memo)
    if found is None:
        return None
    dtype, dim, length = found
    data_start = head.end()
    tail = _ITEM_TAIL.match(buf, data_start + length)
    if tail is None or data_start + length > len(buf):
        return None
    memo_next = _count_puts(g, (5, 7, 9, 15, 19, 21, 25), memo, memo_next)
    memo_next = _count_puts(tail.groups(), (0, 2), memo, memo_next)
    key = int.from_bytes(g[4], "little", signed=True)
    return key, _array_of(dtype, dim, buf[data_start:data_start + length]), tail.end(), memo_next


def _shared(value) -> bool:
    """Whether a memo entry from the first batch may be referred to by later rows (a small
    constant such as numpy's ``b'b'`` typecode or a dtype's byte order), not a row's own data."""
    kind = type(value)
    if kind in (_Global, _Dtype, int, float, bool, str) or value is None:
        return kind is not str or len(value) <= 8
    if kind is bytes:
        return len(value) <= 8
    if kind is tuple:
        return len(value) <= 4 and all(_shared(v) for v in value)
    return False

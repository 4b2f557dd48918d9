"""Reading released pickles without running them, and without holding them in memory.

The released pickles (DPR's shards, Contriever's shards, ART's evidence embeddings) hold only
lists, tuples, dicts, strings, integers and numpy arrays, dtypes and scalars. :class:`PickleStream`
reads exactly that: it walks the opcode stream itself (a stack machine for the opcodes a
protocol 2-5 pickler writes for those objects) and refuses any other opcode, and any global other
than numpy's array, dtype and scalar reconstructors (and ``_codecs.encode``, how protocol 2 writes
bytes), in one :class:`~harness.errors.InputFileError` naming the file. Nothing it reads is ever
called: the admitted globals are stand-ins that only record what the pickle describes
(:class:`PickledArray`), so a hostile ``__reduce__`` runs nothing.

Memory stays bounded whatever the file's size:

- a ``bytes`` payload of :data:`LAZY_BYTES` or more (Contriever's one array per shard, 2 GB) is
  not read: it becomes a :class:`FileSpan` (its offset and length in the file), read later in row
  chunks by the caller;
- the items of one container (``stream_at``: DPR's top-level list, Contriever's list of ids, ART's
  ``embed_data`` dict) are handed over batch by batch (as the pickler wrote them, 1,000 a batch) instead of being
  collected, and the memo entries that pointed to them are dropped;
- without a streamed container, at most :data:`INLINE_BUDGET` bytes of payload are held.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from harness.errors import InputFileError

from .pickle_rows import _ROW_WINDOW, _art_item, _dpr_row, _shared
from .pickled import (_DTYPE, _ENCODE, _FROMBUFFER, _NDARRAY, _RECONSTRUCT, _SCALAR, FileSpan, PickledArray, _Dtype,
                      _Global)

#: A bytes payload at least this long stays in the file (a :class:`FileSpan`).
LAZY_BYTES = 1 << 20
#: The longest string (or in-memory bytes, or integer encoding) read from a pickle.
MAX_INLINE = 64 << 20
#: Without a streamed container: the most payload bytes held in memory at once.
INLINE_BUDGET = 256 << 20
#: Bytes read from the file at a time.
BLOCK = 1 << 20


def _malformed(exc: BaseException) -> str:
    """What a failure while walking the opcodes says of the file, in the pickle's own terms."""
    if isinstance(exc, IndexError):
        return "an opcode finds fewer values on the stack than it takes"
    if isinstance(exc, KeyError):
        return f"a memo reference to nothing stored ({exc})"
    if isinstance(exc, MemoryError):
        return "it asks for more memory than there is"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "a string that is not UTF-8"
    return f"{type(exc).__name__}: {exc}"


#: What a released pickle may name, and the stand-in it gets.
ADMITTED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _DTYPE,
    ("numpy.core.multiarray", "scalar"): _SCALAR,
    ("numpy._core.multiarray", "scalar"): _SCALAR,
    ("numpy.core.numeric", "_frombuffer"): _FROMBUFFER,
    ("numpy._core.numeric", "_frombuffer"): _FROMBUFFER,
    ("_codecs", "encode"): _ENCODE,
}

#: The dtypes an array or scalar may have: numeric, fixed width, no objects.
_DTYPE_SPEC = re.compile(r"[<>|=]?(?:[fiu][1248]|b1)")

_GONE = object()  # what a memo lookup finds where the entry was dropped

_UNPACK_I = struct.Struct("<i").unpack_from
_UNPACK_UI = struct.Struct("<I").unpack_from
_UNPACK_H = struct.Struct("<H").unpack_from
_UNPACK_Q = struct.Struct("<Q").unpack_from
_UNPACK_D = struct.Struct(">d").unpack_from


class PickleStream:
    """Walks one pickle (bytes ``start`` to ``end`` of ``file``, a seekable binary file) named
    ``name`` in messages.

    ``stream_at`` names the container whose items are handed over instead of collected: ``()``
    for the first list created on an empty stack (DPR's top-level list; Contriever's ids, the
    first half of its pair), ``("embed_data",)`` for the dict under that key of the top-level
    dict (ART), ``None`` for none. ``match_rows`` lets DPR's and ART's rows be matched whole (see
    :func:`.pickle_rows._dpr_row`). Iterating yields lists of its items
    (``(key, value)`` pairs for a dict); afterwards :attr:`result` is the unpickled object (the
    streamed container left empty). Arrays are :class:`PickledArray`; numpy scalars come back as
    numpy scalars.
    """

    def __init__(self, file: BinaryIO, name: str | Path, *, start: int = 0, end: int | None = None,
                 stream_at: tuple[str, ...] | None = None, lazy_bytes: int | None = None,
                 match_rows: bool = True):
        self.file, self.name = file, name
        self.start = start
        if end is None:
            end = file.seek(0, 2)
        self.end = end
        self.stream_at = stream_at
        self.match_rows = match_rows
        self.lazy_bytes = LAZY_BYTES if lazy_bytes is None else lazy_bytes
        self.result = None
        self.memo_entries = 0
        self.done = False

    def _error(self, offset: int, problem: str) -> InputFileError:
        return InputFileError(self.name, f"{problem} (at byte {offset - self.start} of the pickle)")

    def __iter__(self) -> Iterator[list]:
        try:
            yield from self._walk()
        except InputFileError:
            raise
        except struct.error:
            raise InputFileError(self.name, "truncated or damaged: an opcode's argument runs past the end") from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, UnicodeDecodeError,
                OverflowError, MemoryError, RecursionError) as exc:
            raise InputFileError(self.name, f"not a pickle of the expected layout: {_malformed(exc)}") from None

    def _walk(self) -> Iterator[list]:  # noqa: C901 - one loop over the opcodes, kept flat for speed
        f, end, lazy_bytes = self.file, self.end, self.lazy_bytes
        base = self.start  # file offset of buf[0]
        f.seek(base)
        buf = b""
        pos = 0
        blen = 0
        stack: list = []
        metastack: list = []
        memo: dict = {}
        # The next MEMOIZE index: len(memo) as pickle counts it, kept apart because entries of
        # rows handed over are deleted (a pickler numbers its memo entries 0, 1, 2, ...).
        memo_next = 0
        put_log: list[int] = []  # memo entries set since the last hand-over (when streaming)
        first_batch = True
        stream_at = self.stream_at
        target = None  # the streamed container, once created
        root = None  # the first container created on an empty stack
        out: list = []
        inline = 0  # payload bytes held (without a streamed container)
        streaming = stream_at is not None
        fast_rows = stream_at == () and self.match_rows  # DPR's (id, vector) rows: see _dpr_row
        fast_items = bool(stream_at) and self.match_rows  # ART's {row_id: vector} items: see _art_item

        def refill(need: int):
            """Make ``buf`` start at ``pos`` and hold at least ``need`` bytes (else: truncated)."""
            nonlocal buf, pos, base, blen
            here = base + pos
            want = max(BLOCK, need)
            rest = buf[pos:]
            more = f.read(min(want - len(rest), end - here - len(rest))) if end - here - len(rest) > 0 else b""
            buf = rest + more
            base, pos, blen = here, 0, len(buf)
            if blen < need:
                raise self._error(here, "truncated: the file ends before the pickle's STOP")

        def payload(n: int, kind: str):
            """Read ``n`` bytes in memory, or leave a large bytes payload in the file."""
            nonlocal buf, pos, base, blen, inline
            if n >= lazy_bytes and kind == "bytes":
                offset = base + pos
                if offset + n > end:
                    raise self._error(offset, f"truncated: a {n}-byte array payload runs past the end of the file")
                if pos + n <= blen:
                    pos += n
                else:
                    base, buf, pos, blen = offset + n, b"", 0, 0
                    f.seek(base)
                return FileSpan(offset, n)
            if n > MAX_INLINE:
                raise self._error(base + pos, f"a {n}-byte {kind} is larger than these layouts hold")
            if pos + n > blen:
                refill(n)
            data = buf[pos:pos + n]
            pos += n
            if not streaming and kind == "bytes":
                inline += n
                if inline > INLINE_BUDGET:
                    raise self._error(base + pos, f"holds more than {INLINE_BUDGET >> 20} MiB of vectors in "
                                                  "memory-sized pieces: not this format's layout")
            return data

        while True:
            if pos + 9 > blen:
                if base + pos >= end:
                    raise self._error(base + pos, "truncated: the file ends before the pickle's STOP")
                refill(min(9, end - (base + pos)))
            op = buf[pos]
            at = pos
            pos += 1
            if op == 0x71:  # BINPUT
                idx = buf[pos]
                pos += 1
                memo[idx] = stack[-1]
                if idx >= memo_next:
                    memo_next = idx + 1
                if streaming:
                    put_log.append(idx)
            elif op == 0x94:  # MEMOIZE
                idx = memo_next
                memo_next += 1
                memo[idx] = stack[-1]
                if streaming:
                    put_log.append(idx)
            elif op == 0x68:  # BINGET
                if fast_items and not first_batch and len(metastack) == 1 and metastack[0][-1] is target \
                        and (not stack or (len(stack) % 2 == 0 and type(stack[-1]) is PickledArray)):
                    if blen - at < _ROW_WINDOW and base + blen < end:
                        pos = at
                        refill(min(_ROW_WINDOW, end - base - at))
                        at, pos = 0, 1
                    item = _art_item(buf, at, memo, memo_next)
                    if item is not None:
                        stack.append(item[0])
                        stack.append(item[1])
                        pos, memo_next = item[2], item[3]
                        continue
                value = memo.get(buf[pos], _GONE)
                pos += 1
                if value is _GONE:
                    raise self._error(base + at, "refers back to a memo entry that is not there (a row already "
                                                 "read, or a damaged file): not the layout this reader knows")
                stack.append(value)
            elif op == 0x4B:  # BININT1
                stack.append(buf[pos])
                pos += 1
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == 0x87:  # TUPLE3
                stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
            elif op == 0x28:  # MARK
                metastack.append(stack)
                stack = []
            elif op == 0x74:  # TUPLE
                items = tuple(stack)
                stack = metastack.pop()
                stack.append(items)
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                stack[-1] = self._call(stack[-1], args, base + at)
            elif op == 0x62:  # BUILD
                state = stack.pop()
                self._build(stack[-1], state, base + at)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op in (0x58, 0x8C, 0x8D):  # BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
                if fast_rows and not first_batch and len(metastack) == 1 and metastack[0][-1] is target:
                    if blen - at < _ROW_WINDOW and base + blen < end:
                        pos = at
                        refill(min(_ROW_WINDOW, end - base - at))
                        at, pos = 0, 1
                    row = _dpr_row(buf, at, memo, memo_next)
                    if row is not None:
                        stack.append(row[0])
                        pos, memo_next = row[1], row[2]
                        continue
                if op == 0x8C:
                    n = buf[pos]
                    pos += 1
                elif op == 0x58:
                    n = _UNPACK_UI(buf, pos)[0]
                    pos += 4
                else:
                    n = _UNPACK_Q(buf, pos)[0]
                    pos += 8
                stack.append(str(payload(n, "string"), "utf-8", "surrogatepass"))
            elif op in (0x43, 0x42, 0x8E, 0x96):  # SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8
                if op == 0x43:
                    n = buf[pos]
                    pos += 1
                elif op == 0x42:
                    n = _UNPACK_UI(buf, pos)[0]
                    pos += 4
                else:
                    n = _UNPACK_Q(buf, pos)[0]
                    pos += 8
                stack.append(payload(n, "bytes"))
            elif op == 0x4D:  # BININT2
                stack.append(_UNPACK_H(buf, pos)[0])
                pos += 2
            elif op == 0x4A:  # BININT
                stack.append(_UNPACK_I(buf, pos)[0])
                pos += 4
            elif op == 0x72:  # LONG_BINPUT
                idx = _UNPACK_UI(buf, pos)[0]
                pos += 4
                memo[idx] = stack[-1]
                if idx >= memo_next:
                    memo_next = idx + 1
                if streaming:
                    put_log.append(idx)
            elif op == 0x6A:  # LONG_BINGET
                value = memo.get(_UNPACK_UI(buf, pos)[0], _GONE)
                pos += 4
                if value is _GONE:
                    raise self._error(base + at, "refers back to a memo entry that is not there (a row already "
                                                 "read, or a damaged file): not the layout this reader knows")
                stack.append(value)
            elif op in (0x65, 0x61, 0x75, 0x73):  # APPENDS, APPEND, SETITEMS, SETITEM
                if op == 0x65 or op == 0x75:
                    items = stack
                    stack = metastack.pop()
                else:
                    items = stack[-2:] if op == 0x73 else stack[-1:]
                    del stack[-len(items):]
                container = stack[-1]
                if op in (0x65, 0x61):
                    if type(container) is not list:
                        raise self._error(base + at, f"appends to a {type(container).__name__}, not a list")
                    if container is target:
                        out.extend(items)
                    else:
                        container.extend(items)
                else:
                    if type(container) is not dict or len(items) % 2:
                        raise self._error(base + at, f"sets items of a {type(container).__name__}, not a dict")
                    pairs = [(items[i], items[i + 1]) for i in range(0, len(items), 2)]
                    if container is target:
                        out.extend(pairs)
                    else:
                        if container is root and streaming and target is None:
                            raise self._error(base + at, "the top-level dict has no "
                                                         f"{stream_at[-1]!r} entry before its other items")
                        container.update(pairs)
                if out:
                    batch, out = out, []
                    yield batch
                    # The handed-over rows are dropped: forget the memo entries that held them
                    # (and, after the first batch, anything else a row created).
                    for idx in put_log:
                        value = memo.get(idx)
                        if first_batch and _shared(value) or type(value) in (_Global, _Dtype):
                            continue
                        memo.pop(idx, None)
                    put_log = []
                    first_batch = False
            elif op in (0x5D, 0x7D):  # EMPTY_LIST, EMPTY_DICT
                container = [] if op == 0x5D else {}
                if root is None and not stack and not metastack:
                    root = container
                    if streaming and not stream_at:
                        if op != 0x5D:
                            raise self._error(base + at, "holds a dict where this layout has a list")
                        target = container
                    elif streaming and op != 0x7D:
                        raise self._error(base + at, "holds a list, not a dict")
                elif (streaming and target is None and stream_at and op == 0x7D and not metastack
                      and len(stack) == 2 and stack[0] is root and stack[1] == stream_at[0]):
                    target = container
                stack.append(container)
            elif op == 0x29:  # EMPTY_TUPLE
                stack.append(())
            elif op == 0x95:  # FRAME: a hint for buffering; the stream reads on through it
                pos += 8
            elif op == 0x93:  # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                stack.append(self._global(module, name, base + at))
            elif op == 0x63:  # GLOBAL: "module\nname\n"
                if blen - pos < 512 and base + blen < end:
                    refill(min(512, end - base - pos))
                lines = []
                for _ in range(2):
                    newline = buf.find(b"\n", pos, pos + 256)
                    if newline < 0:
                        raise self._error(base + at, "a GLOBAL name without an end of line")
                    lines.append(buf[pos:newline].decode("utf-8"))
                    pos = newline + 1
                stack.append(self._global(lines[0], lines[1], base + at))
            elif op == 0x80:  # PROTO
                protocol = buf[pos]
                pos += 1
                if not 2 <= protocol <= 5:
                    raise self._error(base + at, f"pickle protocol {protocol}: only protocols 2 to 5 are read")
            elif op == 0x2E:  # STOP
                if metastack or len(stack) != 1:
                    raise self._error(base + at, "STOP with an unbalanced stack")
                if streaming and target is None:
                    raise self._error(base + at, "has no " + (f"{stream_at[0]!r} dict" if stream_at else "top-level list"))
                self.result = stack[0]
                self.memo_entries = len(memo)  # what the memo held at the end (rows' entries dropped)
                self.done = True
                return
            elif op == 0x8A:  # LONG1
                n = buf[pos]
                pos += 1
                stack.append(int.from_bytes(payload(n, "integer"), "little", signed=True))
            elif op == 0x8B:  # LONG4
                n = _UNPACK_I(buf, pos)[0]
                pos += 4
                if not 0 <= n <= 1024:
                    raise self._error(base + at, f"a {n}-byte integer")
                stack.append(int.from_bytes(payload(n, "integer"), "little", signed=True))
            elif op == 0x47:  # BINFLOAT
                stack.append(_UNPACK_D(buf, pos)[0])
                pos += 8
            elif op == 0x30:  # POP
                if stack:
                    stack.pop()
                else:
                    stack = metastack.pop()
            elif op == 0x31:  # POP_MARK
                stack = metastack.pop()
            elif op == 0x32:  # DUP
                stack.append(stack[-1])
            elif op in (0x6C, 0x64):  # LIST, DICT (built from the items after MARK)
                items = stack
                stack = metastack.pop()
                if op == 0x6C:
                    stack.append(list(items))
                else:
                    if len(items) % 2:
                        raise self._error(base + at, "DICT with an odd number of items")
                    stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})
            elif op in (0x50, 0x51):  # PERSID, BINPERSID
                raise self._error(base + at, "refused a persistent id: these releases hold none")
            else:
                raise self._error(base + at, f"refused opcode {bytes([op])!r}: not one these releases' pickles use")

    def _global(self, module, name, offset: int) -> _Global:
        found = ADMITTED_GLOBALS.get((module, name)) if type(module) is str and type(name) is str else None
        if found is None:
            raise self._error(offset, f"refused global {module}.{name}: a released embeddings pickle may only name "
                                      "numpy's array, dtype and scalar reconstructors")
        return found

    def _call(self, func, args, offset: int):
        if type(args) is not tuple:
            raise self._error(offset, "REDUCE without an argument tuple")
        if func is _RECONSTRUCT:
            if len(args) != 3 or args[0] is not _NDARRAY:
                raise self._error(offset, "numpy _reconstruct of something other than an ndarray")
            return PickledArray()
        if func is _DTYPE:
            spec = args[0] if args else None
            if type(spec) is not str or not _DTYPE_SPEC.fullmatch(spec):
                raise self._error(offset, f"refused dtype {spec!r}: only numeric dtypes are read")
            return _Dtype(np.dtype(spec))
        if func is _SCALAR:
            if len(args) != 2 or type(args[0]) is not _Dtype or type(args[1]) is not bytes:
                raise self._error(offset, "a numpy scalar without a numeric dtype and its bytes")
            dtype = args[0].dtype
            if len(args[1]) != dtype.itemsize:
                raise self._error(offset, f"a {dtype} scalar of {len(args[1])} bytes")
            return np.frombuffer(args[1], dtype=dtype)[0]
        if func is _FROMBUFFER:
            if len(args) != 4 or type(args[1]) is not _Dtype:
                raise self._error(offset, "numpy _frombuffer without (buffer, dtype, shape, order)")
            array = PickledArray()
            self._fill(array, args[2], args[1], args[3] == "F", args[0], offset)
            return array
        if func is _ENCODE:
            if len(args) != 2 or type(args[0]) is not str or args[1] != "latin1":
                raise self._error(offset, "_codecs.encode other than of a latin1 string")
            return args[0].encode("latin-1")
        raise self._error(offset, f"REDUCE of a {type(func).__name__}: only numpy's reconstructors are called")

    def _build(self, inst, state, offset: int) -> None:
        if type(inst) is PickledArray:
            if type(state) is not tuple or len(state) not in (4, 5):
                raise self._error(offset, "an ndarray state that is not (version, shape, dtype, fortran, data)")
            shape, dtype, fortran, data = state[-4:]
            if type(dtype) is not _Dtype:
                raise self._error(offset, "an ndarray without a numeric dtype")
            self._fill(inst, shape, dtype, bool(fortran), data, offset)
        elif type(inst) is _Dtype:
            if type(state) is not tuple or len(state) < 5 or any(s is not None for s in state[2:5]):
                raise self._error(offset, "a structured or sub-array dtype: only plain numeric dtypes are read")
            order = state[1]
            if order in ("<", ">"):
                inst.dtype = inst.dtype.newbyteorder(order)
            elif order not in ("|", "="):
                raise self._error(offset, f"a dtype byte order {order!r}")
        else:
            raise self._error(offset, f"BUILD of a {type(inst).__name__}: only numpy arrays and dtypes have a state")

    def _fill(self, array: PickledArray, shape, dtype: _Dtype, fortran: bool, data, offset: int) -> None:
        if type(shape) is not tuple or not all(type(s) is int and s >= 0 for s in shape):
            raise self._error(offset, f"an ndarray shape {shape!r}")
        size = 1
        for s in shape:
            size *= s
        dtype = dtype.dtype
        length = data.length if type(data) is FileSpan else len(data) if type(data) is bytes else None
        if length is None:
            raise self._error(offset, f"an ndarray whose data is a {type(data).__name__}, not bytes")
        if length != size * dtype.itemsize:
            raise self._error(offset, f"an ndarray of shape {shape} and dtype {dtype} with {length} bytes of data")
        array.shape, array.dtype, array.data = shape, dtype, data
        array.order = "F" if fortran and len(shape) > 1 else "C"


def read_span(file: BinaryIO, span: FileSpan, dtype: np.dtype, first: int, rows: int, width: int) -> np.ndarray:
    """Rows ``first`` to ``first + rows`` of a C-order ``(n, width)`` array left in the file, as
    float32 (a fresh, writable, C-contiguous array)."""
    row_bytes = dtype.itemsize * width
    raw = np.empty(rows * width, dtype=dtype)
    file.seek(span.offset + first * row_bytes)
    got = file.readinto(memoryview(raw).cast("B"))
    if got != rows * row_bytes:
        raise EOFError(f"{rows * row_bytes - got} bytes missing")
    raw = raw.reshape(rows, width)
    return raw.astype(np.float32) if dtype != np.float32 or not dtype.isnative else raw


__all__ = ["ADMITTED_GLOBALS", "FileSpan", "PickleStream", "PickledArray", "read_span"]

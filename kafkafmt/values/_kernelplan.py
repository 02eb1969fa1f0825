"""What the plans of the typed-value kernels share (Avro, Protobuf, JSON): the output columns a plan
builds and hands its kernel (`kafkafmt._native.arrowcols` fills them), the calls of a kernel over a
whole column (again from the row where a column would pass 2 GiB), the Arrow arrays made from the
buffers it returns, and the rows' error codes -- a code from `FIELD_ERROR` names a field read as
null, the rest of the value read.

Each plan keeps its format's own part: its nodes and tables, and the columns it shapes itself
(dictionaries of enum symbols, JSON texts, a oneof's members).
"""
from __future__ import annotations

import numpy as np

from kafkafmt._native import arrowcols as _cols
from kafkafmt._util.extras import import_pyarrow

__all__ = ["KINDS", "FIELD_ERROR", "Column", "KernelPlan", "StartsPlan", "is_field_error", "error_entry"]

#: column kind name -> the kernels' number
KINDS = _cols.KINDS
#: added to the error code of a field read as null (its column cannot hold it); codes from FRAMING on are
#: the Python side's (framing, schema ids)
FIELD_ERROR = _cols.FIELD_ERROR
_K_NULL, _K_BOOL, _K_FIXED, _K_VAR, _K_STRUCT = (KINDS[k] for k in ("K_NULL", "K_BOOL", "K_FIXED", "K_VAR",
                                                                    "K_STRUCT"))


def _pa():
    return import_pyarrow("typed values")


def is_field_error(code):
    """Which error codes (a NumPy array) name a field read as null, the rest of the value read."""
    return (code >= FIELD_ERROR) & (code < _cols.FRAMING)


def error_entry(info, code):
    """(name, message template) of a kernel's error ``code`` in its ``info`` table (ERROR_INFO), a field's
    error as its own; and whether it is a field's."""
    code = int(code)
    field = FIELD_ERROR <= code < _cols.FRAMING
    return info.get(code - FIELD_ERROR if field else code, ("?", f"error {code}")), field


class Column:
    """One output column (one Arrow array): its kind (`KINDS`), Arrow type, fixed width, children,
    whether its placeholders are null."""

    __slots__ = ("index", "kind", "width", "arrow", "nullable", "children")

    def __init__(self, index, kind, arrow, width=0, nullable=False):
        self.index, self.kind, self.arrow, self.width, self.nullable = index, kind, arrow, width, nullable
        self.children = []


class KernelPlan:
    """The part of a plan every kernel's has: its `Column` list and the compiled kernel `Program`.

    A subclass sets ``columns``, ``arrow_type``, ``_program`` (None) and ``_lock``, and defines
    ``_compile(columns, children)`` (its kernel's Program from the column table) and, for the columns
    it shapes itself, ``_shaped`` and ``_children``.
    """

    #: Arrow columns one reader may need
    max_columns = 10_000

    def _add(self, column, what, hint=""):
        """Append ``column`` (a `Column` numbered len(columns)); past max_columns a SchemaError: ``what``
        needs more (``hint``: what to do)."""
        from kafkafmt.errors import SchemaError

        if len(self.columns) >= self.max_columns:
            raise SchemaError(f"{what} needs more than {self.max_columns} Arrow columns{hint}")
        self.columns.append(column)
        return column

    def program(self):
        """The compiled kernel `Program` (of every column so far)."""
        with self._lock:
            if self._program is None:
                children, cols = [], []
                for c in self.columns:
                    cols.append([c.kind, c.width, len(children), len(c.children), int(c.nullable)])
                    children += [k.index for k in c.children]
                self._program = self._compile(np.array(cols, np.int64).reshape(-1, 5), np.array(children, np.int32))
            return self._program

    def _run(self, call, top):
        """Call the kernel (``call(start)`` -> status, stop, columns, rest...) over a whole column: again
        from ``stop`` while a column would pass 2 GiB. Returns (values of ``top``, chunked only then; the
        ``rest`` of each call)."""
        chunks, rests, start = [], [], 0
        while True:
            status, stop, cols, *rest = call(start)
            chunks.append(self._assemble(cols, top))
            rests.append(rest)
            if status == _cols.STATUS_OK:
                break
            start = stop
        values = chunks[0] if len(chunks) == 1 else _pa().chunked_array(chunks, self.arrow_type)
        return values, rests

    @staticmethod
    def _errors(parts):
        """The sparse error arrays of several calls as one (row, code, position, node, detail, more)."""
        return parts[0] if len(parts) == 1 else tuple(np.concatenate(p) for p in zip(*parts))

    @staticmethod
    def _dense(n, errors):
        """Sparse errors as per-row arrays (code uint8, position int64, node int32 -- -1 where none --,
        detail int64, more int32); code 0: no error."""
        rows, code, pos, node, detail, more = errors
        out = (np.zeros(n, np.uint8), np.zeros(n, np.int64), np.full(n, -1, np.int32), np.zeros(n, np.int64),
               np.zeros(n, np.int32))
        for dense, sparse in zip(out, (code, pos, node, detail, more)):
            dense[rows] = sparse
        return out

    def _assemble(self, out, top):
        """The Arrow array of column ``top`` from a kernel's buffers ``out`` (per column: length, null
        count, validity, data, offsets)."""
        # (a method, not a nested function calling itself: such a closure is a reference cycle, and it
        # held every buffer of ``out`` until the garbage collector ran -- 40 MB a read of nested values)
        pa = _pa()
        length, nulls, valid, data, offs = out[top.index]
        vb = None if valid is None else pa.py_buffer(valid)
        shaped = self._shaped(top, length, nulls, vb, data, offs)
        if shaped is not None:
            return shaped
        k = top.kind
        if k == _K_NULL:
            return pa.nulls(length)
        if k == _K_FIXED or k == _K_BOOL:
            return pa.Array.from_buffers(top.arrow, length, [vb, pa.py_buffer(data)], null_count=nulls)
        if k == _K_VAR:
            return pa.Array.from_buffers(top.arrow, length, [vb, pa.py_buffer(offs), pa.py_buffer(data)],
                                         null_count=nulls)
        children = self._children(top, [self._assemble(out, c) for c in top.children])
        bufs = [vb] if k == _K_STRUCT else [vb, pa.py_buffer(offs)]
        return pa.Array.from_buffers(top.arrow, length, bufs, null_count=nulls, children=children)

    def _shaped(self, col, length, nulls, vb, data, offs):
        """The array of a column the plan shapes itself, or None (built from its kind)."""
        return None

    def _children(self, col, children):
        """The child arrays of a struct / list / map column as its Arrow type has them."""
        return children

    @staticmethod
    def _binary(length, nulls, vb, data, offs):
        """A binary column's values as they are (bytes the plan turns into text)."""
        pa = _pa()
        return pa.Array.from_buffers(pa.binary(), length, [vb, pa.py_buffer(offs), pa.py_buffer(data)],
                                     null_count=nulls)

    @staticmethod
    def _dictionary(length, nulls, vb, indices, names):
        """A dictionary<int32, string> column of int32 ``indices`` (a buffer) into ``names``."""
        pa = _pa()
        idx = pa.Array.from_buffers(pa.int32(), length, [vb, pa.py_buffer(indices)], null_count=nulls)
        return pa.DictionaryArray.from_arrays(idx, pa.array(names, pa.string()), safe=False)


class StartsPlan(KernelPlan):
    """A plan whose kernel reads each value from where its framing ends (JSON, Protobuf); ``top_col`` is
    the column every row appends to."""

    def decode(self, offsets, data, starts, roots):
        """Decode a binary column (int64 offsets, uint8 data): row i from starts[i] to its end, when
        roots[i] is 0 (-1: a null value; below -1: the error -roots[i], found before).

        Returns
        -------
        values : pyarrow.Array or pyarrow.ChunkedArray
        errors : tuple of NumPy arrays
            (code uint8, position int64, node or field int32, detail int64, more int32) per row; code 0:
            no error; from ``FIELD_ERROR`` (below 64): the row is read, that field (and ``more`` others)
            null.
        """
        prog = self.program()
        values, rests = self._run(lambda start: prog.decode(offsets, data, starts, roots, start), self.top_col)
        return values, self._dense(len(roots), self._errors([r[0] for r in rests]))

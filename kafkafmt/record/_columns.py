"""The binary columns of decoded records, in Arrow's memory layout, so that ``to_arrow()`` wraps the same buffers
without copying:

* `BinaryColumn` -- a nullable binary column: ``offsets`` (int32, or int64 past 2 GiB), ``data`` (uint8) and
  ``validity`` (bit-packed, LSB first; None when nothing is null): Arrow's binary / large_binary layout.
* `BinaryViewColumn` -- the same values as Arrow's binary_view elements pointing into the buffers they were
  decoded from (kept alive).
* `Headers` -- record headers as flat arrays: ``offsets`` gives each record's range of header rows; header
  keys (utf-8) and values (nullable) are two `BinaryColumn` s.
"""
from __future__ import annotations

import numpy as np

from kafkafmt._util.extras import import_pyarrow

__all__ = ["BinaryColumn", "BinaryViewColumn", "Headers", "numeric_array", "cast_table"]


def _unpack_validity(validity, n, bit_offset=0):
    """Bit-packed validity -> bool array of n entries (True = valid)."""
    if validity is None:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(validity, bitorder="little", count=bit_offset + n)
    return bits[bit_offset:].astype(bool)


def _pack_validity(valid):
    """bool array -> bit-packed validity, or None when every entry is valid."""
    if valid.all():
        return None
    return np.packbits(valid, bitorder="little")


def _sliced_validity(validity, n, item, what):
    """(start, stop, validity bitmap or None, null count) of a contiguous slice of n values."""
    start, stop, step = item.indices(n)
    if step != 1:
        raise IndexError(f"{what} slices must be contiguous")
    stop = max(start, stop)
    if validity is None:
        return start, stop, None, 0
    # (only the bytes under the slice are unpacked: slicing a small chunk off a large column costs the chunk)
    first = start >> 3
    valid = _unpack_validity(validity[first:(stop + 7) >> 3], stop - start, start - (first << 3))
    nulls = len(valid) - int(np.count_nonzero(valid))
    return start, stop, (_pack_validity(valid) if nulls else None), nulls


def _row(validity, n, item):
    """The row number of a scalar index (negative from the end), or None when that value is null."""
    i = int(item)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(item)
    if validity is not None and not (validity[i >> 3] >> (i & 7)) & 1:
        return None
    return i


def _small_offsets(offsets):
    return offsets.astype(np.int32) if offsets[-1] < (1 << 31) - 1 else offsets


def _joined_offsets(pieces):
    """(offsets, spans): the offsets of pieces' values laid one after the other (each piece's offsets from
    any start; ``spans``: the entries each covers), in the dtype `_small_offsets` gives, written in place (no
    int64 copy of every piece's offsets: a large read's concatenation peaked there)."""
    spans = [int(o[-1]) - int(o[0]) if len(o) else 0 for o in pieces]
    n = sum(max(len(o) - 1, 0) for o in pieces)
    out = np.empty(n + 1, np.int32 if sum(spans) < (1 << 31) - 1 else np.int64)
    out[0] = 0
    at = base = 0
    for o, span in zip(pieces, spans):
        k = max(len(o) - 1, 0)
        if k:
            np.subtract(o[1:], int(o[0]) - base, out=out[at + 1:at + 1 + k], dtype=np.int64, casting="unsafe")
        at += k
        base += span
    return out, spans


def _ranges(starts, lengths):
    """Concatenated aranges [starts[i], starts[i] + lengths[i]) as one int64 array."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths) + np.repeat(
        np.asarray(starts, np.int64), lengths)


def numeric_array(values):
    """A pyarrow array over a NumPy integer or float array's buffer (no copy), as ``pa.array`` gives it --
    which, like any Arrow cast, loads pyarrow's compute functions on its first call in a process (about 0.2 s
    and 60 MB resident here): a read's ``to_arrow`` lays out its columns without them."""
    pa = import_pyarrow()
    values = np.ascontiguousarray(values)
    if values.dtype.kind not in "iuf":
        return pa.array(values)
    if not values.dtype.isnative:               # (Arrow's buffers are in the machine's byte order)
        values = values.astype(values.dtype.newbyteorder("="))
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def cast_table(table, schema):
    """``table.cast(schema)``, casting only the columns whose type differs: a column of the type asked is kept
    as it is, so that a read whose chunks already have the schema planned (a Spark task's, a stream's) loads
    no compute function (see `numeric_array`). Raises as ``Table.cast`` does (other names, nulls in a
    non-nullable field)."""
    pa = import_pyarrow()
    if table.schema.names != schema.names:
        raise ValueError(f"Target schema's field names are not matching the table's field names: "
                         f"{table.schema.names!r}, {schema.names!r}")
    columns = []
    for column, field in zip(table.itercolumns(), schema):
        if not field.nullable and column.null_count > 0:
            raise ValueError(f"Casting field {field.name!r} with null values to non-nullable")
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


class BinaryColumn:
    """A nullable binary column in Arrow layout (offsets, data, validity).

    Exactly Arrow's binary / large_binary layout, so `to_arrow` wraps the same buffers without
    copying. Value ``i`` is ``data[offsets[i]:offsets[i + 1]]``, or null where its validity bit is 0
    (null is absent, as opposed to empty).

    Parameters
    ----------
    offsets : numpy.ndarray
        int32 (or int64 past 2 GiB) offsets into `data`, one more than the values.
    data : numpy.ndarray
        uint8: the values' bytes, one after the other.
    validity : numpy.ndarray, optional
        Bit-packed validity (LSB first, 1 = valid); None when nothing is null (kept only when
        `null_count` is not 0).
    null_count : int
        How many values are null.

    Examples
    --------
    >>> import numpy as np
    >>> from kafkafmt import BinaryColumn
    >>> col = BinaryColumn(np.array([0, 3, 3, 8], np.int32), np.frombuffer(b"abcworld", np.uint8),
    ...                    validity=np.packbits([1, 0, 1], bitorder="little"), null_count=1)
    >>> col
    <BinaryColumn 3 values, 8 bytes, 1 null>
    >>> col.to_pylist()
    [b'abc', None, b'world']
    >>> col[2], col.is_null()
    (b'world', array([False,  True, False]))

    The readers' keys and values are `BinaryColumn` objects:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/customers-0")
    >>> recs.value
    <BinaryColumn 600 values, 23143 bytes, 53 null>
    >>> recs.value[2]
    b'{"name": "Customer 0049", "tier": "gold"}'
    >>> recs.value.to_arrow().type
    DataType(binary)
    """

    __slots__ = ("offsets", "data", "validity", "null_count")

    def __init__(self, offsets, data, validity=None, null_count=0):
        self.offsets = offsets
        self.data = data
        self.validity = validity if null_count else None
        self.null_count = int(null_count)

    def __len__(self):
        return len(self.offsets) - 1

    def __repr__(self):
        return f"<BinaryColumn {len(self)} values, {self.nbytes} bytes, {self.null_count} null>"

    @property
    def nbytes(self):
        """Bytes of the values (of this column's rows only, for a slice; not of `data`).

        Returns
        -------
        int

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> keys = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0").key
        >>> keys[0], keys.nbytes, keys[:3].nbytes
        (b'customer-0012', 31200, 39)
        """
        return int(self.offsets[-1] - self.offsets[0]) if len(self.offsets) else 0

    def is_null(self):
        """NumPy bool array, True where the value is null (absent, as opposed to empty)."""
        return ~_unpack_validity(self.validity, len(self))

    def lengths(self):
        """Length in bytes of each value (0 for null)."""
        return np.diff(self.offsets)

    def __getitem__(self, item):
        if isinstance(item, slice):
            start, stop, validity, nulls = _sliced_validity(self.validity, len(self), item, "BinaryColumn")
            return BinaryColumn(self.offsets[start:stop + 1], self.data, validity, nulls)
        i = _row(self.validity, len(self), item)
        return None if i is None else self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def take(self, rows):
        """A new column holding the given rows (int array), in that order."""
        from kafkafmt._native.kernel import take_binary

        rows = np.ascontiguousarray(rows, np.int64)      # (the native gather takes contiguous rows)
        offsets, data = take_binary(self.offsets.astype(np.int64, copy=False), self.data, rows)
        valid = _unpack_validity(self.validity, len(self))[rows] if self.validity is not None else None
        nulls = 0 if valid is None else int(len(valid) - valid.sum())
        return BinaryColumn(_small_offsets(offsets), data, _pack_validity(valid) if nulls else None, nulls)

    @staticmethod
    def concat(columns):
        """One column holding the rows of all `columns`, in order (copies)."""
        columns = list(columns)
        offsets, spans = _joined_offsets([c.offsets for c in columns])
        parts = [c.data[int(c.offsets[0]):int(c.offsets[0]) + span] for c, span in zip(columns, spans) if span]
        data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        nulls = sum(c.null_count for c in columns)
        if not nulls:
            return BinaryColumn(offsets, data)
        valid = np.empty(len(offsets) - 1, bool)
        at = 0
        for c in columns:
            valid[at:at + len(c)] = _unpack_validity(c.validity, len(c))
            at += len(c)
        return BinaryColumn(offsets, data, _pack_validity(valid), nulls)

    def to_pylist(self):
        """list of bytes / None (creates one Python object per value: not for hot paths)."""
        offs = self.offsets.tolist()
        data = self.data.tobytes()
        out = [data[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
        if self.validity is not None:
            for i in np.flatnonzero(self.is_null()):
                out[i] = None
        return out

    @staticmethod
    def from_arrow(arr):
        """A column over an Arrow binary / large_binary array's buffers (no copy)."""
        pa = import_pyarrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        large = arr.type in (pa.large_binary(), pa.large_string())
        validity, offsets, data = arr.buffers()
        off = np.frombuffer(offsets, np.int64 if large else np.int32)[arr.offset:arr.offset + len(arr) + 1]
        bits = None
        if arr.null_count:
            bits = _pack_validity(np.asarray(arr.is_valid()))
        return BinaryColumn(off, np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8),
                            bits, arr.null_count)

    def to_arrow(self, type=None):
        """pyarrow array on the same buffers: binary (int32 offsets) or large_binary (int64)."""
        pa = import_pyarrow()
        if type is None:
            type = pa.binary() if self.offsets.dtype == np.int32 else pa.large_binary()
        offsets = self.offsets
        want = np.int32 if type in (pa.binary(), pa.string()) else np.int64
        if offsets.dtype != want:
            offsets = offsets.astype(want)
        validity = None if self.validity is None else pa.py_buffer(self.validity)
        return pa.Array.from_buffers(type, len(self), [validity, pa.py_buffer(offsets), pa.py_buffer(self.data)],
                                     null_count=self.null_count)


class BinaryViewColumn:
    """A nullable binary column in Arrow's binary_view layout (``binary="view"``): ``views`` is a
    uint8 array of shape (n, 16) -- per value its int32 length, then the value itself when at most
    12 bytes, else a 4-byte prefix, the index of a data buffer and the offset in it --, ``buffers``
    the data buffers the views point into (the decoded input, e.g. a segment's memory map, and
    decompressed batches), ``validity`` bit-packed or None. No value byte is copied; the buffers
    are referenced by this column and by every Arrow array made from it, so they live as long as
    any of them."""

    __slots__ = ("views", "buffers", "validity", "null_count")

    def __init__(self, views, buffers, validity=None, null_count=0):
        self.views = views
        self.buffers = list(buffers)
        self.validity = validity if null_count else None
        self.null_count = int(null_count)

    def __len__(self):
        return len(self.views)

    def __repr__(self):
        return f"<BinaryViewColumn {len(self)} values, {self.nbytes} bytes, {self.null_count} null>"

    def lengths(self):
        """Length in bytes of each value (0 for null)."""
        return self._length_field().copy()

    def _length_field(self):
        # each view's first 4 bytes read in place as int32: a strided view, no byte copied (each row's 16
        # bytes are contiguous, so the rows can be seen as 4 int32s)
        return self.views.view("<i4")[:, 0]

    @property
    def nbytes(self):
        """Bytes of the values (not of the buffers they lie in)."""
        return int(self._length_field().sum(dtype=np.int64))

    def is_null(self):
        return ~_unpack_validity(self.validity, len(self))

    def _value(self, i):
        v = self.views[i]
        n = int(v[:4].view("<i4")[0])
        if n <= 12:
            return v[4:4 + n].tobytes()
        b = int(v[8:12].view("<i4")[0])
        off = int(v[12:16].view("<i4")[0])
        return bytes(memoryview(self.buffers[b]).cast("B")[off:off + n])

    def __getitem__(self, item):
        if isinstance(item, slice):
            start, stop, validity, nulls = _sliced_validity(self.validity, len(self), item, "BinaryViewColumn")
            return BinaryViewColumn(self.views[start:stop], self.buffers, validity, nulls)
        i = _row(self.validity, len(self), item)
        return None if i is None else self._value(i)

    def take(self, rows):
        """The given rows, in that order (the 16-byte views are copied, never the values)."""
        rows = np.asarray(rows, np.int64)
        valid = _unpack_validity(self.validity, len(self))[rows] if self.validity is not None else None
        nulls = 0 if valid is None else int(len(valid) - valid.sum())
        return BinaryViewColumn(self.views[rows], self.buffers, _pack_validity(valid) if nulls else None, nulls)

    @staticmethod
    def concat(columns):
        """One column of the rows of all `columns` (views renumbered; values not copied)."""
        columns = list(columns)
        views, buffers, valids = [], [], []
        for c in columns:
            v = np.array(c.views, copy=True) if len(c) else np.zeros((0, 16), np.uint8)
            if buffers and len(v):
                long = v[:, :4].copy().view("<i4").reshape(-1) > 12
                idx = v[long, 8:12].copy().view("<i4").reshape(-1) + len(buffers)
                v[long, 8:12] = idx.astype("<i4").view(np.uint8).reshape(-1, 4)
            views.append(v)
            buffers += c.buffers
            valids.append(_unpack_validity(c.validity, len(c)))
        valid = np.concatenate(valids) if valids else np.ones(0, bool)
        nulls = int(len(valid) - valid.sum())
        return BinaryViewColumn(np.concatenate(views) if views else np.zeros((0, 16), np.uint8), buffers,
                                _pack_validity(valid) if nulls else None, nulls)

    def to_pylist(self):
        out = [self._value(i) for i in range(len(self))]
        if self.validity is not None:
            for i in np.flatnonzero(self.is_null()):
                out[i] = None
        return out

    def to_contiguous(self):
        """The same values as a `BinaryColumn` (copies them)."""
        return BinaryColumn.from_arrow(self.to_arrow().cast(import_pyarrow().large_binary()))

    def to_arrow(self, type=None):
        """pyarrow binary_view array over the same views and buffers (no copy); `type` another
        Arrow binary type casts it (copies)."""
        pa = import_pyarrow()
        validity = None if self.validity is None else pa.py_buffer(self.validity)
        arr = pa.Array.from_buffers(pa.binary_view(), len(self),
                                    [validity, pa.py_buffer(np.ascontiguousarray(self.views))]
                                    + [pa.py_buffer(b) for b in self.buffers], null_count=self.null_count)
        return arr if type is None or type == pa.binary_view() else arr.cast(type)


class Headers:
    """Record headers, flat: record i owns header rows offsets[i]:offsets[i+1].

    Header keys (UTF-8) and values (nullable) are two `BinaryColumn` objects of header rows; indexing
    gives one record's headers as ``[(key: str, value: bytes | None)]``.

    Parameters
    ----------
    offsets : numpy.ndarray
        int32 (or int64) offsets into the header rows, one more than the records.
    key : BinaryColumn
        The header keys, one per header row.
    value : BinaryColumn
        The header values, one per header row (null where a header has no value).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> headers = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0").headers
    >>> headers
    <Headers 2400 records, 922 headers>
    >>> headers.counts()[:5]
    array([0, 0, 2, 0, 2]...)
    >>> headers[2]
    [('trace-id', b'033aeece5c85c85b'), ('source', b'web')]
    >>> headers.to_arrow().type
    ListType(list<item: struct<key: string, value: binary>>)
    """

    __slots__ = ("offsets", "key", "value")

    def __init__(self, offsets, key: BinaryColumn, value: BinaryColumn):
        self.offsets = offsets
        self.key = key
        self.value = value

    def __len__(self):
        return len(self.offsets) - 1

    def __repr__(self):
        return f"<Headers {len(self)} records, {self.count()} headers>"

    def count(self):
        """Total number of header rows used by these records."""
        return int(self.offsets[-1] - self.offsets[0]) if len(self.offsets) else 0

    def counts(self):
        """Number of headers of each record."""
        return np.diff(self.offsets)

    def __getitem__(self, item):
        if isinstance(item, slice):
            start, stop, step = item.indices(len(self))
            if step != 1:
                raise IndexError("Headers slices must be contiguous")
            return Headers(self.offsets[start:max(start, stop) + 1], self.key, self.value)
        i = int(item)
        if i < 0:
            i += len(self)
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return [(self.key[j].decode("utf-8", "replace"), self.value[j]) for j in range(lo, hi)]

    def take(self, rows):
        """Headers of the given records, in that order (copies)."""
        rows = np.asarray(rows, np.int64)
        offs = self.offsets.astype(np.int64)
        starts, lengths = offs[rows], offs[rows + 1] - offs[rows]
        header_rows = _ranges(starts, lengths)
        new = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths, out=new[1:])
        return Headers(_small_offsets(new), self.key.take(header_rows), self.value.take(header_rows))

    @staticmethod
    def concat(headers):
        """One `Headers` holding the records of all `headers`, in order (copies).

        Parameters
        ----------
        headers : iterable of Headers

        Returns
        -------
        Headers

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> headers = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0").headers
        >>> both = kafkafmt.Headers.concat([headers[:2], headers[4:5]])
        >>> both
        <Headers 3 records, 2 headers>
        >>> both.to_pylist()
        [[], [], [('trace-id', b'96845132aed889d6'), ('source', b'web')]]
        """
        headers = list(headers)
        offsets, spans = _joined_offsets([h.offsets for h in headers])
        starts = [int(h.offsets[0]) if len(h.offsets) else 0 for h in headers]
        keys = [h.key[a:a + span] for h, a, span in zip(headers, starts, spans)]
        values = [h.value[a:a + span] for h, a, span in zip(headers, starts, spans)]
        return Headers(offsets, BinaryColumn.concat(keys), BinaryColumn.concat(values))

    def to_pylist(self):
        """One list of (key: str, value: bytes | None) per record."""
        keys = [k.decode("utf-8", "replace") for k in self.key.to_pylist()]
        values = self.value.to_pylist()
        offs = self.offsets.tolist()
        return [list(zip(keys[offs[i]:offs[i + 1]], values[offs[i]:offs[i + 1]])) for i in range(len(offs) - 1)]

    def to_arrow(self, null_if_empty=True):
        """list<struct<key: string, value: binary>>; a record without headers is null (as Spark's
        Kafka source gives it) unless null_if_empty is False."""
        pa = import_pyarrow()
        keys = self.key.to_arrow(pa.string() if self.key.offsets.dtype == np.int32 else pa.large_string())
        try:
            keys.validate(full=True)        # (the UTF-8 checked without a cast: see `numeric_array`)
        except pa.ArrowInvalid:  # not UTF-8: replace the bad bytes, as Java's String decoding does
            keys = pa.array([k.decode("utf-8", "replace") for k in self.key.to_pylist()], pa.string())
        values = self.value.to_arrow(pa.binary() if self.value.offsets.dtype == np.int32 else pa.large_binary())
        struct = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
        offsets = self.offsets.astype(np.int32, copy=False)
        validity, nulls = None, 0
        if null_if_empty:
            has = np.diff(offsets) > 0
            nulls = int(len(has) - has.sum())
            if nulls:
                validity = pa.py_buffer(np.packbits(has, bitorder="little"))
        list_type = pa.list_(struct.type)
        return pa.Array.from_buffers(list_type, len(self), [validity, pa.py_buffer(offsets)],
                                     null_count=nulls, children=[struct])

"""Columnar containers for decoded records, in Arrow's memory layout.

* `BinaryColumn` -- a nullable binary column: ``offsets`` (int32, or int64 past 2 GiB),
  ``data`` (uint8) and ``validity`` (bit-packed, LSB first; None when nothing is null). Exactly
  Arrow's binary / large_binary layout, so ``to_arrow()`` wraps the same buffers without copying.
* `Headers` -- record headers as flat arrays: ``offsets`` gives each record's range of header
  rows; header keys (utf-8) and values (nullable) are two `BinaryColumn`s.
* `Table` -- a small named set of equal-length NumPy columns (the batch table, the control records).
* `Records` -- the result of decoding: per-record NumPy columns plus the above. Python names are
  Kafka's in snake_case; Arrow/pandas columns carry Spark's Kafka-source names.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.codecs import CODEC_NAMES  # noqa: F401 (re-exported: the CLI and Spark use it from here)
from kafkafmt._util.extras import install_command

__all__ = ["Records", "Table", "BinaryColumn", "BinaryViewColumn", "Headers", "Labels", "CONTROL_TYPES",
           "TIMESTAMP_TYPES", "CODEC_NAMES", "KAFKA_COLUMNS", "LOG_DIR_COLUMN", "BATCH_METADATA_COLUMNS",
           "TYPED_COLUMNS", "UNTYPED_COLUMNS", "COLUMNS", "exact_pandas"]

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def _pa():
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"to_arrow()/to_pandas() need pyarrow: {install_command('arrow')}") from exc
    return pa


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
    valid = _unpack_validity(validity, n)[start:stop]
    nulls = int((~valid).sum())
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


def _ranges(starts, lengths):
    """Concatenated aranges [starts[i], starts[i] + lengths[i]) as one int64 array."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths) + np.repeat(
        np.asarray(starts, np.int64), lengths)


#: Spark's Kafka-source columns, as `Records.to_arrow` names them
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")
#: the log dir a record was read from (reads of log dirs; several copies of one partition tell apart by it)
LOG_DIR_COLUMN = "logDir"
#: the batch metadata columns (``to_arrow(batch_metadata=True)``, Spark's ``includeBatchMetadata``)
BATCH_METADATA_COLUMNS = ("producerId", "producerEpoch", "baseSequence", "leaderEpoch", "codec")
#: every column a read can be asked for (``columns=[...]``)
#: the columns typed keys and values add (``value_format=`` / ``key_format=``), by side: schema id, error
TYPED_COLUMNS = {"key": ("keySchemaId", "keyError"), "value": ("valueSchemaId", "valueError")}
#: the column of the bytes of keys and values left untyped (``untyped_topics="bytes"``: topics without
#: a schema), by side; null where the key or value is typed
UNTYPED_COLUMNS = {"key": "keyBytes", "value": "valueBytes"}
COLUMNS = KAFKA_COLUMNS + BATCH_METADATA_COLUMNS + (LOG_DIR_COLUMN,)
#: the batch table's fields behind the first four batch metadata columns
_BATCH_FIELDS = ("producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch")


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

        rows = np.asarray(rows, np.int64)
        offsets, data = take_binary(self.offsets.astype(np.int64, copy=False), self.data, rows)
        valid = _unpack_validity(self.validity, len(self))[rows] if self.validity is not None else None
        nulls = 0 if valid is None else int(len(valid) - valid.sum())
        return BinaryColumn(_small_offsets(offsets), data, _pack_validity(valid) if nulls else None, nulls)

    @staticmethod
    def concat(columns):
        """One column holding the rows of all `columns`, in order (copies)."""
        columns = list(columns)
        parts, offs, valids, base = [], [np.zeros(1, np.int64)], [], 0
        for c in columns:
            o = c.offsets.astype(np.int64)
            parts.append(c.data[o[0]:o[-1]])
            offs.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
            valids.append(_unpack_validity(c.validity, len(c)))
        offsets = np.concatenate(offs)
        data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        valid = np.concatenate(valids) if valids else np.ones(0, bool)
        nulls = int(len(valid) - valid.sum())
        return BinaryColumn(_small_offsets(offsets), data, _pack_validity(valid) if nulls else None, nulls)

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
        pa = _pa()
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
        pa = _pa()
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
        return np.ascontiguousarray(self.views[:, :4]).view("<i4").reshape(-1)

    @property
    def nbytes(self):
        """Bytes of the values (not of the buffers they lie in)."""
        return int(self.lengths().sum(dtype=np.int64))

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
        return BinaryColumn.from_arrow(self.to_arrow().cast(_pa().large_binary()))

    def to_arrow(self, type=None):
        """pyarrow binary_view array over the same views and buffers (no copy); `type` another
        Arrow binary type casts it (copies)."""
        pa = _pa()
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
        offs, keys, values, base = [np.zeros(1, np.int64)], [], [], 0
        for h in headers:
            o = h.offsets.astype(np.int64)
            offs.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
            keys.append(h.key[int(o[0]):int(o[-1])])
            values.append(h.value[int(o[0]):int(o[-1])])
        return Headers(_small_offsets(np.concatenate(offs)), BinaryColumn.concat(keys), BinaryColumn.concat(values))

    def to_pylist(self):
        """One list of (key: str, value: bytes | None) per record."""
        keys = [k.decode("utf-8", "replace") for k in self.key.to_pylist()]
        values = self.value.to_pylist()
        offs = self.offsets.tolist()
        return [list(zip(keys[offs[i]:offs[i + 1]], values[offs[i]:offs[i + 1]])) for i in range(len(offs) - 1)]

    def to_arrow(self, null_if_empty=True):
        """list<struct<key: string, value: binary>>; a record without headers is null (as Spark's
        Kafka source gives it) unless null_if_empty is False."""
        pa = _pa()
        keys = self.key.to_arrow(pa.binary() if self.key.offsets.dtype == np.int32 else pa.large_binary())
        try:
            keys = keys.cast(pa.string() if self.key.offsets.dtype == np.int32 else pa.large_string())
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


class Table:
    """Equal-length named NumPy columns with attribute access (the batch and control tables).

    ``table["name"]`` and ``table.name`` give a column, ``table[rows]`` (a slice, a mask, row
    numbers) a `Table` of those rows; iterating gives the rows as dicts of Python scalars.
    Columns are read-only (`with_column` makes a copy with another).

    Parameters
    ----------
    columns : dict
        Column name -> NumPy array (all of one length).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches
    >>> batches
    <Table 9 rows: position, size, base_offset, last_offset, ...>
    >>> batches.base_offset
    array([ 0, 20, 35, 45, 60, 70, 71, 91, 92])
    >>> batches["is_transactional"][:3]
    array([False,  True,  True])
    """

    def __init__(self, columns: dict):
        object.__setattr__(self, "_columns", dict(columns))

    def __getattr__(self, name):
        try:
            return self._columns[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("Table columns are read-only; use Table.with_column")

    @property
    def columns(self):
        """The column names, in order.

        Returns
        -------
        list of str

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls.columns
        ['offset', 'batch_index', 'type', 'version', 'coordinator_epoch', 'timestamp']
        """
        return list(self._columns)

    def __len__(self):
        return len(next(iter(self._columns.values()))) if self._columns else 0

    def __repr__(self):
        return f"<Table {len(self)} rows: {', '.join(self._columns)}>"

    def __getitem__(self, item):
        if isinstance(item, str):
            return self._columns[item]
        return Table({k: v[item] for k, v in self._columns.items()})

    def __iter__(self):
        """Rows as dicts of Python scalars."""
        cols = {k: v.tolist() for k, v in self._columns.items()}
        for i in range(len(self)):
            yield {k: v[i] for k, v in cols.items()}

    def to_pylist(self):
        """The rows as dicts of Python scalars.

        Returns
        -------
        list of dict

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> controls = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls
        >>> for row in controls.to_pylist():
        ...     print(row["offset"], kafkafmt.CONTROL_TYPES[row["type"]], row["coordinator_epoch"])
        70 ABORT 4
        91 COMMIT 4
        """
        return list(self)

    def with_column(self, name, values):
        """A copy with column `name` set to `values` (added at the end, or replaced in place); the
        other columns are shared, not copied.

        Parameters
        ----------
        name : str
        values : numpy.ndarray
            One value per row.

        Returns
        -------
        Table

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches
        >>> with_end = batches.with_column("end", batches.position + batches.size)
        >>> with_end.columns[-1], with_end.end[:3]
        ('end', array([352, 669, 974]))
        >>> "end" in batches.columns
        False
        """
        cols = dict(self._columns)
        cols[name] = values
        return Table(cols)

    @staticmethod
    def concat(tables):
        """Rows of all tables; a column some lack is filled with -1 (False for bools) there."""
        tables = [t for t in tables if t.columns]
        if not tables:
            return Table({})
        nonempty = [t for t in tables if len(t)] or tables[:1]
        names, dtypes = [], {}
        for t in tables:
            for k in t.columns:
                if k not in dtypes:
                    names.append(k)
                    dtypes[k] = t[k].dtype
        out = {}
        for k in names:
            fill = False if dtypes[k] == np.bool_ else -1
            out[k] = np.concatenate([t[k] if k in t.columns else np.full(len(t), fill, dtypes[k]) for t in nonempty])
        return Table(out)

    def to_arrow(self):
        """The columns as a pyarrow.Table (needs pyarrow).

        Returns
        -------
        pyarrow.Table

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> controls = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").controls.to_arrow()
        >>> controls.num_rows, controls.schema.field("offset").type
        (2, DataType(int64))
        """
        pa = _pa()
        return pa.table({k: pa.array(v) for k, v in self._columns.items()})

    def to_pandas(self):
        """The columns as a pandas.DataFrame.

        Returns
        -------
        pandas.DataFrame

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> batches = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0").batches.to_pandas()
        >>> batches[["base_offset", "record_count", "producer_id", "is_transactional"]].head(3)
           base_offset  record_count  producer_id  is_transactional
        0            0            20           -1             False
        1           20            15         1001              True
        2           35            10         1002              True
        """
        import pandas as pd

        return pd.DataFrame(self._columns)

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream of ``to_arrow()``."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)


def exact_pandas(column, index=None):
    """A pandas Series of an Arrow column whose every value is the Arrow value (what pyarrow's
    ``to_pandas`` changes, kept): an integer column with nulls as pandas' nullable integer dtype
    (not float64); a struct, list or map column as Python objects whose integers stay ints (not
    float64 beside a null) and whose nanosecond timestamps and durations are ``pd.Timestamp`` /
    ``pd.Timedelta`` (not integers).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.record import exact_pandas
    >>> t = pa.struct([("n", pa.int64()), ("at", pa.timestamp("ns", tz="UTC"))])
    >>> exact_pandas(pa.chunked_array([pa.array([{"n": 2 ** 53 + 1, "at": 1}, {"n": None, "at": None}], t)]))[0]
    {'n': 9007199254740993, 'at': Timestamp('1970-01-01 00:00:00.000000001+0000', tz='UTC')}
    >>> exact_pandas(pa.chunked_array([pa.array([2 ** 53 + 1, None])])).dtype
    Int64Dtype()
    """
    import pandas as pd

    pa = _pa()
    t = column.type
    index = index if index is not None else pd.RangeIndex(len(column))
    if pa.types.is_nested(t) and _ns_inside(t):
        return pd.Series(column.to_pylist(), index=index, dtype=object)
    options = {}
    if pa.types.is_nested(t):
        options["integer_object_nulls"] = True
    elif pa.types.is_integer(t) and column.null_count:
        name = {8: "Int8", 16: "Int16", 32: "Int32", 64: "Int64"}[t.bit_width]
        dtype = pd.api.types.pandas_dtype(("U" if pa.types.is_unsigned_integer(t) else "") + name)
        options["types_mapper"] = {t: dtype}.get
    return pa.table({"v": column}).to_pandas(**options)["v"].set_axis(index)


def _ns_inside(t):
    """Does nested type t hold nanosecond timestamps, durations or times (pyarrow makes them integers
    inside a struct or list)?"""
    pa = _pa()
    if pa.types.is_struct(t):
        return any(_ns_inside(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _ns_inside(t.value_type)
    if pa.types.is_map(t):
        return _ns_inside(t.key_type) or _ns_inside(t.item_type)
    return (pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t)) and t.unit == "ns"


def _concat_typed(parts):
    """The typed columns of concatenated parts: a side typed in every part that has records."""
    out = {}
    for side in ("key", "value"):
        kept = [p for p in parts if len(p) or side in p._typed]
        cols = [p._typed.get(side) for p in kept]
        if cols and all(c is not None for c in cols):
            # each part named by its topics, for an error saying which topics' types clash
            names = [", ".join(str(t) for t in p._topic.names if t is not None) or "?" for p in kept]
            out[side] = type(cols[0]).concat(cols, names=names) if len(cols) > 1 else cols[0]
    return out


def _concat_present(kind, columns):
    """kind.concat of the columns, or None when any part lacks the column (not decoded); binary
    views stay views when every part has them."""
    if any(c is None for c in columns):
        return None
    if kind is BinaryColumn and any(isinstance(c, BinaryViewColumn) for c in columns):
        if all(isinstance(c, BinaryViewColumn) for c in columns):
            return BinaryViewColumn.concat(columns)
        columns = [c.to_contiguous() if isinstance(c, BinaryViewColumn) else c for c in columns]
    return kind.concat(columns)


class Labels:
    """A string column kept as Arrow keeps a dictionary: names, and per-record int32 codes into them
    -- or no codes when one name (or none) holds for every record. The topic and log dir of a read."""

    __slots__ = ("names", "codes")

    def __init__(self, names=(), codes=None):
        object.__setattr__(self, "names", list(names))
        object.__setattr__(self, "codes", codes)

    def __setattr__(self, name, value):
        raise AttributeError("Labels are immutable")

    @classmethod
    def of(cls, value):
        """One name for every record (None: no name), or a Labels as it is."""
        if isinstance(value, Labels):
            return value
        return cls(() if value is None else (value,))

    @property
    def known(self):
        return bool(self.names) and self.names != [None]

    def value(self):
        """The name when one holds for all, else a NumPy array with each record's name."""
        if self.codes is None:
            return self.names[0] if self.names else None
        return np.asarray(self.names, dtype=object)[self.codes]

    def select(self, rows):
        """The labels of rows (a slice or row numbers)."""
        return self if self.codes is None else Labels(self.names, self.codes[rows])

    @staticmethod
    def concat(parts):
        """The labels of parts [(Labels, record count)] one after the other."""
        names, codes = [], []
        for lab, n in parts:
            for t in lab.names or [None]:
                if t not in names:
                    names.append(t)
            remap = np.asarray([names.index(t) for t in lab.names or [None]], np.int32)
            codes.append(np.full(n, remap[0], np.int32) if lab.codes is None else remap[lab.codes])
        if names == [None]:
            return Labels()
        if len(names) == 1:
            return Labels(names)
        return Labels(names, np.concatenate(codes) if codes else np.zeros(0, np.int32))

    def to_arrow(self, n):
        pa = _pa()
        codes = np.zeros(n, np.int32) if self.codes is None else self.codes
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(self.names, pa.string()))
        return arr.cast(pa.string())


class Records:
    """Decoded records as columns: what `decode` and the readers return.

    Immutable: `replace` makes a copy with some fields changed (the columns are shared, not
    copied). Python names are Kafka's in snake_case; `to_arrow` / `to_pandas` give Spark's
    Kafka-source columns.

    Parameters
    ----------
    offset, timestamp, timestamp_type, batch_index : numpy.ndarray
        The per-record columns (see Attributes).
    key, value : BinaryColumn, BinaryViewColumn or None
        The keys and values; None: the column was not decoded (absent, not null).
    headers : Headers or None
        The headers; None: not decoded.
    batches : Table
        One row per batch.
    controls : Table
        The control records.
    topic, log_dir : str or None
        One name for every record (None: unknown), or a per-record `Labels`.
    partition : int, numpy.ndarray or None
        None, an int, or an int32 array (one per record).
    file : str, optional
        The file the records were decoded from (named in errors).
    valid_bytes, trailing_bytes : int
        Where valid data ended in the input, and the bytes after it.
    tail : {None, "truncated", "zeros"}
        What the bytes after the valid data are.
    report : list of ReportEntry, optional
        What was skipped or fell back, and why.
    typed : dict, optional
        ``{"key"|"value": DecodedColumn}``.

    Attributes
    ----------
    offset : numpy.ndarray
        int64.
    timestamp : numpy.ndarray
        int64 ms; -1 where the format has none.
    timestamp_type : numpy.ndarray
        int8: 0 CreateTime, 1 LogAppendTime, -1 none.
    batch_index : numpy.ndarray
        int32: the record's row in `batches`.
    key, value : BinaryColumn
        The keys and values (when decoded).
    headers : Headers
        The headers (when decoded).
    batches : Table
        One row per batch.
    controls : Table
        Table of control records.
    topic, partition
        When known.
    log_dir : str
        The log dir a record was read from, when known: the ``logDir`` column.
    typed : dict
        ``{"key"|"value": DecodedColumn}``: keys and values decoded by ``key_format`` /
        ``value_format``, see `kafkafmt.values._typed`.
    valid_bytes, trailing_bytes, truncated
        Where valid data ended in the input.
    report : list of ReportEntry
        What the read skipped or fell back on, and why.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")
    >>> recs
    <Records payments-0: 120 records in 9 batches>
    >>> recs.offset[:3], recs.timestamp_type[:3]
    (array([0, 1, 2]), array([0, 0, 0], dtype=int8))
    >>> recs.key[20], recs.value[20]
    (b'tx1-a-0', b'{"payment": "tx1-a-0", "amount": 203}')
    >>> int(recs.batches.producer_id[recs.batch_index[20]])     # the batch the record is in
    1001
    >>> recs[20:35].to_pandas()[["key", "offset", "timestamp"]].head(2)
              key  offset                timestamp
    0  b'tx1-a-0'      20  2026-01-01 00:00:01+00:00
    1  b'tx1-a-1'      21  2026-01-01 00:00:01.010000+00:00
    """

    def __init__(self, *, offset, timestamp, timestamp_type, batch_index, key, value, headers, batches,
                 controls, topic=None, partition=None, file=None, valid_bytes=0, trailing_bytes=0, tail=None,
                 log_dir=None, report=None, typed=None):
        # set once, here (the instance is immutable afterwards; see __setattr__)
        self.__dict__.update(
            offset=offset, timestamp=timestamp, timestamp_type=timestamp_type, batch_index=batch_index,
            _key=key, _value=value, _headers=headers,        # None: the column was not decoded (absent, not null)
            batches=batches, controls=controls,
            _topic=Labels.of(topic), _log_dir=Labels.of(log_dir),   # one name for all, or per record
            partition=partition,                             # None, an int, or an int32 array (one per record)
            file=file, valid_bytes=valid_bytes, trailing_bytes=trailing_bytes, tail=tail,
            report=[] if report is None else report,         # what was skipped or fell back, and why
            _typed=dict(typed) if typed else {})             # side -> DecodedColumn (kafkafmt.values._typed)

    def __setattr__(self, name, value):
        raise AttributeError(f"Records are immutable: use recs.replace({name}=...) for a copy with a new {name}")

    def _column(self, name, option):
        col = getattr(self, "_" + name)
        if col is None and name in self._typed:
            raise AttributeError(f"a typed read keeps no raw {name}s (recs.typed[{name!r}] holds them typed): read "
                                 f"with keep_bytes=True to keep them too")
        if col is None:
            raise AttributeError(f"the {name!r} column was not decoded ({option}=False, or columns=[...] without "
                                 f"it): read again with it (recs.columns lists the columns this result has)")
        return col

    def decoded(self, name):
        """The ``key``, ``value`` or ``headers`` column, or None when it was not decoded (absent,
        where the attribute raises)."""
        if name not in ("key", "value", "headers"):
            raise ValueError(f"decoded() takes key, value or headers, not {name!r}")
        return getattr(self, "_" + name)

    @property
    def key(self):
        """The keys (`BinaryColumn`), when decoded.

        Returns
        -------
        BinaryColumn
            Null where a record has no key; a `BinaryViewColumn` for ``binary="view"`` reads.

        Raises
        ------
        AttributeError
            The keys were not decoded (``keys=False``, or ``columns=[...]`` without ``"key"``):
            absent, never null.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/clicks-0")
        >>> recs.key
        <BinaryColumn 600 values, 4335 bytes, 159 null>
        >>> recs.key[:3].to_pylist()
        [None, None, b'session-32']
        >>> kafkafmt.read_log_dir(f"{sample_dir()}/clicks-0", columns=["offset"]).key
        Traceback (most recent call last):
        ...
        AttributeError: the 'key' column was not decoded (keys=False, or columns=[...] without it): ...
        """
        return self._column("key", "keys")

    @property
    def value(self):
        """The values (`BinaryColumn`), when decoded.

        Returns
        -------
        BinaryColumn
            Null for tombstones; a `BinaryViewColumn` for ``binary="view"`` reads. Typed values
            (``value_format=``) are in `typed`; the readers keep their raw bytes here only with
            ``keep_bytes=True``.

        Raises
        ------
        AttributeError
            The values were not decoded (``values=False``, or ``columns=[...]`` without
            ``"value"``): absent, never null.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/customers-0")
        >>> recs.value
        <BinaryColumn 600 values, 23143 bytes, 53 null>
        >>> recs.value[:3].to_pylist()
        [None, None, b'{"name": "Customer 0049", "tier": "gold"}']
        """
        return self._column("value", "values")

    @property
    def headers(self):
        """The headers (`Headers`), when decoded.

        Returns
        -------
        Headers

        Raises
        ------
        AttributeError
            The headers were not decoded (``headers=False``, or ``columns=[...]`` without
            ``"headers"``): absent, never empty.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0")
        >>> recs.headers
        <Headers 2400 records, 922 headers>
        >>> recs.headers[2]
        [('trace-id', b'033aeece5c85c85b'), ('source', b'web')]
        """
        return self._column("headers", "headers")

    @property
    def typed(self):
        """``{"key"|"value": DecodedColumn}``: the typed keys and values (``value_format=`` /
        ``key_format=`` of the readers, `kafkafmt.values._typed.decode_values`); empty when none."""
        return dict(self._typed)

    @property
    def columns(self):
        """The Arrow/pandas column names this result has (Spark's Kafka-source names)."""
        out = [c for c, v in (("key", self._key), ("value", self._value)) if v is not None or c in self._typed]
        if self._topic.known:
            out.append("topic")
        if self.partition is not None:
            out.append("partition")
        out += ["offset", "timestamp", "timestampType"]
        if self._headers is not None:
            out.append("headers")
        for side in ("key", "value"):
            if side in self._typed:
                out += TYPED_COLUMNS[side]
                if self._typed[side].untyped is not None:
                    out.append(UNTYPED_COLUMNS[side])
        return out

    @staticmethod
    def _apply(col, fn):
        return None if col is None else fn(col)

    @property
    def topic(self):
        """The topic name (str) when all records share one, else a NumPy array of names."""
        return self._topic.value()

    @property
    def log_dir(self):
        """The log dir the records were read from (str) when all share one, else a NumPy array of
        them; None when not read from a log dir."""
        return self._log_dir.value()

    def replace(self, **changes):
        """A copy with some fields changed (the columns are shared, not copied): e.g.
        ``recs.replace(topic="orders", partition=3)``, ``recs.replace(report=entries)``."""
        return self._like(**changes)

    def _like(self, **changes):
        fields = dict(offset=self.offset, timestamp=self.timestamp, timestamp_type=self.timestamp_type,
                      batch_index=self.batch_index, key=self._key, value=self._value, headers=self._headers,
                      batches=self.batches, controls=self.controls, partition=self.partition, file=self.file,
                      valid_bytes=self.valid_bytes, trailing_bytes=self.trailing_bytes, tail=self.tail,
                      report=self.report, topic=self._topic, log_dir=self._log_dir, typed=self._typed)
        fields.update(changes)
        return Records(**fields)

    @property
    def truncated(self):
        """True when the input ended inside a batch (the partial batch is not decoded)."""
        return self.tail == "truncated"

    def __len__(self):
        return len(self.offset)

    def __repr__(self):
        where = f" {self.topic}-{self.partition}" if self._topic.codes is None and self._topic.known else ""
        return (f"<Records{where}: {len(self)} records in {len(self.batches)} batches"
                f"{', truncated tail' if self.truncated else ''}>")

    def __getitem__(self, item):
        if not isinstance(item, slice):
            raise TypeError("Records supports slicing (recs[a:b]); use the columns for single values, "
                            "take() / filter() for other selections")
        start, stop, step = item.indices(len(self))
        if step != 1:
            raise IndexError("Records slices must be contiguous")
        sl = slice(start, max(start, stop))
        changes = dict(topic=self._topic.select(sl), log_dir=self._log_dir.select(sl))
        if isinstance(self.partition, np.ndarray):
            changes["partition"] = self.partition[sl]
        return self._like(offset=self.offset[sl], timestamp=self.timestamp[sl],
                          timestamp_type=self.timestamp_type[sl], batch_index=self.batch_index[sl],
                          key=self._apply(self._key, lambda c: c[sl]), value=self._apply(self._value, lambda c: c[sl]),
                          headers=self._apply(self._headers, lambda c: c[sl]),
                          typed={k: d[sl] for k, d in self._typed.items()}, **changes)

    def take(self, rows):
        """Records at the given row numbers, in that order (copies the binary columns)."""
        rows = np.asarray(rows, np.int64)
        changes = dict(topic=self._topic.select(rows), log_dir=self._log_dir.select(rows))
        if isinstance(self.partition, np.ndarray):
            changes["partition"] = self.partition[rows]
        return self._like(offset=self.offset[rows], timestamp=self.timestamp[rows],
                          timestamp_type=self.timestamp_type[rows], batch_index=self.batch_index[rows],
                          key=self._apply(self._key, lambda c: c.take(rows)),
                          value=self._apply(self._value, lambda c: c.take(rows)),
                          headers=self._apply(self._headers, lambda c: c.take(rows)),
                          typed={k: d.take(rows) for k, d in self._typed.items()}, **changes)

    def filter(self, mask):
        """Records where the boolean mask is True (a contiguous selection is sliced, not copied)."""
        mask = np.asarray(mask, bool)
        rows = np.flatnonzero(mask)
        if len(rows) == len(self):
            return self
        if len(rows) == 0:
            return self[0:0]
        if rows[-1] - rows[0] + 1 == len(rows):
            return self[int(rows[0]):int(rows[-1]) + 1]
        return self.take(rows)

    @staticmethod
    def concat(parts):
        """One Records holding the records of all parts in order, with per-record topic and
        partition; batch tables and control tables are concatenated (batch_index follows)."""
        parts = list(parts)
        if not parts:
            raise ValueError("nothing to concatenate")
        if len(parts) == 1:
            return parts[0]
        partitions, batches, controls, report = [], [], [], []
        # one partition's chunks keep their one number (no array of it per record); batch indexes are
        # filled into one int32 array in place (no int64 copies of them: a large read's peak memory)
        one = {p.partition for p in parts if not isinstance(p.partition, np.ndarray)}
        same = len(one) == 1 and None not in one and not any(isinstance(p.partition, np.ndarray) for p in parts)
        batch_index = np.empty(sum(len(p) for p in parts), np.int32)
        nb = at = 0
        for p in parts:
            n = len(p)
            part = p.partition
            if not same:
                partitions.append(part if isinstance(part, np.ndarray)
                                  else np.full(n, -1 if part is None else part, np.int32))
            np.add(p.batch_index, nb, out=batch_index[at:at + n], casting="unsafe")
            at += n
            b = p.batches
            if same:                               # one partition: its batches need no tag
                pass
            elif not isinstance(part, np.ndarray):   # a single partition's batches: tag them with it
                b = b.with_column("partition", np.full(len(b), -1 if part is None else part, np.int32))
            elif "partition" not in b.columns:
                b = b.with_column("partition", np.full(len(b), -1, np.int32))
            batches.append(b)
            c = p.controls
            if len(c):
                c = c.with_column("batch_index", c["batch_index"].astype(np.int64) + nb)
            controls.append(c)
            nb += len(p.batches)
            report += p.report
        if same:
            partition = next(iter(one))
        else:
            partition = np.concatenate(partitions).astype(np.int32, copy=False)
        # known when a part knows it (parts without records too: all-empty partitions keep the column)
        known = any(p.partition is not None for p in parts)
        return Records(
            offset=np.concatenate([p.offset for p in parts]), timestamp=np.concatenate([p.timestamp for p in parts]),
            timestamp_type=np.concatenate([p.timestamp_type for p in parts]),
            batch_index=batch_index,
            key=_concat_present(BinaryColumn, [p._key for p in parts]),
            value=_concat_present(BinaryColumn, [p._value for p in parts]),
            headers=_concat_present(Headers, [p._headers for p in parts]),
            batches=Table.concat(batches), controls=Table.concat(controls),
            topic=Labels.concat([(p._topic, len(p)) for p in parts]),
            log_dir=Labels.concat([(p._log_dir, len(p)) for p in parts]),
            partition=partition if known else None, report=report, typed=_concat_typed(parts))

    # --- per-record views of batch fields --------------------------------------------------------
    def batch_column(self, name):
        """A batch-table column expanded to one value per record (e.g. 'producer_id')."""
        return self.batches[name][self.batch_index]

    @property
    def sequence(self):
        """Producer sequence number of each record (-1 when the batch has none)."""
        base = self.batch_column("base_sequence").astype(np.int64)
        delta = self.offset - self.batch_column("base_offset")
        return np.where(base >= 0, (base + delta) % (1 << 31), -1)

    # --- Arrow / pandas -------------------------------------------------------------------------
    def to_arrow(self, *, headers=True, batch_metadata=False, log_dir=False):
        """pyarrow.Table with Spark's Kafka-source columns: key, value, [topic, partition,] offset,
        timestamp (timestamp[ms, UTC]), timestampType (int32), [headers]. Binary columns, offsets
        and timestamps share memory with this object. batch_metadata=True adds producerId,
        producerEpoch, baseSequence, leaderEpoch, codec; log_dir=True adds logDir (the log dir each
        record was read from; null when unknown): two copies of one partition tell apart by it.
        Typed keys/values (``recs.typed``) replace the raw ones and add keySchemaId, keyError,
        valueSchemaId, valueError (`TYPED_COLUMNS`) after headers, and keyBytes / valueBytes
        (`UNTYPED_COLUMNS`) when topics without a schema are kept as bytes."""
        pa = _pa()
        n = len(self)
        cols = {}
        typed = self._typed
        if self._key is not None or "key" in typed:      # (a typed read keeps no raw bytes unless asked)
            cols["key"] = typed["key"].values if "key" in typed else self._key.to_arrow()
        if self._value is not None or "value" in typed:
            cols["value"] = typed["value"].values if "value" in typed else self._value.to_arrow()
        if self._topic.known:
            cols["topic"] = self._topic.to_arrow(n)
        if isinstance(self.partition, np.ndarray):
            cols["partition"] = pa.array(self.partition.astype(np.int32, copy=False))
        elif self.partition is not None:
            cols["partition"] = pa.array(np.full(n, self.partition, np.int32))
        cols["offset"] = pa.array(self.offset)
        cols["timestamp"] = pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), n,
                                                  [None, pa.py_buffer(self.timestamp)])
        cols["timestampType"] = pa.array(self.timestamp_type.astype(np.int32))
        if headers and self._headers is not None:
            cols["headers"] = self._headers.to_arrow()
        for side in ("key", "value"):
            if side in typed:
                schema_id, error = TYPED_COLUMNS[side]
                cols[schema_id], cols[error] = typed[side].schema_id, typed[side].error
                if typed[side].untyped is not None:
                    cols[UNTYPED_COLUMNS[side]] = typed[side].untyped
        if log_dir:
            cols[LOG_DIR_COLUMN] = self._log_dir.to_arrow(n) if self._log_dir.known else pa.nulls(n, pa.string())
        if batch_metadata:
            for name, field in zip(BATCH_METADATA_COLUMNS[:4], _BATCH_FIELDS):
                cols[name] = pa.array(self.batch_column(field))
            codec = self.batch_column("codec")
            cols["codec"] = pa.DictionaryArray.from_arrays(
                pa.array(codec.astype(np.int32)), pa.array([CODEC_NAMES.get(i, str(i)) for i in range(8)]))
        return pa.table(cols)

    def to_pandas(self, *, dtype_backend=None, **kwargs):
        """pandas.DataFrame with the same columns as to_arrow() (keyword arguments as to_arrow's).

        dtype_backend (as ``pd.read_parquet`` takes it): None (the default) gives NumPy columns,
        with a Python ``bytes`` object per key and value (object dtype: what most pandas code
        expects; one object per value is the cost); typed keys and values keep every value as
        Arrow has it (`exact_pandas`): a record as a dict whose integers are Python ints and whose
        nanosecond times are ``pd.Timestamp`` / ``pd.Timedelta``, an integer column with nulls as
        pandas' nullable integer dtype. ``"pyarrow"`` gives ``pd.ArrowDtype`` columns over the Arrow
        buffers -- binary (or binary_view) keys and values, timestamp, headers as list<struct> --
        with no Python object per value: pick it for large reads, for Arrow-native consumers
        (Polars, DuckDB, ``pyarrow.compute``) and when memory matters. ``"numpy_nullable"``:
        pandas' nullable integer dtypes, binary columns as objects."""
        import pandas as pd

        table = self.to_arrow(**kwargs)
        if dtype_backend is None:
            typed = [name for name in ("key", "value") if name in self._typed]
            if not typed:
                return table.to_pandas()
            df = table.drop_columns(typed).to_pandas()
            for name in typed:
                df.insert(table.column_names.index(name), name, exact_pandas(table.column(name), df.index))
            return df
        if dtype_backend == "pyarrow":
            # each Arrow column wrapped as it is (what to_pandas(types_mapper=pd.ArrowDtype) gives,
            # without its block-manager round trip: a quarter of the time)
            return pd.DataFrame({name: pd.arrays.ArrowExtensionArray(column)
                                 for name, column in zip(table.column_names, table.columns)}, copy=False)
        if dtype_backend == "numpy_nullable":
            pa = _pa()
            nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                        pa.int64(): pd.Int64Dtype(), pa.string(): pd.StringDtype()}
            return table.to_pandas(types_mapper=nullable.get)
        raise ValueError(f"dtype_backend must be None, 'numpy_nullable' or 'pyarrow', not {dtype_backend!r}")

    # --- the Arrow PyCapsule interface: what to_arrow() gives, for Polars, DuckDB, pandas, pyarrow ---
    def __arrow_c_stream__(self, requested_schema=None):
        """``to_arrow()`` as an Arrow C stream (no value byte copied)."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def __arrow_c_array__(self, requested_schema=None):
        """``to_arrow()`` as one Arrow C record batch (schema and struct array capsules)."""
        table = self.to_arrow()
        batches = table.to_batches()
        if len(batches) != 1:       # (to_arrow builds one chunk per column: only an empty table has none)
            batches = table.combine_chunks().to_batches() or [_pa().RecordBatch.from_pylist([], schema=table.schema)]
        return batches[0].__arrow_c_array__(requested_schema)

    def __arrow_c_schema__(self):
        """The Arrow C schema of ``to_arrow()``."""
        return self.to_arrow().schema.__arrow_c_schema__()

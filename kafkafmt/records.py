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
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _pa():
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("to_arrow()/to_pandas() need pyarrow: pip install 'kafkafmt[arrow]'") from exc
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


class BinaryColumn:
    """A nullable binary column in Arrow layout (offsets, data, validity)."""

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
        return int(self.offsets[-1] - self.offsets[0]) if len(self.offsets) else 0

    def is_null(self):
        """NumPy bool array, True where the value is null (absent, as opposed to empty)."""
        return ~_unpack_validity(self.validity, len(self))

    def lengths(self):
        """Length in bytes of each value (0 for null)."""
        return np.diff(self.offsets)

    def __getitem__(self, item):
        if isinstance(item, slice):
            start, stop, step = item.indices(len(self))
            if step != 1:
                raise IndexError("BinaryColumn slices must be contiguous")
            stop = max(start, stop)
            valid = _unpack_validity(self.validity, len(self))[start:stop]
            nulls = int((~valid).sum())
            return BinaryColumn(self.offsets[start:stop + 1], self.data,
                                _pack_validity(valid) if nulls else None, nulls)
        i = int(item)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(item)
        if self.validity is not None and not (self.validity[i >> 3] >> (i & 7)) & 1:
            return None
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def to_pylist(self):
        """list of bytes / None (creates one Python object per value: not for hot paths)."""
        data = self.data.tobytes() if len(self.data) < (1 << 28) else self.data
        offs = self.offsets.tolist()
        if isinstance(data, bytes):
            out = [data[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
        else:
            out = [data[offs[i]:offs[i + 1]].tobytes() for i in range(len(offs) - 1)]
        if self.validity is not None:
            for i in np.flatnonzero(self.is_null()):
                out[i] = None
        return out

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


class Headers:
    """Record headers, flat: record i owns header rows offsets[i]:offsets[i+1]."""

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
    """Equal-length named NumPy columns with attribute access (the batch and control tables)."""

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
        return list(self)

    def with_column(self, name, values):
        cols = dict(self._columns)
        cols[name] = values
        return Table(cols)

    def to_arrow(self):
        pa = _pa()
        return pa.table({k: pa.array(v) for k, v in self._columns.items()})

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self._columns)


class Records:
    """Decoded records as columns. Attributes (NumPy unless noted):

    offset (int64), timestamp (int64 ms; -1 where the format has none), timestamp_type (int8:
    0 CreateTime, 1 LogAppendTime, -1 none), batch_index (int32: the record's row in `batches`),
    key, value (`BinaryColumn`), headers (`Headers`), batches (`Table`, one row per batch),
    controls (`Table` of control records), topic / partition (when known).
    valid_bytes / trailing_bytes / truncated say where valid data ended in the input.
    """

    def __init__(self, *, offset, timestamp, timestamp_type, batch_index, key, value, headers, batches,
                 controls, topic=None, partition=None, file=None, valid_bytes=0, trailing_bytes=0, tail=None):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.batch_index = batch_index
        self.key = key
        self.value = value
        self.headers = headers
        self.batches = batches
        self.controls = controls
        self.topic = topic
        self.partition = partition
        self.file = file
        self.valid_bytes = valid_bytes
        self.trailing_bytes = trailing_bytes
        self.tail = tail

    @property
    def truncated(self):
        """True when the input ended inside a batch (the partial batch is not decoded)."""
        return self.tail == "truncated"

    def __len__(self):
        return len(self.offset)

    def __repr__(self):
        where = f" {self.topic}-{self.partition}" if self.topic is not None else ""
        return (f"<Records{where}: {len(self)} records in {len(self.batches)} batches"
                f"{', truncated tail' if self.truncated else ''}>")

    def __getitem__(self, item):
        if not isinstance(item, slice):
            raise TypeError("Records supports slicing (recs[a:b]); use the columns for single values")
        start, stop, step = item.indices(len(self))
        if step != 1:
            raise IndexError("Records slices must be contiguous")
        stop = max(start, stop)
        sl = slice(start, stop)
        return Records(offset=self.offset[sl], timestamp=self.timestamp[sl],
                       timestamp_type=self.timestamp_type[sl], batch_index=self.batch_index[sl],
                       key=self.key[sl], value=self.value[sl], headers=self.headers[sl],
                       batches=self.batches, controls=self.controls, topic=self.topic,
                       partition=self.partition, file=self.file, valid_bytes=self.valid_bytes,
                       trailing_bytes=self.trailing_bytes, tail=self.tail)

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
    def to_arrow(self, *, headers=True, batch_metadata=False):
        """pyarrow.Table with Spark's Kafka-source columns: key, value, [topic, partition,] offset,
        timestamp (timestamp[ms, UTC]), timestampType (int32), [headers]. Binary columns, offsets
        and timestamps share memory with this object. batch_metadata=True adds producerId,
        producerEpoch, baseSequence, leaderEpoch, codec."""
        pa = _pa()
        n = len(self)
        cols = {"key": self.key.to_arrow(), "value": self.value.to_arrow()}
        if self.topic is not None:
            cols["topic"] = pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(n, np.int32)), pa.array([self.topic])).cast(pa.string()) \
                if n else pa.array([], pa.string())
        if self.partition is not None:
            cols["partition"] = pa.array(np.full(n, self.partition, np.int32))
        cols["offset"] = pa.array(self.offset)
        cols["timestamp"] = pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), n,
                                                  [None, pa.py_buffer(self.timestamp)])
        cols["timestampType"] = pa.array(self.timestamp_type.astype(np.int32))
        if headers:
            cols["headers"] = self.headers.to_arrow()
        if batch_metadata:
            cols["producerId"] = pa.array(self.batch_column("producer_id"))
            cols["producerEpoch"] = pa.array(self.batch_column("producer_epoch"))
            cols["baseSequence"] = pa.array(self.batch_column("base_sequence"))
            cols["leaderEpoch"] = pa.array(self.batch_column("partition_leader_epoch"))
            codec = self.batch_column("codec")
            cols["codec"] = pa.DictionaryArray.from_arrays(
                pa.array(codec.astype(np.int32)), pa.array([CODEC_NAMES.get(i, str(i)) for i in range(8)]))
        return pa.table(cols)

    def to_pandas(self, **kwargs):
        """pandas.DataFrame with the same columns as to_arrow()."""
        return self.to_arrow(**kwargs).to_pandas()

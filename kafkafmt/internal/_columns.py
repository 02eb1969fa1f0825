"""Arrow columns for the internal topics' tables, built from a `Records`' buffers without a Python
object per row where it matters (offset commits), and the columns every table ends with.
"""
from __future__ import annotations

import warnings

import numpy as np

from kafkafmt.errors import KafkafmtWarning

__all__ = ["SOURCE_COLUMNS", "arrow", "with_source_columns", "source_schemas", "with_source", "without_source", "column_parts", "string_array",
           "masked_array", "sparse_binary", "text_column", "warn_counts", "timestamp_array", "append_row"]


def arrow():
    """pyarrow, imported when a table is built (kafkafmt reads without it)."""
    import pyarrow as pa
    return pa


#: the columns every table ends with: where its row was read (two partitions of __consumer_offsets, or two
#: copies of one, hold rows that are otherwise alike)
SOURCE_COLUMNS = ("source_partition", "log_dir")


def with_source_columns(schema):
    """`schema` with `SOURCE_COLUMNS` appended."""
    pa = arrow()
    return schema.append(pa.field("source_partition", pa.int32())).append(pa.field("log_dir", pa.string()))


def source_schemas(record_schemas):
    """``record_schemas(pyarrow, timestamp type)``'s tables' schemas by name, `SOURCE_COLUMNS` appended."""
    pa = arrow()
    return {name: with_source_columns(schema)
            for name, schema in record_schemas(pa, pa.timestamp("ms", tz="UTC")).items()}


def with_source(table, recs, rows=None):
    """The table with `SOURCE_COLUMNS` appended: the partition and log dir of each row's record
    (``rows``: the record of each row, when a record gives several rows or none)."""
    pa = arrow()
    n = len(recs)
    part = recs.partition
    part = np.full(n, -1 if part is None else part, np.int32) if not isinstance(part, np.ndarray) else part
    log_dir = recs.log_dir
    log_dir = np.full(n, log_dir, object) if not isinstance(log_dir, np.ndarray) else log_dir
    if rows is not None:
        part, log_dir = part[rows], log_dir[rows]
    part_arr = pa.array(part.astype(np.int32, copy=False), mask=part < 0)
    return table.append_column(pa.field("source_partition", pa.int32()), part_arr) \
                .append_column(pa.field("log_dir", pa.string()), pa.array(log_dir.tolist(), pa.string()))


def column_parts(col):
    offsets = np.ascontiguousarray(col.offsets, dtype=np.int64)
    data = np.ascontiguousarray(np.asarray(col.data, dtype=np.uint8).reshape(-1))
    if len(data) == 0:
        data = np.zeros(1, np.uint8)
    return offsets, data, np.ascontiguousarray(col.is_null().view(np.uint8))


def _bitmap(valid):
    return arrow().py_buffer(np.packbits(valid, bitorder="little"))


def string_array(offsets, data, valid):
    pa = arrow()
    n = len(offsets) - 1
    nulls = int(n - np.count_nonzero(valid))
    if offsets.dtype == np.int32:
        return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data),
                                           _bitmap(valid) if nulls else None, nulls)
    arr = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data),
                                           _bitmap(valid) if nulls else None, nulls)
    return arr.cast(pa.string())


def masked_array(values, valid, type):
    """A primitive Arrow array on `values`' buffer (no copy) with `valid` as its validity."""
    pa = arrow()
    n = len(values)
    nulls = int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(type, n, [_bitmap(valid) if nulls else None, pa.py_buffer(values)], nulls)


def sparse_binary(col, rows, n):
    """A binary column of n rows holding col's bytes at `rows` and null elsewhere."""
    pa = arrow()
    if len(rows) == 0:
        return pa.nulls(n, pa.binary())
    offsets = np.asarray(col.offsets, dtype=np.int64)
    keep = np.zeros(n, bool)
    keep[rows] = True
    keep &= ~col.is_null()
    rows = np.nonzero(keep)[0]
    lengths = np.zeros(n, np.int64)
    lengths[rows] = offsets[rows + 1] - offsets[rows]
    out = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    data = np.asarray(col.data, dtype=np.uint8).reshape(-1)
    buf = np.concatenate([data[offsets[r]:offsets[r + 1]] for r in rows]) if len(rows) else np.zeros(0, np.uint8)
    nulls = int(n - len(rows))
    if out[-1] >= 2 ** 31:
        return pa.Array.from_buffers(pa.large_binary(), n, [_bitmap(keep) if nulls else None, pa.py_buffer(out),
                                                            pa.py_buffer(buf)], nulls).cast(pa.binary())
    return pa.Array.from_buffers(pa.binary(), n, [_bitmap(keep) if nulls else None,
                                                  pa.py_buffer(out.astype(np.int32)), pa.py_buffer(buf)], nulls)


def text_column(texts_by_row, n):
    """A string column from {row: text}, null elsewhere, without a Python object per row."""
    pa = arrow()
    if not texts_by_row:
        return pa.nulls(n, pa.string())
    uniq = sorted(set(texts_by_row.values()))
    code = {t: i for i, t in enumerate(uniq)}
    idx = np.full(n, -1, np.int32)
    for r, t in texts_by_row.items():
        idx[r] = code[t]
    indices = pa.array(idx, mask=idx < 0)
    return pa.array(uniq, pa.string()).take(indices)


def warn_counts(topic, counts):
    parts = [f"{c} {what}" for what, c in counts.items() if c]
    if parts:
        warnings.warn(f"{topic}: " + ", ".join(parts) + "; their raw bytes are kept in the raw_* columns",
                      KafkafmtWarning, stacklevel=3)


def timestamp_array(ms):
    pa = arrow()
    ms = np.ascontiguousarray(ms, dtype=np.int64)
    return pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), len(ms), [None, pa.py_buffer(ms)])


def without_source(schema):
    return arrow().schema([f for f in schema if f.name not in SOURCE_COLUMNS])


def append_row(cols, row, error=None):
    for name, lst in cols.items():
        lst.append(error if name == "error" else row.get(name))


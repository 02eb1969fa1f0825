"""The Arrow types every engine kafkafmt hands data to holds: what the Arrow PyCapsule hand-off (`Records`,
the streams of ``iter_log_dir(s)``), the Polars scan and the Parquet and Arrow exports give in place of the
two Arrow types kafkafmt's typed values use that most of them cannot hold.

===============================================  ======================================================
Arrow type (``to_arrow()``, ``to_pandas()``)     portable type
===============================================  ======================================================
decimal256(p, s) (an Avro decimal of p > 38)     string: the exact decimal text (DuckDB refuses a
                                                 decimal256, Polars panics on it; Spark, Delta and
                                                 Iceberg stop at 38 digits and hold the same text)
month_day_nano_interval (an Avro duration)       struct<months: int32, days: int32, nanoseconds: int64>
                                                 (Polars cannot import it, Parquet cannot store it;
                                                 Spark, Delta and Iceberg hold the same struct)
struct<> (a Protobuf Empty)                      struct<__dummy_field_in_empty_struct: string>, the
                                                 field always null (Parquet cannot store a struct
                                                 without fields; Spark's from_protobuf keeps an empty
                                                 message so, with retain.empty.message.types)
===============================================  ======================================================

Inside structs, lists and maps alike; every other type is kept as it is, and a table without any of
them is returned unchanged (no copy).
"""
from __future__ import annotations

import numpy as np

__all__ = ["INTERVAL_FIELDS", "EMPTY_STRUCT_FIELD", "interval_type", "interval_fields", "placeholder_struct",
           "portable_type", "portable_column", "portable_table"]

#: the fields of an interval (an Avro duration) wherever a door holds it as a struct: name, Arrow type name
INTERVAL_FIELDS = (("months", "int32"), ("days", "int32"), ("nanoseconds", "int64"))
#: the one field of an empty struct wherever a door cannot hold a struct without fields (always null)
EMPTY_STRUCT_FIELD = "__dummy_field_in_empty_struct"


def _pa():
    import pyarrow as pa

    return pa


def interval_type():
    """The struct an interval is held as (`INTERVAL_FIELDS`)."""
    pa = _pa()
    return pa.struct([pa.field(name, getattr(pa, t)(), True) for name, t in INTERVAL_FIELDS])


def placeholder_struct():
    """The struct an empty struct is held as (its one field `EMPTY_STRUCT_FIELD`, a string)."""
    pa = _pa()
    return pa.struct([pa.field(EMPTY_STRUCT_FIELD, pa.string(), True)])


def interval_fields(arr, type=None):
    """A month_day_nano_interval array as the struct of its fields (``type``: a struct of the three
    fields in other integer types; default `interval_type`), null where the interval is null."""
    pa = _pa()
    type = interval_type() if type is None else type
    raw = np.frombuffer(arr.buffers()[1], np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")]),
                        len(arr), arr.offset * 16)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays([pa.array(raw[f.name].copy()).cast(f.type) for f in type], fields=list(type),
                                      mask=mask)


def portable_type(t):
    """``t`` with the types of the module's table replaced, inside nested types too.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.record import portable_type
    >>> portable_type(pa.struct([("big", pa.decimal256(50, 5)), ("dur", pa.month_day_nano_interval())]))
    StructType(struct<big: string, dur: struct<months: int32, days: int32, nanoseconds: int64>>)
    >>> portable_type(pa.decimal128(12, 3))
    Decimal128Type(decimal128(12, 3))
    """
    pa = _pa()
    if pa.types.is_decimal256(t):
        return pa.string()
    if t == pa.month_day_nano_interval():
        return interval_type()
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            return placeholder_struct()
        fields = [f.with_type(portable_type(f.type)) for f in t]
        return t if all(a.type == b.type for a, b in zip(fields, t)) else pa.struct(fields)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = portable_type(t.value_type)
        if item == t.value_type:
            return t
        return (pa.large_list if pa.types.is_large_list(t) else pa.list_)(t.value_field.with_type(item))
    if pa.types.is_map(t):
        key, item = portable_type(t.key_type), portable_type(t.item_type)
        if key == t.key_type and item == t.item_type:
            return t
        return pa.map_(t.key_field.with_type(key), t.item_field.with_type(item), t.keys_sorted)
    return t


def portable_column(arr):
    """An Arrow array (or chunked array) as `portable_type` of its type: a decimal256 cast to its text
    (exact), an interval as `interval_fields`, an empty struct with its null placeholder field; ``arr``
    itself when its type has none of them.

    Examples
    --------
    >>> import decimal
    >>> import pyarrow as pa
    >>> from kafkafmt.record import portable_column
    >>> portable_column(pa.array([decimal.Decimal("-1" + "0" * 44 + ".00001")], pa.decimal256(50, 5))).to_pylist()
    ['-100000000000000000000000000000000000000000000.00001']
    >>> portable_column(pa.array([pa.MonthDayNano([1, 2, 3_000_000])])).to_pylist()
    [{'months': 1, 'days': 2, 'nanoseconds': 3000000}]
    """
    pa = _pa()
    t = arr.type
    target = portable_type(t)
    if target == t:
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([portable_column(c) for c in arr.chunks], target)
    if pa.types.is_decimal256(t):
        return arr.cast(target)
    if t == pa.month_day_nano_interval():
        return interval_fields(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [portable_column(c) for c in arr.flatten()] if t.num_fields else [pa.nulls(len(arr), pa.string())]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    # lists and maps: offsets from 0 (a mask needs offsets of its own), the items converted
    offsets = arr.offsets.to_numpy(zero_copy_only=False)
    base, end = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
    offsets = pa.array(offsets - base)
    if pa.types.is_map(t):
        keys, items = arr.keys[base:end], arr.items[base:end]
        return pa.MapArray.from_arrays(offsets, portable_column(keys), portable_column(items), type=target,
                                       mask=mask)
    cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return cls.from_arrays(offsets, portable_column(arr.values[base:end]), type=target, mask=mask)


def portable_table(table):
    """A pyarrow Table (or RecordBatch, or Schema) with every column as `portable_column` makes it;
    ``table`` itself when no column needs it."""
    pa = _pa()
    if isinstance(table, pa.Schema):
        fields = [f.with_type(portable_type(f.type)) for f in table]
        return table if all(a.type == b.type for a, b in zip(fields, table)) else pa.schema(fields, table.metadata)
    own = table.schema
    schema = portable_table(own)
    if schema is own:
        return table
    columns = [portable_column(c) for c in table.columns]
    return type(table).from_arrays(columns, schema=schema)

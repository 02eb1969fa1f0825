"""Typed keys and values in a table: each Arrow type kafkafmt's decoders give, as Iceberg and Delta
store it (`table_type`, `table_column`), and what a new reader schema changes in a table built
from an older one (`compare_types`).

==========================================  ======================================  =======================
kafkafmt's Arrow type                       Iceberg                                 Delta
==========================================  ======================================  =======================
int8, int16, int32, uint8, uint16           int                                     long
int64, uint32                               long                                    long
uint64                                      decimal(20, 0)                          decimal(20, 0)
float16, float32                            float                                   double
float64                                     double                                  double
bool, string, binary, date                  as they are                             as they are
dictionary<int32, string> (enums)           string (the symbol)                     string
fixed_size_binary (Avro fixed)              binary                                  binary
decimal128(p, s) / decimal(p > 38, s)       decimal(p, s) / string (exact text)     alike
time32[ms], time64[us] (Avro time-*)        time (microseconds)                     long: microseconds
                                                                                    after midnight
timestamp[unit, tz=UTC]                     timestamptz (microseconds; nanoseconds  timestamp
                                            floored, as Spark reads a Timestamp)
timestamp[unit] (local-timestamp-*)         timestamp (alike)                       timestamp_ntz
duration[unit] (Protobuf Duration)          long: nanoseconds (null beyond about    long: nanoseconds
                                            +-292 years, what a long holds)
month_day_nano_interval (Avro duration)     struct<months, days, nanoseconds>       alike (longs)
null (an Avro null field)                   string (always null)                    string
struct<> (Protobuf Empty)                   struct<__dummy_field_in_empty_struct:   alike
                                            string>, always null (Parquet holds no
                                            struct without fields)
struct / list / map                         struct / list / map, converted inside, every field optional
==========================================  ======================================  =======================

Delta tables hold every integer as a long and every float as a double from the start: delta-rs
cannot widen a column (Delta's ``typeWidening`` feature is not among those it writes), and int to
long, float to double are the changes a registry's compatibility rules let a field make -- so a
Delta table never needs to. Iceberg widens in place (its schema evolution: int to long, float to
double, a decimal's precision), so an Iceberg table keeps the schema's own widths.

A new reader schema (a new version of the subject) may add fields -- anywhere, nested ones too --
and widen them; a table column is never dropped (a removed field stays, null from then on). Any
other change of a field's type (a narrowed type, a removed field's name used again with another
type, a record that became a string) is one no table can take: `compare_types` reports it as a
conflict, which the export turns into an error before it commits anything.
"""
from __future__ import annotations

from dataclasses import dataclass

# (an Avro duration -- a month_day_nano interval -- in a table: the struct of INTERVAL_FIELDS, as Spark's source
# and the Parquet export give it)
from kafkafmt.record import INTERVAL_FIELDS, interval_fields, placeholder_struct

__all__ = ["table_type", "table_column", "TypeChange", "compare_types", "type_text", "rename_fields"]



def _pa():
    import pyarrow as pa

    return pa


def _interval_struct(fmt):
    pa = _pa()
    return pa.struct([pa.field(n, table_type(getattr(pa, t)(), fmt), True) for n, t in INTERVAL_FIELDS])


def table_type(t, fmt):
    """The type a table of format ``fmt`` ("iceberg" or "delta") stores values of Arrow type ``t``
    as (the module's table); nested types converted inside, every nested field nullable.

    Parameters
    ----------
    t : pyarrow.DataType
    fmt : {"iceberg", "delta"}

    Returns
    -------
    pyarrow.DataType

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.lakehouse.types import table_type
    >>> t = pa.struct([("id", pa.int32()), ("kind", pa.dictionary(pa.int32(), pa.string())),
    ...                ("at", pa.timestamp("ms", tz="UTC"))])
    >>> table_type(t, "iceberg")
    StructType(struct<id: int32, kind: string, at: timestamp[us, tz=UTC]>)
    >>> table_type(t, "delta")
    StructType(struct<id: int64, kind: string, at: timestamp[us, tz=UTC]>)
    """
    pa = _pa()
    delta = fmt == "delta"
    if pa.types.is_dictionary(t):
        return table_type(t.value_type, fmt)
    if pa.types.is_struct(t):
        if t.num_fields == 0:               # (Parquet holds no struct without fields)
            return placeholder_struct()
        return pa.struct([pa.field(f.name, table_type(f.type, fmt), True) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or \
            pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(pa.field("element", table_type(t.value_type, fmt), True))
    if pa.types.is_map(t):
        return pa.map_(table_type(t.key_type, fmt), pa.field("value", table_type(t.item_type, fmt), True))
    if pa.types.is_boolean(t):
        return t
    if pa.types.is_integer(t):
        if t.bit_width == 64 and pa.types.is_unsigned_integer(t):
            return pa.decimal128(20, 0)
        if t.bit_width == 64 or delta or (t.bit_width == 32 and pa.types.is_unsigned_integer(t)):
            return pa.int64()
        return pa.int32()
    if pa.types.is_floating(t):
        return pa.float64() if delta or t.bit_width == 64 else pa.float32()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or t == pa.string_view():
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or t == pa.binary_view() or \
            pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_decimal(t):
        return pa.string() if t.precision > 38 else pa.decimal128(t.precision, t.scale)
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_time(t):
        return pa.int64() if delta else pa.time64("us")
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    if pa.types.is_duration(t):
        return pa.int64()
    if t == pa.month_day_nano_interval():
        return _interval_struct(fmt)
    if pa.types.is_null(t):
        return pa.string()
    from kafkafmt.errors import SchemaError

    raise SchemaError(f"a table cannot hold values of Arrow type {t}")


def _own(t):
    """Does converting ``t`` need more than Arrow's cast (intervals, nanosecond timestamps, times
    and durations as numbers, maps)?"""
    pa = _pa()
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_own(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _own(t.value_type)
    return pa.types.is_map(t) or t == pa.month_day_nano_interval() or pa.types.is_time(t) or \
        pa.types.is_duration(t) or (pa.types.is_timestamp(t) and t.unit == "ns") or \
        pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)


#: `table_column` joins the chunks of a chunked array before converting them when they hold fewer bytes than this on
#: average (the many small chunks of many small partitions written together) and all of them fewer than the other
_JOIN_BYTES_A_CHUNK = 1 << 20
_JOIN_MAX_BYTES = 256 << 20


def table_column(arr, fmt):
    """An array (or chunked array) of kafkafmt's as `table_type` of its type: Arrow's cast, and
    where it does not do what the table needs -- a month_day_nano interval as the struct of its
    fields, a nanosecond timestamp floored to its microsecond (Arrow's cast truncates toward
    zero), a time as microseconds after midnight (Delta), a duration as nanoseconds.

    Parameters
    ----------
    arr : pyarrow.Array or pyarrow.ChunkedArray
    fmt : {"iceberg", "delta"}

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.lakehouse.types import table_column
    >>> table_column(pa.array([-1, 1_500], pa.timestamp("ns")), "delta").to_pylist()
    [datetime.datetime(1969, 12, 31, 23, 59, 59, 999999), datetime.datetime(1970, 1, 1, 0, 0, 0, 1)]
    >>> table_column(pa.array([1_000], pa.time32("ms")), "delta").to_pylist()
    [1000000]
    """
    pa = _pa()
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks > 1 and arr.nbytes < min(_JOIN_BYTES_A_CHUNK * arr.num_chunks, _JOIN_MAX_BYTES):
            arr = arr.combine_chunks()        # (many small chunks: converted once, not a Python walk each)
        else:
            return pa.chunked_array([table_column(c, fmt) for c in arr.chunks], table_type(arr.type, fmt))
    t, target = arr.type, table_type(arr.type, fmt)
    if t == target:
        return arr
    if not _own(t):
        return arr.cast(target)
    import numpy as np

    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [table_column(c, fmt) for c in arr.flatten()] if t.num_fields else [pa.nulls(len(arr), pa.string())]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return table_column(arr.cast(pa.large_list(arr.type.value_field)), fmt)
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int32)
        base = int(offsets[0]) if len(offsets) else 0
        offsets = pa.array(offsets - base)          # (not a slice: a mask needs one)
        if pa.types.is_map(t):
            keys = arr.keys[base:base + offsets[-1].as_py()] if len(arr) else arr.keys
            items = arr.items[base:base + offsets[-1].as_py()] if len(arr) else arr.items
            return pa.MapArray.from_arrays(offsets, table_column(keys, fmt), table_column(items, fmt), type=target,
                                           mask=mask)
        values = arr.values[base:base + offsets[-1].as_py()] if len(arr) else arr.values
        return pa.ListArray.from_arrays(offsets, table_column(values, fmt), type=target, mask=mask)
    valid = None if mask is None else np.asarray(mask.to_numpy(zero_copy_only=False), bool)
    if t == pa.month_day_nano_interval():
        return interval_fields(arr, target)
    if pa.types.is_timestamp(t):                # nanoseconds: floored to the microsecond
        raw = np.frombuffer(arr.buffers()[1], np.int64, len(arr), arr.offset * 8)
        return pa.array(raw // 1000, pa.int64(), mask=valid).cast(target)
    if pa.types.is_time(t):
        us = arr.cast(pa.time64("us")) if t != pa.time64("ns") else arr
        if t == pa.time64("ns"):
            raw = np.frombuffer(arr.buffers()[1], np.int64, len(arr), arr.offset * 8)
            us = pa.array(raw // 1000, pa.int64(), mask=valid).cast(pa.time64("us"))
        return us.cast(target) if target != pa.int64() else us.cast(pa.int64())
    if pa.types.is_duration(t):                 # nanoseconds; beyond what a long holds: null
        raw = np.frombuffer(arr.buffers()[1], np.int64, len(arr), arr.offset * 8)
        per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}[t.unit]
        limit = np.iinfo(np.int64).max // per
        fits = np.abs(raw) <= limit
        ok = fits if valid is None else fits & valid
        return pa.array(np.where(fits, raw, 0) * per, pa.int64(), mask=~ok)
    return arr.cast(target)


def rename_fields(x, names, path=()):
    """A type, or an array of it, with struct fields renamed: ``names`` maps a field's path inside
    the column (struct fields by name, ``element`` of a list, ``value`` of a map, ending with the
    field's name) to its new name.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.lakehouse.types import rename_fields
    >>> t = pa.struct([("full_name", pa.string()), ("tags", pa.list_(pa.struct([("k", pa.int64())])))])
    >>> rename_fields(t, {("full_name",): "name", ("tags", "element", "k"): "key"})
    StructType(struct<name: string, tags: list<item: struct<key: int64>>>)
    >>> rename_fields(pa.array([{"full_name": "x", "tags": []}], t), {("full_name",): "name"}).to_pylist()
    [{'name': 'x', 'tags': []}]
    """
    pa = _pa()
    if isinstance(x, pa.ChunkedArray):
        return pa.chunked_array([rename_fields(c, names, path) for c in x.chunks], rename_fields(x.type, names, path))
    if isinstance(x, pa.DataType):
        t = x
        if pa.types.is_struct(t):
            return pa.struct([pa.field(names.get(path + (f.name,), f.name), rename_fields(f.type, names, path + (f.name,)),
                                       f.nullable, f.metadata) for f in t])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            item = pa.field(t.value_field.name, rename_fields(t.value_type, names, path + ("element",)),
                            t.value_field.nullable)
            return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
        if pa.types.is_map(t):
            return pa.map_(t.key_field, pa.field(t.item_field.name, rename_fields(t.item_type, names, path + ("value",)),
                                                 t.item_field.nullable))
        return t
    arr, t = x, x.type
    target = rename_fields(t, names, path)
    if target == t:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([rename_fields(c, names, path + (f.name,)) for f, c in zip(t, arr.flatten())],
                                          fields=list(target), mask=mask)
    import pyarrow.compute as pc

    offsets = pc.subtract(arr.offsets, arr.offsets[0]) if len(arr) else arr.offsets
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(offsets, arr.keys.slice(arr.offsets[0].as_py()) if len(arr) else arr.keys,
                                       rename_fields(arr.items.slice(arr.offsets[0].as_py()) if len(arr) else arr.items,
                                                     names, path + ("value",)), type=target, mask=mask)
    values = arr.values.slice(arr.offsets[0].as_py()) if len(arr) else arr.values
    cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
    return cls.from_arrays(offsets, rename_fields(values, names, path + ("element",)), type=target, mask=mask)


def type_text(t):
    """A short name of a table type for messages (``int``, ``long``, ``struct``, ``list<string>``)."""
    pa = _pa()
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{type_text(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{type_text(t.key_type)}, {type_text(t.item_type)}>"
    names = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long", pa.float32(): "float",
             pa.float64(): "double", pa.string(): "string", pa.binary(): "binary", pa.bool_(): "boolean",
             pa.date32(): "date"}
    return names.get(t, str(t))


@dataclass(frozen=True)
class TypeChange:
    """What a new type changes in a column: ``kind`` "added" (a field the table lacks), "widened"
    (int to long, float to double, a wider decimal: Iceberg only), "renamed" (a field the reader
    schema names anew, the table's name among its Avro ``aliases``: ``old`` and ``new`` its names),
    or "conflict" (a change no table takes); ``path`` the field's names from the column down
    (``("value", "tags")``; ``"element"``, ``"key"``, ``"value"`` inside lists and maps), ``old``
    and ``new`` its types (``old`` None for an added field).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.lakehouse.types import TypeChange
    >>> TypeChange("widened", ("value", "id"), pa.int32(), pa.int64()).text()
    'value.id: int -> long'
    """
    kind: str
    path: tuple
    old: object = None
    new: object = None

    @property
    def name(self):
        return ".".join(self.path)

    def text(self):
        if self.kind == "added":
            return f"{self.name}: added ({type_text(self.new)})"
        if self.kind == "renamed":
            return f"{self.name}: renamed to {self.new}"
        return f"{self.name}: {type_text(self.old)} -> {type_text(self.new)}"

    def as_json(self):
        if self.kind == "renamed":
            return {"kind": self.kind, "field": self.name, "to": self.new}
        out = {"kind": self.kind, "field": self.name, "type": type_text(self.new)}
        if self.old is not None:
            out["was"] = type_text(self.old)
        return out


def _widens(old, new, fmt):
    pa = _pa()
    if pa.types.is_integer(old) and pa.types.is_integer(new):
        return old.bit_width < new.bit_width
    if pa.types.is_floating(old) and pa.types.is_floating(new):
        return old.bit_width < new.bit_width
    if fmt == "iceberg" and pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return old.scale == new.scale and old.precision < new.precision
    return False


def compare_types(old, new, fmt, path=()):
    """The `TypeChange` list taking a column of table type ``old`` to table type ``new`` (both as
    `table_type` gives them for ``fmt``): fields ``new`` adds, types it widens (int to long,
    float to double; Iceberg also a decimal's precision), and conflicts. Fields only ``old`` has
    are no change (the table keeps them).

    Parameters
    ----------
    old, new : pyarrow.DataType
    fmt : {"iceberg", "delta"}
    path : tuple
        The column's name (and the fields above), for the changes' paths.

    Returns
    -------
    list of TypeChange

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.lakehouse.types import compare_types
    >>> old = pa.struct([("id", pa.int32()), ("code", pa.int32())])
    >>> new = pa.struct([("id", pa.int64()), ("code", pa.string()), ("tags", pa.list_(pa.string()))])
    >>> [c.text() for c in compare_types(old, new, "iceberg", ("value",))]
    ['value.id: int -> long', 'value.code: int -> string', 'value.tags: added (list<string>)']
    """
    pa = _pa()
    if old == new:
        return []
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        have = {f.name: f.type for f in old}
        out = []
        for f in new:
            if f.name in have:
                out += compare_types(have[f.name], f.type, fmt, path + (f.name,))
            else:
                out.append(TypeChange("added", path + (f.name,), None, f.type))
        return out
    if pa.types.is_list(old) and pa.types.is_list(new):
        return compare_types(old.value_type, new.value_type, fmt, path + ("element",))
    if pa.types.is_map(old) and pa.types.is_map(new):
        return compare_types(old.key_type, new.key_type, fmt, path + ("key",)) + \
            compare_types(old.item_type, new.item_type, fmt, path + ("value",))
    if _widens(old, new, fmt):
        return [TypeChange("widened", path, old, new)]
    return [TypeChange("conflict", path, old, new)]

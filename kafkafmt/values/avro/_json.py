"""Decoded Avro values as JSON text, the way ``kafka-avro-console-consumer`` prints them.

The console consumer writes each value with Avro's JSON encoding (Java's ``JsonEncoder``, compact):
a union value other than null is an object ``{"<branch type name>": value}`` (the full name of a
named type, else the primitive name); bytes and fixed are strings whose code points 0-255 are the
bytes; enums are their symbols; maps are objects; logical types print as their base type (a
timestamp as its long, a decimal as its unscaled bytes), since the console consumer converts no
logical type. kafkafmt renders the value as decoded, i.e. with the **reader** schema; the console
consumer prints with the writer schema: the two agree when the value was written with the reader
schema (fields a newer reader adds appear with their defaults). Numbers are JSON numbers (a float
prints as its shortest float32 decimal; exponent notation may differ from Java's).

    from kafkafmt.values.avro._json import avro_json
    avro_json(dec.values, dec.reader)     # ['{"id":1,"name":{"string":"x"}}', None, ...]
"""
from __future__ import annotations

import json
import struct

__all__ = ["avro_json", "to_json_data", "storage_values"]


def _storage_type(t):
    """The Arrow type with every temporal type replaced by its integer storage (a cast target)."""
    import pyarrow as pa
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _storage_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field, pa.field(t.item_field.name, _storage_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _storage_type(t.value_type), t.value_field.nullable))
    return t


def storage_values(values):
    """An Arrow array with its temporal types (timestamps, dates, times, at any depth) as their
    integers. (Not a plain cast: pyarrow 26 casts a struct holding a null-type child, or a list of
    nulls, to a broken array.)"""
    import pyarrow as pa
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    target = _storage_type(t)
    if target == t:
        return values
    mask = values.is_null() if values.null_count else None
    if pa.types.is_struct(t):
        children = [storage_values(values.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(values.offsets, storage_values(values.keys), storage_values(values.items),
                                       type=target, mask=mask)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(values.offsets, storage_values(values.values), type=target, mask=mask)
    return values.cast(target)


def _unscaled(d, scale, size=None):
    """A Decimal's unscaled value as big-endian two's complement (minimal, or `size` bytes)."""
    n = int(d.scaleb(scale).to_integral_value())
    if size is None:
        size = max(1, (n.bit_length() + 8) // 8)
    return n.to_bytes(size, "big", signed=True)


def to_json_data(v, t):
    """A decoded Python value (as pyarrow's to_pylist gives it, temporal types as integers) as the
    JSON data of Avro's JSON encoding for Avro type t."""
    if v is None:
        return None
    k = t.kind
    if k == "union":
        nonnull = [b for b in t.branches if b.kind != "null"]
        if len(nonnull) == 1:
            return {nonnull[0].type_name: to_json_data(v, nonnull[0])}
        for i, b in enumerate(nonnull):
            m = v.get(f"member{i}")
            if m is not None:
                return {b.type_name: to_json_data(m, b)}
        return None
    if k == "record":
        return {f.name: to_json_data(v.get(f.name), f.type) for f in t.fields}
    if k == "array":
        return [to_json_data(x, t.items) for x in v]
    if k == "map":
        return {key: to_json_data(x, t.values) for key, x in v}
    if k in ("bytes", "fixed"):
        if t.logical == "decimal" and t.precision <= 76:
            v = _unscaled(v, t.scale, t.size if k == "fixed" else None)
        elif t.logical == "duration":
            v = struct.pack("<III", v.months, v.days, v.nanoseconds // 1_000_000)
        return bytes(v).decode("latin-1")
    return v


def _float32(v):
    import numpy as np
    return float(str(np.float32(v))) if v == v and abs(v) != float("inf") else v


def avro_json(values, reader):
    """JSON texts (compact) of each value of a decoded Arrow array (None where the value is null).

    Parameters
    ----------
    values : pyarrow.Array or ChunkedArray
        ``DecodedColumn.values`` of an Avro format.
    reader : AvroType
        ``DecodedColumn.reader``.
    """
    out = []
    for v in storage_values(values).to_pylist():
        if v is None:
            out.append(None)
            continue
        data = to_json_data(v, reader)
        out.append(json.dumps(_floats(data, reader), ensure_ascii=False, separators=(",", ":")))
    return out


def _floats(data, t):
    """Float32 values at their shortest float32 decimal (as Java prints a float)."""
    if data is None:
        return None
    k = t.kind
    if k == "float":
        return _float32(data)
    if k == "union":
        (name, inner), = data.items()
        branch = next(b for b in t.branches if b.type_name == name)
        return {name: _floats(inner, branch)}
    if k == "record":
        return {f.name: _floats(data[f.name], f.type) for f in t.fields}
    if k == "array":
        return [_floats(x, t.items) for x in data]
    if k == "map":
        return {key: _floats(x, t.values) for key, x in data.items()}
    return data

"""The table a topic's history becomes: its columns, how it is partitioned, and each chunk of records
turned into rows of it.

Columns are those of Spark's Kafka source -- ``key, value, topic, partition, offset, timestamp,
timestampType, headers`` -- plus the batch metadata columns when asked for. ``timestamp`` is stored
in microseconds (Iceberg's and Delta's timestamp with time zone); the column types of a chunk come
from the chunk itself (`chunk_table`), so a typed ``value`` or ``key`` (a struct, once values are
decoded) is one more Arrow type here, and a chunk whose type has fields the table lacks is what
schema evolution (`added_fields`) finds.

Partitioning (``partition_by``): a list of fields, each a column kept as it is (identity) or a time
transform of ``timestamp`` -- ``"topic,day(timestamp)"`` by default, as users query Kafka data: by
topic and by day. Iceberg partitions by the transforms themselves (hidden partitioning); Delta has
no transforms, so a time transform becomes a partition column of its own, always in UTC:
``timestamp_hour`` a timestamp (the hour's start, as the values of Iceberg's hour transform are
hours), ``timestamp_day`` a date, ``timestamp_month`` text (``2024-05``), ``timestamp_year`` an
int. (Tables written before ``timestamp_hour`` was a timestamp keep their text column,
``2024-05-01-13``.) `partition_groups` splits a chunk into the rows of each partition, keeping
offset order.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["COMPARED_COLUMNS", "PartitionField", "DEFAULT_PARTITION_BY", "parse_partition_by", "kafka_schema", "chunk_table", "plain_type",
           "plain_schema",
           "added_fields", "merge_schema", "conform", "partition_groups", "transform_values", "delta_partition_value",
           "delta_partition_type", "format_partition_by"]

#: the columns compared with the source when a run looks for where it parts from the table (the ledger's
#: divergence check)
COMPARED_COLUMNS = ("offset", "timestamp", "key", "value")

#: the columns that can be partitioned by as they are, and the column time transforms apply to
IDENTITY_COLUMNS = ("topic", "partition", "timestampType")
TIME_COLUMN = "timestamp"
TIME_TRANSFORMS = ("year", "month", "day", "hour")
DEFAULT_PARTITION_BY = "topic,day(timestamp)"
_MS = {"hour": 3_600_000, "day": 86_400_000}


@dataclass(frozen=True)
class PartitionField:
    """One partition field: ``source`` column and ``transform`` ("identity", "year", "month",
    "day", "hour"); ``name`` is the Iceberg partition field's name and the Delta partition column's."""
    source: str
    transform: str = "identity"

    @property
    def name(self):
        return self.source if self.transform == "identity" else f"{self.source}_{self.transform}"

    def __str__(self):
        return self.source if self.transform == "identity" else f"{self.transform}({self.source})"


def parse_partition_by(spec):
    """``"topic,day(timestamp)"`` (or a list of such items, or PartitionFields) -> tuple of
    PartitionField; ``"none"`` or ``""`` -> () (unpartitioned)."""
    if spec is None:
        spec = DEFAULT_PARTITION_BY
    items = spec if isinstance(spec, (list, tuple)) else [s for s in re.split(r",(?![^(]*\))", spec)]
    out = []
    for item in items:
        if isinstance(item, PartitionField):
            out.append(item)
            continue
        text = str(item).strip()
        if text.lower() in ("", "none"):
            continue
        m = re.fullmatch(r"(\w+)\s*\(\s*(\w+)\s*\)", text)
        field = PartitionField(m.group(2), m.group(1).lower()) if m else PartitionField(text)
        if field.transform == "identity" and field.source not in IDENTITY_COLUMNS:
            raise ValueError(f"cannot partition by {text!r}: identity partitions are on {', '.join(IDENTITY_COLUMNS)}; "
                             f"time transforms ({', '.join(TIME_TRANSFORMS)}) on timestamp, e.g. day(timestamp)")
        if field.transform != "identity" and (field.transform not in TIME_TRANSFORMS or field.source != TIME_COLUMN):
            raise ValueError(f"cannot partition by {text!r}: the transforms are "
                             f"{', '.join(t + '(timestamp)' for t in TIME_TRANSFORMS)}")
        if field in out:
            raise ValueError(f"partition field {text!r} given twice")
        out.append(field)
    return tuple(out)


def format_partition_by(fields):
    return ",".join(map(str, fields)) or "none"


def kafka_schema(headers=True, batch_metadata=False):
    """The Arrow schema of a table of raw records (binary key and value)."""
    import pyarrow as pa

    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
              ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
    if headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    if batch_metadata:
        fields += [("producerId", pa.int64()), ("producerEpoch", pa.int16()), ("baseSequence", pa.int32()),
                   ("leaderEpoch", pa.int32()), ("codec", pa.string())]
    return pa.schema(fields)


def plain_type(t):
    """The stored type of an Arrow type: views and dictionaries as their plain type, timestamps in
    microseconds (UTC, or without a zone as they were), large lists/binaries as they are."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if t == pa.binary_view():
        return pa.binary()
    if t == pa.string_view():
        return pa.string()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain_type(f.type), True) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, plain_type(t.value_type), True))
    if pa.types.is_map(t):
        return pa.map_(plain_type(t.key_type), pa.field("value", plain_type(t.item_type), True))
    return t


def plain_schema(schema):
    """A table's Arrow schema in stored types (`plain_type`), large binaries, strings and lists as their
    32-bit-offset forms (what Iceberg's and Delta's readers hand back)."""
    import pyarrow as pa

    def conv(t):
        if pa.types.is_large_binary(t):
            return pa.binary()
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_list(t) or pa.types.is_list(t):
            return pa.list_(pa.field(t.value_field.name, conv(t.value_type), True))
        if pa.types.is_map(t):
            return pa.map_(conv(t.key_type), pa.field("value", conv(t.item_type), True))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, conv(f.type), True) for f in t])
        return plain_type(t)

    return pa.schema([pa.field(f.name, conv(f.type), True) for f in schema])


def chunk_table(recs, headers=True, batch_metadata=False, fmt=None):
    """A chunk of records (`kafkafmt.Records`) as an Arrow table in stored types (see `plain_type`),
    columns in the order of `kafka_schema`; typed keys and values (``recs.typed``) as a table of
    format ``fmt`` holds them (`kafkafmt.lakehouse.types.table_column`)."""
    import pyarrow as pa

    from kafkafmt.lakehouse.types import table_column

    t = recs.to_arrow(headers=headers, batch_metadata=batch_metadata)
    base = kafka_schema(headers, batch_metadata)
    typed = recs.typed
    names = [n for n in base.names if n in t.column_names] + [n for n in t.column_names if n not in base.names]
    cols, fields = [], []
    for name in names:
        col = t.column(name)
        if name in typed and fmt is not None:
            col = table_column(col, fmt)
            want = col.type
        else:
            want = base.field(name).type if name in base.names and name not in typed else plain_type(col.type)
        if col.type != want:
            col = col.cast(want)
        cols.append(col)
        fields.append(pa.field(name, want, True))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _struct_additions(old, new, path):
    import pyarrow as pa

    out = []
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        have = {f.name: f for f in old}
        for f in new:
            if f.name not in have:
                out.append(path + (f.name,))
            else:
                out += _struct_additions(have[f.name].type, f.type, path + (f.name,))
    elif (pa.types.is_list(old) or pa.types.is_large_list(old)) and (pa.types.is_list(new) or pa.types.is_large_list(new)):
        out += _struct_additions(old.value_type, new.value_type, path + ("element",))
    elif pa.types.is_map(old) and pa.types.is_map(new):
        out += _struct_additions(old.item_type, new.item_type, path + ("value",))
    return out


def added_fields(table_schema, chunk_schema):
    """Paths (tuples of names) of the fields of ``chunk_schema`` that ``table_schema`` lacks, top
    level and nested in structs: what schema evolution adds."""
    have = {f.name: f for f in table_schema}
    out = []
    for f in chunk_schema:
        if f.name not in have:
            out.append((f.name,))
        else:
            out += _struct_additions(have[f.name].type, f.type, (f.name,))
    return out


def _merge_type(old, new):
    import pyarrow as pa

    if pa.types.is_struct(old) and pa.types.is_struct(new):
        news = {f.name: f for f in new}
        fields = [pa.field(f.name, _merge_type(f.type, news[f.name].type) if f.name in news else f.type, True)
                  for f in old]
        fields += [pa.field(f.name, f.type, True) for f in new if f.name not in {g.name for g in old}]
        return pa.struct(fields)
    if pa.types.is_list(old) and pa.types.is_list(new):
        return pa.list_(pa.field(old.value_field.name, _merge_type(old.value_type, new.value_type), True))
    if pa.types.is_map(old) and pa.types.is_map(new):
        return pa.map_(old.key_type, pa.field("value", _merge_type(old.item_type, new.item_type), True))
    if not pa.types.is_nested(old) and not pa.types.is_nested(new) and old != new:
        return new                      # a widening (`kafkafmt.lakehouse.types.compare_types` allowed it)
    return old


def merge_schema(table_schema, chunk_schema):
    """The table's schema with the chunk's new fields added and its widened types (every table column
    kept, in order)."""
    import pyarrow as pa

    news = {f.name: f for f in chunk_schema}
    fields = [pa.field(f.name, _merge_type(f.type, news[f.name].type) if f.name in news else f.type, True)
              for f in table_schema]
    fields += [pa.field(f.name, f.type, True) for f in chunk_schema if f.name not in table_schema.names]
    return pa.schema(fields)


def _conform_array(arr, want):
    """``arr`` as type ``want``: structs field by field by name (fields it lacks null), lists by their
    items, everything else cast."""
    import pyarrow as pa

    if arr.type == want:
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_conform_array(c, want) for c in arr.chunks], type=want)
    if len(arr) and arr.null_count == len(arr):
        return pa.nulls(len(arr), want)     # (no value: of any type -- a topic kept as bytes beside typed ones)
    if pa.types.is_struct(want) and pa.types.is_struct(arr.type):
        names = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
        children = [_conform_array(arr.field(names[f.name]), f.type) if f.name in names else pa.nulls(len(arr), f.type)
                    for f in want]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(want), mask=mask)
    if pa.types.is_list(want) and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) \
            and pa.types.is_struct(want.value_type) and arr.type.value_type != want.value_type:
        arr = arr.cast(pa.list_(arr.type.value_field)) if pa.types.is_large_list(arr.type) else arr
        values = _conform_array(arr.values, want.value_type)
        offsets = arr.offsets
        out = pa.ListArray.from_arrays(offsets, values, type=want, mask=arr.is_null() if arr.null_count else None)
        return out
    if pa.types.is_map(want) and pa.types.is_map(arr.type) and pa.types.is_nested(want.item_type):
        import numpy as np

        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int32)
        lo, hi = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
        return pa.MapArray.from_arrays(pa.array(offsets - lo), _conform_array(arr.keys[lo:hi], want.key_type),
                                       _conform_array(arr.items[lo:hi], want.item_type), type=want,
                                       mask=arr.is_null() if arr.null_count else None)
    return arr.cast(want)


def conform(table, schema):
    """``table`` with exactly ``schema``'s columns, in its order and types: columns the chunk lacks
    are null (a column is never dropped from the table), types converted field by field."""
    import pyarrow as pa

    cols = []
    for f in schema:
        if f.name in table.column_names:
            cols.append(_conform_array(table.column(f.name), f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _time_values(ms, transform):
    """Iceberg's transform values of epoch milliseconds (int64): hours, days, months or years since
    1970-01-01 UTC."""
    if transform in _MS:
        return np.floor_divide(ms, _MS[transform])
    unit = "M" if transform == "month" else "Y"
    return ms.astype("datetime64[ms]").astype(f"datetime64[{unit}]").astype(np.int64)


def transform_values(recs, field):
    """The values of a time-transform partition ``field`` for each record of a chunk (anything
    with ``timestamp`` in epoch milliseconds): hours, days, months or years since 1970-01-01 UTC."""
    return _time_values(np.asarray(recs.timestamp, np.int64), field.transform)


def partition_groups(recs, fields):
    """[(key, rows)] of a chunk: ``key`` a tuple of partition values (Iceberg's representation: the
    identity value, or hours/days/months/years since the epoch) in ``fields`` order; ``rows`` a
    slice (the rows of each partition are contiguous, as when the chunk is one partition or its
    time goes on) or an int64 index array, in offset order."""
    n = len(recs)
    const, varying, names = [], [], {}
    for i, f in enumerate(fields):
        if f.source == "topic":
            topic = recs.topic
            if isinstance(topic, np.ndarray):       # several topics: codes, named back in the keys
                names[i], codes = np.unique(topic.astype(str), return_inverse=True)
                varying.append((i, codes.astype(np.int64).reshape(-1)))
            else:
                const.append((i, topic))
        elif f.source == "partition":
            part = recs.partition
            if isinstance(part, np.ndarray):
                varying.append((i, part.astype(np.int64)))
            else:
                const.append((i, None if part is None else int(part)))
        elif f.source == "timestampType":
            varying.append((i, np.asarray(recs.timestamp_type, np.int64)))
        else:
            varying.append((i, transform_values(recs, f)))
    key = [None] * len(fields)
    for i, v in const:
        key[i] = v
    varying = [(i, v) for i, v in varying if n]
    if not varying or all(v[0] == v[-1] and (v == v[0]).all() for _, v in varying):
        for i, v in varying:
            key[i] = str(names[i][v[0]]) if i in names else int(v[0])
        return [(tuple(key), slice(0, n))]
    order = np.lexsort([v for _, v in reversed(varying)])      # stable: offset order within a group
    cols = [v[order] for _, v in varying]
    change = np.zeros(n, bool)
    change[0] = True
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    in_order = bool((np.diff(order) == 1).all())       # records sorted by the keys already (time goes on): slices
    out = []
    for s, e in zip(starts, ends):
        k = list(key)
        for (i, _), c in zip(varying, cols):
            k[i] = str(names[i][c[s]]) if i in names else int(c[s])
        out.append((tuple(k), slice(int(s), int(e)) if in_order else order[s:e]))
    return out


def delta_partition_type(field):
    """The Arrow type of a Delta partition column."""
    import pyarrow as pa

    if field.transform == "identity":
        return {"topic": pa.string(), "partition": pa.int32(), "timestampType": pa.int32()}[field.source]
    return {"hour": pa.timestamp("us", tz="UTC"), "day": pa.date32(), "year": pa.int32()}.get(field.transform,
                                                                                             pa.string())


def delta_partition_value(field, value, column_type=None):
    """A partition value (as `partition_groups` gives it) as Delta's partitionValues string, for a
    column of the table's ``column_type`` (default: `delta_partition_type`'s): a timestamp as
    Delta writes one (``2024-05-01 13:00:00.000000``, UTC)."""
    import pyarrow as pa

    if value is None:
        return None
    if field.transform == "identity":
        return str(value)
    epoch = _dt.datetime(1970, 1, 1)
    if field.transform == "day":
        return (epoch + _dt.timedelta(days=value)).date().isoformat()
    if field.transform == "hour":
        hour = epoch + _dt.timedelta(hours=value)
        column_type = delta_partition_type(field) if column_type is None else column_type
        return hour.strftime("%Y-%m-%d %H:%M:%S.%f") if pa.types.is_timestamp(column_type) \
            else hour.strftime("%Y-%m-%d-%H")
    if field.transform == "month":
        return f"{1970 + value // 12:04d}-{value % 12 + 1:02d}"
    return str(1970 + value)

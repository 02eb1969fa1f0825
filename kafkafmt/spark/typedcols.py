"""Typed keys and values in Spark (``valueFormat`` / ``keyFormat``): the same decoding as the
library (`kafkafmt.values._typed`), with a schema known when the query is planned, each Arrow type
kafkafmt gives held as Spark holds it (`spark_arrow_type`, `spark_column`):

==========================================  ==================================================================
kafkafmt's Arrow type                       Spark type
==========================================  ==================================================================
bool, int8..int64, float32, float64         boolean, tinyint..bigint, float, double
string, binary (large ones too)             string, binary
fixed_size_binary (Avro fixed, uuid)        binary
dictionary<int32, string> (enums)           string (the symbol)
uint8 / uint16 / uint32 / uint64            smallint / int / bigint / decimal(20, 0)
float16                                     float
decimal128(p, s) / decimal256(p > 38, s)    decimal(p, s) / string (the exact decimal text: Spark stops at 38)
date32                                      date
time32[ms], time64[us|ns] (Avro time-*)     bigint: microseconds after midnight (nanoseconds dropped), as
                                            Delta holds a time (Spark's time(6) needs the preview setting
                                            spark.sql.timeType.enabled, off in a default session)
timestamp[unit, tz=UTC]                     timestamp (nanoseconds floored to the microsecond, as Spark's
                                            from_protobuf reads a Timestamp)
timestamp[unit] (local-timestamp-*)         timestamp_ntz (alike)
duration[unit] (Protobuf Duration)          interval day to second (nanoseconds dropped, toward zero)
month_day_nano_interval (Avro duration)     struct<months: int, days: int, nanoseconds: bigint>
null                                        void
struct<> (Protobuf Empty)                   struct<__dummy_field_in_empty_struct: string> (always null), as
                                            Spark's from_protobuf keeps an empty message
                                            (retain.empty.message.types): Parquet holds no empty struct
struct / list / map                         struct / array / map, converted inside, every nested field nullable
==========================================  ==================================================================

* On the driver, `plan_typed` opens the schema registry once, resolves each subscribed topic's
  reader schema to the schema id it names now and *pins* it (`kafkafmt.values._typed.TypedOptions.pin`)
  -- a Protobuf file of several messages, none named, with the messages the values of the subscribed
  partitions present then name (`kafkafmt.read.scan_named`: a stream's later values of another message
  are per-record errors) --
  and computes the Spark type of ``value`` / ``key``: several topics' types merged into one
  (`kafkafmt.values._typed.TypedOptions.merged_type`), converted to types Spark holds (`spark_arrow_type`: enums as
  strings, unsigned integers widened, fixed as binary).
* On the executors, `SparkTyped.open` reopens the registry once per process (the pinned ids keep
  the types the driver planned, whatever the registry learned since) and decodes each chunk.
* ``mode``: FAILFAST (from_avro's default) fails the task on a bad value, naming file, position
  and offset; PERMISSIVE makes it null with the reason in ``valueError`` / ``keyError``.
* Streams (``schemaEvolutionMode``): a subject whose latest version changes after the query
  started fails the next micro-batch (``restart``, the default, as Databricks' from_avro with a
  registry): restarting the query reads with the new version. ``none`` keeps the pinned schemas;
  values written with newer versions are resolved to them by Avro's rules.
"""
from __future__ import annotations

import dataclasses
import threading

from kafkafmt.record import interval_fields, interval_type, placeholder_struct
from kafkafmt.spark.options import OptionError
from kafkafmt.values import needs_schema, open_typed, reader_schema_of_text
from kafkafmt.values import conform

__all__ = ["SparkTyped", "plan_typed", "subscribed_topics", "decode_names", "spark_arrow_type", "spark_column",
           "SchemaChangedError"]

_OPENED = {}
_LOCK = threading.Lock()


class SchemaChangedError(RuntimeError):
    """A subject got a new latest version while a stream runs (schemaEvolutionMode=restart)."""


def _pa():
    import pyarrow as pa

    return pa


def spark_arrow_type(t):
    """``t`` as the Arrow type of a Spark type that holds its values (the table in the module
    docstring); nested types converted inside, every nested field nullable."""
    pa = _pa()
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            return placeholder_struct()
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), True) for f in t])
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field("element", spark_arrow_type(t.value_type), True))
    if pa.types.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type), pa.field("value", spark_arrow_type(t.item_type), True))
    if pa.types.is_unsigned_integer(t):
        return {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(t.bit_width, pa.decimal128(20, 0))
    if pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_decimal(t) and t.precision > 38:
        return pa.string()                  # Spark's decimals stop at 38 digits: the exact text
    if t == pa.month_day_nano_interval():
        return interval_type()
    # Spark keeps microseconds
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_time(t):
        return pa.int64()                   # microseconds after midnight
    if pa.types.is_duration(t):
        return pa.duration("us")
    return t


def _own(t):
    """Does converting ``t`` need more than Arrow's cast (intervals, nanosecond timestamps, times,
    empty structs)?"""
    pa = _pa()
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_own(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _own(t.value_type)
    if pa.types.is_map(t):
        return _own(t.key_type) or _own(t.item_type)
    return t == pa.month_day_nano_interval() or (pa.types.is_timestamp(t) and t.unit == "ns") or pa.types.is_time(t)


def spark_column(arr):
    """An Arrow array (or chunked array) of kafkafmt's as `spark_arrow_type` of its type: Arrow's
    cast, and where it does not do what Spark does -- a month_day_nano interval as the struct of
    its fields; a nanosecond timestamp floored to its microsecond (Spark's from_protobuf floors
    a Timestamp; Arrow's cast truncates toward zero)."""
    pa = _pa()
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([spark_column(c) for c in arr.chunks], spark_arrow_type(arr.type))
    t, target = arr.type, spark_arrow_type(arr.type)
    if t == target:
        return arr
    if not _own(t):
        return arr.cast(target, safe=False)
    import numpy as np

    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [spark_column(c) for c in arr.flatten()] if t.num_fields else [pa.nulls(len(arr), pa.string())]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = pa.array(arr.offsets.to_numpy(zero_copy_only=False).astype(np.int32))   # (not a slice: a mask
        if pa.types.is_map(t):                                                               # needs one)
            return pa.MapArray.from_arrays(offsets, spark_column(arr.keys), spark_column(arr.items), type=target,
                                           mask=mask)
        return pa.ListArray.from_arrays(offsets, spark_column(arr.values), type=target, mask=mask)
    if pa.types.is_time(t):               # (never negative: truncating nanoseconds is flooring them)
        return arr.cast(pa.time64("us"), safe=False).cast(pa.int64())
    if pa.types.is_timestamp(t):
        raw = np.frombuffer(arr.buffers()[1], np.int64, len(arr), arr.offset * 8)
        return pa.array(raw // 1000, pa.int64(), mask=None if mask is None else mask.to_numpy(False)).cast(target)
    return interval_fields(arr)


@dataclasses.dataclass(frozen=True)
class SparkTyped:
    """What executors need to decode as the driver planned (picklable; no open registry)."""
    value_format: object
    key_format: object
    schema_registry: object
    roots: tuple
    storage: tuple                 # storage options as sorted items
    value_schema: object
    key_schema: object
    value_errors: str
    pinned: tuple
    types: tuple                   # (side, Arrow type of the merged column) pairs
    untyped_topics: str = "error"
    shape: object = None           # how values are shaped (a ValueShape; None: the defaults)

    def open(self):
        """The `kafkafmt.values._typed.TypedOptions`, its registry opened once per process."""
        with _LOCK:
            typed = _OPENED.get(self)
            if typed is None:
                typed = dataclasses.replace(self._open(), pinned=self.pinned)
                _OPENED[self] = typed
            return typed

    def _open(self):
        return open_typed(value_format=self.value_format, key_format=self.key_format,
                          schema_registry=self.schema_registry, value_schema=reader_schema_of_text(self.value_schema),
                          key_schema=reader_schema_of_text(self.key_schema), value_errors=self.value_errors,
                          untyped_topics=self.untyped_topics, roots=list(self.roots),
                          storage_options=dict(self.storage) or None, **_shape(self.shape))

    def conform(self, table):
        """``table`` with its typed columns in the planned (merged) types."""
        for side, t in self.types:
            if side in table.column_names:
                i = table.column_names.index(side)
                col = table.column(side)
                table = table.set_column(i, side, conform(spark_column(col), t))
        return table

    def changed(self):
        """Messages for each pinned (side, topic) whose reader schema now resolves to another id
        (the registry replayed afresh)."""
        if not self.pinned:
            return []
        now = self._open()
        out = []
        for (side, topic), pinned in self.pinned:
            explicit = (self.key_schema if side == "key" else self.value_schema) is not None
            if explicit:
                continue
            latest = dict(now.pin([topic]).pinned).get((side, topic))
            if _id_of(latest) != _id_of(pinned):        # (the messages read are the query's)
                out.append(f"subject {topic}-{side} has a new latest schema (id {_id_of(latest)}) since the query "
                           f"started with id {_id_of(pinned)}")
        return out


def _shape(shape):
    """The shaping options (a ValueShape, or None: the defaults) as `open_typed` takes them."""
    return {} if shape is None else dataclasses.asdict(shape)


def _id_of(pinned):
    """The schema id of a pinned reader (an id, or a dict's items)."""
    return dict(pinned).get("id") if isinstance(pinned, tuple) else pinned


def _hashable(v):
    """A reader schema as a hashable value (dicts as JSON text, read back by `reader_schema_of_text`)."""
    import json

    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v


def decode_names(names, typed):
    """The columns to decode for a query's columns ``names``: its typed sides' raw columns
    instead of their schema id and error columns."""
    if typed is None:
        return list(names)
    from kafkafmt.record import TYPED_COLUMNS, UNTYPED_COLUMNS

    extra = {c for cols in TYPED_COLUMNS.values() for c in cols} | set(UNTYPED_COLUMNS.values())
    out = [n for n in names if n not in extra]
    return out + [side for side, _ in typed.types if side not in out]


def subscribed_topics(opts, found):
    """The topics a query reads: those it names (subscribe, assign), else those of the partitions
    found that its subscription selects."""
    if opts.subscribe is not None:
        return list(opts.subscribe)
    if opts.assign is not None:
        return list(opts.assign)
    return sorted({p.topic for p in found if opts.wants(p.topic, p.partition)})


def plan_typed(opts, topics):
    """The `SparkTyped` of a query (None without valueFormat/keyFormat) for ``topics`` (the
    subscribed topics found), with its Spark-ready Arrow types.

    Raises
    ------
    SchemaRegistryError, SchemaNotFoundError
        No registry, or a topic without a reader schema (the message names the topic).
    """
    if not (opts.value_format or opts.key_format):
        return None
    typed = open_typed(value_format=opts.value_format, key_format=opts.key_format,
                       schema_registry=opts.schema_registry, value_schema=opts.value_schema,
                       key_schema=opts.key_schema, value_errors="strict" if opts.mode == "FAILFAST" else "null",
                       untyped_topics=opts.untyped_topics, roots=list(opts.paths),
                       storage_options=opts.storage_options, **opts.shape_options())
    topics = sorted(set(topics))
    if typed.scanned(topics):
        # a Protobuf file of several messages, none named: the messages the values present now name
        from kafkafmt.read import scan_named
        from kafkafmt.spark.planning import partition_folders

        parts = [p for p in partition_folders(opts, []) if p.topic in topics and opts.wants(p.topic, p.partition)]
        typed = scan_named(typed, parts, opts.read_options())
    typed = typed.pin(topics)
    types = []
    for side, fmt, _ in typed.sides():
        if not topics and needs_schema(fmt):
            raise OptionError(f"{side}Format={fmt} takes each topic's schema, and no topic of the subscription is "
                              f"under {', '.join(opts.paths)}: name the topics with subscribe or assign")
        types.append((side, spark_arrow_type(typed.merged_type(side, topics))))
    return SparkTyped(opts.value_format, opts.key_format, opts.schema_registry, tuple(opts.paths),
                      tuple(sorted((opts.storage_options or {}).items())), _hashable(opts.value_schema),
                      _hashable(opts.key_schema), typed.value_errors, typed.pinned, tuple(types),
                      typed.untyped_topics, typed.shape)

"""The ``kafka-segments`` PySpark data source (Python Data Source API, pyspark >= 4.1).

Schema: Spark's Kafka source -- key binary, value binary, topic string, partition int,
offset long, timestamp timestamp, timestampType int -- plus ``headers`` with includeHeaders and
producerId, producerEpoch, baseSequence, leaderEpoch, codec with includeBatchMetadata.
`read()` yields Arrow record batches built by kafkafmt's decoder: no Python object per row.
"""
from __future__ import annotations

import datetime as _dt

from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                    InputPartition, LessThan, LessThanOrEqual, StringStartsWith)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, ShortType, StringType, StructField,
                               StructType, TimestampType)

from kafkafmt.spark import options as _options
from kafkafmt.spark.planning import Bounds, plan

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
METADATA_FIELDS = [StructField("producerId", LongType()), StructField("producerEpoch", ShortType()),
                   StructField("baseSequence", IntegerType()), StructField("leaderEpoch", IntegerType()),
                   StructField("codec", StringType())]


def kafka_schema(include_headers=False, batch_metadata=False) -> StructType:
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    if batch_metadata:
        fields += METADATA_FIELDS
    return StructType(fields)


def _micros(value):
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None


def bounds_from_filters(filters):
    """Bounds that the pushed filters imply, and the filters Spark must still evaluate."""
    b = Bounds()
    rest = []
    for f in filters:
        col = f.attribute[0] if len(f.attribute) == 1 else None
        value = getattr(f, "value", None)
        handled = False
        if col == "offset" and isinstance(value, int) and not isinstance(value, bool):
            if isinstance(f, EqualTo):
                b.offset_lo = max(b.offset_lo or f.value, f.value)
                b.offset_hi = min(b.offset_hi if b.offset_hi is not None else f.value + 1, f.value + 1)
                handled = True
            elif isinstance(f, GreaterThan):
                b.offset_lo = max(b.offset_lo or 0, f.value + 1)
                handled = True
            elif isinstance(f, GreaterThanOrEqual):
                b.offset_lo = max(b.offset_lo or 0, f.value)
                handled = True
            elif isinstance(f, LessThan):
                b.offset_hi = f.value if b.offset_hi is None else min(b.offset_hi, f.value)
                handled = True
            elif isinstance(f, LessThanOrEqual):
                b.offset_hi = f.value + 1 if b.offset_hi is None else min(b.offset_hi, f.value + 1)
                handled = True
        elif col == "partition":
            if isinstance(f, EqualTo):
                b.partitions = {f.value} if b.partitions is None else b.partitions & {f.value}
                handled = True
            elif isinstance(f, In):
                vals = set(f.value)
                b.partitions = vals if b.partitions is None else b.partitions & vals
                handled = True
        elif col == "topic":
            if isinstance(f, EqualTo):
                b.topics = {f.value} if b.topics is None else b.topics & {f.value}
                handled = True
            elif isinstance(f, In):
                vals = set(f.value)
                b.topics = vals if b.topics is None else b.topics & vals
                handled = True
            elif isinstance(f, StringStartsWith):
                b.topic_prefix = f.value
                handled = True
        elif col == "timestamp" and isinstance(value, _dt.datetime):
            us = _micros(f.value)
            if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
                # prunes segments whose largest timestamp is below it; rows are still filtered
                # exactly by Spark (timestamps within a partition are not monotonic)
                lo = us // 1000
                b.ts_lo = lo if b.ts_lo is None else max(b.ts_lo, lo)
        if not handled:
            rest.append(f)
    if (b.offset_lo is not None and b.offset_hi is not None and b.offset_hi <= b.offset_lo) or \
            (b.partitions is not None and not b.partitions) or (b.topics is not None and not b.topics):
        b.empty = True
    return b, rest


class SegmentsPartition(InputPartition):
    def __init__(self, index, tasks):
        super().__init__(index)
        self.tasks = tasks


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, schema, opts):
        self.schema = schema
        self.opts = opts
        self.bounds = Bounds()
        self.report = []

    def pushFilters(self, filters):
        if self.opts.decode:      # an internal topic's table: its columns are not the record's
            yield from filters
            return
        self.bounds, rest = bounds_from_filters(filters)
        yield from rest

    def partitions(self):
        groups = plan(self.opts, self.bounds, self.report)
        if not groups:
            return [SegmentsPartition(0, [])]
        return [SegmentsPartition(i, g) for i, g in enumerate(groups)]

    def read(self, partition):
        from kafkafmt.spark.read import read_tasks

        yield from read_tasks(partition.tasks, self.schema, self.opts)


class KafkaSegmentsDataSource(DataSource):
    """spark.read.format("kafka-segments").load("/path/to/kafka-logs")"""

    @classmethod
    def name(cls):
        return "kafka-segments"

    def _opts(self):
        try:
            return _options.parse(self.options)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None

    def schema(self):
        # Spark calls schema() for spark.read and spark.readStream alike: options of either kind pass
        try:
            o = _options.parse(self.options, stream=None)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None
        if o.decode:
            from pyspark.sql.pandas.types import from_arrow_schema

            from kafkafmt.internal import schema_of

            return from_arrow_schema(schema_of(o.decode))
        return kafka_schema(o.include_headers, o.batch_metadata)

    def reader(self, schema):
        return KafkaSegmentsReader(schema, self._opts())

    def streamReader(self, schema):
        """spark.readStream.format("kafka-segments"): see kafkafmt.spark.stream."""
        from kafkafmt.spark.stream import KafkaSegmentsStreamReader

        try:
            opts = _options.parse(self.options, stream=True)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None
        return KafkaSegmentsStreamReader(schema, opts)

"""The ``kafka-segments`` PySpark data source (Python Data Source API, pyspark >= 4.1).

Schema: Spark's Kafka source -- key binary, value binary, topic string, partition int,
offset long, timestamp timestamp, timestampType int -- plus ``headers`` with includeHeaders and
producerId, producerEpoch, baseSequence, leaderEpoch, codec with includeBatchMetadata.
`read()` yields Arrow record batches built by kafkafmt's decoder: no Python object per row.
"""
from __future__ import annotations

import datetime as _dt

from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualNullSafe, EqualTo, GreaterThan,
                                    GreaterThanOrEqual, In, InputPartition, LessThan, LessThanOrEqual, StringStartsWith)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, ShortType, StringType, StructField,
                               StructType, TimestampType)

from kafkafmt.record import LOG_DIR_COLUMN, TYPED_COLUMNS, UNTYPED_COLUMNS
from kafkafmt.spark import options as _options
from kafkafmt.spark.planning import Bounds, plan

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
METADATA_FIELDS = [StructField("producerId", LongType()), StructField("producerEpoch", ShortType()),
                   StructField("baseSequence", IntegerType()), StructField("leaderEpoch", IntegerType()),
                   StructField("codec", StringType())]


def kafka_schema(include_headers=False, batch_metadata=False, include_log_dir=False, typed=None) -> StructType:
    """Spark's Kafka-source schema, with the columns the options add.

    Parameters
    ----------
    include_headers : bool
        Add ``headers`` (``includeHeaders``): array<struct<key: string, value: binary>>.
    batch_metadata : bool
        Add producerId, producerEpoch, baseSequence, leaderEpoch, codec (``includeBatchMetadata``).
    include_log_dir : bool
        Add ``logDir``, the log dir each record was read from (``includeLogDir``).
    typed : kafkafmt.spark.typedcols.SparkTyped, optional
        Typed key / value and their schema id and error (and, with ``untypedTopics=bytes``, the
        bytes of those kept as bytes).

    Returns
    -------
    pyspark.sql.types.StructType

    Examples
    --------
    >>> from kafkafmt.spark import kafka_schema
    >>> kafka_schema().simpleString()
    'struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,timestampType:int>'
    >>> kafka_schema(include_headers=True, batch_metadata=True, include_log_dir=True).fieldNames()[7:]
    ['headers', 'producerId', 'producerEpoch', 'baseSequence', 'leaderEpoch', 'codec', 'logDir']
    """
    types = {"key": BinaryType(), "value": BinaryType()}
    sides = [] if typed is None else [side for side, _ in typed.types]
    if typed is not None:
        from pyspark.sql.pandas.types import from_arrow_type

        for side, t in typed.types:
            types[side] = from_arrow_type(t)
    fields = [StructField("key", types["key"]), StructField("value", types["value"]),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    for side in ("key", "value"):
        if side in sides:
            fields += [StructField(TYPED_COLUMNS[side][0], IntegerType()), StructField(TYPED_COLUMNS[side][1],
                                                                                      StringType())]
            if typed.untyped_topics == "bytes":
                fields.append(StructField(UNTYPED_COLUMNS[side], BinaryType()))
    if batch_metadata:
        fields += METADATA_FIELDS
    if include_log_dir:
        fields.append(StructField(LOG_DIR_COLUMN, StringType()))
    return StructType(fields)


def _micros(value):
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None


def _int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _intersect(current, values):
    values = set(values)
    return values if current is None else current & values


def _offset_bound(b, f):
    """Offset bounds from one filter: True when they express it exactly, False when they only
    narrow the read (Spark evaluates the filter), None when the filter says nothing usable."""
    v = getattr(f, "value", None)
    if isinstance(f, (EqualTo, EqualNullSafe)) and _int(v):
        lo, hi, exact = v, v + 1, True
    elif isinstance(f, GreaterThan) and _int(v):
        lo, hi, exact = v + 1, None, True
    elif isinstance(f, GreaterThanOrEqual) and _int(v):
        lo, hi, exact = v, None, True
    elif isinstance(f, LessThan) and _int(v):
        lo, hi, exact = None, v, True
    elif isinstance(f, LessThanOrEqual) and _int(v):
        lo, hi, exact = None, v + 1, True
    elif isinstance(f, In) and v and all(_int(x) for x in v):
        lo, hi, exact = min(v), max(v) + 1, False       # the range around the listed offsets
    else:
        return None
    if lo is not None:
        b.offset_lo = lo if b.offset_lo is None else max(b.offset_lo, lo)
    if hi is not None:
        b.offset_hi = hi if b.offset_hi is None else min(b.offset_hi, hi)
    return exact


def _name_bound(b, f, col):
    """Topic or partition sets from one filter (exact), or None."""
    v = getattr(f, "value", None)
    if isinstance(f, (EqualTo, EqualNullSafe)) and v is not None:
        values = (v,)
    elif isinstance(f, In) and all(x is not None for x in v):
        values = v
    elif col == "topic" and isinstance(f, StringStartsWith) and isinstance(v, str):
        b.topic_prefix = v if b.topic_prefix is None or v.startswith(b.topic_prefix) else \
            (b.topic_prefix if b.topic_prefix.startswith(v) else None)
        if b.topic_prefix is None:      # two prefixes neither of which extends the other
            b.empty = True
        return True
    else:
        return None
    if col == "topic":
        b.topics = _intersect(b.topics, [x for x in values if isinstance(x, str)])
    else:
        b.partitions = _intersect(b.partitions, [x for x in values if _int(x)])
    return True


def bounds_from_filters(filters):
    """Bounds that the pushed filters imply, and the filters Spark must still evaluate.

    A filter is pushed (left out of the returned list) only when the bounds express it exactly:
    offset comparisons, topic and partition equality, IN and topic prefixes. Others may still
    narrow what is read -- a timestamp lower bound prunes rolled segments, an offset IN the range
    around its values -- and are returned for Spark to evaluate on every row. Filters of any other
    kind (NOT, IS NULL, string suffixes, comparisons on other columns...) are returned untouched."""
    b = Bounds()
    rest = []
    for f in filters:
        attr = getattr(f, "attribute", None)
        col = attr[0] if isinstance(attr, tuple) and len(attr) == 1 else None
        handled = None
        if col == "offset":
            handled = _offset_bound(b, f)
        elif col in ("topic", "partition"):
            handled = _name_bound(b, f, col)
        elif col == "timestamp" and isinstance(f, (GreaterThan, GreaterThanOrEqual)) and \
                isinstance(getattr(f, "value", None), _dt.datetime):
            # prunes segments whose largest timestamp is below it; the rows are filtered by Spark
            # (timestamps within a partition are not monotonic)
            lo = _micros(f.value) // 1000
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
    """A batch read: the tasks the options select (Spark evaluates every filter itself)."""

    def __init__(self, schema, opts):
        self.schema = schema
        self.opts = opts
        self.bounds = Bounds()

    def partitions(self):
        # (what planning reports stays here: the reader goes to every task with the read function)
        groups = plan(self.opts, self.bounds, [])
        if not groups:
            return [SegmentsPartition(0, [])]
        return [SegmentsPartition(i, g) for i, g in enumerate(groups)]

    def read(self, partition):
        from kafkafmt.spark.read import read_tasks

        yield from read_tasks(partition.tasks, self.schema, self.opts)


class PushdownReader(KafkaSegmentsReader):
    """A batch read that also prunes by the filters Spark pushes (`bounds_from_filters`).

    Only for a Spark whose planner keeps what one query pushed to that query's scan: Spark 4.1 to
    4.3 keep the read planned after a pushdown on the relation itself, and a later query of the
    same DataFrame without filters reuses it (rows of the first query only). `kafkafmt.spark.register`
    decides which reader a session gets."""

    def pushFilters(self, filters):
        if self.opts.decode:      # an internal topic's table: its columns are not the record's
            yield from filters
            return
        self.bounds, rest = bounds_from_filters(filters)
        yield from rest


class KafkaSegmentsDataSource(DataSource):
    """spark.read.format("kafka-segments").load("/path/to/kafka-logs")

    The data source `kafkafmt.spark.register` registers, for ``spark.read`` and
    ``spark.readStream``; the options are Spark's Kafka source's (`kafkafmt.spark.options`).
    ``filter_pushdown``: whether readers take Spark's pushed filters (`PushdownReader`); False
    here, set by `kafkafmt.spark.register` on a class of its own when the session's Spark scopes
    pushdown to one scan.

    Parameters
    ----------
    options : dict
        The query's options (Spark passes them: ``.option(...)`` and the ``path`` given to
        ``load``).

    Examples
    --------
    >>> from kafkafmt.sample import sample_dir
    >>> from kafkafmt.spark import KafkaSegmentsDataSource
    >>> KafkaSegmentsDataSource.name()
    'kafka-segments'
    >>> KafkaSegmentsDataSource({"path": sample_dir(), "includeHeaders": "true"}).schema().fieldNames()
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers']

    Avro values typed with the schemas of the sample's ``_schemas`` topic; PERMISSIVE mode makes a
    bad value null with its reason:

    >>> df = (spark.read.format("kafka-segments").option("subscribe", "shipments")
    ...       .option("valueFormat", "avro").option("mode", "PERMISSIVE").load(sample_dir()))
    >>> df.select("offset", "value.carrier", "valueSchemaId").show(3)
    +------+-------+-------------+
    |offset|carrier|valueSchemaId|
    +------+-------+-------------+
    |     0|  FEDEX|            1|
    |     1|    UPS|            1|
    |     2|  FEDEX|            1|
    +------+-------+-------------+
    only showing top 3 rows
    >>> df.where("valueError is not null").select("offset", "valueError").show(truncate=60)
    +------+------------------------------------------------------------+
    |offset|                                                  valueError|
    +------+------------------------------------------------------------+
    |  1234|no magic byte: the value starts with 0x7b, not 0x00 (not ...|
    +------+------------------------------------------------------------+
    """

    filter_pushdown = False

    @classmethod
    def name(cls):
        """The format's name in ``spark.read.format(...)``: ``"kafka-segments"``."""
        return "kafka-segments"

    def _opts(self):
        try:
            return _options.parse(self.options)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None

    def schema(self):
        """The DataFrame's schema for the query's options (a pyspark ``StructType``): Spark's Kafka
        columns, typed keys and values, or an internal topic's table."""
        # Spark calls schema() for spark.read and spark.readStream alike: options of either kind pass
        try:
            o = _options.parse(self.options, stream=None)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None
        if o.decode:
            from pyspark.sql.pandas.types import from_arrow_schema

            from kafkafmt.internal import schema_of

            return from_arrow_schema(schema_of(o.decode))
        return kafka_schema(o.include_headers, o.batch_metadata, o.include_log_dir, typed_plan(o))

    def reader(self, schema):
        """The batch reader of ``spark.read`` (Spark calls it with the schema): `KafkaSegmentsReader`, or
        `PushdownReader` where Spark's filters are pushed to it."""
        opts = self._opts()
        opts.typed = checked_typed_plan(opts, schema)
        return (PushdownReader if self.filter_pushdown else KafkaSegmentsReader)(schema, opts)

    def streamReader(self, schema):
        """spark.readStream.format("kafka-segments"): see kafkafmt.spark.stream."""
        from kafkafmt.spark.stream import KafkaSegmentsStreamReader

        try:
            opts = _options.parse(self.options, stream=True)
        except _options.OptionError as exc:
            raise ValueError(f"kafka-segments: {exc}") from None
        opts.typed = checked_typed_plan(opts, schema)
        return KafkaSegmentsStreamReader(schema, opts)


def typed_plan(opts):
    """The typed-value plan of a query (`kafkafmt.spark.typedcols.plan_typed`), or None."""
    if not (opts.value_format or opts.key_format):
        return None
    from kafkafmt.spark.planning import partition_folders
    from kafkafmt.spark.typedcols import plan_typed, subscribed_topics

    found = [] if opts.subscribe is not None or opts.assign is not None else partition_folders(opts, [])
    try:
        return plan_typed(opts, subscribed_topics(opts, found))
    except _options.OptionError as exc:
        raise ValueError(f"kafka-segments: {exc}") from None


def checked_typed_plan(opts, schema):
    """The typed plan again (for the reader), checked against the schema Spark planned with."""
    typed = typed_plan(opts)
    if typed is not None:
        names = [f.name for f in schema.fields]
        planned = kafka_schema(typed=typed)
        for side, _ in typed.types:
            if side in names and schema[side].dataType != planned[side].dataType:
                raise ValueError(f"kafka-segments: the schema of {side} changed while the query was planned (the "
                                 f"schema registry learned a new version): run the query again")
    return typed

"""Task execution on Spark workers: decode a segment byte range into Arrow record batches with
exactly the Arrow schema Spark expects for the query's schema."""
from __future__ import annotations

import numpy as np
from pyspark.sql.pandas.types import to_arrow_schema

from kafkafmt.errors import KafkafmtError, ValueDecodeError
from kafkafmt.log import Unit, read_task, read_units
from kafkafmt.record import BATCH_METADATA_COLUMNS, LOG_DIR_COLUMN, cast_table
from kafkafmt.spark.planning import TimeBound
from kafkafmt.spark.typedcols import decode_names
from kafkafmt.values import decode_values



def read_tasks(tasks, schema, opts):
    """Yield pyarrow.RecordBatch objects for the tasks of one input partition: tasks that read small
    whole segments are read together (`kafkafmt.log.read_units`: one buffer, one scan, one kernel pass
    for many Kafka partitions, no per-partition conversion), the others one by one, in task order;
    then the partitions read with timestamp options (`read_time_bound`)."""
    target = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    read = opts.read_options()         # one thread per task: Spark already runs tasks in parallel
    typed = opts.typed.open() if opts.typed is not None else None
    options = read.decode_options(None if opts.decode else decode_names(names, opts.typed))
    table_of = None
    if opts.decode:       # an internal topic as a table (kafkafmt.internal)
        from kafkafmt.internal import internal_table

        table_of = internal_table(opts.decode).build
    errors = read.errors
    convert = _Convert(names, target, opts, typed, table_of)
    timed = [t for t in tasks if isinstance(t, TimeBound)]
    tasks = [t for t in tasks if not isinstance(t, TimeBound)]
    topics = {t.topic for t in tasks} | {tb.part.topic for tb in timed}
    if table_of is not None or (typed is not None and not all(map(typed.types_known, topics))):
        for t in tasks + [x for tb in timed for x in tb.plan([])]:
            yield from _read_one(t, options, errors, read.max_bytes, convert)
        return
    # a task may start inside a partition: the batch before it is not known here (chain=False)
    units = [Unit([t], t.topic, t.partition, t.log_dir) for t in tasks]
    for kind, x, idx in read_units(units, options, chain=False, max_bytes=read.max_bytes):
        if kind == "records":
            if len(x):
                yield from _bulk(x, convert, lambda idx=idx: (
                    b for i in idx for b in _read_one(tasks[i], options, errors, read.max_bytes, convert)))
        else:
            yield from _read_one(tasks[x], options, errors, read.max_bytes, convert)
    yield from read_time_bound(timed, options, errors, read.max_bytes, convert)


#: a partition read with timestamp options of at most this many bytes is read whole and cut by its records'
#: timestamps (cheaper than seeking through its time index); a larger one seeks
TIME_SCAN_BYTES = 1 << 20


def read_time_bound(timed, options, errors, max_bytes, convert):
    """The records of partitions read with timestamp options (`kafkafmt.spark.planning.TimeBound`): small
    ones read together and cut by their records' timestamps (`TimeBound.keep`), the others -- and any the
    bulk read gives back -- planned through their time indexes (`TimeBound.plan`) and read task by task."""
    small = [tb for tb in timed if tb.isolation == "read_uncommitted" and tb.size <= TIME_SCAN_BYTES]
    chosen = {id(tb) for tb in small}
    for tb in timed:
        if id(tb) not in chosen:
            for t in tb.plan([]):
                yield from _read_one(t, options, errors, max_bytes, convert)
    units = [Unit(tb.tasks, *tb.key) for tb in small]
    for kind, x, idx in read_units(units, options, chain=False, max_bytes=max_bytes):
        if kind == "records":
            x = x.filter(_kept(x, {small[i].key: small[i] for i in idx}))
            if len(x):
                yield from _bulk(x, convert, lambda idx=idx: (
                    b for i in idx for t in small[i].plan([]) for b in _read_one(t, options, errors, max_bytes,
                                                                                 convert)))
        else:
            for t in small[x].plan([]):
                yield from _read_one(t, options, errors, max_bytes, convert)


def _kept(recs, bound):
    """Which records of a bulk read (partitions one after the other, each in log order) their partition's
    `TimeBound` keeps (``bound``: by (topic, partition, log dir))."""
    n = len(recs)
    keep = np.zeros(n, bool)
    if not n:
        return keep
    labels = (recs.topic, recs.partition, recs.log_dir)     # one value for all records, or one per record
    change = np.zeros(n, bool)
    change[0] = True
    for col in labels:
        if isinstance(col, np.ndarray):
            change[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(change).tolist()
    for a, b in zip(starts, starts[1:] + [n]):
        topic, partition, log_dir = (col[a] if isinstance(col, np.ndarray) else col for col in labels)
        keep[a:b] = bound[(topic, int(partition), log_dir)].keep(recs.offset[a:b], recs.timestamp[a:b])
    return keep


class _Convert:
    """Records -> Arrow record batches of exactly the schema Spark planned."""

    def __init__(self, names, target, opts, typed, table_of):
        self.names, self.target, self.opts, self.typed, self.table_of = names, target, opts, typed, table_of
        want = set(names)
        self.headers = "headers" in want
        self.meta = any(n in want for n in BATCH_METADATA_COLUMNS)
        self.log_dir = LOG_DIR_COLUMN in want

    def __call__(self, recs):
        if self.table_of is not None:
            table = self.table_of(recs).select(self.names)
        else:
            if self.typed is not None:
                recs = decode_values(recs, self.typed)
            table = recs.to_arrow(headers=self.headers, batch_metadata=self.meta, log_dir=self.log_dir)
            if self.typed is not None:
                table = self.opts.typed.conform(table)
            table = table.select(self.names)
        yield from cast_table(table, self.target).to_batches()


def _bulk(recs, convert, one_by_one):
    """The record batches of a piece read in bulk; typed values are typed for the whole piece at once (a value's
    typed row is its own: `kafkafmt.values.TypedOptions.types_known`), and where that raises anything -- a bad
    value read FAILFAST, topics whose types do not merge -- the piece's tasks are read one by one as before
    (``one_by_one()``: their batches), each saying what its own read says."""
    if convert.typed is None:
        yield from convert(recs)
        return
    try:
        batches = list(convert(recs))
    except Exception:   # noqa: BLE001 - each task's own read raises (or reads) what it would
        batches = None
    yield from one_by_one() if batches is None else batches


def _read_one(t, options, errors, max_bytes, convert):
    """One task read on its own (`read_task`), chunk by chunk."""
    # a task may start inside a partition: the batch before it is not known here
    chunks = read_task(t, [], options=options, errors=errors, max_bytes=max_bytes)
    try:
        for recs, _ in chunks:
            if not len(recs):
                continue
            yield from convert(recs.replace(topic=t.topic, partition=t.partition, log_dir=t.log_dir))
    except ValueDecodeError as exc:
        raise ValueDecodeError(f"{exc.reason} -- set mode=PERMISSIVE to read bad values as null with the reason "
                               f"in valueError / keyError", file=exc.file, position=exc.position,
                               offset=exc.offset) from None
    except KafkafmtError as exc:
        if errors == "salvage":
            raise
        raise KafkafmtError(f"{exc} -- set failOnDataLoss=false to skip corrupt batches and keep reading") from exc

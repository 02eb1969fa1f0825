"""Task execution on Spark workers: decode a segment byte range into Arrow record batches with
exactly the Arrow schema Spark expects for the query's schema."""
from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_schema

from kafkafmt.errors import KafkafmtError, ValueDecodeError
from kafkafmt.log import Unit, read_task, read_units
from kafkafmt.record import BATCH_METADATA_COLUMNS, LOG_DIR_COLUMN
from kafkafmt.spark.typedcols import decode_names
from kafkafmt.values import decode_values



def read_tasks(tasks, schema, opts):
    """Yield pyarrow.RecordBatch objects for the tasks of one input partition: tasks that read small
    whole segments are read together (`kafkafmt.log.read_units`: one buffer, one scan, one kernel pass
    for many Kafka partitions, no per-partition conversion), the others one by one, in task order."""
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
    if table_of is not None or typed is not None:
        for t in tasks:
            yield from _read_one(t, options, errors, read.max_bytes, convert)
        return
    # a task may start inside a partition: the batch before it is not known here (chain=False)
    units = [Unit([t], t.topic, t.partition, t.log_dir) for t in tasks]
    for kind, x, _ in read_units(units, options, chain=False, max_bytes=read.max_bytes):
        if kind == "records":
            if len(x):
                yield from convert(x)
        else:
            yield from _read_one(tasks[x], options, errors, read.max_bytes, convert)


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
        yield from table.cast(self.target).to_batches()


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

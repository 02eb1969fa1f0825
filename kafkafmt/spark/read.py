"""Task execution on Spark workers: decode a segment byte range into Arrow record batches with
exactly the Arrow schema Spark expects for the query's schema."""
from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_schema

from kafkafmt.errors import KafkafmtError, ValueDecodeError
from kafkafmt.log import read_task
from kafkafmt.record import BATCH_METADATA_COLUMNS, LOG_DIR_COLUMN
from kafkafmt.spark.typedcols import decode_names
from kafkafmt.values import decode_values



def read_tasks(tasks, schema, opts):
    """Yield pyarrow.RecordBatch objects for the tasks of one input partition."""
    target = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    want = set(names)
    read = opts.read_options()         # one thread per task: Spark already runs tasks in parallel
    typed = opts.typed.open() if opts.typed is not None else None
    options = read.decode_options(None if opts.decode else decode_names(names, opts.typed))
    table_of = None
    if opts.decode:       # an internal topic as a table (kafkafmt.internal)
        from kafkafmt.internal import internal_table

        table_of = internal_table(opts.decode).build
    errors = read.errors
    for t in tasks:
        # a task may start inside a partition: the batch before it is not known here
        chunks = read_task(t, [], options=options, errors=errors, max_bytes=read.max_bytes)
        try:
            for recs, _ in chunks:
                if not len(recs):
                    continue
                recs = recs.replace(topic=t.topic, partition=t.partition, log_dir=t.log_dir)
                if table_of is not None:
                    table = table_of(recs).select(names)
                else:
                    if typed is not None:
                        recs = decode_values(recs, typed)
                    meta = any(n in want for n in BATCH_METADATA_COLUMNS)
                    table = recs.to_arrow(headers="headers" in want, batch_metadata=meta,
                                          log_dir=LOG_DIR_COLUMN in want)
                    if typed is not None:
                        table = opts.typed.conform(table)
                    table = table.select(names)
                yield from table.cast(target).to_batches()
        except ValueDecodeError as exc:
            raise ValueDecodeError(f"{exc.reason} -- set mode=PERMISSIVE to read bad values as null with the reason "
                                   f"in valueError / keyError", file=exc.file, position=exc.position,
                                   offset=exc.offset) from None
        except KafkafmtError as exc:
            if errors == "salvage":
                raise
            raise KafkafmtError(f"{exc} -- set failOnDataLoss=false to skip corrupt batches and keep reading") from exc

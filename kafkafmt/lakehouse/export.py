"""`export_table`: the records of log dirs into an Iceberg or Delta table, incrementally.

A run reads the table's offset ledger (`kafkafmt.lakehouse.ledger`), checks the sources for data
loss (before anything is written), then streams partition by partition from each one's ledger
offset on, in chunks of bounded size, through `kafkafmt.lakehouse.writer` into data files, and
commits: once at the end, and on the way every ``commit_every`` bytes of input (a long backfill
keeps its progress if stopped) and before the schema evolves. Each commit adds its files and moves
the ledger in one atomic step of the table format, so a run killed at any point leaves the table
as of its last commit, and the next run goes on from exactly there: no record twice, none skipped.

The next offset of a partition is one past the last batch read (read_uncommitted, no end bound:
batches the cleaner emptied and transaction markers count), or one past the last record exported
(read_committed, or an end bound: what lies beyond is read again next time, filtered again).

Before a run trusts the ledger, every source partition is checked against it
(`kafkafmt.lakehouse.ledger.find_data_loss`): offsets deleted by retention, a log end below the
ledger, other bytes where the last exported batch was (its mark: base offset, leader epoch, CRC), a
new topic id. Several copies of one partition (replicas in several log dirs, a backup beside the
original) are read once: the most complete copy (`kafkafmt.log._discovery`'s ``replicas="dedup"``).

Typed keys and values (``value_format=``, ``key_format=``) become typed columns
(`kafkafmt.lakehouse.typed`): the run pins one reader schema per topic, checks that the table can
take it before anything is committed, and evolves the table; values that cannot be typed go to the
dead-letter table (`kafkafmt.lakehouse.deadletter`). ``mode="upsert"`` keeps the latest value of
each key instead of every record (`kafkafmt.lakehouse.upsert`). A table name holding ``{topic}``
makes one table per topic, each with its own schema and ledger.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from kafkafmt.values import DEFAULT_MAX_DEPTH
from kafkafmt.log import find_partitions
from kafkafmt._util.durable import crash_point
from kafkafmt.lakehouse.deadletter import (VALUE_ERRORS, DeadLetters, dead_letter_location, dead_letter_mask,
                                           dead_letter_rows, dead_letter_schema)
from kafkafmt.lakehouse.layout import (added_fields, chunk_table, conform, format_partition_by, kafka_schema,
                                       merge_schema, parse_partition_by, partition_groups)
from kafkafmt.lakehouse.ledger import (BATCHES_KEY, LOSS_KEY, MODE_KEY, OFFSETS_KEY, RANGES_KEY, SCHEMAS_KEY,
                                       VERSION_KEY, find_data_loss, find_vanished, marks_json, offsets_json,
                                       ranges_json, report_data_loss)
from kafkafmt.lakehouse.typed import TypedTable, parse_schemas, table_changes
from kafkafmt.lakehouse.upsert import DEFAULT_UPSERT_PARTITION_BY, MODES, LatestBuffer, identity_column
from kafkafmt.lakehouse.writer import RollingWriter
from kafkafmt.read import Gathering, ReadOptions, decoded_bytes, iter_partition_chunks, join_chunks, scan_named
from kafkafmt.log import BatchMark, batch_mark, topic_id_of

__all__ = ["export_table", "ExportResult", "open_target", "table_name", "CHUNK_BYTES", "TOPIC_FIELD"]

CHUNK_BYTES = 16 << 20          # decoded bytes per chunk read (as the command line's export)
WRITE_ROWS = 1 << 16            # rows of small chunks (many small partitions) laid out and written at once
COMMIT_EVERY = 8 << 30          # input bytes between commits of a long run
FORMATS = ("iceberg", "delta")
#: in a table's name or path: one table per topic (``sales.{topic}``, ``s3://lake/{topic}``)
TOPIC_FIELD = "{topic}"


@dataclass
class ExportResult:
    """What a run did (`export_table` returns it).

    Parameters
    ----------
    table : str
        The table written, described.
    format : {"iceberg", "delta"}
    rows : int
        Rows exported (upsert: records applied, the newest of each key).
    files, bytes : int
        Data ``files`` written and their ``bytes``.
    input_bytes : int
        Bytes of segments read.
    commits : list
        Iceberg snapshot ids, Delta versions.
    ranges : dict
        The offset ranges exported per (topic, partition) ([start, end)).
    offsets : dict
        The ledger after the run: the next offset of every (topic, partition).
    data_loss : list
        `DataLoss` entries.
    partitions : int
        Partitions read.
    report : list
        The readers' ``report``.
    seconds : float
        How long the run took.
    mode : {"append", "upsert"}
    dead_letters : int
        Records sent to the dead-letter table (keys or values that could not be typed).
    dead_letter_table : str or None
        The dead-letter table, described, when it was written to.
    deleted : int
        Upsert: rows the run's tombstones deleted, and the rows of a re-created topic's old incarnation
        it removed (partitions it no longer has, or whose records all differ now: see ``data_loss``).
    evolved : list
        The schema changes the run made to the table (`kafkafmt.lakehouse.types.TypeChange`:
        added fields, widened types).
    schemas : dict
        Typed runs: the ``kafkafmt.schemas`` record of the last commit: per topic and side the
        reader schema (id, subject, version), every reader the table has had, the writer schema
        ids of the commit's values.
    tables : dict
        A run of one table per topic (``{topic}`` in the name): each table's own result, by name.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> result = kafkafmt.export_table(sample_dir(), "lake", format="delta", topics=["payments"])
    >>> result.rows, result.commits, result.ranges, result.offsets, result.data_loss
    (120, [1], {('payments', 0): (0, 122)}, {('payments', 0): 122}, [])
    """
    table: str
    format: str
    rows: int = 0
    files: int = 0
    bytes: int = 0
    input_bytes: int = 0
    commits: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    offsets: dict = field(default_factory=dict)
    data_loss: list = field(default_factory=list)
    partitions: int = 0
    report: list = field(default_factory=list)
    seconds: float = 0.0
    mode: str = "append"
    dead_letters: int = 0
    dead_letter_table: object = None
    deleted: int = 0
    evolved: list = field(default_factory=list)
    schemas: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)

    def __repr__(self):     # a summary: ranges and offsets hold an entry per partition
        return (f"<ExportResult {self.table}: {self.rows} rows of {self.partitions} partitions in {self.files} files "
                f"({self.bytes} bytes), {len(self.commits)} commits, {len(self.data_loss)} data losses, "
                f"{self.seconds:.1f} s>")


def open_target(format, to=None, table=None, catalog=None, storage_options=None):
    """The table an export writes: Iceberg (``table`` "NS.TABLE" in the warehouse ``to`` and/or
    ``catalog``) or Delta (the table at ``to``)."""
    if format == "iceberg":
        from kafkafmt.lakehouse.iceberg import IcebergTable

        return IcebergTable(table, warehouse=to, catalog=catalog, storage_options=storage_options)
    if format == "delta":
        from kafkafmt.lakehouse.delta import DeltaTable

        if to is None:
            raise ValueError("a Delta export needs the table's path or URL (to=)")
        return DeltaTable(to, storage_options=storage_options)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")


def table_name(name, topic):
    """A table name or path with ``{topic}`` replaced by the topic.

    Examples
    --------
    >>> from kafkafmt.lakehouse.export import table_name
    >>> table_name("sales.{topic}", "orders"), table_name("s3://lake/{topic}", "customers")
    ('sales.orders', 's3://lake/customers')
    """
    return None if name is None else str(name).replace(TOPIC_FIELD, topic)


def export_table(roots, to=None, *, format="iceberg", table=None, catalog=None, topics=None, partitions=None,
                 partition_by=None, target_file_size=128 << 20, commit_every=COMMIT_EVERY, compression="snappy",
                 isolation="read_uncommitted", start_offset=None, end_offset=None, start_timestamp=None,
                 end_timestamp=None, headers=True, batch_metadata=False, errors="strict", fail_on_data_loss=True,
                 replicas="dedup", value_format=None, key_format=None, schema_registry=None, value_schema=None,
                 key_schema=None, value_errors="dlq", untyped_topics="error", mode="append", storage_options=None,
                 table_storage_options=None, filesystem=None, tiered_keys=None, threads=None, report=None,
                 on_chunk=None, recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
                 additional_properties="keep") -> ExportResult:
    """Export the records of log dirs (``roots``: paths or URLs, as `kafkafmt.iter_log_dirs` takes
    them, tiered uploads included) into a lakehouse table, continuing where the table's ledger says
    the last export stopped.

    format "iceberg": ``table`` is "NAMESPACE.TABLE", ``to`` the warehouse (an embedded SQLite
    catalog in it by default), ``catalog`` a catalog name of pyiceberg's configuration or a SQL
    catalog URL. format "delta": ``to`` is the table's path or URL. ``{topic}`` in the table's name
    (Iceberg) or path (Delta) exports each topic into a table of its own.
    partition_by: "topic,day(timestamp)" by default for a new table ("topic,partition" for an upsert
    table; see `kafkafmt.lakehouse.layout`); an existing table keeps its own, and a different one
    given is an error. target_file_size: bytes per data file (about). commit_every: input bytes
    between commits. Offsets/timestamps bound what is read, as `kafkafmt.iter_log_dir`'s; the start
    is never before the ledger's. fail_on_data_loss: offsets the ledger expects that the sources no
    longer have, or a source that diverged from the table, raise `DataLossError` before anything is
    written; False warns, exports what there is -- from where a diverged source now is -- and
    records the loss in the commit. storage_options: the sources'; table_storage_options:
    the table's (default: the same), fsspec-style (``key``, ``secret``, ``endpoint_url``, ...),
    translated for pyiceberg and delta-rs. on_chunk(label, input bytes, records): progress.

    Parameters
    ----------
    roots : str, os.PathLike or list
        Log dirs (paths or URLs, as `kafkafmt.iter_log_dirs` takes them, tiered uploads included).
    to : str, optional
        Iceberg: the warehouse; Delta: the table's path or URL (``{topic}`` in it: a table per
        topic).
    format : {"iceberg", "delta"}
    table : str, optional
        Iceberg: "NAMESPACE.TABLE" (``{topic}`` in it: a table per topic, e.g. ``sales.{topic}``).
    catalog : str, optional
        Iceberg: a catalog name of pyiceberg's configuration or a SQL catalog URL (default: an
        embedded SQLite catalog in the warehouse).
    topics, partitions : list, optional
        Only these topics and partition numbers.
    partition_by : str, optional
        "topic,day(timestamp)" by default for a new table, "topic,partition" for an upsert one.
    target_file_size : int
        Bytes per data file (about).
    commit_every : int
        Input bytes between commits.
    compression : str
        The Parquet codec of the data files.
    isolation : {"read_uncommitted", "read_committed"}
        As a consumer's ``isolation.level``.
    start_offset, end_offset, start_timestamp, end_timestamp : optional
        Bound what is read, as `kafkafmt.iter_log_dir`'s; the start is never before the ledger's.
    headers, batch_metadata : bool
        Export the headers column; add the producer columns.
    errors : {"strict", "salvage"}
        As the readers take it.
    fail_on_data_loss : bool
        Offsets the ledger expects that the sources no longer have (retention), or a source that is
        no longer what was exported (its log end went back below the ledger, other bytes at offsets
        the table holds, a re-created topic), raise `DataLossError` before anything is written;
        False warns, records the loss in the commit and exports what there is, a diverged
        partition from where its source now is (records at offsets the table holds arrive as new
        rows).
    replicas : {"dedup"}
        Several copies of one partition under the roots (replicas, a backup beside the original):
        the most complete one is read (`kafkafmt.log._discovery`); a table holds each (topic,
        partition, offset) once, so "all" is refused.
    value_format, key_format, schema_registry, value_schema, key_schema, untyped_topics : optional
        Typed values and keys, as the readers take them (`kafkafmt.read_log_dirs`): the typed
        columns of the table (`kafkafmt.lakehouse.typed`), each topic read with its subject's
        latest version now, the table evolved to it.
    recursive_fields_max_depth, time_unit, additional_properties : optional
        How typed values are shaped, as the readers take them (`kafkafmt.values._options`). A
        table holds microseconds: ``time_unit="ns"`` keeps a Duration's nanoseconds only.
    value_errors : {"dlq", "null", "strict"}
        A key or value that cannot be typed: to the dead-letter table ``<table>_dlq`` (the raw
        bytes and the reason, `kafkafmt.lakehouse.deadletter`); null in the table with the
        reason in ``valueError`` / ``keyError``; or the run fails naming file, position and offset.
    mode : {"append", "upsert"}
        Every record a row; or the latest value of each key, a tombstone deleting it
        (`kafkafmt.lakehouse.upsert`: compacted topics).
    storage_options, table_storage_options : dict, optional
        The sources'; the table's (default: the same), fsspec-style, translated for pyiceberg and
        delta-rs.
    filesystem : fsspec.AbstractFileSystem, optional
        The sources' filesystem, instead of ``storage_options``.
    tiered_keys : optional
        As `kafkafmt.read_log_dirs` takes them.
    threads : int, optional
        Reading threads (None: all cores).
    report : list, optional
        Receives what the readers skipped (`ReportEntry`).
    on_chunk : callable, optional
        ``on_chunk(label, input bytes, records)``: progress.

    Returns
    -------
    ExportResult

    Raises
    ------
    DataLossError
        Offsets the ledger expects are gone, or a source diverged from the table
        (``fail_on_data_loss``).
    CommitConflictError
        Another run changed (or created) the table meanwhile: nothing of this run was committed.
    SchemaEvolutionError
        This run's reader schema changes a field in a way the table cannot take (a narrowed type,
        a removed field's name used again with another type): nothing was committed.
    ValueDecodeError
        ``value_errors="strict"`` and a key or value cannot be typed.
    ValueError
        An unknown format, isolation, replicas, mode or value_errors, or a ``partition_by`` or mode
        other than an existing table's.

    Examples
    --------
    The sample's ``payments`` topic into an Iceberg warehouse in a local folder (an embedded
    SQLite catalog); a second run finds nothing new:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> result = kafkafmt.export_table(sample_dir(), "warehouse", table="kafka.events", topics=["payments"])
    >>> result.table, result.rows, result.ranges
    ('Iceberg table kafka.events at file://.../warehouse/kafka/events', 120, {('payments', 0): (0, 122)})
    >>> again = kafkafmt.export_table(sample_dir(), "warehouse", table="kafka.events", topics=["payments"])
    >>> again.rows, again.commits
    (0, [])

    The Avro values of ``shipments`` as typed columns of a Delta table; the one value written
    without the registry's wire format goes to the dead-letter table beside it:

    >>> r = kafkafmt.export_table(sample_dir(), "lake-shipments", format="delta", topics=["shipments"],
    ...                           value_format="avro")
    >>> r.rows, r.dead_letters, r.dead_letter_table
    (1999, 1, 'Delta table .../lake-shipments_dlq')
    """
    started = time.monotonic()
    report = [] if report is None else report
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    if replicas != "dedup":
        raise ValueError(f"replicas must be 'dedup' for a table, not {replicas!r}: a table holds each (topic, "
                         "partition, offset) once, so of several copies of a partition only the most complete is "
                         "read")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if value_errors not in VALUE_ERRORS:
        raise ValueError(f"value_errors must be one of {', '.join(VALUE_ERRORS)}, not {value_errors!r}")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    requested = parse_partition_by(partition_by if partition_by is not None or mode == "append"
                                   else DEFAULT_UPSERT_PARTITION_BY)
    from kafkafmt.values import open_typed

    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema,
                       value_errors="strict" if value_errors == "strict" else "null", untyped_topics=untyped_topics,
                       # the raw bytes stay: the dead-letter table holds them, an upsert needs the key's nulls
                       keep_bytes=True, roots=roots, storage_options=storage_options, filesystem=filesystem,
                       recursive_fields_max_depth=recursive_fields_max_depth, time_unit=time_unit,
                       additional_properties=additional_properties)
    found = find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys,
                            replicas=replicas)
    # (a Protobuf file of several messages, none named: the messages the values present name)
    typed = scan_named(typed, found, ReadOptions(start_offset=start_offset, end_offset=end_offset,
                                                 start_timestamp=start_timestamp, end_timestamp=end_timestamp,
                                                 isolation=isolation, errors=errors, storage_options=storage_options,
                                                 filesystem=filesystem, tiered_keys=tiered_keys))
    tps = [(p.topic, p.partition) for p in found]
    if len(set(tps)) != len(tps):          # discovery's dedup gives one copy of each: never export two
        raise ValueError("several copies of one partition to export: " + ", ".join(
            sorted({f"{t}-{n}" for t, n in tps if tps.count((t, n)) > 1})))
    job = _Job(format=format, catalog=catalog, requested=requested, explicit=partition_by is not None,
               target_file_size=target_file_size, commit_every=commit_every, compression=compression,
               isolation=isolation, bounds=(start_offset, end_offset, start_timestamp, end_timestamp),
               headers=headers, batch_metadata=batch_metadata, errors=errors, fail_on_data_loss=fail_on_data_loss,
               typed=typed, value_errors=value_errors, mode=mode,
               storage=storage_options if table_storage_options is None else table_storage_options,
               threads=threads, report=report, on_chunk=on_chunk,
               partitions=None if partitions is None else {partitions} if isinstance(partitions, int)
               else set(partitions))
    named = table if format == "iceberg" else to
    if named is None or TOPIC_FIELD not in str(named):
        result = _export_one(job, found, to, table)
    else:                                   # one table per topic
        result = ExportResult(table="", format=format, mode=mode, report=report)
        for topic in sorted({p.topic for p in found}):
            one = _export_one(job, [p for p in found if p.topic == topic], table_name(to, topic),
                              table_name(table, topic))
            result.tables[one.table] = one
            _add_up(result, one)
        result.table = ", ".join(result.tables) or f"no table: no topic to export into {named}"
    result.seconds = time.monotonic() - started
    return result


def _add_up(total, one):
    for name in ("rows", "files", "bytes", "input_bytes", "partitions", "dead_letters", "deleted"):
        setattr(total, name, getattr(total, name) + getattr(one, name))
    total.commits += one.commits
    total.ranges.update(one.ranges)
    total.offsets.update(one.offsets)
    total.data_loss += one.data_loss
    total.evolved += one.evolved
    if one.dead_letter_table:
        total.dead_letter_table = ", ".join(filter(None, [total.dead_letter_table, one.dead_letter_table]))
    total.schemas.update(one.schemas)


@dataclass
class _Job:
    """The options of one export, shared by its tables."""
    format: str
    catalog: object
    requested: tuple
    explicit: bool
    target_file_size: int
    commit_every: int
    compression: str
    isolation: str
    bounds: tuple
    headers: bool
    batch_metadata: bool
    errors: str
    fail_on_data_loss: bool
    typed: object
    value_errors: str
    mode: str
    storage: object
    threads: object
    report: list
    on_chunk: object
    partitions: object = None           # the partitions asked for (None: all)


def _export_one(job, found, to, table):
    """Export the partitions ``found`` into one table."""
    fmt = job.format
    topics = sorted({p.topic for p in found})
    if job.typed.active and not topics:         # nothing to type: the table's columns are not known, nor written
        return ExportResult(table=f"no table: no partition to export into {table or to}", format=fmt,
                            report=job.report, mode=job.mode)
    typed = job.typed.pin(topics) if job.typed.active else None
    plan = TypedTable(typed, topics, fmt) if typed is not None else None
    base = kafka_schema(job.headers, job.batch_metadata)
    upsert = job.mode == "upsert"
    identity = identity_column(plan is not None and "key" in dict(plan.sides))

    def run_schema():
        out = plan.table_schema(base) if plan is not None else base
        if upsert and identity not in out.names:
            import pyarrow as pa

            out = out.append(pa.field(identity, pa.binary(), True))
        return out

    schema = run_schema()
    target = open_target(fmt, to, table, job.catalog, job.storage)
    if job.fail_on_data_loss and not target.exists():
        # a new table is not created when the sources already lack records it would need
        report_data_loss(find_data_loss(found, {}, job.report), True)
    fields = target.open(schema, job.requested, target_file_size=job.target_file_size, compression=job.compression,
                         mode=job.mode)
    describe = target.describe()
    if job.explicit and tuple(fields) != tuple(job.requested):
        raise ValueError(f"{describe} is partitioned by {format_partition_by(fields)}, not "
                         f"{format_partition_by(job.requested)}: leave out partition_by (--partition-by) or export to "
                         "a new table")
    if target.mode() != job.mode:
        raise ValueError(f"{describe} is an {target.mode()} table (mode={target.mode()!r}), not {job.mode}: leave "
                         f"out mode (--mode) or export to a new table")
    result = ExportResult(table=describe, format=fmt, partitions=len(found), report=job.report, mode=job.mode)
    tps = [(p.topic, p.partition) for p in found]
    ledger, marks = target.ledger(tps)
    history = parse_schemas(target.last_props.get(SCHEMAS_KEY))
    losses = find_data_loss(found, ledger, job.report, marks, target.rows)
    topic_ids = {(p.topic, p.partition): topic_id_of(p) for p in found}
    losses += find_vanished(found, ledger, marks, None if job.partitions is None else job.partitions.__contains__,
                            topic_ids)
    report_data_loss(losses, job.fail_on_data_loss)
    if plan is not None:
        plan.check_history(history, describe)
    stored = target.arrow_schema()
    renames = plan.renames(stored) if plan is not None else []
    if renames and target.renames_fields:       # (Iceberg: by field id, the rows written before follow)
        target.rename(renames)
        stored = target.arrow_schema()
    elif renames:                               # (Delta: the table's names stay; this run writes under them)
        plan.keep_names(renames)
        schema = run_schema()
    changes = table_changes(stored, schema, fmt, describe, plan, history)
    result.data_loss = list(losses)
    dead = None
    if job.value_errors == "dlq" and (plan is not None or upsert):
        dead = DeadLetters(lambda create: _dead_letter_target(job, to, table, fields, create), tps)
    by_tp = {(p.topic, p.partition): p for p in found}
    clear = set()                           # upsert: (topic, partition)s whose rows are an old incarnation's
    for x in losses:
        tp = (x.topic, x.partition)
        if x.kind == "diverged":            # going on from where the source now is
            if upsert and x.resume <= by_tp[tp].earliest(by_tp[tp].list_segments([])):
                clear.add(tp)               # nothing of what the table holds is in the source any more
            ledger[tp] = x.resume
            marks[tp] = batch_mark(by_tp[tp], x.resume - 1) if x.resume > 0 else None
            if dead is not None:
                dead.went_back(tp, x.resume)
        elif x.kind == "vanished":          # gone with the old topic: started again, should it come back
            if upsert:
                clear.add(tp)
            ledger[tp], marks[tp] = 0, None

    if changes:
        target.evolve(merge_schema(stored, schema))
    result.evolved = list(renames) + list(changes)
    run = _Run(job, target, fields, ledger, marks, losses, result, plan, history, dead, identity if upsert else None,
               clear)
    run.start_writer()
    start_offset, end_offset, start_timestamp, end_timestamp = job.bounds
    exact_batches = job.isolation == "read_uncommitted" and end_offset is None and end_timestamp is None
    from kafkafmt.values import FailedValues

    unreadable = FailedValues()
    run.topic_ids.update(topic_ids)
    starts = {}                 # each partition read from the ledger's next offset (or start_offset, when above)
    for p in found:
        tp = (p.topic, p.partition)
        start = ledger.get(tp)
        if start_offset is not None:
            start = start_offset if start is None else max(start, start_offset)
        if end_offset is None or start is None or start < end_offset:
            starts[tp] = start
    reading = [p for p in found if (p.topic, p.partition) in starts]
    names = {(p.topic, p.partition): p.name for p in reading}
    options = ReadOptions(end_offset=end_offset, start_timestamp=start_timestamp, end_timestamp=end_timestamp,
                          isolation=job.isolation, errors=job.errors, max_bytes=CHUNK_BYTES, threads=job.threads)
    try:
        # many small partitions read in one pass, each from its own start (`kafkafmt.read.iter_partition_chunks`),
        # typed values typed as each partition's own read types them
        for chunk in iter_partition_chunks(reading, options, job.report,
                                           typed=None if typed is None else scan_named(typed, reading, options),
                                           start_offsets=[starts[(p.topic, p.partition)] for p in reading]):
            tp = (chunk.topic, chunk.partition)
            stored_bytes = chunk.stored_bytes
            if typed is not None:
                unreadable.add(chunk)
            run.add(tp, chunk, starts[tp], exact_batches, end_offset)
            run.input_bytes += stored_bytes
            result.input_bytes += stored_bytes
            if job.on_chunk is not None:
                job.on_chunk(names[tp], stored_bytes, len(chunk))
            crash_point()
            if run.input_bytes >= job.commit_every or run.buffer_full():
                run.commit()
        run.commit()
    except BaseException:
        run.abort()
        raise
    if job.value_errors != "dlq":
        unreadable.warn(stacklevel=3)
    result.offsets = dict(run.ledger)
    return result


def _dead_letter_target(job, to, table, fields, create):
    """The dead-letter table of the table at ``to`` / ``table``: opened (created when ``create``,
    partitioned as the main table, its columns evolved to this run's), or None when it is not
    there and ``create`` is False."""
    dto, dtable = dead_letter_location(job.format, to, table)
    target = open_target(job.format, dto, dtable, job.catalog, job.storage)
    if not create and not target.exists():
        return None
    schema = dead_letter_schema(job.headers, job.batch_metadata)
    target.open(schema, fields, target_file_size=job.target_file_size, compression=job.compression)
    stored = target.arrow_schema()
    if table_changes(stored, schema, job.format, target.describe()):
        target.evolve(merge_schema(stored, schema))
    return target


class _Run:
    """The state of one export: the open writers, the ledgers, and what the next commit covers."""

    def __init__(self, job, target, fields, ledger, marks, losses, result, plan, history, dead, identity, clear=()):
        self.job = job
        self.target, self.fields, self.ledger = target, fields, dict(ledger)
        self.marks = {tp: m for tp, m in marks.items() if m is not None}     # the last batch under each ledger offset
        self.topic_ids = {}
        self.losses = list(losses)
        self.result = result
        self.plan, self.history = plan, history
        self.dead = dead
        self.identity = identity            # upsert: the column of the key bytes
        self.buffer = LatestBuffer(identity) if identity is not None else None
        # (appends: chunks gathered up to WRITE_ROWS rows or a chunk's bytes before they are written; typed ones
        # a topic at a time, as each topic's rows are typed)
        self.gathering = Gathering(WRITE_ROWS, CHUNK_BYTES) if identity is None else None
        self.clear = set(clear)     # upsert: (topic, partition)s whose rows the next commit removes first
        self.pending = {}           # (topic, partition) -> [start, next] of the next commit
        self.writer_ids = {}        # (side, topic) -> writer schema ids of the next commit
        self.input_bytes = 0
        self.writer = None
        self.dead_writer = None
        self.schema = None          # the table's Arrow schema (stored types)

    def start_writer(self):
        self.schema = self.target.arrow_schema()
        self.writer = self._writer(self.target, self.fields, self.schema)

    def _writer(self, target, fields, schema):
        return RollingWriter(target.file_schema(schema), lambda key: target.open_file(key, fields), target.close_file,
                             target_size=self.job.target_file_size, compression=self.job.compression)

    def buffer_full(self):
        return self.buffer is not None and self.buffer.full()

    def add(self, tp, chunk, start, exact_batches, end_offset):
        nxt = None
        if exact_batches and len(chunk.batches):
            nxt = int(np.max(chunk.batches["last_offset"])) + 1
        if len(chunk):
            last = int(chunk.offset[-1]) + 1
            nxt = last if nxt is None else max(nxt, last)
        if nxt is not None and end_offset is not None:
            nxt = min(nxt, end_offset)
        if nxt is not None and len(chunk.batches):
            below = np.flatnonzero(np.asarray(chunk.batches["base_offset"]) < nxt)
            if len(below):
                self.marks[tp] = BatchMark.of_row(chunk.batches, int(below[-1]), self.topic_ids.get(tp))
        if nxt is not None:
            rng = self.pending.get(tp)
            if rng is None:
                first = self.ledger.get(tp)
                if first is None:       # a partition new to the table: from where this read began
                    first = start if start is not None else \
                        int(chunk.batches["base_offset"][0]) if len(chunk.batches) else int(chunk.offset[0])
                rng = self.pending[tp] = [first, first]
            rng[1] = max(rng[1], nxt)
        if not len(chunk):
            return
        chunk = self._dead_letters(tp, chunk)
        if not len(chunk):
            return
        self.result.rows += len(chunk)
        if self.gathering is None:
            self._write(chunk)
            return
        # appends: the chunks of many small partitions laid out and written together (a table a chunk made that
        # most of an export of small partitions), each partition's rows in its order, as before
        key = chunk.topic if self.plan is not None else None
        for chunks in self.gathering.add(chunk, len(chunk), decoded_bytes(chunk), key):
            self._write(join_chunks(chunks))

    def _write_gathered(self):
        """Write the chunks gathered (before a commit)."""
        if self.gathering is not None:
            for chunks in self.gathering.rest():
                self._write(join_chunks(chunks))

    def _write(self, chunk):
        """Lay out a chunk (or several joined) as the table's rows and hand them to the writers."""
        job = self.job
        t = chunk_table(chunk, job.headers, job.batch_metadata, self.target.format if self.plan else None)
        if self.plan is not None:
            t = self.plan.named(t)
        if self.identity is not None and self.identity != "key":        # the key bytes beside a typed key
            import pyarrow as pa

            t = t.drop_columns([c for c in (self.identity,) if c in t.column_names]).append_column(
                pa.field(self.identity, pa.binary(), True), chunk.key.to_arrow())
        if self.plan is not None:
            for k, ids in self.plan.writers(chunk).items():
                self.writer_ids.setdefault(k, set()).update(ids)
        if added_fields(self.schema, t.schema):
            self.commit()
            self.target.evolve(merge_schema(self.schema, t.schema))
            self.start_writer()
        # an upsert keeps every column (Delta's partition columns too) until its commit applies the rows
        t = conform(t, self.schema if self.buffer is not None else self.writer.schema)
        if self.buffer is not None:
            self.buffer.add(t, chunk.value.is_null())
        else:
            for key, rows in partition_groups(chunk, self.fields):
                part = t.slice(rows.start, rows.stop - rows.start) if isinstance(rows, slice) else t.take(rows)
                self.writer.write(key, part)

    def _dead_letters(self, tp, chunk):
        """The chunk without its dead letters; those the dead-letter table does not hold yet go to
        its writer (``value_errors="dlq"``). In an upsert table without dead letters, a record
        without a key is an error."""
        upsert = self.identity is not None
        if self.dead is None:
            if upsert and chunk.key.is_null().any():
                from kafkafmt.errors import KafkafmtError

                i = int(np.flatnonzero(chunk.key.is_null())[0])
                raise KafkafmtError(f"a record without a key cannot be upserted ({tp[0]}-{tp[1]}): an upsert table "
                                    "holds the latest value of each key; send such records to the dead-letter table "
                                    "(value_errors='dlq', --value-errors dlq)", file=chunk.file,
                                    offset=int(chunk.offset[i]))
            return chunk
        mask = dead_letter_mask(chunk, upsert)
        if mask is None:
            return chunk
        letters = chunk.filter(mask)
        wanted = self.dead.wants(tp, letters.offset)
        if not wanted.all():
            letters = letters.filter(wanted)
        if len(letters):
            rows = dead_letter_rows(letters, self.job.headers, self.job.batch_metadata, upsert)
            if self.dead_writer is None:
                target = self.dead.ensure()
                self.dead_writer = self._writer(target, target.partition_fields(), target.arrow_schema())
            rows = conform(rows, self.dead_writer.schema)
            for key, idx in partition_groups(letters, self.dead.target.partition_fields()):
                self.dead_writer.write(key, rows.slice(idx.start, idx.stop - idx.start) if isinstance(idx, slice)
                                       else rows.take(idx))
            self.dead.rows += len(letters)
            self.result.dead_letters += len(letters)
        return chunk.filter(~mask)

    def _properties(self, ledger, ranges, marks=None, schemas=None):
        props = {OFFSETS_KEY: offsets_json(ledger), RANGES_KEY: ranges_json(ranges), VERSION_KEY: _version(),
                 MODE_KEY: self.job.mode if marks is not None else "append"}
        if marks is not None:
            props[BATCHES_KEY] = marks_json(marks)
        if schemas:
            props[SCHEMAS_KEY] = json.dumps(schemas, separators=(",", ":"))
        return props

    def commit(self):
        self._write_gathered()
        files = self.writer.close()
        dead_files = self.dead_writer.close() if self.dead_writer is not None else []
        changes = {tp: r[1] for tp, r in self.pending.items() if r[1] != self.ledger.get(tp)}
        latest = self.buffer.latest() if self.buffer is not None else None
        if latest is None and self.clear:
            latest = self.buffer.empty(self.schema)
        dirty = self.dead is not None and self.dead.dirty
        if not files and not changes and not self.losses and not dead_files and latest is None and not dirty:
            self.pending = {}
            self.input_bytes = 0
            return None
        self.ledger.update(changes)
        self.pending = {tp: r for tp, r in self.pending.items() if r[1] > r[0]}
        ranges = {tp: tuple(r) for tp, r in self.pending.items()}
        if dead_files or dirty:             # the dead letters first: see kafkafmt.lakehouse.deadletter
            self.dead.ledger.update(changes)
            dead = self.dead.ensure()
            dead.commit(dead_files, self._properties(self.dead.ledger, ranges), offsets_json(self.dead.ledger),
                        self.dead.ledger)
            crash_point()
            self.dead.dirty = False
            self.result.dead_letter_table = dead.describe()
        schemas = self.plan.record(self.history, self.writer_ids) if self.plan is not None else self.history
        props = self._properties(self.ledger, ranges, {tp: m for tp, m in self.marks.items() if tp in self.ledger},
                                 schemas)
        if self.losses:
            props[LOSS_KEY] = json.dumps([x.as_json() for x in self.losses], separators=(",", ":"))
        offsets = offsets_json(self.ledger)
        if latest is not None:
            cid, files, deleted = self.target.upsert(latest, self.identity, self.fields, self.writer, props, offsets,
                                                     self.ledger, clear=self.clear)
            self.result.deleted += deleted
            self.buffer.clear()
            self.clear = set()
        else:
            cid = self.target.commit(files, props, offsets, self.ledger)
        crash_point()
        self.losses = []
        self.history = schemas or {}
        self.result.schemas = dict(self.history)
        self.writer_ids = {}
        for tp, r in self.pending.items():
            old = self.result.ranges.get(tp)
            self.result.ranges[tp] = (r[0] if old is None else old[0], r[1])
        self.result.commits.append(cid)
        self.result.files += len(files)
        self.result.bytes += sum(_size(f) for f in files)
        self.pending = {}
        self.input_bytes = 0
        return cid

    def abort(self):
        if self.gathering is not None:
            self.gathering.clear()
        for w in (self.writer, self.dead_writer):
            if w is not None:
                w.abort()


def _size(entry):
    if entry is None:
        return 0
    return int(getattr(entry, "file_size_in_bytes", None) or getattr(entry, "size", 0))


def _version():
    from kafkafmt._version import __version__

    return __version__

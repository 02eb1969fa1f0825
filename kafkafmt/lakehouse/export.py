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
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from kafkafmt.log import find_partitions
from kafkafmt._util.durable import crash_point
from kafkafmt.lakehouse.layout import (added_fields, chunk_table, conform, format_partition_by, kafka_schema,
                                       merge_schema, parse_partition_by, partition_groups)
from kafkafmt.lakehouse.ledger import (BATCHES_KEY, LOSS_KEY, OFFSETS_KEY, RANGES_KEY, VERSION_KEY, find_data_loss,
                                       marks_json, offsets_json, ranges_json, report_data_loss)
from kafkafmt.lakehouse.writer import RollingWriter
from kafkafmt.read import iter_log_dir
from kafkafmt.log import BatchMark, batch_mark, topic_id_of

__all__ = ["export_table", "ExportResult", "open_target", "CHUNK_BYTES"]

CHUNK_BYTES = 16 << 20          # decoded bytes per chunk read (as the command line's export)
COMMIT_EVERY = 8 << 30          # input bytes between commits of a long run
FORMATS = ("iceberg", "delta")


@dataclass
class ExportResult:
    """What a run did (`export_table` returns it).

    Parameters
    ----------
    table : str
        The table written, described.
    format : {"iceberg", "delta"}
    rows : int
        Rows exported.
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


def export_table(roots, to=None, *, format="iceberg", table=None, catalog=None, topics=None, partitions=None,
                 partition_by=None, target_file_size=128 << 20, commit_every=COMMIT_EVERY, compression="snappy",
                 isolation="read_uncommitted", start_offset=None, end_offset=None, start_timestamp=None,
                 end_timestamp=None, headers=True, batch_metadata=False, errors="strict", fail_on_data_loss=True,
                 replicas="dedup", storage_options=None, table_storage_options=None, filesystem=None,
                 tiered_keys=None, threads=None, report=None, on_chunk=None) -> ExportResult:
    """Export the records of log dirs (``roots``: paths or URLs, as `kafkafmt.iter_log_dirs` takes
    them, tiered uploads included) into a lakehouse table, continuing where the table's ledger says
    the last export stopped.

    format "iceberg": ``table`` is "NAMESPACE.TABLE", ``to`` the warehouse (an embedded SQLite
    catalog in it by default), ``catalog`` a catalog name of pyiceberg's configuration or a SQL
    catalog URL. format "delta": ``to`` is the table's path or URL.
    partition_by: "topic,day(timestamp)" by default for a new table (see
    `kafkafmt.lakehouse.layout`); an existing table keeps its own, and a different one given is an
    error. target_file_size: bytes per data file (about). commit_every: input bytes between
    commits. Offsets/timestamps bound what is read, as `kafkafmt.iter_log_dir`'s; the start is
    never before the ledger's. fail_on_data_loss: offsets the ledger expects that the sources no
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
        Iceberg: the warehouse; Delta: the table's path or URL.
    format : {"iceberg", "delta"}
    table : str, optional
        Iceberg: "NAMESPACE.TABLE".
    catalog : str, optional
        Iceberg: a catalog name of pyiceberg's configuration or a SQL catalog URL (default: an
        embedded SQLite catalog in the warehouse).
    topics, partitions : list, optional
        Only these topics and partition numbers.
    partition_by : str, optional
        "topic,day(timestamp)" by default for a new table.
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
    ValueError
        An unknown format, isolation or replicas, or a ``partition_by`` other than an existing table's.

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
    """
    started = time.monotonic()
    report = [] if report is None else report
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    if replicas != "dedup":
        raise ValueError(f"replicas must be 'dedup' for a table, not {replicas!r}: a table holds each (topic, "
                         "partition, offset) once, so of several copies of a partition only the most complete is "
                         "read")
    requested = parse_partition_by(partition_by)
    target = open_target(format, to, table, catalog,
                         storage_options if table_storage_options is None else table_storage_options)
    found = find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys,
                            replicas=replicas)
    base = kafka_schema(headers, batch_metadata)
    if fail_on_data_loss and not target.exists():
        # a new table is not created when the sources already lack records it would need
        report_data_loss(find_data_loss(found, {}, report), True)
    fields = target.open(base, requested, target_file_size=target_file_size, compression=compression)
    if partition_by is not None and tuple(fields) != tuple(requested):
        raise ValueError(f"{target.describe()} is partitioned by {format_partition_by(fields)}, not "
                         f"{format_partition_by(requested)}: leave out partition_by (--partition-by) or export to "
                         "a new table")
    result = ExportResult(table=target.describe(), format=format, partitions=len(found), report=report)
    tps = [(p.topic, p.partition) for p in found]
    if len(set(tps)) != len(tps):          # discovery's dedup gives one copy of each: never export two
        raise ValueError("several copies of one partition to export: " + ", ".join(
            sorted({f"{t}-{n}" for t, n in tps if tps.count((t, n)) > 1})))
    ledger, marks = target.ledger(tps)
    losses = find_data_loss(found, ledger, report, marks, target.rows)
    report_data_loss(losses, fail_on_data_loss)
    result.data_loss = list(losses)
    by_tp = {(p.topic, p.partition): p for p in found}
    for x in losses:
        if x.kind == "diverged":            # going on from where the source now is
            tp = (x.topic, x.partition)
            ledger[tp] = x.resume
            marks[tp] = batch_mark(by_tp[tp], x.resume - 1) if x.resume > 0 else None

    run = _Run(target, fields, ledger, marks, losses, target_file_size, compression, commit_every, result)
    table_schema = target.arrow_schema()
    if added_fields(table_schema, base):
        target.evolve(merge_schema(table_schema, base))
    run.start_writer()
    exact_batches = isolation == "read_uncommitted" and end_offset is None and end_timestamp is None
    try:
        for p in found:
            tp = (p.topic, p.partition)
            run.topic_ids[tp] = topic_id_of(p)
            start = ledger.get(tp)
            if start_offset is not None:
                start = start_offset if start is None else max(start, start_offset)
            if end_offset is not None and start is not None and start >= end_offset:
                continue
            for chunk in iter_log_dir(p, start_offset=start, end_offset=end_offset, start_timestamp=start_timestamp,
                                      end_timestamp=end_timestamp, isolation=isolation, errors=errors,
                                      max_bytes=CHUNK_BYTES, threads=threads, report=report):
                stored = int(np.asarray(chunk.batches["size"], np.int64).sum()) if len(chunk.batches) else 0
                run.add(tp, chunk, start, headers, batch_metadata, exact_batches, end_offset)
                run.input_bytes += stored
                result.input_bytes += stored
                if on_chunk is not None:
                    on_chunk(p.name, stored, len(chunk))
                crash_point()
                if run.input_bytes >= commit_every:
                    run.commit()
        run.commit()
    except BaseException:
        run.writer.abort()
        raise
    result.offsets = dict(run.ledger)
    result.seconds = time.monotonic() - started
    return result


class _Run:
    """The state of one export: the open writer, the ledger, and what the next commit covers."""

    def __init__(self, target, fields, ledger, marks, losses, target_file_size, compression, commit_every, result):
        self.target, self.fields, self.ledger = target, fields, dict(ledger)
        self.marks = {tp: m for tp, m in marks.items() if m is not None}     # the last batch under each ledger offset
        self.topic_ids = {}
        self.losses = list(losses)
        self.target_file_size, self.compression = target_file_size, compression
        self.result = result
        self.pending = {}           # (topic, partition) -> [start, next] of the next commit
        self.input_bytes = 0
        self.writer = None
        self.schema = None          # the table's Arrow schema (stored types)

    def start_writer(self):
        self.schema = self.target.arrow_schema()
        file_schema = self.target.file_schema(self.schema)
        self.writer = RollingWriter(file_schema,
                                    lambda key: self.target.open_file(key, self.fields),
                                    self.target.close_file, target_size=self.target_file_size,
                                    compression=self.compression)

    def add(self, tp, chunk, start, headers, batch_metadata, exact_batches, end_offset):
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
        t = chunk_table(chunk, headers, batch_metadata)
        if added_fields(self.schema, t.schema):
            self.commit()
            self.target.evolve(merge_schema(self.schema, t.schema))
            self.start_writer()
        t = conform(t, self.writer.schema)
        for key, rows in partition_groups(chunk, self.fields):
            part = t.slice(rows.start, rows.stop - rows.start) if isinstance(rows, slice) else t.take(rows)
            self.writer.write(key, part)
        self.result.rows += len(chunk)

    def commit(self):
        files = self.writer.close()
        changes = {tp: r[1] for tp, r in self.pending.items() if r[1] != self.ledger.get(tp)}
        if not files and not changes and not self.losses:
            self.pending = {}
            self.input_bytes = 0
            return None
        self.ledger.update(changes)
        self.pending = {tp: r for tp, r in self.pending.items() if r[1] > r[0]}
        offsets = offsets_json(self.ledger)
        props = {OFFSETS_KEY: offsets, RANGES_KEY: ranges_json({tp: tuple(r) for tp, r in self.pending.items()}),
                 BATCHES_KEY: marks_json({tp: m for tp, m in self.marks.items() if tp in self.ledger}),
                 VERSION_KEY: _version()}
        if self.losses:
            import json

            props[LOSS_KEY] = json.dumps([x.as_json() for x in self.losses], separators=(",", ":"))
        cid = self.target.commit(files, props, offsets, self.ledger)
        crash_point()
        self.losses = []
        for tp, r in self.pending.items():
            old = self.result.ranges.get(tp)
            self.result.ranges[tp] = (r[0] if old is None else old[0], r[1])
        self.result.commits.append(cid)
        self.result.files += len(files)
        self.result.bytes += sum(_size(f) for f in files)
        self.pending = {}
        self.input_bytes = 0
        return cid


def _size(entry):
    return int(getattr(entry, "file_size_in_bytes", None) or getattr(entry, "size", 0))


def _version():
    from kafkafmt._version import __version__

    return __version__

"""Reading partitions and whole ``log.dirs`` the way Kafka reads them: `read_log_dir(s)` /
`iter_log_dir(s)` over the tasks `kafkafmt.log._planner` plans for the partitions `kafkafmt.log._discovery`
finds, and `read_segment` for one file.

* Segments are read in base-offset order; leftovers of the broker's own work are skipped and
  named in the result's ``report``.
* ``errors="salvage"`` decodes every intact batch after a corrupt one and reports each skipped
  byte range; a batch whose offsets are out of sequence with its neighbours (a damaged base
  offset, which the v2 CRC does not cover) is corrupt.
* ``iter_log_dir`` yields chunks of at most about ``max_bytes`` of decoded data.
* ``value_format=`` / ``key_format=`` type values and keys (Avro, Protobuf, JSON Schema, JSON,
  strings) with the schemas of ``schema_registry=`` -- by default the ``_schemas`` topic among the
  log dirs being read (`kafkafmt.values._typed`).
"""

from __future__ import annotations

import functools
import itertools
import os

import numpy as np

from kafkafmt.read._options import ReadOptions, document_options
from kafkafmt.read._stream import RecordStream
from kafkafmt.record import DecodeOptions, decode
from kafkafmt.log import DEFAULT_REPLICAS, Partition, find_partitions, resolve_partition
from kafkafmt.errors import NotALogDirError, NotKafkaDataError, PathNotFoundError
from kafkafmt.log import not_kafka_reason, window
from kafkafmt.log import LOG_SUFFIX, partition_of_name, segment_base
from kafkafmt.log import plan
from kafkafmt.log import read_range
from kafkafmt.record import BinaryColumn, BinaryViewColumn, Records
from kafkafmt.log import Segment, warn_fallbacks
from kafkafmt.storage import listed_files, listed_size, open_storage
from kafkafmt._util.threads import resolve_threads, thread_pool
from kafkafmt._util.collect import paused
from kafkafmt._native.arraymem import plain_arrays
from kafkafmt.log import read_task, read_tasks
from kafkafmt.log import SMALL_UNIT_BYTES, Unit, UnitChunks, announce, read_units
from kafkafmt.read._piecetyping import piece_typed
from kafkafmt.values import DEFAULT_MAX_DEPTH, FailedValues, decode_values, empty_typed, gather_views, get_format

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "read_segment", "read_log_dir_with",
           "read_log_dirs_with", "iter_log_dir_with", "iter_log_dirs_with", "read_segment_with", "iter_partitions_with",
           "iter_partition_chunks",
           "scan_named"]

# Each reader names its options in its signature (keyword-only), packs them into a `ReadOptions`
# (`ReadOptions.of(locals())`, its first line) and hands them to its ``*_with`` form, which the doors (the
# command line, Spark) call with the options they built. Its docstring's ``%(options)s`` line is filled with
# the options' shared entries (`document_options`).


#: a typed read of one partition decodes chunks of about this many bytes of raw keys and values: each chunk's
#: raw bytes (and mapped pages) are let go once it is typed, so the read holds little more than its result
TYPED_CHUNK_BYTES = 8 << 20

@document_options
def iter_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True, include_control=False,
                 max_decompressed=None, max_bytes=64 << 20, keep_empty=False, threads=None, binary="contiguous",
                 storage_options=None, filesystem=None, tiered_keys=None, value_format=None, key_format=None,
                 schema_registry=None, value_schema=None, key_schema=None, value_errors="null",
                 untyped_topics="error", keep_bytes=False, recursive_fields_max_depth=DEFAULT_MAX_DEPTH,
                 time_unit="us", additional_properties="keep", report=None):
    """Yield the records of one partition folder in chunks of about `max_bytes` of decoded data
    (whatever the segment sizes).

    Filters and options as `read_log_dir`; each chunk has topic and partition. The result is also
    an Arrow stream of the chunks (`kafkafmt.read._stream.RecordStream`).

    Parameters
    ----------
    folder : str, os.PathLike or Partition
        The partition folder: a path, a URL such as ``s3://bucket/logs/t-0`` (with
        `storage_options` / `filesystem`), a tiered upload folder, or a `Partition`.
    %(options)s
    report : list, optional
        Collects what was skipped or fell back (`ReportEntry` objects); each chunk's ``report``
        is this list too.

    Returns
    -------
    RecordStream
        An iterator of `Records` chunks, in offset order, and an Arrow stream of them (its
        ``schema`` known before anything is read) that an Arrow consumer pulls chunk by chunk.

    Raises
    ------
    %(partition_raises)s
    %(typed_raises)s

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> chunks = list(kafkafmt.iter_log_dir(f"{sample_dir()}/orders-0", max_bytes=256 << 10))
    >>> len(chunks), sum(len(c) for c in chunks)
    (8, 2400)
    >>> chunks[1], chunks[1].topic, chunks[1].partition, int(chunks[1].offset[0])
    (<Records orders-0: 863 records in 41 batches>, 'orders', 0, 22)
    >>> stream = kafkafmt.iter_log_dir(f"{sample_dir()}/orders-0", columns=["offset", "timestamp"])
    >>> stream.schema.names                  # before anything is read
    ['topic', 'partition', 'offset', 'timestamp', 'timestampType']
    >>> sum(batch.num_rows for batch in stream.record_batches())
    2400

    Typed values, with the schemas of the sample's ``_schemas`` topic:

    >>> for chunk in kafkafmt.iter_log_dir(f"{sample_dir()}/shipments-0", value_format="avro",
    ...                                    columns=["value", "offset"]):
    ...     print(chunk.columns, chunk.typed["value"].error_count)
    ['value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'valueSchemaId', 'valueError'] 0
    ['value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'valueSchemaId', 'valueError'] 1
    ['value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'valueSchemaId', 'valueError'] 0
    """
    return iter_log_dir_with(folder, ReadOptions.of(locals()), report=report)


def iter_log_dir_with(folder, options, *, report=None, typed=None):
    """`iter_log_dir` with its options as one `ReadOptions`; ``typed``: the typed-value options
    already opened for a read of several partitions (which warns once for them all), else None (the
    options' own are opened)."""
    part = resolve_partition(folder, options.storage_options, options.filesystem, options.tiered_keys)
    nested = typed is not None
    if typed is None:
        typed = scan_named(options.open_typed(_roots(part)), [part], options)
    if _segments_at_once(part, options, typed):
        # several small segments: decoded in one pass (and their values typed at once), each its chunk as below
        chunks = iter_partition_chunks([part], options, [] if report is None else report, typed=typed)
    else:
        chunks = _iter_partition(part, options, report=report, max_bytes=options.max_bytes,
                                 keep_empty=options.keep_empty, whole_tasks=False, typed=typed)
    return RecordStream(chunks if nested or not typed.active else _warning_at_end(chunks), columns=options.columns,
                        binary=options.binary, typed=typed, topics=[part.topic])


def _type(recs, typed):
    """``recs`` with typed keys / values (`decode_values`), the raw bytes of the typed sides dropped unless
    ``keep_bytes``."""
    return _drop_raw(decode_values(recs, typed), typed)


def _drop_raw(recs, typed):
    """``recs`` without the raw bytes of its typed sides, unless ``keep_bytes``."""
    return recs if typed.keep_bytes else recs.replace(**{side: None for side, _, _ in typed.sides()})


def _contiguous(recs):
    """``recs`` with its binary_view keys / values (the untyped sides of a read decoded with views)
    as contiguous binary columns, as the read was asked for."""
    changes = {}
    for side in ("key", "value"):
        col = recs.decoded(side)
        if isinstance(col, BinaryViewColumn):
            offsets, data = gather_views(col)
            changes[side] = BinaryColumn(offsets, data, col.validity, col.null_count)
    return recs.replace(**changes) if changes else recs


def _warning_at_end(chunks):
    """The chunks, then (once they are all read) a warning for each topic none of whose typed
    values could be read (`FailedValues`)."""
    tally = FailedValues()
    for recs in chunks:
        tally.add(recs)
        yield recs
    tally.warn()


def _roots(part):
    """Where a partition's read looks for the ``_schemas`` topic: its log dir (or upload root)."""
    return [part.log_dir_url] if part.log_dir_url is not None else None


def _decoding(options, typed):
    """The DecodeOptions of a partition read (the same for every partition of a read of several)."""
    columns = options.columns
    if options.errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {options.errors!r}")
    if typed.active:     # typed sides need their raw column
        columns = None if columns is None else list(columns) + [s for s, _, _ in typed.sides() if s not in columns]
    committed = options.isolation == "read_committed"
    # typed sides whose formats read values where they lie: the records are decoded with views into the
    # segment (no raw byte copied out), the untyped sides made contiguous again after typing
    views = (typed.active and not typed.keep_bytes and options.binary == "contiguous"
             and all(get_format(fmt).reads_views for _, fmt, _ in typed.sides()))
    return options.decode_options(columns, include_control=options.include_control and not committed,
                                  binary="view" if views else options.binary)


def scan_named(typed, parts, options):
    """``typed`` with the reader of each side whose column's type depends on what its values name (a
    Protobuf file of several messages, none named: `kafkafmt.values.TypedOptions.scanned`) pinned to what
    the values of ``parts`` (`Partition` s) name, read as ``options`` read them (their offset and time
    ranges, isolation and errors): the pass over the message indexes a typed read makes first, when it
    must, so that the column's type is known before its values are read. ``typed`` itself when no side
    needs it.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.log import find_partitions
    >>> from kafkafmt.read import ReadOptions
    >>> from kafkafmt.sample import sample_dir
    >>> options = ReadOptions(value_format="avro")
    >>> typed = options.open_typed([sample_dir()])
    >>> scan_named(typed, find_partitions(sample_dir(), ["shipments"], None, []), options) is typed   # Avro: known
    True
    """
    if not typed.active:
        return typed
    todo = typed.scanned(sorted({p.topic for p in parts if p.topic is not None}))
    if not todo:
        return typed
    found = {key: set() for key in todo}
    sides = sorted({side for side, _ in todo})
    decoding = options.decode_options(sides, include_control=False, binary="contiguous")
    for part in parts:
        wanted = [side for side in sides if (side, part.topic) in found]
        if not wanted:
            continue
        report = []          # (what a read skips or falls back on: said by the read itself)
        tasks = plan(part, start_offset=options.start_offset, end_offset=options.end_offset,
                     start_timestamp=options.start_timestamp, end_timestamp=options.end_timestamp,
                     isolation=options.isolation, report=report, errors=options.errors)
        for recs, _ in read_tasks(tasks, report, decoding, options.errors, options.max_bytes):
            for side in wanted:
                found[(side, part.topic)] |= typed.names_in(side, part.topic, recs.decoded(side))
    return typed.named(found)


def _plan_partition(part, report, options):
    """A partition's tasks (`plan`), its index fallbacks warned about once."""
    since = len(report)
    tasks = plan(part, start_offset=options.start_offset, end_offset=options.end_offset,
                 start_timestamp=options.start_timestamp, end_timestamp=options.end_timestamp,
                 isolation=options.isolation, report=report, errors=options.errors)
    warn_fallbacks(report, since, part.name)     # the index lookups are planning's: said once, here
    return tasks


def _iter_partition(part, options, *, report, max_bytes, keep_empty, whole_tasks, typed):
    report = [] if report is None else report
    decoding = _decoding(options, typed)
    tasks = _plan_partition(part, report, options)
    yield from _read_planned(part, tasks, report, decoding, errors=options.errors, max_bytes=max_bytes,
                             keep_empty=keep_empty, whole_tasks=whole_tasks, typed=typed,
                             committed=options.isolation == "read_committed", views=decoding.binary != options.binary,
                             runs=_in_one_pass(options, typed))


def _read_planned(part, tasks, report, decoding, *, errors, max_bytes, keep_empty, whole_tasks, typed, committed,
                  views=False, runs=False):
    """The chunks of a partition's planned tasks (`_iter_partition` after planning); ``views``: the records
    were decoded with views for typing (`_decoding`), their untyped sides made contiguous again. ``runs``: the
    read's options are those a pass of many small partitions takes (`_in_one_pass`): a log of many small segments
    is read a run of them at a time (`_read_runs`)."""
    if runs and _in_runs(tasks):
        yield from _read_runs(part, tasks, report, decoding, errors=errors, max_bytes=max_bytes,
                              keep_empty=keep_empty, whole_tasks=whole_tasks, typed=typed, views=views)
        return
    n_threads = resolve_threads(decoding.threads)
    if whole_tasks and n_threads > 1 and len(tasks) > 1:
        chunks = _read_tasks_parallel(tasks, report, decoding, errors, n_threads)
    else:
        chunks = read_tasks(tasks, report, decoding, errors, max_bytes)
    for recs, _ in chunks:
        yield from _finished(part, recs, report, keep_empty, typed, committed, views)


def _finished(part, recs, report, keep_empty, typed, committed, views):
    """A chunk of a partition's usual read as its read yields it: labelled, typed; nothing when it holds no
    record, batch nor control record the read keeps."""
    recs = recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report)
    # a chunk of record-less batches (the cleaner's empty batches) still carries them
    if len(recs) or keep_empty or (not committed and (len(recs.controls) or len(recs.batches))):
        if typed.active:
            recs = _typed_chunk(recs, report, typed)
            if views:
                recs = _contiguous(recs)
        yield recs


#: a partition of more than `kafkafmt.log.SMALL_UNIT_BYTES` of log whose segments hold at most this many bytes on
#: average is read a run of segments at a time (`_read_runs`): each segment read on its own costs about a third of
#: a millisecond whatever it holds
RUN_SEGMENT_BYTES = 1 << 20


def _in_runs(tasks):
    """Whether a partition's planned tasks are read in runs (`_read_runs`): several, local (a run of an object
    store's segments would fetch them all before its first chunk -- a stream's ``head(10)`` reading a run), more
    than `kafkafmt.log.SMALL_UNIT_BYTES` in all (a smaller log is read in one pass by `iter_partitions_with`), of at
    most `RUN_SEGMENT_BYTES` on average."""
    if not _SEGMENTS_AT_ONCE[0] or len(tasks) < 2 or not all(t.segment.storage.is_local for t in tasks):
        return False
    total = sum(t.stop_pos - t.start_pos for t in tasks)
    return SMALL_UNIT_BYTES < total <= RUN_SEGMENT_BYTES * len(tasks)


def _runs_of(tasks):
    """The tasks in runs of consecutive ones of at most `kafkafmt.log.SMALL_UNIT_BYTES` in all (a larger task a
    run of its own)."""
    run, total = [], 0
    for t in tasks:
        size = t.stop_pos - t.start_pos
        if run and total + size > SMALL_UNIT_BYTES:
            yield run
            run, total = [], 0
        run.append(t)
        total += size
    if run:
        yield run


def _read_runs(part, tasks, report, decoding, *, errors, max_bytes, keep_empty, whole_tasks, typed, views):
    """`_read_planned` of a log of many small segments: each run of them (`_runs_of`) read in one pass, as
    `iter_partitions_with` reads a small partition (`kafkafmt.log.read_units`: one buffer, one scan, one kernel
    pass; chunks joined at once when ``whole_tasks``), after the offset the runs before it read up to -- the batch
    before a run is its previous run's last, as `kafkafmt.log.read_tasks` carries it from segment to segment; a run
    the pass does not take (damage, a tail cut short, an empty segment...) read the usual way, from that offset."""
    bulk = decoding.replace(threads=1, binary="contiguous")
    after = None
    for run in _runs_of(tasks):
        unit = Unit(run, part.topic, part.partition, part.log_dir_url, report=report, after=after)
        (kind, got, _), = read_units([unit], bulk, chain=True, per_unit=True, chunk_bytes=max_bytes)
        if kind == "fallback":
            for recs, after in read_tasks(run, report, decoding, errors, max_bytes, after=after):
                yield from _finished(part, recs, report, keep_empty, typed, False, views)
            continue
        lasts = got.piece.records.batches["last_offset"]     # (the piece holds this run alone)
        if len(lasts) and lasts.max() >= 0:
            after = max(int(lasts.max()), -1 if after is None else after)
        chunks = _TypedChunks(got, report, typed) if typed.active else got
        yield from (_chunk_list(chunks, typed) if whole_tasks else chunks)


def _typed_chunk(recs, report, typed):
    """A chunk of a partition's read with its typed keys / values (`_type`), their report entries appended to
    the read's ``report``."""
    typed_recs = _type(recs.replace(report=[]), typed)
    report += typed_recs.report
    return typed_recs.replace(report=report)


class _TypedChunks:
    """A partition's chunks read in one pass with others (``unit``: its `kafkafmt.log.UnitChunks`), typed as its own
    read types each (`_typed_chunks`): an iterator, as a read's generator."""

    __slots__ = ("unit", "_it")

    def __init__(self, unit, report, typed):
        self.unit = unit
        self._it = _typed_chunks(unit, report, typed)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)


def _typed_chunks(chunks, report, typed):
    """A partition's chunks read in one pass with others (`kafkafmt.log.UnitChunks`), typed as its own read
    types each: their rows of the pass's values typed at once where that gives the same (`piece_typed`), else
    each chunk on its own."""
    whole = piece_typed(chunks.piece, typed) if isinstance(chunks, UnitChunks) else None
    if whole is None:
        for recs in chunks:
            yield _typed_chunk(recs, report, typed)
        return
    edges, first = chunks.piece.record_edges, int(chunks.piece.unit_edges[chunks.index])
    for k, recs in enumerate(chunks):
        yield _drop_raw(recs.replace(typed=whole.rows(int(edges[first + k]), int(edges[first + k + 1]))), typed)


def _read_tasks_parallel(tasks, report, options, errors, threads):
    """The tasks read whole, `threads` at a time, with the results (records, reports, the error
    raised) of `_read_tasks`: each task is read without the offset of the batch before it; a task
    whose predecessor ended above the floor its own segment sets (only then can that offset change
    the result) is read again, in order, with it."""
    inner = options.replace(threads=1) if len(tasks) >= threads else options
    pool = thread_pool(threads, "tasks")

    def one(task, after=None):
        own = []
        try:
            return list(read_task(task, own, options=inner, errors=errors, max_bytes=1 << 62, after=after)), own, None
        except Exception as exc:   # raised in order below
            return None, own, exc

    futures = [pool.submit(one, t) for t in tasks]
    after = None
    try:
        for task, fut in zip(tasks, futures):
            chunks, own, exc = fut.result()
            floor = task.segment.base_offset - 1
            if after is not None and after > floor:
                chunks, own, exc = one(task, after)
            report += own
            if exc is not None:
                raise exc
            for recs, last in chunks:
                if last is not None:
                    after = last if after is None else max(after, last)
                yield recs, after
    finally:
        for fut in futures:
            fut.cancel()


def iter_partitions_with(parts, options, *, typed=None, start_offsets=None):
    """Each partition of ``parts`` (`Partition` s) in order as ``(partition, chunks, report)``: ``chunks``
    what ``iter_log_dir_with(partition, options, report=report)`` yields, to be consumed before the next
    partition is asked for. Many small partitions are read in one pass (`kafkafmt.log.read_units`: one
    buffer, one scan, one kernel pass), each yielding the chunks its usual read would (one per segment,
    with the same records, batches, control records and report); the others -- and any not clean whole
    segments -- are read the usual way, in their place, with the tasks already planned. ``typed``: as
    `iter_log_dir_with`'s (the records of many small partitions decoded in one pass, each chunk typed as its own
    read types it; without it, a read with typed values reads partition by partition). ``start_offsets``: each
    partition's own start offset (int or None, one per partition of ``parts``, in their order) in place of
    ``options.start_offset`` (an export going on from where its table left each partition)."""
    parts = list(parts)
    each = _each_options(parts, options, start_offsets)
    if not _in_one_pass(options, typed):
        _announce(_whole(parts, each), options)
        for part, own in zip(parts, each):
            report = []
            yield part, iter_log_dir_with(part, own, report=report, typed=typed), report
        return
    typed = options.open_typed(None) if typed is None else typed
    decoding = _decoding(options, typed)
    resolve_threads(decoding.threads)       # (a count that is no count said as each partition's read says it)
    _announce(_whole(parts, each), options)
    units = [None] * len(parts)
    views = decoding.binary != options.binary       # (typed values read where they lie: `_decoding`)

    def usual(unit, part):
        if unit.error is not None:
            raise unit.error
        yield from _read_planned(part, unit.tasks, unit.report, decoding, errors=options.errors,
                                 max_bytes=options.max_bytes, keep_empty=options.keep_empty, whole_tasks=False,
                                 typed=typed, committed=False, views=views, runs=True)

    # (in one pass the raw values are copied out, as a read asked for contiguous columns has them: the buffer
    # they lie in is reused)
    for kind, x, i in read_units(_planned_units(parts, each, units),
                                 decoding.replace(threads=1, binary=options.binary), chain=True,
                                 max_bytes=_PIECE_BYTES, per_unit=True, chunk_bytes=options.max_bytes):
        if kind == "fallback":
            i, chunks = x, usual(units[x], parts[x])
        else:
            chunks = _TypedChunks(x, units[i].report, typed) if typed.active else iter(x)
        yield parts[i], chunks, units[i].report
        units[i] = None              # (read: its planned tasks go)


def _in_one_pass(options, typed):
    """Whether `iter_partitions_with` reads small partitions in one pass with these options (``typed``: as it takes
    them); else it reads each with `iter_log_dir_with`."""
    untyped = options.value_format is None and options.key_format is None
    return not ((typed is None and not untyped) or options.binary != "contiguous"
                or options.isolation == "read_committed")


def _each_options(parts, options, start_offsets):
    """The options of each partition's read: ``options``, with its own start offset when ``start_offsets``
    are given (one per partition)."""
    if start_offsets is None:
        return [options] * len(parts)
    start_offsets = list(start_offsets)
    if len(start_offsets) != len(parts):
        raise ValueError(f"start_offsets: {len(start_offsets)} for {len(parts)} partitions")
    made = {}                   # (one options object a start offset)
    return [made[s] if s in made else made.setdefault(s, options.replace(start_offset=s)) for s in start_offsets]


def _whole(parts, each):
    """The partitions whose own start offset is not set (``each``: their reads' options, `_each_options`)."""
    return [p for p, o in zip(parts, each) if o.start_offset is None]


def _announce(parts, options):
    """Partitions about to be read whole, in this order: their object stores fetch the segments ahead
    (`kafkafmt.log.announce`); a read bounded by offsets or times reads ranges, planned from the indexes."""
    if options.start_offset is None and options.end_offset is None and options.start_timestamp is None \
            and options.end_timestamp is None:
        announce(parts)


#: segment bytes of the partitions `iter_partitions_with` reads in one pass before yielding them
_PIECE_BYTES = 4 << 20


def _planned_units(parts, each, units, first=0):
    """The `Unit` of each partition, planned when asked for with its read's options (``each``: an iterable, one
    per partition; a planning error kept for its turn: raised where its read would raise it), each also stored
    as ``units[first + k]``."""
    for k, (p, options) in enumerate(zip(parts, each)):
        unit = Unit(None, p.topic, p.partition, p.log_dir_url)
        try:
            unit.tasks = _plan_partition(p, unit.report, options)
        except Exception as exc:       # noqa: BLE001 - raised in its turn, as its own read would
            unit.error = exc
        units[first + k] = unit
        yield unit


@document_options
def read_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True, include_control=False,
                 max_decompressed=None, threads=None, binary="contiguous", storage_options=None, filesystem=None,
                 tiered_keys=None, value_format=None, key_format=None, schema_registry=None, value_schema=None,
                 key_schema=None, value_errors="null", untyped_topics="error", keep_bytes=False,
                 recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
                 additional_properties="keep") -> Records:
    """All records of one partition folder (``<topic>-<partition>``) as one `Records`.

    Parameters
    ----------
    folder : str, os.PathLike or Partition
        The partition folder: a path, a URL with `storage_options` / `filesystem`, a tiered
        upload folder, or a `Partition`.
    %(options)s

    Returns
    -------
    Records
        With topic and partition. Its ``report`` lists what was skipped (leftover files, corrupt
        ranges, truncated tails) and where an index was not used; ``tail`` / ``truncated`` /
        ``valid_bytes`` / ``trailing_bytes`` describe the end of the partition's last segment.

    Raises
    ------
    %(partition_raises)s
    %(typed_raises)s

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0", start_offset=1000, end_offset=1010)
    >>> recs
    <Records orders-0: 10 records in 5 batches>
    >>> recs.offset
    array([1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009])
    >>> recs.columns
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers']

    A read_committed consumer skips the aborted transaction of the sample's payments:

    >>> (len(kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")),
    ...  len(kafkafmt.read_log_dir(f"{sample_dir()}/payments-0", isolation="read_committed")))
    (120, 100)
    >>> kafkafmt.read_log_dir(f"{sample_dir()}/orders-0", start_timestamp="2026-01-01T00:05:00Z",
    ...                       columns=["offset", "timestamp"])
    <Records orders-0: 1205 records in 60 batches>

    Avro values in the Schema Registry wire format, the schemas read from the sample's
    ``_schemas`` topic (found in the same log dir); one value is not in the wire format:

    >>> ships = kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0", value_format="avro")
    >>> ships.to_arrow().select(["offset", "valueSchemaId"]).slice(999, 2).to_pylist()
    [{'offset': 999, 'valueSchemaId': 1}, {'offset': 1000, 'valueSchemaId': 2}]
    >>> ships.typed["value"].error_count, ships.report[-1].kind, ships.report[-1].offset
    (1, <ReportKind.BAD_VALUE: 'bad_value'>, 1234)

    An older version of the subject as the reader schema (its four fields), and bad values as errors:

    >>> v1 = kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0", value_format="avro",
    ...                            value_schema={"version": 1})
    >>> v1.to_arrow().schema.field("value").type.names
    ['order_id', 'carrier', 'weight_kg', 'shipped_at']
    >>> kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0", value_format="avro", value_errors="strict")
    Traceback (most recent call last):
    ...
    kafkafmt.errors.ValueDecodeError: bad avro value of the record at offset 1234: no magic byte: ...
    """
    return read_log_dir_with(folder, ReadOptions.of(locals()))


def read_log_dir_with(folder, options, *, typed=None):
    """`read_log_dir` with its options as one `ReadOptions`; ``typed`` as `iter_log_dir_with`'s."""
    report = []
    part = resolve_partition(folder, options.storage_options, options.filesystem, options.tiered_keys)
    nested = typed is not None      # a read of several partitions warns for them all
    if typed is None:
        typed = scan_named(options.open_typed(_roots(part)), [part], options)
    max_bytes = TYPED_CHUNK_BYTES if typed.active else 1 << 62
    if _segments_at_once(part, options, typed):
        # several small segments: decoded in one pass (and their values typed at once), each its chunk as below
        (_, chunks, report), = iter_partitions_with([part], options.replace(max_bytes=max_bytes, keep_empty=True),
                                                    typed=typed)
        parts = _chunk_list(chunks, typed)
    else:
        parts = list(_iter_partition(part, options, report=report, max_bytes=max_bytes, keep_empty=True,
                                     whole_tasks=True, typed=typed))
    return _partition_records(part, parts, report, options.columns, options.binary, typed, warn=not nested)


def _chunk_list(chunks, typed):
    """A partition's chunks (as `iter_partitions_with` yields them) as `_partition_records` takes them: read in one
    pass, joined at once (`_unit_records`), else each."""
    unit = chunks.unit if isinstance(chunks, _TypedChunks) else chunks
    whole = _unit_records(unit, typed) if isinstance(unit, UnitChunks) and not unit.started else None
    return [whole] if whole is not None else list(chunks)


def _unit_records(chunks, typed):
    """A partition's chunks read in one pass (`kafkafmt.log.UnitChunks`) joined at once (`BulkPiece.unit_records`),
    its values typed by the pass's typing (`piece_typed`); None where each chunk must be typed on its own."""
    piece, j = chunks.piece, chunks.index
    if not typed.active:
        return piece.unit_records(j)
    whole = piece_typed(piece, typed)
    if whole is None:
        return None
    recs = piece.unit_records(j)
    if recs is None:
        return None
    edges = piece.record_edges
    lo, hi = int(edges[piece.unit_edges[j]]), int(edges[piece.unit_edges[j + 1]])
    return _drop_raw(recs.replace(typed=whole.rows(lo, hi)), typed)


#: whether `read_log_dir` reads a partition of several small segments in one pass (a test turns it off to compare)
_SEGMENTS_AT_ONCE = [True]


def _segments_at_once(part, options, typed):
    """Whether a partition's segments are read in one pass (`iter_partitions_with`): several, of at most
    `kafkafmt.log.SMALL_UNIT_BYTES` in all (a larger log is read segment by segment, a thread each), with options
    a pass takes (`_in_one_pass`)."""
    if not _SEGMENTS_AT_ONCE[0] or not _in_one_pass(options, typed):
        return False
    logs = sum(1 for _ in listed_files(part.listing or (), lambda name: name.endswith(LOG_SUFFIX)))
    return logs > 1 and _log_bytes(part) <= SMALL_UNIT_BYTES


def _partition_records(part, parts, report, columns, binary, typed, warn=False):
    """One partition's chunks as the one Records `read_log_dir` returns (``warn``: say when none of its values
    could be read -- a read of several partitions says it once for them all)."""
    if not parts:
        return _empty(columns, binary, typed, report, topic=part.topic, partition=part.partition,
                      log_dir=part.log_dir_url)
    # where the log ends: the last chunk read (of the last segment, when the read reached it)
    last = parts[-1]
    end = dict(valid_bytes=last.valid_bytes, trailing_bytes=last.trailing_bytes, tail=last.tail, file=last.file)
    del last
    recs = Records.concat(parts, consume=True)     # (the chunks let go column by column: one copy at a time)
    if typed.active and warn:
        FailedValues().add(recs).warn()
    return recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report, **end)


def _empty(columns, binary, typed, report, decode_typed=True, **where):
    """No records, with the columns (typed where asked) a read of records would have."""
    options = DecodeOptions.for_columns(columns, binary=binary)
    recs = decode(b"", **options.decode_kwargs()).replace(report=report, **where)
    if decode_typed and typed.active and where.get("topic") is not None:
        recs = _type(recs, typed).replace(report=report)
    return recs


def _plural_hint(func):
    """A reader of several partitions whose unexpected ``topic=`` / ``partition=`` says which name it takes."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        for name in ("topic", "partition"):
            if name in kwargs:
                raise TypeError(f"{func.__name__}() got an unexpected keyword argument {name!r} (did you mean "
                                f"{name}s=?)")
        return func(*args, **kwargs)
    return call


@_plural_hint
@document_options
def iter_log_dirs(root, topics=None, partitions=None, *, start_offset=None, end_offset=None, start_timestamp=None,
                  end_timestamp=None, isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                  include_control=False, max_decompressed=None, max_bytes=64 << 20, keep_empty=False, threads=None,
                  binary="contiguous", storage_options=None, filesystem=None, tiered_keys=None,
                  replicas=DEFAULT_REPLICAS, topic_id=None, value_format=None, key_format=None, schema_registry=None,
                  value_schema=None, key_schema=None, value_errors="null", untyped_topics="error", keep_bytes=False,
                  recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep",
                  report=None):
    """Chunks of every partition under one or several roots, filtered by topic names and
    partition numbers; options as `iter_log_dir`.

    The result is also an Arrow stream of the chunks (`kafkafmt.read._stream.RecordStream`).

    Parameters
    ----------
    root : str, os.PathLike or list
        One root or a list of roots (paths or URLs: log dirs, folders holding log dirs at any
        depth, e.g. ``kafka-logs-1``..``-3`` of brokers on one host, tiered uploads).
    topics : str or list of str, optional
        Only these topics (a topic that matches nothing warns).
    partitions : int or list of int, optional
        Only these partition numbers.
    %(options)s
    report : list, optional
        Collects what was skipped or fell back, of every partition (`ReportEntry` objects); each
        chunk's ``report`` is this list too.

    Returns
    -------
    RecordStream
        An iterator of `Records` chunks, one partition at a time, partition after partition, and
        an Arrow stream of them (typed columns merged over the topics read).

    Raises
    ------
    NotALogDirError
        A root is a file.
    PathNotFoundError, CorruptRecordError, ValueError
        As `iter_log_dir`.
    %(typed_raises)s

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> for chunk in kafkafmt.iter_log_dirs(sample_dir(), topics=["orders", "payments"], partitions=[0],
    ...                                     columns=["offset"]):
    ...     print(chunk.topic, chunk.partition, len(chunk))
    orders 0 885
    orders 0 758
    orders 0 258
    orders 0 499
    payments 0 45
    payments 0 25
    payments 0 50

    Typed values (the schemas from the ``_schemas`` topic under the root):

    >>> for chunk in kafkafmt.iter_log_dirs(sample_dir(), topics=["shipments"], value_format="avro"):
    ...     print(chunk.to_arrow()["value"][0]["carrier"], chunk.typed["value"].schema_id[0])
    FEDEX 1
    ... 2
    ... 2
    """
    return iter_log_dirs_with(root, topics, partitions, ReadOptions.of(locals()), report=report)


def iter_log_dirs_with(root, topics, partitions, options, *, report=None):
    """`iter_log_dirs` with its options as one `ReadOptions`."""
    report = [] if report is None else report
    typed = options.open_typed(root)
    found = find_partitions(root, topics, partitions, report, options.storage_options, options.filesystem,
                            options.tiered_keys, options.replicas, options.topic_id)
    typed = scan_named(typed, found, options)
    chunks = iter_partition_chunks(found, options, report, typed=typed)
    return RecordStream(_warning_at_end(chunks) if typed.active else chunks, columns=options.columns,
                        binary=options.binary, typed=typed, topics=[p.topic for p in found])


def iter_partition_chunks(parts, options, report, *, typed=None, start_offsets=None):
    """The chunks of every partition of ``parts`` (`Partition` s) in order, as `iter_log_dir_with` gives each:
    many small partitions decoded in one pass (`iter_partitions_with`, ``start_offsets`` as its), each
    partition's report entries moved into ``report`` (every chunk's ``report``) as its chunks come, in the order
    its own read makes them (those made before an error its read raises too)."""
    for _, chunks, own in iter_partitions_with(parts, options, typed=typed, start_offsets=start_offsets):
        taken = 0
        try:
            for recs in chunks:
                taken = _moved(own, taken, report)
                yield recs if recs.report is report else recs.replace(report=report)
        finally:
            _moved(own, taken, report)


def _moved(own, taken, report):
    """The entries of ``own`` from ``taken`` on appended to ``report`` (unless they are one list); how many
    ``own`` holds."""
    if own is not report and len(own) > taken:
        report += own[taken:]
    return len(own)


@_plural_hint
@document_options
def read_log_dirs(root, topics=None, partitions=None, *, start_offset=None, end_offset=None, start_timestamp=None,
                  end_timestamp=None, isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                  include_control=False, max_decompressed=None, threads=None, binary="contiguous",
                  storage_options=None, filesystem=None, tiered_keys=None, replicas=DEFAULT_REPLICAS, topic_id=None,
                  value_format=None, key_format=None, schema_registry=None, value_schema=None, key_schema=None,
                  value_errors="null", untyped_topics="error", keep_bytes=False,
                  recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
                  additional_properties="keep") -> Records:
    """All records of every partition under one or several roots, with topic and partition
    columns; options as `read_log_dir`.

    Parameters
    ----------
    root : str, os.PathLike or list
        One root or a list of roots (paths or URLs, local and remote mixed: log dirs, folders
        holding log dirs at any depth, tiered uploads).
    topics : str or list of str, optional
        Only these topics (a topic that matches nothing warns).
    partitions : int or list of int, optional
        Only these partition numbers.
    %(options)s

    Returns
    -------
    Records
        The partitions' records one partition after the other; ``report`` holds every
        partition's entries.

    Raises
    ------
    NotALogDirError
        A root is a file.
    PathNotFoundError, CorruptRecordError, ValueError
        As `read_log_dir`.
    %(typed_raises)s

    Examples
    --------
    >>> import numpy as np
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dirs(sample_dir(), topics=["orders", "payments"])
    >>> recs
    <Records: 4920 records in 237 batches>
    >>> names, counts = np.unique(recs.topic, return_counts=True)
    >>> dict(zip(names.tolist(), counts.tolist()))
    {'orders': 4800, 'payments': 120}
    >>> kafkafmt.read_log_dirs(sample_dir(), topics=["orders"], partitions=[1])
    <Records orders-1: 2400 records in 114 batches>

    Typed values: the shipments' Avro values (two schema versions, one bad value), the schemas
    read from the sample's ``_schemas`` topic:

    >>> ships = kafkafmt.read_log_dirs(sample_dir(), topics=["shipments"], value_format="avro",
    ...                                key_format="string")
    >>> ships.columns
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers',
     'keySchemaId', 'keyError', 'valueSchemaId', 'valueError']
    >>> table = ships.to_arrow()
    >>> table.schema.field("value").type.names
    ['order_id', 'carrier', 'weight_kg', 'shipped_at', 'tracking', 'items']
    >>> row = table.slice(1999, 1).to_pylist()[0]
    >>> row["key"], row["value"]["carrier"], row["value"]["items"], row["valueSchemaId"]
    ('o-0003035', 'DHL', ['sku-93'], 2)
    >>> table.filter(table["valueError"].is_valid()).select(["offset", "valueError"]).to_pylist()
    [{'offset': 1234, 'valueError': 'no magic byte: the value starts with 0x7b, not 0x00 (not the Schema ...)'}]
    >>> kept = kafkafmt.read_log_dirs(sample_dir(), topics=["shipments"], value_format="avro", keep_bytes=True)
    >>> kept.value[1234][:12]               # raw bytes kept (keep_bytes): plain JSON, not the wire format
    b'{"order_id":'
    """
    return read_log_dirs_with(root, topics, partitions, ReadOptions.of(locals()))


def read_log_dirs_with(root, topics, partitions, options):
    """`read_log_dirs` with its options as one `ReadOptions`."""
    # (planning thousands of partitions: no collection that frees nothing; their columns and batch tables
    # allocated without NumPy's huge-page advice, which made every other read of 20,000 partitions a second
    # slower in the kernel: `kafkafmt._native.arraymem`)
    with paused(), plain_arrays():
        return _read_log_dirs(root, topics, partitions, options)


def _read_log_dirs(root, topics, partitions, options):
    report = []
    parts = []
    typed = options.open_typed(root)
    n = resolve_threads(options.threads)
    found = find_partitions(root, topics, partitions, report, options.storage_options, options.filesystem,
                            options.tiered_keys, options.replicas, options.topic_id, threads=n)
    typed = scan_named(typed, found, options)
    if len(found) > 1 and not typed.active and options.binary == "contiguous":
        parts = _read_bulk(found, report, typed, options)
    elif len(found) > 1 and _in_one_pass(options, typed) and (n == 1 or _small(sum(map(_log_bytes, found)),
                                                                               len(found))):
        parts = _read_typed_bulk(found, report, typed, options)
    elif n > 1 and len(found) > 1:
        _announce(found, options)
        inner = options.replace(threads=1 if len(found) >= n else options.threads)
        pool = thread_pool(n, "partitions")
        futures = [pool.submit(read_log_dir_with, p, inner, typed=typed) for p in found]
        try:
            results = [f.result for f in futures]
            for get in results:
                recs = get()
                report += recs.report
                parts.append(recs)
        finally:
            for f in futures:
                f.cancel()
    else:
        _announce(found, options)
        for p in found:
            recs = read_log_dir_with(p, options, typed=typed)
            report += recs.report
            parts.append(recs)
    if not parts:
        # no partition found: the columns of a read that found some (topic and partition; typed as the
        # topics asked for, when named)
        recs = _empty(options.columns, options.binary, typed, report, topic="", partition=0, decode_typed=False)
        named = [topics] if isinstance(topics, str) else list(topics or ())
        if not (typed.active and named):
            return recs
        recs = recs.replace(typed=empty_typed(typed, named))
        return _drop_raw(recs, typed)
    recs = Records.concat(parts, consume=True).replace(report=report)
    if typed.active:
        FailedValues().add(recs).warn()
    return recs



#: the bytes of log a partition has on average below which a threaded bulk read keeps its partitions in one run:
#: a few KB of decoding each is less than the planning and bookkeeping around it, which hold the GIL
BULK_RUN_MIN_BYTES = 64 << 10


def _log_bytes(part):
    """The bytes of a partition's ``.log`` files, as its listing says."""
    return listed_size(part.listing or (), LOG_SUFFIX)


def _small(total, count):
    """Whether ``count`` partitions of ``total`` bytes of log hold less than `BULK_RUN_MIN_BYTES` each on average:
    read on one thread, as threads would only contend for their Python work."""
    return total < BULK_RUN_MIN_BYTES * count


def _read_typed_bulk(found, report, typed, options):
    """`read_log_dirs` of several small partitions with typed values: each partition as `read_log_dir` reads it,
    the records of many decoded in one pass (`iter_partitions_with`), each chunk typed as its own read types it
    (a read of one partition's values at a time made most of such a read, and threads only contended for it)."""
    parts = []
    inner = options.replace(max_bytes=TYPED_CHUNK_BYTES, keep_empty=True)
    for part, chunks, own in iter_partitions_with(found, inner, typed=typed):
        recs = _partition_records(part, _chunk_list(chunks, typed), own, options.columns, options.binary, typed)
        report += recs.report
        parts.append(recs)
    return parts


def _read_bulk(found, report, typed, options):
    """`read_log_dirs` of several partitions without a typed format: each partition as `read_log_dir` reads
    it, small ones read together (`kafkafmt.log._bulk`: one buffer, one scan and one kernel pass for
    many), the others -- and any whose bytes are not clean whole segments -- one by one, in their place.
    The parts to concatenate, in order; each partition's report entries appended to `report` in order."""
    decoding = _decoding(options, typed)
    committed = options.isolation == "read_committed"
    units = [None] * len(found)

    n = resolve_threads(options.threads)
    # partitions read the usual way: one at a time with every thread, or (threads > 1) several at once,
    # each with one, while the small ones are read in bulk (its C loops release the GIL)
    alone = decoding if n == 1 else decoding.replace(threads=1)
    pool = thread_pool(n, "partitions") if n > 1 else None

    def usual(i):
        unit, p = units[i], found[i]
        if unit.error is not None:
            raise unit.error
        chunks = list(_read_planned(p, unit.tasks, unit.report, alone, errors=options.errors, max_bytes=1 << 62,
                                    keep_empty=True, whole_tasks=True, typed=typed, committed=committed,
                                    runs=_in_one_pass(options, typed)))
        return _partition_records(p, chunks, unit.report, options.columns, options.binary, typed)

    parts = []          # Records, or a pool's future of one (or of a share's parts)
    try:
        if pool is None:
            _announce(found, options)
            for kind, x, _ in read_units(_planned_units(found, itertools.repeat(options), units),
                                         decoding.replace(threads=1), chain=True,
                                         expected_bytes=sum(map(_log_bytes, found)) or None):
                parts.append(x if kind == "records" else usual(x))
        else:
            # threads: the partitions shared out in contiguous runs of about equal bytes (their listed .log
            # sizes), each run planned and read in bulk by a thread of its own -- one run where they are small
            # (the read then bound by its Python work per partition, which threads would only contend for)
            sizes = np.cumsum([_log_bytes(p) for p in found])
            runs_of = 1 if _small(sizes[-1], len(found)) else n
            cuts = np.searchsorted(sizes, sizes[-1] * np.arange(1, runs_of) / runs_of, side="right")
            edges = sorted({0, len(found), *[int(c) for c in cuts]})

            def share(lo, hi):
                out = []
                _announce(found[lo:hi], options)       # (each thread's share fetched ahead of it)
                expected = int(sizes[hi - 1] - (sizes[lo - 1] if lo else 0)) or None
                for kind, x, _ in read_units(_planned_units(found[lo:hi], itertools.repeat(options), units, lo),
                                             decoding.replace(threads=1), chain=True, expected_bytes=expected):
                    out.append(x if kind == "records" else pool.submit(usual, lo + x))
                return out

            if len(edges) == 2:
                # one run: read here (a pool's thread would only wait for it, on another core's cold caches);
                # the partitions read the usual way still go to the pool
                parts = share(0, len(found))
            else:
                runs = [pool.submit(share, lo, hi) for lo, hi in zip(edges, edges[1:])]
                parts += runs
                parts = [x for run in runs for x in run.result()]
        # in order: the first partition's error is the one raised, as in a serial read
        parts = [p.result() if hasattr(p, "result") else p for p in parts]
    finally:
        for p in parts:
            if hasattr(p, "cancel"):
                p.cancel()
    for unit in units:
        report += unit.report
    return parts


@document_options
def read_segment(path, *, keys=True, values=True, headers=True, errors="strict", verify_crc=True, include_control=False,
                 max_decompressed=None, max_batch_bytes=DecodeOptions.max_batch_bytes, threads=None,
                 binary="contiguous", topic=None, partition=None, storage_options=None, filesystem=None,
                 tiered_keys=None, value_format=None, key_format=None, schema_registry=None, value_schema=None,
                 key_schema=None, value_errors="null", untyped_topics="error", keep_bytes=False,
                 recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
                 additional_properties="keep") -> Records:
    """Decode a whole segment file (memory-mapped when local).

    Parameters
    ----------
    path : str or os.PathLike
        The segment file: a path or a URL such as ``s3://bucket/t-0/00000000000000000000.log``
        (with `storage_options` or `filesystem`), or the log object of a tiered-storage upload
        (``<base>-<segment id>.log`` in its upload folder; encrypted Aiven uploads with `tiered_keys`).
    %(options)s

    Returns
    -------
    Records

    Raises
    ------
    NotKafkaDataError
        The file is not Kafka data at all (``errors="strict"``).
    CorruptRecordError
        ``errors="strict"`` and an entry is corrupt (`CrcError` for a CRC mismatch).
    PathNotFoundError
        No such file.
    ValueError
        An unknown `errors`, format or `value_errors`, or a schema option without a format.
    %(typed_raises)s

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_segment(f"{sample_dir()}/orders-0/00000000000000000885.log")
    >>> recs, recs.topic, recs.partition
    (<Records orders-0: 758 records in 36 batches>, 'orders', 0)
    >>> recs.offset[[0, -1]]
    array([ 885, 1642])
    >>> seg = kafkafmt.read_segment(f"{sample_dir()}/shipments-0/00000000000000000000.log", value_format="avro")
    >>> seg.to_arrow()["value"][0]["order_id"], seg.typed["value"].schema_id[0]
    (<pyarrow.StringScalar: 'o-0002419'>, <pyarrow.Int32Scalar: 1>)
    >>> kafkafmt.read_segment(f"{sample_dir()}/orders-0/partition.metadata")
    Traceback (most recent call last):
    ...
    kafkafmt.errors.NotKafkaDataError: not a Kafka log segment: first entry at position 0: ...
    """
    return read_segment_with(path, ReadOptions.of(locals()))


def _tiered_upload(storage, path, folder, options):
    """(Partition, Segment) when ``path`` is the log object of a tiered-storage upload (a file whose name is
    not a local segment's, in an upload folder of a known layout: `kafkafmt.log.resolve_partition`), read
    through its layout (decompressed, decrypted with ``options.tiered_keys``); else None."""
    if segment_base(storage.name(path)) is not None or partition_of_name(storage.name(folder)) is not None:
        return None
    try:
        part = resolve_partition(folder if storage.is_local else storage.url(folder), options.storage_options,
                                 options.filesystem, options.tiered_keys)
    except (NotALogDirError, PathNotFoundError):
        return None
    for seg in part.segments or ():
        if seg.log == path:
            return part, seg
    return None


def read_segment_with(path, options):
    """`read_segment` with its options as one `ReadOptions`."""
    errors = options.errors
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    storage, p = open_storage(path, options.storage_options, options.filesystem)
    p = os.fspath(p) if storage.is_local else p
    folder = storage.parent(os.path.abspath(p) if storage.is_local else p)
    upload = _tiered_upload(storage, p, folder, options)
    if upload is not None:
        part, seg = upload
    else:
        tp = partition_of_name(storage.name(folder)) or (None, None)
        part = Partition(tp[0], tp[1], folder, storage)
        seg = Segment.of_file(p, storage) if segment_base(storage.name(p)) is not None else None
    log_dir = part.log_dir_url
    typed = options.open_typed(None if log_dir is None else [log_dir])
    topic = part.topic if options.topic is None else options.topic
    partition = part.partition if options.partition is None else options.partition
    file = storage.url(p)
    decoding = options.decode_options()
    with (seg.open() if upload is not None else storage.open(p)) as f:
        buf, _ = window(f, 0, f.size)
        why = not_kafka_reason(buf) if errors == "strict" else None
        if why is not None:
            raise NotKafkaDataError(f"not a Kafka log segment: {why}", file=file, position=0)
        if errors == "salvage":
            report = []
            recs, _ = read_range(seg, f, 0, f.size, report, options=decoding, errors="salvage")
            recs = recs.replace(report=report)
        else:
            recs = decode(buf, file=file, check_offsets=seg is not None,
                          after_offset=None if seg is None else seg.base_offset - 1, **decoding.decode_kwargs())
    recs = recs.replace(topic=topic, partition=partition, log_dir=log_dir)
    if not typed.active:
        return recs
    typed = typed.named({(side, t): typed.names_in(side, t, recs.decoded(side))
                         for side, t in typed.scanned([topic])})        # (the values read are here)
    recs = _type(recs, typed)
    FailedValues().add(recs).warn()
    return recs

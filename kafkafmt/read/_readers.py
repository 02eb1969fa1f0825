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

import dataclasses
import inspect
import os

from kafkafmt.read._stream import RecordStream
from kafkafmt.record import DecodeOptions, decode
from kafkafmt.log import Partition, find_partitions, resolve_partition
from kafkafmt.errors import NotKafkaDataError
from kafkafmt.log import not_kafka_reason, window
from kafkafmt.log import partition_of_name, segment_base
from kafkafmt.log import plan
from kafkafmt.log import read_range
from kafkafmt.record import BinaryColumn, BinaryViewColumn, Records
from kafkafmt.log import Segment, warn_fallbacks
from kafkafmt.storage import open_storage
from kafkafmt._util.threads import resolve_threads, thread_pool
from kafkafmt.log import read_task, read_tasks
from kafkafmt.values import (FailedValues, TypedOptions, decode_values, empty_typed, gather_views, get_format,
                             open_typed)

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "read_segment"]

#: the readers' keyword arguments for typed keys and values (`kafkafmt.values._typed.open_typed`)
TYPED_KWARGS = ("value_format", "key_format", "schema_registry", "value_schema", "key_schema", "value_errors",
                "untyped_topics", "keep_bytes")

#: a typed read of one partition decodes chunks of about this many bytes of raw keys and values: each chunk's
#: raw bytes (and mapped pages) are let go once it is typed, so the read holds little more than its result
TYPED_CHUNK_BYTES = 8 << 20

# The numpydoc entries of the typed keyword arguments, the same in every reader: `_typed_doc` puts them
# where a reader's docstring has the line %(typed_parameters)s (in its Parameters section) and
# %(typed_raises)s (in its Raises section).
_TYPED_PARAMETERS = """\
value_format, key_format : str, optional
    Type values / keys: a name in the table of formats, `kafkafmt.values.FORMATS` ("avro",
    "registry" -- each schema id's registered type --, "protobuf", "json-schema", "json", ...); None
    (the default) keeps bytes. ``to_arrow()`` then has typed ``value`` / ``key`` columns (an Avro
    record is a struct) and valueSchemaId / valueError (keySchemaId / keyError); ``recs.typed``
    holds them as `DecodedColumn` objects.
schema_registry : optional
    Where schemas come from: a log dir, a folder of schema files, a registry URL, a
    `SchemaRegistry` (anything `open_registry` takes); None: the ``_schemas`` partition among the
    log dirs being read.
value_schema, key_schema : optional
    The reader schema (default: the latest version of subject ``<topic>-value`` /
    ``<topic>-key``; or an id, ``{"version": n}``, a subject, a schema).
value_errors : {"null", "strict"}
    "null" (the default: a bad value is null, its reason in valueError, counted in the report as
    BAD_VALUE) or "strict" (raise ValueDecodeError naming file, position and offset).
untyped_topics : {"error", "bytes"}
    A topic the format finds no schema for (no subject ``<topic>-value``, e.g.
    ``__consumer_offsets``): "error" (the default: raise SchemaNotFoundError naming it) or
    "bytes" (type the topics that have one; the others' values are null in ``value`` and their
    bytes in ``valueBytes``, keys alike in ``keyBytes``).
keep_bytes : bool
    Keep the raw bytes of typed keys / values in ``recs.key`` / ``recs.value`` (False, the
    default: they are dropped once typed, which halves what a typed read holds in memory).
"""
_TYPED_RAISES = """\
ValueDecodeError
    ``value_errors="strict"`` and a value or key cannot be decoded.
SchemaRegistryError
    A format needs schemas and there are none (no ``schema_registry``, no ``_schemas``
    partition among the log dirs read); `SchemaNotFoundError` (a subclass): no reader schema
    for a topic read (``untyped_topics="error"``).
SchemaError
    Two topics' types cannot be one column (the message names them and the first field that
    differs).
"""
_TYPED_MARKERS = {"%(typed_parameters)s": _TYPED_PARAMETERS, "%(typed_raises)s": _TYPED_RAISES}


def _typed_doc(func):
    """`func` with the typed keyword arguments' shared entries in its docstring, each indented as
    the marker line it replaces (a decorator; docstrings stripped by ``python -OO`` stay None)."""
    if func.__doc__ is None:
        return func
    lines = []
    for line in func.__doc__.split("\n"):
        text = _TYPED_MARKERS.get(line.strip())
        if text is None:
            lines.append(line)
        else:
            indent = line[:len(line) - len(line.lstrip())]
            lines += [indent + t if t else t for t in text.rstrip("\n").split("\n")]
    func.__doc__ = "\n".join(lines)
    return func


@_typed_doc
def iter_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, max_bytes=64 << 20, report=None,
                 keep_empty=False, storage_options=None, filesystem=None, threads=None, binary="contiguous",
                 value_format=None, key_format=None, schema_registry=None, value_schema=None, key_schema=None,
                 value_errors="null", untyped_topics="error", keep_bytes=False):
    """Yield the records of one partition folder in chunks of about `max_bytes` of decoded data
    (whatever the segment sizes).

    Filters and options as `read_log_dir`; each chunk has topic and partition. The result is also
    an Arrow stream of the chunks (`kafkafmt.read._stream.RecordStream`).

    Parameters
    ----------
    folder : str, os.PathLike or Partition
        The partition folder: a path, a URL such as ``s3://bucket/logs/t-0`` (with
        `storage_options` / `filesystem`), or a `Partition`.
    start_offset, end_offset, start_timestamp, end_timestamp : optional
        As `read_log_dir`.
    isolation, columns, errors, verify_crc, include_control, max_decompressed : optional
        As `read_log_dir`.
    max_bytes : int
        About how much decoded data a chunk holds (default 64 MiB).
    report : list, optional
        Collects what was skipped or fell back (`ReportEntry` objects); each chunk's ``report``
        is this list too.
    keep_empty : bool
        True also yields chunks without records (batches the cleaner emptied), so every batch is
        seen.
    storage_options : dict, optional
        For a URL: options of its fsspec filesystem, as pandas takes them (``key``, ``secret``,
        ``endpoint_url``, ``anon``...).
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the URL with instead.
    threads : int, optional
        Each chunk's decode uses that many threads (None: all cores; chunks are yielded one at a
        time, so memory stays bounded by max_bytes).
    binary : {"contiguous", "view"}
        As `read_log_dir`.
    %(typed_parameters)s

    Returns
    -------
    RecordStream
        An iterator of `Records` chunks, in offset order, and an Arrow stream of them (its
        ``schema`` known before anything is read) that an Arrow consumer pulls chunk by chunk.

    Raises
    ------
    PathNotFoundError
        No such partition folder.
    NotALogDirError
        `folder` is not a partition folder.
    CorruptRecordError
        ``errors="strict"`` and a batch is corrupt (`CrcError` for a CRC mismatch).
    ValueError
        An unknown `errors`, `isolation` or column name; an unknown format or `value_errors`, or
        a schema option without a format.
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
    part = resolve_partition(folder, storage_options, filesystem)
    nested = isinstance(value_format, TypedOptions)      # a read of several partitions warns for them all
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       untyped_topics=untyped_topics, keep_bytes=keep_bytes, roots=_roots(part),
                       storage_options=storage_options,
                       filesystem=filesystem)
    chunks = _iter_partition(part, start_offset=start_offset, end_offset=end_offset, start_timestamp=start_timestamp,
                             end_timestamp=end_timestamp, isolation=isolation, columns=columns, errors=errors,
                             verify_crc=verify_crc, include_control=include_control,
                             max_decompressed=max_decompressed, max_bytes=max_bytes, report=report,
                             keep_empty=keep_empty, storage_options=storage_options, filesystem=filesystem,
                             threads=threads, binary=binary, whole_tasks=False, typed=typed)
    return RecordStream(chunks if nested or not typed.active else _warning_at_end(chunks), columns=columns,
                        binary=binary, typed=typed, topics=[part.topic])


def _type(recs, typed):
    """``recs`` with typed keys / values (`decode_values`), the raw bytes of the typed sides dropped unless
    ``keep_bytes``."""
    recs = decode_values(recs, typed)
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


def _iter_partition(folder, *, start_offset, end_offset, start_timestamp, end_timestamp, isolation, columns, errors,
                    verify_crc, include_control, max_decompressed, max_bytes, report, keep_empty, storage_options,
                    filesystem, threads, binary, whole_tasks, typed):
    part = resolve_partition(folder, storage_options, filesystem)
    report = [] if report is None else report
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    since = len(report)
    tasks = plan(part, start_offset=start_offset, end_offset=end_offset, start_timestamp=start_timestamp,
                 end_timestamp=end_timestamp, isolation=isolation, report=report, errors=errors)
    warn_fallbacks(report, since, part.name)     # the index lookups are planning's: said once, here
    committed = isolation == "read_committed"
    if typed.active:     # typed sides need their raw column
        columns = None if columns is None else list(columns) + [s for s, _, _ in typed.sides() if s not in columns]
    # typed sides whose formats read values where they lie: the records are decoded with views into the
    # segment (no raw byte copied out), the untyped sides made contiguous again after typing
    views = (typed.active and not typed.keep_bytes and binary == "contiguous"
             and all(get_format(fmt).reads_views for _, fmt, _ in typed.sides()))
    options = DecodeOptions.for_columns(columns, verify_crc=verify_crc,
                                        include_control=include_control and not committed,
                                        max_decompressed=max_decompressed, threads=threads,
                                        binary="view" if views else binary)
    n_threads = resolve_threads(threads)
    if whole_tasks and n_threads > 1 and len(tasks) > 1:
        chunks = _read_tasks_parallel(tasks, report, options, errors, n_threads)
    else:
        chunks = read_tasks(tasks, report, options, errors, max_bytes)
    for recs, _ in chunks:
        recs = recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report)
        # a chunk of record-less batches (the cleaner's empty batches) still carries them
        if len(recs) or keep_empty or (not committed and (len(recs.controls) or len(recs.batches))):
            if typed.active:
                typed_recs = _type(recs.replace(report=[]), typed)
                report += typed_recs.report
                recs = typed_recs.replace(report=report)
                if views:
                    recs = _contiguous(recs)
            yield recs


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


@_typed_doc
def read_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, storage_options=None, filesystem=None, threads=None,
                 binary="contiguous", value_format=None, key_format=None, schema_registry=None, value_schema=None,
                 key_schema=None, value_errors="null", untyped_topics="error", keep_bytes=False) -> Records:
    """All records of one partition folder (``<topic>-<partition>``) as one `Records`.

    Parameters
    ----------
    folder : str, os.PathLike or Partition
        The partition folder: a path, a URL with `storage_options` / `filesystem`, or a tiered
        upload folder.
    start_offset, end_offset : int, optional
        Offsets in [start, end) (end exclusive, as Spark's endingOffsets).
    start_timestamp, end_timestamp : int, str or datetime, optional
        From the first record with timestamp >= start up to (not including) the first record
        with timestamp >= end -- Kafka's offsets-for-times. Milliseconds, or any form
        `kafkafmt._util.times.to_millis` reads (ISO-8601 text, a datetime...).
    isolation : {"read_uncommitted", "read_committed"}
        "read_uncommitted" (Kafka's default) or "read_committed".
    columns : list of str, optional
        E.g. ``["offset", "timestamp"]``: key/value/headers not listed are absent from the
        result (not decoded at all), never null.
    errors : {"strict", "salvage"}
        "strict" (the first corrupt batch raises) or "salvage" (skip and report it).
    verify_crc : bool or None
        As `decode`: True checks every CRC (a mismatch is corrupt); False computes them into
        ``batches.crc_valid``; None skips them.
    include_control : bool
        Keep control records (transaction markers) as data rows too, as `decode` (not with
        ``isolation="read_committed"``); they are always in ``controls``.
    max_decompressed : int, optional
        Cap on the decompressed size of one batch (default: the codec's default).
    storage_options : dict, optional
        For a URL: options of its fsspec filesystem, as pandas takes them (``key``, ``secret``,
        ``endpoint_url``, ``anon``...).
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the URL with instead.
    threads : int, optional
        Segments decoded at once (and a large segment split at batch boundaries); None: all
        cores, 1: serial. The result and the error raised (the first in offset order) are those
        of a serial read.
    binary : {"contiguous", "view"}
        "contiguous" or "view" (key/value as Arrow binary_view pointing into the segments'
        memory maps and decompressed batches, kept alive by the result; see `decode`).
    %(typed_parameters)s

    Returns
    -------
    Records
        With topic and partition. Its ``report`` lists what was skipped (leftover files, corrupt
        ranges, truncated tails) and where an index was not used; ``tail`` / ``truncated`` /
        ``valid_bytes`` / ``trailing_bytes`` describe the end of the partition's last segment.

    Raises
    ------
    PathNotFoundError
        No such partition folder.
    NotALogDirError
        `folder` is not a partition folder.
    CorruptRecordError
        ``errors="strict"`` and a batch is corrupt (`CrcError` for a CRC mismatch).
    ValueError
        An unknown `errors`, `isolation` or column name; an unknown format or `value_errors`, or
        a schema option without a format.
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
    report = []
    part = resolve_partition(folder, storage_options, filesystem)
    nested = isinstance(value_format, TypedOptions)      # a read of several partitions warns for them all
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       untyped_topics=untyped_topics, keep_bytes=keep_bytes, roots=_roots(part),
                       storage_options=storage_options,
                       filesystem=filesystem)
    parts = list(_iter_partition(part, start_offset=start_offset, end_offset=end_offset,
                                 start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                                 columns=columns, errors=errors, verify_crc=verify_crc,
                                 include_control=include_control, max_decompressed=max_decompressed,
                                 max_bytes=TYPED_CHUNK_BYTES if typed.active else 1 << 62, report=report,
                                 keep_empty=True, storage_options=None,
                                 filesystem=None, threads=threads, binary=binary, whole_tasks=True, typed=typed))
    if not parts:
        return _empty(columns, binary, typed, report, topic=part.topic, partition=part.partition,
                      log_dir=part.log_dir_url)
    recs = Records.concat(parts) if len(parts) > 1 else parts[0]
    last = parts[-1]
    if typed.active and not nested:
        FailedValues().add(recs).warn()
    # where the log ends: the last chunk read (of the last segment, when the read reached it)
    return recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report,
                        valid_bytes=last.valid_bytes,
                        trailing_bytes=last.trailing_bytes, tail=last.tail, file=last.file)


def _empty(columns, binary, typed, report, decode_typed=True, **where):
    """No records, with the columns (typed where asked) a read of records would have."""
    options = DecodeOptions.for_columns(columns, binary=binary)
    recs = decode(b"", **options.decode_kwargs()).replace(report=report, **where)
    if decode_typed and typed.active and where.get("topic") is not None:
        recs = _type(recs, typed).replace(report=report)
    return recs


def _check_kwargs(kwargs, one, many):
    """A TypeError naming the function the user called (not the one it hands its options to)."""
    allowed = inspect.signature(one).parameters
    for k in kwargs:
        if k not in allowed or allowed[k].kind is not inspect.Parameter.KEYWORD_ONLY:
            hint = " (did you mean topics= or partitions=?)" if k in ("topic", "partition") else ""
            raise TypeError(f"{many}() got an unexpected keyword argument {k!r}{hint}")


@_typed_doc
def iter_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  replicas="all", **kwargs):
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
    storage_options : dict, optional
        For URLs: options of their fsspec filesystem, as pandas takes them (ignored for local
        paths).
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the roots with instead.
    tiered_keys : dict, optional
        ``{key id: RSA private key (PEM)}`` for encrypted Aiven uploads.
    replicas : {"all", "dedup"}
        "all" (the default) reads every copy of a partition found (two log dirs of one broker's
        data, a backup beside the original), each record's copy named by its log dir
        (``to_arrow(log_dir=True)``); "dedup" reads the most complete copy of each and reports
        the others and any disagreement between copies (`kafkafmt.log._discovery`).
    %(typed_parameters)s
    **kwargs
        The other keyword arguments of `iter_log_dir`: ``start_offset``, ``end_offset``,
        ``start_timestamp``, ``end_timestamp``, ``isolation``, ``columns``, ``errors``,
        ``verify_crc``, ``include_control``, ``max_decompressed``, ``max_bytes``, ``report`` (one
        list for every partition), ``keep_empty``, ``threads``, ``binary``.

    Returns
    -------
    RecordStream
        An iterator of `Records` chunks, one partition at a time, partition after partition, and
        an Arrow stream of them (typed columns merged over the topics read).

    Raises
    ------
    TypeError
        A keyword argument `iter_log_dir` does not take.
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
    _check_kwargs(kwargs, iter_log_dir, "iter_log_dirs")
    report = kwargs.pop("report", None)
    report = [] if report is None else report
    typed = _open_typed(kwargs, root, storage_options, filesystem)
    found = find_partitions(root, topics, partitions, report, storage_options, filesystem, tiered_keys, replicas)
    chunks = _iter_log_dirs(found, report, typed, **kwargs)
    return RecordStream(_warning_at_end(chunks) if typed.active else chunks, columns=kwargs.get("columns"),
                        binary=kwargs.get("binary", "contiguous"), typed=typed, topics=[p.topic for p in found])


def _iter_log_dirs(found, report, typed, **kwargs):
    for p in found:
        yield from iter_log_dir(p, report=report, value_format=typed, **kwargs)


def _open_typed(kwargs, root, storage_options, filesystem):
    """The typed-value options of a read of several partitions, opened once (popped from kwargs)."""
    return open_typed(**{k: kwargs.pop(k) for k in TYPED_KWARGS if k in kwargs}, roots=root,
                      storage_options=storage_options, filesystem=filesystem)


@_typed_doc
def read_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  replicas="all", threads=None, **kwargs) -> Records:
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
    storage_options : dict, optional
        For URLs: options of their fsspec filesystem, as pandas takes them (ignored for local
        paths).
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the roots with instead.
    tiered_keys : dict, optional
        ``{key id: RSA private key (PEM)}`` for encrypted Aiven uploads.
    replicas : {"all", "dedup"}
        As `iter_log_dirs`.
    threads : int, optional
        Partitions read at once (None: all cores); the result and the error raised (the first
        partition's, in order) are a serial read's.
    %(typed_parameters)s
    **kwargs
        The other keyword arguments of `read_log_dir`: ``start_offset``, ``end_offset``,
        ``start_timestamp``, ``end_timestamp``, ``isolation``, ``columns``, ``errors``,
        ``verify_crc``, ``include_control``, ``max_decompressed``, ``binary``.

    Returns
    -------
    Records
        The partitions' records one partition after the other; ``report`` holds every
        partition's entries.

    Raises
    ------
    TypeError
        A keyword argument `read_log_dir` does not take.
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
    >>> ships.value[1234][:12]              # the raw bytes stay: plain JSON, not the wire format
    b'{"order_id":'
    """
    _check_kwargs(kwargs, read_log_dir, "read_log_dirs")
    report = []
    parts = []
    typed = _open_typed(kwargs, root, storage_options, filesystem)
    kwargs["value_format"] = typed
    found = find_partitions(root, topics, partitions, report, storage_options, filesystem, tiered_keys, replicas)
    n = resolve_threads(threads)
    if n > 1 and len(found) > 1:
        inner = 1 if len(found) >= n else threads
        pool = thread_pool(n, "partitions")
        futures = [pool.submit(read_log_dir, p, threads=inner, **kwargs) for p in found]
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
        for p in found:
            recs = read_log_dir(p, threads=threads, **kwargs)
            report += recs.report
            parts.append(recs)
    if not parts:
        # no partition found: the columns of a read that found some (topic and partition; typed as the
        # topics asked for, when named)
        recs = _empty(kwargs.get("columns"), kwargs.get("binary", "contiguous"), typed, report, topic="",
                      partition=0, decode_typed=False)
        named = [topics] if isinstance(topics, str) else list(topics or ())
        if not (typed.active and named):
            return recs
        recs = recs.replace(typed=empty_typed(typed, named))
        return recs if typed.keep_bytes else recs.replace(**{side: None for side, _, _ in typed.sides()})
    recs = Records.concat(parts).replace(report=report)
    if typed.active:
        FailedValues().add(recs).warn()
    return recs


@_typed_doc
def read_segment(path, *, errors="strict", storage_options=None, filesystem=None, value_format=None, key_format=None,
                 schema_registry=None, value_schema=None, key_schema=None, value_errors="null", untyped_topics="error",
                 keep_bytes=False,
                 **kwargs):
    """Decode a whole segment file (memory-mapped when local).

    Parameters
    ----------
    path : str or os.PathLike
        The segment file: a path or a URL such as ``s3://bucket/t-0/00000000000000000000.log``
        (with `storage_options` or `filesystem`).
    errors : {"strict", "salvage"}
        "strict" raises for the first corrupt entry; "salvage" skips corrupt stretches
        (resynchronizing on the next entry whose CRC verifies) and lists them in the result's
        ``report`` instead of raising.
    storage_options : dict, optional
        For a URL: options of its fsspec filesystem, as pandas takes them.
    filesystem : optional
        An fsspec filesystem or a ``pyarrow.fs.FileSystem`` to read the URL with instead.
    %(typed_parameters)s
    **kwargs
        `decode`'s keyword arguments (``verify_crc``, ``keys``, ``values``, ``headers``,
        ``threads``, ``binary``...); ``topic`` and ``partition`` default to those named by the
        file's ``<topic>-<partition>`` folder.

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
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    storage, p = open_storage(path, storage_options, filesystem)
    p = os.fspath(p) if storage.is_local else p
    folder = storage.parent(os.path.abspath(p) if storage.is_local else p)
    tp = partition_of_name(storage.name(folder)) or (None, None)
    log_dir = Partition(tp[0], tp[1], folder, storage).log_dir_url
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       untyped_topics=untyped_topics, keep_bytes=keep_bytes,
                       roots=None if log_dir is None else [log_dir],
                       storage_options=storage_options, filesystem=filesystem)
    topic, partition = kwargs.pop("topic", tp[0]), kwargs.pop("partition", tp[1])
    file = kwargs.pop("file", storage.url(p))
    names = {f.name for f in dataclasses.fields(DecodeOptions)}
    options = DecodeOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
    seg = Segment.of_file(p, storage) if segment_base(storage.name(p)) is not None else None
    with storage.open(p) as f:
        buf, _ = window(f, 0, f.size)
        why = not_kafka_reason(buf) if errors == "strict" else None
        if why is not None:
            raise NotKafkaDataError(f"not a Kafka log segment: {why}", file=file, position=0)
        if errors == "salvage":
            report = []
            recs, _ = read_range(seg, f, 0, f.size, report, options=options, errors="salvage")
            recs = recs.replace(report=report)
        else:
            recs = decode(buf, file=file, check_offsets=seg is not None,
                          after_offset=None if seg is None else seg.base_offset - 1, **options.decode_kwargs(),
                          **kwargs)
    recs = recs.replace(topic=topic, partition=partition, log_dir=log_dir)
    if not typed.active:
        return recs
    recs = _type(recs, typed)
    FailedValues().add(recs).warn()
    return recs

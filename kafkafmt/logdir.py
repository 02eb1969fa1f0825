"""Reading partitions and whole ``log.dirs`` the way Kafka reads them: `read_log_dir(s)` /
`iter_log_dir(s)` over the tasks `kafkafmt.planner` plans for the partitions `kafkafmt.discovery`
finds, and `read_segment` for one file.

* Segments are read in base-offset order; leftovers of the broker's own work are skipped and
  named in the result's ``report``.
* ``errors="salvage"`` decodes every intact batch after a corrupt one and reports each skipped
  byte range; a batch whose offsets are out of sequence with its neighbours (a damaged base
  offset, which the v2 CRC does not cover) is corrupt.
* ``iter_log_dir`` yields chunks of at most about ``max_bytes`` of decoded data.
* ``value_format=`` / ``key_format=`` type values and keys (Avro, Protobuf, JSON Schema, JSON,
  strings) with the schemas of ``schema_registry=`` -- by default the ``_schemas`` topic among the
  log dirs being read (`kafkafmt.typed`).
"""

from __future__ import annotations

import dataclasses
import inspect
import os

from kafkafmt.arrowstream import RecordStream
from kafkafmt.decoder import DecodeOptions, decode
from kafkafmt.discovery import Partition, find_partitions, resolve_partition
from kafkafmt.errors import NotKafkaDataError
from kafkafmt.framing import not_kafka_reason, window
from kafkafmt.names import partition_of_name, segment_base
from kafkafmt.planner import plan
from kafkafmt.ranges import read_range
from kafkafmt.records import Records
from kafkafmt.segments import Segment, warn_fallbacks
from kafkafmt.storage import open_storage
from kafkafmt.threads import resolve_threads, thread_pool
from kafkafmt.taskreader import read_task, read_tasks
from kafkafmt.typed import decode_values, open_typed

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "read_segment"]

#: the readers' keyword arguments for typed keys and values (`kafkafmt.typed.open_typed`)
TYPED_KWARGS = ("value_format", "key_format", "schema_registry", "value_schema", "key_schema", "value_errors")

_TYPED_DOC = """
    value_format, key_format: type values / keys: "avro", "registry" (each schema id's registered
    type), "protobuf", "json-schema", "json", "connect-json", "string" (`kafkafmt.values`); None
    (the default) keeps bytes. to_arrow() then has typed ``value``/``key`` columns (an Avro record
    is a struct) and valueSchemaId/valueError (keySchemaId/keyError).
    schema_registry: where schemas come from (a log dir, a folder of schema files, a registry
    URL, a `SchemaRegistry`); None: the ``_schemas`` partition among the log dirs being read.
    value_schema, key_schema: the reader schema (default: the latest version of subject
    ``<topic>-value`` / ``<topic>-key``; or an id, ``{"version": n}``, a subject, a schema).
    value_errors: "null" (a bad value is null, its reason in valueError, counted in the report as
    BAD_VALUE) or "strict" (raise ValueDecodeError naming file, position and offset)."""



def iter_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, max_bytes=64 << 20, report=None,
                 keep_empty=False, storage_options=None, filesystem=None, threads=None, binary="contiguous",
                 value_format=None, key_format=None, schema_registry=None, value_schema=None, key_schema=None,
                 value_errors="null"):
    """Yield the records of one partition folder (a path, a URL such as ``s3://bucket/logs/t-0``
    with ``storage_options``/``filesystem`` as pandas takes them, or a `Partition`) in chunks of
    about `max_bytes` of decoded data (whatever the segment sizes). Filters and options as
    `read_log_dir`; each chunk has topic and partition; `report` (a list) collects what was
    skipped or fell back. keep_empty=True also yields chunks without records (batches the
    cleaner emptied), so every batch is seen. threads: each chunk's decode uses that many threads
    (None: all cores; chunks are yielded one at a time, so memory stays bounded by max_bytes).
    The result is also an Arrow stream of the chunks (`kafkafmt.arrowstream.RecordStream`)."""
    part = resolve_partition(folder, storage_options, filesystem)
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       roots=_roots(part), storage_options=storage_options, filesystem=filesystem)
    return RecordStream(_iter_partition(part, start_offset=start_offset, end_offset=end_offset,
                               start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                               columns=columns, errors=errors, verify_crc=verify_crc,
                               include_control=include_control, max_decompressed=max_decompressed,
                               max_bytes=max_bytes, report=report, keep_empty=keep_empty,
                               storage_options=storage_options, filesystem=filesystem, threads=threads,
                               binary=binary, whole_tasks=False, typed=typed), columns=columns, binary=binary,
                        typed=typed, topics=[part.topic])


iter_log_dir.__doc__ += _TYPED_DOC


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
    options = DecodeOptions.for_columns(columns, verify_crc=verify_crc,
                                        include_control=include_control and not committed,
                                        max_decompressed=max_decompressed, threads=threads, binary=binary)
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
                typed_recs = decode_values(recs.replace(report=[]), typed)
                report += typed_recs.report
                recs = typed_recs.replace(report=report)
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


def read_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, storage_options=None, filesystem=None, threads=None,
                 binary="contiguous", value_format=None, key_format=None, schema_registry=None, value_schema=None,
                 key_schema=None, value_errors="null") -> Records:
    """All records of one partition folder (``<topic>-<partition>``; a path, a URL with
    ``storage_options``/``filesystem``, or a tiered upload folder) as one `Records`.

    start_offset / end_offset: offsets in [start, end) (end exclusive, as Spark's endingOffsets).
    start_timestamp / end_timestamp (ms): from the first record with timestamp >= start up to
    (not including) the first record with timestamp >= end -- Kafka's offsets-for-times.
    isolation: "read_uncommitted" (Kafka's default) or "read_committed".
    columns: e.g. ["offset", "timestamp"]: key/value/headers not listed are absent from the
    result (not decoded at all), never null.
    errors: "strict" (the first corrupt batch raises) or "salvage" (skip and report it).
    The result's ``report`` lists what was skipped (leftover files, corrupt ranges, truncated
    tails) and where an index was not used; ``tail``/``truncated``/``valid_bytes``/
    ``trailing_bytes`` describe the end of the partition's last segment.
    threads: segments decoded at once (and a large segment split at batch boundaries); None: all
    cores, 1: serial. The result and the error raised (the first in offset order) are those of a
    serial read.
    binary: "contiguous" or "view" (key/value as Arrow binary_view pointing into the segments'
    memory maps and decompressed batches, kept alive by the result; see `decode`).
    """
    report = []
    part = resolve_partition(folder, storage_options, filesystem)
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       roots=_roots(part), storage_options=storage_options, filesystem=filesystem)
    parts = list(_iter_partition(part, start_offset=start_offset, end_offset=end_offset,
                                 start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                                 columns=columns, errors=errors, verify_crc=verify_crc,
                                 include_control=include_control, max_decompressed=max_decompressed,
                                 max_bytes=1 << 62, report=report, keep_empty=True, storage_options=None,
                                 filesystem=None, threads=threads, binary=binary, whole_tasks=True, typed=typed))
    if not parts:
        return _empty(columns, binary, typed, report, topic=part.topic, partition=part.partition,
                      log_dir=part.log_dir_url)
    recs = Records.concat(parts) if len(parts) > 1 else parts[0]
    last = parts[-1]
    # where the log ends: the last chunk read (of the last segment, when the read reached it)
    return recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report,
                        valid_bytes=last.valid_bytes,
                        trailing_bytes=last.trailing_bytes, tail=last.tail, file=last.file)


read_log_dir.__doc__ += _TYPED_DOC


def _empty(columns, binary, typed, report, **where):
    """No records, with the columns (typed where asked) a read of records would have."""
    options = DecodeOptions.for_columns(columns, binary=binary)
    recs = decode(b"", **options.decode_kwargs()).replace(report=report, **where)
    if typed.active and where.get("topic") is not None:
        recs = decode_values(recs, typed).replace(report=report)
    return recs


def _check_kwargs(kwargs, one, many):
    """A TypeError naming the function the user called (not the one it hands its options to)."""
    allowed = inspect.signature(one).parameters
    for k in kwargs:
        if k not in allowed or allowed[k].kind is not inspect.Parameter.KEYWORD_ONLY:
            hint = " (did you mean topics= or partitions=?)" if k in ("topic", "partition") else ""
            raise TypeError(f"{many}() got an unexpected keyword argument {k!r}{hint}")


def iter_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  replicas="all", **kwargs):
    """Chunks of every partition under one or several roots (paths or URLs: log dirs, folders
    holding log dirs at any depth, e.g. ``kafka-logs-1``..``-3`` of brokers on one host, tiered
    uploads), filtered by topic names and partition numbers; options as `iter_log_dir`.
    replicas: "all" (the default) reads every copy of a partition found (two log dirs of one
    broker's data, a backup beside the original), each record's copy named by its log dir
    (``to_arrow(log_dir=True)``); "dedup" reads the most complete copy of each and reports the
    others and any disagreement between copies (`kafkafmt.discovery`). The result is also an Arrow
    stream of the chunks (`kafkafmt.arrowstream.RecordStream`)."""
    _check_kwargs(kwargs, iter_log_dir, "iter_log_dirs")
    report = kwargs.pop("report", None)
    report = [] if report is None else report
    typed = _open_typed(kwargs, root, storage_options, filesystem)
    found = find_partitions(root, topics, partitions, report, storage_options, filesystem, tiered_keys, replicas)
    return RecordStream(_iter_log_dirs(found, report, typed, **kwargs), columns=kwargs.get("columns"),
                        binary=kwargs.get("binary", "contiguous"), typed=typed, topics=[p.topic for p in found])


def _iter_log_dirs(found, report, typed, **kwargs):
    for p in found:
        yield from iter_log_dir(p, report=report, value_format=typed, **kwargs)


def _open_typed(kwargs, root, storage_options, filesystem):
    """The typed-value options of a read of several partitions, opened once (popped from kwargs)."""
    return open_typed(**{k: kwargs.pop(k) for k in TYPED_KWARGS if k in kwargs}, roots=root,
                      storage_options=storage_options, filesystem=filesystem)


def read_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  replicas="all", threads=None, **kwargs) -> Records:
    """All records of every partition under one or several roots (paths or URLs, local and remote
    mixed: log dirs, folders holding log dirs at any depth, tiered uploads), with topic and
    partition columns; options as `read_log_dir`. threads: partitions read at once (None: all
    cores); the result and the error raised (the first partition's, in order) are a serial read's.
    replicas: as `iter_log_dirs`."""
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
        return _empty(kwargs.get("columns"), kwargs.get("binary", "contiguous"), typed, report)
    return Records.concat(parts).replace(report=report)


iter_log_dirs.__doc__ += _TYPED_DOC
read_log_dirs.__doc__ += _TYPED_DOC


def read_segment(path, *, errors="strict", storage_options=None, filesystem=None, value_format=None, key_format=None,
                 schema_registry=None, value_schema=None, key_schema=None, value_errors="null", **kwargs):
    """Decode a whole segment file (memory-mapped when local; a path or a URL such as
    ``s3://bucket/t-0/00000000000000000000.log`` with ``storage_options`` or ``filesystem`` as
    pandas takes them). Accepts decode()'s keyword arguments; topic and partition default to those
    named by the file's ``<topic>-<partition>`` folder. errors="salvage" skips corrupt stretches
    (resynchronizing on the next entry whose CRC verifies) and lists them in the result's
    ``report`` instead of raising. A file that is not Kafka data at all raises NotKafkaDataError."""
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    storage, p = open_storage(path, storage_options, filesystem)
    p = os.fspath(p) if storage.is_local else p
    folder = storage.parent(os.path.abspath(p) if storage.is_local else p)
    tp = partition_of_name(storage.name(folder)) or (None, None)
    log_dir = Partition(tp[0], tp[1], folder, storage).log_dir_url
    typed = open_typed(value_format=value_format, key_format=key_format, schema_registry=schema_registry,
                       value_schema=value_schema, key_schema=key_schema, value_errors=value_errors,
                       roots=None if log_dir is None else [log_dir], storage_options=storage_options,
                       filesystem=filesystem)
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
    return decode_values(recs, typed) if typed.active else recs


read_segment.__doc__ += _TYPED_DOC

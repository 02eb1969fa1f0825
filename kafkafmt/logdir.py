"""Partition folders and whole ``log.dirs``, read the way Kafka reads them.

Built on the segment layer (`kafkafmt.segments`: names, discovery, index lookups, range reads):

* Segments are read in base-offset order; leftovers of the broker's own work are skipped and
  named in the result's ``report``.
* Offset seeks (first offset >= start): the segment whose base offset is the largest <= start,
  then the ``.index`` entry with the largest offset <= start gives the byte position to decode
  from (OffsetIndex.lookup). Time seeks (first record with timestamp >= T, as ListOffsets and
  Spark's startingTimestamp) become offsets, so ``start_timestamp``/``end_timestamp`` select the
  same records a consumer that seeked by time would read. See `plan`.
* ``isolation="read_committed"`` drops control batches and the records of aborted transactions
  and stops at the last stable offset, as a read_committed consumer does.
* ``errors="salvage"`` decodes every intact batch after a corrupt one and reports each skipped
  byte range; a batch whose offsets are out of sequence with its neighbours (a damaged base
  offset, which the v2 CRC does not cover) is corrupt.
* ``iter_log_dir`` yields chunks of at most about ``max_bytes`` of decoded data.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import warnings
from dataclasses import dataclass

import numpy as np

from kafkafmt import tiered
from kafkafmt.decoder import DecodeOptions, decode
from kafkafmt.threads import resolve_threads, thread_pool
from kafkafmt.errors import CorruptRecordError, KafkafmtWarning, NotALogDirError, PathNotFoundError
from kafkafmt.records import Records
from kafkafmt.segments import (LOCAL, Partition, ReportEntry, ReportKind, Segment, committed_mask, entry_size_at,
                               find_log_dirs, folder_kind, list_partitions, list_segments, offset_for_timestamp,
                               partition_of_name, read_range, scan_range, transactions)
from kafkafmt.storage import open_storage
from kafkafmt.times import to_millis

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "list_partitions", "list_segments",
           "offset_for_timestamp", "find_log_dirs", "find_partitions", "resolve_partition", "plan", "Task",
           "KafkafmtWarning"]

_ISOLATIONS = ("read_uncommitted", "read_committed")
_WHOLE_RANGE_RATIO = 64   # decoded bytes per stored byte no real batch exceeds (read_task's first chunk)


# ----------------------------------------------------------------------------------------------
# planning: offset / time bounds -> (segment, byte range, offset range) tasks

@dataclass
class Task:
    """One segment's part of a read: decode bytes [start_pos, stop_pos) of ``segment`` and keep
    offsets in [start_offset, end_offset) (None: unbounded); read_committed tasks carry the
    partition's aborted ranges and last stable offset."""
    topic: str
    partition: int
    segment: object
    start_pos: int
    stop_pos: int
    start_offset: object
    end_offset: object
    is_last: bool = True           # the partition's last segment (a cut-off tail is the end of data)
    following: object = None       # the next segment's base offset (batch offsets stay below it)
    aborted: dict = None
    lso: object = None
    log_dir: object = None         # the log dir (path or URL) of the partition, for the logDir column

    @property
    def log(self):
        return self.segment.log


def resolve_offsets(folder, segments, start_offset, end_offset, start_timestamp, end_timestamp, report,
                    errors="strict"):
    """[start, end) offsets after turning timestamps into offsets (Kafka's offsets-for-times);
    None when nothing can match."""
    if start_timestamp is not None:
        t = offset_for_timestamp(folder, start_timestamp, report, errors=errors, segments=segments)
        if t is None:
            return None
        start_offset = t if start_offset is None else max(start_offset, t)
    if end_timestamp is not None:
        t = offset_for_timestamp(folder, end_timestamp, report, errors=errors, segments=segments)
        if t is not None:
            end_offset = t if end_offset is None else min(end_offset, t)
    if start_offset is not None and end_offset is not None and end_offset <= start_offset:
        return None
    return start_offset, end_offset


def plan(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
         isolation="read_uncommitted", report=None, errors="strict", min_timestamp=None, positions=True,
         storage_options=None, filesystem=None):
    """The tasks that read one partition (a folder path or URL, or a `Partition`): one per
    segment overlapping the offset range, with the byte range found through the offset index
    (positions=False: whole segments, for callers that seek later). ``min_timestamp`` prunes
    rolled segments whose largest timestamp (time index) is below it. Empty segments are left out."""
    if isolation not in _ISOLATIONS:
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    start_timestamp = to_millis(start_timestamp, "start_timestamp")
    end_timestamp = to_millis(end_timestamp, "end_timestamp")
    min_timestamp = to_millis(min_timestamp, "min_timestamp")
    report = [] if report is None else report
    part = resolve_partition(folder, storage_options, filesystem)
    topic, partition = part.topic, part.partition
    segments = part.list_segments(report)
    rng = resolve_offsets(part.folder, segments, start_offset, end_offset, start_timestamp, end_timestamp, report,
                          errors)
    if rng is None:
        return []
    start, end = rng
    aborted = lso = None
    if isolation == "read_committed":
        aborted, lso = transactions(segments, report)
        if lso is not None:
            end = lso if end is None else min(end, lso)
            if start is not None and end <= start:
                return []
    tasks = []
    for k, seg in enumerate(segments):
        nxt = segments[k + 1].base_offset if k + 1 < len(segments) else None
        if start is not None and nxt is not None and nxt <= start:
            continue  # every offset of this segment is below the start
        if end is not None and seg.base_offset >= end and k > 0:
            break
        is_last = nxt is None
        if min_timestamp is not None and not is_last:
            mx = seg.max_timestamp(report)
            if mx is not None and mx < min_timestamp:
                continue  # pruned: no record of this segment is recent enough
        if seg.size == 0:
            continue
        start_pos, stop_pos = 0, seg.size
        if positions:
            with seg.open() as f:
                start_pos = seg.position_for_offset(f, start, report)
                stop_pos = seg.end_position(f, end, report)
        if stop_pos > start_pos:
            tasks.append(Task(topic, partition, seg, start_pos, stop_pos, start, end, is_last, nxt, aborted, lso,
                              part.log_dir_url))
    return tasks


def _source(path, storage_options=None, filesystem=None):
    """(storage or None for the local disk, path) of a path or URL."""
    storage, p = open_storage(path, storage_options, filesystem)
    return (None, os.fspath(p)) if storage.is_local else (storage, p)


def resolve_partition(folder, storage_options=None, filesystem=None):
    """The `Partition` a folder path or URL names: a ``<topic>-<partition>`` folder, or a tiered
    upload folder of Kafka's layout (``<topic>-<partition>-<topicId>``)."""
    if isinstance(folder, Partition):
        return folder
    st, path = _source(folder, storage_options, filesystem)
    storage = st or LOCAL
    if not storage.exists(path):
        raise PathNotFoundError(f"no such partition folder: {storage.url(path)}", file=storage.url(path))
    if not storage.isdir(path):
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    name = storage.name(path)
    if tiered.parse_kafka_partition_dir(name) is not None and folder_kind(path, storage=st) != "partition":
        remote = tiered.list_remote_partitions(storage, path)
        if remote:
            return _remote_partition(remote[0], storage, None, [])
    tp = partition_of_name(name)
    if tp is None:
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    return Partition(tp[0], tp[1], path, None, st)


def _remote_partition(rp, storage, log_dir, report, keys=None):
    """A tiered-storage partition (`kafkafmt.tiered.RemotePartition`) as a Partition; uploads
    superseded by a later upload of the same segment are reported."""
    for s in rp.superseded:
        report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(s.log),
                                  f"upload {s.segment_id} of segment {s.base_offset} superseded by a later upload "
                                  f"(it ends at offset {s.end_offset}); skipped"))
    segs = tuple(Segment.of_remote(s, None if storage.is_local else storage, keys) for s in rp.segments)
    return Partition(rp.topic, rp.partition, rp.path, log_dir, None if storage.is_local else storage, segs)


# ----------------------------------------------------------------------------------------------
# reading tasks

def read_task(task, report, *, options=None, errors="strict", max_bytes=64 << 20, after=None):
    """Yield the records of one task in chunks of about `max_bytes` of decoded data (the first
    chunk is one batch; later ones are sized from what the previous chunk showed). Headers are
    scanned window by window, so pages beyond the chunk are not touched; consumed pages leave
    this process's memory. `after`: the last offset read before this task (offsets must increase).
    Each chunk is (records, last offset read)."""
    options = DecodeOptions() if options is None else options
    seg = task.segment
    with seg.open() as f:
        pos, stop = task.start_pos, min(task.stop_pos, f.size)
        ratio = float("inf")
        released = 0
        while pos < stop:
            if ratio != float("inf"):
                budget = int(max_bytes / max(ratio, 1.0))
            else:   # nothing decoded yet: one batch shows the ratio, unless any ratio would fit anyway
                budget = stop - pos if max_bytes >= (stop - pos) * _WHOLE_RANGE_RATIO else 0
            heads, _ = scan_range(f, pos, min(stop, pos + budget))
            if len(heads):
                chunk_stop = int(heads["position"][-1] + heads["size"][-1])
            else:   # the next batch alone exceeds the budget (or a tail / corruption follows)
                size = entry_size_at(f, pos) if pos + 12 <= stop else -1
                chunk_stop = pos + 12 + size if 0 < size and pos + 12 + size <= stop else stop
            if stop - chunk_stop < 12:
                chunk_stop = stop
            recs, resume = read_range(seg, f, pos, chunk_stop, report, options=options, errors=errors, limit=stop,
                                      after=after, following=task.following if chunk_stop >= f.size else None)
            if recs.tail == "truncated" and not task.is_last and stop == f.size and errors == "strict":
                # a cut-off tail is the end of data only at the end of the log: here segments follow
                raise CorruptRecordError("segment ends inside a batch although later segments follow "
                                         "(use errors='salvage' to read past it)", file=seg.log,
                                         position=recs.valid_bytes)
            if len(recs.batches):
                after = max(int(recs.batches.last_offset[-1]), after if after is not None else -1)
            decoded = (recs.key.nbytes if options.keys else 0) + (recs.value.nbytes if options.values else 0) \
                + 40 * len(recs)
            ratio = max(decoded / max(chunk_stop - pos, 1), 0.05)
            pos = resume if recs.tail is None else stop
            released = f.release(released, pos)
            recs = recs.replace(batches=recs.batches.with_column(
                "segment", np.full(len(recs.batches), seg.base_offset, np.int64)),
                topic=task.topic, partition=task.partition, log_dir=task.log_dir, report=report)
            yield _select(recs, task), after


def _select(recs, task):
    """The records of a decoded range that the task keeps: its offset range, committed only."""
    lo = 0 if task.start_offset is None else int(np.searchsorted(recs.offset, task.start_offset, side="left"))
    hi = len(recs) if task.end_offset is None else int(np.searchsorted(recs.offset, task.end_offset, side="left"))
    recs = recs[lo:hi]
    if task.aborted is not None:
        recs = recs.filter(committed_mask(recs, task.aborted, task.lso))
    return recs


def iter_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, max_bytes=64 << 20, report=None,
                 keep_empty=False, storage_options=None, filesystem=None, threads=None, binary="contiguous"):
    """Yield the records of one partition folder (a path, a URL such as ``s3://bucket/logs/t-0``
    with ``storage_options``/``filesystem`` as pandas takes them, or a `Partition`) in chunks of
    about `max_bytes` of decoded data (whatever the segment sizes). Filters and options as
    `read_log_dir`; each chunk has topic and partition; `report` (a list) collects what was
    skipped or fell back. keep_empty=True also yields chunks without records (batches the
    cleaner emptied), so every batch is seen. threads: each chunk's decode uses that many threads
    (None: all cores; chunks are yielded one at a time, so memory stays bounded by max_bytes)."""
    yield from _iter_partition(folder, start_offset=start_offset, end_offset=end_offset,
                               start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                               columns=columns, errors=errors, verify_crc=verify_crc,
                               include_control=include_control, max_decompressed=max_decompressed,
                               max_bytes=max_bytes, report=report, keep_empty=keep_empty,
                               storage_options=storage_options, filesystem=filesystem, threads=threads,
                               binary=binary, whole_tasks=False)


def _iter_partition(folder, *, start_offset, end_offset, start_timestamp, end_timestamp, isolation, columns, errors,
                    verify_crc, include_control, max_decompressed, max_bytes, report, keep_empty, storage_options,
                    filesystem, threads, binary, whole_tasks):
    part = resolve_partition(folder, storage_options, filesystem)
    report = [] if report is None else report
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    tasks = plan(part, start_offset=start_offset, end_offset=end_offset, start_timestamp=start_timestamp,
                 end_timestamp=end_timestamp, isolation=isolation, report=report, errors=errors)
    committed = isolation == "read_committed"
    options = DecodeOptions.for_columns(columns, verify_crc=verify_crc,
                                        include_control=include_control and not committed,
                                        max_decompressed=max_decompressed, threads=threads, binary=binary)
    n_threads = resolve_threads(threads)
    if whole_tasks and n_threads > 1 and len(tasks) > 1:
        chunks = _read_tasks_parallel(tasks, report, options, errors, n_threads)
    else:
        chunks = _read_tasks(tasks, report, options, errors, max_bytes)
    for recs, _ in chunks:
        recs = recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report)
        # a chunk of record-less batches (the cleaner's empty batches) still carries them
        if len(recs) or keep_empty or (not committed and (len(recs.controls) or len(recs.batches))):
            yield recs


def _read_tasks(tasks, report, options, errors, max_bytes):
    """(records, last offset read) of the tasks' chunks, in order, one task after the other."""
    after = None
    for task in tasks:
        for recs, after in read_task(task, report, options=options, errors=errors, max_bytes=max_bytes,
                                     after=after):
            yield recs, after


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
                 binary="contiguous") -> Records:
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
    parts = list(_iter_partition(part, start_offset=start_offset, end_offset=end_offset,
                                 start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                                 columns=columns, errors=errors, verify_crc=verify_crc,
                                 include_control=include_control, max_decompressed=max_decompressed,
                                 max_bytes=1 << 62, report=report, keep_empty=True, storage_options=None,
                                 filesystem=None, threads=threads, binary=binary, whole_tasks=True))
    options = DecodeOptions.for_columns(columns, binary=binary)
    if not parts:
        return decode(b"", **options.decode_kwargs()).replace(topic=part.topic, partition=part.partition,
                                                              log_dir=part.log_dir_url, report=report)
    recs = Records.concat(parts) if len(parts) > 1 else parts[0]
    last = parts[-1]
    # where the log ends: the last chunk read (of the last segment, when the read reached it)
    return recs.replace(topic=part.topic, partition=part.partition, log_dir=part.log_dir_url, report=report,
                        valid_bytes=last.valid_bytes,
                        trailing_bytes=last.trailing_bytes, tail=last.tail, file=last.file)


def find_partitions(roots, topics=None, partitions=None, report=None, storage_options=None, filesystem=None,
                    tiered_keys=None):
    """Every partition under one root or a list of roots (paths or URLs, local and remote mixed):
    partition folders, log dirs or folders holding log dirs at any depth, and tiered-storage
    uploads (Kafka's and Aiven's layouts). A partition that has tiered uploads and a local folder
    is one partition: the uploads (older) and the local segments (newer) merged in offset order,
    a segment in both read once (the local copy), a gap between them reported. tiered_keys:
    {key id: RSA private key (PEM)} for encrypted Aiven uploads."""
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    report = [] if report is None else report
    found = _find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys)
    _warn_if_nothing_matched(roots, found, topics, partitions)
    return found


def _warn_if_nothing_matched(roots, found, topics, partitions):
    """A KafkafmtWarning when a read would silently give nothing: no partition at all under the
    roots, or a topic / partition asked for that none of them has (a typo, a wrong prefix)."""
    where = ", ".join(map(str, roots))
    if not found and topics is None and partitions is None:
        warnings.warn(f"no partition folders, log dirs or tiered-storage uploads under {where}", KafkafmtWarning,
                      stacklevel=3)
        return
    names = {topics} if isinstance(topics, str) else set(topics or ())
    missing = sorted(names - {p.topic for p in found}) if partitions is None else []
    if missing:
        warnings.warn(f"no partition of topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} under {where}",
                      KafkafmtWarning, stacklevel=3)
    wanted = {partitions} if isinstance(partitions, int) else set(partitions or ())
    gone = sorted(wanted - {p.partition for p in found})
    if gone:
        warnings.warn(f"no partition {', '.join(map(str, gone))} under {where}"
                      + (f" of {', '.join(sorted(names))}" if names else ""), KafkafmtWarning, stacklevel=3)


def _find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys):
    plain, remote = [], []
    topics_set = None if topics is None else set([topics] if isinstance(topics, str) else topics)
    parts_set = None if partitions is None else set([partitions] if isinstance(partitions, int) else partitions)
    for root in roots:
        st, path = _source(root, storage_options, filesystem)
        storage = st or LOCAL
        if storage.isdir(path) and folder_kind(path, storage=st) == "partition":
            plain += list_partitions(path, topics, partitions, report, storage=st)
            continue
        log_dirs = find_log_dirs(path, storage=st)
        for log_dir in log_dirs:
            plain += list_partitions(log_dir, topics, partitions, report, storage=st)
        if not log_dirs:
            for rp in tiered.list_remote_partitions(storage, path, keys=tiered_keys):
                if (topics_set is None or rp.topic in topics_set) and (parts_set is None or rp.partition in parts_set):
                    for problem in rp.problems:
                        report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(rp.path), problem))
                    remote.append(_remote_partition(rp, storage, path, report, tiered_keys))
    if not remote:
        return plain
    out = []
    merged = set()
    for p in plain:
        ups = [r for r in remote if (r.topic, r.partition) == (p.topic, p.partition)]
        if ups and (p.topic, p.partition) not in merged:
            merged.add((p.topic, p.partition))
            p = _merge(p, ups, report)
        out.append(p)
    out += [r for r in remote if (r.topic, r.partition) not in merged]
    out.sort(key=lambda q: (q.topic, q.partition))
    return out


def _merge(local, uploads, report):
    """A local partition with its tiered uploads: one segment list in offset order."""
    own = local.list_segments(report)
    have = {s.base_offset for s in own}
    older = sorted((s for u in uploads for s in u.segments if s.base_offset not in have), key=lambda s: s.base_offset)
    segs = older + own
    segs.sort(key=lambda s: s.base_offset)
    first_local = own[0].base_offset if own else None
    if older and first_local is not None:
        prev = [s for s in older if s.base_offset < first_local]
        if prev:
            last = prev[-1]
            end = tiered.segment_end_offset(last.storage or LOCAL, last.remote, keys=last.keys)
            if end + 1 < first_local:
                report.append(ReportEntry(ReportKind.GAP, local.url,
                                          f"offsets {end + 1}..{first_local - 1} are in neither the tiered uploads "
                                          f"(they end at {end}) nor the local segments (from {first_local})",
                                          offset=end + 1))
    return dataclasses.replace(local, segments=tuple(segs))


def _check_kwargs(kwargs, one, many):
    """A TypeError naming the function the user called (not the one it hands its options to)."""
    allowed = inspect.signature(one).parameters
    for k in kwargs:
        if k not in allowed or allowed[k].kind is not inspect.Parameter.KEYWORD_ONLY:
            hint = " (did you mean topics= or partitions=?)" if k in ("topic", "partition") else ""
            raise TypeError(f"{many}() got an unexpected keyword argument {k!r}{hint}")


def iter_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  **kwargs):
    """Chunks of every partition under one or several roots (paths or URLs: log dirs, folders
    holding log dirs at any depth, e.g. ``kafka-logs-1``..``-3`` of brokers on one host, tiered
    uploads), filtered by topic names and partition numbers; options as `iter_log_dir`."""
    _check_kwargs(kwargs, iter_log_dir, "iter_log_dirs")
    report = kwargs.pop("report", None)
    report = [] if report is None else report
    for p in find_partitions(root, topics, partitions, report, storage_options, filesystem, tiered_keys):
        yield from iter_log_dir(p, report=report, **kwargs)


def read_log_dirs(root, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  threads=None, **kwargs) -> Records:
    """All records of every partition under one or several roots (paths or URLs, local and remote
    mixed: log dirs, folders holding log dirs at any depth, tiered uploads), with topic and
    partition columns; options as `read_log_dir`. threads: partitions read at once (None: all
    cores); the result and the error raised (the first partition's, in order) are a serial read's."""
    _check_kwargs(kwargs, read_log_dir, "read_log_dirs")
    report = []
    parts = []
    found = find_partitions(root, topics, partitions, report, storage_options, filesystem, tiered_keys)
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
        options = DecodeOptions.for_columns(kwargs.get("columns"), binary=kwargs.get("binary", "contiguous"))
        return decode(b"", **options.decode_kwargs()).replace(report=report)
    return Records.concat(parts).replace(report=report)

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

import os
from dataclasses import dataclass

import numpy as np

from kafkafmt.decoder import DecodeOptions, decode
from kafkafmt.errors import CorruptRecordError, KafkafmtWarning, NotALogDirError, PathNotFoundError
from kafkafmt.records import Records
from kafkafmt.segments import (committed_mask, entry_size_at, find_log_dirs, folder_kind, list_partitions,
                               list_segments, offset_for_timestamp, partition_of_name, read_range, scan_range,
                               transactions)

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "list_partitions", "list_segments",
           "offset_for_timestamp", "find_log_dirs", "plan", "Task", "KafkafmtWarning"]

_ISOLATIONS = ("read_uncommitted", "read_committed")


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


def plan(folder, *, topic=None, partition=None, start_offset=None, end_offset=None, start_timestamp=None,
         end_timestamp=None, isolation="read_uncommitted", report=None, errors="strict", min_timestamp=None,
         positions=True):
    """The tasks that read one partition folder: one per segment overlapping the offset range,
    with the byte range found through the offset index (positions=False: whole segments, for
    callers that seek later). ``min_timestamp`` prunes rolled segments whose largest timestamp
    (time index) is below it. Empty segments are left out."""
    if isolation not in _ISOLATIONS:
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    report = [] if report is None else report
    if topic is None:
        topic, partition = _topic_partition(folder)
    segments = list_segments(folder, report)
    rng = resolve_offsets(folder, segments, start_offset, end_offset, start_timestamp, end_timestamp, report,
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
            tasks.append(Task(topic, partition, seg, start_pos, stop_pos, start, end, is_last, nxt, aborted, lso))
    return tasks


def _topic_partition(folder):
    folder = os.fspath(folder)
    if not os.path.exists(folder):
        raise PathNotFoundError(f"no such partition folder: {folder}", file=folder)
    if not os.path.isdir(folder):
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {folder}", file=folder)
    tp = partition_of_name(folder)
    if tp is None:
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {folder}", file=folder)
    return tp


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
            budget = int(max_bytes / max(ratio, 1.0)) if ratio != float("inf") else 0
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
                "segment", np.full(len(recs.batches), seg.base_offset, np.int64)))
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
                 keep_empty=False):
    """Yield the records of one partition folder in chunks of about `max_bytes` of decoded data
    (whatever the segment sizes). Filters and options as `read_log_dir`; each chunk has topic and
    partition; `report` (a list) collects what was skipped or fell back. keep_empty=True also
    yields chunks without records (batches the cleaner emptied), so every batch is seen."""
    topic, partition = _topic_partition(folder)
    report = [] if report is None else report
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    tasks = plan(folder, topic=topic, partition=partition, start_offset=start_offset, end_offset=end_offset,
                 start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation, report=report,
                 errors=errors)
    committed = isolation == "read_committed"
    options = DecodeOptions.for_columns(columns, verify_crc=verify_crc,
                                        include_control=include_control and not committed,
                                        max_decompressed=max_decompressed)
    after = None
    for task in tasks:
        for recs, after in read_task(task, report, options=options, errors=errors, max_bytes=max_bytes,
                                     after=after):
            recs = recs.replace(topic=topic, partition=partition, report=report)
            # a chunk of record-less batches (the cleaner's empty batches) still carries them
            if len(recs) or keep_empty or (not committed and (len(recs.controls) or len(recs.batches))):
                yield recs


def read_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None) -> Records:
    """All records of one partition folder (``<topic>-<partition>``) as one `Records`.

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
    """
    report = []
    topic, partition = _topic_partition(folder)
    parts = list(iter_log_dir(folder, start_offset=start_offset, end_offset=end_offset,
                              start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                              columns=columns, errors=errors, verify_crc=verify_crc, include_control=include_control,
                              max_decompressed=max_decompressed, max_bytes=1 << 62, report=report, keep_empty=True))
    options = DecodeOptions.for_columns(columns)
    if not parts:
        return decode(b"", **options.decode_kwargs()).replace(topic=topic, partition=partition, report=report)
    recs = Records.concat(parts) if len(parts) > 1 else parts[0]
    last = parts[-1]
    # where the log ends: the last chunk read (of the last segment, when the read reached it)
    return recs.replace(topic=topic, partition=partition, report=report, valid_bytes=last.valid_bytes,
                        trailing_bytes=last.trailing_bytes, tail=last.tail, file=last.file)


def _partitions(roots, topics, partitions, report):
    """Partition folders under one root or a list of roots: a partition folder, a log dir, or a
    folder holding log dirs at any depth."""
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    out = []
    for root in roots:
        root = os.fspath(root)
        if os.path.isdir(root) and folder_kind(root) == "partition":
            out += list_partitions(root, topics, partitions, report)
            continue
        for log_dir in find_log_dirs(root):
            out += list_partitions(log_dir, topics, partitions, report)
    return out


def iter_log_dirs(root, topics=None, partitions=None, **kwargs):
    """Chunks of every partition under one or several roots (log dirs, or folders holding log dirs
    at any depth, e.g. ``kafka-logs-1``..``-3`` of brokers on one host), filtered by topic names
    and partition numbers; options as `iter_log_dir`."""
    report = kwargs.pop("report", None)
    report = [] if report is None else report
    for p in _partitions(root, topics, partitions, report):
        yield from iter_log_dir(p.folder, report=report, **kwargs)


def read_log_dirs(root, topics=None, partitions=None, **kwargs) -> Records:
    """All records of every partition under one or several roots (log dirs, or folders holding log
    dirs at any depth), with topic and partition columns; options as `read_log_dir`."""
    report = []
    parts = []
    for p in _partitions(root, topics, partitions, report):
        recs = read_log_dir(p.folder, **kwargs)
        report += recs.report
        parts.append(recs)
    if not parts:
        return decode(b"", **DecodeOptions.for_columns(kwargs.get("columns")).decode_kwargs()).replace(report=report)
    return Records.concat(parts).replace(report=report)

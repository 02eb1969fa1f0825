"""From options and pushed filters to input partitions (runs on the Spark driver).

Every topic-partition folder under the given log dirs that the subscription selects gets an
offset range [start, end): from startingOffsets/endingOffsets, the timestamp options (Kafka's
offsets-for-times, through the time indexes) and pushed offset filters. Its segments overlapping
that range become tasks (file, byte range found with the offset index, offset range); segments
whose largest timestamp is below a pushed timestamp lower bound are pruned. Large segments are
split at offset-index positions to honour minPartitions; small tasks are packed together up to
targetPartitionBytes, since every Spark task has a fixed cost.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from kafkafmt.decoder import PARTITION_DIR
from kafkafmt.logdir import (Segment, _end_position, _index_entries, _Mapped, _position_for_offset,
                             _transactions, list_partitions, list_segments, offset_for_timestamp)
from kafkafmt.spark.options import EARLIEST, LATEST, OptionError


@dataclass
class Task:
    topic: str
    partition: int
    log: str
    start_pos: int
    stop_pos: int          # byte range of the segment to decode
    start_offset: object   # records with start_offset <= offset < end_offset (None: unbounded)
    end_offset: object
    aborted: dict = None   # read_committed: {producer_id: [(first, last)]}
    lso: object = None


@dataclass
class Bounds:
    """What pushed filters allow: offset and timestamp ranges, topics and partitions."""
    offset_lo: object = None     # inclusive
    offset_hi: object = None     # exclusive
    ts_lo: object = None         # inclusive, ms
    ts_hi: object = None         # exclusive, ms
    topics: object = None        # set or None
    topic_prefix: object = None
    partitions: object = None    # set or None
    empty: bool = False          # the filters admit no row at all
    row_filters: list = field(default_factory=list)   # (column, op, value) applied exactly per row


def _resolve(spec, topic, partition, default):
    if isinstance(spec, dict):
        return spec.get(topic, {}).get(partition, default)
    return spec if spec is not None else default


def partition_range(opts, bounds, topic, partition, folder, report):
    """[start, end) offsets to read for one topic-partition (None = open), or None if empty."""
    start = _resolve(opts.starting if isinstance(opts.starting, dict) else None, topic, partition, EARLIEST)
    end = _resolve(opts.ending if isinstance(opts.ending, dict) else None, topic, partition, LATEST)
    start = None if start == EARLIEST else start
    end = None if end == LATEST else end
    ts = _resolve(opts.starting_ts, topic, partition, None)
    if ts is not None:
        o = offset_for_timestamp(folder, ts, report)
        if o is None:
            return None
        start = o if start is None else max(start, o)
    ts = _resolve(opts.ending_ts, topic, partition, None)
    if ts is not None:
        o = offset_for_timestamp(folder, ts, report)
        if o is not None:
            end = o if end is None else min(end, o)
    if bounds.offset_lo is not None:
        start = bounds.offset_lo if start is None else max(start, bounds.offset_lo)
    if bounds.offset_hi is not None:
        end = bounds.offset_hi if end is None else min(end, bounds.offset_hi)
    if start is not None and end is not None and end <= start:
        return None
    return start, end


def _segment_max_timestamp(seg, report, is_last):
    """Largest record timestamp of a rolled segment from its time index's last entry, else None."""
    if is_last or not os.path.exists(seg.timeindex):
        return None
    entries = _index_entries(seg, report, "timeindex")
    if entries is None or not len(entries):
        return None
    return int(entries["timestamp"][-1])


def _split_points(seg, start_pos, stop_pos, pieces, report):
    """Up to `pieces` byte ranges of a segment, cut at offset-index positions (batch starts)."""
    if pieces <= 1 or not os.path.exists(seg.index):
        return [(start_pos, stop_pos)]
    entries = _index_entries(seg, report, "index")
    if entries is None or not len(entries):
        return [(start_pos, stop_pos)]
    cuts = entries["position"].astype(np.int64)
    cuts = cuts[(cuts > start_pos) & (cuts < stop_pos)]
    if not len(cuts):
        return [(start_pos, stop_pos)]
    wanted = np.linspace(start_pos, stop_pos, pieces + 1)[1:-1]
    chosen = sorted(set(int(cuts[min(np.searchsorted(cuts, w), len(cuts) - 1)]) for w in wanted))
    edges = [start_pos] + chosen + [stop_pos]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def plan(opts, bounds, report):
    """The tasks of a query, grouped into input partitions (lists of tasks)."""
    if bounds.empty:
        return []
    folders = []
    for root in opts.paths:
        if not os.path.isdir(root):
            raise OptionError(f"path does not exist or is not a directory: {root}")
        base = os.path.basename(os.path.normpath(root))
        m = PARTITION_DIR.match(base)
        if m and any(n.endswith(".log") for n in os.listdir(root)):
            folders.append((m.group("topic"), int(m.group("partition")), root))   # a partition folder itself
        else:
            folders += list_partitions(root, report=report)
    if not folders:
        raise OptionError(f"no <topic>-<partition> folders with segments under {', '.join(opts.paths)}")
    tasks = []
    for topic, partition, folder in folders:
        if not opts.wants(topic, partition):
            continue
        if bounds.topics is not None and topic not in bounds.topics:
            continue
        if bounds.topic_prefix is not None and not topic.startswith(bounds.topic_prefix):
            continue
        if bounds.partitions is not None and partition not in bounds.partitions:
            continue
        rng = partition_range(opts, bounds, topic, partition, folder, report)
        if rng is None:
            continue
        start, end = rng
        segments = list_segments(folder, report)
        aborted = lso = None
        if opts.isolation == "read_committed":
            aborted, lso = _transactions(segments, report, any(os.path.exists(s.txnindex) for s in segments))
            if lso is not None:
                end = lso if end is None else min(end, lso)
                if start is not None and end <= start:
                    continue
        for k, seg in enumerate(segments):
            nxt = segments[k + 1].base_offset if k + 1 < len(segments) else None
            if start is not None and nxt is not None and nxt <= start:
                continue
            if end is not None and seg.base_offset >= end and k > 0:
                break
            if bounds.ts_lo is not None:
                mx = _segment_max_timestamp(seg, report, k == len(segments) - 1)
                if mx is not None and mx < bounds.ts_lo:
                    continue  # pruned: no record of this segment is recent enough
            if seg.size == 0:
                continue
            m = _Mapped(seg.log)
            try:
                start_pos = _position_for_offset(seg, m, start, report)
                stop_pos = _end_position(seg, m, end, report)
            finally:
                m.close()
            if stop_pos <= start_pos:
                continue
            tasks.append(Task(topic, partition, seg.log, start_pos, stop_pos, start, end, aborted, lso))
    return _pack(tasks, opts, report)


def _pack(tasks, opts, report):
    total = sum(t.stop_pos - t.start_pos for t in tasks)
    target = opts.target_partition_bytes
    if opts.min_partitions and total:
        target = min(target, max(total // opts.min_partitions, 1))
    # split big tasks at index positions, then pack small ones together
    pieces = []
    for t in tasks:
        size = t.stop_pos - t.start_pos
        n = int(np.ceil(size / target)) if size > target else 1
        seg = Segment(os.path.dirname(t.log), int(os.path.basename(t.log)[:20]))
        for a, b in _split_points(seg, t.start_pos, t.stop_pos, n, report):
            pieces.append(Task(t.topic, t.partition, t.log, a, b, t.start_offset, t.end_offset, t.aborted, t.lso))
    groups, current, size = [], [], 0
    for p in pieces:
        s = p.stop_pos - p.start_pos
        if current and size + s > target:
            groups.append(current)
            current, size = [], 0
        current.append(p)
        size += s
    if current:
        groups.append(current)
    return groups

"""From options and pushed filters to input partitions (runs on the Spark driver).

Every topic-partition folder under the given log dirs that the subscription selects gets an
offset range [start, end): from startingOffsets/endingOffsets and pushed offset filters. Its
segments overlapping that range become tasks (file, byte range found with the offset index, offset
range); segments whose largest timestamp is below a pushed timestamp lower bound are pruned. Large
segments are split at offset-index positions to honour minPartitions; small tasks are packed
together up to targetPartitionBytes, since every Spark task has a fixed cost.

The timestamp options (startingTimestamp, endingTimestamp, *ByTimestamp: Kafka's offsets-for-times)
are resolved where the partition is read, in the Spark tasks (`TimeBound`): the driver opens no time
index. Only a partition too large for one input partition is resolved here, to be split.

What discovery found is kept in this process while nothing under the roots changes
(`kafkafmt.log.tree_state`): Spark runs every query's planning in a Python worker it reuses, so a
query on the same roots plans from it without walking thousands of folders again. Tasks are planned
afresh for every query (they depend on its options and pushed filters).
"""
from __future__ import annotations

import dataclasses
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kafkafmt.errors import DataLossError, KafkafmtError, PathNotFoundError, TopicNotFoundError
from kafkafmt.log import ReportKind
from kafkafmt.read import internal_topic
from kafkafmt.log import discover, tree_state
from kafkafmt.log import deal, plan as plan_partition
from kafkafmt._util.threads import cpu_count
from kafkafmt.spark.options import EARLIEST, LATEST, OptionError

@dataclass
class Bounds:
    """What pushed filters allow: offset and timestamp ranges, topics and partitions."""
    offset_lo: object = None     # inclusive
    offset_hi: object = None     # exclusive
    ts_lo: object = None         # inclusive, ms (prunes segments; Spark still filters the rows)
    topics: object = None        # set or None
    topic_prefix: object = None
    partitions: object = None    # set or None
    empty: bool = False          # the filters admit no row at all


def _resolve(spec, topic, partition, default):
    if isinstance(spec, dict):
        return spec.get(topic, {}).get(partition, default)
    return spec if spec is not None else default


def partition_range(opts, bounds, topic, partition):
    """(start, end, start_timestamp, end_timestamp) to read for one topic-partition (None = open)."""
    start = _resolve(opts.starting if isinstance(opts.starting, dict) else None, topic, partition, EARLIEST)
    end = _resolve(opts.ending if isinstance(opts.ending, dict) else None, topic, partition, LATEST)
    start = None if start == EARLIEST else start
    end = None if end == LATEST else end
    if bounds.offset_lo is not None:
        start = bounds.offset_lo if start is None else max(start, bounds.offset_lo)
    if bounds.offset_hi is not None:
        end = bounds.offset_hi if end is None else min(end, bounds.offset_hi)
    return (start, end, _resolve(opts.starting_ts, topic, partition, None),
            _resolve(opts.ending_ts, topic, partition, None))


#: discoveries kept (each: the roots' state, the partitions, the report); a few, for queries on a few sets of roots
FOUND_KEPT = 4
_found = OrderedDict()
_found_lock = threading.Lock()


def _discovery_key(opts):
    """What discovery depends on among a query's options."""
    return json.dumps([opts.paths, opts.storage_options, opts.tiered_keys, opts.replicas, opts.topic_id],
                      sort_keys=True, default=repr)


def _discover(opts):
    """(partitions, report entries) of the roots: kept while `kafkafmt.log.tree_state` of the roots is
    unchanged and settled, else found afresh."""
    try:
        state = tree_state(opts.paths, opts.storage_options)
    except (KafkafmtError, OSError, ValueError, ImportError):
        state = None                # discovery says what is wrong with the roots
    key = _discovery_key(opts)
    if state is not None and state.settled:
        with _found_lock:
            hit = _found.get(key)
            if hit is not None and hit[0] == state:
                _found.move_to_end(key)
                return hit[1]
    entries = []
    try:
        # (the driver's cores list the folders and scan the copies' headers side by side)
        found = discover(opts.paths, report=entries, storage_options=opts.storage_options,
                         tiered_keys=opts.tiered_keys, replicas=opts.replicas, topic_id=opts.topic_id,
                         threads=cpu_count())
    except PathNotFoundError as exc:
        raise OptionError(f"path does not exist: {exc}") from None
    except KafkafmtError as exc:
        raise OptionError(f"cannot list {', '.join(opts.paths)}: {exc}") from None
    try:
        found.check_incarnations()
    except KafkafmtError as exc:
        raise OptionError(f"kafka-segments: {exc} -- set topicId") from None
    if not found.partitions and not found.empty_log_dirs:
        raise OptionError(f"no <topic>-<partition> folders, log dirs or tiered uploads under {', '.join(opts.paths)}")
    out = (tuple(found.partitions), tuple(entries))
    if state is not None and state.settled:
        with _found_lock:
            _found[key] = (state, out)
            _found.move_to_end(key)
            while len(_found) > FOUND_KEPT:
                _found.popitem(last=False)
    return out


def partition_folders(opts, report):
    """Every partition under the given paths (partition folders, log dirs, folders holding log
    dirs at any depth, tiered uploads; paths or URLs, with the storage.* options), found by the
    library's discovery -- or as it found them for an earlier query, when nothing under local roots
    changed since. A log dir holding no partitions gives none (an empty DataFrame); paths holding no
    Kafka data at all are an error."""
    parts, entries = _discover(opts)
    report.extend(entries)
    if opts.fail_on_data_loss:
        for e in entries:
            if e.kind in (ReportKind.GAP, ReportKind.MISMATCH):
                raise DataLossError(f"kafka-segments: {e.file}: {e.message} -- set failOnDataLoss=false to read "
                                    "the rest")
    return list(parts)


def plan(opts, bounds, report):
    """The tasks of a query, grouped into input partitions (lists of tasks)."""
    if bounds.empty:
        return []
    tasks = []
    parts = partition_folders(opts, report)
    if opts.decode and opts.subscribe is None and opts.pattern is None and opts.assign is None:
        try:                  # a Connect table: the topic its Connect cluster named, as every door finds it
            chosen = internal_topic(opts.decode, parts)
        except TopicNotFoundError as exc:
            raise OptionError(f"decode={opts.decode}: {exc.reason}; give its name with subscribe") from None
        parts = [p for p in parts if p.topic == chosen]
    for part in parts:
        topic, partition = part.topic, part.partition
        if not opts.wants(topic, partition):
            continue
        if bounds.topics is not None and topic not in bounds.topics:
            continue
        if bounds.topic_prefix is not None and not topic.startswith(bounds.topic_prefix):
            continue
        if bounds.partitions is not None and partition not in bounds.partitions:
            continue
        start, end, ts_start, ts_end = partition_range(opts, bounds, topic, partition)
        if ts_start is None and ts_end is None:
            tasks += plan_partition(part, start_offset=start, end_offset=end, isolation=opts.isolation,
                                    report=report, min_timestamp=bounds.ts_lo)
            continue
        timed = TimeBound.of(part, start, end, ts_start, ts_end, opts.isolation, bounds.ts_lo, report)
        if timed is not None:
            tasks.append(timed)
    return _pack(tasks, opts, report)


@dataclass
class TimeBound:
    """A partition read with timestamp options, resolved where it is read (a Spark task), not by the
    driver: Kafka's offsets-for-times (`kafkafmt.log.resolve_offsets`) for ``start_ts`` / ``end_ts`` within
    the offsets [start, end) the other options give.

    ``part``: the partition with its segments as planned (the task reads those); ``tasks``: them read
    whole (read_uncommitted, within [start, end)), what a small partition's read takes in bulk
    (`kafkafmt.log.read_units`) and cuts by its records' own timestamps (`keep`); a larger one, or one
    read_committed, is planned through the time indexes by `plan` in the task."""
    part: object
    tasks: list
    start: object
    end: object
    start_ts: object
    end_ts: object
    isolation: str
    min_timestamp: object = None

    @classmethod
    def of(cls, part, start, end, start_ts, end_ts, isolation, min_timestamp, report):
        """The partition's time-bound read (None when it has nothing in [start, end))."""
        planned = dataclasses.replace(part, segments=tuple(part.list_segments(report)))
        whole = plan_partition(planned, start_offset=start, end_offset=end, report=report)
        if not whole:
            return None
        return cls(planned, whole, start, end, start_ts, end_ts, isolation, min_timestamp)

    @property
    def size(self):
        """Bytes of its segments within [start, end) (what the read costs at most)."""
        return sum(t.stop_pos - t.start_pos for t in self.tasks)

    @property
    def key(self):
        """(topic, partition, log dir): what its records are labelled with."""
        return self.part.topic, self.part.partition, self.part.log_dir_url

    def plan(self, report):
        """Its tasks after Kafka's offsets-for-times through the time indexes (the library's planner, on
        the segments planned)."""
        return plan_partition(self.part, start_offset=self.start, end_offset=self.end, start_timestamp=self.start_ts,
                              end_timestamp=self.end_ts, isolation=self.isolation, report=report,
                              min_timestamp=self.min_timestamp)

    def keep(self, offsets, timestamps):
        """Which of its records (all of them, in log order) the options select: from the first whose
        timestamp is >= start_ts, up to the first whose timestamp is >= end_ts -- Kafka's
        offsets-for-times on the records themselves, which is what the time indexes give as long as
        they agree with the log (`plan` is the way through them)."""
        lo, hi = self.start, self.end
        if self.start_ts is not None:
            hit = np.flatnonzero(timestamps >= self.start_ts)
            if not len(hit):
                return np.zeros(len(offsets), bool)
            at = int(offsets[hit[0]])
            lo = at if lo is None else max(lo, at)
        if self.end_ts is not None:
            hit = np.flatnonzero(timestamps >= self.end_ts)
            if len(hit):
                at = int(offsets[hit[0]])
                hi = at if hi is None else min(hi, at)
        mask = np.ones(len(offsets), bool)
        if lo is not None:
            mask &= offsets >= lo
        if hi is not None:
            mask &= offsets < hi
        return mask


#: segment bytes below which a read is not spread over more input partitions than it needs (Spark's
#: own file sources count a file open as this many bytes: spark.sql.files.openCostInBytes)
MIN_SPLIT_BYTES = 4 << 20


def _size(piece):
    return piece.size if isinstance(piece, TimeBound) else piece.stop_pos - piece.start_pos


def _pack(tasks, opts, report):
    """Input partitions sized by bytes: k = max(total / targetPartitionBytes, minPartitions, the cores
    of this machine while each gets at least MIN_SPLIT_BYTES) of them -- many small Kafka partitions
    packed into one, every core busy; tasks larger than total / k split at offset-index positions (a
    `TimeBound` larger than that is resolved here first, to be split); the pieces dealt largest first
    to the least loaded partition (every Spark task has a fixed cost, and the slowest one decides),
    each partition's pieces then read in log order (a partition's small whole segments are read
    together: `kafkafmt.spark.read.read_tasks`)."""
    total = sum(_size(t) for t in tasks)
    if not tasks:
        return []
    cores = min(cpu_count(), int(total // MIN_SPLIT_BYTES))
    k = max(1, int(np.ceil(total / opts.target_partition_bytes)), opts.min_partitions or 1, cores)
    share = max(total / k, 1.0)
    pieces = []
    for t in tasks:
        size = _size(t)
        if size <= share:
            pieces.append(t)        # whole (most tasks: copying each would cost more than the rest)
            continue
        for task in (t.plan(report) if isinstance(t, TimeBound) else [t]):
            size = task.stop_pos - task.start_pos
            if size <= share:
                pieces.append(task)
                continue
            n = int(np.ceil(size / share - 1e-9))
            for a, b in task.segment.split_points(task.start_pos, task.stop_pos, n, report):
                pieces.append(dataclasses.replace(task, start_pos=a, stop_pos=b))
    if not pieces:
        return []
    order = {id(p): i for i, p in enumerate(pieces)}
    groups = deal([(p, _size(p)) for p in pieces], k)
    return [sorted(g, key=lambda p: order[id(p)]) for g in groups]

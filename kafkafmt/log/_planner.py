"""The one planner: what to read of a partition -- offset and time bounds turned into `Task`s (a
segment, a byte range found through its offset index, an offset range) -- and how to share tasks
among workers (`pack`). The library, the command line and Spark's batch and stream readers plan
through it.

* Offset seeks (first offset >= start): the segment whose base offset is the largest <= start, then
  the ``.index`` entry with the largest offset <= start gives the byte position to decode from
  (OffsetIndex.lookup).
* Time seeks (first record with timestamp >= T, as ListOffsets and Spark's startingTimestamp) become
  offsets, so ``start_timestamp``/``end_timestamp`` select what a consumer that seeked by time reads.
* ``isolation="read_committed"`` drops the records of aborted transactions and stops at the last
  stable offset, as a read_committed consumer does.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkafmt.log._discovery import Partition, resolve_partition
from kafkafmt._util.times import to_millis
from kafkafmt.log._transactions import transactions

__all__ = ["Task", "plan", "resolve_offsets", "offset_for_timestamp", "deal"]


_ISOLATIONS = ("read_uncommitted", "read_committed")


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
    None when nothing can match. A start left open begins at the partition's log start offset when
    its log dir's checkpoint moved it past the first segment (records deleted by DeleteRecords)."""
    if start_offset is None and isinstance(folder, Partition) and folder.log_start_offset is not None:
        earliest = folder.earliest(segments)
        if earliest is not None and earliest > segments[0].base_offset:
            start_offset = earliest
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
    """The tasks that read one partition (a folder path or URL, or a `Partition` -- also one made of
    a single file's segment): one per segment overlapping the offset range, with the byte range
    found through the offset index (positions=False: whole segments, for callers that seek later).
    An open start is the partition's earliest offset (`Partition.earliest`). ``min_timestamp``
    prunes rolled segments whose largest timestamp (time index) is below it. Empty segments are
    left out."""
    if isolation not in _ISOLATIONS:
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    start_timestamp = to_millis(start_timestamp, "start_timestamp")
    end_timestamp = to_millis(end_timestamp, "end_timestamp")
    min_timestamp = to_millis(min_timestamp, "min_timestamp")
    report = [] if report is None else report
    part = resolve_partition(folder, storage_options, filesystem)
    topic, partition = part.topic, part.partition
    segments = part.list_segments(report)
    rng = resolve_offsets(part, segments, start_offset, end_offset, start_timestamp, end_timestamp, report, errors)
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
        # the index is looked up only for a bound inside the segment (an open range reads it whole)
        if positions and ((start is not None and start > seg.base_offset) or end is not None):
            with seg.open() as f:
                start_pos = seg.position_for_offset(f, start, report)
                stop_pos = seg.end_position(f, end, report)
        if stop_pos > start_pos:
            tasks.append(Task(topic, partition, seg, start_pos, stop_pos, start, end, is_last, nxt, aborted, lso,
                              part.log_dir_url))
    return tasks


def offset_for_timestamp(folder, timestamp, report=None, *, errors="strict", segments=None):
    """Kafka's ListOffsets for a timestamp: the first offset whose record timestamp is >= it.

    Parameters
    ----------
    folder : str or os.PathLike
        A partition folder (path or URL).
    timestamp : int, str, datetime or pandas.Timestamp
        ms, or any form `kafkafmt._util.times.to_millis` reads.
    report : list, optional
        Indexes not used (and scanned instead) are named in it as `ReportEntry`.
    errors : {"strict", "salvage"}
        "salvage" skips corrupt stretches instead of raising.
    segments : list of Segment, optional
        The partition's segments, when already listed.

    Returns
    -------
    int or None
        The offset, or None when no record is that recent.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> folder = f"{sample_dir()}/payments-0"
    >>> kafkafmt.offset_for_timestamp(folder, "2026-01-01T00:00:06Z")
    71
    >>> kafkafmt.offset_for_timestamp(folder, 1767225606000)
    71
    >>> kafkafmt.offset_for_timestamp(folder, "2027-01-01") is None
    True
    """
    timestamp = to_millis(timestamp, "timestamp")
    report = [] if report is None else report
    segments = resolve_partition(folder).list_segments(report) if segments is None else segments
    for k, seg in enumerate(segments):
        with seg.open() as f:
            hit = seg.first_offset_at_or_after(f, timestamp, report, k == len(segments) - 1, errors)
        if hit is not None:
            return hit
    return None


def deal(pieces, k):
    """Share ``pieces`` [(item, size)] among at most ``k`` workers: largest first, each to the least
    loaded (every Spark task has a fixed cost, and the slowest one decides). Lists of items, one per
    worker that got any, each in the order dealt."""
    bins = [[0.0, []] for _ in range(min(k, len(pieces)))]
    for item, size in sorted(pieces, key=lambda x: -x[1]):
        least = min(bins, key=lambda b: b[0])
        least[0] += size
        least[1].append(item)
    return [b[1] for b in bins if b[1]]

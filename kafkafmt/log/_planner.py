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
* Going on from where an earlier read stopped (`find_divergence`): the log end, the topic id and
  the batch that earlier read ended with (a `BatchMark`: base offset, leader epoch, CRC) are
  checked against the log as it is now -- a log that was truncated, restored from an older copy,
  overwritten by a new leader or re-created is found, with the offset from which to read again.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from kafkafmt.log._discovery import Partition, resolve_partition
from kafkafmt.log._fill import gap_stretches
from kafkafmt.log._framing import scan_range
from kafkafmt.log._names import PARTITION_METADATA
from kafkafmt._util.times import to_millis
from kafkafmt.log._transactions import transactions

__all__ = ["Task", "plan", "resolve_offsets", "offset_for_timestamp", "deal", "BatchMark", "Divergence",
           "log_end_offset", "batch_mark", "find_divergence", "topic_id_of"]


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
    alternates: tuple = ()         # other copies of the partition: a stretch this one cannot give is read there
    next_segment: object = None    # the next segment (an overlap with it is read once)
    # stretches the partition's copy lacks that an alternate holds (kafkafmt.log._fill.Gap), with the offsets of
    # each this task reads there: ((gap, first, end), ...) -- each gap's part of the range, given to one task
    fills: tuple = ()

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
        aborted, lso = transactions(segments, report, extra=gap_stretches(part))
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
                              part.log_dir_url, part.alternates, None if is_last else segments[k + 1]))
    if part.gaps and tasks:
        _give_gaps(tasks, part.gaps, start, end)
    return tasks


def _give_gaps(tasks, gaps, start, end):
    """Give each gap's offsets inside [start, end) to one task: the last whose segment begins at or below its
    first offset (else the first task), in offset order."""
    bases = [t.segment.base_offset for t in tasks]
    for g in gaps:
        lo = g.lo if start is None else max(g.lo, start)
        hi = g.hi if end is None else min(g.hi, end)
        if hi <= lo:
            continue
        k = max(0, bisect.bisect_right(bases, lo) - 1)
        tasks[k].fills = tasks[k].fills + ((g, lo, hi),)


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


# ----------------------------------------------------------------------------------------------
# going on from where an earlier read stopped

_SCAN_STEP = 1 << 20        # bytes of batch headers scanned at a time


@dataclass(frozen=True)
class BatchMark:
    """What identifies a record batch of a partition's log once read: its offsets, the leader epoch
    and CRC of its header, how many records it held, and the topic id of the partition
    (``partition.metadata``; None without one). A reader keeps the mark of the last batch it read
    and checks it against the log before going on (`find_divergence`).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.log._planner import batch_mark
    >>> from kafkafmt.sample import sample_dir
    >>> mark = batch_mark(f"{sample_dir()}/payments-0", 40)
    >>> mark.base_offset, mark.last_offset, mark.records
    (35, 44, 10)
    >>> BatchMark.from_list(mark.as_list()) == mark
    True
    """
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    records: int
    topic_id: object = None

    @classmethod
    def of_row(cls, table, i, topic_id=None):
        """The mark of row ``i`` of a batch table (`kafkafmt.scan_batches`, `Records.batches`)."""
        return cls(int(table["base_offset"][i]), int(table["last_offset"][i]),
                   int(table["partition_leader_epoch"][i]), int(table["crc"][i]), int(table["record_count"][i]),
                   topic_id)

    def as_list(self):
        """[base offset, last offset, leader epoch, CRC, records, topic id]: the mark as JSON."""
        return [self.base_offset, self.last_offset, self.leader_epoch, self.crc, self.records, self.topic_id]

    @classmethod
    def from_list(cls, values):
        b, last, epoch, crc, n = (int(v) for v in values[:5])
        return cls(b, last, epoch, crc, n, values[5] if len(values) > 5 and values[5] else None)

    def holds(self, next_offset):
        """Whether this can be the batch a read that stopped before ``next_offset`` ended with."""
        return self.base_offset < next_offset <= self.last_offset + 1

    def describe(self):
        return f"offsets {self.base_offset}..{self.last_offset} (leader epoch {self.leader_epoch}, CRC {self.crc:#010x})"


@dataclass(frozen=True)
class Divergence:
    """Where a partition's log no longer is what an earlier read found: ``offset``, the first offset
    to read again (records from there on may differ from the ones read); ``log_end``, the log end
    offset now; ``reason``, what was found; ``exact``, whether the records below ``offset`` are
    known to be the ones read (False: only the last batch read was compared, they may differ too).

    Examples
    --------
    >>> from kafkafmt.log._planner import Divergence
    >>> Divergence(2544, 2544, "its log end went back from 3000 to 2544").exact
    True
    """
    offset: int
    log_end: int
    reason: str
    exact: bool = True


def _segments_of(part, segments):
    part = resolve_partition(part)
    return part, (part.list_segments() if segments is None else list(segments))


def _scan_headers(seg, start_offset=None, stop_offset=None):
    """The batch headers of a segment (a Table) from the batch holding ``start_offset`` (found
    through the offset index) until one ending at or after ``stop_offset``, and whether the scan
    reached the end of the segment's intact data (no damage on the way)."""
    tables, clean = [], True
    with seg.open() as f:
        pos = seg.position_for_offset(f, start_offset, []) if start_offset is not None else 0
        while pos < f.size:
            t, info = scan_range(f, pos, min(f.size, pos + _SCAN_STEP))
            n = info["count"]
            if n:
                t = t[:n] if len(t) != n else t
                tables.append(t)
                if stop_offset is not None and int(t["last_offset"][n - 1]) >= stop_offset:
                    break
            if info["error"] is not None:
                clean = False
                break
            end = int(info["valid_bytes"])
            if end <= pos:
                if info["tail"] == "truncated" and pos + _SCAN_STEP < f.size:
                    end = _past_large_batch(f, pos)
                    if end is None:
                        break
                    t, _ = scan_range(f, pos, end)
                    tables.append(t)
                else:
                    break          # a batch being written, or a preallocated zero-filled tail: the end
            pos = end
    if not tables:
        return None, clean
    if len(tables) == 1:
        return tables[0], clean
    from kafkafmt.record import Table

    return Table({k: np.concatenate([t[k] for t in tables]) for k in tables[0].columns}), clean


def _past_large_batch(f, pos):
    from kafkafmt.log._framing import entry_size_at

    size = entry_size_at(f, pos)
    return None if size <= 0 or pos + 12 + size > f.size else pos + 12 + size


def log_end_offset(part, segments=None):
    """The log end offset of a partition (a folder, URL or `Partition`): one past the last complete
    batch -- the base offset of its last segment when that one is empty; None without segments or
    when the last segment is damaged before its end (the end cannot be told).

    Examples
    --------
    >>> from kafkafmt.log._planner import log_end_offset
    >>> from kafkafmt.sample import sample_dir
    >>> log_end_offset(f"{sample_dir()}/payments-0")
    122
    """
    part, segments = _segments_of(part, segments)
    if not segments:
        return None
    last = segments[-1]
    t, clean = _scan_headers(last, (1 << 62) if last.size else None)
    if not clean:
        return None
    return last.base_offset if t is None or not len(t) else max(last.base_offset, int(t["last_offset"].max()) + 1)


def _batches_between(segments, lo, hi):
    """Batch headers (a list of (segment, Table)) of the batches holding offsets in [lo, hi]."""
    out = []
    k = max(0, int(np.searchsorted([s.base_offset for s in segments], lo, side="right")) - 1)
    for seg in segments[k:]:
        if seg.base_offset > hi:
            break
        t, _ = _scan_headers(seg, lo, hi)
        if t is None:
            continue
        keep = (t["last_offset"] >= lo) & (t["base_offset"] <= hi)
        if keep.any():
            out.append((seg, t[keep]))
    return out


def topic_id_of(part):
    """The topic id of a partition's ``partition.metadata`` (Kafka's text form), None without one."""
    from kafkafmt.log.sidefiles import read_partition_metadata

    st = part.storage
    path = st.join(part.folder, PARTITION_METADATA)
    try:
        if not st.exists(path):
            return None
        return read_partition_metadata(st.read_bytes(path))["topic_id"]
    except Exception:  # noqa: BLE001 - unreadable: no topic id to compare
        return None


def batch_mark(part, offset, segments=None):
    """The `BatchMark` of the batch holding ``offset`` (or of the last batch before it, when no
    batch holds it), None when there is none."""
    part, segments = _segments_of(part, segments)
    lo = offset
    while True:
        found = _batches_between(segments, lo, offset)
        if found:
            seg, t = found[-1]
            below = np.flatnonzero(t["base_offset"] <= offset)
            if len(below):
                return BatchMark.of_row(t, int(below[-1]), topic_id_of(part))
        k = int(np.searchsorted([s.base_offset for s in segments], lo, side="right")) - 1
        if k <= 0:
            return None
        lo = segments[k - 1].base_offset       # nothing there (a batch the cleaner removed): look further back


def _same_batch(t, mark):
    """Whether a batch table holds the marked batch: the same offsets and leader epoch, and the same
    CRC -- or fewer records with the first and last offset kept, as the log cleaner rewrites a
    batch it removed records from."""
    hit = np.flatnonzero((t["base_offset"] == mark.base_offset) & (t["last_offset"] == mark.last_offset))
    if not len(hit):
        return False
    i = int(hit[0])
    if int(t["partition_leader_epoch"][i]) != mark.leader_epoch:
        return False
    return int(t["crc"][i]) == mark.crc or int(t["record_count"][i]) < mark.records


def _epoch_start(segments, epoch, upto):
    """The first offset of the log written in a leader epoch above ``epoch``, looking back from the
    segment holding ``upto`` (leader epochs only grow along a log): where a new leader's log
    parts from the one read (Kafka's truncation rule, KIP-101)."""
    k = max(0, int(np.searchsorted([s.base_offset for s in segments], upto, side="right")) - 1)
    first = None
    for seg in reversed(segments[:k + 1]):
        t, _ = _scan_headers(seg)
        if t is None or not len(t):
            continue
        later = np.flatnonzero(t["partition_leader_epoch"] > epoch)
        if not len(later):
            break
        first = int(t["base_offset"][later[0]])
        if later[0] > 0:
            break
    return first


def find_divergence(part, next_offset, mark=None, segments=None):
    """Check a partition's log against what an earlier read found before going on from
    ``next_offset`` (the offset after the last one read), ``mark`` the `BatchMark` of the last batch
    that read ended with: the topic id (a re-created topic), the marked batch (leader epoch, CRC:
    records the log now holds at offsets already read) and the log end (below ``next_offset``: the
    log was truncated or restored from an older copy). Returns None when the log goes on from
    where the read stopped as far as can be told, else a `Divergence` with the offset to read again
    from: the log end, where a newer leader epoch begins (Kafka's own rule), the marked batch's
    base offset (a same-epoch rewrite: the one batch compared is all the log tells; a reader that
    still has the records read can look further back), or the log start (a re-created topic).
    Offsets deleted by retention are not a divergence.

    Examples
    --------
    >>> import shutil
    >>> from kafkafmt.log._planner import batch_mark, find_divergence
    >>> from kafkafmt.sample import sample_dir
    >>> folder = shutil.copytree(f"{sample_dir()}/payments-0", "restored/payments-0")
    >>> mark = batch_mark(folder, 121)
    >>> find_divergence(folder, 122, mark) is None
    True
    >>> import os
    >>> os.remove(f"{folder}/00000000000000000071.log")           # the newest segment is gone
    >>> find_divergence(folder, 122, mark)
    Divergence(offset=71, log_end=71, reason='its log end went back from 122 to 71', exact=False)
    """
    part, segments = _segments_of(part, segments)
    if not segments:
        return None
    end = log_end_offset(part, segments)
    if mark is not None and mark.topic_id is not None:
        now = topic_id_of(part)
        if now is not None and now != mark.topic_id:
            start = part.earliest(segments)
            return Divergence(start, end if end is not None else start,
                              f"the topic was deleted and created again (topic id {mark.topic_id}, now {now})")
    verified = False
    if mark is not None and mark.holds(next_offset) and (end is None or mark.base_offset < end):
        found = _batches_between(segments, mark.base_offset, mark.last_offset)
        verified = any(_same_batch(t, mark) for _, t in found)
        if found and not any(_same_batch(t, mark) for _, t in found):
            t = found[0][1]
            now = BatchMark.of_row(t, 0)
            at = min(int(t["base_offset"][0]), mark.base_offset)
            why = (f"the batch read at {mark.describe()} is now {now.describe()}"
                   + ("" if len(t) == 1 and len(found) == 1 else " and more batches"))
            exact = False
            if mark.leader_epoch >= 0 and any((x["partition_leader_epoch"] > mark.leader_epoch).any()
                                              for _, x in found):
                begin = _epoch_start(segments, mark.leader_epoch, mark.base_offset)
                if begin is not None:
                    at, exact = min(at, begin), True
                why += f": a newer leader's log from offset {at}"
            if end is not None:
                at = min(at, end)
            return Divergence(at, end if end is not None else at, why, exact)
    if end is not None and end < next_offset:
        return Divergence(end, end, f"its log end went back from {next_offset} to {end}", verified)
    return None

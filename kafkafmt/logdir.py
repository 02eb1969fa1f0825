"""Partition directories and whole ``log.dirs``, read the way Kafka reads them.

* Layout: ``<log.dir>/<topic>-<partition>/<20-digit base offset>.log`` plus side files (see
  sidefiles.py). Segments are read in base-offset order; leftovers of the broker's own work
  (``.deleted``, ``.cleaned``, ``.swap``, ``-delete``/``-future`` partition folders) are skipped
  and named in the result's ``report``.
* Offset seeks (first offset >= start): the segment whose base offset is the largest <= start,
  then the ``.index`` entry with the largest offset <= start gives the byte position to decode
  from (OffsetIndex.lookup). Time seeks (first record with timestamp >= T, as ListOffsets and
  Spark's startingTimestamp): the first segment whose largest timestamp is >= T, the
  ``.timeindex`` entry with the largest timestamp <= T, that offset's position, then a scan.
  Timestamps become offsets, so ``start_timestamp``/``end_timestamp`` select the same records a
  consumer that seeked by time would read. A missing index, or one that fails Kafka's sanity
  checks, falls back to scanning from the segment start, with a warning and a report entry.
* ``isolation="read_committed"`` drops control batches and the records of aborted transactions
  (ranges from ``.txnindex`` files when the partition has them, else from ABORT markers found by
  a header scan) and stops at the last stable offset: the first offset of a transaction still
  open at the end of the log, as a read_committed consumer does.
* ``errors="salvage"`` decodes every intact batch after a corrupt one, resynchronizing on the next
  entry whose header is plausible and whose CRC verifies, and reports each skipped byte range.
* ``iter_log_dir`` yields chunks of at most about ``max_bytes`` of decoded data.
"""
from __future__ import annotations

import mmap
import os
import re
import warnings

import numpy as np

from kafkafmt import sidefiles
from kafkafmt._native import scan as _scan
from kafkafmt.decoder import PARTITION_DIR, decode
from kafkafmt.errors import CorruptRecordError, KafkafmtError
from kafkafmt.records import Records

__all__ = ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "list_partitions", "list_segments",
           "offset_for_timestamp", "KafkafmtWarning"]

_DEFAULT_INDEX_INTERVAL = 4096   # Kafka's index.interval.bytes
SEGMENT_LOG = re.compile(r"^(?P<base>\d{20})\.log$")
_LEFTOVER = re.compile(r"^\d{20}\.(log|index|timeindex|txnindex|snapshot)\.(deleted|cleaned|swap)$|"
                       r"^\d{20}\.(cleaned|swap|deleted)$")
METADATA_COLUMNS = {"offset", "timestamp", "timestampType", "timestamp_type", "topic", "partition"}


class KafkafmtWarning(UserWarning):
    """Something was read in a slower or degraded way (an index fell back to a scan...)."""


class Segment:
    """One segment of a partition: its files and base offset."""

    __slots__ = ("base_offset", "log", "index", "timeindex", "txnindex", "size", "cache")

    def __init__(self, folder, base_offset):
        stem = os.path.join(folder, f"{base_offset:020d}")
        self.base_offset = base_offset
        self.log = stem + ".log"
        self.index = stem + ".index"
        self.timeindex = stem + ".timeindex"
        self.txnindex = stem + ".txnindex"
        self.size = os.path.getsize(self.log)
        self.cache = {}     # index entries read (once per read, so a fallback is reported once)

    def __repr__(self):
        return f"<Segment {self.log} {self.size} bytes>"


def list_segments(folder, report=None):
    """The segments of a partition folder in offset order; leftovers are named in `report`."""
    segments = []
    for name in sorted(os.listdir(folder)):
        m = SEGMENT_LOG.match(name)
        if m:
            segments.append(Segment(folder, int(m.group("base"))))
        elif _LEFTOVER.match(name) and report is not None:
            report.append(dict(file=os.path.join(folder, name), start=None, end=None,
                               reason="broker leftover (deleted/cleaned/swap file) skipped"))
    segments.sort(key=lambda s: s.base_offset)
    return segments


def list_partitions(root, topics=None, partitions=None, report=None):
    """(topic, partition, folder) for every partition folder under a log dir, sorted."""
    found = []
    topics = None if topics is None else set([topics] if isinstance(topics, str) else topics)
    partitions = None if partitions is None else set([partitions] if isinstance(partitions, int) else partitions)
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not os.path.isdir(path):
            continue
        m = PARTITION_DIR.match(name)
        if not m:
            if name.endswith(("-delete", "-future", "-stray")) and report is not None:
                report.append(dict(file=path, start=None, end=None,
                                   reason="partition folder being deleted, moved or left stray "
                                          "(-delete/-future/-stray) skipped"))
            continue
        topic, partition = m.group("topic"), int(m.group("partition"))
        if (topics is None or topic in topics) and (partitions is None or partition in partitions):
            found.append((topic, partition, path))
    found.sort(key=lambda t: (t[0], t[1]))
    return found


def _topic_partition(folder):
    m = PARTITION_DIR.match(os.path.basename(os.path.normpath(folder)))
    if not m:
        raise KafkafmtError(f"not a partition folder (<topic>-<partition>): {folder}")
    return m.group("topic"), int(m.group("partition"))


def _fallback(report, file, why):
    msg = f"{file}: {why}; scanning the segment instead"
    warnings.warn(msg, KafkafmtWarning, stacklevel=4)
    report.append(dict(file=file, start=None, end=None, reason=why + "; scanned instead"))


class _Mapped:
    """A read-only memory map of a segment (empty files allowed)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.size = os.fstat(f.fileno()).st_size
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        self.buf = np.frombuffer(self.map, np.uint8) if self.map is not None else np.zeros(0, np.uint8)

    def release(self, done, upto):
        """Drop this process's pages of the map in [done, upto) (page-aligned); returns upto's
        page boundary. The file stays in the page cache; only resident memory goes."""
        page = mmap.PAGESIZE
        lo, hi = done - done % page, upto - upto % page
        if self.map is not None and hi > lo and hasattr(mmap, "MADV_DONTNEED"):
            try:
                self.map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            except (OSError, ValueError):
                return done
        return max(hi, done)

    def close(self):
        self.buf = None
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # still referenced by a traceback: closed when collected
                pass


def _index_entries(seg, report, kind):
    """Offset or time index entries of a segment, or None (missing / failing sanity checks)."""
    if kind in seg.cache:
        return seg.cache[kind]
    seg.cache[kind] = entries = _read_index_entries(seg, report, kind)
    return entries


def _read_index_entries(seg, report, kind):
    path = seg.index if kind == "index" else seg.timeindex
    if not os.path.exists(path):
        if seg.size:
            _fallback(report, path, f"no .{kind} file")
        return None
    try:
        if kind == "index":
            entries = sidefiles.read_index(path, seg.base_offset)
            ok = (len(entries) == 0 or (np.all(np.diff(entries["offset"]) > 0) and np.all(np.diff(entries["position"]) > 0)
                  and entries["offset"][0] >= seg.base_offset and entries["position"][-1] < seg.size))
        else:
            entries = sidefiles.read_timeindex(path, seg.base_offset)
            ok = (len(entries) == 0 or (np.all(np.diff(entries["timestamp"]) >= 0)
                  and np.all(np.diff(entries["offset"]) >= 0) and entries["offset"][0] >= seg.base_offset))
    except KafkafmtError as exc:
        _fallback(report, path, f"unreadable .{kind} ({exc.reason})")
        return None
    if not ok:
        _fallback(report, path, f".{kind} fails Kafka's sanity checks")
        return None
    if not len(entries) and seg.size > 2 * _DEFAULT_INDEX_INTERVAL:
        # empty or zeros only (lost, or preallocated and never written) for a segment that should
        # hold entries at the default index.interval.bytes
        _fallback(report, path, f".{kind} holds no entries although the segment has {seg.size} bytes")
        return None
    return entries


def _batch_at(m, position):
    """(last offset, max timestamp) of the entry at a byte position, or None if none starts there."""
    t = _scan.scan(m.buf[:m.size], _scan.CRC_SKIP_, position)
    if not t["count"] or int(t["position"][0]) != position:
        return None
    return int(t["last_offset"][0]), int(t["max_timestamp"][0])


def _verified_position(seg, m, entries, i, report):
    """Position of index entry i, after checking that a batch ending with that offset starts
    there (a wrong but sane-looking index must not silently drop records)."""
    pos, off = int(entries["position"][i]), int(entries["offset"][i])
    head = _batch_at(m, pos) if pos < m.size else None
    if head is None or head[0] != off:
        seg.cache["index"] = None
        _fallback(report, seg.index, f"entry ({off}, {pos}) does not point at a batch ending with offset {off}")
        return None
    return pos


def _position_for_offset(seg, m, offset, report):
    """Byte position to start decoding from for records >= offset (OffsetIndex.lookup)."""
    if offset is None or offset <= seg.base_offset:
        return 0
    entries = _index_entries(seg, report, "index")
    if entries is None or not len(entries):
        return 0
    i = int(np.searchsorted(entries["offset"], offset, side="right")) - 1
    if i < 0:
        return 0
    pos = _verified_position(seg, m, entries, i, report)
    return 0 if pos is None else pos


def _end_position(seg, m, end_offset, report):
    """A byte position past every batch that can hold an offset < end_offset."""
    if end_offset is None:
        return m.size
    entries = _index_entries(seg, report, "index")
    if entries is None or not len(entries):
        return m.size
    i = int(np.searchsorted(entries["offset"], end_offset, side="left"))
    if i >= len(entries):
        return m.size
    # the batch at that entry ends with offset >= end_offset; batches after it start beyond
    p = _verified_position(seg, m, entries, i, report)
    if p is None:
        return m.size
    size = int.from_bytes(m.buf[p + 8:p + 12].tobytes(), "big", signed=True)
    return min(m.size, p + 12 + max(size, 0))


def _decode_salvaging(m, path, start, stop, report, limit=None, **kw):
    """decode() over [start, stop), skipping corrupt stretches and reporting them. A resync may
    look past stop up to `limit` (the segment's end); the result's `resume` attribute says
    where reading should go on."""
    limit = stop if limit is None else limit
    parts = []
    pos = start
    last_offset = -1
    resume = stop
    while pos < stop:
        try:
            parts.append(decode(m.buf, start=pos, stop=stop, file=path, **kw))
            break
        except CorruptRecordError as exc:
            bad = exc.batch_position if exc.batch_position is not None else pos
            if bad > pos:
                good = decode(m.buf, start=pos, stop=bad, file=path, **kw)
                parts.append(good)
                if len(good.batches):
                    last_offset = int(good.batches.last_offset[-1])
            nxt = _scan.find_next_entry(m.buf[:limit], bad + 1, last_offset + 1 if last_offset >= 0 else -1)
            end = limit if nxt < 0 else nxt
            report.append(dict(file=path, start=bad, end=end, reason=exc.reason, offset=exc.offset))
            pos = end
            if end >= stop:
                resume = end
                break
    if not parts:
        out = decode(b"", file=path, **kw)
        out.valid_bytes, out.trailing_bytes, out.tail = resume, 0, None
    else:
        last = parts[-1]
        out = Records.concat(parts) if len(parts) > 1 else last
        out.valid_bytes, out.trailing_bytes, out.tail = last.valid_bytes, last.trailing_bytes, last.tail
        if out.tail == "truncated" and stop < limit:
            # cut by the chunk's end (placed by a corrupt size field), not by the segment's:
            # the next chunk starts at that batch
            out.tail, out.trailing_bytes, resume = None, 0, last.valid_bytes
    out.resume = resume
    return out


def _tail_entry(file, recs, end):
    """The report entry for a decode that ended in a truncated batch or a zero-filled tail."""
    return dict(file=file, start=recs.valid_bytes, end=end,
                reason="truncated final batch" if recs.tail == "truncated" else "zero-filled tail")


def salvage_file(path, **kw):
    """A whole segment file decoded with errors="salvage" (read_segment's salvage mode): corrupt
    stretches and a cut-off tail are skipped and listed in the result's report."""
    report = []
    m = _Mapped(path)
    try:
        recs = _decode_salvaging(m, path, 0, m.size, report, **kw)
    finally:
        m.close()
    if recs.tail is not None:
        report.append(_tail_entry(path, recs, m.size))
    recs.report = report
    return recs


def _decode_segment(seg, m, start_pos, stop_pos, errors, report, is_last=True, limit=None, **kw):
    if errors == "salvage":
        recs = _decode_salvaging(m, seg.log, start_pos, stop_pos, report, limit=limit, **kw)
    elif errors == "strict":
        recs = decode(m.buf, start=start_pos, stop=stop_pos, file=seg.log, **kw)
        recs.resume = stop_pos
    else:
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    if recs.tail is not None:
        if recs.tail == "truncated" and not is_last and stop_pos == m.size and errors == "strict":
            # a cut-off tail is the end of data only at the end of the log: here segments follow
            raise CorruptRecordError("segment ends inside a batch although later segments follow "
                                     "(use errors='salvage' to read past it)", file=seg.log,
                                     position=recs.valid_bytes)
        # the tail runs to the end of what is read in this segment, not just of this chunk
        report.append(_tail_entry(seg.log, recs, stop_pos if limit is None else max(limit, stop_pos)))
    recs.batches = recs.batches.with_column("segment", np.full(len(recs.batches), seg.base_offset, np.int64))
    return recs


def _first_at_or_after_time(seg, m, ts, report, is_last, errors="strict"):
    """Offset of the first record in seg with timestamp >= ts, or None."""
    entries = _index_entries(seg, report, "timeindex")
    if entries is not None and len(entries) and not is_last and int(entries["timestamp"][-1]) < ts:
        # a rolled segment's last time-index entry holds its largest timestamp: skip the segment,
        # once the batch that entry names confirms that timestamp
        last_ts, last_off = int(entries["timestamp"][-1]), int(entries["offset"][-1])
        t = _scan.scan(m.buf[:m.size], _scan.CRC_SKIP_, _position_for_offset(seg, m, last_off, report))
        n = t["count"]
        hit = np.flatnonzero((t["base_offset"][:n] <= last_off) & (t["last_offset"][:n] >= last_off))
        if len(hit) and int(t["max_timestamp"][hit[0]]) == last_ts:
            return None
        seg.cache["timeindex"] = entries = None
        _fallback(report, seg.timeindex, f"last entry ({last_ts}, {last_off}) does not match the log")
    pos = 0
    if entries is not None and len(entries):
        i = int(np.searchsorted(entries["timestamp"], ts, side="right")) - 1
        if i >= 0:
            pos = _position_for_offset(seg, m, int(entries["offset"][i]), report)
    opts = dict(keys=False, values=False, headers=False, verify_crc=None, include_control=False)
    if errors == "salvage":
        recs = _decode_salvaging(m, seg.log, pos, m.size, [], **opts)   # damage is reported by the read itself
    else:
        recs = decode(m.buf, start=pos, file=seg.log, **opts)
    hit = np.flatnonzero(recs.timestamp >= ts)
    return int(recs.offset[hit[0]]) if len(hit) else None


def offset_for_timestamp(folder, timestamp, report=None, *, errors="strict", segments=None):
    """Kafka's ListOffsets for a timestamp: the first offset whose record timestamp is >= it,
    or None when no record is that recent."""
    report = [] if report is None else report
    segments = list_segments(folder, report) if segments is None else segments
    for k, seg in enumerate(segments):
        m = _Mapped(seg.log)
        try:
            hit = _first_at_or_after_time(seg, m, timestamp, report, k == len(segments) - 1, errors)
        finally:
            m.close()
        if hit is not None:
            return hit
    return None


def _transactions(segments, report, use_txnindex):
    """Aborted ranges {producer_id: [(first, last), ...]} and the last stable offset (or None)."""
    aborted = {}
    if use_txnindex:
        for seg in segments:
            if os.path.exists(seg.txnindex):
                for e in sidefiles.read_txnindex(seg.txnindex):
                    aborted.setdefault(int(e["producer_id"]), []).append((int(e["first_offset"]), int(e["last_offset"])))
    open_txns = {}
    for seg in segments:
        m = _Mapped(seg.log)
        try:
            t = _scan.scan(m.buf, _scan.CRC_SKIP_, 0)
            n = t["count"]
            txn = t["is_transactional"][:n].view(bool)
            ctl = t["is_control"][:n].view(bool)
            for b in np.flatnonzero(txn).tolist():
                pid = int(t["producer_id"][b])
                if not ctl[b]:
                    open_txns.setdefault(pid, int(t["base_offset"][b]))
                    continue
                first = open_txns.pop(pid, None)
                if not use_txnindex and first is not None:
                    p, s = int(t["position"][b]), int(t["size"][b])
                    marker = decode(m.buf, start=p, stop=p + s, include_control=True, verify_crc=None).controls
                    if len(marker) and int(marker.type[0]) == 0:  # ABORT
                        aborted.setdefault(pid, []).append((first, int(t["last_offset"][b])))
        finally:
            m.close()
    lso = min(open_txns.values()) if open_txns else None
    return aborted, lso


def _committed_mask(recs, aborted, lso):
    keep = np.ones(len(recs), bool)
    if lso is not None:
        keep &= recs.offset < lso
    if aborted and len(recs):
        txn = recs.batch_column("is_transactional")
        pid = recs.batch_column("producer_id")
        for producer, ranges in aborted.items():
            mine = txn & (pid == producer)
            if not mine.any():
                continue
            for first, last in ranges:
                keep &= ~(mine & (recs.offset >= first) & (recs.offset <= last))
    return keep


def _plan(folder, start_offset, end_offset, start_timestamp, end_timestamp, report, errors="strict"):
    segments = list_segments(folder, report)
    if start_timestamp is not None:
        t = offset_for_timestamp(folder, start_timestamp, report, errors=errors, segments=segments)
        start_offset = max(start_offset or 0, t) if t is not None else float("inf")
    if end_timestamp is not None:
        t = offset_for_timestamp(folder, end_timestamp, report, errors=errors, segments=segments)
        if t is not None:
            end_offset = t if end_offset is None else min(end_offset, t)
    chosen = []
    for k, seg in enumerate(segments):
        nxt = segments[k + 1].base_offset if k + 1 < len(segments) else None
        if start_offset is not None and nxt is not None and nxt <= start_offset:
            continue  # every offset of this segment is below the start
        if end_offset is not None and seg.base_offset >= end_offset and k > 0:
            break
        chosen.append(seg)
    return segments, chosen, start_offset, end_offset


def _decode_options(columns, verify_crc, include_control, max_decompressed):
    want = None if columns is None else set(columns)
    return dict(
        keys=want is None or "key" in want, values=want is None or "value" in want,
        headers=want is None or "headers" in want, verify_crc=verify_crc, include_control=include_control,
        max_decompressed=max_decompressed)


def iter_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None, max_bytes=64 << 20, report=None):
    """Yield the records of one partition folder in chunks of about `max_bytes` of decoded data
    (whatever the segment sizes). Filters and options as `read_log_dir`; each chunk has topic and
    partition; `report` (a list) collects what was skipped or fell back."""
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"isolation must be read_uncommitted or read_committed, not {isolation!r}")
    topic, partition = _topic_partition(folder)
    report = [] if report is None else report
    segments, chosen, start_offset, end_offset = _plan(folder, start_offset, end_offset, start_timestamp,
                                                       end_timestamp, report, errors)
    if start_offset == float("inf"):
        return
    committed = isolation == "read_committed"
    if committed:
        use_txnindex = any(os.path.exists(s.txnindex) for s in segments)
        aborted, lso = _transactions(segments, report, use_txnindex)
        include_control = False
    opts = _decode_options(columns, verify_crc, include_control, max_decompressed)
    for seg in chosen:
        m = _Mapped(seg.log)
        is_last = seg is segments[-1]
        try:
            pos = _position_for_offset(seg, m, start_offset, report)
            stop = _end_position(seg, m, end_offset, report)
            # decoded bytes per stored byte are unknown until a batch is seen: the first chunk is one
            # batch, the following ones are sized from what the previous chunk showed. Headers
            # are scanned window by window, so pages beyond the chunk are not touched.
            ratio = float("inf")
            released = 0
            while pos < stop:
                budget = int(max_bytes / max(ratio, 1.0)) if ratio != float("inf") else 0
                window = _scan.scan(m.buf[:min(stop, pos + budget)], _scan.CRC_SKIP_, pos)
                k = window["count"]
                if k:
                    chunk_stop = int(window["position"][k - 1] + window["size"][k - 1])
                else:   # the next batch alone exceeds the budget (or a tail / corruption follows)
                    size = int.from_bytes(m.buf[pos + 8:pos + 12].tobytes(), "big", signed=True) \
                        if pos + 12 <= stop else -1
                    chunk_stop = pos + 12 + size if 0 < size and pos + 12 + size <= stop else stop
                if stop - chunk_stop < 12:
                    chunk_stop = stop
                recs = _decode_segment(seg, m, pos, chunk_stop, errors, report, is_last=is_last, limit=stop,
                                       **opts)
                decoded = recs.key.nbytes + recs.value.nbytes + 40 * len(recs)
                ratio = max(decoded / max(chunk_stop - pos, 1), 0.05)
                pos = recs.resume if recs.tail is None else stop
                released = m.release(released, pos)   # consumed pages leave this process's memory
                lo = 0 if start_offset is None else int(np.searchsorted(recs.offset, start_offset, side="left"))
                hi = len(recs) if end_offset is None else int(np.searchsorted(recs.offset, end_offset, side="left"))
                recs = recs[lo:hi]
                if committed:
                    recs = recs.filter(_committed_mask(recs, aborted, lso))
                recs.topic_names, recs.topic_index, recs.partition = [topic], None, partition
                recs.report = report
                # a chunk of record-less batches (the cleaner's empty batches) still carries them
                if len(recs) or (not committed and (len(recs.controls) or len(recs.batches))):
                    yield recs
        finally:
            m.close()


def read_log_dir(folder, *, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None,
                 isolation="read_uncommitted", columns=None, errors="strict", verify_crc=True,
                 include_control=False, max_decompressed=None) -> Records:
    """All records of one partition folder (``<topic>-<partition>``) as one `Records`.

    start_offset / end_offset: offsets in [start, end) (end exclusive, as Spark's endingOffsets).
    start_timestamp / end_timestamp (ms): from the first record with timestamp >= start up to
    (not including) the first record with timestamp >= end -- Kafka's offsets-for-times.
    isolation: "read_uncommitted" (Kafka's default) or "read_committed".
    columns: e.g. ["offset", "timestamp"]: key/value/headers not listed are not copied.
    errors: "strict" (the first corrupt batch raises) or "salvage" (skip and report it).
    The result's ``report`` lists what was skipped (leftover files, corrupt ranges, truncated
    tails) and where an index was not used.
    """
    report = []
    parts = list(iter_log_dir(folder, start_offset=start_offset, end_offset=end_offset,
                              start_timestamp=start_timestamp, end_timestamp=end_timestamp, isolation=isolation,
                              columns=columns, errors=errors, verify_crc=verify_crc, include_control=include_control,
                              max_decompressed=max_decompressed, max_bytes=1 << 62, report=report))
    topic, partition = _topic_partition(folder)
    if not parts:
        empty = decode(b"", topic=topic, partition=partition)
        empty.report = report
        return empty
    recs = Records.concat(parts) if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        recs.topic_names, recs.topic_index, recs.partition = [topic], None, partition
    recs.report = report
    return recs


def iter_log_dirs(root, topics=None, partitions=None, **kwargs):
    """Chunks of every partition under a log dir (filtered by topic names and partition numbers);
    options as `iter_log_dir`."""
    report = kwargs.pop("report", None)
    report = [] if report is None else report
    for topic, partition, folder in list_partitions(root, topics, partitions, report):
        yield from iter_log_dir(folder, report=report, **kwargs)


def read_log_dirs(root, topics=None, partitions=None, **kwargs) -> Records:
    """All records of every partition under a log dir (one folder of ``log.dirs``), with topic and
    partition columns; options as `read_log_dir`."""
    report = []
    parts = []
    for topic, partition, folder in list_partitions(root, topics, partitions, report):
        recs = read_log_dir(folder, **kwargs)
        report += recs.report
        parts.append(recs)
    if not parts:
        out = decode(b"")
    else:
        out = Records.concat(parts)
    out.report = report
    return out

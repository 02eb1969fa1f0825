"""Index and producer-state rebuilding: what ``LogSegment.recover`` computes for one segment.

Rules, all from Apache Kafka's sources (file and method named at each rule below; facts only):

* Offset index and time index: ``LogSegment.recover`` (storage/.../log/LogSegment.java) walks the
  valid batches; when more than ``index.interval.bytes`` were appended since the last entry it
  appends ``(batch.lastOffset, position)`` to the offset index and
  ``TimeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)``; the max timestamp so far
  is replaced only by a strictly greater one, with the batch's *last* offset; at the end
  ``maybeAppend(..., skipFullCheck=true)`` adds the final entry when the timestamp grew.
  `kafkafmt.log.sidefiles.build_index_entries` implements exactly this (``rolled=True``).
* KAFKA-16310: a leader before that fix (``LogValidator.assignOffsetsNonCompressed``) wrote, for
  uncompressed CreateTime batches, the offset of the *record* holding the max timestamp instead of
  the batch's last offset (``timeindex_offsets="record"`` reproduces it; recovery itself, followers
  and every version since use the last offset: ``"batch"``, the default).
* Producer state: ``LogSegment.updateProducerState`` feeds every v2 batch with a producer id to
  ``ProducerAppendInfo.append`` (ProducerAppendInfo.java): a data batch sets the producer's epoch,
  last sequence, last offset, offset delta and timestamp (``ProducerStateEntry.addBatch``) and opens
  a transaction when transactional and none is open; a control batch's end-transaction marker
  (``appendEndTxnMarker``) completes the open transaction (only if one is open), sets the epoch,
  the coordinator epoch and the timestamp and clears the batch metadata when the epoch changes
  (``ProducerStateEntry.update``).
* Transaction index: a completed *aborted* transaction adds ``(producer id, first offset, marker
  offset, last stable offset)`` (``LogSegment.updateTxnIndex``); the last stable offset is the first
  offset of the earliest transaction still open by *another* producer, else marker offset + 1
  (``ProducerStateManager.lastStableOffset``).
* Snapshot entries (``ProducerStateManager.writeSnapshot``): producer id, epoch, last sequence, last
  data offset (-1 without batches), last offset delta (0 without), last timestamp, coordinator epoch,
  first offset of the open transaction (-1 when none).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from kafkafmt._native.plain import plain_scan
from kafkafmt.log import INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX, sidefiles
from kafkafmt.record import DecodeOptions, decode, scan_batches
from kafkafmt.log import list_segments
from kafkafmt.log import window
from kafkafmt.log import LOG_SUFFIX, SNAPSHOT_SUFFIX, segment_base, segment_file_name
from kafkafmt.log import read_range
from kafkafmt.log import ReportEntry, ReportKind
from kafkafmt.log import DEFAULT_INDEX_INTERVAL, Segment
from kafkafmt.recovery.names import TEMP_SUFFIX
from kafkafmt.storage import LocalStorage

__all__ = ["SegmentScan", "scan_segment", "scan_of_batches", "segment_span", "ProducerState", "RebuiltIndexes", "rebuild_indexes",
           "leader_epochs",
           "index_entries", "TIMEINDEX_OFFSETS"]

_DISK = LocalStorage()      # recovery repairs local log dirs only

#: where a time index entry points: the batch's last offset (recovery; every leader since KAFKA-16310)
#: or the offset of the record carrying the max timestamp (leaders before KAFKA-16310, uncompressed
#: CreateTime batches)
TIMEINDEX_OFFSETS = ("batch", "record")

_INT32_MAX = 2**31 - 1
_NO_SEQUENCE = -1
_ABORT = 0
_COMMIT = 1
_HEADER_COLUMNS = ("position", "size", "base_offset", "last_offset", "last_offset_delta", "max_timestamp",
                   "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control", "magic",
                   "codec", "timestamp_type", "partition_leader_epoch")


@dataclass
class SegmentScan:
    """What one pass over a ``.log`` found.

    ``batches``: the intact batches (dict of NumPy columns, positions in the file as it is);
    ``damage``: `ReportEntry` (CORRUPT, TRUNCATED, ZEROS) for every byte range that is not an
    intact batch, in file order; ``controls``: {batch position: (type, coordinator epoch, timestamp)}
    of the control batches among them; ``size``: the file's size; ``first_offset``: the first offset
    of the first intact batch (of its first inner message for a v0/v1 compressed wrapper, whose
    header holds its last offset), None without one -- below ``base_offset`` (the file name's) when
    the segment is named against its content, whose batches are then kept all the same; ``sound``:
    {".index" / ".timeindex": the file's entries} of the index files a check against these batches found
    sound (`scan_of_batches`: ``kafkafmt verify``'s), not checked again."""
    path: str
    base_offset: int
    size: int
    batches: dict
    damage: list
    controls: dict
    first_offset: object = None
    sound: dict = field(default_factory=dict)

    def __repr__(self):     # a summary: the batch columns hold a row per batch
        last = self.batches["last_offset"]
        offsets = f"offsets {int(self.batches['base_offset'][0])}..{int(last[-1])}" if len(last) else "no offsets"
        return (f"<SegmentScan {os.path.basename(self.path)}: {len(last)} intact batches, {offsets}, "
                f"{self.size} bytes, {len(self.damage)} damaged ranges>")

    @property
    def clean(self):
        return not self.damage

    @property
    def next_offset(self):
        """Last offset + 1 of the last intact batch (``LogSegment.readNextOffset``), else the base."""
        last = self.batches["last_offset"]
        return int(last[-1]) + 1 if len(last) else self.base_offset

    def kept_ranges(self):
        """Byte ranges [start, end) of runs of adjacent intact batches."""
        pos, size = self.batches["position"], self.batches["size"]
        if not len(pos):
            return []
        ends = pos + size
        breaks = np.flatnonzero(pos[1:] != ends[:-1]) + 1
        starts = np.concatenate(([0], breaks))
        stops = np.concatenate((breaks, [len(pos)])) - 1
        return [(int(pos[a]), int(ends[b])) for a, b in zip(starts, stops)]


def _columns(table, rows=None):
    out = {}
    for c in _HEADER_COLUMNS:
        v = np.asarray(table[c])
        out[c] = v if rows is None else v[rows]
    return out


def _sequence_ok(t, base_offset):
    """Offsets as a log needs them: each batch's last >= base >= the previous batch's last + 1,
    not below the segment's base offset, relative offsets within int32 (OffsetIndex)."""
    base, last = np.asarray(t["base_offset"], np.int64), np.asarray(t["last_offset"], np.int64)
    if not len(base):
        return True
    return bool((last >= base).all() and (base[1:] > last[:-1]).all() and base[0] >= base_offset
                and last[-1] - base_offset <= _INT32_MAX)


def _first_offset(buf, table):
    """The first offset of the first batch of ``table`` (a batch table, positions in ``buf``): its
    base offset, or -- a v0/v1 compressed wrapper, whose header holds its last offset -- its first
    inner message's. None without a batch."""
    if not len(table["base_offset"]):
        return None
    if int(table["magic"][0]) >= 2:
        return int(table["base_offset"][0])
    b = _decode_one(buf, int(table["position"][0]), int(table["size"][0])).batches
    return int(b["base_offset"][0]) if len(b) else int(table["base_offset"][0])


def scan_segment(path, base_offset=None, *, max_batch_bytes=256 << 20) -> SegmentScan:
    """Scan a ``.log`` file: its intact batches and every damaged byte range.

    The fast path is one C framing scan with every CRC checked (what ``LogSegment.recover``'s
    ``batch.ensureValid()`` checks); only a segment where that finds anything wrong is read again
    with `kafkafmt.log._ranges.read_range` in salvage mode (records decoded, each corrupt stretch
    skipped and named, resynchronizing on the next batch whose CRC verifies), the same reading
    ``kafkafmt verify`` does.
    """
    path = os.fspath(path)
    if base_offset is None:
        base_offset = segment_base(path)
        base_offset = 0 if base_offset is None else base_offset
    seg = Segment.of_file(path, _DISK)
    with _DISK.open(path) as f:
        size = f.size
        buf, origin = window(f, 0, size)
        t, info = scan_batches(buf, verify_crc=True, max_batch_bytes=max_batch_bytes)
        crc_ok = bool(np.all(t["crc_valid"]))
        # a segment named above its first batch's base offset (renamed by hand): its batches are
        # read from that offset on, not dropped as below the name (the plan renames the segment)
        intact_first = len(t) and bool(t["crc_valid"][0])
        start = _first_offset(buf, t) if intact_first else None
        floor = base_offset if start is None else min(base_offset, start)
        seg.base_offset = floor
        if info["error"] is None and crc_ok and _sequence_ok(t, floor) and segment_base(path) is not None:
            batches = _columns(t)
            damage = []
            if info["tail"] is not None:
                valid = int(info["valid_bytes"])
                kind = ReportKind.TRUNCATED if info["tail"] == "truncated" else ReportKind.ZEROS
                msg = "truncated final batch" if kind is ReportKind.TRUNCATED else "zero-filled tail"
                damage.append(ReportEntry(kind, path, msg, valid, size))
        else:
            report = []
            options = DecodeOptions(keys=False, values=False, headers=False, verify_crc=True, threads=1,
                                    max_batch_bytes=max_batch_bytes)
            recs, _ = read_range(seg, f, 0, size, report, errors="salvage", options=options, limit=size)
            b = recs.batches
            batches = _columns(b) if len(b) else {c: np.zeros(0, np.asarray(t[c]).dtype) for c in _HEADER_COLUMNS}
            damage = [e for e in report if e.kind in (ReportKind.CORRUPT, ReportKind.TRUNCATED, ReportKind.ZEROS)]
            damage = _fill_gaps(path, batches, damage, size)
        controls = _control_markers(buf, batches)
        first_offset = _first_offset(buf, batches)
        if np.any(batches["magic"] < 2) and len(batches["magic"]):
            batches["max_timestamp"] = _legacy_max_timestamps(buf, batches)
    return SegmentScan(path, int(base_offset), int(size), batches, damage, controls, first_offset)


def scan_of_batches(path, base_offset, size, batches, markers, sound=None, *, max_batch_bytes=256 << 20):
    """The `SegmentScan` `scan_segment` gives of a ``.log`` whose batches a read with every CRC checked gave
    already (``kafkafmt verify``'s): without reading the file again.

    Parameters
    ----------
    path : str
        The ``.log``.
    base_offset : int
        Its base offset (its name's).
    size : int
        Its size in bytes.
    batches : mapping
        Its batch table as the readers give it (every batch of the file, in file order).
    markers : dict
        ``{position: (type, coordinator epoch, timestamp)}`` of the first record of each control batch.
    sound : dict, optional
        ``{".index" / ".timeindex": entries}`` (as `kafkafmt.log.sidefiles.read_index` / ``read_timeindex``
        give them) of the segment's index files where a check of them against these batches (``kafkafmt
        verify``'s: Kafka's sanity checks, every entry against the batch it names) found nothing wrong.
    max_batch_bytes : int
        As `scan_segment`'s.

    Returns
    -------
    SegmentScan or None
        None when the batches do not tell it alone -- bytes outside the batches, a CRC that fails, a v0/v1
        batch (its wrappers are read again), offsets out of sequence: `scan_segment` then reads the file.
    """
    if segment_base(path) is None:
        return None
    if not len(batches["position"]):
        return SegmentScan(path, int(base_offset), 0, _columns(_NO_BATCHES), [], {}, None, dict(sound or {})) \
            if size == 0 else None
    cols = _columns(batches)
    first = int(cols["base_offset"][0])
    crc_valid = np.asarray(batches["crc_valid"], bool)
    try:
        plain = plain_scan(cols["position"], cols["size"], crc_valid.view(np.uint8), cols["magic"], cols["base_offset"],
                           cols["last_offset"], size, max_batch_bytes, min(base_offset, first))
    except ValueError:              # (columns of other types than the readers')
        plain = _plain_scan_numpy(cols, crc_valid, size, max_batch_bytes, min(base_offset, first))
    if not plain:
        return None
    return SegmentScan(path, int(base_offset), int(size), cols, [], dict(markers), first, dict(sound or {}))


def _plain_scan_numpy(cols, crc_valid, size, max_batch_bytes, floor):
    """`plain_scan` with NumPy (its twin: columns of any integer type)."""
    pos, sizes = cols["position"].astype(np.int64, copy=False), cols["size"].astype(np.int64, copy=False)
    ends = pos + sizes
    return bool(len(pos) and pos[0] == 0 and int(ends[-1]) == size and (pos[1:] == ends[:-1]).all()
                and int(sizes.max()) <= max_batch_bytes and crc_valid.all() and (cols["magic"] == 2).all()
                and _sequence_ok(cols, floor))


def segment_span(path):
    """(first offset, next offset) of a ``.log``'s batches by their framing alone -- no CRC checked, nothing
    decoded but a v0/v1 compressed first wrapper -- to find segments that overlap without holding every
    segment's scan at once; None without a batch."""
    with _DISK.open(os.fspath(path)) as f:
        buf, _ = window(f, 0, f.size)
        t, _ = scan_batches(buf, verify_crc=None)
        if not len(t):
            return None
        return _first_offset(buf, t), int(np.max(t["last_offset"])) + 1


_NO_BATCHES = scan_batches(np.zeros(0, np.uint8), verify_crc=True)[0]


def _fill_gaps(path, batches, damage, size):
    """Every byte outside an intact batch belongs to some damage entry (salvage reports them all;
    this keeps that true by construction)."""
    covered = sorted([(int(e.start), int(e.end)) for e in damage if e.start is not None and e.end is not None] +
                     [(int(p), int(p) + int(s)) for p, s in zip(batches["position"], batches["size"])])
    out = list(damage)
    at = 0
    for s, e in covered:
        if s > at:
            out.append(ReportEntry(ReportKind.CORRUPT, path, "bytes outside any intact batch", at, s))
        at = max(at, e)
    if at < size:
        out.append(ReportEntry(ReportKind.CORRUPT, path, "bytes outside any intact batch", at, size))
    return sorted(out, key=lambda e: (e.start, e.end))


def _decode_one(buf, pos, size, **kw):
    return decode(buf, start=pos, stop=pos + size, verify_crc=None, keys=False, values=False, headers=False,
                  threads=1, **kw)


def _control_markers(buf, batches):
    """{position: (type, coordinator epoch, timestamp)} of each control batch's first record (the
    end-transaction marker ``ProducerAppendInfo.append`` reads); empty control batches (all records
    cleaned) are left out, as Kafka ignores them."""
    out = {}
    for i in np.flatnonzero(batches["is_control"]).tolist():
        p, s = int(batches["position"][i]), int(batches["size"][i])
        c = _decode_one(buf, p, s, include_control=True).controls
        if len(c):
            out[p] = (int(c["type"][0]), int(c["coordinator_epoch"][0]), int(c["timestamp"][0]))
    return out


def _legacy_max_timestamps(buf, batches):
    """Max timestamps with v0/v1 wrappers decoded (a wrapper's header holds its own timestamp)."""
    ts = batches["max_timestamp"].copy()
    for i in np.flatnonzero(batches["magic"] < 2).tolist():
        b = _decode_one(buf, int(batches["position"][i]), int(batches["size"][i])).batches
        if len(b):
            ts[i] = int(np.max(b["max_timestamp"]))
    return ts


# ----------------------------------------------------------------------------------------------
# producer state

def _last_sequence(base_seq, delta):
    """``DefaultRecordBatch.lastSequence``/``incrementSequence``: wraps past Integer.MAX_VALUE."""
    if base_seq == _NO_SEQUENCE:
        return _NO_SEQUENCE
    if base_seq > _INT32_MAX - delta:
        return base_seq - (_INT32_MAX - delta) - 1
    return base_seq + delta


#: the batch columns a producer state is replayed from
_REPLAYED = ("producer_id", "producer_epoch", "base_sequence", "last_offset_delta", "base_offset", "last_offset",
             "max_timestamp", "is_transactional", "is_control", "position")


class ProducerState:
    """The producer state a broker keeps for a partition (``ProducerStateManager``), replayed from
    batch headers and end-transaction markers; seeded from a snapshot's entries when given."""

    def __init__(self, entries=None):
        # producer id -> [epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch, txn_first]
        self._producers = {}
        self._open_txns = {}         # producer id -> first offset of its open transaction
        self._later = []             # batches without a marker, replayed when the state is first looked at
        if entries is not None:
            for e in entries:
                pid = int(e["producer_id"])
                txn = int(e["current_txn_first_offset"])
                self._producers[pid] = [int(e["epoch"]), int(e["last_sequence"]), int(e["last_offset"]),
                                        int(e["offset_delta"]), int(e["timestamp"]), int(e["coordinator_epoch"]),
                                        txn]
                if txn >= 0:
                    self._open_txns[pid] = txn

    @property
    def producers(self):
        """``{producer id: [epoch, last sequence, last offset, offset delta, timestamp, coordinator epoch,
        first offset of its open transaction]}``."""
        self._catch_up()
        return self._producers

    @property
    def open_txns(self):
        """``{producer id: first offset of its open transaction}``."""
        self._catch_up()
        return self._open_txns

    def producer_count(self):
        """How many producers the state holds (`producers`), without replaying batches to count them."""
        if not self._later:
            return len(self._producers)
        pids = np.concatenate([b["producer_id"] for b in self._later])
        return len(self._producers.keys() | set(np.unique(pids).tolist()))

    def copy(self):
        other = ProducerState()
        other._producers = {k: list(v) for k, v in self.producers.items()}
        other._open_txns = dict(self.open_txns)
        return other

    def replay(self, batches, controls):
        """Apply a segment's batches (columns as `SegmentScan.batches`) in order; returns the
        aborted transactions completed on the way as (producer id, first, last, last stable offset).

        Batches without an end-transaction marker complete none: they are applied when the state is next
        looked at (`producers`, `open_txns`, a segment with markers), so that a plan that only counts
        (`kafkafmt.recovery.pending_fixes`) walks no batch of a log without transactions."""
        pid = batches["producer_id"]
        if not len(pid) or pid.max() < 0:
            return []                       # (the usual segment of producers without ids: nothing to replay)
        rows = np.flatnonzero((pid >= 0) & (batches["magic"] >= 2))
        if not len(rows):
            return []
        cols = {c: batches[c][rows] for c in _REPLAYED}
        if not cols["is_control"].any():
            self._later.append(cols)
            return []
        self._catch_up()
        return self._apply(cols, controls)

    def _catch_up(self):
        later, self._later = self._later, []
        for cols in later:
            self._apply(cols)

    def _apply(self, cols, controls=None):
        aborted = []
        cols = {c: v.tolist() for c, v in cols.items()}
        for k in range(len(cols["producer_id"])):
            pid, epoch = cols["producer_id"][k], cols["producer_epoch"][k]
            entry = self._producers.get(pid)
            if entry is None:
                entry = self._producers[pid] = [-1, _NO_SEQUENCE, -1, 0, -1, -1, -1]
            if cols["is_control"][k]:
                marker = controls.get(cols["position"][k])
                if marker is None:
                    continue                  # an empty control batch: ignored (ProducerAppendInfo.append)
                mtype, coord_epoch, ts = marker
                if mtype not in (_ABORT, _COMMIT):
                    continue
                first = self._open_txns.pop(pid, None)
                offset = cols["base_offset"][k]
                if first is not None and mtype == _ABORT:
                    others = [f for p, f in self._open_txns.items() if p != pid]
                    lso = min(others) if others else offset + 1
                    aborted.append((pid, first, offset, lso))
                if entry[0] != epoch:         # ProducerStateEntry.maybeUpdateProducerEpoch clears batches
                    entry[1], entry[2], entry[3] = _NO_SEQUENCE, -1, 0
                entry[0], entry[5], entry[4], entry[6] = epoch, coord_epoch, ts, -1
            else:
                base, last = cols["base_offset"][k], cols["last_offset"][k]
                entry[0] = epoch
                entry[1] = _last_sequence(cols["base_sequence"][k], cols["last_offset_delta"][k])
                entry[2] = last
                entry[3] = last - base
                entry[4] = cols["max_timestamp"][k]
                if cols["is_transactional"][k] and pid not in self._open_txns:
                    self._open_txns[pid] = base
                    entry[6] = base
        return aborted

    def snapshot_entries(self):
        """Entries for ``encode_producer_snapshot`` (sorted by producer id)."""
        out = np.empty(len(self.producers), sidefiles.PRODUCER_ENTRY_DTYPE)
        for i, pid in enumerate(sorted(self.producers)):
            e = self.producers[pid]
            out[i] = (pid, e[0], e[1], e[2], e[3], e[4], e[5], e[6])
        return out


# ----------------------------------------------------------------------------------------------
# leader epochs

def leader_epochs(batches):
    """The leader-epoch history ``LogSegment.recover`` assigns from a log's batches (columns as
    `SegmentScan.batches`, in log order): each v2 batch whose ``partitionLeaderEpoch`` is set and
    above the latest epoch so far starts that epoch at its base offset
    (``LeaderEpochFileCache.assign``). Returns the entries as ``EPOCH_ENTRY_DTYPE``."""
    magic = np.asarray(batches["magic"])
    rows = np.flatnonzero((magic >= 2) & (np.asarray(batches["partition_leader_epoch"]) >= 0))
    epoch = np.asarray(batches["partition_leader_epoch"], np.int64)[rows]
    start = np.asarray(batches["base_offset"], np.int64)[rows]
    above = epoch > np.concatenate(([-1], np.maximum.accumulate(epoch)[:-1])) if len(epoch) else np.zeros(0, bool)
    out = np.empty(int(above.sum()), sidefiles.EPOCH_ENTRY_DTYPE)
    out["epoch"], out["start_offset"] = epoch[above], start[above]
    return out


# ----------------------------------------------------------------------------------------------
# indexes

def index_entries(batches, positions=None, *, index_interval_bytes=DEFAULT_INDEX_INTERVAL,
                  timeindex_offsets="batch", record_offsets=None):
    """(offset index, time index) entries ``LogSegment.recover`` writes for ``batches`` laid out
    contiguously from position 0 (or at ``positions``)."""
    if timeindex_offsets not in TIMEINDEX_OFFSETS:
        raise ValueError(f"timeindex_offsets must be one of {TIMEINDEX_OFFSETS}, not {timeindex_offsets!r}")
    size = np.asarray(batches["size"], np.int64)
    if positions is None:
        positions = np.concatenate(([0], np.cumsum(size)[:-1])) if len(size) else np.zeros(0, np.int64)
    table = {"size": size, "last_offset": batches["last_offset"], "max_timestamp": batches["max_timestamp"],
             "position": positions}
    return sidefiles.build_index_entries(table, index_interval_bytes, rolled=True,
                                         time_offsets=record_offsets if timeindex_offsets == "record" else None)


def record_time_offsets(path, batches):
    """Per batch, the offset a leader before KAFKA-16310 put in the time index: the first record
    with the batch's max timestamp for uncompressed CreateTime batches, else the last offset."""
    out = np.asarray(batches["last_offset"], np.int64).copy()
    pick = np.flatnonzero((batches["codec"] == 0) & (batches["timestamp_type"] == 0) & (batches["magic"] >= 1)
                          & ~np.asarray(batches["is_control"], bool))     # a marker's one record is its last
    if not len(pick):
        return out
    with _DISK.open(path) as f:
        buf, _ = window(f, 0, f.size)
        for i in pick.tolist():
            r = _decode_one(buf, int(batches["position"][i]), int(batches["size"][i]), include_control=True)
            out[i] = int(sidefiles.record_offsets_of_max_timestamp(r)[0]) if len(r.batches) else out[i]
    return out


@dataclass
class RebuiltIndexes:
    """The side files of one segment as recovery rebuilds them from its ``.log`` alone.

    ``index``/``timeindex``/``txnindex``: entries (``INDEX_DTYPE``, ``TIMEINDEX_DTYPE``, aborted
    transactions as (producer id, first, last, last stable offset)); ``valid_bytes``: where the last
    intact batch ends (``LogSegment.recover`` truncates there); ``scan``: the `SegmentScan`;
    ``producer_state``: the `ProducerState` after the segment."""
    base_offset: int
    index: np.ndarray
    timeindex: np.ndarray
    txnindex: list
    valid_bytes: int
    scan: SegmentScan
    producer_state: ProducerState

    def __repr__(self):     # a summary: the entries are arrays
        return (f"<RebuiltIndexes {os.path.basename(self.scan.path)}: {len(self.index)} index entries, "
                f"{len(self.timeindex)} time index entries, {len(self.txnindex)} aborted transactions, "
                f"intact up to byte {self.valid_bytes} of {self.scan.size}>")

    def encoded(self):
        """{suffix: bytes} of the three files (``.txnindex`` empty when nothing was aborted)."""
        return {INDEX_SUFFIX: sidefiles.encode_index(self.index, self.base_offset),
                TIMEINDEX_SUFFIX: sidefiles.encode_timeindex(self.timeindex, self.base_offset),
                TXNINDEX_SUFFIX: sidefiles.encode_txnindex(self.txnindex)}


def rebuild_indexes(segment, *, index_interval_bytes=DEFAULT_INDEX_INTERVAL, timeindex_offsets="batch",
                    producer_state=None, write=False) -> RebuiltIndexes:
    """Rebuild a segment's ``.index``, ``.timeindex`` and ``.txnindex`` from its ``.log`` alone.

    Parameters
    ----------
    segment : str or os.PathLike
        The ``<base offset>.log`` file.
    index_interval_bytes : int
        The topic's ``index.interval.bytes`` (Kafka's default 4096).
    timeindex_offsets : {"batch", "record"}
        Which offset a time index entry holds: the batch's last offset (recovery, every broker
        since KAFKA-16310) or the offset of the record with the max timestamp (leaders before it,
        for uncompressed CreateTime batches).
    producer_state : ProducerState, optional
        The partition's producer state at the segment's base offset (transactions opened in earlier
        segments). By default it is replayed from the earlier segments of the same folder.
    write : bool
        Also write the three files beside the ``.log`` (each through a temporary file renamed into
        place; the ``.txnindex`` only when there is an entry or one exists). Use
        ``kafkafmt.recover(..., apply=True)`` for repairs with backups.

    Returns
    -------
    RebuiltIndexes
        Entries computed as if the log had been truncated after its last intact batch before
        damage (``LogSegment.recover``); damaged stretches in the middle are skipped, as
        ``recover --keep-intact-batches`` lays the file out after removing them.

    Examples
    --------
    The indexes of a sample segment holding an aborted transaction, as its broker wrote them:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> seg = f"{sample_dir()}/payments-0/00000000000000000045"
    >>> rebuilt = kafkafmt.rebuild_indexes(seg + ".log")
    >>> rebuilt.txnindex
    [(1002, 35, 70, 20)]
    >>> kafkafmt.read_txnindex(seg + ".txnindex")
    array([(0, 1002, 35, 70, 20)], dtype=...)
    >>> rebuilt.timeindex.tolist() == kafkafmt.read_timeindex(seg + ".timeindex").tolist()
    True
    """
    path = os.fspath(segment)
    scan = scan_segment(path)
    if producer_state is None:
        producer_state = _state_before(path, scan.base_offset)
    state = producer_state.copy()
    aborted = state.replay(scan.batches, scan.controls)
    rec = record_time_offsets(path, scan.batches) if timeindex_offsets == "record" else None
    index, timeindex = index_entries(scan.batches, index_interval_bytes=index_interval_bytes,
                                     timeindex_offsets=timeindex_offsets, record_offsets=rec)
    kept = scan.kept_ranges()
    valid = kept[0][1] if kept and kept[0][0] == 0 else 0
    out = RebuiltIndexes(scan.base_offset, index, timeindex, aborted, valid, scan, state)
    if write:
        stem = path[:-len(LOG_SUFFIX)]
        for suffix, data in out.encoded().items():
            if suffix == TXNINDEX_SUFFIX and not aborted and not os.path.exists(stem + suffix):
                continue
            tmp = stem + suffix + TEMP_SUFFIX
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, stem + suffix)
    return out


def _state_before(path, base_offset):
    """Producer state at a segment's base offset: replayed over the earlier segments of its folder
    (seeded from a valid snapshot at the first one's base offset, as ``rebuildProducerState``)."""
    folder = os.path.dirname(os.path.abspath(path))
    earlier = [s for s in list_segments(folder) if s.base_offset < base_offset]
    state = ProducerState(_snapshot_at(folder, earlier[0].base_offset if earlier else base_offset))
    for s in earlier:
        sc = scan_segment(s.log)
        state.replay(sc.batches, sc.controls)
    return state


def _snapshot_at(folder, offset):
    p = os.path.join(folder, segment_file_name(offset, SNAPSHOT_SUFFIX))
    if not os.path.isfile(p):
        return None
    try:
        return sidefiles.read_producer_snapshot(p)["entries"]
    except Exception:                     # noqa: BLE001 - a corrupt snapshot is not a seed
        return None

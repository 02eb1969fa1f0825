"""One segment of a partition and its indexes, read the way Kafka reads them.

`Segment`: a ``.log`` with its side files (``.index``, ``.timeindex``, ``.txnindex``), local, in an
object store or a tiered-storage upload. Index lookups as Kafka does them (``OffsetIndex.lookup``,
``TimeIndex.lookup``), every entry used checked against the batch it names; a missing or insane index
falls back to a scan, with one `KafkafmtWarning` and a report entry. `offset_for_timestamp` is Kafka's
ListOffsets for a timestamp.
"""
from __future__ import annotations

import warnings

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.record import DecodeOptions
from kafkafmt.errors import KafkafmtError, KafkafmtWarning
from kafkafmt.log._framing import batch_at, entry_size_at, scan_range
from kafkafmt.log._names import (INDEX_SUFFIX, LOG_SUFFIX, SIDE_FILE_SUFFIXES, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX,
                                 segment_base, segment_file_name)
from kafkafmt.log._ranges import read_range
from kafkafmt.log._notes import ReportEntry, ReportKind

__all__ = ["Segment", "DEFAULT_INDEX_INTERVAL", "warn_fallbacks"]

DEFAULT_INDEX_INTERVAL = 4096   # Kafka's index.interval.bytes


def _fallback(report, file, why):
    """An index not used: reported (the read that met it warns once for all: `warn_fallbacks`)."""
    report.append(ReportEntry(ReportKind.INDEX_FALLBACK, file, why + "; scanned instead"))


def warn_fallbacks(report, since=0, where=None):
    """One `KafkafmtWarning` for the index fallbacks a read reported (entries of ``report`` from
    ``since`` on), however many segments and lookups met them."""
    if len(report) <= since:
        return
    mine = [e for e in report[since:] if e.kind is ReportKind.INDEX_FALLBACK]
    if not mine:
        return
    first = mine[0]
    more = f" (and {len(mine) - 1} more index file{'s' if len(mine) > 2 else ''})" if len(mine) > 1 else ""
    warnings.warn(f"{where + ': ' if where else ''}{first.file}: {first.message}{more}", KafkafmtWarning,
                  stacklevel=3)


class Segment:
    """One segment of a partition: its files, base offset and size; index lookups.

    ``storage`` is where it lives (a `kafkafmt.storage` Storage: `LocalStorage` for the disk);
    ``present`` the side-file kinds its listing showed (None: ask the storage); ``remote`` a
    `kafkafmt.log.tiered.RemoteSegment` when it is a tiered-storage upload (its layout names and reads
    its files); ``version`` the log object's version as listed (reads stay on it)."""

    __slots__ = ("folder", "base_offset", "log", "_side", "size", "storage", "present", "remote", "tiered_keys",
                 "version", "_entries")

    def __init__(self, folder, base_offset, size=None, *, storage, present=None, remote=None, tiered_keys=None,
                 version=None, stem=None):
        self.folder = folder
        self.base_offset = base_offset
        self.storage = storage
        self.present = present
        self.remote = remote
        self.tiered_keys = tiered_keys      # private keys for encrypted tiered uploads ({key id: PEM})
        self.version = version
        self._side = None         # its side files' paths when not named after its .log (else made when asked)
        if remote is not None:
            self.log = remote.log
            self._side = (remote.index, remote.timeindex, remote.txnindex)
            self.size = remote.original_size if size is None else size
            self.version = remote.versions.get("log")
        else:
            if stem is None:      # (a listing gives it: its .log file's path without the suffix)
                stem = storage.join(folder, segment_file_name(base_offset, ""))
            self.log = stem + LOG_SUFFIX
            self.size = storage.size(self.log) if size is None else size
        self._entries = None      # index entries read (once per read, so a fallback is reported once)

    def _side_path(self, k, suffix):
        return self.log[:-len(LOG_SUFFIX)] + suffix if self._side is None else self._side[k]

    index = property(lambda self: self._side_path(0, INDEX_SUFFIX),
                     doc="The offset index's path (beside the .log, unless named otherwise).")
    timeindex = property(lambda self: self._side_path(1, TIMEINDEX_SUFFIX), doc="The time index's path.")
    txnindex = property(lambda self: self._side_path(2, TXNINDEX_SUFFIX), doc="The transaction index's path.")

    @property
    def _cache(self):
        if self._entries is None:
            self._entries = {}
        return self._entries

    @classmethod
    def of_file(cls, log, storage):
        """The segment a ``<base>.log`` path names (base 0 for other names)."""
        base = segment_base(storage.name(log))
        seg = cls(storage.parent(log) or ".", 0 if base is None else base, storage.size(log), storage=storage,
                  present=None if base is not None else set())
        if base is not None:    # its side files beside the .log as its folder and base offset name them
            stem = seg.log[:-len(LOG_SUFFIX)]
        else:                   # not a segment's name: beside ``log`` itself (there are none)
            stem = log[:-len(LOG_SUFFIX)] if log.endswith(LOG_SUFFIX) else log
        seg._side = tuple(stem + suffix for suffix in SIDE_FILE_SUFFIXES)
        seg.log = log
        return seg

    @classmethod
    def of_remote(cls, remote, storage, tiered_keys=None):
        """A tiered-storage upload (`kafkafmt.log.tiered.RemoteSegment`) as a segment."""
        return cls(remote.files.get("log"), remote.base_offset, storage=storage, remote=remote, tiered_keys=tiered_keys)

    def __repr__(self):
        return f"<Segment {self.url} {self.size} bytes>"

    @property
    def url(self):
        """The log file's path or URL (for messages)."""
        return self.storage.url(self.log)

    def open(self):
        if self.remote is not None:
            return self.remote.layout.open_log(self.storage, self.remote, tiered_keys=self.tiered_keys)
        return self.storage.open(self.log, size=self.size, version=self.version)

    def has(self, kind):
        """Does the segment have this side file ("index", "timeindex", "txnindex")?"""
        if self.remote is not None:
            return self.remote.layout.has_side_file(self.storage, self.remote, kind)
        if self.present is not None:
            return kind in self.present
        return self.storage.exists(getattr(self, kind))

    def side_bytes(self, kind):
        """The bytes of a side file ("index", "timeindex", "txnindex"), or None without one."""
        if not self.has(kind):
            return None
        if self.remote is not None:
            return self.remote.layout.side_file(self.storage, self.remote, kind, tiered_keys=self.tiered_keys)
        return self.storage.read_bytes(getattr(self, kind))

    def side_url(self, kind):
        return self.storage.url(getattr(self, kind) or f"{self.log} ({kind})")

    def index_entries(self, kind, report):
        """Offset ("index") or time ("timeindex") index entries, or None (missing / failing
        Kafka's sanity checks: reported once per Segment object)."""
        if kind not in self._cache:
            self._cache[kind] = self._read_index(kind, report)
        return self._cache[kind]

    def _read_index(self, kind, report):
        path = self.side_url(kind)
        data = self.side_bytes(kind)
        if data is None:
            # Kafka creates an index file lazily, with the first entry: a segment of at most
            # index.interval.bytes has none, and a scan is what the broker does too
            if self.size > DEFAULT_INDEX_INTERVAL:
                _fallback(report, path, f"no .{kind} file")
            return None
        try:
            if kind == "index":
                e = sidefiles.read_index(data, self.base_offset)
                ok = (len(e) == 0 or (np.all(np.diff(e["offset"]) > 0) and np.all(np.diff(e["position"]) > 0)
                                      and e["offset"][0] >= self.base_offset and e["position"][-1] < self.size))
            else:
                e = sidefiles.read_timeindex(data, self.base_offset)
                ok = (len(e) == 0 or (np.all(np.diff(e["timestamp"]) >= 0) and np.all(np.diff(e["offset"]) >= 0)
                                      and e["offset"][0] >= self.base_offset))
        except KafkafmtError as exc:
            _fallback(report, path, f"unreadable .{kind} ({exc.reason})")
            return None
        if not ok:
            _fallback(report, path, f".{kind} fails Kafka's sanity checks")
            return None
        if not len(e) and self.size > 2 * DEFAULT_INDEX_INTERVAL:
            # empty or zeros only (lost, or preallocated and never written) for a segment that
            # should hold entries at the default index.interval.bytes
            _fallback(report, path, f".{kind} holds no entries although the segment has {self.size} bytes")
            return None
        return e

    def _verified_position(self, f, entries, i, report):
        """Position of index entry i, after checking that a batch ending with that offset starts
        there (a wrong but sane-looking index must not silently drop records)."""
        pos, off = int(entries["position"][i]), int(entries["offset"][i])
        head = batch_at(f, pos) if pos < f.size else None
        if head is None or head[0] != off:
            self._cache["index"] = None
            _fallback(report, self.side_url("index"),
                      f"entry ({off}, {pos}) does not point at a batch ending with offset {off}")
            return None
        return pos

    def position_for_offset(self, f, offset, report):
        """Byte position to start decoding from for records >= offset (OffsetIndex.lookup)."""
        if offset is None or offset <= self.base_offset:
            return 0
        entries = self.index_entries("index", report)
        if entries is None or not len(entries):
            return 0
        i = int(np.searchsorted(entries["offset"], offset, side="right")) - 1
        if i < 0:
            return 0
        pos = self._verified_position(f, entries, i, report)
        return 0 if pos is None else pos

    def end_position(self, f, end_offset, report):
        """A byte position past every batch that can hold an offset < end_offset."""
        if end_offset is None:
            return f.size
        entries = self.index_entries("index", report)
        if entries is None or not len(entries):
            return f.size
        i = int(np.searchsorted(entries["offset"], end_offset, side="left"))
        if i >= len(entries):
            return f.size
        # the batch at that entry ends with offset >= end_offset; batches after it start beyond
        p = self._verified_position(f, entries, i, report)
        if p is None:
            return f.size
        return min(f.size, p + 12 + max(entry_size_at(f, p), 0))

    def max_timestamp(self, report):
        """Largest record timestamp by the time index's last entry (rolled segments), else None."""
        if not self.has("timeindex"):
            return None
        entries = self.index_entries("timeindex", report)
        if entries is None or not len(entries):
            return None
        return int(entries["timestamp"][-1])

    def split_points(self, start_pos, stop_pos, pieces, report):
        """Up to `pieces` byte ranges of [start_pos, stop_pos), cut at offset-index positions."""
        if pieces <= 1 or not self.has("index"):
            return [(start_pos, stop_pos)]
        entries = self.index_entries("index", report)
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

    def first_offset_at_or_after(self, f, ts, report, is_last, errors="strict"):
        """Offset of the first record with timestamp >= ts in this segment, or None."""
        entries = self.index_entries("timeindex", report)
        if entries is not None and len(entries) and not is_last and int(entries["timestamp"][-1]) < ts:
            # a rolled segment's last time-index entry holds its largest timestamp: skip the
            # segment, once the batch that entry names confirms that timestamp
            last_ts, last_off = int(entries["timestamp"][-1]), int(entries["offset"][-1])
            # from the offset index's entry at or below it (near the segment's end) to the end
            t, _ = scan_range(f, self.position_for_offset(f, last_off, report), f.size)
            hit = np.flatnonzero((t["base_offset"] <= last_off) & (t["last_offset"] >= last_off))
            if len(hit) and int(t["max_timestamp"][hit[0]]) == last_ts:
                return None
            self._cache["timeindex"] = entries = None
            _fallback(report, self.side_url("timeindex"), f"last entry ({last_ts}, {last_off}) does not match the log")
        pos = 0
        if entries is not None and len(entries):
            i = int(np.searchsorted(entries["timestamp"], ts, side="right")) - 1
            if i >= 0:
                pos = self.position_for_offset(f, int(entries["offset"][i]), report)
        opts = DecodeOptions(keys=False, values=False, headers=False, verify_crc=None)
        # forward from there, a window at a time (damage met on the way is reported by the read itself)
        step = _TIME_SEEK_WINDOW
        while pos < f.size:
            t, _ = scan_range(f, pos, min(f.size, pos + step))
            stop = int(t["position"][-1] + t["size"][-1]) if len(t) else f.size
            recs, resume = read_range(self, f, pos, stop, [] if errors == "salvage" else None, options=opts,
                                      errors=errors, limit=f.size)
            hit = np.flatnonzero(recs.timestamp >= ts)
            if len(hit):
                return int(recs.offset[hit[0]])
            pos = max(resume, stop) if recs.tail is None else f.size
            step *= 2
        return None


_TIME_SEEK_WINDOW = 1 << 20     # bytes of batches read per step while seeking by time

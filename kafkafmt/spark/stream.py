"""Structured Streaming over live log dirs: ``spark.readStream.format("kafka-segments")``.

A ``DataSourceStreamReader`` whose offsets are Spark's Kafka-source offsets,
``{"topic": {"partition": nextOffset}}`` (topics sorted, partitions in numeric order, so equal
positions always serialize to the same string -- Spark compares offsets as JSON strings), so a
checkpoint reads the way a Kafka query's does.

Driver side (``initialOffset`` / ``latestOffset`` / ``partitions``): a `LogDirWatcher` keeps, per
partition folder, its segment list and where the header scan of the newest segment stopped. A
trigger costs two ``stat`` calls per partition when nothing changed (the folder, for new or deleted
segments, and the newest ``.log``, for appends); only bytes appended since the last trigger are
scanned (batch headers, no decoding). A batch cut off mid-write ends the scan before it: its
offsets become visible once the broker has finished writing it. A folder whose mtime is younger
than ``MTIME_SETTLE_S`` is listed again on every trigger (file-system timestamps are coarse).

Object storage (``s3://bucket/kafka-logs`` etc. with ``storage.<key>`` options, through
kafkafmt.storage): no change markers exist there, so each trigger lists the root once and each
partition folder once -- the only polling cost -- and reads bytes only of a segment object that
appeared or grew (from its last offset-index entry on).

Executor side (``read``): each input partition is a list of offset ranges
``(topic, partition, folder, start, end)`` read with ``kafkafmt.iter_log_dir`` and handed to Spark
as Arrow record batches with exactly Spark's Arrow schema.

Data loss, as Spark's Kafka source defines it (``failOnDataLoss=true`` fails the query, ``false``
logs a warning and goes on): offsets deleted (retention) before they were read, a log start offset
moved past the committed offset, a partition folder gone, a newly found partition that does not
start at offset 0, a log end offset that went backwards, corrupt batches (``false``: salvaged, as
the batch source does).
"""
from __future__ import annotations

import json
import logging
import math
import os
import time

import kafkafmt
from kafkafmt.records import BATCH_METADATA_COLUMNS
from kafkafmt.spark.options import EARLIEST, LATEST, OptionError

try:    # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows, ReadMinRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:     # pyspark 4.1: Spark calls latestOffset() without arguments
    ReadAllAvailable = ReadMaxRows = ReadMinRows = None

    class SupportsTriggerAvailableNow:   # noqa: D101 - stand-in so the class statement works on 4.1
        pass

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

log = logging.getLogger("kafkafmt.spark.stream")

MTIME_SETTLE_S = 2.0        # folders modified more recently than this are listed again every trigger
_FIRST_WINDOW = 64 << 10    # bytes read per scan step at first; doubles up to _MAX_WINDOW
_MAX_WINDOW = 8 << 20
_BENIGN_TAILS = ("truncated final batch", "zero-filled tail")


class DataLossError(RuntimeError):
    """Offsets the stream should have read are gone or unreadable (failOnDataLoss=true)."""


class CheckpointMismatchError(ValueError):
    """The offsets Spark handed over (from a checkpoint) do not belong to this query."""


# --- offsets -------------------------------------------------------------------------------------

def offsets_to_json(offsets):
    """{(topic, partition): next} -> Spark-Kafka JSON dict, topics sorted, partitions numeric order."""
    out = {}
    for (t, p) in sorted(offsets):
        out.setdefault(t, {})[str(p)] = int(offsets[(t, p)])
    return out


def parse_offsets(value, where="offset"):
    """Spark-Kafka JSON (a dict or its text) -> {(topic, partition): next}; anything else is
    refused as a checkpoint of another source."""
    try:
        if isinstance(value, (str, bytes)):
            value = json.loads(value)
        if not isinstance(value, dict):
            raise TypeError
        out = {}
        for t, parts in value.items():
            if not isinstance(parts, dict):
                raise TypeError
            for p, o in parts.items():
                if isinstance(o, bool) or not isinstance(o, int):
                    raise TypeError
                out[(str(t), int(p))] = int(o)
        return out
    except (TypeError, ValueError):
        raise CheckpointMismatchError(
            f"kafka-segments: the {where} {json.dumps(value)[:200]} is not a Kafka offset "
            '({"topic":{"partition":offset}}): the checkpoint was written by another source; '
            "use a new checkpointLocation") from None


def _tp(t, p):
    return f"{t}-{p}"


# --- the driver's view of the log dirs ---------------------------------------------------------------

class _Partition:
    """What the driver knows about one partition folder."""

    __slots__ = ("topic", "partition", "folder", "fs", "fs_folder", "dir_mtime", "listed_at", "segments",
                 "tail_log", "tail_pos", "tail_stat", "next", "open_txns", "reported")

    def __init__(self, topic, partition, folder, fs=None, fs_folder=None):
        self.topic, self.partition, self.folder = topic, partition, folder    # folder: path or URL
        self.fs = fs if fs is not None else _LocalFs()
        self.fs_folder = fs_folder if fs_folder is not None else folder       # as the backend names it
        self.dir_mtime = None
        self.listed_at = 0.0
        self.segments = []
        self.tail_log = None       # the newest segment scanned so far
        self.tail_pos = 0          # where its scan stopped (the start of the first unread batch)
        self.tail_stat = None      # (size, mtime_ns) of tail_log when last scanned
        self.next = None           # next offset after the last complete batch (log end offset)
        self.open_txns = {}        # read_committed: producer id -> first offset of its open transaction
        self.reported = set()      # corrupt positions already reported (salvage)

    @property
    def earliest(self):
        return self.segments[0].base_offset if self.segments else None

    def nbytes(self):
        return sum(s.size for s in self.segments[:-1]) + (self.tail_stat[0] if self.tail_stat else 0)


def _settled(mtime_ns, now):
    return now - mtime_ns / 1e9 > MTIME_SETTLE_S


class _LocalFs:
    """Local disk: a folder's mtime tells whether its listing changed, a file's (size, mtime)
    whether it grew."""

    remote = False

    def dir_token(self, folder):
        return os.stat(folder).st_mtime_ns

    def file_state(self, seg):
        st = os.stat(seg.log)
        return st.st_size, st.st_mtime_ns

    @staticmethod
    def settled(token, now):
        return token is None or _settled(token, now)

    def list_partitions(self, root, now, cache):
        st = os.stat(root)
        cached = cache.get(root)
        if cached is not None and cached[0] == st.st_mtime_ns and _settled(st.st_mtime_ns, now):
            return cached[1]
        m = _partition_dir(os.path.basename(os.path.normpath(root)))
        if m and any(n.endswith(".log") for n in os.listdir(root)):
            found = [(m[0], m[1], root, root)]       # a partition folder itself
        else:
            found = [(t, p, f, f) for t, p, f in map(_as_tuple, kafkafmt.list_partitions(root))]
        cache[root] = (st.st_mtime_ns, found)
        return found

    def list_segments(self, folder):
        return kafkafmt.list_segments(folder)

    def read(self, path, start, stop):
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(stop - start)

    def read_index(self, seg):
        return kafkafmt.read_index(seg.index)

    def url(self, path):
        return path


class _RemoteFs:
    """An object store (s3://, gs://, ... through kafkafmt's storage layer): one listing of the
    root and one per partition folder each trigger -- the only polling cost; bytes are read only
    for segments that grew or appeared (from the last index entry on)."""

    remote = True

    def __init__(self, root_url, storage_options):
        from kafkafmt.storage import open_storage

        self.root_url = root_url.rstrip("/")
        self.storage_options = storage_options
        self.storage, path = open_storage(root_url, storage_options)
        self.root_path = str(path).rstrip("/")

    def dir_token(self, folder):
        return None                    # no cheap change marker: list every trigger

    def file_state(self, seg):
        return seg.size, None          # the size the listing gave

    @staticmethod
    def settled(token, now):
        return True

    def list_partitions(self, root, now, cache):
        """One listing of the root: its <topic>-<partition> folders (or the root itself when it is
        a partition folder)."""
        entries = self.storage.list(self.root_path)
        if any(not e.is_dir and e.name.endswith(".log") for e in entries):
            m = _partition_dir(self.root_path.rsplit("/", 1)[-1])
            return [(m[0], m[1], self.root_path, self.root_url)] if m else []
        found = []
        for e in entries:
            m = _partition_dir(e.name) if e.is_dir else None
            if m:
                found.append((m[0], m[1], e.path, self.url(e.path)))
        return sorted(found)

    def list_segments(self, folder):
        from kafkafmt.discovery import list_segments

        return list_segments(folder, storage=self.storage)

    def read(self, path, start, stop):
        return self.storage.read_bytes(path, start, stop)

    def read_index(self, seg):
        return kafkafmt.read_index(self.storage.read_bytes(seg.index), seg.base_offset)

    def url(self, path):
        path = str(path)
        return self.root_url + path[len(self.root_path):] if path.startswith(self.root_path) else path


def _fs_for(root, storage_options):
    from kafkafmt.storage import is_url

    if is_url(root) and not str(root).lower().startswith(("file:", "local:")):
        return _RemoteFs(root, storage_options)
    return _LocalFs()


class LogDirWatcher:
    """Partitions of the subscription under the log dirs, with their earliest and next offsets,
    refreshed cheaply (see the module doc)."""

    def __init__(self, opts):
        self.opts = opts
        self.committed = opts.isolation == "read_committed"
        self.salvage = not opts.fail_on_data_loss
        self.parts = {}            # (topic, partition) -> _Partition
        self._roots = {}           # local root -> (mtime_ns, [(topic, partition, fs folder, folder)])
        self._fs = {}              # root -> _LocalFs / _RemoteFs
        self.warnings = []

    # listing
    def _root_folders(self, root, now):
        fs = self._fs.get(root)
        if fs is None:
            fs = self._fs[root] = _fs_for(root, getattr(self.opts, "storage_options", None))
        try:
            return fs, fs.list_partitions(root, now, self._roots)
        except FileNotFoundError:
            raise DataLossError(f"kafka-segments: the log dir {root} is gone (deleted or unmounted)") from None
        except PermissionError as exc:
            raise DataLossError(f"kafka-segments: the log dir {root} cannot be read: {exc}") from None

    def refresh(self):
        """Re-read what changed; returns {(topic, partition): _Partition} of the subscription."""
        now = time.time()
        seen = {}
        for root in self.opts.paths:
            if not _fs_for(root, None).remote and not os.path.isdir(root) and os.path.exists(root):
                raise OptionError(f"path is not a directory: {root}")
            fs, found = self._root_folders(root, now)
            for topic, partition, fs_folder, folder in found:
                if self.opts.wants(topic, partition):
                    seen[(topic, partition)] = (fs, fs_folder, folder)
        for key in list(self.parts):
            if key not in seen:
                del self.parts[key]
        for key, (fs, fs_folder, folder) in seen.items():
            st = self.parts.get(key)
            if st is None or st.folder != folder:
                st = self.parts[key] = _Partition(key[0], key[1], folder, fs, fs_folder)
            try:
                self._refresh_partition(st, now)
            except FileNotFoundError:
                del self.parts[key]      # removed between the listing and now: gone
            except OSError as exc:       # unreadable: say which file, never stall silently
                raise DataLossError(f"kafka-segments: cannot read {getattr(exc, 'filename', None) or folder}: "
                                    f"{exc.strerror or exc}") from exc
        return self.parts

    def _refresh_partition(self, st, now):
        fs = st.fs
        token = fs.dir_token(st.fs_folder)
        if token is None or st.dir_mtime != token or not fs.settled(token, now) or not st.segments:
            st.segments = fs.list_segments(st.fs_folder)
            st.dir_mtime = token
        if not st.segments:
            st.next = None
            return
        last = st.segments[-1]
        if st.tail_log == last.log:
            key = fs.file_state(last)
            if key == st.tail_stat and fs.settled(key[1], now):
                return            # nothing appended
            if key[0] < st.tail_pos:      # truncated (a new leader's log, a recreated segment): read it anew
                st.next, st.tail_pos, st.open_txns = last.base_offset, 0, {}
            self._scan(st, last.log, st.tail_pos, key[0])
            st.tail_stat = key
            return
        # a new newest segment (or the first look at this partition)
        if self.committed:
            # transactions may span segments: follow every batch header once, from the oldest
            # segment not yet scanned
            todo = [s for s in st.segments if st.tail_log is None or s.base_offset >= _base_of(st.tail_log)]
            for s in todo:
                start = st.tail_pos if s.log == st.tail_log else 0
                self._scan(st, s.log, start, fs.file_state(s)[0])
                if s is not last:
                    st.next = max(st.next or 0, s.base_offset)
            key = fs.file_state(last)
        else:
            key = fs.file_state(last)
            start = _index_hint(fs, last, key[0]) if key[0] else 0
            st.next = last.base_offset
            if not self._scan(st, last.log, start, key[0], hint=start > 0) and start:
                self._scan(st, last.log, 0, key[0])     # the index pointed at no batch: from the start
        st.tail_log, st.tail_stat = last.log, key
        if st.next is None or st.next < last.base_offset:
            st.next = last.base_offset

    def _scan(self, st, path, start, size, hint=False):
        """Follow batch headers of `path` from `start` to `size`; updates st.next / tail_pos / open
        transactions. Returns False when `hint` and no batch starts at `start`."""
        pos, window = start, _FIRST_WINDOW
        if st.tail_log != path:
            st.tail_log, st.tail_pos = path, start
        fs = st.fs
        while pos < size:
            buf = fs.read(path, pos, min(pos + window, size))
            if not buf:
                break
            table, info = kafkafmt.scan_batches(buf, verify_crc=None)
            n = info["count"]
            if hint and pos == start and n == 0 and (info["tail"] != "truncated" or info["error"]):
                return False
            hint = False
            if n:
                last_offsets = table["last_offset"][:n]
                st.next = max(st.next or 0, int(last_offsets.max()) + 1)
                if self.committed:
                    self._track_txns(st, table, n)
            err = info["error"]
            if err is not None:
                pos = self._corrupt(st, path, pos + int(err["position"]), err, size)
                continue
            valid = int(info["valid_bytes"])
            if info["tail"] is None:
                pos += valid
                window = min(window * 2, _MAX_WINDOW)
                continue
            if info["tail"] == "zeros":       # a preallocated file's zero-filled tail: the end for now
                pos += valid
                break
            # "truncated": the window ended inside a batch, or the file does (a write in progress)
            if pos + len(buf) >= size:
                pos += valid
                break
            if valid == 0:                    # one batch larger than the window
                need = 12 + int.from_bytes(buf[8:12], "big", signed=True) if len(buf) >= 12 else window * 2
                window = max(window * 2, need)
            pos += valid
        st.tail_pos = pos
        return True

    def _corrupt(self, st, path, position, err, size):
        """A framing error in a live segment: fail (strict) or skip to the next intact batch."""
        where = f"{st.fs.url(path)} position {position} (offset {err.get('offset')})"
        if not self.salvage:
            raise DataLossError(f"kafka-segments: corrupt data in {where}: {err.get('reason')} -- the stream "
                                "cannot read past it; set failOnDataLoss=false to skip corrupt batches")
        recs = kafkafmt.read_segment(st.fs.url(path), errors="salvage", keys=False, values=False, headers=False,
                                     verify_crc=False, storage_options=getattr(st.fs, "storage_options", None))
        b = recs.batches
        ends = [int(p) + int(s) for p, s, o in zip(b["position"], b["size"], b["last_offset"])]
        after = [e for e in ends if e > position]
        if len(b):
            st.next = max(st.next or 0, int(max(b["last_offset"])) + 1)
        resume = max(after) if after else size
        if (path, position) not in st.reported:
            st.reported.add((path, position))
            self.warn(f"corrupt data in {where}: {err.get('reason')}; {resume - position} bytes skipped "
                      "(failOnDataLoss=false)")
        return max(resume, position + 1)

    @staticmethod
    def _track_txns(st, table, n):
        txn, ctl = table["is_transactional"][:n], table["is_control"][:n]
        pid, base = table["producer_id"][:n], table["base_offset"][:n]
        for i in range(n):
            if txn[i]:
                if ctl[i]:
                    st.open_txns.pop(int(pid[i]), None)
                else:
                    st.open_txns.setdefault(int(pid[i]), int(base[i]))

    def latest(self, st):
        """The offset a reader may read up to: the log end offset, or for read_committed the last
        stable offset (the first offset of a transaction still open)."""
        if st.next is None:
            return None
        if self.committed and st.open_txns:
            return min(st.next, min(st.open_txns.values()))
        return st.next

    def warn(self, message):
        self.warnings.append(message)
        log.warning("kafka-segments: %s", message)


def _as_tuple(p):
    """(topic, partition, folder) from list_partitions' rows (Partition objects or plain tuples)."""
    return (p.topic, p.partition, p.folder) if hasattr(p, "topic") else tuple(p)


def _benign(entry):
    """A report entry that is no loss for a stream: the live end of the newest segment (a batch
    being written, a zero-filled tail), a leftover file, an index fallback."""
    kind = getattr(entry, "kind", None)
    if kind is not None:
        return getattr(kind, "value", kind) not in ("corrupt",)
    return entry.get("reason") in _BENIGN_TAILS or entry.get("start") is None


def _base_of(log_path):
    return int(os.path.basename(log_path)[:20])


def _partition_dir(name):
    head, sep, tail = name.rpartition("-")
    if sep and head and tail.isdigit():
        return head, int(tail)
    return None


def _index_hint(fs, seg, size):
    """Byte position of the last offset-index entry of a segment (a batch start), or 0."""
    try:
        entries = fs.read_index(seg)       # the zero-filled tail of a live index is cut off
    except (OSError, kafkafmt.KafkafmtError):
        return 0
    if not len(entries):
        return 0
    pos = int(entries["position"][-1])
    return pos if 0 < pos < size else 0


# --- the stream reader -------------------------------------------------------------------------------

class StreamPartition(InputPartition):
    """Offset ranges (topic, partition, folder, start, end) read by one Spark task."""

    def __init__(self, index, ranges):
        super().__init__(index)
        self.ranges = ranges


def rate_limit(limit, start, latest, earliest):
    """Spark's KafkaMicroBatchStream.rateLimit: `limit` offsets shared by the partitions in
    proportion to their lag (a partition's share rounded down, but up to 1 when below 1, so small
    partitions are not starved). `earliest` gives the start of partitions not in `start`."""
    sizes = {}
    for tp, end in latest.items():
        begin = start.get(tp, earliest.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        begin = start.get(tp, earliest.get(tp))
        share = limit * (sizes[tp] / total)
        share = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + int(share))
    return out


class KafkaSegmentsStreamReader(SupportsTriggerAvailableNow, DataSourceStreamReader):
    """spark.readStream.format("kafka-segments"): see the module doc."""

    def __init__(self, schema, opts):
        self.schema = schema
        self.opts = opts
        self._watcher = None          # built on first use (the reader is pickled to executors first)
        self._available_now = False
        self._target = None           # Trigger.AvailableNow: the offsets present when the query started
        self._last_trigger_ms = 0     # minOffsetsPerTrigger / maxTriggerDelay bookkeeping
        self._latest_seen = None
        self._last_end = None         # pyspark 4.1 (no start argument): the last end offset handed out
        self.last_trigger_seconds = None

    # helpers
    @property
    def watcher(self):
        if self._watcher is None:
            self._watcher = LogDirWatcher(self.opts)
        return self._watcher

    def _fail_or_warn(self, message):
        if self.opts.fail_on_data_loss:
            raise DataLossError(f"kafka-segments: {message}. Some data may have been lost; if that is "
                                "expected (e.g. retention deleted it), set failOnDataLoss=false")
        self.watcher.warn(message + " (failOnDataLoss=false: going on)")

    def _check_subscription(self, offsets, where):
        foreign = sorted(_tp(t, p) for (t, p) in offsets if not self.opts.wants(t, p))
        if foreign:
            o = self.opts
            sub = (f"subscribe={','.join(o.subscribe)}" if o.subscribe is not None else
                   f"subscribePattern={o.pattern.pattern}" if o.pattern is not None else
                   f"assign={json.dumps({t: sorted(ps) for t, ps in o.assign.items()})}" if o.assign is not None
                   else "every topic")
            raise CheckpointMismatchError(
                f"kafka-segments: the {where} names {', '.join(foreign[:10])}, which this query's subscription "
                f"({sub}) does not include: the checkpoint belongs to a query with another subscription; "
                "use a new checkpointLocation")

    def _snapshot(self):
        """{tp: latest} and {tp: earliest} of the subscription now."""
        parts = self.watcher.refresh()
        latest, earliest = {}, {}
        for tp, st in parts.items():
            lat = self.watcher.latest(st)
            if lat is None:
                continue                     # a folder without segments yet
            latest[tp], earliest[tp] = lat, st.earliest
        return latest, earliest

    # Spark's calls
    def initialOffset(self):
        latest, earliest = self._snapshot()
        o = self.opts
        if o.starting_ts is not None:
            start = {}
            for tp in sorted(latest):
                ts = o.starting_ts if not isinstance(o.starting_ts, dict) else o.starting_ts.get(tp[0], {}).get(tp[1])
                if ts is None:
                    raise OptionError(f"startingOffsetsByTimestamp does not name {_tp(*tp)}: a stream's starting "
                                      "timestamps must cover every partition of the subscription")
                st = self.watcher.parts[tp]
                off = kafkafmt.offset_for_timestamp(st.fs_folder, ts, segments=st.segments)
                if off is None:
                    if o.timestamp_strategy != "latest":
                        raise OptionError(f"no record of {_tp(*tp)} has a timestamp >= {ts} (set "
                                          "startingOffsetsByTimestampStrategy=latest to start at the end instead)")
                    off = latest[tp]
                start[tp] = min(off, latest[tp])
        elif o.starting == "earliest":
            start = dict(earliest)
        elif o.starting == "latest":
            start = dict(latest)
        else:
            start = {}
            wanted = {(t, p): v for t, ps in o.starting.items() for p, v in ps.items()}
            missing = sorted(_tp(*tp) for tp in latest if tp not in wanted)
            unknown = sorted(_tp(*tp) for tp in wanted if tp not in latest)
            if missing or unknown:
                raise OptionError("startingOffsets must give every partition of the subscription"
                                  + (f"; missing: {', '.join(missing)}" if missing else "")
                                  + (f"; not found on disk: {', '.join(unknown)}" if unknown else ""))
            for tp, v in wanted.items():
                if v == EARLIEST:
                    v = earliest[tp]
                elif v == LATEST:
                    v = latest[tp]
                elif v < earliest[tp]:
                    self._fail_or_warn(f"startingOffsets asks for offset {v} of {_tp(*tp)}, but offsets "
                                       f"{v}..{earliest[tp] - 1} are no longer on disk")
                    v = earliest[tp]
                elif v > latest[tp]:
                    self._fail_or_warn(f"startingOffsets asks for offset {v} of {_tp(*tp)}, beyond its log end "
                                       f"offset {latest[tp]}")
                    v = latest[tp]
                start[tp] = v
        self._last_end = start
        return offsets_to_json(start)

    def getDefaultReadLimit(self):
        o = self.opts
        if ReadMaxRows is None:
            return None
        if o.max_offsets_per_trigger:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.min_offsets_per_trigger:
            return ReadMinRows(o.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self):
        self._available_now = True
        self._target = None

    def latestOffset(self, start=None, limit=None):
        t0 = time.perf_counter()
        if start is None:        # pyspark 4.1: no admission control, the options are the limits
            start_map = self._last_end if self._last_end is not None else parse_offsets(self.initialOffset())
        else:
            start_map = parse_offsets(start, "start offset")
        self._check_subscription(start_map, "checkpointed offset")
        latest, earliest = self._snapshot()
        if self._available_now:
            if self._target is None:
                self._target = dict(latest)
            latest = {tp: min(v, latest.get(tp, v)) for tp, v in self._target.items() if tp in latest}
        for tp, s in start_map.items():
            if tp in latest and latest[tp] < s:
                self._fail_or_warn(f"the log end offset of {_tp(*tp)} went back from {s} to {latest[tp]} (the log "
                                   "was truncated or recreated, or the checkpoint belongs to another log dir)")
        self._latest_seen = latest
        all_available = ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable)
        end = latest
        if not all_available:
            o = self.opts
            max_rows = limit.max_rows if ReadMaxRows is not None and isinstance(limit, ReadMaxRows) \
                else o.max_offsets_per_trigger
            min_rows = limit.min_rows if ReadMinRows is not None and isinstance(limit, ReadMinRows) \
                else o.min_offsets_per_trigger
            if min_rows and not self._available_now and self._delay(min_rows, start_map, latest):
                end = start_map
            elif max_rows:
                end = rate_limit(max_rows, start_map, latest, earliest)
        self._last_end = end
        self.last_trigger_seconds = time.perf_counter() - t0
        return offsets_to_json(end)

    def _delay(self, min_rows, start, latest):
        """Spark's delayBatch: wait for minOffsetsPerTrigger new offsets, at most maxTriggerDelay."""
        now = int(time.time() * 1000)
        if now - self._last_trigger_ms >= self.opts.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        new = sum(v - start.get(tp, 0) for tp, v in latest.items())
        if new < min_rows:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self):
        return offsets_to_json(self._latest_seen) if self._latest_seen else None

    def partitions(self, start, end):
        s = parse_offsets(start, "start offset")
        e = parse_offsets(end, "end offset")
        self._check_subscription(s, "checkpointed offset")
        self._check_subscription(e, "checkpointed offset")
        self._last_end = e
        if s == e:
            return []
        parts = self.watcher.refresh()
        gone = sorted(_tp(*tp) for tp in s if tp not in e)
        if gone:
            self._fail_or_warn(f"partitions {', '.join(gone)} are gone")
        ranges = []
        for tp in sorted(e):
            until = e[tp]
            st = parts.get(tp)
            if st is None or not st.segments:
                self._fail_or_warn(f"the folder of {_tp(*tp)} is gone: offsets {s.get(tp, '?')}..{until - 1} "
                                   "cannot be read")
                continue
            frm = s.get(tp)
            if frm is None:
                frm = st.earliest
                if frm != 0:
                    self._fail_or_warn(f"added partition {_tp(*tp)} starts from {frm} instead of 0")
            if frm < st.earliest:
                self._fail_or_warn(f"offsets {frm}..{min(until, st.earliest) - 1} of {_tp(*tp)} were deleted "
                                   f"before they were read (its log start offset is now {st.earliest})")
                frm = st.earliest
            if until < frm:
                self._fail_or_warn(f"the offset of {_tp(*tp)} went from {frm} back to {until}")
                continue
            if until > frm:
                per = st.nbytes() / max(1, (self.watcher.latest(st) or until) - st.earliest)
                ranges.append((tp[0], tp[1], st.folder, frm, until, per))
        return self._pack(ranges)

    def _pack(self, ranges):
        """Input partitions of about equal size: k = max(total / targetPartitionBytes, minPartitions)
        of them, ranges larger than total / k split by offset, the pieces dealt largest first to
        the least loaded task (every Spark task has a fixed cost, and the slowest one decides)."""
        o = self.opts
        sizes = [(e - s) * per for (_, _, _, s, e, per) in ranges]
        total = float(sum(sizes))
        k = max(1, int(math.ceil(total / o.target_partition_bytes)), o.min_partitions or 1)
        share = max(total / k, 1.0)
        pieces = []
        for (t, p, folder, s, e, per), size in zip(ranges, sizes):
            n = max(1, min(e - s, int(math.ceil(size / share - 1e-9))))
            cuts = [s + (e - s) * i // n for i in range(n + 1)]
            pieces += [((t, p, folder, a, b), (b - a) * per) for a, b in zip(cuts, cuts[1:]) if b > a]
        bins = [[0.0, []] for _ in range(min(k, len(pieces)))]
        for piece, size in sorted(pieces, key=lambda x: -x[1]):
            target = min(bins, key=lambda b: b[0])
            target[0] += size
            target[1].append(piece)
        groups = [sorted(b[1]) for b in bins if b[1]]
        return [StreamPartition(i, g) for i, g in enumerate(groups)]

    def commit(self, end):
        pass

    def stop(self):
        self._watcher = None

    # executors
    def read(self, partition):
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        names = [f.name for f in self.schema.fields]
        for topic, part, folder, start, end in partition.ranges:
            yield from self._read_range(topic, part, folder, start, end, names, target)

    def _read_range(self, topic, part, folder, start, end, names, target):
        o = self.opts
        name = _tp(topic, part)
        storage_options = getattr(o, "storage_options", None)
        try:
            fs = _fs_for(folder, storage_options)
            segments = fs.list_segments(fs.root_path if fs.remote else folder)
        except FileNotFoundError:
            segments = []
        if not segments:
            self._fail_or_warn(f"the folder of {name} ({folder}) is gone: offsets {start}..{end - 1} cannot be read")
            return
        if segments[0].base_offset > start:
            first = segments[0].base_offset
            self._fail_or_warn(f"offsets {start}..{min(end, first) - 1} of {name} were deleted before they were "
                               f"read (its log start offset is now {first})")
            start = first
            if start >= end:
                return
        report = []
        want_meta = any(n in names for n in BATCH_METADATA_COLUMNS)
        try:
            for recs in kafkafmt.iter_log_dir(folder, start_offset=start, end_offset=end, isolation=o.isolation,
                                              columns=names, errors="strict" if o.fail_on_data_loss else "salvage",
                                              max_bytes=o.max_bytes_per_batch, report=report, threads=1,
                                              **({"storage_options": storage_options} if storage_options else {})):
                if not len(recs):
                    continue
                table = recs.to_arrow(headers="headers" in names, batch_metadata=want_meta).select(names)
                yield from table.cast(target).to_batches()
        except kafkafmt.KafkafmtError as exc:
            raise DataLossError(f"kafka-segments: {exc} (reading offsets {start}..{end - 1} of {name}) -- set "
                                "failOnDataLoss=false to skip corrupt batches and keep reading") from exc
        for entry in report:
            if _benign(entry):
                continue
            log.warning("kafka-segments: %s bytes %s..%s skipped: %s (failOnDataLoss=false)",
                        entry.get("file"), entry.get("start"), entry.get("end"), entry.get("reason"))


def lag(progress):
    """Records behind the newest offset on disk, per partition, from a StreamingQueryProgress (or
    its ``json``/dict form): the source's ``latestOffset`` minus its ``endOffset``."""
    if hasattr(progress, "json"):
        progress = json.loads(progress.json)
    elif isinstance(progress, str):
        progress = json.loads(progress)
    out = {}
    for src in progress.get("sources", []):
        end, latest = src.get("endOffset"), src.get("latestOffset")
        if not end or not latest:
            continue
        end = parse_offsets(end) if not isinstance(end, dict) else parse_offsets(end)
        latest = parse_offsets(latest)
        for tp, v in latest.items():
            out[_tp(*tp)] = max(0, v - end.get(tp, 0))
    return out

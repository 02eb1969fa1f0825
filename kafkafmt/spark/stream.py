"""Structured Streaming over live log dirs: ``spark.readStream.format("kafka-segments")``.

A ``DataSourceStreamReader`` whose offsets are Spark's Kafka-source offsets,
``{"topic": {"partition": nextOffset}}`` (topics sorted, partitions in numeric order, so equal
positions always serialize to the same string -- Spark compares offsets as JSON strings), so a
checkpoint reads the way a Kafka query's does.

Driver side (``initialOffset`` / ``latestOffset`` / ``partitions``): a `LogDirWatcher` asks the
library's one discovery (`kafkafmt.log._discovery.discover`) for the partitions under the paths every
trigger -- log dirs at any depth, tiered-storage uploads, a partition's uploads and local segments
merged -- and keeps, per partition, where the header scan of its newest segment stopped. The
discovery keeps the listings of local folders whose mtime has not changed (and is older than
`kafkafmt.storage.SETTLE_SECONDS`: file-system timestamps are coarse), so a trigger costs a ``stat``
per folder and one of the newest ``.log`` per partition when nothing changed; only bytes appended
since the last trigger are scanned (batch headers, no decoding). A batch cut off mid-write ends the
scan before it: its offsets become visible once the broker has finished writing it. "earliest" is
a partition's log start offset (`Partition.earliest`: its log dir's ``log-start-offset-checkpoint``
when DeleteRecords moved it).

Object storage (``s3://bucket/kafka-logs`` etc. with ``storage.<key>`` options, through
kafkafmt.storage): no change markers exist there, so each trigger lists the folders again -- the
only polling cost -- and reads bytes only of a segment object that appeared or grew (from its last
offset-index entry on).

Executor side (``read``): each input partition is a list of offset ranges
``(topic, partition, Partition, start, end)`` planned and read as every read is (`kafkafmt.iter_log_dir`)
and handed to Spark as Arrow record batches with exactly Spark's Arrow schema.

Data loss, as Spark's Kafka source defines it (``failOnDataLoss=true`` fails the query, ``false``
logs a warning and goes on): offsets deleted (retention) before they were read, a log start offset
moved past the committed offset, a partition folder gone, a newly found partition that does not
start at offset 0, a log end offset that went backwards, corrupt batches (``false``: salvaged, as
the batch source does). And, beyond Spark's checks, a log that diverged from what the query read
(`kafkafmt.log._planner.find_divergence`): the driver keeps the `BatchMark` of the batch each end
offset it hands out ends in, and checks it the next trigger -- a log truncated and written again
(or re-created, or overwritten by a new leader) between two triggers is found even when its end is
back past the query's offsets; ``false`` reads the rewritten offsets again, so the new records
arrive. The marks live in the driver: Spark's Kafka offsets in the checkpoint carry none, so after
a restart only the log end is checked against the checkpoint. A live segment rewritten in place
(same name) is seen by its last scanned batch header no longer being there: it is scanned anew.
A file that shrinks between a trigger's listing and its scan (a segment being replaced: removed, then
written again) is no loss: that trigger keeps what it knew of the partition (a partition it had not seen
yet stays where the query is), and the next one looks again (`kafkafmt.errors.ObjectChangedError`). A
new query's start has no offsets to stay at: it looks again at once (`START_LOOKS` times in all, then fails
naming the partition).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import time

import kafkafmt
from kafkafmt.errors import DataLossError, ObjectChangedError
from kafkafmt.log import entry_size_at, scan_range
from kafkafmt.log import batch_mark, deal, find_divergence, gap_transactions
from kafkafmt.read import iter_log_dir_with
from kafkafmt.record import BATCH_METADATA_COLUMNS, LOG_DIR_COLUMN, cast_table
from kafkafmt.spark.options import EARLIEST, LATEST, OptionError
from kafkafmt.spark.typedcols import SchemaChangedError, decode_names

try:    # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows, ReadMinRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:     # pyspark 4.1: Spark calls latestOffset() without arguments
    ReadAllAvailable = ReadMaxRows = ReadMinRows = None

    class SupportsTriggerAvailableNow:   # noqa: D101 - stand-in so the class statement works on 4.1
        pass

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

log = logging.getLogger("kafkafmt.spark.stream")

_FIRST_WINDOW = 64 << 10    # bytes read per scan step at first; doubles up to _MAX_WINDOW
_MAX_WINDOW = 8 << 20
_BENIGN_TAILS = ("truncated final batch", "zero-filled tail")
#: how many times a query's start looks at a partition whose newest segment changes while it looks (being written
#: again) before it gives up: a later trigger stays where the query is instead, but a start has no offset to stay at
START_LOOKS = 3


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
    """What the driver knows about one partition: the library's `kafkafmt.log._discovery.Partition` (a
    folder, tiered uploads, or both merged), its segments, and where the header scan of its newest
    segment stopped."""

    __slots__ = ("topic", "partition", "part", "segments", "tail_log", "tail_pos", "tail_stat", "tail_batch", "next",
                 "open_txns", "gap_txns", "reported", "changed")

    def __init__(self, part):
        self.topic, self.partition, self.part = part.topic, part.partition, part
        self.segments = []
        self.tail_log = None       # the newest segment scanned so far (its log path)
        self.tail_pos = 0          # where its scan stopped (the start of the first unread batch)
        self.tail_stat = None      # (size, change token) of tail_log when last scanned
        self.tail_batch = None     # (position, base offset, CRC) of the last batch scanned in tail_log
        self.next = None           # next offset after the last complete batch (log end offset)
        self.open_txns = {}        # read_committed: producer id -> first offset of its open transaction
        self.gap_txns = None       # read_committed: the transactions' batches of stretches read from another copy
        self.reported = set()      # corrupt positions already reported (salvage)
        self.changed = None        # the watcher's count of changes seen when this one last changed

    @property
    def earliest(self):
        """The log start offset: the first segment's base offset, or further where DeleteRecords moved
        it (the log dir's log-start-offset-checkpoint)."""
        return self.part.earliest(self.segments)

    def nbytes(self):
        return sum(s.size for s in self.segments[:-1]) + (self.tail_stat[0] if self.tail_stat else 0)

    def state(self):
        """What a refresh changes, to put back (`restore`) when the files change under it (the dicts and lists a
        refresh changes in place, copied)."""
        out = []
        for name in self.__slots__:
            v = getattr(self, name)
            out.append(dict(v) if type(v) is dict else list(v) if type(v) is list else v)
        return tuple(out)

    def restore(self, state):
        for n, v in zip(self.__slots__, state):
            setattr(self, n, v)


def _file_state(seg):
    """(size now, change token) of a segment's log: a local file is looked at again (appends do not
    change its folder's listing), an object store's size is the one its fresh listing gave."""
    st = seg.storage
    if seg.remote is None and st.is_local:
        return st.size(seg.log), st.change_token(seg.log)
    return seg.size, None


class LogDirWatcher:
    """Partitions of the subscription under the log dirs, with their earliest and next offsets,
    refreshed cheaply through the library's discovery (see the module doc)."""

    def __init__(self, opts):
        self.opts = opts
        self.committed = opts.isolation == "read_committed"
        self.salvage = not opts.fail_on_data_loss
        self.parts = {}            # (topic, partition) -> _Partition
        self._cache = {}           # the discovery's listings of local folders, kept while they are unchanged
        self._changes = 0          # changes seen in any partition (a partition's ``changed`` is one of them)
        self.warnings = []
        self.deferred = set()      # partitions seen for the first time as their files changed: looked at next trigger

    # listing
    def _discover(self):
        from kafkafmt.log import discover
        from kafkafmt.errors import PathNotFoundError

        report = []
        try:
            found = discover(self.opts.paths, storage_options=getattr(self.opts, "storage_options", None),
                             tiered_keys=getattr(self.opts, "tiered_keys", None), replicas=self.opts.replicas,
                             report=report, cache=self._cache, topic_id=getattr(self.opts, "topic_id", None))
            found.check_incarnations()
        except PathNotFoundError as exc:
            raise DataLossError(f"kafka-segments: the log dir {exc.file} is gone (deleted or unmounted)") from None
        except ObjectChangedError as exc:     # (copies compared while one is being replaced: see the module doc)
            log.info("kafka-segments: %s changed while this trigger looked at it: looked at again next trigger", exc)
            return None
        except kafkafmt.KafkafmtError as exc:
            raise DataLossError(f"kafka-segments: the log dirs cannot be read: {exc}") from None
        for e in report:
            if getattr(e.kind, "value", None) in ("gap", "mismatch") and (e.file, e.message) not in self._said:
                self._said.add((e.file, e.message))
                self._fail_or_warn(f"{e.file}: {e.message}")
        return found.partitions

    _said = frozenset()

    def refresh(self):
        """Re-read what changed; returns {(topic, partition): _Partition} of the subscription."""
        if not isinstance(self._said, set):
            self._said = set()
        found = self._discover()
        if found is None:
            return self.parts
        self.deferred = set()
        seen = {}
        for part in found:
            if not self.opts.wants(part.topic, part.partition):
                continue
            key = (part.topic, part.partition)
            if key in seen:
                raise OptionError(f"{part.name} is found in several places ({seen[key].log_dir_url}, "
                                  f"{part.log_dir_url}): a stream reads one copy of each partition -- leave out "
                                  "replicas=all (replicas=dedup, the default, reads the most complete one)")
            seen[key] = part
        for key in list(self.parts):
            if key not in seen:
                del self.parts[key]
        for key, part in seen.items():
            st = self.parts.get(key)
            first = st is None or st.part.key != part.key
            if first:
                st = self.parts[key] = _Partition(part)
            try:
                self._refresh_partition(st, part)
            except FileNotFoundError:
                del self.parts[key]      # removed between the listing and now: gone
            except ObjectChangedError as exc:
                # shorter than listed (being replaced): as it was (`_refresh_partition`), or not yet, until the next
                # trigger looks again
                log.info("kafka-segments: %s changed while this trigger looked at it (%s): looked at again next "
                         "trigger", part.url, exc)
                if first:
                    del self.parts[key]
                    self.deferred.add(key)
            except OSError as exc:       # unreadable: say which file, never stall silently
                raise DataLossError(f"kafka-segments: cannot read {getattr(exc, 'filename', None) or part.url}: "
                                    f"{exc.strerror or exc}") from exc
        return self.parts

    def _refresh_partition(self, st, part):
        """Look again at a partition (``part``: this trigger's `Partition` of it). A file shorter than listed
        (`ObjectChangedError`) leaves ``st`` as it was -- its state is kept only once something changed."""
        segments = part.list_segments(cache=self._cache)
        if not segments:
            st.part, st.segments, st.next = part, segments, None
            return
        key = None                # the newest segment's file state, when it is the one scanned before
        if st.tail_log == segments[-1].log:
            key = _file_state(segments[-1])
            if key == st.tail_stat and segments[-1].storage.settled(key[1]):
                st.part, st.segments = part, segments
                return            # nothing appended
        known = st.state()
        st.part, st.segments = part, segments
        try:
            self._follow(st, key)
        except ObjectChangedError:
            st.restore(known)
            raise

    def _follow(self, st, key):
        """The rest of `_refresh_partition`, for a partition whose newest segment changed: scan what was appended
        (``key``: that segment's file state, when it is the one scanned before)."""
        last = st.segments[-1]
        self._changes += 1
        st.changed = self._changes
        if st.tail_log == last.log:
            if key[0] < st.tail_pos or not _still_there(last, st.tail_batch, key[0]):
                # truncated or rewritten (a new leader's log, a recreated segment): read it anew
                st.next, st.tail_pos, st.open_txns, st.tail_batch = last.base_offset, 0, {}, None
                st.gap_txns = None
            self._scan(st, last, st.tail_pos, key[0])
            st.tail_stat = key
            return
        # a new newest segment (or the first look at this partition)
        if self.committed:
            # transactions may span segments: follow every batch header once, from the oldest
            # segment not yet scanned
            tail_base = next((s.base_offset for s in st.segments if s.log == st.tail_log), None)
            todo = [s for s in st.segments if tail_base is None or s.base_offset >= tail_base]
            for s in todo:
                start = st.tail_pos if s.log == st.tail_log else 0
                self._scan(st, s, start, _file_state(s)[0])
                if s is not last:
                    st.next = max(st.next or 0, s.base_offset)
            key = _file_state(last)
        else:
            key = _file_state(last)
            start = _index_hint(last, key[0]) if key[0] else 0
            st.next = last.base_offset
            if not self._scan(st, last, start, key[0], hint=start > 0) and start:
                self._scan(st, last, 0, key[0])     # the index pointed at no batch: from the start
        st.tail_log, st.tail_stat = last.log, key
        if st.next is None or st.next < last.base_offset:
            st.next = last.base_offset

    def _scan(self, st, seg, start, size, hint=False):
        """Follow batch headers of a segment from `start` to `size` (the framing scan over ranged
        reads of its blob); updates st.next / tail_pos / open transactions. Returns False when
        `hint` and no batch starts at `start`."""
        pos, window = start, _FIRST_WINDOW
        if st.tail_log != seg.log:
            st.tail_log, st.tail_pos, st.tail_batch = seg.log, start, None
        with seg.storage.open(seg.log, size=size) if seg.remote is None else seg.open() as f:
            size = min(size, f.size)
            while pos < size:
                stop = min(pos + window, size)
                table, info = scan_range(f, pos, stop)
                n = info["count"]
                if hint and pos == start and n == 0 and (info["tail"] != "truncated" or info["error"]):
                    return False
                hint = False
                if n:
                    st.next = max(st.next or 0, int(table["last_offset"][:n].max()) + 1)
                    st.tail_batch = (int(table["position"][n - 1]), int(table["base_offset"][n - 1]),
                                     int(table["crc"][n - 1]))
                    if self.committed:
                        self._track_txns(st, table, n)
                err = info["error"]
                if err is not None:
                    pos = self._corrupt(st, seg, int(err["position"]), err, size)
                    continue
                valid = int(info["valid_bytes"]) - pos
                if info["tail"] is None:
                    pos += valid
                    window = min(window * 2, _MAX_WINDOW)
                    continue
                if info["tail"] == "zeros":       # a preallocated file's zero-filled tail: the end for now
                    pos += valid
                    break
                # "truncated": the window ended inside a batch, or the file does (a write in progress)
                if stop >= size:
                    pos += valid
                    break
                if valid == 0:                    # one batch larger than the window
                    need = entry_size_at(f, pos)
                    window = max(window * 2, 12 + need if need > 0 else window * 2)
                pos += valid
        st.tail_pos = pos
        return True

    def _corrupt(self, st, seg, position, err, size):
        """A framing error in a live segment: fail (strict) or skip to the next intact batch."""
        where = f"{seg.url} position {position} (offset {err.get('offset')})"
        if not self.salvage:
            raise DataLossError(f"kafka-segments: corrupt data in {where}: {err.get('reason')} -- the stream "
                                "cannot read past it; set failOnDataLoss=false to skip corrupt batches")
        recs = kafkafmt.read_segment(seg.url, errors="salvage", keys=False, values=False, headers=False,
                                     verify_crc=False, storage_options=getattr(self.opts, "storage_options", None))
        b = recs.batches
        ends = [int(p) + int(s) for p, s in zip(b["position"], b["size"])]
        after = [e for e in ends if e > position]
        if len(b):
            st.next = max(st.next or 0, int(max(b["last_offset"])) + 1)
        resume = max(after) if after else size
        if (seg.log, position) not in st.reported:
            st.reported.add((seg.log, position))
            self.warn(f"corrupt data in {where}: {err.get('reason')}; {resume - position} bytes skipped "
                      "(failOnDataLoss=false)")
        return max(resume, position + 1)

    @staticmethod
    def _track_txns(st, table, n):
        txn, ctl = table["is_transactional"][:n], table["is_control"][:n]
        pid, base = table["producer_id"][:n], table["base_offset"][:n]
        if st.gap_txns is None:
            st.gap_txns = gap_transactions(st.part)
        for i in range(n):
            # a stretch this copy lacks, read from another (a gap before this batch): its transactions' batches
            while st.gap_txns and int(base[i]) > st.gap_txns[0][0]:
                first, p, is_ctl, _, _ = st.gap_txns.pop(0)
                if is_ctl:
                    st.open_txns.pop(p, None)
                else:
                    st.open_txns.setdefault(p, first)
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

    def _fail_or_warn(self, message):
        if self.opts.fail_on_data_loss:
            raise DataLossError(f"kafka-segments: {message}. Some data may have been lost; if that is "
                                "expected (e.g. retention deleted it), set failOnDataLoss=false")
        self.warn(message + " (failOnDataLoss=false: going on)")


def _still_there(seg, batch, size):
    """Whether the batch (position, base offset, CRC) last scanned in a segment is still where it was
    (a file rewritten under the same name has other bytes there)."""
    if batch is None:
        return True
    pos, base, crc = batch
    with seg.storage.open(seg.log, size=size) if seg.remote is None else seg.open() as f:
        if pos + 61 > f.size:
            return False
        table, info = scan_range(f, pos, min(f.size, pos + 12 + max(entry_size_at(f, pos), 0)))
    return info["count"] > 0 and int(table["base_offset"][0]) == base and int(table["crc"][0]) == crc


def _benign(entry):
    """A report entry that is no loss for a stream: the live end of the newest segment (a batch
    being written, a zero-filled tail), a leftover file, an index fallback."""
    kind = getattr(entry, "kind", None)
    if kind is not None:
        return getattr(kind, "value", kind) not in ("corrupt", "gap", "mismatch")
    return entry.get("reason") in _BENIGN_TAILS or entry.get("start") is None


def _index_hint(seg, size):
    """Byte position of the last offset-index entry of a segment (a batch start), or 0."""
    try:
        data = seg.side_bytes("index")      # the zero-filled tail of a live index is cut off
        entries = kafkafmt.read_index(data, seg.base_offset) if data else ()
    except (OSError, kafkafmt.KafkafmtError):
        return 0
    if not len(entries):
        return 0
    pos = int(entries["position"][-1])
    return pos if 0 < pos < size else 0


# --- the stream reader -------------------------------------------------------------------------------

class StreamPartition(InputPartition):
    """Offset ranges (topic, partition, `kafkafmt.log._discovery.Partition`, start, end) read by one Spark task."""

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
        self._marks = {}              # tp -> (end offset handed out, BatchMark of the batch it ends in, change seen)
        self._rewind = {}             # tp -> (start offset, offset to read again from): a diverged log
        self.last_trigger_seconds = None

    # helpers
    @property
    def watcher(self):
        if self._watcher is None:
            self._watcher = LogDirWatcher(self.opts)
        return self._watcher

    def _fail_or_warn(self, message):
        self.watcher._fail_or_warn(message)

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

    def _check_schemas(self):
        """schemaEvolutionMode=restart: fail when a subject read got a new latest version."""
        o = self.opts
        if o.typed is None or o.schema_evolution != "restart":
            return
        changed = o.typed.changed()
        if changed:
            raise SchemaChangedError("kafka-segments: " + "; ".join(changed) + " -- restart the query to read with "
                                     "the new schema (or set schemaEvolutionMode=none to keep the one it started "
                                     "with)")

    def _snapshot(self, whole=False):
        """{tp: latest} and {tp: earliest} of the subscription now. ``whole`` (a query's start, which has no
        offsets of its own to stay at): a partition whose newest segment changed while this look read it (being
        written again, `LogDirWatcher.deferred`) is looked at again, `START_LOOKS` times in all at most."""
        parts = self.watcher.refresh()
        looks = 1
        while whole and self.watcher.deferred and looks < START_LOOKS:
            parts = self.watcher.refresh()
            looks += 1
        if whole and self.watcher.deferred:
            names = ", ".join(_tp(*tp) for tp in sorted(self.watcher.deferred))
            raise ObjectChangedError(f"kafka-segments: the newest segment of {names} changed each of the {looks} times "
                                     "the query's start looked at it (being written again): start the query again "
                                     "once it is written")
        latest, earliest = {}, {}
        for tp, st in parts.items():
            lat = self.watcher.latest(st)
            if lat is None:
                continue                     # a folder without segments yet
            latest[tp], earliest[tp] = lat, st.earliest
        return latest, earliest

    # Spark's calls
    def initialOffset(self):
        latest, earliest = self._snapshot(whole=True)
        o = self.opts
        if o.starting_ts is not None:
            start = {}
            for tp in sorted(latest):
                ts = o.starting_ts if not isinstance(o.starting_ts, dict) else o.starting_ts.get(tp[0], {}).get(tp[1])
                if ts is None:
                    raise OptionError(f"startingOffsetsByTimestamp does not name {_tp(*tp)}: a stream's starting "
                                      "timestamps must cover every partition of the subscription")
                st = self.watcher.parts[tp]
                off = kafkafmt.offset_for_timestamp(st.part, ts, segments=st.segments)
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
        self._check_schemas()
        latest, earliest = self._snapshot()
        for tp in self.watcher.deferred & start_map.keys():      # (not looked at yet: where the query is)
            latest[tp] = earliest[tp] = start_map[tp]
        if self._available_now:
            if self._target is None:
                self._target = dict(latest)
            latest = {tp: min(v, latest.get(tp, v)) for tp, v in self._target.items() if tp in latest}
        diverged = self._check_marks(start_map)
        for tp, s in start_map.items():
            if tp in latest and latest[tp] < s and tp not in diverged:
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
        self._mark_ends(end)
        self.last_trigger_seconds = time.perf_counter() - t0
        return offsets_to_json(end)

    def _check_marks(self, start):
        """The partitions whose log diverged from what this query read below its start offsets (see
        the module doc): each reported (failOnDataLoss) and, going on, read again from where it
        diverged."""
        out = set()
        for tp, s in start.items():
            seen = self._marks.get(tp)
            st = self.watcher.parts.get(tp)
            if seen is None or seen[0] != s or st is None or not st.segments or st.changed == seen[2]:
                continue              # nothing to compare, or the partition is as it was when marked
            d = find_divergence(st.part, s, seen[1], st.segments)
            if d is None:
                self._marks[tp] = (s, seen[1], st.changed)        # as read, as the partition is now
                continue
            out.add(tp)
            self._fail_or_warn(f"the log of {_tp(*tp)} is no longer what this query read below offset {s}: "
                               f"{d.reason}; offsets {d.offset}..{s - 1} hold other records now"
                               + ("" if d.exact else f" (the records before offset {d.offset} were not compared: "
                                                     "they may differ too)"))
            self._rewind[tp] = (s, d.offset)
            del self._marks[tp]
        return out

    def _mark_ends(self, end):
        """Remember the batch each end offset handed out ends in (checked next trigger)."""
        for tp, e in end.items():
            st = self.watcher.parts.get(tp)
            if st is None or not st.segments:
                continue
            if tp in self._marks and self._marks[tp][0] == e:
                continue
            mark = batch_mark(st.part, e - 1, st.segments) if e > st.earliest else None
            if mark is None:
                self._marks.pop(tp, None)
            else:
                self._marks[tp] = (e, mark, st.changed)

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
            if st is None and tp in self.watcher.deferred and s.get(tp) == until:
                continue                    # (not looked at yet, and nothing to read: see refresh)
            if st is None or not st.segments:
                self._fail_or_warn(f"the folder of {_tp(*tp)} is gone: offsets {s.get(tp, '?')}..{until - 1} "
                                   "cannot be read")
                continue
            frm = s.get(tp)
            again = self._rewind.get(tp)
            if frm is not None and again is not None and again[0] == frm:
                frm = again[1]              # a diverged log (failOnDataLoss=false): its new records there
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
                ranges.append((tp[0], tp[1], st.part, frm, until, per))
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
        for (t, p, part, s, e, per), size in zip(ranges, sizes):
            n = max(1, min(e - s, int(math.ceil(size / share - 1e-9))))
            cuts = [s + (e - s) * i // n for i in range(n + 1)]
            pieces += [((t, p, part, a, b), (b - a) * per) for a, b in zip(cuts, cuts[1:]) if b > a]
        groups = [sorted(g, key=lambda r: (r[0], r[1], r[3])) for g in deal(pieces, k)]
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
        for topic, p, part, start, end in partition.ranges:
            yield from self._read_range(part, start, end, names, target)

    def _read_range(self, part, start, end, names, target):
        o = self.opts
        name = part.name
        try:
            segments = part.list_segments()
        except (FileNotFoundError, kafkafmt.PathNotFoundError):
            segments = []
        if not segments:
            self._fail_or_warn(f"the folder of {name} ({part.url}) is gone: offsets {start}..{end - 1} cannot be read")
            return
        first = part.earliest(segments)
        if first > start:
            self._fail_or_warn(f"offsets {start}..{min(end, first) - 1} of {name} were deleted before they were "
                               f"read (its log start offset is now {first})")
            start = first
            if start >= end:
                return
        report = []
        want_meta = any(n in names for n in BATCH_METADATA_COLUMNS)
        typed = o.typed.open() if o.typed is not None else None
        try:
            options = o.read_options(start_offset=start, end_offset=end, columns=decode_names(names, o.typed))
            for recs in iter_log_dir_with(dataclasses.replace(part, segments=tuple(segments)), options, report=report,
                                          typed=typed):
                if not len(recs):
                    continue
                table = recs.to_arrow(headers="headers" in names, batch_metadata=want_meta,
                                      log_dir=LOG_DIR_COLUMN in names)
                if typed is not None:
                    table = o.typed.conform(table)
                yield from cast_table(table.select(names), target).to_batches()
        except kafkafmt.ValueDecodeError as exc:
            raise kafkafmt.ValueDecodeError(f"{exc.reason} (reading offsets {start}..{end - 1} of {name}) -- set "
                                            "mode=PERMISSIVE to read bad values as null with the reason in "
                                            "valueError / keyError", file=exc.file, position=exc.position,
                                            offset=exc.offset) from None
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

"""Write partition directories exactly as a Kafka broker lays them out.

``<topic>-<partition>/`` holds segments named by their base offset (20 digits): ``.log`` (the
batches), ``.index`` (sparse: relative offset -> byte position, one entry per
``index_interval_bytes`` of log, holding the batch's last offset), ``.timeindex`` (max timestamp
so far -> relative offset), ``.txnindex`` (aborted transactions whose ABORT marker lies in the
segment), plus ``leader-epoch-checkpoint`` and ``partition.metadata``.

Segments roll like the broker's: a batch that would take the segment past ``segment_bytes`` starts
a new segment (a segment always holds at least one batch). Transactions are tracked like the
broker's producer state: an ABORT marker for a producer with an open transaction adds an entry
(producer id, first offset, last offset, last stable offset) to the active segment's .txnindex.

**Segments go to disk as they roll, as a broker's do.** Only the active segment is held in memory
(at most ``segment_bytes`` of batches and 24 bytes a batch for its indexes); when a batch rolls it,
it is written with its indexes and readers see it while the writer goes on. ``flush()`` writes the
active segment's batches so far, ``close()`` the rest. Every file is written through a temporary
file and a rename (`kafkafmt._util.durable`), so a reader or a crash sees a segment's ``.log`` as whole
batches: a crash loses what was appended since the last roll or flush, never more, and never leaves
part of a batch. The order of the files: ``partition.metadata`` and ``leader-epoch-checkpoint``
(when they change) before the segment whose batches need them, as a broker assigns a leader epoch
before it appends (an epoch entry past the log end is what a broker's own crash leaves, and what its
LogLoader truncates); a segment's index files before its first ``.log`` (index files without a
``.log`` are orphans, removed as a broker does), but after a ``.log`` a flush already wrote (an
index never names bytes its ``.log`` lacks). No producer snapshots are written: a broker rebuilds
the producer state from the log when it finds none (no clean-shutdown marker is written either).

**An existing partition folder is continued, never rewritten.** Opening one reads its state as a
broker does at start-up -- the log end offset, each producer's last sequence, the transactions still
open, the leader-epoch history, the topic id -- and new batches go into new segments from the log end
offset on (as after a roll). No byte of an existing segment is touched; ``leader-epoch-checkpoint``
keeps its entries and gains one only when the leader epoch rises. A partition whose end is damaged
(a cut-off or corrupt last batch) is refused: ``kafkafmt recover`` repairs it first. What a killed
writer leaves besides whole segments -- temporary files of the names it writes, index files without
their ``.log`` at or past the log end, leader-epoch entries past the log end -- the next writer
removes (after its checks pass), as a broker's LogLoader does.

**One writer per partition.** A writer holds the partition folder's lock and, in a log dir a broker has
used, the log dir's ``.lock`` as Kafka's ``FileLock`` takes it (`kafkafmt._util.locks`), from before it
reads the folder's state until it is closed; a second writer, or a writer while a broker runs, is
refused (`PartitionLockedError`) before anything changes.
"""
from __future__ import annotations

import os
import uuid
import weakref

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.record import decode, scan_batches
from kafkafmt._util.durable import TMP_SUFFIX, write_atomic
from kafkafmt._util.locks import LOCK_FILE, hold_file, hold_folder, release_file, release_folder
from kafkafmt.record import encode_columns, encode_control, encode_empty_batch, to_columns
from kafkafmt.errors import EncodeError, KafkafmtError, PartitionLockedError
from kafkafmt.log._discovery import list_segments
from kafkafmt.log._framing import scan_range
from kafkafmt.log._names import (LOG_SUFFIX, SEGMENT_DIGITS, SNAPSHOT_SUFFIX, PARTITION_DIR, PARTITION_FILES,
                                 PARTITION_METADATA, LEADER_EPOCH_CHECKPOINT, SIDE_FILE_KINDS, file_kind,
                                 is_segment_file, segment_file_name)
from kafkafmt.log._names import INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX

__all__ = ["LogWriter", "write_log_dir"]

#: the largest offset a segment's indexes can hold, relative to its base offset (LogSegment.shouldRoll)
_MAX_RELATIVE_OFFSET = 0x7FFFFFFF


class _PartitionState:
    """What a broker knows of a partition folder at start-up (LogLoader): where its log ends, each
    producer's next sequence, the transactions still open, the leader-epoch history, the topic id,
    the names of its files, and what a killed writer left behind."""

    __slots__ = ("log_end", "sequences", "open_txns", "epochs", "epochs_on_disk", "topic_id", "files", "empty_tail",
                 "leftovers")

    @classmethod
    def read(cls, folder):
        """The state of an existing partition folder, or None when there is none (or it is empty)."""
        if not os.path.isdir(folder):
            return None
        files = frozenset(os.listdir(folder))
        segments = list_segments(folder)
        if not segments and not files:
            return None
        st = cls()
        st.files = files
        # without segments (all deleted by retention), the newest producer snapshot names the log end
        snapshots = [int(n[:SEGMENT_DIGITS]) for n in files
                     if n.endswith(SNAPSHOT_SUFFIX) and n[:SEGMENT_DIGITS].isdigit()]
        st.log_end = segments[0].base_offset if segments else max(snapshots, default=0)
        st.sequences, st.open_txns = {}, {}
        # an empty newest segment (just rolled) is where the broker would append: it may be replaced
        st.empty_tail = os.path.basename(segments[-1].log) if segments and segments[-1].size == 0 else None
        for seg in segments:
            st.log_end = max(st.log_end, seg.base_offset)
            with seg.open() as f:
                table, info = scan_range(f, 0, f.size, verify_crc=False)
            if info["tail"] is not None or info["error"] is not None:
                why = info["error"]["reason"] if info["error"] is not None else f"a {info['tail']} tail"
                at = int(info["valid_bytes"])
                raise KafkafmtError(f"cannot append to a partition whose log is damaged: {why} after position {at} "
                                    "(run `kafkafmt recover --apply` on it first)", file=seg.url, position=at)
            st._follow(table)
        epochs = os.path.join(folder, LEADER_EPOCH_CHECKPOINT)
        st.epochs, st.epochs_on_disk = [], None
        if os.path.exists(epochs):
            e = sidefiles.read_leader_epoch_checkpoint(epochs)["entries"]
            st.epochs_on_disk = [(int(a), int(b)) for a, b in zip(e["epoch"], e["start_offset"])]
            # an entry starting past the log end was assigned before a batch that never reached the
            # disk: LogLoader truncates it (LeaderEpochFileCache.truncateFromEnd)
            st.epochs = [(a, b) for a, b in st.epochs_on_disk if b <= st.log_end]
        meta = os.path.join(folder, PARTITION_METADATA)
        st.topic_id = sidefiles.read_partition_metadata(meta)["topic_uuid"] if os.path.exists(meta) else None
        st.leftovers = st._leftovers()
        return st

    def _leftovers(self):
        """Files a killed writer leaves: temporary files of the names a writer writes, and index files
        without their .log at or past the log end (LogLoader deletes orphaned index files)."""
        logs = {n for n in self.files if file_kind(n) == "log"}
        out = []
        for name in sorted(self.files):
            if name.endswith(TMP_SUFFIX):
                target = name[:-len(TMP_SUFFIX)]
                if target in PARTITION_FILES or (is_segment_file(target) and file_kind(target) != "producer-snapshot"):
                    out.append(name)
            elif is_segment_file(name) and file_kind(name) in SIDE_FILE_KINDS and int(name[:SEGMENT_DIGITS]) >= self.log_end \
                    and segment_file_name(int(name[:SEGMENT_DIGITS]), LOG_SUFFIX) not in logs:
                out.append(name)
        return out

    def _follow(self, t):
        """Producer state from batch headers, in log order (ProducerStateManager's replay)."""
        if not len(t):
            return
        self.log_end = max(self.log_end, int(t["last_offset"][-1]) + 1)
        pid, seq, base, last = t["producer_id"], t["base_sequence"], t["base_offset"], t["last_offset"]
        txn, ctl = t["is_transactional"], t["is_control"]
        for i in map(int, (pid >= 0).nonzero()[0]):
            p = int(pid[i])
            if ctl[i]:
                self.open_txns.pop(p, None)
                continue
            if seq[i] >= 0:
                self.sequences[p] = (int(seq[i]) + int(last[i] - base[i]) + 1) % (1 << 31)
            if txn[i]:
                self.open_txns.setdefault(p, int(base[i]))


class _Segment:
    """The active segment: its batches (bytes, and size / last offset / max timestamp of each, in
    growable arrays for the indexes: no Python object per batch), its aborted transactions, and how
    much of it a flush put on disk."""

    def __init__(self, base_offset):
        self.base_offset = base_offset
        self.data = bytearray()     # the batches appended by earlier calls
        self.pending = []           # memoryviews into the batches of the append under way
        self.size = 0
        self.aborted = []           # (producer_id, first_offset, last_offset, last_stable_offset)
        self.heads = np.empty((3, 0), np.int64)
        self.count = 0              # batches
        self.on_disk = None         # bytes of the .log on disk (a flush wrote it), None before

    def add(self, view, size, last, ts):
        n = len(size)
        if self.count + n > self.heads.shape[1]:
            grown = np.empty((3, max(64, 2 * self.heads.shape[1], self.count + n)), np.int64)
            grown[:, :self.count] = self.heads[:, :self.count]
            self.heads = grown
        self.heads[:, self.count:self.count + n] = (size, last, ts)
        self.count += n
        self.pending.append(view)
        self.size += len(view)

    def settle(self):
        """Copy the batches of the append under way, so that its bytes can go."""
        for view in self.pending:
            self.data += view
        self.pending = []

    def parts(self):
        return [self.data, *self.pending]

    def last_offset(self):
        return int(self.heads[1, self.count - 1])

    def batches(self):
        """The batch table the indexes are built from (batches contiguous from position 0)."""
        h = self.heads[:, :self.count]
        return {"size": h[0], "last_offset": h[1], "max_timestamp": h[2]}


class LogWriter:
    """Append records and transaction markers to a partition directory; segments are written as
    they roll, `flush()` writes the active one, `close()` the rest.

    Only the active segment is held in memory (about ``segment_bytes``); rolled segments are on
    disk, with their indexes, and readers see them while the writer goes on. A crash (or an
    exception leaving a ``with`` block) loses the records appended since the last roll or `flush()`
    -- the active segment's unwritten batches -- and nothing else: what is on disk is always whole
    batches, a prefix of what was appended, and a new `LogWriter` on the folder continues after it.

    Parameters
    ----------
    path : str or os.PathLike
        The partition folder, ``<topic>-<partition>`` (created if missing).
    segment_bytes : int
        Roll a new ``.log`` segment at this size (Kafka's ``segment.bytes``).
    index_interval_bytes : int
        Bytes between ``.index``/``.timeindex`` entries (Kafka's ``index.interval.bytes``).
    base_offset : int, optional
        The first offset of an empty folder (default 0, or the end of what the folder holds).
    leader_epoch : int, optional
        The partition leader epoch written into every batch and ``leader-epoch-checkpoint``.
    topic_id : optional
        The topic id written into ``partition.metadata``.

    Raises
    ------
    PartitionLockedError
        Another LogWriter (of this process or another) is writing to the folder, or a running broker holds
        its log dir's ``.lock``: two writers would append the same offsets twice. The writer holds both locks
        until `close()` (or an exception leaving its ``with`` block, or it is dropped); a killed process
        holds nothing.

    Examples
    --------
    >>> import kafkafmt
    >>> with kafkafmt.LogWriter("out/orders-0", segment_bytes=1 << 20) as w:
    ...     w.append(values=[b"a", b"b"], timestamps=[1, 2], compression="lz4")
    ...     w.append(values=[b"c"], timestamps=[3], producer_id=7, transactional=True)
    ...     w.append_control("abort", producer_id=7, timestamp=4)
    (0, 1)
    (2, 2)
    3
    >>> len(kafkafmt.read_log_dir("out/orders-0", isolation="read_committed"))
    2

    Rolled segments are readable at once; a flush makes the active segment's batches readable too:

    >>> w = kafkafmt.LogWriter("out/clicks-0", segment_bytes=200)
    >>> for i in range(5):
    ...     _ = w.append(values=[b"click %d" % i] * 3, timestamps=[i] * 3)
    >>> len(kafkafmt.read_log_dir("out/clicks-0")), w.recovery_point
    (12, 12)
    >>> w.flush()
    >>> len(kafkafmt.read_log_dir("out/clicks-0")), w.recovery_point
    (15, 15)
    >>> w.close()
    """

    def __init__(self, path, *, segment_bytes=1 << 30, index_interval_bytes=4096, base_offset=None,
                 leader_epoch=None, topic_id=None):
        self.path = os.fspath(path)
        m = PARTITION_DIR.match(os.path.basename(os.path.normpath(self.path)))
        if not m:
            raise EncodeError(f"a partition directory is named <topic>-<partition>, not {self.path!r}")
        self.topic, self.partition = m.group("topic"), int(m.group("partition"))
        if segment_bytes < 1:
            raise EncodeError("segment_bytes must be positive")
        self.closed = True                  # until the locks are held
        self._created = not os.path.isdir(self.path)
        self._release = _lock_partition(self.path)
        try:
            self._open(segment_bytes, index_interval_bytes, base_offset, leader_epoch, topic_id)
        except BaseException:
            self._release()
            raise
        weakref.finalize(self, self._release)       # a writer dropped without close() lets go of its locks

    def _open(self, segment_bytes, index_interval_bytes, base_offset, leader_epoch, topic_id):
        """Read the partition's state (the locks held) and get ready to append."""
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.open_txns = {}    # producer_id -> first offset of its ongoing transaction
        self.sequences = {}    # producer_id -> next sequence number
        self.epochs = []       # the leader-epoch history already on disk: [(epoch, start offset)]
        self.first_v2_offset = None
        self.closed = False
        state = _PartitionState.read(self.path)
        end = state.log_end if state is not None else 0
        if base_offset is None:
            base_offset = end
        elif base_offset < end:
            raise EncodeError(f"{self.path} holds offsets up to {end - 1}: appending continues at its log end offset "
                              f"{end}, not at base_offset={base_offset} (existing records are never replaced)")
        if state is not None:
            self.open_txns, self.sequences, self.epochs = state.open_txns, state.sequences, state.epochs
            if topic_id is not None and state.topic_id is not None and \
                    sidefiles.encode_partition_metadata(topic_id) != sidefiles.encode_partition_metadata(state.topic_id):
                raise EncodeError(f"{self.path} belongs to topic id {state.topic_id}, not {topic_id}")
            topic_id = state.topic_id if topic_id is None else topic_id
        last_epoch = self.epochs[-1][0] if self.epochs else None
        if leader_epoch is None:
            leader_epoch = last_epoch if last_epoch is not None else 0
        elif last_epoch is not None and leader_epoch < last_epoch:
            raise EncodeError(f"leader_epoch {leader_epoch} is below the partition's latest epoch {last_epoch} "
                              "(leader epochs never go back)")
        self.existing = state.files - {state.empty_tail} if state is not None else frozenset()
        self._epochs_on_disk = state.epochs_on_disk if state is not None else None
        self._metadata_on_disk = PARTITION_METADATA in self.existing
        self.next_offset = base_offset
        self._recovery_point = base_offset
        self._segments_written = 0
        self.leader_epoch = leader_epoch
        # deterministic by default, so generated directories are reproducible
        self.topic_id = topic_id if topic_id is not None else uuid.uuid5(uuid.NAMESPACE_URL, f"kafkafmt:{self.topic}")
        self._active = _Segment(base_offset)
        for name in state.leftovers if state is not None else ():
            os.remove(os.path.join(self.path, name))

    @property
    def recovery_point(self):
        """The first offset not yet on disk (Kafka's recovery point): every record appended below
        it survives a crash; those from it on are in memory until the next roll, `flush()` or
        `close()`."""
        return self._recovery_point

    # --- appending ------------------------------------------------------------------------------
    def _add(self, data: bytes):
        if not data:
            return
        table, _ = scan_batches(data, verify_crc=None)      # headers only: the writer's own output
        if (table.magic < 2).any():
            # a v0/v1 wrapper's max timestamp is that of its inner messages: decoded, not in a header
            table = decode(data, verify_crc=None, keys=False, values=False, headers=False).batches
        if self.first_v2_offset is None and (table.magic == 2).any():
            self.first_v2_offset = int(table.base_offset[np.flatnonzero(table.magic == 2)[0]])  # leader epochs: v2
        size, start, first, last, ts = (table.size, table.position, table.base_offset, table.last_offset,
                                        table.max_timestamp)
        end = start + size
        view = memoryview(data)
        i, n = 0, len(table)
        while i < n:
            seg = self._active
            if not seg.size:
                seg.base_offset = int(first[i])
            # roll like the broker: when the segment would grow past segment_bytes, or its index could
            # not hold a batch's offset relative to the base (LogSegment.shouldRoll)
            j = min(int(np.searchsorted(end, start[i] + self.segment_bytes - seg.size, side="right")),
                    i + int(np.searchsorted(last[i:] - seg.base_offset, _MAX_RELATIVE_OFFSET, side="right")))
            if j <= i:
                if seg.size:
                    self._roll()
                    continue
                j = i + 1                  # a segment always holds at least one batch
            seg.add(view[start[i]:end[j - 1]], size[i:j], last[i:j], ts[i:j])
            i = j
        self._active.settle()

    def append(self, records=None, *, keys=None, values=None, timestamps=None, headers=None, offsets=None,
               magic=2, compression=None, compression_level=None, batch_size=16384, max_records=None,
               timestamp_type="CreateTime", log_append_time=None, producer_id=-1, producer_epoch=0,
               transactional=False):
        """Append records (as `kafkafmt.encode` takes them) at the next offsets; returns (first, last)
        offset. With producer_id >= 0 the batches carry that producer's sequence numbers; with
        transactional=True they open (or continue) that producer's transaction. Segments that roll
        are written before it returns."""
        self._check_open()
        cols = to_columns(records, keys=keys, values=values, timestamps=timestamps, headers=headers,
                          offsets=offsets)
        if cols.n == 0:
            return None
        if cols.offset is not None and cols.offset[0] < self.next_offset:
            raise EncodeError(f"offsets must increase: {cols.offset[0]} < next offset {self.next_offset}")
        if transactional and producer_id < 0:
            raise EncodeError("a transactional append needs a producer_id")
        seq = -1
        if producer_id >= 0:
            seq = self.sequences.get(producer_id, 0)
        data = encode_columns(cols, magic=magic, compression=compression, compression_level=compression_level,
                              batch_size=batch_size, max_records=max_records, base_offset=self.next_offset,
                              timestamp_type=timestamp_type, log_append_time=log_append_time,
                              producer_id=producer_id, producer_epoch=producer_epoch if producer_id >= 0 else -1,
                              base_sequence=seq, transactional=transactional,
                              partition_leader_epoch=self.leader_epoch if magic == 2 else -1)
        if producer_id >= 0:
            self.sequences[producer_id] = (seq + cols.n) % (1 << 31)
        first, last = int(cols.offset[0]), int(cols.offset[-1])
        if transactional:
            self.open_txns.setdefault(producer_id, first)
        self._add(data)
        self.next_offset = last + 1
        return first, last

    def append_empty_batch(self, *, last_offset, timestamp, producer_id=-1, producer_epoch=-1):
        """Append a batch without records ending at `last_offset` (what compaction leaves behind)."""
        self._check_open()
        if last_offset < self.next_offset:
            raise EncodeError(f"last_offset {last_offset} < next offset {self.next_offset}")
        self._add(encode_empty_batch(base_offset=last_offset, last_offset=last_offset, timestamp=timestamp,
                                     producer_id=producer_id, producer_epoch=producer_epoch,
                                     partition_leader_epoch=self.leader_epoch))
        self.next_offset = last_offset + 1

    def append_control(self, kind, *, producer_id, producer_epoch=0, coordinator_epoch=0, timestamp=None):
        """Append a COMMIT or ABORT marker ending `producer_id`'s transaction; returns its offset."""
        self._check_open()
        offset = self.next_offset
        data = encode_control(kind, offset=offset, producer_id=producer_id, producer_epoch=producer_epoch,
                              coordinator_epoch=coordinator_epoch, timestamp=timestamp,
                              partition_leader_epoch=self.leader_epoch)
        self._add(data)
        first = self.open_txns.pop(producer_id, None)
        if str(kind).lower() == "abort" and first is not None:
            # Kafka's ProducerStateManager.lastStableOffset: the first offset of the next
            # transaction still open, else just past this marker
            others = [f for f in self.open_txns.values()]
            lso = min(others) if others else offset + 1
            self._active.aborted.append((producer_id, first, offset, lso))
        self.next_offset = offset + 1
        return offset

    # --- writing out ----------------------------------------------------------------------------
    def _check_open(self):
        if self.closed:
            raise EncodeError("this LogWriter is closed")

    def _write_partition_files(self):
        """partition.metadata and leader-epoch-checkpoint, when they are missing or change, before a
        segment needs them. Kafka assigns leader epochs to v2 batches only: an entry starts at the
        first of them under a new epoch, after the history already there."""
        os.makedirs(self.path, exist_ok=True)
        if not self._metadata_on_disk:
            sidefiles.write_partition_metadata(os.path.join(self.path, PARTITION_METADATA), self.topic_id)
            self._metadata_on_disk = True
        epochs = list(self.epochs)
        if self.first_v2_offset is not None and (not epochs or self.leader_epoch > epochs[-1][0]):
            epochs.append((self.leader_epoch, self.first_v2_offset))
        if epochs != self._epochs_on_disk:
            sidefiles.write_leader_epoch_checkpoint(os.path.join(self.path, LEADER_EPOCH_CHECKPOINT), epochs)
            self._epochs_on_disk = epochs

    def _write_segment(self, seg, rolled):
        """The segment's files: index files before a new .log (the .log's rename is what makes the
        segment part of the partition; index files alone are orphans), after a .log a flush wrote
        (an index then never names bytes its .log lacks)."""
        self._write_partition_files()
        base = seg.base_offset
        name = segment_file_name(base, LOG_SUFFIX)
        if seg.on_disk is None and name in self.existing:   # (cannot happen: segments start at the log end)
            raise EncodeError(f"{os.path.join(self.path, name)} already exists")
        index, timeindex = sidefiles.build_index_entries(seg.batches(), self.index_interval_bytes, rolled=rolled)

        def sides():
            sidefiles.write_index(os.path.join(self.path, segment_file_name(base, INDEX_SUFFIX)), index, base)
            sidefiles.write_timeindex(os.path.join(self.path, segment_file_name(base, TIMEINDEX_SUFFIX)), timeindex, base)
            if seg.aborted:
                sidefiles.write_txnindex(os.path.join(self.path, segment_file_name(base, TXNINDEX_SUFFIX)), seg.aborted)

        if seg.on_disk is None:
            sides()
        if seg.on_disk != seg.size:
            write_atomic(os.path.join(self.path, name), seg.parts())
        if seg.on_disk is not None:
            sides()
        seg.on_disk = seg.size
        self._segments_written += 1
        if seg.count:
            self._recovery_point = seg.last_offset() + 1

    def _roll(self):
        """Write the full active segment (as rolled: its time index ends with its largest timestamp)
        and start the next one."""
        self._write_segment(self._active, rolled=True)
        self._active = _Segment(self.next_offset)

    def flush(self):
        """Write the active segment's batches appended so far (with its indexes, as a broker's open
        segment: without the time index's final entry), so that they survive a crash and readers
        see them.

        Each flush writes the active segment whole again (through a temporary file and a rename, so
        a reader or a crash never sees part of a batch): it costs up to ``segment_bytes`` of writing.
        Nothing is written when nothing was appended since the last roll or flush.

        Examples
        --------
        >>> import kafkafmt
        >>> w = kafkafmt.LogWriter("out/events-0")
        >>> w.append(values=[b"a", b"b"], timestamps=[1, 2])
        (0, 1)
        >>> w.recovery_point
        0
        >>> w.flush()
        >>> w.recovery_point, kafkafmt.read_log_dir("out/events-0").value.to_pylist()
        (2, [b'a', b'b'])
        >>> w.close()
        """
        self._check_open()
        seg = self._active
        if seg.size and seg.on_disk != seg.size:
            self._write_segment(seg, rolled=False)

    def close(self):
        """Write the active segment with its indexes (as after a clean shutdown: its time index ends
        with its largest timestamp), and the partition's checkpoint files; then let go of the locks."""
        if self.closed:
            return
        self.closed = True
        try:
            seg = self._active
            if seg.size or (not self._segments_written and not self.existing):
                # (a new partition folder gets one empty segment, as a broker creates)
                self._write_segment(seg, rolled=True)
            else:
                self._write_partition_files()
        finally:
            self._active = None
            self._release()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:                               # as a crash: what was not written is lost, the locks go
            self.closed = True
            self._release()
            if self._created:
                try:
                    os.rmdir(self.path)         # the folder made to lock it, when nothing reached it
                except OSError:
                    pass


def _lock_partition(folder):
    """Take the locks of a writer on a partition folder, or refuse (`PartitionLockedError`) before changing
    anything: the log dir's ``.lock`` as Kafka's ``FileLock`` takes it, when the folder is in a log dir a
    broker has used (its ``.lock`` or ``meta.properties``; a missing ``.lock`` is created, as the broker
    creates it) -- shared by the writers of this process, as by one broker -- and the folder's own lock
    (created if missing: a writer killed before it wrote anything leaves it empty), which one writer holds.
    Returns the function that lets go of both (once)."""
    parent = os.path.dirname(os.path.abspath(folder))
    lock = os.path.join(parent, LOCK_FILE)
    if os.path.exists(lock) or os.path.exists(os.path.join(parent, "meta.properties")):
        if not hold_file(lock, create=True):
            raise PartitionLockedError(f"{lock} is locked by another process (a running broker?): a LogWriter does "
                                       f"not append to a log dir a broker holds", file=lock)
    else:
        lock = None
    try:
        os.makedirs(folder, exist_ok=True)
        fd = hold_folder(folder)
    except BaseException:
        if lock is not None:
            release_file(lock)
        raise
    if fd is None:
        if lock is not None:
            release_file(lock)
        raise PartitionLockedError(f"{folder} is being written by another LogWriter (in this process or another): "
                                   f"two writers on one partition would write the same offsets twice", file=folder)
    held = [fd, lock]

    def release():
        fd, lock = held
        held[:] = [None, None]
        if fd is not None:
            release_folder(fd)
        if lock is not None:
            release_file(lock)

    return release


def write_log_dir(path, records=None, *, segment_bytes=1 << 30, index_interval_bytes=4096, base_offset=None,
                  leader_epoch=None, topic_id=None, **append_kwargs):
    """Write `records` (anything `kafkafmt.encode` takes) as a partition directory, or append them
    to an existing one (see `LogWriter`).

    Parameters
    ----------
    path : str or os.PathLike
        The partition folder, ``<topic>-<partition>`` (created if missing).
    records : optional
        Anything `kafkafmt.encode` takes (or give ``keys=``, ``values=``, ... instead).
    segment_bytes, index_interval_bytes, base_offset, leader_epoch, topic_id : optional
        As `LogWriter` takes them.
    **append_kwargs
        `LogWriter.append`'s (magic, compression, batch_size, timestamp_type, producer_id,
        transactional...).

    Returns
    -------
    LogWriter
        The closed writer.

    Raises
    ------
    KafkafmtError
        The existing partition's log is damaged (``kafkafmt recover`` repairs it first).

    Examples
    --------
    A sample partition written again in small segments, then one more record appended:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")
    >>> _ = kafkafmt.write_log_dir("out/payments-0", recs, segment_bytes=1024, batch_size=512)
    >>> [seg.base_offset for seg in kafkafmt.list_segments("out/payments-0")]
    [0, 15, 31, 47, 63, 80, 95, 110]
    >>> _ = kafkafmt.write_log_dir("out/payments-0", values=[b"one more"], timestamps=[1767225700000])
    >>> kafkafmt.read_log_dir("out/payments-0").offset[-3:]
    array([120, 121, 122])
    """
    w = LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes,
                  base_offset=base_offset, leader_epoch=leader_epoch, topic_id=topic_id)
    w.append(records, **append_kwargs)
    w.close()
    return w

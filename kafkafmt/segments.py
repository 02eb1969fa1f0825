"""The segment layer: what a broker's ``log.dirs`` hold, named and read the way Kafka does.

Everything above the decoder that knows about files lives here, in one place:

* **Names.** ``<log.dir>/<topic>-<partition>/<20-digit base offset>.log`` plus side files
  (``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``), ``partition.metadata`` and
  ``leader-epoch-checkpoint``; broker leftovers (``.deleted``/``.cleaned``/``.swap`` files,
  ``-delete``/``-future``/``-stray`` folders). `file_kind`, `segment_base`, `partition_of_name`.
* **Discovery.** A folder is a *partition folder* when its name is ``<topic>-<partition>`` and it
  holds segment files (or, empty, sits beside other partition folders in a log dir). A folder that
  holds partition folders or ``meta.properties`` is a *log dir*, whatever its own name -- so
  ``kafka-logs-1`` (several brokers on one host) is a log dir, not partition 1 of a topic
  ``kafka-logs``. `find_log_dirs` finds log dirs at any depth below a root.
* **Segments.** `Segment`: a ``.log`` with its side files; index lookups as Kafka does them
  (``OffsetIndex.lookup``, ``TimeIndex.lookup``), every entry used checked against the batch it
  names; a missing or insane index falls back to a scan, with a `KafkafmtWarning` and a report entry.
* **Reading.** `read_range` decodes a byte range of a segment, strictly or salvaging (skipping each
  corrupt stretch, resynchronizing on the next entry whose CRC verifies, and reporting it), and
  checks that batch offsets increase -- the base offset is outside the v2 CRC, so a damaged one is
  found by its neighbours. `read_segment` reads one whole file, either way.
* **Transactions.** `transactions` (aborted ranges and the last stable offset) and
  `committed_mask` (what a read_committed consumer keeps).
* **Reports.** `ReportEntry`: what was skipped or fell back, typed (`ReportKind`).

Every byte read from a log dir goes through `open_file` (one storage interface; local files are
memory-mapped).
"""
from __future__ import annotations

import dataclasses
import enum
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np

from kafkafmt import sidefiles
from kafkafmt.decoder import DecodeOptions, decode, next_entry, scan_batches
from kafkafmt.errors import (CorruptRecordError, KafkafmtError, KafkafmtWarning, NotALogDirError,
                             PathNotFoundError, StorageError)
from kafkafmt.storage import LocalStorage
from kafkafmt.times import to_millis

__all__ = [
    "PARTITION_DIR", "SEGMENT_LOG", "LEFTOVER_SUFFIXES", "DEFAULT_INDEX_INTERVAL",
    "segment_file_name", "segment_base", "log_name_of", "partition_of_name", "is_leftover_file", "is_leftover_dir", "file_kind",
    "folder_kind", "find_log_dirs", "list_partitions", "list_segments", "Segment", "open_file", "window",
    "entry_size_at", "scan_range", "LOCAL",
    "ReportKind", "ReportEntry", "read_range", "offset_for_timestamp", "transactions",
    "committed_mask", "Partition", "read_segment", "not_kafka_reason",
]

# ----------------------------------------------------------------------------------------------
# names

#: a partition folder: ``<topic>-<partition>`` (topic names may hold dashes and dots)
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
#: a segment's log file
SEGMENT_LOG = re.compile(r"^(?P<base>\d{20})\.log$")
#: any file of a segment: ``<base>.<suffix>``
_SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
#: suffixes the broker appends to files it is deleting, cleaning or swapping in
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap")
_LEFTOVER_FILE = re.compile(r"^\d{20}\.(log|index|timeindex|txnindex|snapshot)\.(deleted|cleaned|swap)$|"
                            r"^\d{20}\.(cleaned|swap|deleted)$")
#: partition folders being deleted (``<tp>.<uuid>-delete``), moved (``-future``) or left stray
_LEFTOVER_DIR = re.compile(r".*-(delete|future|stray)$")
#: files a broker keeps inside a partition folder besides segments
_PARTITION_FILES = ("partition.metadata", "leader-epoch-checkpoint")
DEFAULT_INDEX_INTERVAL = 4096   # Kafka's index.interval.bytes


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for (42, ".log")."""
    return f"{base_offset:020d}{suffix}"


def log_name_of(path):
    """The ``.log`` file name of the segment a file belongs to (``…42.index`` -> ``…42.log``), by
    Kafka's rule for a segment file's base offset (the digits before the first ``.``); None when
    the name has none."""
    try:
        return segment_file_name(sidefiles.offset_from_file_name(path), ".log")
    except ValueError:
        return None


def segment_base(path):
    """Base offset of a ``<20 digits>.log`` file, else None."""
    m = SEGMENT_LOG.match(os.path.basename(os.fspath(path)))
    return int(m.group("base")) if m else None


def partition_of_name(name):
    """(topic, partition) for a folder name ``<topic>-<partition>``; None otherwise and for the
    broker's leftover folders."""
    name = os.path.basename(os.path.normpath(os.fspath(name)))
    m = PARTITION_DIR.match(name)
    if not m or _LEFTOVER_DIR.match(name):
        return None
    return m.group("topic"), int(m.group("partition"))


def is_leftover_file(path) -> bool:
    """A file the broker is deleting, cleaning or swapping in (``.deleted``/``.cleaned``/``.swap``)."""
    return os.path.basename(os.fspath(path)).endswith(LEFTOVER_SUFFIXES)


def is_leftover_dir(path) -> bool:
    """A partition folder being deleted, moved to another log dir, or left stray."""
    return _LEFTOVER_DIR.match(os.path.basename(os.path.normpath(os.fspath(path)))) is not None


def file_kind(path):
    """What a file is, from its name (as Kafka decides by suffix): log, index, timeindex, txnindex,
    producer-snapshot, kraft-snapshot, leader-epoch, partition-metadata, offset-checkpoint,
    quorum-state, meta-properties; None when unknown. Broker leftovers are classified by the name
    before their leftover suffix."""
    name = os.path.basename(os.fspath(path))
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    if name.endswith(".log") or name.endswith(".log.bin"):
        return "log"
    for suffix, kind in ((".index", "index"), (".timeindex", "timeindex"), (".txnindex", "txnindex"),
                         (".snapshot", "producer-snapshot"), (".checkpoint", "kraft-snapshot")):
        if name.endswith(suffix):
            return kind
    if name == "leader-epoch-checkpoint":
        return "leader-epoch"
    if name == "partition.metadata":
        return "partition-metadata"
    if name.endswith("-checkpoint"):
        return "offset-checkpoint"
    if name == "quorum-state":
        return "quorum-state"
    if name == "meta.properties":
        return "meta-properties"
    return None


# ----------------------------------------------------------------------------------------------
# reports

class ReportKind(enum.Enum):
    CORRUPT = "corrupt"                # a corrupt byte range, skipped (salvage)
    TRUNCATED = "truncated"            # a final batch cut short
    ZEROS = "zeros"                    # a zero-filled (preallocated) tail
    GAP = "gap"                        # offsets missing between a partition's places (tiered and local)
    LEFTOVER = "leftover"              # a broker leftover file or folder, skipped
    INDEX_FALLBACK = "index_fallback"  # an index not used (missing, insane, wrong): scanned instead


@dataclass(frozen=True)
class ReportEntry:
    """Something skipped or read in a degraded way. ``start``/``end``: the byte range in ``file``
    (None for a whole file or folder); ``offset``: the batch's offset when known. Reads also as a
    mapping (``entry["start"]``, ``entry.get("reason")``)."""
    kind: ReportKind
    file: str
    message: str
    start: object = None
    end: object = None
    offset: object = None

    @property
    def reason(self):
        return self.message

    @property
    def is_damage(self):
        """A corrupt range or a truncated tail: data that could not be read."""
        return self.kind in (ReportKind.CORRUPT, ReportKind.TRUNCATED)

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        return getattr(self, key, default)

    def __contains__(self, key):
        return hasattr(self, key)


def _fallback(report, file, why):
    warnings.warn(f"{file}: {why}; scanning the segment instead", KafkafmtWarning, stacklevel=4)
    report.append(ReportEntry(ReportKind.INDEX_FALLBACK, file, why + "; scanned instead"))


def _tail_entry(file, recs, end):
    if recs.tail == "truncated":
        return ReportEntry(ReportKind.TRUNCATED, file, "truncated final batch", recs.valid_bytes, end)
    return ReportEntry(ReportKind.ZEROS, file, "zero-filled tail", recs.valid_bytes, end)


# ----------------------------------------------------------------------------------------------
# storage: every byte read from a log dir goes through a kafkafmt.storage Storage and its blobs

LOCAL = LocalStorage()
_PEEK_BYTES = 17      # an entry's framing and magic: enough to judge the batch after a range


def open_file(path, storage=None, size=None, version=None):
    """Open a file of a log dir for reading: a `kafkafmt.storage` Blob (``size``, ``read``,
    ``view`` -- the whole file as NumPy uint8 for local files, memory-mapped --, ``release``,
    ``close``); ``size`` and ``version`` as the listing gave them pin what is read."""
    return (storage or LOCAL).open(path if storage is not None else os.fspath(path), size=size, version=version)


def window(f, start, stop):
    """(array, base): the bytes [start, stop) of an open blob as NumPy uint8, with the position of
    array[0]. A local file gives its whole map (base 0, no copy); a remote one the range, fetched."""
    v = f.view()
    if v is not None:
        return v, 0
    start = max(0, min(int(start), f.size))
    stop = min(max(int(stop), start), f.size)
    return np.frombuffer(f.read(start, stop), np.uint8), start


def entry_size_at(f, pos):
    """The size field of the entry at pos (-1 when fewer than 12 bytes are left)."""
    if pos + 12 > f.size:
        return -1
    buf, base = window(f, pos, pos + 12)
    return int.from_bytes(buf[pos - base + 8:pos - base + 12].tobytes(), "big", signed=True)


def scan_range(f, start, stop, verify_crc=None):
    """The batch headers of [start, stop) of an open blob (positions in the file)."""
    buf, base = window(f, start, stop)
    t, info = scan_batches(buf, verify_crc=verify_crc, start=start - base, stop=stop - base)
    if base:
        t = t.with_column("position", t["position"] + base)
    return t, info


def _listing(path, storage):
    """Entries of a folder (kafkafmt.storage.Entry: name, path, size, is_dir); errors name it."""
    storage = storage or LOCAL
    try:
        return storage.list(path)
    except PathNotFoundError:
        raise PathNotFoundError(f"no such file or directory: {storage.url(path)}", file=storage.url(path)) from None
    except StorageError as exc:
        if not storage.exists(path):
            raise PathNotFoundError(f"no such file or directory: {storage.url(path)}",
                                    file=storage.url(path)) from None
        if not storage.isdir(path):
            raise NotALogDirError(f"not a directory: {storage.url(path)}", file=storage.url(path)) from None
        raise exc


# ----------------------------------------------------------------------------------------------
# discovery

def _holds_segment_files(names):
    return any(_SEGMENT_FILE.match(n) or n in _PARTITION_FILES or _LEFTOVER_FILE.match(n) for n in names)


def folder_kind(path, entries=None, storage=None):
    """"partition", "log_dir" or None for a folder (see the module docstring for the rules)."""
    entries = _listing(path, storage) if entries is None else entries
    names = [e.name for e in entries]
    if "meta.properties" in names:
        return "log_dir"
    subdirs = [e for e in entries if e.is_dir]
    if partition_of_name(_name(path, storage)) is not None and _holds_segment_files(names) and not any(
            partition_of_name(d.name) is not None for d in subdirs):
        return "partition"
    for d in subdirs:
        if partition_of_name(d.name) is not None and _holds_segment_files(
                [e.name for e in _listing(d.path, storage)]):
            return "log_dir"
    if any(is_leftover_dir(d.name) for d in subdirs):
        return "log_dir"
    return None


def _name(path, storage):
    return (storage or LOCAL).name(path)


def _check_dir(root, storage):
    storage = storage or LOCAL
    if not storage.exists(root):
        raise PathNotFoundError(f"no such file or directory: {storage.url(root)}", file=storage.url(root))
    if not storage.isdir(root):
        raise NotALogDirError(f"not a log dir (a directory holding <topic>-<partition> folders): "
                              f"{storage.url(root)}", file=storage.url(root))


def find_log_dirs(root, max_depth=8, storage=None):
    """Every log dir at or below ``root`` (any depth up to max_depth), sorted. A partition folder
    given as root is not a log dir (see `list_partitions`)."""
    root = os.fspath(root) if storage is None else root
    _check_dir(root, storage)
    found = []

    def walk(path, depth):
        entries = _listing(path, storage)
        kind = folder_kind(path, entries, storage)
        if kind == "log_dir":
            found.append(path)
        if kind == "partition" or depth >= max_depth:
            return
        for e in entries:
            if e.name.startswith(".") or not e.is_dir or (storage is None and os.path.islink(e.path) and depth > 0):
                continue
            if kind == "log_dir" and (partition_of_name(e.name) is not None or is_leftover_dir(e.name)):
                continue
            walk(e.path, depth + 1)

    walk(os.path.normpath(root) if storage is None else root, 0)
    return sorted(found)


@dataclass(frozen=True)
class Partition:
    """A partition folder; unpacks as (topic, partition, folder)."""
    topic: str
    partition: int
    folder: str
    log_dir: object = None   # the log dir holding it (None for a partition folder given alone)
    storage: object = None   # where it is (None: the local disk)
    segments: object = None  # its segments when known in advance (tiered uploads, merged places)

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"

    def __iter__(self):
        return iter((self.topic, self.partition, self.folder))

    @property
    def url(self):
        return (self.storage or LOCAL).url(self.folder)

    @property
    def log_dir_url(self):
        """The log dir it was found in (path or URL; its parent folder when given alone)."""
        st = self.storage or LOCAL
        if self.log_dir is not None:
            return st.url(self.log_dir)
        return st.url(st.parent(self.folder if self.storage is not None else os.path.abspath(self.folder)))

    def list_segments(self, report=None):
        """Its segments in offset order."""
        if self.segments is not None:
            return list(self.segments)
        return list_segments(self.folder, report, self.storage)


def list_partitions(log_dir, topics=None, partitions=None, report=None, storage=None):
    """The partition folders of a log dir as `Partition`s (they unpack as (topic, partition,
    folder)), sorted; leftover folders (``-delete``/``-future``/``-stray``) are named in `report`.
    A partition folder given as ``log_dir`` lists itself."""
    log_dir = os.path.normpath(os.fspath(log_dir)) if storage is None else log_dir
    entries = _listing(log_dir, storage)
    topics = None if topics is None else set([topics] if isinstance(topics, str) else topics)
    partitions = None if partitions is None else set([partitions] if isinstance(partitions, int) else partitions)

    def wanted(t, p):
        return (topics is None or t in topics) and (partitions is None or p in partitions)

    if folder_kind(log_dir, entries, storage) == "partition":
        t, p = partition_of_name(_name(log_dir, storage))
        return [Partition(t, p, log_dir, None, storage)] if wanted(t, p) else []
    found = []
    for e in entries:
        if not e.is_dir:
            continue
        if is_leftover_dir(e.name):
            if report is not None:
                report.append(ReportEntry(ReportKind.LEFTOVER, (storage or LOCAL).url(e.path),
                                          "partition folder being deleted, moved or left stray "
                                          "(-delete/-future/-stray) skipped"))
            continue
        tp = partition_of_name(e.name)
        if tp is None:
            continue
        sub = _listing(e.path, storage)
        # a partition folder holds segment files, or (empty) sits in a log dir beside others
        if sub and not _holds_segment_files([s.name for s in sub]):
            continue
        if wanted(*tp):
            found.append(Partition(tp[0], tp[1], e.path, log_dir, storage))
    found.sort(key=lambda t: (t.topic, t.partition))
    return found


def list_segments(folder, report=None, storage=None):
    """The segments of a partition folder in offset order (sizes and side files from one
    listing); leftovers are named in `report`."""
    folder = os.fspath(folder) if storage is None else folder
    entries = _listing(folder, storage)
    names = {e.name: e for e in entries if not e.is_dir}
    segments = []
    for name, e in names.items():
        m = SEGMENT_LOG.match(name)
        if m:
            stem = name[:-len(".log")]
            present = {k for k in ("index", "timeindex", "txnindex") if f"{stem}.{k}" in names}
            segments.append(Segment(folder, int(m.group("base")), e.size, storage=storage, present=present,
                                    version=e.version))
        elif _LEFTOVER_FILE.match(name) and report is not None:
            report.append(ReportEntry(ReportKind.LEFTOVER, (storage or LOCAL).url(e.path),
                                      "broker leftover (deleted/cleaned/swap file) skipped"))
    segments.sort(key=lambda s: s.base_offset)
    return segments


# ----------------------------------------------------------------------------------------------
# segments and their indexes

class Segment:
    """One segment of a partition: its files, base offset and size; index lookups.

    ``storage`` is where it lives (None: the local disk); ``present`` the side-file kinds its
    listing showed (None: ask the storage); ``remote`` a `kafkafmt.tiered.RemoteSegment` when it
    is a tiered-storage upload (its files are named by that layout)."""

    __slots__ = ("folder", "base_offset", "log", "index", "timeindex", "txnindex", "size", "storage", "present",
                 "remote", "keys", "version", "_cache")

    def __init__(self, folder, base_offset, size=None, *, storage=None, present=None, remote=None, keys=None,
                 version=None):
        st = storage or LOCAL
        folder = os.fspath(folder) if storage is None else folder
        self.folder = folder
        self.base_offset = base_offset
        self.storage = storage
        self.present = present
        self.remote = remote
        self.keys = keys          # private keys for encrypted tiered uploads ({key id: PEM})
        self.version = version    # the log object's version as listed (object stores): reads stay on it
        if remote is not None:
            self.log, self.index = remote.log, remote.index
            self.timeindex, self.txnindex = remote.timeindex, remote.txnindex
            self.size = remote.original_size if size is None else size
        else:
            stem = st.join(folder, segment_file_name(base_offset, ""))
            self.log = stem + ".log"
            self.index = stem + ".index"
            self.timeindex = stem + ".timeindex"
            self.txnindex = stem + ".txnindex"
            self.size = st.size(self.log) if size is None else size
        self._cache = {}     # index entries read (once per read, so a fallback is reported once)

    @classmethod
    def of_file(cls, log, storage=None):
        """The segment a ``<base>.log`` path names (base 0 for other names)."""
        st = storage or LOCAL
        log = os.fspath(log) if storage is None else log
        base = segment_base(st.name(log))
        seg = cls(st.parent(log) or ".", 0 if base is None else base, st.size(log), storage=storage,
                  present=None if base is not None else set())
        if base is None:    # not a segment's name: no side files
            stem = log[:-len(".log")] if log.endswith(".log") else log
            seg.index, seg.timeindex, seg.txnindex = stem + ".index", stem + ".timeindex", stem + ".txnindex"
        seg.log = log
        return seg

    @classmethod
    def of_remote(cls, remote, storage, keys=None):
        """A tiered-storage upload (`kafkafmt.tiered.RemoteSegment`) as a segment."""
        return cls(remote.files.get("log"), remote.base_offset, storage=storage, remote=remote, keys=keys)

    def __repr__(self):
        return f"<Segment {self.url} {self.size} bytes>"

    @property
    def url(self):
        """The log file's path or URL (for messages)."""
        return (self.storage or LOCAL).url(self.log)

    def open(self):
        if self.remote is not None:
            from kafkafmt.tiered import open_remote_log

            return open_remote_log(self.storage or LOCAL, self.remote, keys=self.keys)
        return open_file(self.log, self.storage, self.size, self.version)

    def has(self, kind):
        """Does the segment have this side file ("index", "timeindex", "txnindex")?"""
        if self.remote is not None:
            if self.remote.layout == "kafka":
                return kind in self.remote.files
            from kafkafmt.tiered import read_aiven_manifest

            return kind in read_aiven_manifest(self.storage or LOCAL, self.remote).indexes
        if self.present is not None:
            return kind in self.present
        return (self.storage or LOCAL).exists(getattr(self, kind))

    def side_bytes(self, kind):
        """The bytes of a side file ("index", "timeindex", "txnindex"), or None without one."""
        if not self.has(kind):
            return None
        if self.remote is not None:
            from kafkafmt.tiered import read_remote_side_file

            return read_remote_side_file(self.storage or LOCAL, self.remote, kind, keys=self.keys)
        return (self.storage or LOCAL).read_bytes(getattr(self, kind))

    def side_url(self, kind):
        return (self.storage or LOCAL).url(getattr(self, kind) or f"{self.log} ({kind})")

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
            if self.size:
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
        head = _batch_at(f, pos) if pos < f.size else None
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


def _batch_at(f, position):
    """(last offset, max timestamp) of the entry at a byte position, or None if none starts there."""
    size = entry_size_at(f, position)
    if size <= 0 or position + 12 + size > f.size:
        return None
    t, _ = scan_range(f, position, position + 12 + size)
    if not len(t) or int(t["position"][0]) != position:
        return None
    return int(t["last_offset"][0]), int(t["max_timestamp"][0])


def offset_for_timestamp(folder, timestamp, report=None, *, errors="strict", segments=None):
    """Kafka's ListOffsets for a timestamp (ms, or any form `kafkafmt.times.to_millis` reads): the
    first offset whose record timestamp is >= it, or None when no record is that recent."""
    timestamp = to_millis(timestamp, "timestamp")
    report = [] if report is None else report
    segments = list_segments(folder, report) if segments is None else segments
    for k, seg in enumerate(segments):
        with seg.open() as f:
            hit = seg.first_offset_at_or_after(f, timestamp, report, k == len(segments) - 1, errors)
        if hit is not None:
            return hit
    return None


# ----------------------------------------------------------------------------------------------
# reading byte ranges

def _checked_decode(f, path, start, stop, options, check, after, following, peek=True):
    """decode() of [start, stop) of a file -- the one place where a log dir's bytes are decoded;
    for a segment (check), with the batch-offset sequence checked against the batch before
    (`after`: its last offset) and the entries after (peeked unless peek is False, else
    `following`). Positions in the result and in errors are the file's, whether the bytes came as
    a map or as a fetched range."""
    buf, base = window(f, start, stop + (_PEEK_BYTES if peek else 0))
    if not peek:
        buf = buf[:stop - base]      # (a local file's window is the whole map)
    try:
        recs = decode(buf, start=start - base, stop=stop - base, file=path, check_offsets=check, after_offset=after,
                      next_offset=following, **options.decode_kwargs())
    except KafkafmtError as exc:
        if not base:
            raise
        moved = type(exc)(exc.reason, file=exc.file, position=None if exc.position is None else exc.position + base,
                          offset=exc.offset)
        moved.batch_position = None if exc.batch_position is None else exc.batch_position + base
        raise moved from exc
    if base:
        recs = recs.replace(batches=recs.batches.with_column("position", recs.batches.position + base),
                            valid_bytes=recs.valid_bytes + base)
    return recs


def read_range(seg, f, start, stop, report, *, options=None, errors="strict", limit=None, after=None,
               following=None):
    """Decode the batches in [start, stop) of a segment's open file. Returns (records, resume):
    where reading should go on (a resync may look past stop up to `limit`, the segment's end).

    errors="strict": the first corrupt batch raises. errors="salvage": each corrupt stretch is
    skipped (resynchronizing on the next entry whose header is plausible and whose CRC verifies)
    and appended to `report` as a ReportEntry. `after`: the last offset before `start` (batch
    offsets must increase); `following`: the first offset after the segment (the next segment's
    base offset). A truncated or zero-filled tail is reported when `report` is a list."""
    options = DecodeOptions() if options is None else options
    path = seg.url if seg is not None else f.url
    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    limit = stop if limit is None else limit
    # batch offsets increase in a segment (a record set dumped from a request need not)
    check = seg is not None and segment_base(seg.log) is not None
    if check:
        # a batch below the segment's base offset (its file name) is out of sequence too
        floor = seg.base_offset - 1
        after = floor if after is None else max(after, floor)
    else:
        after = following = None
    if errors == "strict":
        recs = _checked_decode(f, path, start, stop, options, check, after, following)
        resume = stop
    else:
        recs, resume = _salvage(f, path, start, stop, limit, report, options, check, after, following)
    if recs.tail is not None and report is not None:
        report.append(_tail_entry(path, recs, limit))
    return recs, resume


def _salvage(f, path, start, stop, limit, report, options, check, after, following):
    parts = []
    pos = start
    last_offset = after
    resume = stop
    while pos < stop:
        try:
            parts.append(_checked_decode(f, path, pos, stop, options, check, last_offset, following))
            break
        except CorruptRecordError as exc:
            bad = exc.batch_position if exc.batch_position is not None else pos
            while bad > pos:
                # the batches before the bad one, without peeking at it (an entry that follows is
                # never blamed, which could put the blame on them); judged with less context, one
                # of them may still be found at fault: it is then the bad one (bad only moves back)
                try:
                    good = _checked_decode(f, path, pos, bad, options, check, last_offset, None, peek=False)
                except CorruptRecordError as inner:
                    at = inner.batch_position if inner.batch_position is not None else pos
                    exc, bad = inner, at if pos <= at < bad else pos
                    continue
                parts.append(good)
                if len(good.batches):
                    last_offset = int(good.batches.last_offset[-1])
                break
            buf, base = window(f, bad + 1, limit)
            nxt = next_entry(buf[:limit - base], bad + 1 - base, last_offset if check else None)
            nxt = nxt + base if nxt >= 0 else nxt
            end = limit if nxt < 0 else nxt
            if report is not None:
                report.append(ReportEntry(ReportKind.CORRUPT, path, exc.reason, bad, end, exc.offset))
            pos = end
            if end >= stop:
                resume = end
                break
    if not parts:
        return decode(b"", file=path, **options.decode_kwargs()).replace(valid_bytes=resume), resume
    from kafkafmt.records import Records

    last = parts[-1]
    out = Records.concat(parts) if len(parts) > 1 else last
    tail, trailing = last.tail, last.trailing_bytes
    if tail == "truncated" and stop < limit:
        # cut by the chunk's end (placed by a corrupt size field), not by the segment's: the next
        # chunk starts at that batch
        tail, trailing, resume = None, 0, last.valid_bytes
    return out.replace(valid_bytes=last.valid_bytes, trailing_bytes=trailing, tail=tail), resume


# ----------------------------------------------------------------------------------------------
# transactions

def transactions(segments, report, use_txnindex=None):
    """Aborted ranges {producer_id: [(first, last), ...]} and the last stable offset (or None) of
    a partition's segments: from ``.txnindex`` files when the partition has them (use_txnindex
    None: decide by their presence), else from ABORT markers found by a header scan."""
    if use_txnindex is None:
        use_txnindex = any(s.has("txnindex") for s in segments)
    aborted = {}
    if use_txnindex:
        for seg in segments:
            data = seg.side_bytes("txnindex")
            if data is not None:
                for e in sidefiles.read_txnindex(data):
                    aborted.setdefault(int(e["producer_id"]), []).append((int(e["first_offset"]), int(e["last_offset"])))
    open_txns = {}
    for seg in segments:
        with seg.open() as f:
            t, _ = scan_range(f, 0, f.size)
            txn = t["is_transactional"]
            ctl = t["is_control"]
            for b in np.flatnonzero(txn).tolist():
                pid = int(t["producer_id"][b])
                if not ctl[b]:
                    open_txns.setdefault(pid, int(t["base_offset"][b]))
                    continue
                first = open_txns.pop(pid, None)
                if not use_txnindex and first is not None:
                    p, s = int(t["position"][b]), int(t["size"][b])
                    buf, base = window(f, p, p + s)
                    marker = decode(buf, start=p - base, stop=p + s - base, include_control=True,
                                    verify_crc=None).controls
                    if len(marker) and int(marker.type[0]) == 0:  # ABORT
                        aborted.setdefault(pid, []).append((first, int(t["last_offset"][b])))
    lso = min(open_txns.values()) if open_txns else None
    return aborted, lso


def committed_mask(recs, aborted, lso):
    """Records a read_committed consumer keeps: below the last stable offset, not in an aborted
    transaction of their producer."""
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


# ----------------------------------------------------------------------------------------------
# one file

_FRAMING_ERRORS = (1, 2, 18)    # the C scan's codes for a size too small, an unknown magic, a size too large


def not_kafka_reason(buf):
    """Why a buffer does not start with a Kafka log entry (a PNG, a text file...), or None when
    its first entry is plausible (or it is empty or zero-filled). CRCs are not judged: a damaged
    first batch is Kafka data with damage, not something else."""
    n = len(buf)
    if n == 0:
        return None
    if n < 12:
        return None if not np.asarray(buf[:n]).any() else f"{n} bytes, shorter than an entry's 12-byte header"
    size = int.from_bytes(bytes(buf[8:12]), "big", signed=True)
    stop = n if size <= 0 else min(n, 12 + size)
    t, info = scan_batches(buf, verify_crc=None, stop=stop)
    if len(t) or info["tail"] == "zeros" or (info["tail"] == "truncated" and n > 16 and int(buf[16]) <= 2
                                               and size >= 14):
        return None
    err = info["error"]
    if err is not None and err["code"] not in _FRAMING_ERRORS:
        return None     # the framing holds; the entry's contents are damaged
    reason = err["reason"] if err is not None else "no entry fits"
    return f"first entry at position 0: {reason}"


def read_segment(path, *, errors="strict", storage_options=None, filesystem=None, **kwargs):
    """Decode a whole segment file (memory-mapped when local; a path or a URL such as
    ``s3://bucket/t-0/00000000000000000000.log`` with ``storage_options`` or ``filesystem`` as
    pandas takes them). Accepts decode()'s keyword arguments; topic and partition default to those
    named by the file's ``<topic>-<partition>`` folder. errors="salvage" skips corrupt stretches
    (resynchronizing on the next entry whose CRC verifies) and lists them in the result's
    ``report`` instead of raising. A file that is not Kafka data at all raises NotKafkaDataError."""
    from kafkafmt.errors import NotKafkaDataError
    from kafkafmt.storage import open_storage

    if errors not in ("strict", "salvage"):
        raise ValueError(f"errors must be 'strict' or 'salvage', not {errors!r}")
    storage, p = open_storage(path, storage_options, filesystem)
    st = None if storage.is_local else storage
    if st is None:
        p = os.fspath(p)
    tp = partition_of_name(storage.name(storage.parent(os.path.abspath(p) if st is None else p))) or (None, None)
    topic, partition = kwargs.pop("topic", tp[0]), kwargs.pop("partition", tp[1])
    file = kwargs.pop("file", storage.url(p))
    names = {f.name for f in dataclasses.fields(DecodeOptions)}
    options = DecodeOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
    seg = Segment.of_file(p, st) if segment_base(storage.name(p)) is not None else None
    with open_file(p, st) as f:
        buf, _ = window(f, 0, f.size)
        why = not_kafka_reason(buf) if errors == "strict" else None
        if why is not None:
            raise NotKafkaDataError(f"not a Kafka log segment: {why}", file=file, position=0)
        if errors == "salvage":
            report = []
            recs, _ = read_range(seg, f, 0, f.size, report, options=options, errors="salvage")
            recs = recs.replace(report=report)
        else:
            recs = decode(buf, file=file, check_offsets=seg is not None,
                          after_offset=None if seg is None else seg.base_offset - 1, **options.decode_kwargs(),
                          **kwargs)
    return recs.replace(topic=topic, partition=partition)

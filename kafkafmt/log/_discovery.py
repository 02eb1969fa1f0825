"""Finding Kafka data: roots (paths, URLs, lists of both) -> log dirs -> partitions -> segments.

The one discovery every door uses -- the library's readers, the command line, Spark's batch planner
and its stream reader -- so the same roots give the same partitions whichever door asks.

* A folder is a *partition folder* when its name is ``<topic>-<partition>`` and it holds segment
  files (or, empty, sits beside other partition folders in a log dir). A folder that holds partition
  folders or ``meta.properties`` is a *log dir*, whatever its own name -- so ``kafka-logs-1`` (several
  brokers on one host) is a log dir, not partition 1 of a topic ``kafka-logs``.
* Roots are walked to any depth (`MAX_DEPTH`): log dirs, partition folders given alone, tiered-storage
  uploads of every layout in `kafkafmt.log.tiered.LAYOUTS` -- also side by side under one root -- and the
  files lying outside partition folders (a KRaft ``bootstrap.checkpoint``, loose segments), the same
  for the local disk and object stores. A folder reached twice (a symlink) is read once.
* A partition with tiered uploads and a local folder is one partition: the uploads (older) and the
  local segments (newer) merged in offset order, a segment in both read once (the local copy), a gap
  between them reported (`ReportKind.GAP`).
* Copies of one partition in several log dirs (replicas, a backup beside the original) are read once
  (``replicas="dedup"``, the default, `DEFAULT_REPLICAS`): the most complete copy -- the highest last
  offset, then the most bytes -- each other copy reported: `ReportKind.REPLICA` when the copy read
  holds all it holds, `ReportKind.DUPLICATE` when it holds offsets the copy read no longer has,
  `ReportKind.MISMATCH` naming both paths and the first offset where their records differ.
  ``replicas="all"`` reads every copy, told apart by their log dir (the ``logDir`` column).
* A log dir's ``log-start-offset-checkpoint`` (records deleted by DeleteRecords) sets each of its
  partitions' `Partition.log_start_offset`, where "earliest" begins.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import warnings
from dataclasses import dataclass, field


from kafkafmt.log import sidefiles
from kafkafmt.log import tiered
from kafkafmt.errors import IncarnationError, KafkafmtError, KafkafmtWarning, NotALogDirError, PathNotFoundError, StorageError
from kafkafmt.log._names import (holds_segment_files, is_leftover_dir, is_leftover_segment_file, listed_folder,
                            partition_of_name, LEFTOVER_FOLDER, LEFTOVER_SUFFIXES, LOG_SUFFIX, SEGMENT_DIGITS,
                            SEGMENT_LOG, SIDE_FILE_KINDS)
from kafkafmt.log._copies import live_topic_ids, resolve_copies, METADATA_TOPIC
from kafkafmt.log._notes import ReportEntry, ReportKind
from kafkafmt.log._segments import Segment
from kafkafmt.storage import FolderListing, open_storage
from kafkafmt._util.collect import paused
from kafkafmt._util.frozen import field_defaults, made
from kafkafmt._native.segrows import Names, listing_segment_rows, segment_rows as native_segment_rows

__all__ = ["Partition", "Found", "MAX_DEPTH", "REPLICAS", "DEFAULT_REPLICAS", "LOG_START_CHECKPOINT",
           "REPLICATION_CHECKPOINT", "RECOVERY_POINT_CHECKPOINT", "log_dir_offsets", "discover", "find_partitions",
           "resolve_partition", "folder_kind", "find_log_dirs", "list_partitions", "list_segments"]

MAX_DEPTH = 8                       # folders below a root searched for Kafka data
REPLICAS = ("all", "dedup")         # what to do with several copies of one partition
DEFAULT_REPLICAS = "dedup"          # each (topic, partition, offset) once, from the most complete copy
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"       # each partition's high watermark
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"  # the offset each log is flushed to


# ----------------------------------------------------------------------------------------------
# folders

_PASS = "__pass__"      # the cache's key for the current discovery pass
_ONE_PASS = "__one_pass__"   # set in a cache made for one discovery pass: its listings need no change token


def _listing(path, storage, cache=None):
    """Entries of a folder (kafkafmt.storage.Entry: name, path, size, is_dir, version); errors name
    it. ``cache`` ({path: (token, entries)}) keeps listings of folders whose change token
    (`Storage.change_token`: a local folder's mtime) is unchanged and settled; a folder without one
    (an object store's) is listed once per discovery pass."""
    token = None
    if cache is not None:
        token = None if _ONE_PASS in cache else storage.change_token(path)
        hit = cache.get((storage.url(path), "listing"))
        if hit is not None:
            if token is not None and hit[0] == token and storage.settled(token):
                return hit[1]
            if token is None and hit[0] == ("pass", cache.get(_PASS)):
                return hit[1]
        if token is None:
            token = ("pass", cache.get(_PASS))
    try:
        entries = storage.list(path)
    except PathNotFoundError:
        raise PathNotFoundError(f"no such file or directory: {storage.url(path)}", file=storage.url(path)) from None
    except StorageError as exc:
        if not storage.exists(path):
            raise PathNotFoundError(f"no such file or directory: {storage.url(path)}",
                                    file=storage.url(path)) from None
        if not storage.isdir(path):
            raise NotALogDirError(f"not a directory: {storage.url(path)}", file=storage.url(path)) from None
        raise exc
    if cache is not None:
        cache[(storage.url(path), "listing")] = (token, entries)
    return entries


def _prefill(storage, root, cache):
    """List an object store's root recursively in one pass (`Storage.list_tree`: a page of keys a request)
    into the pass's listing cache, so that the walk, the partitions' segments and their copies list no folder
    of it again; a store without such a listing, or a root it cannot list so, is walked folder by folder."""
    token = ("pass", cache.get(_PASS))
    if cache.get((storage.url(root), "tree")) == token:
        return
    try:
        tree = storage.list_tree(root)
    except StorageError:
        tree = None                 # the walk's own listing says why
    if tree is None:
        return
    cache[(storage.url(root), "tree")] = token
    for folder, entries in tree.items():
        cache[(storage.url(folder), "listing")] = (token, entries)
    if str(root).rstrip("/") in tree:      # (the root as given, e.g. with a trailing slash)
        cache[(storage.url(root), "listing")] = (token, tree[str(root).rstrip("/")])


def _storage_of(path, storage):
    """(storage, path as it names it) for a path or URL given to a public function: ``storage``
    when given, else the one the path names (`kafkafmt.storage.open_storage`)."""
    if storage is not None:
        return storage, path
    st, p = open_storage(path)
    return st, (os.fspath(p) if st.is_local else p)


def folder_kind(path, entries=None, storage=None, cache=None):
    """"partition", "log_dir" or None for a folder (see the module docstring for the rules)."""
    storage, path = _storage_of(path, storage)
    entries = _listing(path, storage, cache) if entries is None else entries
    names = [e.name for e in entries]
    if "meta.properties" in names:
        return "log_dir"
    subdirs = [e for e in entries if e.is_dir]
    if partition_of_name(storage.name(path)) is not None and holds_segment_files(names) and not any(
            partition_of_name(d.name) is not None for d in subdirs):
        return "partition"
    for d in subdirs:
        if partition_of_name(d.name) is not None and holds_segment_files(
                [e.name for e in _listing(d.path, storage, cache)]):
            return "log_dir"
    if any(is_leftover_dir(d.name) for d in subdirs):
        return "log_dir"
    return None


#: the side files' suffixes, and the kinds a listed segment has by whether it has each (one shared frozenset
#: per combination: a cluster lists thousands of segments)
_INDEX, _TIMEINDEX, _TXNINDEX = ("." + k for k in SIDE_FILE_KINDS)
_PRESENT = {has: frozenset(k for k, h in zip(SIDE_FILE_KINDS, has) if h)
            for has in itertools.product((False, True), repeat=len(SIDE_FILE_KINDS))}


def list_segments(folder, report=None, storage=None, cache=None, *, entries=None):
    """The segments of a partition folder in offset order (sizes, versions and side files from one
    listing: ``entries``, when the caller listed the folder already, else listed here).

    Parameters
    ----------
    folder : str or os.PathLike
        The partition folder.
    report : list, optional
        Leftovers (``.deleted``, ``.cleaned``, ``.swap`` files) are named in it as `ReportEntry`.
    storage : Storage, optional
        Where the path is (a `kafkafmt.storage` Storage); by default from the path (local, or an
        fsspec URL).
    cache : optional
        A listing cache (the stream reader's).
    entries : sequence of Entry, optional
        The folder's listing, when already made (`Partition.listing`): not listed again.

    Returns
    -------
    list of Segment

    Examples
    --------
    >>> import shutil
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> folder = shutil.copytree(f"{sample_dir()}/payments-0", "copy/payments-0")
    >>> open(f"{folder}/00000000000000000000.log.deleted", "wb").close()   # a broker leftover
    >>> report = []
    >>> for seg in kafkafmt.list_segments(folder, report):
    ...     print(seg.base_offset, seg.size)
    0 974
    45 961
    71 1140
    >>> report[0].kind, report[0].message
    (<ReportKind.LEFTOVER: 'leftover'>, 'broker leftover (deleted/cleaned/swap file) skipped')
    """
    storage, folder = _storage_of(folder, storage)
    entries = _listing(folder, storage, cache) if entries is None else entries
    return _segments_of(folder, storage, _segment_rows(entries, storage), report)


#: whether a listing's segment rows are worked out natively (`kafkafmt._native.segrows`; a test turns it off to
#: compare with `_python_segment_rows`, the rule's reference)
_NATIVE_ROWS = [True]
#: the side-file kinds present (`_PRESENT`), by their bits (index 1, timeindex 2, txnindex 4)
_PRESENT_BY_BITS = tuple(_PRESENT[tuple(bool(bits & (1 << k)) for k in range(len(SIDE_FILE_KINDS)))]
                         for bits in range(1 << len(SIDE_FILE_KINDS)))
#: the naming rules the native rows follow (`kafkafmt.log._names`' own; side files in `_PRESENT_BY_BITS`' order)
_NAMES = Names(SEGMENT_DIGITS, LOG_SUFFIX, SIDE_FILE_KINDS, LEFTOVER_SUFFIXES)


def _segment_rows(entries, storage):
    """What a folder's listing says of its segments: ([(base offset, size, side files present, version, path
    without the suffix or None)] in offset order, [paths of broker leftovers])."""
    if _NATIVE_ROWS[0]:
        if isinstance(entries, FolderListing):
            rows = listing_segment_rows(entries.names, entries.sizes, entries.flags, entries.prefix,
                                        _PRESENT_BY_BITS, is_leftover_segment_file, _NAMES)
        else:
            rows = native_segment_rows(entries, storage.is_local, _PRESENT_BY_BITS, is_leftover_segment_file, _NAMES)
        if rows is not None:          # (None: a name that is not ASCII, left to the rule's pattern)
            return rows
    return _python_segment_rows(entries, storage)


def _python_segment_rows(entries, storage):
    """`_segment_rows` by the naming rules' patterns (the reference of `kafkafmt._native.segrows`)."""
    local = storage.is_local        # (a local listing's path is the folder as given joined with the name)
    names, logs, leftovers = set(), [], []
    for e in entries:               # (an Entry's fields by position)
        if e[3]:                    # is_dir
            continue
        name = e[0]
        names.add(name)
        if name.endswith(LOG_SUFFIX):
            logs.append(e)
        elif name.endswith(LEFTOVER_SUFFIXES) and is_leftover_segment_file(name):
            leftovers.append(e[1])
    rows = []
    for name, path, size, _, version, _ in logs:
        if SEGMENT_LOG.match(name) is None:
            continue
        stem = name[:-len(LOG_SUFFIX)]
        present = _PRESENT[(stem + _INDEX in names, stem + _TIMEINDEX in names, stem + _TXNINDEX in names)]
        rows.append((int(stem), size, present, version, path[:-len(LOG_SUFFIX)] if local else None))
    if len(rows) > 1:
        rows.sort(key=lambda r: r[0])
    return rows, leftovers


def _segments_of(folder, storage, rows, report):
    """New `Segment` s (each read keeps its own index lookups) of `_segment_rows`; the leftovers said in
    ``report``."""
    segs, leftovers = rows
    if report is not None:
        for path in leftovers:
            report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(path),
                                      "broker leftover (deleted/cleaned/swap file) skipped"))
    return [Segment(folder, base, size, storage=storage, present=present, version=version, stem=stem)
            for base, size, present, version, stem in segs]


# ----------------------------------------------------------------------------------------------
# partitions

@dataclass(frozen=True)
class Partition:
    """A partition: a folder of a log dir, tiered-storage uploads, or both merged; unpacks as
    (topic, partition, folder).

    ``storage``: where ``folder`` is (a `kafkafmt.storage` Storage); ``log_dir``: the log dir it was
    found in (None for uploads and for a partition folder given alone); ``segments``: its segments
    when known in advance (uploads, merged places), else listed on demand; ``log_start_offset``: the
    log dir's ``log-start-offset-checkpoint`` entry for it (records below it were deleted)."""
    topic: str
    partition: int
    folder: str
    storage: object
    log_dir: object = None
    segments: object = None
    log_start_offset: object = None
    root: object = None          # the root it was found under (tiered uploads: the storage path of the root)
    # what discovery saw of its folder (not compared): its listing (a sequence of Entry -- a local folder's kept
    # compactly, a kafkafmt.storage.FolderListing; the sizes of its .log files, the others' may be None), so
    # that planning does not list it again, and its real path
    # (local folders); a Partition pickled elsewhere (a Spark executor) lists its folder afresh there
    listing: object = field(default=None, compare=False, repr=False)
    real: object = field(default=None, compare=False, repr=False)
    # the other copies of the same incarnation (replicas="dedup"): a range this copy cannot give intact is
    # read from one of them (kafkafmt.log._fill); () for a partition held once
    alternates: object = field(default=(), compare=False, repr=False)
    # stretches of offsets this copy lacks between two of its batches that one of the alternates holds, with
    # the same batches around them (kafkafmt.log._copies.Gap): read from it (kafkafmt.log._fill)
    gaps: object = field(default=(), compare=False, repr=False)
    # as another copy's alternate: the offset from which its records differ from that copy's (another history
    # from there: only offsets below it are read from it); None: they agree wherever both hold records
    diverges_at: object = field(default=None, compare=False, repr=False)

    def with_alternates(self, alternates, gaps=()):
        """The same partition with other copies to read a damaged stretch, or a stretch it lacks (``gaps``),
        from (as ``dataclasses.replace`` does, without its cost: a cluster's discovery makes one for every
        partition held several times)."""
        return self._twin(alternates=tuple(alternates), gaps=tuple(gaps))

    def diverging_at(self, offset):
        """The same partition as an alternate whose records differ from the copy read's from ``offset`` on."""
        return self._twin(diverges_at=offset)

    def _twin(self, **fields):
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.__dict__.update(fields)
        return twin

    def __getstate__(self):
        return dict(self.__dict__, listing=None, _rows=None)

    def __setstate__(self, state):
        self.__dict__.update(state)

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"

    def __iter__(self):
        return iter((self.topic, self.partition, self.folder))

    @property
    def url(self):
        return self.storage.url(self.folder)

    @property
    def log_dir_url(self):
        """Where it was found (path or URL): its log dir, the root of uploads, else the folder holding
        its partition folder (None for a file outside any partition folder)."""
        where = self.log_dir if self.log_dir is not None else self.root
        if where is None and self.topic is None:
            return None
        if where is None:
            where = self.storage.parent(self.folder if not self.storage.is_local else os.path.abspath(self.folder))
        return self.storage.url(where)

    @property
    def home(self):
        """The folder whose checkpoint files (``log-start-offset-checkpoint``...) list it: its log dir,
        else the folder holding a partition folder given alone; None for tiered uploads."""
        if self.log_dir is not None:
            return self.log_dir
        if self.segments is not None or self.topic is None:
            return None
        return self.storage.parent(self.folder if not self.storage.is_local else os.path.abspath(self.folder))

    @property
    def key(self):
        """What tells copies of a folder apart: its real path (a symlink is the folder it points to)."""
        if not self.storage.is_local:
            return self.url
        return self.real if self.real is not None else os.path.realpath(self.folder)

    def list_segments(self, report=None, cache=None):
        """Its segments in offset order (from discovery's listing of its folder, when it has one)."""
        if self.segments is not None:
            return list(self.segments)
        if self.listing is None:
            return list_segments(self.folder, report, self.storage, cache)
        rows = self.__dict__.get("_rows")       # (its listing's segments, worked out once: a command asks often)
        if rows is None:
            rows = self.__dict__["_rows"] = _segment_rows(self.listing, self.storage)
        return _segments_of(self.folder, self.storage, rows, report)

    def files(self, cache=None):
        """(name, path or URL) of every file in its folder (segments, side files, checkpoints, KRaft
        snapshots), sorted by name."""
        entries = _listing(self.folder, self.storage, cache) if self.listing is None else self.listing
        return [(e.name, e.path if self.storage.is_local else self.storage.url(e.path))
                for e in entries if not e.is_dir]

    def earliest(self, segments=None):
        """The first offset a consumer can read ("earliest"): the first segment's base offset -- or the first
        offset of a gap before it that another copy gives (`gaps`) --, or the log start offset when
        DeleteRecords moved it further; None without segments."""
        segments = self.list_segments() if segments is None else segments
        if not segments:
            return None
        first = segments[0].base_offset
        first = min([first] + [g.lo for g in self.gaps if g.before is None])
        return first if self.log_start_offset is None else max(first, self.log_start_offset)


def list_partitions(log_dir, topics=None, partitions=None, report=None, storage=None):
    """The partition folders of a log dir as `Partition`s (they unpack as (topic, partition,
    folder)), sorted. A partition folder given as ``log_dir`` lists itself.

    Parameters
    ----------
    log_dir : str or os.PathLike
        The log dir (or a partition folder).
    topics : list of str, optional
        Only these topics.
    partitions : list of int, optional
        Only these partition numbers.
    report : list, optional
        Leftover folders (``-delete``/``-future``/``-stray``) are named in it as `ReportEntry`.
    storage : Storage, optional
        Where the path is (a `kafkafmt.storage` Storage); by default from the path (local, or an
        fsspec URL).

    Returns
    -------
    list of Partition

    Examples
    --------
    >>> import os
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> for topic, partition, folder in kafkafmt.list_partitions(sample_dir(), topics=["orders"]):
    ...     print(topic, partition, os.path.basename(folder))
    orders 0 orders-0
    orders 1 orders-1
    >>> [p.topic for p in kafkafmt.list_partitions(f"{sample_dir()}/payments-0")]
    ['payments']
    """
    storage, log_dir = _storage_of(log_dir, storage)
    if storage.is_local:
        log_dir = os.path.normpath(log_dir)
    entries = _listing(log_dir, storage)
    if folder_kind(log_dir, entries, storage) == "partition":
        t, p = partition_of_name(storage.name(log_dir))
        return [Partition(t, p, log_dir, storage)] if _wanted(t, p, topics, partitions) else []
    found = [p for p in _log_dir_partitions(storage, log_dir, entries, report, None)
             if _wanted(p.topic, p.partition, topics, partitions)]
    return found


def _wanted(t, p, topics, partitions):
    topics = {topics} if isinstance(topics, str) else topics
    partitions = {partitions} if isinstance(partitions, int) else partitions
    return (topics is None or t in topics) and (partitions is None or p in partitions)


#: a `Partition` 's fields and their defaults (`_listed_partition`)
_PARTITION_DEFAULTS = field_defaults(Partition)


def _listed_partition(topic, partition, folder, storage, log_dir, log_start_offset, listing, real):
    """``Partition(topic, partition, folder, storage, log_dir, None, log_start_offset, listing=listing,
    real=real)``, made as every partition of a cluster is (`kafkafmt._util.frozen`)."""
    return made(Partition, _PARTITION_DEFAULTS, {
        "topic": topic, "partition": partition, "folder": folder, "storage": storage, "log_dir": log_dir,
        "log_start_offset": log_start_offset, "listing": listing, "real": real})


def _log_dir_partitions(storage, log_dir, entries, report, cache, threads=1, wanted=None):
    """The partition folders of a log dir (its listing given), with the log start offsets of its
    checkpoint file. ``threads``: how many list its folders side by side (`_prefetched_listings`). ``wanted``:
    ``wanted(topic, partition)`` -> whether a read asks for that partition (None: all); the folders of the others
    are not listed (nor returned), unless the log dir would hold no partition without them: then they are
    listed until one is a partition folder, which is returned (the log dir is not empty)."""
    starts = _log_starts(storage, log_dir, entries, report)
    folders = [(e, listed_folder(e.name)) for e in entries if e.is_dir]
    others = []
    if wanted is not None:
        others = [(e, tp) for e, tp in folders if tp is not None and tp is not LEFTOVER_FOLDER and not wanted(*tp)]
        folders = [(e, tp) for e, tp in folders if tp is None or tp is LEFTOVER_FOLDER or wanted(*tp)]
    found = _partition_folders(storage, log_dir, folders, starts, report, cache, threads)
    for e, tp in others if not found else ():
        found = _partition_folders(storage, log_dir, [(e, tp)], starts, report, cache, 1)
        if found:
            break
    found.sort(key=lambda p: (p.topic, p.partition))
    return found


def _partition_folders(storage, log_dir, folders, starts, report, cache, threads):
    """The partitions of a log dir's folders (``(entry, listed_folder(name))`` pairs), listed (a folder being
    deleted, moved or left stray reported)."""
    ahead = _prefetched_listings(storage, [e.path for e, tp in folders if tp is not None and tp is not LEFTOVER_FOLDER],
                                 cache, threads)
    found = []
    # a folder's real path is its log dir's real path and its name, unless it is a symlink itself
    real_dir = os.path.realpath(log_dir) if storage.is_local else None
    for e, tp in folders:
        if tp is LEFTOVER_FOLDER:
            if report is not None:
                report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(e.path),
                                          "partition folder being deleted, moved or left stray "
                                          "(-delete/-future/-stray) skipped"))
            continue
        if tp is None:
            continue
        sub = ahead.get(e.path)
        if sub is None:
            sub = _partition_listing(e.path, storage, cache)
        compact = isinstance(sub, FolderListing)
        # a partition folder holds segment files, or (empty) sits in a log dir beside others
        if sub and not holds_segment_files(sub.names if compact else [s[0] for s in sub]):
            continue
        real = None
        if real_dir is not None:
            real = os.path.realpath(e.path) if e.is_link else os.path.join(real_dir, e.name)
        found.append(_listed_partition(tp[0], tp[1], e.path, storage, log_dir, starts.get(tp),
                                       sub if compact else tuple(sub), real))
    return found


_CHECKPOINTS = {}          # url -> (change token, log start offsets or the reason the file is unreadable)
_CHECKPOINTS_KEPT = 64    # log dirs whose checkpoint is kept
_CHECKPOINTS_LOCK = threading.Lock()


def _partition_listing(path, storage, cache):
    """A partition folder's listing for discovery. In a one-pass discovery of local folders only the
    ``.log`` files get their size (a stat per side file would cost more than the rest of the
    folder's listing; `Partition.listing` serves segments and file names): the others' is None; and the
    listing is kept compactly (a `kafkafmt.storage.FolderListing`: a cluster's discovery keeps thousands)."""
    if _compact(storage, path, cache):
        try:
            return storage.folder_listing(path, sized=_SIZED)
        except StorageError:
            pass                 # as _listing says it
    return _listing(path, storage, cache)


_SIZED = (LOG_SUFFIX,)      # the files a partition folder's compact listing gives the size of


def _compact(storage, path, cache):
    """Whether discovery keeps this partition folder's listing compactly (`_partition_listing`)."""
    return storage.is_local and cache is not None and _ONE_PASS in cache and (storage.url(path), "listing") not in cache


def _prefetched_listings(storage, paths, cache, threads):
    """{path: compact listing} of the partition folders of ``paths`` that `_partition_listing` lists compactly,
    listed in one native call per thread (`kafkafmt.storage.LocalStorage.folder_listings`); a folder missing from
    it is listed as `_partition_listing` lists it, which says why it could not be."""
    paths = [p for p in paths if _compact(storage, p, cache)]
    if not paths:
        return {}
    return {p: got for p, got in zip(paths, storage.folder_listings(paths, sized=_SIZED, threads=threads))
            if got is not None}


def _log_starts(storage, log_dir, entries, report):
    """{(topic, partition): log start offset} of a log dir's checkpoint ({} without one; entries:
    the log dir's listing, None when not listed). A local checkpoint is parsed once while it is
    unchanged and settled (`Storage.change_token`): a loop of reads of single partitions costs
    the same whatever the number of their siblings the file lists."""
    if entries is not None and not any(e.name == LOG_START_CHECKPOINT and not e.is_dir for e in entries):
        return {}
    path = storage.join(log_dir, LOG_START_CHECKPOINT)
    url = storage.url(path)
    token = storage.change_token(path) if storage.is_local else None
    hit = _CHECKPOINTS.get(url)
    if hit is not None and token is not None and hit[0] == token:
        starts = hit[1]
    else:
        try:
            starts = sidefiles.read_offset_checkpoint(storage.read_bytes(path))
        except KafkafmtError as exc:
            if entries is None and isinstance(exc, FileNotFoundError):
                return {}                   # no checkpoint (the folder was not listed to know)
            starts = exc.reason
        if token is not None and storage.settled(token):
            with _CHECKPOINTS_LOCK:
                while len(_CHECKPOINTS) >= _CHECKPOINTS_KEPT:
                    _CHECKPOINTS.pop(next(iter(_CHECKPOINTS)))
                _CHECKPOINTS[url] = (token, starts)
    if isinstance(starts, str):
        if report is not None:
            report.append(ReportEntry(ReportKind.LEFTOVER, url,
                                      f"unreadable {LOG_START_CHECKPOINT} ({starts}): log start offsets unknown"))
        return {}
    return starts


def _checkpoint(storage, log_dir, entries, name, what, report):
    """{(topic, partition): offset} of one of a log dir's offset checkpoint files ({} without it; an
    unreadable one reported)."""
    if not any(e.name == name and not e.is_dir for e in entries):
        return {}
    path = storage.join(log_dir, name)
    try:
        return sidefiles.read_offset_checkpoint(storage.read_bytes(path))
    except KafkafmtError as exc:
        if report is not None:
            report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(path),
                                      f"unreadable {name} ({exc.reason}): {what} unknown"))
        return {}


def log_dir_offsets(log_dir, name, storage=None, report=None):
    """The offsets one of a log dir's offset checkpoint files holds.

    Parameters
    ----------
    log_dir : str or os.PathLike
        The log dir (path or URL).
    name : str
        The checkpoint file: `LOG_START_CHECKPOINT`, `REPLICATION_CHECKPOINT` (each partition's high
        watermark), `RECOVERY_POINT_CHECKPOINT` (the offset up to which each log was flushed) or
        ``cleaner-offset-checkpoint``.
    storage : Storage, optional
        Where the path is (a `kafkafmt.storage` Storage); by default from the path.
    report : list, optional
        An unreadable file is named in it (a `ReportEntry`), and {} returned.

    Returns
    -------
    dict
        ``{(topic, partition): offset}``; {} when the log dir has no such file.

    Examples
    --------
    A copy of the sample log dir with the high watermarks a broker would have checkpointed:

    >>> import shutil
    >>> from kafkafmt.log import REPLICATION_CHECKPOINT, log_dir_offsets, sidefiles
    >>> from kafkafmt.sample import sample_dir
    >>> log_dir = shutil.copytree(sample_dir(), "hw/kafka-logs")
    >>> sidefiles.write_offset_checkpoint(f"{log_dir}/{REPLICATION_CHECKPOINT}", {("orders", 0): 2400})
    >>> log_dir_offsets(log_dir, REPLICATION_CHECKPOINT)
    {('orders', 0): 2400}
    >>> log_dir_offsets(sample_dir(), REPLICATION_CHECKPOINT)
    {}
    """
    storage, log_dir = _storage_of(log_dir, storage)
    return _offsets_of(log_dir, name, storage, report)


def _offsets_of(log_dir, name, storage, report, cache=None):
    """`log_dir_offsets` with a listing ``cache`` (a discovery pass's)."""
    try:
        entries = _listing(log_dir, storage, cache)
    except (PathNotFoundError, NotALogDirError, StorageError):
        return {}
    return _checkpoint(storage, log_dir, entries, name, f"offsets of {name}", report)


def _parent_log_starts(storage, path):
    """The log start offsets of the folder holding a partition folder given alone: its checkpoint alone, never
    a listing of the parent (its siblings cost nothing); {} when it has none or it cannot be read."""
    parent = storage.parent(os.path.abspath(path) if storage.is_local else path)
    try:
        return _log_starts(storage, parent, None, None)
    except (StorageError, PermissionError):
        return {}


def find_log_dirs(root, max_depth=MAX_DEPTH, storage=None):
    """Every log dir at or below ``root`` (any depth up to max_depth), sorted. A partition folder
    given as root is not a log dir (see `list_partitions`).

    Parameters
    ----------
    root : str or os.PathLike
        A folder (or URL) holding log dirs at any depth, or a log dir.
    max_depth : int
        How deep to look below ``root``.
    storage : Storage, optional
        Where the path is (a `kafkafmt.storage` Storage); by default from the path (local, or an
        fsspec URL).

    Returns
    -------
    list of str

    Examples
    --------
    Two brokers' log dirs, each holding a copy of a sample partition:

    >>> import shutil
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> _ = shutil.copytree(f"{sample_dir()}/orders-0", "brokers/1/kafka-logs/orders-0")
    >>> _ = shutil.copytree(f"{sample_dir()}/orders-1", "brokers/2/kafka-logs/orders-1")
    >>> kafkafmt.find_log_dirs("brokers")
    ['brokers/1/kafka-logs', 'brokers/2/kafka-logs']
    >>> kafkafmt.find_log_dirs(sample_dir()) == [sample_dir()]
    True
    """
    found = discover([root], storage=storage, max_depth=max_depth)
    if found.given_files:
        raise NotALogDirError(f"not a log dir (a directory holding <topic>-<partition> folders): "
                              f"{found.given_files[0]}", file=found.given_files[0])
    return sorted(found.log_dirs_paths)


# ----------------------------------------------------------------------------------------------
# the walk

@dataclass
class Found:
    """What `discover` found under the roots: ``partitions`` (in the order of the roots, then
    sorted), ``files`` (files named as roots and files lying outside partition folders: a KRaft
    ``bootstrap.checkpoint``, checkpoint files, loose segments), ``given_files`` (those named as
    roots), ``log_dirs_paths`` (storage paths), ``report`` (leftovers, duplicates, gaps...), ``uploads`` (the
    tiered-storage partitions, every upload listed)."""
    partitions: list = field(default_factory=list)
    files: list = field(default_factory=list)
    given_files: list = field(default_factory=list)
    log_dirs_paths: list = field(default_factory=list)
    log_dir_urls: list = field(default_factory=list)
    empty_log_dirs: list = field(default_factory=list)   # URLs of log dirs holding no partition at all
    report: list = field(default_factory=list)
    copies: list = field(default_factory=list)     # every copy of every partition found (`Copy`), replicas="dedup"
    unread: list = field(default_factory=list)     # the copies not read (`Partition` s), replicas="dedup"
    conflicts: list = field(default_factory=list)  # partitions whose copies are of several incarnations: not read

    def check_incarnations(self):
        """Raise `IncarnationError` when copies of a partition belong to different incarnations of its
        topic and nothing chose one (`conflicts`): a read must not pick one, nor merge them."""
        if self.conflicts:
            first = self.conflicts[0]
            more = f" (and {len(self.conflicts) - 1} more partitions)" if len(self.conflicts) > 1 else ""
            raise IncarnationError(first.message + more, file=first.file)
    # the tiered-storage partitions found (`kafkafmt.log.tiered.RemotePartition`, with their ``storage``): every
    # upload, also those a merged partition does not read (superseded, or shadowed by a local segment)
    uploads: list = field(default_factory=list)

    def __repr__(self):     # a summary: the lists can hold thousands of partitions
        return (f"<Found {len(self.partitions)} partitions in {len(self.log_dirs)} log dirs, {len(self.files)} other "
                f"files, {len(self.report)} report entries>")

    @property
    def log_dirs(self):
        """The distinct log dirs (paths or URLs) the partitions come from."""
        return sorted({p.log_dir_url for p in self.partitions if p.log_dir is not None})


class _Walk:
    """One walk over the roots: what was found, and the folders already visited."""

    def __init__(self, report, max_depth, cache, files, threads=1, wanted=None):
        self.threads = threads
        self.wanted = wanted
        self.found = Found(report=report)
        self.plain = []
        self.remote = []
        self.max_depth = max_depth
        self.cache = cache
        self.want_files = files
        self.seen = set()

    def root(self, storage, path, given):
        if storage.is_local:
            path = os.path.normpath(path)
        else:
            _prefill(storage, path, self.cache)
        try:
            entries = _listing(path, storage, self.cache)
        except NotALogDirError:             # a file
            if storage.is_local and not os.path.isfile(path) and os.path.exists(path):
                # (a fifo, socket or device: opening a fifo waits for a writer -- no door opens one)
                raise StorageError(f"not a regular file: {path}", file=path) from None
            url = storage.url(path) if not storage.is_local else path
            self.found.files.append(url)
            self.found.given_files.append(url)
            return
        self.folder(storage, path, 0, None, entries)

    def folder(self, storage, path, depth, parent_name, entries=None):
        key = os.path.realpath(path) if storage.is_local else storage.url(path)
        if key in self.seen:                # a symlink to a folder walked already (or a loop)
            return
        self.seen.add(key)
        entries = _listing(path, storage, self.cache) if entries is None else entries
        kind = folder_kind(path, entries, storage, self.cache)
        if kind == "partition":       # given alone: its log start is still the log dir's (DeleteRecords)
            tp = partition_of_name(storage.name(path))
            self.plain.append(Partition(tp[0], tp[1], path, storage, listing=tuple(entries),
                                        log_start_offset=_parent_log_starts(storage, path).get(tp)))
            return
        if kind == "log_dir":
            self.found.log_dirs_paths.append(path)
            self.found.log_dir_urls.append(storage.url(path))
            own = _log_dir_partitions(storage, path, entries, self.found.report, self.cache, self.threads,
                                      self.wanted)
            if not own:
                self.found.empty_log_dirs.append(storage.url(path))
            self.plain += own
        else:
            uploads = tiered.partitions_at(storage, path, storage.name(path), entries, parent_name=parent_name,
                                           listing=lambda p: _listing(p, storage, self.cache))
            if uploads is not None:
                self.remote += [(storage, path, u) for u in uploads]
                return
        if self.want_files:
            self.found.files += [e.path if storage.is_local else storage.url(e.path) for e in entries
                                 if not e.is_dir and not e.name.startswith(".")]
        if depth >= self.max_depth:
            return
        for e in entries:
            if not e.is_dir or e.name.startswith("."):
                continue
            if kind == "log_dir" and listed_folder(e.name) is not None:
                continue
            self.folder(storage, e.path, depth + 1, storage.name(path))


def discover(roots, *, topics=None, partitions=None, storage_options=None, filesystem=None, storage=None,
             tiered_keys=None, replicas=DEFAULT_REPLICAS, report=None, max_depth=MAX_DEPTH, cache=None, files=False,
             topic_id=None, threads=1):
    """Everything under one root or a list of roots (paths or URLs, local and remote mixed): a
    `Found` with the partitions (filtered by topic names and partition numbers; a partition with
    uploads and local segments merged; copies by ``replicas``, incarnations by ``topic_id``: see
    `kafkafmt.log._copies`) and, with ``files=True``, the files outside partition folders. ``cache``: a
    dict kept between calls to list again only local folders that changed (the stream reader's
    polling). ``threads``: how many threads list a log dir's partition folders, and read and scan the copies'
    batch headers, side by side."""
    if replicas not in REPLICAS:
        raise ValueError(f"replicas must be one of {', '.join(REPLICAS)}, not {replicas!r}")
    with paused():          # (thousands of listings and partitions: no collection that frees nothing)
        return _discover(roots, topics, partitions, storage_options, filesystem, storage, tiered_keys, replicas,
                         report, max_depth, cache, files, topic_id, threads)


def _discover(roots, topics, partitions, storage_options, filesystem, storage, tiered_keys, replicas, report,
              max_depth, cache, files, topic_id, threads):
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    cache = {_ONE_PASS: True} if cache is None else cache
    cache[_PASS] = cache.get(_PASS, 0) + 1     # listings without a change token are fresh for this pass
    walk = _Walk([] if report is None else report, max_depth, cache, files, threads,
                 _listed_wanted(_as_set(topics), _as_set(partitions)))
    for root in roots:
        if storage is not None:
            st, path = storage, root
        else:
            st, path = open_storage(root, storage_options, filesystem)
            path = os.fspath(path) if st.is_local else path
        walk.root(st, path, root)
    found = walk.found
    plain = _dedup_folders(walk.plain)
    uploads = {}
    for st, _, rp in walk.remote:
        uploads.setdefault(st, []).append(rp)
    for st, rps in uploads.items():
        tiered.will_finish(st, rps)          # (what finishing them reads: fetched ahead)
    remote = [_remote_partition(st, path, rp, found.report, tiered_keys) for st, path, rp in walk.remote]
    found.uploads = [rp for _, _, rp in walk.remote]
    everything = _merge_places(plain, remote, found.report, cache)
    parts = [p for p in everything if _wanted(p.topic, p.partition, _as_set(topics), _as_set(partitions))]
    if replicas == "dedup":
        # (a cache made for this one pass serves no later one: the copies' batch headers are not kept in it)
        resolved = resolve_copies(parts, found.report, cache=None if _ONE_PASS in cache else cache,
                                  topic_id=topic_id,
                                  live_ids=_live_ids_of(everything), high_watermarks=_high_watermarks(cache),
                                  threads=threads)
        parts, found.copies, found.conflicts = resolved.partitions, resolved.copies, resolved.conflicts
        found.unread = resolved.unread
    parts.sort(key=lambda q: (q.topic, q.partition, q.log_dir_url))
    found.partitions = parts
    return found


def _listed_wanted(topics, partitions):
    """What discovery lists the partition folders of, of a read of ``topics`` / ``partitions`` (None: all):
    those asked for, and the cluster's metadata log's (the live topic ids, when incarnations differ)."""
    if topics is None and partitions is None:
        return None
    return lambda t, p: t == METADATA_TOPIC or _wanted(t, p, topics, partitions)


def _live_ids_of(parts):
    """``live()`` -> {topic: id} that the cluster's metadata log among ``parts`` names (read once, when asked)."""
    meta = [p for p in parts if p.topic == METADATA_TOPIC]
    memo = []

    def live():
        if not memo:
            memo.append(live_topic_ids(meta) if meta else {})
        return memo[0]
    return live


def _high_watermarks(cache=None):
    """``hw(partition)`` -> its high watermark in its log dir's ``replication-offset-checkpoint`` (each log
    dir's file read once, when first asked; the log dir's listing from the pass's ``cache``), or None."""
    files = {}

    def hw(part):
        home = part.home
        if home is None:
            return None
        key = part.storage.url(home)
        if key not in files:
            files[key] = _offsets_of(home, REPLICATION_CHECKPOINT, part.storage, None, cache)
        return files[key].get((part.topic, part.partition))
    return hw


def _as_set(v):
    if v is None:
        return None
    return {v} if isinstance(v, (str, int)) else set(v)


def _dedup_folders(parts):
    """One Partition per folder: a partition folder symlinked into two log dirs is one folder, read
    once (nothing is skipped: no report)."""
    out, seen = [], set()
    for p in parts:
        if p.key not in seen:
            seen.add(p.key)
            out.append(p)
    return out


def _remote_partition(storage, root, rp, report, tiered_keys):
    """A tiered-storage partition (`kafkafmt.log.tiered.RemotePartition`) as a Partition; uploads
    superseded by a later upload of the same segment are reported."""
    rp.storage = storage
    tiered.finish_partitions(storage, [rp], tiered_keys=tiered_keys)
    for problem in rp.problems:
        report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(rp.path), problem))
    for s in rp.superseded:
        report.append(ReportEntry(ReportKind.DUPLICATE, storage.url(s.log),
                                  f"upload {s.segment_id} of segment {s.base_offset} superseded by a later upload "
                                  f"(it ends at offset {s.end_offset}); skipped"))
    segs = tuple(Segment.of_remote(s, storage, tiered_keys) for s in rp.segments)
    return Partition(rp.topic, rp.partition, rp.path, storage, None, segs, None, root)


def _merge_places(plain, remote, report, cache=None):
    """Every local copy of a partition with the partition's uploads merged in; uploads without a
    local copy as partitions of their own."""
    uploads = {}
    for r in remote:
        uploads.setdefault((r.topic, r.partition), []).append(r)
    out = []
    merged = set()
    for p in plain:
        ups = uploads.get((p.topic, p.partition))
        if ups:
            merged.add((p.topic, p.partition))
            p = _merge(p, ups, report, cache)
        out.append(p)
    out += [r for r in remote if (r.topic, r.partition) not in merged]
    return out


def _merge(local, uploads, report, cache=None):
    """A local partition with its tiered uploads: one segment list in offset order, a segment in
    both read once (the local copy), a gap between the last upload before the local segments and
    the first local segment reported."""
    own = local.list_segments(report, cache)
    have = {s.base_offset for s in own}
    older = sorted((s for u in uploads for s in u.segments if s.base_offset not in have), key=lambda s: s.base_offset)
    segs = sorted(older + own, key=lambda s: s.base_offset)
    first_local = own[0].base_offset if own else None
    if older and first_local is not None:
        prev = [s for s in older if s.base_offset < first_local]
        if prev:
            last = prev[-1]
            end = tiered.segment_end_offset(last.storage, last.remote, tiered_keys=last.tiered_keys)
            if end + 1 < first_local:
                report.append(ReportEntry(ReportKind.GAP, local.url,
                                          f"offsets {end + 1}..{first_local - 1} are in neither the tiered uploads "
                                          f"(they end at {end}) nor the local segments (from {first_local})",
                                          offset=end + 1))
    return dataclasses.replace(local, segments=tuple(segs))


def find_partitions(roots, topics=None, partitions=None, report=None, storage_options=None, filesystem=None,
                    tiered_keys=None, replicas=DEFAULT_REPLICAS, topic_id=None, threads=1):
    """Every partition under one root or a list of roots (paths or URLs, local and remote mixed):
    partition folders, log dirs or folders holding log dirs at any depth, and tiered-storage
    uploads (Kafka's and Aiven's layouts), side by side or merged (see the module doc).
    tiered_keys: {key id: RSA private key (PEM)} for encrypted Aiven uploads. A root that is a
    file raises NotALogDirError; a topic, partition or root that matches nothing warns. ``threads``: as
    `discover`'s."""
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    found = discover(roots, topics=topics, partitions=partitions, report=report, storage_options=storage_options,
                     filesystem=filesystem, tiered_keys=tiered_keys, replicas=replicas, topic_id=topic_id,
                     threads=threads)
    if found.given_files:
        f = found.given_files[0]
        raise NotALogDirError(f"not a log dir (a directory holding <topic>-<partition> folders): {f}", file=f)
    found.check_incarnations()
    _warn_if_nothing_matched(roots, found, topics, partitions)
    return found.partitions


def _warn_if_nothing_matched(roots, found, topics, partitions):
    """A KafkafmtWarning when a read would silently give nothing: no partition at all under the
    roots, or a topic / partition asked for that none of them has (a typo, a wrong prefix). An
    empty log dir (a broker's with no partitions yet) is said to be one."""
    where = ", ".join(map(str, roots))
    parts = found.partitions
    if not parts and topics is None and partitions is None:
        if found.empty_log_dirs:
            n = len(found.empty_log_dirs)
            warnings.warn(f"the log dir{'s' if n > 1 else ''} {', '.join(found.empty_log_dirs)} "
                          f"hold{'' if n > 1 else 's'} no partitions", KafkafmtWarning, stacklevel=3)
        else:
            warnings.warn(f"no partition folders, log dirs or tiered-storage uploads under {where}", KafkafmtWarning,
                          stacklevel=3)
        return
    names = _as_set(topics) or set()
    missing = sorted(names - {p.topic for p in parts}) if partitions is None else []
    if missing:
        warnings.warn(f"no partition of topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} under {where}",
                      KafkafmtWarning, stacklevel=3)
    gone = sorted((_as_set(partitions) or set()) - {p.partition for p in parts})
    if gone:
        warnings.warn(f"no partition {', '.join(map(str, gone))} under {where}"
                      + (f" of {', '.join(sorted(names))}" if names else ""), KafkafmtWarning, stacklevel=3)


def resolve_partition(folder, storage_options=None, filesystem=None, tiered_keys=None):
    """The `Partition` a folder path or URL names: a ``<topic>-<partition>`` folder (with its log
    dir's log start offset), or a tiered upload folder (Kafka's ``<topic>-<partition>-<topicId>``,
    Aiven's ``<topic>-<topicId>/<partition>``; ``tiered_keys`` for encrypted Aiven uploads)."""
    if isinstance(folder, Partition):
        return folder
    storage, path = open_storage(folder, storage_options, filesystem)
    path = os.fspath(path) if storage.is_local else path
    if not storage.exists(path):
        raise PathNotFoundError(f"no such partition folder: {storage.url(path)}", file=storage.url(path))
    if not storage.isdir(path):
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    name = storage.name(path)
    entries = storage.list(path)
    if folder_kind(path, entries, storage) != "partition":
        uploads = tiered.partitions_at(storage, path, name, entries, parent_name=storage.name(storage.parent(path)))
        if uploads:
            return _remote_partition(storage, storage.parent(path), uploads[0], [], tiered_keys)
    tp = partition_of_name(name)
    if tp is None:
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    return Partition(tp[0], tp[1], path, storage, None, None, _parent_log_starts(storage, path).get(tp),
                     listing=tuple(entries))

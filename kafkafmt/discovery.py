"""Finding Kafka data: roots (paths, URLs, lists of both) -> log dirs -> partitions -> segments.

* A folder is a *partition folder* when its name is ``<topic>-<partition>`` and it holds segment
  files (or, empty, sits beside other partition folders in a log dir). A folder that holds partition
  folders or ``meta.properties`` is a *log dir*, whatever its own name -- so ``kafka-logs-1`` (several
  brokers on one host) is a log dir, not partition 1 of a topic ``kafka-logs``. `find_log_dirs` finds
  log dirs at any depth below a root.
* Tiered-storage uploads (`kafkafmt.tiered`: Kafka's and Aiven's layouts) are partitions too; a
  partition with uploads and a local folder is one partition, its segments merged in offset order.
* `find_partitions` is the one discovery every door uses: the library, the command line, Spark's
  batch planner and its stream reader.
"""
from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass

from kafkafmt import tiered
from kafkafmt.errors import KafkafmtWarning, NotALogDirError, PathNotFoundError, StorageError
from kafkafmt.names import (holds_segment_files, is_leftover_dir, is_leftover_segment_file, partition_of_name,
                            SEGMENT_LOG)
from kafkafmt.reports import ReportEntry, ReportKind
from kafkafmt.segments import LOCAL, Segment
from kafkafmt.storage import open_storage

__all__ = ["Partition", "folder_kind", "find_log_dirs", "list_partitions", "list_segments", "find_partitions",
           "resolve_partition"]


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


def folder_kind(path, entries=None, storage=None):
    """"partition", "log_dir" or None for a folder (see the module docstring for the rules)."""
    entries = _listing(path, storage) if entries is None else entries
    names = [e.name for e in entries]
    if "meta.properties" in names:
        return "log_dir"
    subdirs = [e for e in entries if e.is_dir]
    if partition_of_name(_name(path, storage)) is not None and holds_segment_files(names) and not any(
            partition_of_name(d.name) is not None for d in subdirs):
        return "partition"
    for d in subdirs:
        if partition_of_name(d.name) is not None and holds_segment_files(
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
        if sub and not holds_segment_files([s.name for s in sub]):
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
        elif is_leftover_segment_file(name) and report is not None:
            report.append(ReportEntry(ReportKind.LEFTOVER, (storage or LOCAL).url(e.path),
                                      "broker leftover (deleted/cleaned/swap file) skipped"))
    segments.sort(key=lambda s: s.base_offset)
    return segments


def _source(path, storage_options=None, filesystem=None):
    """(storage or None for the local disk, path) of a path or URL."""
    storage, p = open_storage(path, storage_options, filesystem)
    return (None, os.fspath(p)) if storage.is_local else (storage, p)


def resolve_partition(folder, storage_options=None, filesystem=None):
    """The `Partition` a folder path or URL names: a ``<topic>-<partition>`` folder, or a tiered
    upload folder of Kafka's layout (``<topic>-<partition>-<topicId>``)."""
    if isinstance(folder, Partition):
        return folder
    st, path = _source(folder, storage_options, filesystem)
    storage = st or LOCAL
    if not storage.exists(path):
        raise PathNotFoundError(f"no such partition folder: {storage.url(path)}", file=storage.url(path))
    if not storage.isdir(path):
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    name = storage.name(path)
    if tiered.parse_kafka_partition_dir(name) is not None and folder_kind(path, storage=st) != "partition":
        remote = tiered.list_remote_partitions(storage, path)
        if remote:
            return _remote_partition(remote[0], storage, None, [])
    tp = partition_of_name(name)
    if tp is None:
        raise NotALogDirError(f"not a partition folder (<topic>-<partition>): {storage.url(path)}",
                              file=storage.url(path))
    return Partition(tp[0], tp[1], path, None, st)


def _remote_partition(rp, storage, log_dir, report, keys=None):
    """A tiered-storage partition (`kafkafmt.tiered.RemotePartition`) as a Partition; uploads
    superseded by a later upload of the same segment are reported."""
    for s in rp.superseded:
        report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(s.log),
                                  f"upload {s.segment_id} of segment {s.base_offset} superseded by a later upload "
                                  f"(it ends at offset {s.end_offset}); skipped"))
    segs = tuple(Segment.of_remote(s, None if storage.is_local else storage, keys) for s in rp.segments)
    return Partition(rp.topic, rp.partition, rp.path, log_dir, None if storage.is_local else storage, segs)


def find_partitions(roots, topics=None, partitions=None, report=None, storage_options=None, filesystem=None,
                    tiered_keys=None):
    """Every partition under one root or a list of roots (paths or URLs, local and remote mixed):
    partition folders, log dirs or folders holding log dirs at any depth, and tiered-storage
    uploads (Kafka's and Aiven's layouts). A partition that has tiered uploads and a local folder
    is one partition: the uploads (older) and the local segments (newer) merged in offset order,
    a segment in both read once (the local copy), a gap between them reported. tiered_keys:
    {key id: RSA private key (PEM)} for encrypted Aiven uploads."""
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    report = [] if report is None else report
    found = _find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys)
    _warn_if_nothing_matched(roots, found, topics, partitions)
    return found


def _warn_if_nothing_matched(roots, found, topics, partitions):
    """A KafkafmtWarning when a read would silently give nothing: no partition at all under the
    roots, or a topic / partition asked for that none of them has (a typo, a wrong prefix)."""
    where = ", ".join(map(str, roots))
    if not found and topics is None and partitions is None:
        warnings.warn(f"no partition folders, log dirs or tiered-storage uploads under {where}", KafkafmtWarning,
                      stacklevel=3)
        return
    names = {topics} if isinstance(topics, str) else set(topics or ())
    missing = sorted(names - {p.topic for p in found}) if partitions is None else []
    if missing:
        warnings.warn(f"no partition of topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} under {where}",
                      KafkafmtWarning, stacklevel=3)
    wanted = {partitions} if isinstance(partitions, int) else set(partitions or ())
    gone = sorted(wanted - {p.partition for p in found})
    if gone:
        warnings.warn(f"no partition {', '.join(map(str, gone))} under {where}"
                      + (f" of {', '.join(sorted(names))}" if names else ""), KafkafmtWarning, stacklevel=3)


def _find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys):
    plain, remote = [], []
    topics_set = None if topics is None else set([topics] if isinstance(topics, str) else topics)
    parts_set = None if partitions is None else set([partitions] if isinstance(partitions, int) else partitions)
    for root in roots:
        st, path = _source(root, storage_options, filesystem)
        storage = st or LOCAL
        if storage.isdir(path) and folder_kind(path, storage=st) == "partition":
            plain += list_partitions(path, topics, partitions, report, storage=st)
            continue
        log_dirs = find_log_dirs(path, storage=st)
        for log_dir in log_dirs:
            plain += list_partitions(log_dir, topics, partitions, report, storage=st)
        if not log_dirs:
            for rp in tiered.list_remote_partitions(storage, path, keys=tiered_keys):
                if (topics_set is None or rp.topic in topics_set) and (parts_set is None or rp.partition in parts_set):
                    for problem in rp.problems:
                        report.append(ReportEntry(ReportKind.LEFTOVER, storage.url(rp.path), problem))
                    remote.append(_remote_partition(rp, storage, path, report, tiered_keys))
    if not remote:
        return plain
    out = []
    merged = set()
    for p in plain:
        ups = [r for r in remote if (r.topic, r.partition) == (p.topic, p.partition)]
        if ups and (p.topic, p.partition) not in merged:
            merged.add((p.topic, p.partition))
            p = _merge(p, ups, report)
        out.append(p)
    out += [r for r in remote if (r.topic, r.partition) not in merged]
    out.sort(key=lambda q: (q.topic, q.partition))
    return out


def _merge(local, uploads, report):
    """A local partition with its tiered uploads: one segment list in offset order."""
    own = local.list_segments(report)
    have = {s.base_offset for s in own}
    older = sorted((s for u in uploads for s in u.segments if s.base_offset not in have), key=lambda s: s.base_offset)
    segs = older + own
    segs.sort(key=lambda s: s.base_offset)
    first_local = own[0].base_offset if own else None
    if older and first_local is not None:
        prev = [s for s in older if s.base_offset < first_local]
        if prev:
            last = prev[-1]
            end = tiered.segment_end_offset(last.storage or LOCAL, last.remote, keys=last.keys)
            if end + 1 < first_local:
                report.append(ReportEntry(ReportKind.GAP, local.url,
                                          f"offsets {end + 1}..{first_local - 1} are in neither the tiered uploads "
                                          f"(they end at {end}) nor the local segments (from {first_local})",
                                          offset=end + 1))
    return dataclasses.replace(local, segments=tuple(segs))

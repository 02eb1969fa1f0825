"""Tiered-storage (KIP-405) uploads in object stores, behind one `TieredLayout` interface: the segments and
partitions found by listing (no `__remote_log_metadata` needed) and how an upload is read.

The layouts register themselves in `LAYOUTS` (`register_layout`): Kafka's ``LocalTieredStorage``
(`kafkafmt.log.tiered._kafka`) and Aiven's tiered-storage-for-apache-kafka (`kafkafmt.log.tiered._aiven`); a new
layout is one more module with one more subclass.

:func:`list_remote_partitions` walks a root and returns, per (topic, partition, topic id), the segments in offset
order; several uploads of one base offset (a new leader re-uploading) are resolved to the one reaching the highest
end offset, the others returned as ``superseded``.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from kafkafmt._util.deprecation import renamed_keyword
from kafkafmt.errors import KafkafmtError
from kafkafmt.storage import Blob

__all__ = ["will_finish", "ID", "TOPIC", "SIDE_FILE_KINDS", "looks_tiered", "RemoteSegment", "RemotePartition", "TieredLayout", "LAYOUTS",
           "register_layout", "layout_named", "open_remote_log", "read_remote_side_file", "segment_end_offset",
           "list_remote_partitions", "partitions_at", "finish_partitions"]

#: a Kafka Uuid's text (22 characters of URL-safe base64) and a topic name, in object names
ID = r"[A-Za-z0-9_-]{22}"
TOPIC = r"[A-Za-z0-9._-]+"
#: the side files an upload may hold beside its .log
SIDE_FILE_KINDS = ("index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint")

#: the tiered-storage layouts kafkafmt recognises, in the order they are tried (filled by `register_layout`)
LAYOUTS = []


def register_layout(layout):
    """Add a layout (an instance of a `TieredLayout` subclass) to `LAYOUTS`; returns it."""
    if layout not in LAYOUTS:
        LAYOUTS.append(layout)
    return layout


def layout_named(name):
    """The registered layout called ``name``."""
    return next(layout for layout in LAYOUTS if layout.name == name)


def looks_tiered(names, prefix="") -> bool:
    """True if any of these folder names is a tiered-storage partition or topic folder of a registered layout:
    a cheap test on one listing before :func:`list_remote_partitions`."""
    return any(layout.looks(n, prefix) for n in names for layout in LAYOUTS)


# ------------------------------------------------------------------------------------------------
# listing

@dataclass
class RemoteSegment:
    """One uploaded segment. ``files`` maps kinds to object paths: Kafka layout ``log``, ``index``,
    ``timeindex``, ``txnindex``, ``snapshot``, ``leader_epoch_checkpoint``; Aiven layout ``log``,
    ``indexes``, ``manifest``. ``size`` is the ``.log`` object's size as listed (for Aiven
    segments stored transformed, ``manifest.original_size`` is the segment's). ``end_offset`` is
    known from an Aiven manifest, or once :func:`segment_end_offset` computed it. ``versions``:
    each object's version as listed (reads stay on it: `kafkafmt.storage.version_of`)."""
    layout: "TieredLayout"
    topic: str
    partition: int
    topic_id: str
    base_offset: int
    segment_id: str
    files: dict
    sizes: dict
    end_offset: Optional[int] = None
    manifest: Optional[object] = None      # an AivenManifest (kafkafmt.log.tiered._aiven)
    versions: dict = field(default_factory=dict)

    @property
    def log(self):
        return self.files.get("log")

    @property
    def size(self):
        return self.sizes.get("log", 0)

    @property
    def original_size(self):
        """Bytes of the segment as the broker wrote it."""
        return self.manifest.original_size if self.manifest is not None else self.size

    @property
    def index(self):
        return self.files.get("index")

    @property
    def timeindex(self):
        return self.files.get("timeindex")

    @property
    def txnindex(self):
        return self.files.get("txnindex")


@dataclass
class RemotePartition:
    """The segments of one (topic, partition, topic id) under a root, in base-offset order (``superseded``:
    other uploads of their base offsets; ``storage``: the `kafkafmt.storage` Storage it was listed in, once
    discovery found it)."""
    layout: "TieredLayout"
    topic: str
    partition: int
    topic_id: str
    path: str
    segments: list = field(default_factory=list)
    superseded: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    storage: object = field(default=None, repr=False, compare=False)    # where it was listed (set by discovery)

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"

    def __repr__(self):     # a summary: a partition can have thousands of uploads
        return (f"<RemotePartition {self.name} ({self.layout.name} layout, topic id {self.topic_id}): "
                f"{len(self.segments)} segments, {len(self.superseded)} superseded, {len(self.problems)} problems>")


@renamed_keyword("keys", "tiered_keys")
def list_remote_partitions(storage, root, *, prefix="", max_depth=4, read_manifests=True, resolve=True, tiered_keys=None):
    """Every tiered-storage partition under ``root`` (any of `LAYOUTS`, recognised by names).

    One listing per folder visited; folders that are no layout's are descended into up to
    ``max_depth`` levels (a ``kafka-tiered-storage`` folder, key prefixes). Aiven manifests are
    read (one small request per segment) unless ``read_manifests`` is False. Duplicate uploads of
    one base offset are resolved when ``resolve`` (reading Aiven manifests, or the tail of each
    duplicate Kafka-layout ``.log`` from its last index entry).
    """
    out = []
    root = str(root)
    entries = storage.list(root)
    found = partitions_at(storage, root, storage.name(root), entries, prefix,
                          parent_name=storage.name(storage.parent(root)))
    if found is None:
        _walk(storage, entries, prefix, max_depth, out)
    else:
        out += found
    return finish_partitions(storage, out, read_manifests=read_manifests, resolve=resolve, tiered_keys=tiered_keys)


def partitions_at(storage, path, name, entries, prefix="", parent_name=None, listing=None):
    """The tiered-storage partitions a folder is or holds (its listing given), by the first of
    `LAYOUTS` that recognises it; None when it is no layout's (so a walk descends into it).
    ``listing(path)``: the entries of a folder below it (a walk's cached listings; by default
    ``storage.list``)."""
    for layout in LAYOUTS:
        found = layout.partitions_at(storage, path, name, entries, prefix, parent_name,
                                     listing=listing or storage.list)
        if found is not None:
            return found
    return None


def will_finish(storage, parts, *, read_manifests=True):
    """Tell the storage what `finish_partitions` will read of these partitions, in that order
    (`kafkafmt.storage.Storage.will_read`: an object store fetches it ahead)."""
    storage.will_read([item for part in parts for item in part.layout.first_reads(part, read_manifests)])


@renamed_keyword("keys", "tiered_keys")
def finish_partitions(storage, parts, *, read_manifests=True, resolve=True, tiered_keys=None):
    """Partitions found by `partitions_at`, completed (manifests, duplicate uploads) and sorted."""
    for part in parts:
        part.layout.finish(storage, part, read_manifests=read_manifests, resolve=resolve, tiered_keys=tiered_keys)
    parts.sort(key=lambda p: (p.topic, p.partition, p.topic_id, p.layout.name))
    return parts


def _walk(storage, entries, prefix, depth, out):
    for e in entries:
        if not e.is_dir:
            continue
        sub = storage.list(e.path)
        found = partitions_at(storage, e.path, e.name, sub, prefix)
        if found is not None:
            out += found
        elif depth > 1:
            _walk(storage, sub, prefix, depth - 1, out)


class TieredLayout:
    """One tiered-storage layout: how its folders and objects are named, and how an upload is read.
    `KafkaTieredLayout` and `AivenLayout` are the two known; a new layout is one more subclass,
    registered in `LAYOUTS`."""

    name = None

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __eq__(self, other):        # layouts are stateless: one per class
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __reduce__(self):           # pickled by name (Spark ships segments to executors)
        return layout_named, (self.name,)

    def looks(self, name, prefix=""):
        """True if a folder of this name is one of this layout's partition or topic folders."""
        raise NotImplementedError

    def partitions_at(self, storage, path, name, entries, prefix, parent_name, listing=None):
        """The `RemotePartition`s this folder is or holds in this layout, or None (``listing(path)``: the
        entries of a folder below it)."""
        raise NotImplementedError

    def first_reads(self, part, read_manifests=True):
        """``(path, size, version)`` of the objects `finish` reads whole, in order (none by default)."""
        return []

    def finish(self, storage, part, *, read_manifests, resolve, tiered_keys=None):
        """Complete a partition after listing: of duplicate uploads of one base offset keep the one
        reaching the highest end offset (a new leader's re-upload), the others ``superseded``."""
        by_offset = OrderedDict()
        for seg in sorted(part.segments, key=lambda s: (s.base_offset, s.segment_id)):
            by_offset.setdefault(seg.base_offset, []).append(seg)
        keep = []
        for segs in by_offset.values():
            if len(segs) == 1 or not resolve:
                keep.extend(segs)
                continue
            for s in segs:
                if s.end_offset is None:
                    try:
                        segment_end_offset(storage, s, tiered_keys=tiered_keys)
                    except (KafkafmtError, ValueError) as exc:
                        part.problems.append(f"{storage.url(s.log)}: end offset unknown ({exc})")
            segs.sort(key=lambda s: (-1 if s.end_offset is None else s.end_offset, s.original_size, s.segment_id),
                      reverse=True)
            keep.append(segs[0])
            part.superseded.extend(segs[1:])
        part.segments = keep

    def open_log(self, storage, seg, *, read_ahead=None, tiered_keys=None) -> Blob:
        """A Blob of the segment's original bytes (``.size`` = what the broker wrote)."""
        return storage.open(seg.log, size=seg.size, read_ahead=read_ahead, version=seg.versions.get("log"))

    def side_file(self, storage, seg, kind, *, tiered_keys=None):
        """The bytes of a side file of the upload (None when it has none)."""
        path = seg.files.get(kind)
        return None if path is None else storage.read_bytes(path)

    def has_side_file(self, storage, seg, kind):
        return kind in seg.files

    def end_offset(self, storage, seg, *, tiered_keys=None):
        """The last offset in the upload (``base_offset - 1`` when it holds no batch): from the last
        offset-index entry's position, the framing scan to the end of the ``.log``."""
        from kafkafmt.log._framing import last_offset_from
        from kafkafmt.log.sidefiles import read_index

        pos = 0
        index = self.side_file(storage, seg, "index", tiered_keys=tiered_keys)
        if index:
            entries = read_index(index, seg.base_offset)
            if len(entries):
                pos = int(entries["position"][-1])
        with self.open_log(storage, seg, read_ahead=256 * 1024, tiered_keys=tiered_keys) as blob:
            return last_offset_from(blob, pos if pos <= blob.size else 0, seg.base_offset)


# ------------------------------------------------------------------------------------------------
@renamed_keyword("keys", "tiered_keys")
def open_remote_log(storage, seg, *, read_ahead=None, tiered_keys=None) -> Blob:
    """A Blob of the segment's original bytes (``.size`` = what the broker wrote): its layout's."""
    return seg.layout.open_log(storage, seg, read_ahead=read_ahead, tiered_keys=tiered_keys)


@renamed_keyword("keys", "tiered_keys")
def read_remote_side_file(storage, seg, kind, *, tiered_keys=None) -> Optional[bytes]:
    """The bytes of a segment's ``index``, ``timeindex``, ``txnindex``, ``snapshot`` or
    ``leader_epoch_checkpoint`` (None when the upload has none)."""
    if kind not in SIDE_FILE_KINDS:
        raise ValueError(f"unknown side file kind {kind!r}")
    return seg.layout.side_file(storage, seg, kind, tiered_keys=tiered_keys)


@renamed_keyword("keys", "tiered_keys")
def segment_end_offset(storage, seg, *, tiered_keys=None) -> int:
    """The last offset in the segment (``base_offset - 1`` when it holds no batch); sets
    ``seg.end_offset``. Aiven: from the manifest; otherwise from the last ``.index`` entry's
    position, the framing scan (ranged reads) to the end of the ``.log``."""
    if seg.end_offset is None:
        seg.end_offset = seg.layout.end_offset(storage, seg, tiered_keys=tiered_keys)
    return seg.end_offset

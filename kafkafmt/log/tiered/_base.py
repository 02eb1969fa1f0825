"""Tiered-storage (KIP-405) layouts in object stores: recognise them from object names and read them.

Two layouts are known, both found by listing (no `__remote_log_metadata` needed):

* **Kafka's** ``LocalTieredStorage`` (the reference RemoteStorageManager of Kafka's own tests,
  ``RemoteTopicPartitionDirectory`` / ``RemoteLogSegmentFileset``)::

      <root>/<topic>-<partition>-<topicId>/<baseOffset20>-<segmentId>.{log,index,timeindex,txnindex,snapshot,leader_epoch_checkpoint}

  Files are byte-identical copies of the broker's. Ids are Kafka ``Uuid`` strings (22 characters
  of URL-safe base64 without padding); topic names may contain ``-``. Kafka 3.6 wrote the offset
  without zero padding, 3.5 wrote ``<segmentId>.<suffix>`` only (the base offset is then read from
  the ``.log``'s first batch).
* **Aiven's** tiered-storage-for-apache-kafka (``ObjectKeyFactory``)::

      <prefix><topic>-<topicId>/<partition>/<baseOffset20>-<segmentId>.{log,indexes,rsm-manifest}

  The ``.rsm-manifest`` (JSON, :func:`parse_aiven_manifest`) says how the ``.log`` was stored:
  as is, or cut into chunks of ``originalChunkSize`` bytes each zstd-compressed (and/or AES-GCM
  encrypted) and concatenated; ``.indexes`` holds the offset, time, producer-snapshot,
  leader-epoch and transaction indexes back to back at the positions the manifest gives.
  :class:`AivenSegmentBlob` reads a byte range of the original segment by fetching and
  decompressing only the chunks it spans. Encrypted segments (AES-256-GCM chunks whose data key
  the manifest holds wrapped with an RSA key) are read when ``keys={key_id: private key PEM}``
  is given (needs the ``cryptography`` package), else raise
  :class:`~kafkafmt.errors.UnsupportedLayoutError` naming the key.

:func:`list_remote_partitions` walks a root and returns, per (topic, partition, topic id), the
segments in offset order; several uploads of one base offset (a new leader re-uploading) are
resolved to the one reaching the highest end offset, the others returned as ``superseded``.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
import uuid as _uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from kafkafmt.errors import KafkafmtError, ObjectChangedError, UnsupportedLayoutError
from kafkafmt.storage import Blob

__all__ = [
    "KAFKA_SUFFIXES", "AIVEN_SUFFIXES", "kafka_id", "parse_kafka_id",
    "parse_kafka_partition_dir", "parse_kafka_segment_file", "parse_aiven_topic_dir", "parse_aiven_segment_file",
    "kafka_segment_file_name", "kafka_partition_dir_name", "aiven_segment_key", "looks_tiered",
    "RemoteSegment", "RemotePartition", "AivenManifest", "parse_aiven_manifest", "read_aiven_manifest",
    "AivenSegmentBlob", "oaep_decrypt", "open_remote_log", "read_remote_side_file", "segment_end_offset",
    "list_remote_partitions", "partitions_at", "finish_partitions", "TieredLayout", "KafkaTieredLayout",
    "AivenLayout", "LAYOUTS",
]

_ID = r"[A-Za-z0-9_-]{22}"
_TOPIC = r"[A-Za-z0-9._-]+"
_KAFKA_DIR = re.compile(rf"^(?P<topic>{_TOPIC})-(?P<partition>\d+)-(?P<topic_id>{_ID})$")
_KAFKA_FILE = re.compile(rf"^(?:(?P<offset>\d+)-)?(?P<segment_id>{_ID})(?P<suffix>\.[a-z_]+)$")
_AIVEN_DIR = re.compile(rf"^(?P<topic>{_TOPIC})-(?P<topic_id>{_ID})$")
_AIVEN_FILE = re.compile(rf"^(?P<offset>\d{{20}})-(?P<segment_id>{_ID})\.(?P<suffix>log|indexes|rsm-manifest)$")

#: Kafka layout: file suffix -> kind (RemoteLogSegmentFileset.RemoteLogSegmentFileType)
KAFKA_SUFFIXES = {".log": "log", ".index": "index", ".timeindex": "timeindex", ".txnindex": "txnindex",
                  ".snapshot": "snapshot", ".leader_epoch_checkpoint": "leader_epoch_checkpoint"}
#: Aiven layout: suffix -> kind (ObjectKeyFactory.Suffix)
AIVEN_SUFFIXES = {"log": "log", "indexes": "indexes", "rsm-manifest": "manifest"}
#: Aiven manifest segmentIndexes names -> kafkafmt side-file kinds
_AIVEN_INDEX_NAMES = {"index": "offset", "timeindex": "timestamp", "snapshot": "producerSnapshot",
                      "leader_epoch_checkpoint": "leaderEpoch", "txnindex": "transaction"}
_MAX_OFFSET = (1 << 63) - 1


# ------------------------------------------------------------------------------------------------
# names

def kafka_id(value) -> str:
    """Kafka's string form of a Uuid (``uuid.UUID`` or 16 bytes): URL-safe base64, no padding."""
    raw = value.bytes if isinstance(value, _uuid.UUID) else bytes(value)
    if len(raw) != 16:
        raise ValueError("a Kafka Uuid has 16 bytes")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def parse_kafka_id(text: str) -> _uuid.UUID:
    """The ``uuid.UUID`` of a Kafka Uuid string (ValueError if it is not one)."""
    if not re.fullmatch(_ID, text or ""):
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return _uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def parse_kafka_partition_dir(name: str):
    """``(topic, partition, topic_id)`` of a Kafka remote partition folder name, else None."""
    m = _KAFKA_DIR.match(name)
    return (m["topic"], int(m["partition"]), m["topic_id"]) if m else None


def parse_kafka_segment_file(name: str):
    """``(base_offset or None, segment_id, kind)`` of a Kafka remote segment file name, else None."""
    m = _KAFKA_FILE.match(name)
    if not m or m["suffix"] not in KAFKA_SUFFIXES:
        return None
    return (int(m["offset"]) if m["offset"] else None), m["segment_id"], KAFKA_SUFFIXES[m["suffix"]]


def parse_aiven_topic_dir(name: str, prefix: str = ""):
    """``(topic, topic_id)`` of an Aiven topic folder name (after ``prefix``), else None."""
    if prefix and not name.startswith(prefix):
        return None
    m = _AIVEN_DIR.match(name[len(prefix):])
    return (m["topic"], m["topic_id"]) if m else None


def parse_aiven_segment_file(name: str):
    """``(base_offset, segment_id, kind)`` of an Aiven object name (kind: log, indexes, manifest)."""
    m = _AIVEN_FILE.match(name)
    return (int(m["offset"]), m["segment_id"], AIVEN_SUFFIXES[m["suffix"]]) if m else None


def looks_tiered(names, prefix="") -> bool:
    """True if any of these folder names is a tiered-storage partition (Kafka layout) or topic
    (Aiven layout) folder: a cheap test on one listing before :func:`list_remote_partitions`."""
    return any(parse_kafka_partition_dir(n) or parse_aiven_topic_dir(n, prefix)
               or n == "kafka-tiered-storage" for n in names)


def kafka_partition_dir_name(topic, partition, topic_id) -> str:
    return f"{topic}-{int(partition)}-{topic_id}"


def kafka_segment_file_name(base_offset, segment_id, kind) -> str:
    suffix = {v: k for k, v in KAFKA_SUFFIXES.items()}[kind]
    return f"{int(base_offset):020d}-{segment_id}{suffix}"


def aiven_segment_key(topic, topic_id, partition, base_offset, segment_id, kind, prefix="") -> str:
    suffix = {v: k for k, v in AIVEN_SUFFIXES.items()}[kind]
    return f"{prefix}{topic}-{topic_id}/{int(partition)}/{int(base_offset):020d}-{segment_id}.{suffix}"


# ------------------------------------------------------------------------------------------------
# listing

@dataclass
class RemoteSegment:
    """One uploaded segment. ``files`` maps kinds to object paths: Kafka layout ``log``, ``index``,
    ``timeindex``, ``txnindex``, ``snapshot``, ``leader_epoch_checkpoint``; Aiven layout ``log``,
    ``indexes``, ``manifest``. ``size`` is the ``.log`` object's size as listed (for Aiven
    segments stored transformed, ``manifest.original_size`` is the segment's). ``end_offset`` is
    known from an Aiven manifest, or once :func:`segment_end_offset` computed it. ``versions``:
    each object's version as listed (reads stay on it: `kafkafmt.storage._storage.version_of`)."""
    layout: "TieredLayout"
    topic: str
    partition: int
    topic_id: str
    base_offset: int
    segment_id: str
    files: dict
    sizes: dict
    end_offset: Optional[int] = None
    manifest: Optional["AivenManifest"] = None
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
    """The segments of one (topic, partition, topic id) under a root, in base-offset order."""
    layout: "TieredLayout"
    topic: str
    partition: int
    topic_id: str
    path: str
    segments: list = field(default_factory=list)
    superseded: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"


def list_remote_partitions(storage, root, *, prefix="", max_depth=4, read_manifests=True, resolve=True, keys=None):
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
    return finish_partitions(storage, out, read_manifests=read_manifests, resolve=resolve, keys=keys)


def partitions_at(storage, path, name, entries, prefix="", parent_name=None):
    """The tiered-storage partitions a folder is or holds (its listing given), by the first of
    `LAYOUTS` that recognises it; None when it is no layout's (so a walk descends into it)."""
    for layout in LAYOUTS:
        found = layout.partitions_at(storage, path, name, entries, prefix, parent_name)
        if found is not None:
            return found
    return None


def finish_partitions(storage, parts, *, read_manifests=True, resolve=True, keys=None):
    """Partitions found by `partitions_at`, completed (manifests, duplicate uploads) and sorted."""
    for part in parts:
        part.layout.finish(storage, part, read_manifests=read_manifests, resolve=resolve, keys=keys)
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
    `KafkaTieredLayout` and `AivenLayout` are the two known; a new layout is one more subclass in
    `LAYOUTS`."""

    name = None

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __eq__(self, other):        # layouts are stateless: one per class
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __reduce__(self):           # pickled by name (Spark ships segments to executors)
        return _layout, (self.name,)

    def partitions_at(self, storage, path, name, entries, prefix, parent_name):
        """The `RemotePartition`s this folder is or holds in this layout, or None."""
        raise NotImplementedError

    def finish(self, storage, part, *, read_manifests, resolve, keys=None):
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
                        segment_end_offset(storage, s, keys=keys)
                    except (KafkafmtError, ValueError) as exc:
                        part.problems.append(f"{storage.url(s.log)}: end offset unknown ({exc})")
            segs.sort(key=lambda s: (-1 if s.end_offset is None else s.end_offset, s.original_size, s.segment_id),
                      reverse=True)
            keep.append(segs[0])
            part.superseded.extend(segs[1:])
        part.segments = keep

    def open_log(self, storage, seg, *, read_ahead=None, keys=None) -> Blob:
        """A Blob of the segment's original bytes (``.size`` = what the broker wrote)."""
        return storage.open(seg.log, size=seg.size, read_ahead=read_ahead, version=seg.versions.get("log"))

    def side_file(self, storage, seg, kind, *, keys=None):
        """The bytes of a side file of the upload (None when it has none)."""
        path = seg.files.get(kind)
        return None if path is None else storage.read_bytes(path)

    def has_side_file(self, storage, seg, kind):
        return kind in seg.files

    def end_offset(self, storage, seg, *, keys=None):
        """The last offset in the upload (``base_offset - 1`` when it holds no batch): from the last
        offset-index entry's position, the framing scan to the end of the ``.log``."""
        from kafkafmt.log._framing import last_offset_from
        from kafkafmt.log._sidefiles import read_index

        pos = 0
        index = self.side_file(storage, seg, "index", keys=keys)
        if index:
            entries = read_index(index, seg.base_offset)
            if len(entries):
                pos = int(entries["position"][-1])
        with self.open_log(storage, seg, read_ahead=256 * 1024, keys=keys) as blob:
            return last_offset_from(blob, pos if pos <= blob.size else 0, seg.base_offset)


class KafkaTieredLayout(TieredLayout):
    """Kafka's ``LocalTieredStorage``: ``<topic>-<partition>-<topicId>/<offset20>-<segmentId>.<suffix>``,
    files byte-identical to the broker's."""

    name = "kafka"

    def partitions_at(self, storage, path, name, entries, prefix, parent_name):
        parsed = parse_kafka_partition_dir(name)
        files = [e for e in entries if not e.is_dir]
        if parsed and (any(parse_kafka_segment_file(e.name) for e in files) or not entries):
            return [_kafka_partition(storage, path, parsed, files)]
        return None


class AivenLayout(TieredLayout):
    """Aiven's tiered-storage-for-apache-kafka: ``<prefix><topic>-<topicId>/<partition>/<offset20>-<segmentId>
    .{log,indexes,rsm-manifest}``; the manifest says how the ``.log`` is stored (as is, or chunked,
    compressed, encrypted) and where each index lies in ``.indexes``."""

    name = "aiven"

    def partitions_at(self, storage, path, name, entries, prefix, parent_name):
        aiven = parse_aiven_topic_dir(name, prefix)
        numeric = [e for e in entries if e.is_dir and e.name.isdigit()]
        if aiven and numeric:
            return [_aiven_partition(storage, e.path, aiven, int(e.name), storage.list(e.path)) for e in numeric]
        files = [e for e in entries if not e.is_dir]
        if name.isdigit() and parent_name and parse_aiven_topic_dir(parent_name, prefix) \
                and any(parse_aiven_segment_file(e.name) for e in files):
            return [_aiven_partition(storage, path, parse_aiven_topic_dir(parent_name, prefix), int(name), entries)]
        return None

    def finish(self, storage, part, *, read_manifests, resolve, keys=None):
        if read_manifests:
            for seg in part.segments:
                try:
                    read_aiven_manifest(storage, seg)
                except (KafkafmtError, ValueError) as exc:
                    part.problems.append(f"{storage.url(seg.files['manifest'])}: {exc}")
        super().finish(storage, part, read_manifests=read_manifests, resolve=resolve, keys=keys)

    def open_log(self, storage, seg, *, read_ahead=None, keys=None) -> Blob:
        """The ``.log`` object itself when stored untransformed; else an `AivenSegmentBlob` (encrypted
        segments need ``keys``, else UnsupportedLayoutError names the key)."""
        m = read_aiven_manifest(storage, seg)
        if m.encryption is not None:
            m.data_key(keys, url=storage.url(seg.log))     # fails early, before any request for the .log
        raw = super().open_log(storage, seg, read_ahead=read_ahead, keys=keys)
        if not m.transformed:
            if raw.size != m.original_size:
                raw.close()
                raise ObjectChangedError(f"changed size: the .log object has {seg.size} bytes, its manifest says "
                                         f"{m.original_size}", file=storage.url(seg.log))
            return raw
        try:
            return AivenSegmentBlob(raw, m, keys=keys)
        except Exception:
            raw.close()
            raise

    def side_file(self, storage, seg, kind, *, keys=None):
        m = read_aiven_manifest(storage, seg)
        where = m.indexes.get(kind)
        if where is None or "indexes" not in seg.files:
            return None
        url = storage.url(seg.files["indexes"])
        aes = aad = None
        if m.encryption is not None:
            key, aad = m.data_key(keys, url=url)
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            aes = AESGCM(key)
        pos, size = where
        if pos + size > seg.sizes.get("indexes", 0):
            raise ObjectChangedError(f"the .indexes object has {seg.sizes.get('indexes', 0)} bytes, its manifest "
                                     f"places the {kind} at {pos}..{pos + size}", file=url)
        data = storage.read_bytes(seg.files["indexes"], pos, pos + size) if size else b""
        return _decrypt(aes, data, aad, url) if aes is not None and data else data

    def has_side_file(self, storage, seg, kind):
        return read_aiven_manifest(storage, seg).indexes.get(kind) is not None

    def end_offset(self, storage, seg, *, keys=None):
        m = read_aiven_manifest(storage, seg)
        if m.end_offset is not None:
            return int(m.end_offset)
        return super().end_offset(storage, seg, keys=keys)


#: the tiered-storage layouts kafkafmt recognises, in the order they are tried
LAYOUTS = (KafkaTieredLayout(), AivenLayout())


def _layout(name):
    return next(layout for layout in LAYOUTS if layout.name == name)


def _kafka_partition(storage, path, parsed, files):
    topic, partition, topic_id = parsed
    part = RemotePartition(_layout("kafka"), topic, partition, topic_id, path)
    groups = OrderedDict()
    for e in files:
        p = parse_kafka_segment_file(e.name)
        if p is None:
            part.problems.append(f"{storage.url(e.path)}: not a tiered-storage segment file")
            continue
        off, sid, kind = p
        g = groups.setdefault(sid, {"offset": off, "files": {}, "sizes": {}, "versions": {}})
        if off is not None:
            g["offset"] = off
        g["files"][kind], g["sizes"][kind], g["versions"][kind] = e.path, e.size, e.version
    for sid, g in groups.items():
        files_, sizes = g["files"], g["sizes"]
        if "log" not in files_:
            part.problems.append(f"{storage.url(next(iter(files_.values())))}: segment {sid} has no .log")
            continue
        base = g["offset"]
        if base is None:            # Kafka 3.5 names: <segmentId>.log; the base offset is the first batch's
            with storage.open(files_["log"], size=sizes["log"], version=g["versions"]["log"]) as blob:
                from kafkafmt.log._framing import batch_base_offset

                base = batch_base_offset(blob)
            if base is None:
                part.problems.append(f"{storage.url(files_['log'])}: empty segment without a base offset in its name")
                continue
        part.segments.append(RemoteSegment(part.layout, topic, partition, topic_id, base, sid, files_, sizes,
                                           versions=g["versions"]))
    return part


def _aiven_partition(storage, path, parsed, partition, entries):
    topic, topic_id = parsed
    part = RemotePartition(_layout("aiven"), topic, partition, topic_id, path)
    groups = OrderedDict()
    for e in entries:
        if e.is_dir:
            continue
        p = parse_aiven_segment_file(e.name)
        if p is None:
            part.problems.append(f"{storage.url(e.path)}: not a tiered-storage segment object")
            continue
        off, sid, kind = p
        g = groups.setdefault((off, sid), ({}, {}, {}))
        g[0][kind], g[1][kind], g[2][kind] = e.path, e.size, e.version
    for (off, sid), (files_, sizes, versions) in groups.items():
        if "log" not in files_ or "manifest" not in files_:
            what = "no .log" if "log" not in files_ else "no .rsm-manifest (cannot tell how the .log is stored)"
            part.problems.append(f"{storage.url(next(iter(files_.values())))}: segment {sid}: {what}")
            continue
        part.segments.append(RemoteSegment(part.layout, topic, partition, topic_id, off, sid, files_, sizes,
                                           versions=versions))
    return part


# ------------------------------------------------------------------------------------------------
# Aiven manifests

@dataclass(frozen=True)
class AivenManifest:
    """A parsed ``.rsm-manifest`` (version 1).

    ``original_size`` / ``chunk_size``: the segment's size and the chunk size before transforms;
    ``original_starts``, ``transformed_starts``, ``transformed_sizes``: per-chunk int64 arrays;
    ``compression``: chunks are zstd frames; ``encryption``: the manifest's encryption object (or
    None); ``indexes``: kind -> (position, size) inside ``.indexes`` (None when absent);
    ``metadata``: ``remoteLogSegmentMetadata`` as written (start/end offset, epochs...) or None.
    """
    version: str
    chunk_size: int
    original_size: int
    original_starts: np.ndarray
    transformed_starts: np.ndarray
    transformed_sizes: np.ndarray
    compression: bool
    encryption: Optional[dict]
    indexes: dict
    metadata: Optional[dict]

    @property
    def transformed(self):
        return self.compression or self.encryption is not None

    @property
    def transformed_size(self):
        return int(self.transformed_starts[-1] + self.transformed_sizes[-1]) if len(self.transformed_sizes) else 0

    @property
    def start_offset(self):
        return None if not self.metadata else self.metadata.get("startOffset")

    @property
    def end_offset(self):
        """Last offset of the segment (inclusive, as in RemoteLogSegmentMetadata), if recorded."""
        return None if not self.metadata else self.metadata.get("endOffset")

    def chunk_range(self, start, stop):
        """Chunk numbers ``[first, last + 1)`` holding original bytes [start, stop)."""
        if stop <= start:
            return 0, 0
        return start // self.chunk_size, (stop - 1) // self.chunk_size + 1

    @property
    def key_id(self):
        """Id of the RSA key that wraps the data key (encrypted segments), else None."""
        key = str((self.encryption or {}).get("dataKey") or "")
        return key.split(":", 1)[0] if ":" in key else None

    def encryption_problem(self):
        key_id = self.key_id
        return ("the segment is encrypted (AES-256-GCM chunks, 12-byte IV before each; the data key in the "
                "manifest's encryption.dataKey is wrapped with RSA key "
                + (f"'{key_id}'" if key_id else "(id not recorded)")
                + "): reading it needs that private key: pass keys={"
                + (f"'{key_id}'" if key_id else "KEY_ID") + ": <RSA private key, PEM>}")

    def data_key(self, keys, url=None):
        """(AES data key, AAD) of an encrypted segment, unwrapped with ``keys[key_id]`` (a PEM
        private key as bytes/str, or a ``cryptography`` private key)."""
        key_id = self.key_id
        if not keys or key_id not in keys:
            raise UnsupportedLayoutError(self.encryption_problem(), file=url)
        try:
            from cryptography.hazmat.primitives import serialization
        except ImportError:
            raise UnsupportedLayoutError("reading encrypted segments needs the cryptography package "
                                         "(pip install cryptography)", file=url) from None
        private = keys[key_id]
        if isinstance(private, str):
            private = private.encode()
        if isinstance(private, (bytes, bytearray)):
            private = serialization.load_pem_private_key(bytes(private), password=None)
        wrapped = base64.b64decode(str(self.encryption["dataKey"]).split(":", 1)[1])
        aad = base64.b64decode(self.encryption.get("aad") or "")
        # Aiven: RSA/NONE/OAEPWithSHA3-512AndMGF1Padding (BouncyCastle: MGF1 with the same digest;
        # SunJCE's convention, MGF1 with SHA-1, tried second). OpenSSL's OAEP has no SHA-3 through
        # the cryptography package, so the padding is undone here (RFC 8017, 7.1.2).
        for mgf in ("sha3_512", "sha1"):
            key = oaep_decrypt(private, wrapped, "sha3_512", mgf)
            if key is not None:
                return key, aad
        raise UnsupportedLayoutError(f"RSA key '{key_id}' does not unwrap this segment's data key", file=url)


def _decode_chunk_sizes(text):
    """Aiven's ``transformedChunks``: base64 of a zstd frame of ChunkSizesBinaryCodec's encoding."""
    import zstandard
    raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(text), max_output_size=10 << 20)
    (count,) = struct.unpack_from(">i", raw, 0)
    if count == 0:
        return []
    if count == 1:
        return [struct.unpack_from(">i", raw, 4)[0]]
    base, width = struct.unpack_from(">ib", raw, 4)
    pos = 9
    values = []
    for _ in range(count - 1):
        values.append(int.from_bytes(raw[pos:pos + width], "big") + base)
        pos += width
    values.append(struct.unpack_from(">i", raw, pos)[0])
    return values


def parse_aiven_manifest(data, url=None) -> AivenManifest:
    """Parse an Aiven ``.rsm-manifest`` (bytes or str); UnsupportedLayoutError if it is not one."""
    try:
        doc = json.loads(bytes(data).decode("utf-8") if not isinstance(data, str) else data)
        version = str(doc.get("version"))
        if version != "1":
            raise UnsupportedLayoutError(f"segment manifest version {version!r} (kafkafmt reads version 1)", file=url)
        ci = doc["chunkIndex"]
        chunk, original = int(ci["originalChunkSize"]), int(ci["originalFileSize"])
        if chunk <= 0 or original < 0:
            raise ValueError("chunk sizes must be positive")
        if ci["type"] == "fixed":
            count = -(-original // chunk)
            sizes = [int(ci["transformedChunkSize"])] * count
            if count:
                sizes[-1] = int(ci["finalTransformedChunkSize"])
        elif ci["type"] == "variable":
            sizes = _decode_chunk_sizes(ci["transformedChunks"])
            count = len(sizes)
        else:
            raise UnsupportedLayoutError(f"unknown chunk index type {ci['type']!r}", file=url)
        if count and not (count - 1) * chunk < original <= count * chunk:
            raise ValueError(f"{count} chunks of {chunk} bytes cannot hold {original} bytes")
        tsizes = np.array(sizes, dtype=np.int64)
        tstarts = np.zeros(count, dtype=np.int64)
        if count:
            np.cumsum(tsizes[:-1], out=tstarts[1:])
        indexes = {}
        for kind, key in _AIVEN_INDEX_NAMES.items():
            v = (doc.get("segmentIndexes") or {}).get(key)
            indexes[kind] = None if v is None else (int(v["position"]), int(v["size"]))
        return AivenManifest(version, chunk, original, np.arange(count, dtype=np.int64) * chunk, tstarts, tsizes,
                             bool(doc.get("compression", False)), doc.get("encryption"), indexes,
                             doc.get("remoteLogSegmentMetadata"))
    except KafkafmtError:
        raise
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise UnsupportedLayoutError(f"unreadable segment manifest: {type(exc).__name__}: {exc}", file=url) from None
    except Exception as exc:  # zstandard.ZstdError
        raise UnsupportedLayoutError(f"unreadable segment manifest: {type(exc).__name__}: {exc}", file=url) from None


def read_aiven_manifest(storage, seg) -> AivenManifest:
    """The manifest of an Aiven segment (read once, kept on ``seg``; sets ``seg.end_offset``)."""
    if seg.manifest is None:
        path = seg.files["manifest"]
        seg.manifest = parse_aiven_manifest(storage.read_bytes(path), url=storage.url(path))
        if seg.end_offset is None and seg.manifest.end_offset is not None:
            seg.end_offset = int(seg.manifest.end_offset)
    return seg.manifest


class AivenSegmentBlob(Blob):
    """The original bytes of a chunked (zstd-compressed) Aiven segment, read through its manifest.

    ``read(start, stop)`` fetches the transformed byte range of the chunks [start, stop) spans
    from the ``.log`` object (one request through the object's blob, which reads ahead) and
    decompresses those chunks only; the last ``cache_chunks`` decompressed chunks are kept.
    ``requests`` / ``bytes_fetched`` are the object's.
    """

    def __init__(self, raw: Blob, manifest: AivenManifest, cache_chunks=4, keys=None):
        self._aes = self._aad = None
        if manifest.encryption is not None:
            key, self._aad = manifest.data_key(keys, url=raw.url)
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            self._aes = AESGCM(key)
        if raw.size != manifest.transformed_size:
            raise ObjectChangedError(f"changed size: the .log object has {raw.size} bytes, its manifest says "
                                     f"{manifest.transformed_size}", file=raw.url)
        self.raw, self.manifest = raw, manifest
        self.path, self.url, self.size = raw.path, raw.url, manifest.original_size
        self.cache_chunks = max(1, cache_chunks)
        self._chunks = OrderedDict()
        self._lock = threading.Lock()
        import zstandard
        self._dctx = zstandard.ZstdDecompressor()

    @property
    def requests(self):
        return self.raw.requests

    @property
    def bytes_fetched(self):
        return self.raw.bytes_fetched

    def _chunk(self, i, data, base):
        m = self.manifest
        want = int(min(m.chunk_size, m.original_size - m.original_starts[i]))
        lo = int(m.transformed_starts[i]) - base
        frame = data[lo:lo + int(m.transformed_sizes[i])]
        if self._aes is not None:
            frame = _decrypt(self._aes, frame, self._aad, self.url, int(m.original_starts[i]))
        if not m.compression:
            out = bytes(frame)
        else:
            try:
                out = self._dctx.decompress(frame, max_output_size=want)
            except Exception as exc:  # zstandard.ZstdError
                raise UnsupportedLayoutError(f"chunk {i} does not decompress: {exc}", file=self.url,
                                             position=int(m.original_starts[i])) from None
        if len(out) != want:
            raise UnsupportedLayoutError(f"chunk {i} holds {len(out)} bytes, the manifest says {want}",
                                         file=self.url, position=int(m.original_starts[i]))
        return out

    def read(self, start, stop=None):
        start, stop = self._check_range(start, stop)
        if stop == start:
            return memoryview(b"")
        m = self.manifest
        first, last = m.chunk_range(start, stop)
        with self._lock:
            missing = [i for i in range(first, last) if i not in self._chunks]
            if missing:
                lo, hi = missing[0], missing[-1]
                base = int(m.transformed_starts[lo])
                data = self.raw.read(base, int(m.transformed_starts[hi] + m.transformed_sizes[hi]))
                for i in range(lo, hi + 1):
                    if i not in self._chunks:
                        self._chunks[i] = self._chunk(i, data, base)
            parts = []
            for i in range(first, last):
                self._chunks.move_to_end(i)
                parts.append(self._chunks[i])
            while len(self._chunks) > max(self.cache_chunks, last - first):
                self._chunks.popitem(last=False)
        offset = start - first * m.chunk_size
        if len(parts) == 1:
            return memoryview(parts[0])[offset:offset + stop - start]
        return memoryview(b"".join(parts))[offset:offset + stop - start]

    def release(self, done, upto):
        with self._lock:
            for i in [i for i in self._chunks if (i + 1) * self.manifest.chunk_size <= upto]:
                del self._chunks[i]
        return self.raw.release(done, upto)

    def close(self):
        self._chunks.clear()
        self.raw.close()


def _mgf1(seed, length, hash_name):
    out, counter = b"", 0
    while len(out) < length:
        out += hashlib.new(hash_name, seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def oaep_decrypt(private_key, ciphertext, hash_name="sha3_512", mgf_hash=None, label=b""):
    """RSAES-OAEP decryption (RFC 8017 7.1.2) with any hashlib digest; None if it does not decode.
    ``private_key``: a ``cryptography`` RSA private key."""
    numbers = private_key.private_numbers()
    n, d = numbers.public_numbers.n, numbers.d
    k = (n.bit_length() + 7) // 8
    h = hashlib.new(hash_name)
    hlen = h.digest_size
    c = int.from_bytes(ciphertext, "big")
    if len(ciphertext) != k or c >= n or k < 2 * hlen + 2:
        return None
    em = pow(c, d, n).to_bytes(k, "big")
    masked_seed, masked_db = em[1:1 + hlen], em[1 + hlen:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1(masked_db, hlen, mgf_hash or hash_name)))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1(seed, k - hlen - 1, mgf_hash or hash_name)))
    if em[0] != 0 or db[:hlen] != hashlib.new(hash_name, label).digest():
        return None
    rest = db[hlen:].lstrip(b"\x00")
    if not rest or rest[0] != 1:
        return None
    return rest[1:]


def _decrypt(aes, frame, aad, url, position=None):
    """One Aiven-encrypted chunk: 12-byte IV, then AES-GCM ciphertext with its 16-byte tag."""
    try:
        return aes.decrypt(bytes(frame[:12]), bytes(frame[12:]), aad or None)
    except Exception as exc:  # cryptography.exceptions.InvalidTag
        raise UnsupportedLayoutError(f"encrypted chunk does not decrypt ({type(exc).__name__}): wrong key or "
                                     f"corrupt data", file=url, position=position) from None


# ------------------------------------------------------------------------------------------------
# reading

def open_remote_log(storage, seg, *, read_ahead=None, keys=None) -> Blob:
    """A Blob of the segment's original bytes (``.size`` = what the broker wrote): its layout's."""
    return seg.layout.open_log(storage, seg, read_ahead=read_ahead, keys=keys)


def read_remote_side_file(storage, seg, kind, *, keys=None) -> Optional[bytes]:
    """The bytes of a segment's ``index``, ``timeindex``, ``txnindex``, ``snapshot`` or
    ``leader_epoch_checkpoint`` (None when the upload has none)."""
    if kind not in _AIVEN_INDEX_NAMES:
        raise ValueError(f"unknown side file kind {kind!r}")
    return seg.layout.side_file(storage, seg, kind, keys=keys)


def segment_end_offset(storage, seg, *, keys=None) -> int:
    """The last offset in the segment (``base_offset - 1`` when it holds no batch); sets
    ``seg.end_offset``. Aiven: from the manifest; otherwise from the last ``.index`` entry's
    position, the framing scan (ranged reads) to the end of the ``.log``."""
    if seg.end_offset is None:
        seg.end_offset = seg.layout.end_offset(storage, seg, keys=keys)
    return seg.end_offset

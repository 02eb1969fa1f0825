"""Kafka's own tiered-storage layout, ``LocalTieredStorage`` (the reference RemoteStorageManager of Kafka's
tests, ``RemoteTopicPartitionDirectory`` / ``RemoteLogSegmentFileset``)::

    <root>/<topic>-<partition>-<topicId>/<baseOffset20>-<segmentId>.{log,index,timeindex,txnindex,snapshot,leader_epoch_checkpoint}

Files are byte-identical copies of the broker's. Ids are Kafka ``Uuid`` strings (22 characters of URL-safe
base64 without padding); topic names may contain ``-``. Kafka 3.6 wrote the offset without zero padding, 3.5
wrote ``<segmentId>.<suffix>`` only (the base offset is then read from the ``.log``'s first batch).
"""
from __future__ import annotations

import base64
import re
import uuid as _uuid
from collections import OrderedDict

from kafkafmt.log._names import LOG_SUFFIX, SIDE_FILE_KINDS, SIDE_FILE_SUFFIXES, SNAPSHOT_SUFFIX, segment_file_name
from kafkafmt.log.tiered._base import ID, TOPIC, RemotePartition, RemoteSegment, TieredLayout, register_layout

__all__ = ["KAFKA_SUFFIXES", "kafka_id", "parse_kafka_id", "parse_kafka_partition_dir", "parse_kafka_segment_file",
           "kafka_partition_dir_name", "kafka_segment_file_name", "KafkaTieredLayout"]

_KAFKA_DIR = re.compile(rf"^(?P<topic>{TOPIC})-(?P<partition>\d+)-(?P<topic_id>{ID})$")
_KAFKA_FILE = re.compile(rf"^(?:(?P<offset>\d+)-)?(?P<segment_id>{ID})(?P<suffix>\.[a-z_]+)$")

#: Kafka layout: file suffix -> kind (RemoteLogSegmentFileset.RemoteLogSegmentFileType)
KAFKA_SUFFIXES = {LOG_SUFFIX: "log", **dict(zip(SIDE_FILE_SUFFIXES, SIDE_FILE_KINDS)), SNAPSHOT_SUFFIX: "snapshot",
                  ".leader_epoch_checkpoint": "leader_epoch_checkpoint"}


def kafka_id(value) -> str:
    """Kafka's string form of a Uuid (``uuid.UUID`` or 16 bytes): URL-safe base64, no padding."""
    raw = value.bytes if isinstance(value, _uuid.UUID) else bytes(value)
    if len(raw) != 16:
        raise ValueError("a Kafka Uuid has 16 bytes")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def parse_kafka_id(text: str) -> _uuid.UUID:
    """The ``uuid.UUID`` of a Kafka Uuid string (ValueError if it is not one)."""
    if not re.fullmatch(ID, text or ""):
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


def kafka_partition_dir_name(topic, partition, topic_id) -> str:
    return f"{topic}-{int(partition)}-{topic_id}"


def kafka_segment_file_name(base_offset, segment_id, kind) -> str:
    suffix = {v: k for k, v in KAFKA_SUFFIXES.items()}[kind]
    return segment_file_name(int(base_offset), f"-{segment_id}{suffix}")


class KafkaTieredLayout(TieredLayout):
    """Kafka's ``LocalTieredStorage``: ``<topic>-<partition>-<topicId>/<offset20>-<segmentId>.<suffix>``,
    files byte-identical to the broker's."""

    name = "kafka"

    def looks(self, name, prefix=""):
        return parse_kafka_partition_dir(name) is not None or name == "kafka-tiered-storage"

    def partitions_at(self, storage, path, name, entries, prefix, parent_name, listing=None):
        parsed = parse_kafka_partition_dir(name)
        files = [e for e in entries if not e.is_dir]
        if parsed and (any(parse_kafka_segment_file(e.name) for e in files) or not entries):
            return [_kafka_partition(storage, path, parsed, files)]
        return None


def _kafka_partition(storage, path, parsed, files):
    topic, partition, topic_id = parsed
    part = RemotePartition(_LAYOUT, topic, partition, topic_id, path)
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


_LAYOUT = register_layout(KafkaTieredLayout())

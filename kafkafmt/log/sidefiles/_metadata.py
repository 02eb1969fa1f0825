"""A partition's and a log dir's metadata files: ``partition.metadata``, KRaft's ``quorum-state`` and
``meta.properties``.

``partition.metadata`` (PartitionMetadataFile.java, PartitionMetadata.java,
PartitionMetadataReadBuffer.java, Uuid.java)
    ``version: 0\\ntopic_id: <uuid>`` with no final newline; the topic id is the 16-byte UUID in
    URL-safe base64 without padding (22 characters). Each line splits at the first ``:\\s+``;
    versions below 0 and the all-zero UUID are rejected; later lines are ignored.

Also read here: ``quorum-state`` (KRaft, a JSON object) and ``meta.properties`` (Java properties).
"""
from __future__ import annotations

import base64
import json
import re
import uuid as _uuid

from kafkafmt._util.durable import write_atomic
from kafkafmt.errors import CorruptRecordError, EncodeError
from kafkafmt.log.sidefiles._checkpoints import JAVA_WS, java_int, java_lines
from kafkafmt.log.sidefiles._common import INT32_MAX, INT32_MIN, PARTITION_METADATA_VERSION, load_source, source_doc

__all__ = ["read_partition_metadata", "encode_partition_metadata", "write_partition_metadata", "read_quorum_state",
           "read_meta_properties"]

def _topic_id_bytes(topic_id) -> bytes:
    if isinstance(topic_id, _uuid.UUID):
        return topic_id.bytes
    if isinstance(topic_id, (bytes, bytearray)) and len(topic_id) == 16:
        return bytes(topic_id)
    if isinstance(topic_id, str):
        raw = _decode_kafka_uuid(topic_id)
        if raw is not None:
            return raw
    raise EncodeError(f"not a Kafka topic id: {topic_id!r} (give uuid.UUID, 16 bytes or base64)")


def _decode_kafka_uuid(text):
    """``Uuid.fromString``: URL-safe base64 (padding optional), 16 bytes; None when invalid."""
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]{22}(==)?", text):
        return None
    return base64.urlsafe_b64decode(text[:22] + "==")


@source_doc
def read_partition_metadata(src) -> dict:
    """``partition.metadata``: ``dict(version, topic_id, topic_uuid)``; ``topic_id`` is the text as
    stored (Kafka's base64 form), ``topic_uuid`` the same id as ``uuid.UUID``.

    Parameters
    ----------
    %(src)s

    Returns
    -------
    dict
        ``version`` (int), ``topic_id`` (str) and ``topic_uuid`` (uuid.UUID).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_partition_metadata(f"{sample_dir()}/orders-0/partition.metadata")
    {'version': 0, 'topic_id': 'iIpw9rYEWuCS81FWd553uQ', 'topic_uuid': UUID('888a70f6-b604-5ae0-92f3-5156779e77b9')}
    """
    data, name = load_source(src)
    lines = java_lines(data, name)
    values = []
    for i, key in enumerate(("version", "topic_id")):
        if i >= len(lines):
            raise CorruptRecordError(f"partition metadata has no {key} line", file=name, position=len(data))
        text, pos = lines[i]
        parts = re.split(":" + JAVA_WS, text, maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise CorruptRecordError(f"malformed line in partition metadata: {text!r}", file=name, position=pos)
        values.append((parts[1], pos))
    version = java_int(values[0][0], INT32_MIN, INT32_MAX, "partition metadata version", name, values[0][1])
    if version < PARTITION_METADATA_VERSION:
        raise CorruptRecordError(f"unrecognised partition metadata version {version}", file=name,
                                 position=values[0][1])
    raw = _decode_kafka_uuid(values[1][0])
    if raw is None:
        raise CorruptRecordError(f"malformed topic id {values[1][0]!r}", file=name, position=values[1][1])
    if raw == bytes(16):
        raise CorruptRecordError("partition metadata holds the all-zero topic id", file=name,
                                 position=values[1][1])
    return {"version": version, "topic_id": values[1][0], "topic_uuid": _uuid.UUID(bytes=raw)}


def encode_partition_metadata(topic_id, version=PARTITION_METADATA_VERSION) -> bytes:
    raw = _topic_id_bytes(topic_id)
    if raw == bytes(16):
        raise EncodeError("the all-zero topic id is reserved (Uuid.ZERO_UUID)")
    text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return f"version: {int(version)}\ntopic_id: {text}".encode("ascii")


def write_partition_metadata(path, topic_id) -> None:
    """Write ``partition.metadata`` for ``topic_id`` (uuid.UUID, 16 bytes or Kafka's base64 text)."""
    write_atomic(path, encode_partition_metadata(topic_id))


def read_quorum_state(src) -> dict:
    """KRaft ``quorum-state`` (QuorumStateData as JSON): the parsed object."""
    data, name = load_source(src)
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorruptRecordError(f"quorum-state is not valid JSON: {e}", file=name, position=0) from None
    if not isinstance(obj, dict):
        raise CorruptRecordError("quorum-state is not a JSON object", file=name, position=0)
    return obj


_PROP_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _prop_unescape(text, name):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            c = text[i + 1]
            if c == "u":
                code = text[i + 2:i + 6]
                if not re.fullmatch(r"[0-9A-Fa-f]{4}", code):
                    raise CorruptRecordError(f"malformed \\uxxxx escape in {text!r}", file=name)
                out.append(chr(int(code, 16)))
                i += 6
                continue
            out.append(_PROP_ESCAPES.get(c, c))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _prop_put(props, logical, name):
    m = re.match(r"((?:[^\\=: \t\f]|\\.)*)[ \t\f]*[=:]?[ \t\f]*(.*)", logical, re.S)
    props[_prop_unescape(m.group(1), name)] = _prop_unescape(m.group(2), name)


def read_meta_properties(src) -> dict:
    """``meta.properties`` (``java.util.Properties`` text, ISO-8859-1): ``{key: value}``."""
    data, name = load_source(src)
    text = bytes(data).decode("latin-1")
    props, pending = {}, ""
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        if (len(line) - len(line.rstrip("\\"))) % 2:          # odd backslashes: continued
            pending += line[:-1]
            continue
        _prop_put(props, pending + line, name)
        pending = ""
    if pending:
        _prop_put(props, pending, name)
    return props

"""Control records as kafka-dump-log prints them.

Transaction markers (ABORT / COMMIT) print ``endTxnMarker: COMMIT coordinatorEpoch: N``. The
KRaft control records (LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters)
are decoded from their value -- Kafka's generated messages, all "flexible" (compact arrays and
strings, tagged fields) -- into the JSON Kafka prints for them; schemas from apache/kafka
``clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json``.
"""
from __future__ import annotations

import base64
import json
import struct

from kafkafmt.record import CONTROL_TYPES

LABELS = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}


class _Reader:
    def __init__(self, data):
        self.b = bytes(data)
        self.i = 0

    def take(self, n):
        if n < 0 or self.i + n > len(self.b):
            raise ValueError("control record value is too short")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def int16(self):
        return struct.unpack(">h", self.take(2))[0]

    def uint16(self):
        return struct.unpack(">H", self.take(2))[0]

    def int32(self):
        return struct.unpack(">i", self.take(4))[0]

    def int64(self):
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self):
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def compact_array(self, item):
        n = self.uvarint() - 1
        if n < 0:
            return None
        return [item() for _ in range(n)]

    def compact_string(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def uuid(self):
        return base64.urlsafe_b64encode(self.take(16)).decode("ascii").rstrip("=")

    def tagged(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _struct(r, fields):
    out = {name: read() for name, read in fields}
    r.tagged()
    return out


def decode_kraft(ctype, value):
    """The message of a KRaft control record as a dict (Kafka's JSON field names), or None when the
    value cannot be read."""
    if value is None:
        return None
    r = _Reader(value)
    try:
        if ctype == 2:
            def voter():
                return _struct(r, [("voterId", r.int32)])
            msg = _struct(r, [("version", r.int16), ("leaderId", r.int32),
                              ("voters", lambda: r.compact_array(voter)),
                              ("grantingVoters", lambda: r.compact_array(voter))])
        elif ctype == 3:
            msg = _struct(r, [("version", r.int16), ("lastContainedLogTimestamp", r.int64)])
        elif ctype == 4:
            msg = _struct(r, [("version", r.int16)])
        elif ctype == 5:
            msg = _struct(r, [("version", r.int16), ("kRaftVersion", r.int16)])
        elif ctype == 6:
            def endpoint():
                return _struct(r, [("name", r.compact_string), ("host", r.compact_string), ("port", r.uint16)])

            def feature():
                return _struct(r, [("minSupportedVersion", r.int16), ("maxSupportedVersion", r.int16)])

            def voter():
                return _struct(r, [("voterId", r.int32), ("voterUuid", r.uuid),
                                   ("endpoints", lambda: r.compact_array(endpoint)),
                                   ("kRaftVersionFeature", feature)])
            msg = _struct(r, [("version", r.int16), ("voters", lambda: r.compact_array(voter))])
        else:
            return None
    except (ValueError, struct.error):
        return None
    return msg


def control_text(ctype, version, coordinator_epoch, value=None):
    """The part kafka-dump-log appends to a control record's line."""
    if ctype in (0, 1):
        return f" endTxnMarker: {CONTROL_TYPES[ctype]} coordinatorEpoch: {coordinator_epoch}"
    if ctype in LABELS:
        msg = decode_kraft(ctype, value)
        body = json.dumps(msg, separators=(",", ":")) if msg is not None else f'{{"version":{version}}}'
        return f" {LABELS[ctype]} {body}"
    return f" controlType: UNKNOWN({ctype})"


def control_json(ctype, version, coordinator_epoch, value=None):
    out = {"type": CONTROL_TYPES.get(ctype, f"UNKNOWN({ctype})"), "typeId": ctype, "version": version}
    if ctype in (0, 1):
        out["coordinatorEpoch"] = coordinator_epoch
    elif ctype in LABELS:
        msg = decode_kraft(ctype, value)
        if msg is not None:
            out["message"] = msg
    return out

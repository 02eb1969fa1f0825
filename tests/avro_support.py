"""Test helpers for typed values: a Schema Registry whose ``_schemas`` topic is written as a real
log dir, and the comparison of kafkafmt's Arrow values with fastavro's / confluent-kafka's.

* `RegistryMirror` registers schemas in confluent-kafka's own mock registry (which assigns the ids
  and versions) and writes what the Confluent Schema Registry writes to ``_schemas`` for each step
  (keys and values as its Jackson mapper writes them: key order, compact JSON, ``deleted``, NOOP,
  CONFIG, tombstones on hard deletes); ``karapace=True`` writes Karapace's key order and values.
  ``write(log_dir)`` writes the topic with kafkafmt's own LogWriter.
* `expected_pylist` turns fastavro's Python values into what kafkafmt's Arrow values give with
  ``to_pylist()`` after `plain` (temporal types cast to their integer storage): the conversion is
  by the reader schema, independent of kafkafmt's decoder.
"""
from __future__ import annotations

import datetime
import io
import json
import math
import uuid

import pyarrow as pa

import kafkafmt

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
NAIVE_EPOCH = datetime.datetime(1970, 1, 1)


def compact(schema):
    """The registry's canonical text of an Avro schema: compact JSON (Avro Java's toString)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError:
            pass                      # a bare primitive name: "bytes"
    return json.dumps(schema, separators=(",", ":"))


class RegistryMirror:
    """confluent-kafka's mock registry plus the ``_schemas`` records a real registry would write."""

    _n = 0

    def __init__(self, karapace=False, noop=True):
        RegistryMirror._n += 1
        self.client = SchemaRegistryClient.new_client({"url": f"mock://mirror-{RegistryMirror._n}"})
        self.karapace = karapace
        self.records = []           # (key bytes, value bytes or None)
        self.written = {}           # (subject, version) -> SCHEMA value dict
        if noop:
            self._put({"keytype": "NOOP", "magic": 0}, None)
        self.config(None, "BACKWARD")

    # -- what the registry writes
    def _key(self, keytype, subject=None, version=None):
        magic = 1 if keytype == "SCHEMA" else 0
        if self.karapace:
            # Karapace's older key order: subject, version, magic, keytype; "subject": null kept
            key = {"subject": subject}
            if version is not None:
                key["version"] = version
            key["magic"] = magic
            key["keytype"] = keytype
            return key
        key = {"keytype": keytype}
        if subject is not None:
            key["subject"] = subject
        if version is not None:
            key["version"] = version
        key["magic"] = magic
        return key

    def _put(self, key, value):
        k = json.dumps(key, separators=(",", ":")).encode()
        v = None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        self.records.append((k, v))

    def _schema_value(self, subject, version, sid, schema_str, schema_type, refs, deleted):
        if self.karapace:
            value = {"subject": subject, "version": version, "id": sid, "schema": schema_str, "deleted": deleted}
            if refs:
                value["references"] = refs
            if schema_type != "AVRO":
                value["schemaType"] = schema_type
            return value
        value = {"subject": subject, "version": version, "id": sid, "schemaType": schema_type}
        if refs:
            value["references"] = refs
        value["schema"] = schema_str
        value["deleted"] = deleted
        return value

    def register(self, subject, schema, schema_type="AVRO", references=()):
        """Register in the mock (it assigns id and version); write the SCHEMA record. Returns the id."""
        text = compact(schema) if schema_type == "AVRO" else schema
        refs = [SchemaReference(r["name"], r["subject"], r["version"]) for r in references]
        rs = self.client.register_schema_full_response(subject, Schema(text, schema_type, refs))
        sid, version = rs.schema_id, rs.version
        if (subject, version) not in self.written:
            value = self._schema_value(subject, version, sid, text, schema_type, list(references), False)
            self.written[(subject, version)] = value
            self._put(self._key("SCHEMA", subject, version), value)
        return sid

    def config(self, subject, level):
        value = {"compatibilityLevel": level} if self.karapace or subject is None else \
            {"subject": subject, "compatibilityLevel": level}
        self._put(self._key("CONFIG", subject), value)

    def mode(self, subject, mode):
        self._put(self._key("MODE", subject), {"subject": subject, "mode": mode})

    def noop(self):
        self._put({"keytype": "NOOP", "magic": 0}, None)

    def soft_delete_version(self, subject, version):
        """DELETE /subjects/S/versions/V: the SCHEMA key rewritten with deleted: true."""
        value = dict(self.written[(subject, version)], deleted=True)
        self.written[(subject, version)] = value
        self._put(self._key("SCHEMA", subject, version), value)
        self.client.delete_version(subject, version)       # the mock forgets the version, keeps the id

    def soft_delete_subject(self, subject):
        """DELETE /subjects/S: one DELETE_SUBJECT record (the SCHEMA records are not rewritten)."""
        top = max(v for (s, v) in self.written if s == subject)
        self._put(self._key("DELETE_SUBJECT", subject), {"subject": subject, "version": top})
        for (s, v), value in self.written.items():
            if s == subject:
                self.written[(s, v)] = dict(value, deleted=True)

    def hard_delete_subject(self, subject, config=False, mode=False):
        """DELETE /subjects/S?permanent=true (after a soft delete): tombstones, highest version first,
        then on the subject's MODE and CONFIG keys."""
        for v in sorted((v for (s, v) in self.written if s == subject), reverse=True):
            self._put(self._key("SCHEMA", subject, v), None)
            del self.written[(subject, v)]
        if mode:
            self._put(self._key("MODE", subject), None)
        if config:
            self._put(self._key("CONFIG", subject), None)
        self.client.delete_subject(subject, permanent=True)     # the mock forgets the subject and its ids

    def hard_delete_version(self, subject, version):
        self._put(self._key("SCHEMA", subject, version), None)
        del self.written[(subject, version)]

    def clear_subject(self, subject):
        self._put(self._key("CLEAR_SUBJECT", subject), {"subject": subject})
        for k in [k for k, v in self.written.items() if k[0] == subject and v["deleted"]]:
            del self.written[k]

    def write(self, log_dir, compression=None, topic="_schemas", batch_size=16384):
        """The topic as a real partition folder ``<log_dir>/<topic>-0``; returns its path."""
        path = f"{log_dir}/{topic}-0"
        with kafkafmt.LogWriter(path) as w:
            w.append(keys=[k for k, _ in self.records], values=[v for _, v in self.records],
                     timestamps=list(range(1, len(self.records) + 1)), compression=compression,
                     batch_size=batch_size)
        return path

    # -- confluent-kafka's serdes on the mock
    def serializer(self, schema, topic="orders", is_key=False, references=(), **conf):
        conf.setdefault("auto.register.schemas", False)
        conf.setdefault("use.latest.version", False)
        text = compact(schema)
        if references:
            text = Schema(text, "AVRO", [SchemaReference(r["name"], r["subject"], r["version"]) for r in references])
        ser = AvroSerializer(self.client, text, conf=conf)
        ctx = SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
        return lambda value: ser(value, ctx)

    def deserializer(self, reader_schema=None, topic="orders", is_key=False):
        de = AvroDeserializer(self.client, None if reader_schema is None else compact(reader_schema),
                              conf={"use.latest.version": False}) if reader_schema is not None \
            else AvroDeserializer(self.client)
        ctx = SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
        return lambda data: de(data, ctx)


# ------------------------------------------------------------------------------------------------
# comparing values

def plain(values):
    """kafkafmt's Arrow values as Python data, temporal types as their integers."""
    from kafkafmt.values.avro import storage_values

    return storage_values(values).to_pylist()


def _branch_of(v, branches):
    """The branch index of a fastavro union value (records as (name, value) with return_record_name)."""
    if isinstance(v, tuple):
        name = v[0]
        return next(i for i, b in enumerate(branches) if b.get("fullname") == name), v[1]
    for i, b in enumerate(branches):
        k = b["kind"]
        if k == "null" and v is None:
            return i, v
        if k == "boolean" and isinstance(v, bool):
            return i, v
        if k in ("int", "long") and isinstance(v, (int, datetime.date, datetime.time)) and not isinstance(v, bool):
            return i, v
        if k in ("float", "double") and isinstance(v, float):
            return i, v
        if k in ("string", "enum") and isinstance(v, (str, uuid.UUID)):
            return i, v
        if k in ("bytes", "fixed") and isinstance(v, (bytes, __import__("decimal").Decimal)):
            return i, v
        if k == "array" and isinstance(v, list):
            return i, v
        if k in ("map", "record") and isinstance(v, dict):
            return i, v
    raise AssertionError(f"no branch for {v!r}")


def describe(t):
    """A kafkafmt AvroType as the small dict `expected_pylist` walks."""
    seen = {}

    def walk(t):
        if id(t) in seen:
            return seen[id(t)]
        d = {"kind": t.kind, "logical": t.logical, "fullname": t.fullname}
        seen[id(t)] = d
        if t.kind == "record":
            d["fields"] = [(f.name, walk(f.type)) for f in t.fields]
        elif t.kind == "array":
            d["items"] = walk(t.items)
        elif t.kind == "map":
            d["values"] = walk(t.values)
        elif t.kind == "union":
            d["branches"] = [walk(b) for b in t.branches]
        elif t.kind == "fixed":
            d["size"] = t.size
        d["precision"], d["scale"] = t.precision, t.scale
        return d

    return walk(t)


def _temporal(v, t):
    lg = t["logical"]
    if lg is None or v is None or isinstance(v, int):
        return v
    if lg == "date":
        return (v - datetime.date(1970, 1, 1)).days
    if lg in ("time-millis", "time-micros"):
        us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return us // 1000 if lg == "time-millis" else us
    if lg.startswith("timestamp-") or lg.startswith("local-timestamp-"):
        delta = v - (EPOCH if v.tzinfo is not None else NAIVE_EPOCH)
        us = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return us // 1000 if lg.endswith("millis") else us if lg.endswith("micros") else us * 1000
    return v


def expected_value(v, t):
    """One fastavro value (read with reader schema t) as kafkafmt's plain() gives it."""
    k = t["kind"]
    if k == "union":
        nonnull = [b for b in t["branches"] if b["kind"] != "null"]
        if v is None:
            return None
        if len(nonnull) == 1:
            if isinstance(v, tuple):
                v = v[1]
            return expected_value(v, nonnull[0])
        i, inner = _branch_of(v, nonnull)
        return {f"member{j}": (expected_value(inner, nonnull[i]) if j == i else None) for j in range(len(nonnull))}
    if v is None:
        return None
    if k == "record":
        return {name: expected_value(v.get(name), ft) for name, ft in t["fields"]}
    if k == "array":
        return [expected_value(x, t["items"]) for x in v]
    if k == "map":
        return [(key, expected_value(x, t["values"])) for key, x in v.items()]
    if k == "string":
        return str(v)
    if k in ("bytes", "fixed") and isinstance(v, str):
        v = v.encode("latin-1")     # fastavro returns a bytes/fixed field default as its raw JSON string
    if k == "fixed" and t["logical"] == "duration":
        months, days, ms = (int.from_bytes(v[i:i + 4], "little") for i in (0, 4, 8))
        return pa.MonthDayNano([months, days, ms * 1_000_000])
    if k in ("int", "long"):
        return _temporal(v, t)
    return v


def expected_pylist(values, reader):
    """fastavro's values (a list; None for null) as kafkafmt's plain() of the reader schema gives them."""
    t = describe(reader)
    return [None if v is None else expected_value(v, t) for v in values]


def same(a, b):
    """Deep equality with NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def fastavro_read(data, writer, reader=None):
    """fastavro's schemaless_reader of one value body (records in unions as (name, value))."""
    from fastavro import parse_schema, schemaless_reader
    return schemaless_reader(io.BytesIO(data), parse_schema(json.loads(compact(writer))),
                             None if reader is None else parse_schema(json.loads(compact(reader))),
                             return_record_name=True, return_record_name_override=True)

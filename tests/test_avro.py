"""Avro values to Arrow (kafkafmt.values._formats, kafkafmt.values.avro._plan, the Cython kernel), checked against
independent readers: fastavro's ``schemaless_reader`` and confluent-kafka's ``AvroDeserializer``.

Every value is written by confluent-kafka's own ``AvroSerializer`` (or fastavro's writer, for the
random schemas) against confluent-kafka's mock registry, whose ``_schemas`` topic is written as a
real log dir (tests/avro_support.py); kafkafmt reads both back from disk. The expected Python values
are fastavro's / the deserializer's, converted to what Arrow's ``to_pylist`` gives by the reader
schema alone (avro_support.expected_pylist).
"""
import datetime
import decimal
import io
import json
import os
import uuid

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkafmt
from kafkafmt.values.avro import parse_schema
from kafkafmt.values.registry import InlineSchemaRegistry, open_registry
from kafkafmt.values import decode_column, value_type

from avro_support import (RegistryMirror, compact, expected_pylist, fastavro_read, plain, same)

UTC = datetime.timezone.utc
EXACT = decimal.Context(prec=100)

EVERYTHING = {
    "type": "record", "name": "Everything", "namespace": "com.acme", "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "arr", "type": {"type": "array", "items": "long"}},
        {"name": "mp", "type": {"type": "map", "values": ["null", "string"]}},
        {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
        {"name": "recs", "type": {"type": "array", "items": "Inner"}},
        {"name": "opt", "type": ["null", "Inner"]},
        {"name": "last", "type": ["long", "null"]},
        {"name": "u", "type": ["int", "string", "Inner", "null", {"type": "array", "items": "int"}]},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "decf", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal",
                                  "precision": 18, "scale": 2}},
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 5}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "uidf", "type": {"type": "fixed", "name": "U16", "size": 16, "logicalType": "uuid"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "tsns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "ltms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "ltus", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
        {"name": "odd", "type": {"type": "long", "logicalType": "date"}},            # invalid: reads as long
        {"name": "unknown", "type": {"type": "string", "logicalType": "color"}},     # unknown: the base type
    ]}


def everything(i):
    inner = {"x": i, "tags": [f"t{i}", "é"][: i % 3]}
    return {
        "n": None, "b": i % 2 == 0, "i": -(2 ** 31) if i == 3 else i * 1000 - 7,
        "l": 2 ** 63 - 1 if i == 2 else -i * 10 ** 12,
        "f": [1.5, -0.0, float("inf"), 3.4e38, 1e-40][i % 5], "d": [2.5, float("nan"), -1e308, 0.1, 5e-324][i % 5],
        "by": bytes(range(i * 7 % 256, i * 7 % 256 + i % 5)), "s": ["", "héllo", "日本", "a" * 300, "\x00"][i % 5],
        "fx": bytes([i, 255, 0, 7]), "e": ["RED", "GREEN", "BLUE"][i % 3], "arr": list(range(i % 4)),
        "mp": {f"k{j}": (None if j % 2 else f"v{j}") for j in range(i % 3)}, "rec": inner, "recs": [inner] * (i % 3),
        "opt": None if i % 2 else inner, "last": None if i % 3 == 0 else i,
        "u": [None, 5, "str", ("com.acme.Inner", inner), [1, 2]][i % 5],
        "dec": decimal.Decimal(f"{i * 1234567 - 99999}.{i:03d}"),
        "decf": decimal.Decimal(-(10 ** 17) + i * 10 ** 15).scaleb(-2),
        "big": decimal.Decimal((10 ** 44 + i) * (-1 if i % 2 else 1)).scaleb(-5, EXACT),
        "uid": str(uuid.UUID(int=i * 77)), "uidf": uuid.UUID(int=i * 99).bytes,
        "day": datetime.date(1970, 1, 1) + datetime.timedelta(days=i * 5000 - 10000),
        "tms": datetime.time(i % 24, 59, 58, 123000), "tus": datetime.time(23, 0, i % 60, 654321),
        "tsms": datetime.datetime(2024, 2, 29, 12, 0, i % 60, 123000, tzinfo=UTC),
        "tsus": datetime.datetime(1960, 1, 1, 0, 0, 0, i, tzinfo=UTC), "tsns": 1_700_000_000_123_456_789 + i,
        "ltms": datetime.datetime(2001, 9, 9, 1, 46, 40, 5000), "ltus": datetime.datetime(1999, 12, 31, 23, 59, 59, i),
        "dur": (i).to_bytes(4, "little") + (i * 2).to_bytes(4, "little") + (i * 3000).to_bytes(4, "little"),
        "odd": i, "unknown": "blue",
    }


def bodies_of(values):
    return [None if v is None else v[5:] for v in values]


def check_against_peers(m, values, writer, reader=None, topic="orders"):
    """kafkafmt (registry from the mirror's _schemas in memory) == fastavro == AvroDeserializer."""
    reader_schema = reader or writer
    dec = decode_column(pa.array(values, pa.binary()), format="avro", registry=m.registry, topic=topic,
                        reader_schema=None if reader is None else compact(reader))
    assert dec.error_count == 0, dec.error.to_pylist()
    fa = [None if v is None else fastavro_read(v[5:], writer_of(m, v), reader_schema) for v in values]
    expected = expected_pylist(fa, parse_schema(compact(reader_schema)))
    got = plain(dec.values)
    assert same(got, expected)
    de = m.deserializer(reader)
    ck = [de(v) if v is not None else None for v in values]
    # confluent-kafka's deserializer is fastavro underneath, without return_record_name
    assert len(ck) == len(values)
    for c, f in zip(ck, fa):
        assert same(_untag(f), c)
    assert dec.values.type == value_type("avro", registry=m.registry, topic=topic,
                                         reader_schema=None if reader is None else compact(reader))
    return dec


def _untag(v):
    if isinstance(v, tuple):
        return _untag(v[1])
    if isinstance(v, dict):
        return {k: _untag(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_untag(x) for x in v]
    return v


def writer_of(m, framed):
    sid = int.from_bytes(framed[1:5], "big")
    return json.loads(m.client.get_schema(sid).schema_str)


@pytest.fixture
def mirror(tmp_path):
    """A mirror whose registry (kafkafmt's) is the _schemas topic read back from a log dir."""
    m = RegistryMirror()

    def reopen():
        path = tmp_path / f"logs-{len(m.records)}"
        m.write(path)
        m.registry = open_registry(str(path))
        return m.registry

    m.reopen = reopen
    return m


def test_every_type_and_logical_type(mirror):
    sid = mirror.register("orders-value", EVERYTHING)
    ser = mirror.serializer(EVERYTHING)
    values = [ser(everything(i)) for i in range(25)] + [None]
    mirror.reopen()
    dec = check_against_peers(mirror, values, EVERYTHING)
    assert dec.schema_id.to_pylist() == [sid] * 25 + [None]
    t = dec.values.type
    assert t.field("odd").type == pa.int64() and t.field("unknown").type == pa.string()
    assert t.field("big").type == pa.decimal256(50, 5)
    assert t.field("tsms").type == pa.timestamp("ms", tz="UTC") and t.field("ltus").type == pa.timestamp("us")
    assert t.field("e").type == pa.dictionary(pa.int32(), pa.string())
    assert t.field("u").type.num_fields == 4 and t.field("last").nullable and not t.field("l").nullable
    dec.values.validate(full=True)
    assert dec.values.null_count == 1
    # Arrow's own conversions agree with fastavro's datetimes (not only the integers)
    fa = [fastavro_read(v[5:], EVERYTHING) for v in values[:-1]]
    rows = dec.values.to_pylist()
    for r, f in zip(rows, fa):
        assert r["tsms"] == f["tsms"] and r["tsus"] == f["tsus"] and r["day"] == f["day"]
        assert r["dec"] == f["dec"] and r["big"] == f["big"] and r["uid"] == str(f["uid"])


INVALID_LOGICAL = [
    {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5},
    {"type": "bytes", "logicalType": "decimal", "precision": 0},
    {"type": "bytes", "logicalType": "decimal", "precision": "10"},
    {"type": "fixed", "name": "F2", "size": 2, "logicalType": "decimal", "precision": 5},
    {"type": "bytes", "logicalType": "decimal", "precision": 80},
    {"type": "fixed", "name": "D8", "size": 8, "logicalType": "duration"},
    {"type": "fixed", "name": "U8", "size": 8, "logicalType": "uuid"},
    {"type": "long", "logicalType": "date"},
    {"type": "int", "logicalType": "timestamp-millis"},
    {"type": "string", "logicalType": "time-micros"},
    {"type": "int", "logicalType": "nonsense"},
]


@pytest.mark.parametrize("t", INVALID_LOGICAL, ids=lambda t: f"{t['type']}-{t['logicalType']}")
def test_invalid_logical_types_read_as_the_base_type(t):
    base = {k: v for k, v in t.items() if k not in ("logicalType", "precision", "scale")}
    samples = {"bytes": b"\x01\x02", "fixed": bytes(t.get("size", 0)), "long": 12345, "int": -3, "string": "x"}
    sample = samples[t["type"]]
    schema = {"type": "record", "name": "R", "fields": [{"name": "v", "type": t}]}
    plain_schema = {"type": "record", "name": "R", "fields": [{"name": "v", "type": base}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(plain_schema), {"v": sample})
    reg = InlineSchemaRegistry({1: json.dumps(schema)})
    dec = decode_column(pa.array([b"\x00\x00\x00\x00\x01" + out.getvalue()], pa.binary()), format="avro", registry=reg,
                        reader_schema=1)
    assert dec.values.to_pylist() == [fastavro_read(out.getvalue(), plain_schema)]


def evolution():
    v1 = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
        {"name": "id", "type": "int"},
        {"name": "note", "type": "string"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "price", "type": "float"},
        {"name": "legacy", "type": "string"}]}
    v2 = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": "string"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"],
                                    "default": "NEW"}},
        {"name": "price", "type": "double"},
        {"name": "qty", "type": "int", "default": 1}]}
    v3 = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
        {"name": "id", "type": "long"},
        {"name": "comment", "type": "string", "aliases": ["note"]},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["PAID", "NEW"],
                                    "default": "NEW"}},
        {"name": "price", "type": "double"},
        {"name": "qty", "type": "long", "default": 1},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["a", "b"]},
        {"name": "extra", "type": ["null", "string"], "default": None},
        {"name": "meta", "type": {"type": "map", "values": "int"}, "default": {"x": 1}},
        {"name": "raw", "type": "bytes", "default": "\u00ff\u0000A"},
        {"name": "cur", "type": {"type": "enum", "name": "Cur", "symbols": ["EUR", "USD"]}, "default": "USD"},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 86400000}]}
    return v1, v2, v3


def order_record(i):
    """A record with every field of every version (each writer takes its own)."""
    return {"id": i, "note": f"n{i}", "comment": f"c{i}", "status": ["NEW", "PAID"][i % 2], "price": i / 4,
            "legacy": "x", "qty": i, "tags": ["t"] * (i % 3), "extra": None if i % 2 else "e",
            "meta": {"k": i}, "raw": bytes([i]), "cur": "EUR", "when": i}


def test_three_versions_with_evolution(mirror):
    v1, v2, v3 = evolution()
    ids = [mirror.register("orders-value", s) for s in (v1, v2, v3)]
    assert len(set(ids)) == 3
    values = []
    for i in range(30):
        s = (v1, v2, v3)[i % 3]
        rec = order_record(i)
        if s is v2 and i % 4 == 1:
            rec["status"] = "SHIPPED"                   # not in v3's enum: its default NEW
        values.append(mirror.serializer(s)(rec))
    mirror.reopen()
    dec = check_against_peers(mirror, values, v3, reader=v3)
    # reader-only fields took their defaults, as decoding the same record written with them does
    rows = dec.values.to_pylist()
    v1_rows = [r for i, r in enumerate(rows) if i % 3 == 0]
    assert all(r["raw"] == b"\xff\x00A" and r["cur"] == "USD" and r["tags"] == ["a", "b"] for r in v1_rows)
    assert all(r["when"] == datetime.datetime(1970, 1, 2, tzinfo=UTC) and r["meta"] == [("x", 1)] for r in v1_rows)
    assert all(r["qty"] == 1 for r in v1_rows)
    # the latest version is the default reader (TopicNameStrategy)
    latest = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="orders")
    assert latest.values.equals(dec.values)
    # an older version as the reader: {"version": 1}
    old = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="orders",
                        reader_schema={"version": 1})
    assert old.values.type.names == ["id", "note", "status", "price", "legacy"]
    # v3 -> v1: id long -> int is no promotion; every v2/v3 value is an error naming the field
    bad = old.error.to_pylist()
    assert all(e is None for e in bad[::3])
    assert all(e is not None and "id" in e and "long" in e for i, e in enumerate(bad) if i % 3)


def test_defaults_equal_writing_the_default(mirror):
    """A reader-only field's value is what the same record written with its default gives."""
    v1, _, v3 = evolution()
    mirror.register("orders-value", v1)
    full = mirror.register("orders-value", v3)
    rec1 = {"id": 1, "note": "n", "status": "PAID", "price": 2.0, "legacy": "x"}
    defaults = {f["name"]: f["default"] for f in v3["fields"] if "default" in f}
    rec3 = {"id": 1, "comment": "n", "status": "PAID", "price": 2.0, **defaults}
    rec3["raw"] = defaults["raw"].encode("latin-1")
    mirror.reopen()
    a = decode_column(pa.array([mirror.serializer(v1)(rec1)], pa.binary()), format="avro",
                      registry=mirror.registry, topic="orders")
    b = decode_column(pa.array([mirror.serializer(v3)(rec3)], pa.binary()), format="avro",
                      registry=mirror.registry, topic="orders")
    assert b.schema_id.to_pylist() == [full]
    assert a.values.to_pylist() == b.values.to_pylist() and a.error_count == b.error_count == 0


def test_soft_and_hard_deleted_ids(mirror):
    v1, v2, v3 = evolution()
    ids = [mirror.register("orders-value", s) for s in (v1, v2, v3)]
    values = [mirror.serializer(s)(order_record(1)) for s in (v1, v2, v3)]
    mirror.soft_delete_version("orders-value", 1)
    mirror.reopen()
    dec = check_against_peers(mirror, values, v3, reader=v3)
    assert dec.schema_id.to_pylist() == ids
    mirror.soft_delete_subject("orders-value")
    mirror.hard_delete_subject("orders-value")
    mirror.register("orders-value", v3)          # a new subject history: v3 gets a new version (and, in the mock, id)
    mirror.reopen()
    gone = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="orders")
    assert gone.error_count == 3
    assert all(f"schema id {sid} is not in" in e for sid, e in zip(ids, gone.error.to_pylist()))
    assert gone.values.null_count == 3


@pytest.mark.parametrize("karapace", [False, True])
@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_log_dir_end_to_end_every_codec(tmp_path, karapace, compression):
    m = RegistryMirror(karapace=karapace)
    v1, v2, v3 = evolution()
    for s in (v1, v2, v3):
        m.register("orders-value", s)
    key_schema = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]}
    m.register("orders-key", key_schema)
    values, keys = [], []
    for i in range(200):
        s = (v1, v2, v3)[i % 3]
        values.append(None if i % 50 == 7 else m.serializer(s)(order_record(i)))
        keys.append(m.serializer(key_schema, is_key=True)({"id": i}))
    logs = tmp_path / "logs"
    m.write(logs, compression=compression)
    kafkafmt.write_log_dir(str(logs / "orders-0"), keys=keys, values=values, compression=compression,
                           batch_size=2048)
    recs = kafkafmt.read_log_dir(str(logs / "orders-0"))
    reg = open_registry(None, roots=[str(logs)])
    dec = decode_column(recs.value, format="avro", registry=reg, topic="orders", offsets=recs.offset)
    keyd = decode_column(recs.key, format="registry", registry=reg, topic="orders", is_key=True)
    assert dec.error_count == 0 and keyd.error_count == 0
    de = m.deserializer(v3)
    assert same(plain(dec.values), expected_pylist([de(v) if v else None for v in values], parse_schema(compact(v3))))
    assert keyd.values.to_pylist() == [{"id": i} for i in range(200)]
    assert dec.values.null_count == 4 and dec.error.null_count == 200      # tombstones: null, no error


def test_top_level_primitives_and_raw_bytes(mirror):
    """A "bytes" value schema is written raw (no length); a "string" one with its length."""
    mirror.register("blobs-value", {"type": "bytes"})        # confluent-kafka registers "bytes" so
    mirror.register("names-value", {"type": "string"})
    blobs = [mirror.serializer({"type": "bytes"}, topic="blobs")(b) for b in (b"", b"\x00\x01", bytes(range(256)))]
    names = [mirror.serializer({"type": "string"}, topic="names")(s) for s in ("", "abc", "ü" * 10)]
    assert blobs[1] == blobs[1][:5] + b"\x00\x01"
    mirror.reopen()
    got = decode_column(pa.array(blobs, pa.binary()), format="avro", registry=mirror.registry, topic="blobs")
    assert got.values.to_pylist() == [b"", b"\x00\x01", bytes(range(256))] and got.values.type == pa.binary()
    got = decode_column(pa.array(names, pa.binary()), format="avro", registry=mirror.registry, topic="names")
    assert got.values.to_pylist() == ["", "abc", "ü" * 10] and got.error_count == 0
    # confluent-kafka's deserializer refuses 5-byte values (the empty bytes value): kafkafmt reads it
    with pytest.raises(Exception):
        mirror.deserializer()(blobs[0])


def test_record_name_strategy(mirror):
    """Two record types in one topic, subjects named after the records."""
    a = {"type": "record", "name": "Created", "namespace": "ev", "fields": [{"name": "id", "type": "long"}]}
    b = {"type": "record", "name": "Deleted", "namespace": "ev", "fields": [{"name": "id", "type": "long"},
                                                                           {"name": "why", "type": "string"}]}
    mirror.register("ev.Created", a)
    mirror.register("events-ev.Deleted", b)        # TopicRecordNameStrategy
    from confluent_kafka.schema_registry import record_subject_name_strategy, topic_record_subject_name_strategy
    by_record = mirror.serializer(a, topic="events", **{"subject.name.strategy": record_subject_name_strategy})
    by_topic_record = mirror.serializer(b, topic="events",
                                        **{"subject.name.strategy": topic_record_subject_name_strategy})
    values = [by_record({"id": 1}), by_topic_record({"id": 2, "why": "x"})]
    mirror.reopen()
    with pytest.raises(kafkafmt.KafkafmtError) as exc:
        value_type("avro", registry=mirror.registry, topic="events")
    assert "RecordNameStrategy" in str(exc.value)
    created = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="events",
                            reader_schema="ev.Created")
    deleted = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="events",
                            reader_schema="ev.Deleted")
    assert created.values.to_pylist() == [{"id": 1}, None] and "names differ" in created.error.to_pylist()[1]
    assert deleted.values.to_pylist() == [None, {"id": 2, "why": "x"}]


def test_references_across_subjects(mirror):
    money = {"type": "record", "name": "Money", "namespace": "com.acme", "fields": [{"name": "cents", "type": "long"}]}
    order = {"type": "record", "name": "Order", "namespace": "com.acme",
             "fields": [{"name": "total", "type": "com.acme.Money"}, {"name": "items", "type": {
                 "type": "array", "items": "com.acme.Money"}}]}
    mirror.register("money", money)
    refs = [{"name": "com.acme.Money", "subject": "money", "version": 1}]
    mirror.register("orders-value", order, references=refs)
    ser = mirror.serializer(order, references=refs)
    values = [ser({"total": {"cents": i}, "items": [{"cents": 1}] * i}) for i in range(4)]
    mirror.reopen()
    dec = decode_column(pa.array(values, pa.binary()), format="avro", registry=mirror.registry, topic="orders")
    de = mirror.deserializer()
    assert dec.values.to_pylist() == [de(v) for v in values]


# ------------------------------------------------------------------------------------------------
# random schemas and values (hypothesis) against fastavro

LOGICAL = [
    ("int", "date", st.integers(-700_000, 2_900_000)),
    ("int", "time-millis", st.integers(0, 86_399_999)),
    ("long", "time-micros", st.integers(0, 86_399_999_999)),
    ("long", "timestamp-millis", st.integers(-62_000_000_000_000, 250_000_000_000_000)),
    ("long", "timestamp-micros", st.integers(-62_000_000_000_000_000, 250_000_000_000_000_000)),
    ("long", "local-timestamp-millis", st.integers(-62_000_000_000_000, 250_000_000_000_000)),
    ("long", "local-timestamp-micros", st.integers(-62_000_000_000_000_000, 250_000_000_000_000_000)),
    ("long", "timestamp-nanos", st.integers(-(2 ** 63), 2 ** 63 - 1)),
]
PRIMS = {
    "null": st.none(), "boolean": st.booleans(), "int": st.integers(-(2 ** 31), 2 ** 31 - 1),
    "long": st.integers(-(2 ** 63), 2 ** 63 - 1), "float": st.floats(width=32), "double": st.floats(),
    "bytes": st.binary(max_size=12), "string": st.text(max_size=12),
}
# union branches by the Python class fastavro's writer picks them by (one per class: unambiguous)
CLASS = {"null": "none", "boolean": "bool", "int": "int", "long": "int", "float": "float", "double": "float",
         "bytes": "bytes", "fixed": "bytes", "string": "str", "enum": "str", "array": "list", "map": "dict",
         "record": "dict"}


@st.composite
def schemas(draw, depth=0, names=None):
    names = names if names is not None else [0]

    def name():
        names[0] += 1
        return f"T{names[0]}"

    kinds = ["prim", "logical", "decimal", "uuid"] + (["record", "enum", "fixed", "array", "map", "union"]
                                                       if depth < 3 else [])
    k = draw(st.sampled_from(kinds))
    if k == "prim":
        return draw(st.sampled_from(list(PRIMS)))
    if k == "logical":
        base, lt, _ = draw(st.sampled_from(LOGICAL))
        return {"type": base, "logicalType": lt}
    if k == "decimal":
        p = draw(st.integers(1, 45))
        s = draw(st.integers(0, p))
        if draw(st.booleans()):
            return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
        size = draw(st.integers(1, 20))
        p = min(p, int(np.floor(np.log10(2.0 ** (8 * size - 1) - 1))))
        if p < 1:
            return "bytes"
        return {"type": "fixed", "name": name(), "size": size, "logicalType": "decimal", "precision": p,
                "scale": min(s, p)}
    if k == "uuid":
        return {"type": "string", "logicalType": "uuid"}
    if k == "record":
        n = draw(st.integers(0, 4))
        return {"type": "record", "name": name(),
                "fields": [{"name": f"f{i}", "type": draw(schemas(depth + 1, names))} for i in range(n)]}
    if k == "enum":
        n = draw(st.integers(1, 5))
        return {"type": "enum", "name": name(), "symbols": [f"S{i}" for i in range(n)]}
    if k == "fixed":
        return {"type": "fixed", "name": name(), "size": draw(st.integers(0, 6))}
    if k == "array":
        return {"type": "array", "items": draw(schemas(depth + 1, names))}
    if k == "map":
        return {"type": "map", "values": draw(schemas(depth + 1, names))}
    branches, classes = [], set()
    for _ in range(draw(st.integers(1, 4))):
        b = draw(schemas(depth + 1, names))
        kind = _kind(b)
        if kind == "union" or CLASS.get(kind, kind) in classes or isinstance(b, dict) and b.get("logicalType"):
            continue
        classes.add(CLASS.get(kind, kind))
        branches.append(b)
    return branches or ["null"]


def _kind(s):
    if isinstance(s, list):
        return "union"
    if isinstance(s, str):
        return s
    return s["type"]


@st.composite
def values_of(draw, s):
    k = _kind(s)
    if k == "union":
        i = draw(st.integers(0, len(s) - 1))
        v = draw(values_of(s[i]))
        if _kind(s[i]) == "record":
            return (s[i]["name"], v)
        return v
    if isinstance(s, dict):
        lt = s.get("logicalType")
        if lt == "decimal":
            p, sc = s["precision"], s.get("scale", 0)
            return decimal.Decimal(draw(st.integers(-(10 ** p) + 1, 10 ** p - 1))).scaleb(-sc, EXACT)
        if lt == "uuid":
            return str(draw(st.uuids()))
        for base, name, strat in LOGICAL:
            if lt == name:
                return draw(strat)
        if k == "record":
            return {f["name"]: draw(values_of(f["type"])) for f in s["fields"]}
        if k == "enum":
            return draw(st.sampled_from(s["symbols"]))
        if k == "fixed":
            return draw(st.binary(min_size=s["size"], max_size=s["size"]))
        if k == "array":
            return draw(st.lists(values_of(s["items"]), max_size=4))
        if k == "map":
            return draw(st.dictionaries(st.text(max_size=4), values_of(s["values"]), max_size=3))
    return draw(PRIMS[k])


@st.composite
def schema_and_values(draw):
    inner = draw(schemas())
    s = {"type": "record", "name": "Top", "fields": [{"name": "v", "type": inner}]}
    vals = draw(st.lists(values_of(s), min_size=1, max_size=6))
    return s, vals


@settings(max_examples=int(os.environ.get("AVRO_EXAMPLES", "200")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(schema_and_values())
def test_random_schemas_against_fastavro(case):
    s, vals = case
    parsed = fastavro.parse_schema(s)
    framed = []
    for v in vals:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, v)
        framed.append(b"\x00\x00\x00\x00\x07" + out.getvalue())
    reg = InlineSchemaRegistry({7: json.dumps(s)})
    dec = decode_column(pa.array(framed, pa.binary()), format="avro", registry=reg, reader_schema=7)
    assert dec.error_count == 0, dec.error.to_pylist()
    fa = [fastavro_read(f[5:], s) for f in framed]
    assert same(plain(dec.values), expected_pylist(fa, parse_schema(json.dumps(s))))
    dec.values.validate(full=True)
    # one value cut short anywhere is an error (never an over-read), the others unharmed
    cut = framed[0][: max(5, len(framed[0]) - 1)]
    if len(framed[0]) > 5:
        dec2 = decode_column(pa.array([cut] + framed, pa.binary()), format="avro", registry=reg, reader_schema=7,
                             trailing="ignore")
        try:
            fastavro_read(cut[5:], s)
            fastavro_ok = True
        except Exception:  # noqa: BLE001 - fastavro raises EOFError, IndexError...
            fastavro_ok = False
        assert (dec2.error_count == 0) == fastavro_ok
        assert same(plain(dec2.values)[1:], plain(dec.values))


def test_json_rendering_matches_avro_json_encoding():
    """avro_json == fastavro's Avro JSON encoder (json_writer) of the same records."""
    from fastavro.json_write import json_writer
    schema = {k: v for k, v in EVERYTHING.items()}
    schema["fields"] = [f for f in EVERYTHING["fields"]
                        if not (isinstance(f["type"], dict) and "logicalType" in f["type"])]   # base types only
    parsed = fastavro.parse_schema(json.loads(compact(schema)))
    recs = [{k: v for k, v in everything(i).items() if k in {f["name"] for f in schema["fields"]}} for i in range(10)]
    for r in recs:
        r["f"] = 1.5 if r["f"] != r["f"] or abs(r["f"]) == float("inf") else r["f"]
        r["d"] = 2.5 if r["d"] != r["d"] or abs(r["d"]) == float("inf") else r["d"]
    framed = []
    for r in recs:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, r)
        framed.append(b"\x00\x00\x00\x00\x01" + out.getvalue())
    reg = InlineSchemaRegistry({1: json.dumps(schema)})
    dec = decode_column(pa.array(framed, pa.binary()), format="avro", registry=reg, reader_schema=1)
    ours = dec.json()
    for text, rec in zip(ours, recs):
        buf = io.StringIO()
        json_writer(buf, parsed, [rec])
        theirs = json.loads(buf.getvalue())
        assert _floats_close(json.loads(text), theirs)


def _floats_close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_floats_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_floats_close(x, y) for x, y in zip(a, b))
    return a == b

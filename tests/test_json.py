"""JSON values to Arrow (kafkafmt.values.json._schema, jsonplan, the Cython kernel; formats "json-schema",
"json", "connect-json", and "registry" across formats), checked against ``json.loads``,
confluent-kafka's ``JSONSerializer``/``JSONDeserializer`` and pyarrow's own JSON reader.

Values are written by confluent-kafka's serializers against its mock registry, whose state is
written as a real ``_schemas`` partition (tests/protobuf_support.mirror_registry); expected values
are ``json.loads`` of the payloads, converted to Arrow's shape by the schema alone.
"""
import datetime
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkafmt
from kafkafmt.errors import SchemaError, ValueDecodeError
from kafkafmt.values.registry import ClientSchemaRegistry, open_registry
from kafkafmt.values import decode_column, value_type

from protobuf_support import mirror_registry, same

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "note": {"type": ["string", "null"]},
        "price": {"type": "number"},
        "paid": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED"]},
        "created": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "address": {"$ref": "#/definitions/Address"},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "extra": {},
        "either": {"oneOf": [{"type": "null"}, {"type": "integer"}]},
    },
    "required": ["id", "name", "status"],
    "definitions": {
        "Address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    "required": ["city"]},
        "Line": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}},
    },
}


def order(i):
    o = {"id": i * 1000 - 5, "name": ["", "é", "日本", "a\nb\"c\\", "x" * 50][i % 5], "status": ["NEW", "PAID", "SHIPPED"][i % 3]}
    if i % 2:
        o["note"] = None if i % 4 == 1 else f"note {i}"
    if i % 3:
        o["price"] = [0.5, -1e300, 3.0, 1e-7][i % 4]
        o["paid"] = i % 2 == 0
    o["tags"] = ["a", "b", "c"][: i % 4]
    if i % 5:
        o["created"] = ["2024-02-29T23:59:59Z", "2024-01-01T10:00:00.123456789+02:00", "1970-01-01T00:00:00Z",
                        "2262-04-11T00:00:00.5-01:30"][i % 4]
        o["day"] = ["2024-02-29", "1900-01-01"][i % 2]
    if i % 4 == 0:
        o["address"] = {"city": f"c{i}"} if i % 8 else {"city": "z", "zip": "0"}
    o["lines"] = [{"sku": f"s{j}", "qty": j} for j in range(i % 3)]
    if i % 2 == 0:
        o["attrs"] = {f"k{j}": j - i for j in range(i % 4)}
    if i % 3 == 0:
        o["extra"] = [1, {"x": None}, "y"] if i % 2 else {"nested": True}
    if i % 7 == 0:
        o["either"] = i
    return o


def _ns(text):
    """RFC 3339 text -> ns since the epoch (independent of kafkafmt's parser)."""
    body, frac = text, 0
    for zone in ("Z", "+", "-"):
        pass
    if text.endswith("Z"):
        body, off = text[:-1], 0
    else:
        body, sign, off = text[:-6], text[-6], text[-5:]
        off = (int(off[:2]) * 60 + int(off[3:])) * (1 if sign == "+" else -1)
    if "." in body:
        body, f = body.split(".")
        frac = int(f.ljust(9, "0")[:9])
    dt = datetime.datetime.fromisoformat(body).replace(tzinfo=datetime.timezone.utc)
    secs = (dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(seconds=1)
    return (secs - off * 60) * 1_000_000_000 + frac


def expected_order(o):
    """json.loads output as kafkafmt's plain values of ORDER (by the schema alone)."""
    if o is None:
        return None
    out = {}
    for name in ORDER["properties"]:
        v = o.get(name)
        if v is None:
            out[name] = None
        elif name == "created":
            out[name] = _ns(v) // 1000 * 1000           # timestamp[us]: floored to the microsecond
        elif name == "day":
            out[name] = (datetime.date.fromisoformat(v) - datetime.date(1970, 1, 1)).days
        elif name == "address":
            out[name] = {"city": v.get("city"), "zip": v.get("zip")}
        elif name == "lines":
            out[name] = [{"sku": x.get("sku"), "qty": x.get("qty")} for x in v]
        elif name == "attrs":
            out[name] = v
        elif name == "extra":
            out[name] = v
        else:
            out[name] = v
    return out


def plain_order(v):
    """kafkafmt's to_pylist() row in the same shape."""
    if v is None:
        return None
    out = dict(v)
    # (these documents hold no property outside the schema)
    assert out.pop("additionalProperties") is None
    for name in ("address", "lines"):
        for x in [out[name]] if isinstance(out[name], dict) else out[name] or []:
            assert x.pop("additionalProperties") is None
    if out["created"] is not None:
        delta = out["created"] - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        out["created"] = delta // datetime.timedelta(microseconds=1) * 1000
    if out["day"] is not None:
        out["day"] = (out["day"] - datetime.date(1970, 1, 1)).days
    if out["attrs"] is not None:
        out["attrs"] = dict(out["attrs"])
    if out["extra"] is not None:
        out["extra"] = json.loads(out["extra"])
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    client = SchemaRegistryClient.new_client({"url": "mock://json-orders"})
    ser = JSONSerializer(json.dumps(ORDER), client)
    ctx = SerializationContext("orders", MessageField.VALUE)
    objs = [order(i) for i in range(80)]
    values = [ser(o, ctx) for o in objs]
    root = tmp_path_factory.mktemp("json")
    mirror_registry(client, str(root))
    with kafkafmt.LogWriter(f"{root}/orders-0") as w:
        w.append(values=values + [None])
    return str(root), objs, values, client


def test_json_schema_from_the_schemas_topic(written):
    root, objs, values, _ = written
    recs = kafkafmt.read_log_dir(f"{root}/orders-0")
    reg = open_registry(None, roots=root)
    dec = decode_column(recs.value, format="json-schema", registry=reg, topic="orders")
    assert dec.error_count == 0, dec.error.to_pylist()
    dec.values.validate(full=True)
    got = [plain_order(v) for v in dec.values.to_pylist()]
    want = [expected_order(json.loads(v[5:])) for v in values] + [None]
    for i, (g, w) in enumerate(zip(got, want)):
        assert same(g, w), f"row {i}:\n ours {g}\n want {w}"
    assert dec.values.type == value_type("json-schema", registry=reg, topic="orders")


def test_json_schema_types(written):
    root, *_ = written
    t = value_type("json-schema", registry=open_registry(None, roots=root), topic="orders")
    f = {x.name: x for x in t}
    # (an integer is nullable even where required: one beyond int64 is a null field, named in valueError)
    assert f["id"].nullable and f["id"].type == pa.int64() and f["note"].nullable
    assert not f["status"].nullable and f["status"].type == pa.dictionary(pa.int32(), pa.string())
    assert f["created"].type == pa.timestamp("us", tz="UTC") and f["day"].type == pa.date32()
    assert f["address"].type == pa.struct([pa.field("city", pa.string(), False), pa.field("zip", pa.string()),
                                           pa.field("additionalProperties", pa.string())])
    assert pa.types.is_map(f["attrs"].type) and f["extra"].type == pa.string() and f["either"].type == pa.int64()


def test_equals_confluent_deserializer(written):
    root, objs, values, client = written
    de = JSONDeserializer(json.dumps(ORDER))
    ctx = SerializationContext("orders", MessageField.VALUE)
    dec = decode_column(pa.array(values, pa.binary()), format="json-schema", registry=ClientSchemaRegistry(client),
                        topic="orders")
    got = [plain_order(v) for v in dec.values.to_pylist()]
    assert all(same(g, expected_order(de(v, ctx))) for g, v in zip(got, values))


def test_values_not_matching_the_schema(written):
    root, objs, values, _ = written
    reg = open_registry(None, roots=root)
    head = values[0][:5]
    bad = [json.dumps(o).encode() for o in (
        {"id": 1, "name": "x"},                                          # status (required) missing
        {"id": "1", "name": "x", "status": "NEW"},                       # a string for an integer
        {"id": 1.5, "name": "x", "status": "NEW"},                       # not an integer
        {"id": 1, "name": "x", "status": "LOST"},                        # not in the enum
        {"id": 1, "name": None, "status": "NEW"},                        # null for a non-null type
        {"id": 1, "name": "x", "status": "NEW", "created": "yesterday"},
        {"id": 1, "name": "x", "status": "NEW", "address": {"zip": "1"}},  # nested required missing
        {"id": 1, "name": "x", "status": "NEW", "attrs": {"a": "b"}},
        {"id": 2 ** 63, "name": "x", "status": "NEW"},
    )] + [b'{"id": 1, "name": "x", "status": "NEW"', b"[]", b'{"id": 1, "name": "x", "status": "NEW"} 1',
          b'\xff', b'{"id": 1.0, "name": "x", "status": "NEW", "extra": NaN}']
    dec = decode_column(pa.array([head + b for b in bad], pa.binary()), format="json-schema", registry=reg,
                        topic="orders")
    errs = dec.error.to_pylist()
    assert all(errs[:-1]) and errs[-1] is None, errs
    assert "required field missing (in status)" in errs[0] and "a string where the schema has int64" in errs[1]
    assert "enum" in errs[3] and "null where" in errs[4] and "in address.city" in errs[6]
    assert dec.values[-1].as_py()["id"] == 1 and dec.values[-1].as_py()["extra"] == "NaN"
    for b in bad[:9]:
        json.loads(b)                                   # valid JSON, all of them: the schema refuses them
    with pytest.raises(ValueDecodeError) as exc:
        decode_column(pa.array([head + bad[1]], pa.binary()), format="json-schema", registry=reg, topic="orders",
                      strict=True, offsets=np.array([7], np.int64), positions=np.array([100], np.int64))
    assert exc.value.offset == 7 and exc.value.position == 100 + 5 + 7


def test_references_between_subjects(tmp_path):
    client = SchemaRegistryClient.new_client({"url": "mock://json-refs"})
    from confluent_kafka.schema_registry import Schema, SchemaReference
    addr = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    client.register_schema("address", Schema(json.dumps(addr), "JSON"))
    person = {"type": "object", "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}}}
    client.register_schema("people-value", Schema(json.dumps(person), "JSON",
                                                  [SchemaReference("address.json", "address", 1)]))
    mirror_registry(client, str(tmp_path))
    reg = open_registry(str(tmp_path))
    sid = reg.latest("people-value").id
    vals = [b"\x00" + sid.to_bytes(4, "big") + json.dumps({"name": "a", "home": {"city": "b"}}).encode(),
            b"\x00" + sid.to_bytes(4, "big") + json.dumps({"name": "a", "home": {}}).encode()]
    dec = decode_column(pa.array(vals, pa.binary()), format="json-schema", registry=reg, topic="people")
    assert dec.values.to_pylist()[0] == {"name": "a", "home": {"city": "b", "additionalProperties": None},
                                         "additionalProperties": None}
    assert "required" in dec.error[1].as_py()


# ------------------------------------------------------------------------------------------------
# plain JSON

def test_plain_json_with_an_arrow_schema():
    schema = pa.schema([pa.field("a", pa.int32(), False), ("b", pa.list_(pa.float32())),
                        ("c", pa.struct([("d", pa.timestamp("ms", tz="UTC")), ("e", pa.uint8())])),
                        ("m", pa.map_(pa.string(), pa.bool_())), ("s", pa.string()), ("bin", pa.binary())])
    rows = [{"a": 1, "b": [1.5, None], "c": {"d": "2024-01-01T00:00:00.0009Z", "e": 255}, "m": {"x": True},
             "s": "\u00e9\ud83d\ude00", "bin": "AAE="},
            {"a": -2 ** 31, "c": {"d": 1700000000000}}, {"a": 2 ** 31}, {"b": []}, {"a": 1, "c": {"e": 256}}]
    texts = [json.dumps(r).encode() for r in rows]
    dec = decode_column(pa.array(texts + [None], pa.binary()), format="json", reader_schema=schema)
    got = dec.values.to_pylist()
    assert got[0]["a"] == 1 and got[0]["b"] == [1.5, None] and got[0]["m"] == [("x", True)]
    assert got[0]["c"]["d"] == datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)   # 0.9 ms, floored
    assert got[0]["s"] == json.loads(texts[0])["s"] and got[0]["bin"] == b"\x00\x01"
    assert got[1]["c"]["d"].timestamp() == 1_700_000_000
    errs = dec.error.to_pylist()
    assert errs[:2] == [None, None] and "out of range" in errs[2] and "required" in errs[3] and "range" in errs[4]
    assert got[5] is None and errs[5] is None
    assert value_type("json", reader_schema=schema) == dec.values.type


def test_plain_json_inferred_as_pyarrow_infers():
    rows = [{"i": i, "f": i / 3, "s": f"s{i}", "b": i % 2 == 0, "l": list(range(i % 3)), "o": {"x": i},
             "n": None, "ts": "2024-01-01 00:00:00"} for i in range(50)]
    texts = [json.dumps(r).encode() for r in rows]
    dec = decode_column(pa.array(texts, pa.binary()), format="json")
    table = pj.read_json(pa.BufferReader(b"\n".join(texts)))
    theirs = table.to_pylist()
    for a, b in zip(dec.values.to_pylist(), theirs):
        assert a.pop("n") is None and b.pop("n") is None      # null in every value: read as JSON text
        assert a == b
    assert dec.values.type.field("ts").type == table.schema.field("ts").type
    with pytest.raises(SchemaError):
        value_type("json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 63 - 1) | st.floats(allow_nan=False) |
    st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_values, min_size=1, max_size=6))
def test_any_json_as_text_equals_json_loads(docs):
    """Any JSON (as Python's json.dumps writes it, with or without spaces) read as JSON text
    (a JSON Schema of {}) gives back what json.loads gives."""
    texts = [json.dumps(d, indent=1 if i % 2 else None, ensure_ascii=bool(i % 3)).encode()
             for i, d in enumerate(docs)]
    dec = decode_column(pa.array(texts, pa.binary()), format="json", reader_schema={})
    assert dec.error_count == 0
    for t, v in zip(texts, dec.values.to_pylist()):
        want = json.loads(t)
        assert (v is None) == (want is None) and (v is None or same(json.loads(v), want))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=40) | st.text(alphabet='{}[]":,0123456789.eE-+ \\nutrfalsNI\u00e9', max_size=30)
       .map(lambda s: s.encode()))
def test_garbage_is_an_error_exactly_when_json_loads_refuses(raw):
    dec = decode_column(pa.array([raw], pa.binary()), format="json", reader_schema={})
    try:
        want = json.loads(raw)
        text = raw.decode("utf-8")
        json.dumps(want).encode("utf-8")
    except (ValueError, UnicodeError):
        assert dec.error_count == 1 or _lenient(raw)
        return
    if _has_duplicate_keys(text) or _lone_surrogate(want):
        assert dec.error_count == 1
        return
    assert dec.error_count == 0, dec.error[0].as_py()
    got = dec.values[0].as_py()
    assert (got is None and want is None) or same(json.loads(got), want)


def _lenient(raw):
    """json.loads(bytes) also takes UTF-16/32 text (kafkafmt: UTF-8 only)."""
    return raw[:1] == b"\x00" or raw[1:2] == b"\x00"


def _has_duplicate_keys(text):
    found = []
    json.loads(text, object_pairs_hook=lambda pairs: found.append(len(pairs) != len({k for k, _ in pairs})) or {})
    return any(found)


def _lone_surrogate(v):
    try:
        json.dumps(v, ensure_ascii=False).encode("utf-8")
    except UnicodeError:
        return True
    return False


# ------------------------------------------------------------------------------------------------
# Kafka Connect's JsonConverter envelope (a Debezium change event)

DEBEZIUM_SCHEMA = {
    "type": "struct", "name": "dbserver1.inventory.customers.Envelope", "optional": False, "fields": [
        {"field": "before", "type": "struct", "optional": True, "name": "dbserver1.inventory.customers.Value",
         "fields": [{"field": "id", "type": "int32", "optional": False},
                    {"field": "email", "type": "string", "optional": False},
                    {"field": "balance", "type": "bytes", "optional": True,
                     "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
                    {"field": "born", "type": "int32", "optional": True, "name": "io.debezium.time.Date"},
                    {"field": "seen", "type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"},
                    {"field": "updated", "type": "string", "optional": True,
                     "name": "io.debezium.time.ZonedTimestamp"}]},
        {"field": "after", "type": "struct", "optional": True, "name": "dbserver1.inventory.customers.Value",
         "fields": [{"field": "id", "type": "int32", "optional": False},
                    {"field": "email", "type": "string", "optional": False},
                    {"field": "balance", "type": "bytes", "optional": True,
                     "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
                    {"field": "born", "type": "int32", "optional": True, "name": "io.debezium.time.Date"},
                    {"field": "seen", "type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"},
                    {"field": "updated", "type": "string", "optional": True,
                     "name": "io.debezium.time.ZonedTimestamp"}]},
        {"field": "source", "type": "struct", "optional": False, "name": "io.debezium.connector.mysql.Source",
         "fields": [{"field": "version", "type": "string", "optional": False},
                    {"field": "ts_ms", "type": "int64", "optional": False},
                    {"field": "db", "type": "string", "optional": False},
                    {"field": "table", "type": "string", "optional": True}]},
        {"field": "op", "type": "string", "optional": False},
        {"field": "ts_ms", "type": "int64", "optional": True},
        {"field": "tags", "type": "map", "keys": {"type": "string"}, "values": {"type": "int64"}, "optional": True},
    ]}


def change(i):
    row = {"id": i, "email": f"u{i}@x", "balance": None, "born": 10957 + i, "seen": 1_700_000_000_000_000 + i,
           "updated": "2024-01-01T00:00:00.5Z"}
    if i % 2:
        import base64
        row["balance"] = base64.b64encode((i * 12345 - 99999).to_bytes(8, "big", signed=True)).decode()
    op = "cru"[i % 3]
    return {"schema": DEBEZIUM_SCHEMA, "payload": {
        "before": None if op == "c" else dict(row, email="old"), "after": None if op == "d" else row,
        "source": {"version": "2.5", "ts_ms": 1_700_000_000_000 + i, "db": "inventory", "table": "customers"},
        "op": op, "ts_ms": 1_700_000_000_100 + i, "tags": {"a": i} if i % 2 else {}}}


def test_connect_json_debezium_envelope():
    events = [change(i) for i in range(30)]
    texts = [json.dumps(e).encode() for e in events] + [None, b'{"schema": null, "payload": {"op": "c"}}']
    dec = decode_column(pa.array(texts, pa.binary()), format="connect-json")
    assert dec.error_count == 1 and "required field missing (in payload.source)" in dec.error[-1].as_py()
    t = dec.values.type
    assert t.field("after").type.field("balance").type == pa.decimal128(38, 2)
    assert t.field("after").type.field("born").type == pa.date32()
    assert t.field("after").type.field("seen").type == pa.timestamp("us")
    assert t.field("after").type.field("updated").type == pa.timestamp("ns", tz="UTC")
    assert not t.field("op").nullable and t.field("before").nullable
    import decimal
    for e, got in zip(events, dec.values.to_pylist()):
        want = json.loads(json.dumps(e["payload"]))
        for side in ("before", "after"):
            w, g = want[side], got[side]
            if w is None:
                assert g is None
                continue
            assert g["id"] == w["id"] and g["email"] == w["email"]
            if w["balance"] is None:
                assert g["balance"] is None
            else:
                import base64
                unscaled = int.from_bytes(base64.b64decode(w["balance"]), "big", signed=True)
                assert g["balance"] == decimal.Decimal(unscaled).scaleb(-2)
            assert (g["born"] - datetime.date(1970, 1, 1)).days == w["born"]
            assert g["seen"].value == w["seen"] * 1000 if hasattr(g["seen"], "value") else True
        assert got["source"] == want["source"] and got["op"] == want["op"] and got["ts_ms"] == want["ts_ms"]
        assert dict(got["tags"]) == want["tags"]
    assert dec.values[30].as_py() is None and dec.error[30].as_py() is None
    # the Connect schema given: its type known before reading
    assert value_type("connect-json", reader_schema=DEBEZIUM_SCHEMA) == t


# ------------------------------------------------------------------------------------------------
# "registry": a topic migrating from JSON Schema to Avro (and a Protobuf value)

AVRO_ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "price", "type": ["null", "double"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}],
     "default": None}]}


def test_registry_format_across_a_migration(tmp_path):
    client = SchemaRegistryClient.new_client({"url": "mock://json-to-avro"})
    ctx = SerializationContext("shop", MessageField.VALUE)
    jser = JSONSerializer(json.dumps(ORDER), client)
    old = [order(i) for i in range(12)]
    values = [jser(o, ctx) for o in old]
    aser = AvroSerializer(client, json.dumps(AVRO_ORDER))
    new = [{"id": i, "name": f"n{i}", "status": "PAID", "price": 2.5, "tags": ["t"], "address": None}
           for i in range(5)]
    values += [aser(o, ctx) for o in new]
    bad = dict(order(0), name="ok")
    bad["address"] = {"city": "x", "zip": "y"}
    values.append(jser(dict(order(1), status="NEW", tags=["z"]), ctx))
    mirror_registry(client, str(tmp_path))
    reg = open_registry(str(tmp_path))
    assert [reg.version("shop-value", v).schema_type for v in reg.versions("shop-value")] == ["JSON", "AVRO"]
    dec = decode_column(pa.array(values, pa.binary()), format="registry", registry=reg, topic="shop")
    assert dec.values.type == value_type("avro", registry=reg, topic="shop")
    assert dec.error_count == 0, dec.error.to_pylist()
    got = dec.values.to_pylist()
    for o, g in zip(old, got):
        assert g["id"] == o["id"] and g["name"] == o["name"] and g["status"] == o["status"]
        assert g["price"] == o.get("price") and g["tags"] == o["tags"]
        assert g["address"] == (None if "address" not in o else {"city": o["address"]["city"],
                                                                    "zip": o["address"].get("zip")})
    assert got[12:17] == new
    assert set(dec.schema_id.to_pylist()) == {1, 2}


def test_registry_format_refuses_what_does_not_fit(tmp_path):
    client = SchemaRegistryClient.new_client({"url": "mock://json-to-avro-bad"})
    ctx = SerializationContext("shop", MessageField.VALUE)
    loose = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                              "status": {"type": "string"},
                                              "tags": {"type": "array", "items": {"type": "string"}}}}
    jser = JSONSerializer(json.dumps(loose), client)
    values = [jser({"id": "12", "name": "a", "status": "NEW", "tags": []}, ctx),
              jser({"id": "x", "name": "a", "status": "NEW", "tags": []}, ctx),
              jser({"id": "3", "status": "NEW", "tags": []}, ctx),                  # name missing
              jser({"id": "4", "name": "a", "status": "LOST", "tags": []}, ctx)]
    values.append(AvroSerializer(client, json.dumps(AVRO_ORDER))(
        {"id": 9, "name": "b", "status": "NEW", "price": None, "tags": [], "address": None}, ctx))
    mirror_registry(client, str(tmp_path))
    dec = decode_column(pa.array(values, pa.binary()), format="registry", registry=open_registry(str(tmp_path)),
                        topic="shop")
    errs = dec.error.to_pylist()
    assert errs[0] is None and dec.values[0].as_py()["id"] == 12 and dec.values[0].as_py()["status"] == "NEW"
    assert "(schema id 1) does not fit" in errs[1] and "name" in errs[2] and "enum" in errs[3]
    assert errs[4] is None and dec.values[4].as_py()["id"] == 9
    assert [v is None for v in dec.values.to_pylist()] == [False, True, True, True, False]
    dec.values.validate(full=True)


def test_recursive_refs_unroll_then_read_as_text():
    tree = {"$ref": "#/definitions/Node", "definitions": {"Node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}}}
    deep = {"v": 0, "kids": []}
    for i in range(1, 8):
        deep = {"v": i, "kids": [deep]}
    dec = decode_column(pa.array([json.dumps(deep).encode()], pa.binary()), format="json", reader_schema=tree)
    assert dec.error_count == 0
    node, depth = dec.values[0].as_py(), 0
    while isinstance(node, dict):
        assert node["v"] == 7 - depth
        node, depth = node["kids"][0], depth + 1
    assert depth == 4 and json.loads(node)["v"] == 7 - depth      # below the unrolled levels: JSON text


def test_json_texts_of_decoded_values(written):
    root, objs, values, _ = written
    dec = decode_column(pa.array(values[:3] + [None], pa.binary()), format="json-schema",
                        registry=open_registry(None, roots=root), topic="orders")
    texts = dec.json()
    assert texts[3] is None
    for t, o in zip(texts[:3], objs):
        back = json.loads(t)
        assert back["id"] == o["id"] and back["name"] == o["name"] and back["tags"] == o["tags"]


def test_every_door_reads_json_schema_values_alike(written, tmp_path, spark):
    """value_format="json-schema" through the readers, the CLI's export and Spark: the column decode_column
    gives (checked above against confluent-kafka's serializer's JSON)."""
    import pyarrow.parquet as pq

    import kcli

    root, objs, values, _ = written
    recs = kafkafmt.read_log_dir(f"{root}/orders-0")
    want = decode_column(recs.value, format="json-schema", registry=open_registry(None, roots=root), topic="orders")
    lib = kafkafmt.read_log_dirs(root, topics=["orders"], value_format="json-schema").to_arrow()
    assert lib.column("value").to_pylist() == want.values.to_pylist()
    kcli.run("export", root, "--topics", "orders", "--value-format", "json-schema", "--to", tmp_path / "o.parquet",
             check=0)
    assert pq.read_table(tmp_path / "o.parquet").column("value").to_pylist() == want.values.to_pylist()
    df = spark.read.format("kafka-segments").option("subscribe", "orders").option("valueFormat", "json-schema") \
        .load(root)
    assert [r[0] for r in df.orderBy("offset").select("value.id").collect()] == \
        [None if v is None else v["id"] for v in want.values.to_pylist()]

"""Protobuf values to Arrow (kafkafmt.values.protobuf._schema, protoplan, the Cython kernel, format "protobuf"),
checked against the protobuf runtime (upb): ``MessageToDict`` of the message it parses, and
confluent-kafka's ``ProtobufDeserializer``.

Schemas are compiled by protoc (grpcio-tools) into generated classes; values are written by
confluent-kafka's own ``ProtobufSerializer`` against its mock registry, whose state is written as a
real ``_schemas`` partition with the schema text as the registry prints it (which protoc refuses:
kafkafmt parses it with its own compiler); kafkafmt reads both back from disk. Expected values are
``MessageToDict``'s, converted to Arrow's shape by the descriptor alone (tests/protobuf_support.py).
"""
import base64
import json
import struct

import numpy as np
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkafmt
from kafkafmt.errors import SchemaError, ValueDecodeError
from kafkafmt.values.protobuf import compile_text, parse_proto
from kafkafmt.values.registry import ClientSchemaRegistry, InlineSchemaRegistry, open_registry
from kafkafmt.values import decode_column, value_type

from protobuf_support import compile_protos, expected, mirror_registry, ours, proto_text, same, to_dict

COMMON = """syntax = "proto3";
package acme.common;
message Money { string currency = 1; int64 units = 2; sint32 nanos = 3; }
enum Tier { TIER_UNSPECIFIED = 0; GOLD = 1; SILVER = 2; }
"""

EVERYTHING = """syntax = "proto3";
package acme.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/empty.proto";
import "common.proto";

message Everything {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
  float fl = 11; double db = 12; bool bo = 13; string st = 14; bytes by = 15;
  Color color = 16;
  Inner inner = 17;
  repeated Inner inners = 18;
  repeated int64 packed = 19;
  repeated sint32 unpacked = 20 [packed = false];
  repeated string names = 21;
  repeated Color colors = 22;
  map<string, int64> counts = 23;
  map<int32, Inner> by_id = 24;
  map<bool, Color> flags = 25;
  oneof choice { string text = 26; Inner nested = 27; int64 number = 28; }
  optional int32 maybe = 29;
  optional string maybe_text = 30;
  google.protobuf.Timestamp ts = 31;
  google.protobuf.Duration dur = 32;
  google.protobuf.Int64Value w_i64 = 33;
  google.protobuf.StringValue w_str = 34;
  google.protobuf.BoolValue w_bool = 35;
  google.protobuf.DoubleValue w_dbl = 36;
  google.protobuf.Struct meta = 37;
  repeated google.protobuf.Timestamp times = 38;
  acme.common.Money price = 39;
  acme.common.Tier tier = 40;
  google.protobuf.Empty nothing = 41;
  Node tree = 42;
  map<string, google.protobuf.Timestamp> stamps = 43;
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
}
message Inner { int32 x = 1; repeated string tags = 2; Everything.Color c = 3; }
message Node { string label = 1; repeated Node kids = 2; }
"""

_CLASSES = {}


def classes():
    if not _CLASSES:
        c, files = compile_protos({"common.proto": COMMON, "everything.proto": EVERYTHING})
        _CLASSES.update(c)
        _CLASSES["_files"] = files
    return _CLASSES


def everything(i):
    cls = classes()
    E = cls["acme.v1.Everything"]
    m = E()
    m.i32 = [0, -1, 2 ** 31 - 1, -2 ** 31, 7][i % 5]
    m.i64 = [0, -1, 2 ** 63 - 1, -2 ** 63, 10 ** 12][i % 5]
    m.u32 = [0, 2 ** 32 - 1, 5][i % 3]
    m.u64 = [0, 2 ** 64 - 1, 5][i % 3]
    m.s32, m.s64 = -i, -i * 10 ** 10
    m.f32, m.f64, m.sf32, m.sf64 = i, 2 ** 64 - 1 - i, -i, -(2 ** 62) + i
    m.fl = [0.0, 1.5, float("inf"), -2.25e10, 0.1][i % 5]
    m.db = [0.0, float("nan"), -1e308, 5e-324, 0.1][i % 5]
    m.bo = i % 2 == 1
    m.st = ["", "héllo", "日本", "a" * 300, "\x00"][i % 5]
    m.by = bytes(range(i % 7))
    m.color = i % 3
    if i % 4:
        m.inner.x = i
        m.inner.tags.extend(["t", "u"][: i % 3])
    for j in range(i % 3):
        m.inners.add(x=j, c=j % 3)
    m.packed.extend(range(-i, i))
    m.unpacked.extend(range(i % 4))
    m.names.extend(["a", "", "ccc"][: i % 4])
    m.colors.extend([2, 0, 1][: i % 4])
    for j in range(i % 3):
        m.counts[f"k{j}"] = j * i
        m.by_id[j].x = j
    if i % 2:
        m.flags[True] = 1
        m.flags[False] = 2
    k = i % 4
    if k == 1:
        m.text = "t" * i
    elif k == 2:
        m.nested.x = i
    elif k == 3:
        m.number = -i
    if i % 3 == 0:
        m.maybe = 0
        m.maybe_text = ""
    if i % 5:
        m.ts.seconds = 1_700_000_000 + i
        m.ts.nanos = i * 1000
        m.dur.seconds = -i
        m.dur.nanos = -i * 7
    if i % 2:
        m.w_i64.value = -i
        m.w_str.value = "w"
        m.w_bool.value = False
        m.w_dbl.value = 2.5
    if i % 3 == 1:
        m.meta.update({"a": 1, "b": [True, None, "x"], "c": {"d": 1.5}})
    for j in range(i % 3):
        m.times.add(seconds=j, nanos=j)
    if i % 2 == 0:
        m.price.currency = "EUR"
        m.price.units = i
        m.price.nanos = -i
    m.tier = i % 3
    if i % 3 == 2:
        m.nothing.SetInParent()
    if i % 2:
        m.tree.label = "root"
        kid = m.tree.kids.add(label="k")
        kid.kids.add(label="kk")
    if i % 3 == 0:
        m.stamps["x"].seconds = i
    return m


def _serializer(client, topic="orders", cls=None, **conf):
    cls = cls or classes()["acme.v1.Everything"]
    ser = ProtobufSerializer(cls, client, conf=dict({"use.deprecated.format": False}, **conf))
    ctx = SerializationContext(topic, MessageField.VALUE)
    return lambda m: ser(m, ctx)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(log dir, messages, framed values, mock client): Everything written by confluent-kafka."""
    client = SchemaRegistryClient.new_client({"url": "mock://protobuf-everything"})
    ser = _serializer(client)
    msgs = [everything(i) for i in range(60)]
    values = [ser(m) for m in msgs]
    root = tmp_path_factory.mktemp("pb")
    mirror_registry(client, str(root))
    with kafkafmt.LogWriter(f"{root}/orders-0") as w:
        w.append(values=values + [None])
    return str(root), msgs, values, client


def _compare(dec, msgs, desc, unit="us"):
    got = dec.values.to_pylist()
    assert len(got) == len(msgs)
    for i, (g, m) in enumerate(zip(got, msgs)):
        if m is None:
            assert g is None
            continue
        want = expected(to_dict(m), desc, unit)
        assert same(ours(g, desc), want), f"row {i}:\n ours {ours(g, desc)}\n want {want}"


def test_everything_from_the_schemas_topic(written):
    root, msgs, values, _ = written
    recs = kafkafmt.read_log_dir(f"{root}/orders-0")
    dec = decode_column(recs.value, format="protobuf", registry=open_registry(None, roots=root), topic="orders")
    assert dec.error_count == 0, dec.error.to_pylist()
    dec.values.validate(full=True)
    assert dec.values[-1].as_py() is None and dec.error[-1].as_py() is None       # the tombstone
    assert set(dec.schema_id.to_pylist()[:-1]) == {struct.unpack(">I", values[0][1:5])[0]}
    _compare(dec, msgs + [None], classes()["acme.v1.Everything"].DESCRIPTOR)


def test_registry_text_is_what_protoc_refuses(written, tmp_path):
    root, *_ = written
    reg = open_registry(None, roots=root)
    rs = reg.latest("orders-value")
    assert "option map_entry = true;" in rs.schema_str and ".acme.v1.Inner" in rs.schema_str
    assert [r.name for r in rs.references] == ["common.proto"]
    (tmp_path / "x.proto").write_text(rs.schema_str.replace('import "common.proto";', ""))
    from grpc_tools import protoc
    assert protoc.main(["protoc", f"-I{tmp_path}", f"--descriptor_set_out={tmp_path}/o.pb",
                        f"{tmp_path}/x.proto"]) != 0


def test_equals_confluent_deserializer(written):
    root, msgs, values, client = written
    E = classes()["acme.v1.Everything"]
    de = ProtobufDeserializer(E, conf={"use.deprecated.format": False})
    ctx = SerializationContext("orders", MessageField.VALUE)
    theirs = [de(v, ctx) for v in values]
    # the live (mock) registry: schemas come back as base64 FileDescriptorProtos
    dec = decode_column(pa.array(values, pa.binary()), format="protobuf", registry=ClientSchemaRegistry(client),
                        topic="orders")
    assert dec.error_count == 0
    _compare(dec, theirs, E.DESCRIPTOR)


def test_generated_class_without_registry(written):
    _, msgs, values, _ = written
    E = classes()["acme.v1.Everything"]
    dec = decode_column(pa.array(values, pa.binary()), format="protobuf", reader_schema=E)
    assert dec.error_count == 0
    _compare(dec, msgs, E.DESCRIPTOR)
    assert value_type("protobuf", reader_schema=E) == dec.values.type
    # every nanosecond with time_unit="ns"
    dec = decode_column(pa.array(values, pa.binary()), format="protobuf", reader_schema=E, time_unit="ns")
    assert dec.error_count == 0 and dec.values.type.field("ts").type == pa.timestamp("ns", tz="UTC")
    _compare(dec, msgs, E.DESCRIPTOR, "ns")


def test_arrow_types(written):
    root, *_ = written
    t = value_type("protobuf", registry=open_registry(None, roots=root), topic="orders")
    assert t.field("i32").type == pa.int32() and not t.field("i32").nullable
    assert t.field("u64").type == pa.uint64() and t.field("f32").type == pa.uint32()
    assert t.field("color").type == pa.dictionary(pa.int32(), pa.string())
    assert t.field("inner").nullable and pa.types.is_struct(t.field("inner").type)
    assert t.field("packed").type == pa.list_(pa.field("item", pa.int64(), False))
    assert pa.types.is_map(t.field("by_id").type)
    # a oneof's members are fields of the message (as MessageToDict and Spark's from_protobuf show them)
    assert "choice" not in t.names and t.names[t.names.index("by_id") + 2:][:3] == ["text", "nested", "number"]
    assert all(t.field(m).nullable for m in ("text", "nested", "number"))
    assert t.field("maybe").nullable and t.field("maybe").type == pa.int32()
    assert t.field("ts").type == pa.timestamp("us", tz="UTC") and t.field("dur").type == pa.duration("us")
    assert t.field("w_i64").type == pa.int64() and t.field("w_i64").nullable
    assert t.field("meta").type == pa.string()
    assert t.field("by").type == pa.binary() and t.field("st").type == pa.string()


# ------------------------------------------------------------------------------------------------
# evolution, unknown fields, several message types

V1 = """syntax = "proto3";
package shop;
message Order { int64 id = 1; string note = 2; repeated int32 qty = 3; Status status = 4; Extra extra = 6;
  enum Status { NEW = 0; PAID = 1; } }
message Extra { int32 a = 1; }
message Payment { string iban = 1; int64 cents = 2; message Leg { int32 n = 1; } }
"""
V2 = """syntax = "proto3";
package shop;
message Order { int64 id = 1; string note = 2; repeated int32 qty = 3; Status status = 4; string added = 5;
  Extra extra = 6; enum Status { NEW = 0; PAID = 1; GONE = 2; } }
message Extra { int32 a = 1; sint64 b = 2; }
message Payment { string iban = 1; int64 cents = 2; message Leg { int32 n = 1; } }
"""


def test_evolution_and_unknown_fields(tmp_path):
    c1, _ = compile_protos({"v1.proto": V1})
    c2, _ = compile_protos({"v2.proto": V2})
    client = SchemaRegistryClient.new_client({"url": "mock://protobuf-evolution"})
    s1, s2 = _serializer(client, "shop", c1["shop.Order"]), _serializer(client, "shop", c2["shop.Order"])
    old = [c1["shop.Order"](id=i, note=f"n{i}", qty=[i, i + 1], status=i % 2) for i in range(5)]
    new = [c2["shop.Order"](id=i, note="v2", added="new", status=2, extra={"a": i, "b": -i}) for i in range(5)]
    values = [s1(m) for m in old] + [s2(m) for m in new]
    mirror_registry(client, str(tmp_path))
    reg = open_registry(str(tmp_path))
    ids = {struct.unpack(">I", v[1:5])[0] for v in values}
    assert len(ids) == 2
    # the latest (v2) reads both; v1 as the reader skips v2's unknown field 5 and Extra.b (the file
    # declares Order, Payment and Payment.Leg, none used by another: the message is named)
    for reader, cls in (({"message": "shop.Order"}, c2["shop.Order"]),
                        ({"id": min(ids), "message": "shop.Order"}, c1["shop.Order"])):
        dec = decode_column(pa.array(values, pa.binary()), format="protobuf", registry=reg, topic="shop",
                            reader_schema=reader)
        assert dec.error_count == 0
        want = [cls.FromString(v[6:]) for v in values]          # the runtime, parsing with the reader class
        _compare(dec, want, cls.DESCRIPTOR)
    v1 = decode_column(pa.array(values, pa.binary()), format="protobuf", registry=reg,
                       reader_schema={"id": min(ids), "message": "shop.Order"})
    assert "added" not in v1.values.type.names and v1.values[7].as_py()["status"] == "2"   # an unknown number


def test_message_indexes_and_other_messages(tmp_path):
    c, _ = compile_protos({"v1.proto": V1})
    client = SchemaRegistryClient.new_client({"url": "mock://protobuf-indexes"})
    from confluent_kafka.schema_registry import record_subject_name_strategy
    conf = {"subject.name.strategy": record_subject_name_strategy}
    pay = _serializer(client, "mixed", c["shop.Payment"], **conf)
    leg = _serializer(client, "mixed", c["shop.Payment"].Leg, **conf)
    order = _serializer(client, "mixed", c["shop.Order"], **conf)
    values = [pay(c["shop.Payment"](iban="DE1", cents=5)), leg(c["shop.Payment"].Leg(n=3)),
              order(c["shop.Order"](id=1))]
    assert values[0][5:6] == b"\x02" and values[0][6:7] == b"\x04"  # [2]: the third top-level message
    assert values[1][5:8] == b"\x04\x04\x00"                         # [2, 0]
    assert values[2][5:6] == b"\x00"                                 # [0]: the 0x00 shortcut
    mirror_registry(client, str(tmp_path))
    reg = open_registry(str(tmp_path))
    arr = pa.array(values, pa.binary())
    dec = decode_column(arr, format="protobuf", registry=reg, topic="mixed", reader_schema="shop.Payment")
    assert dec.values.to_pylist()[0] == {"iban": "DE1", "cents": 5}
    assert dec.values[1].as_py() is None and "shop.Payment.Leg, not the reader's shop.Payment" in dec.error[1].as_py()
    legs = decode_column(arr, format="protobuf", registry=reg, reader_schema="shop.Payment.Leg")
    assert legs.values.to_pylist()[1] == {"n": 3} and legs.error_count == 2
    orders = decode_column(arr, format="protobuf", registry=reg, reader_schema={"subject": "shop.Payment",
                                                                                "message": "shop.Order"})
    assert orders.values.to_pylist()[2]["id"] == 1


# ------------------------------------------------------------------------------------------------
# the wire format's corners, against the runtime

def _raw(cls, payloads):
    return decode_column(pa.array(payloads, pa.binary()), format="protobuf-raw", reader_schema=cls)


def _check_against_runtime(cls, payloads):
    dec = _raw(cls, payloads)
    dec.values.validate(full=True)
    for i, b in enumerate(payloads):
        try:
            want = cls.FromString(b)
            d = to_dict(want)
        except Exception:  # noqa: BLE001 - DecodeError, or MessageToDict refusing a value
            assert dec.values[i].as_py() is None and dec.error[i].as_py(), f"row {i}: the runtime refuses it"
            continue
        if dec.error[i].as_py() is not None and dec.error[i].as_py().startswith("field number 0 ") \
                and _fieldless_with_unknown(want):
            continue        # (upb keeps such bytes as unknown fields; protobuf-java refuses tag 0: so does kafkafmt)
        assert dec.error[i].as_py() is None, f"row {i}: {dec.error[i].as_py()}"
        assert same(ours(dec.values[i].as_py(), cls.DESCRIPTOR), expected(d, cls.DESCRIPTOR)), f"row {i}"
    return dec


def _fieldless_with_unknown(msg):
    """Whether a message parsed by the runtime holds, at any depth, a message of a type without fields
    (``google.protobuf.Empty``) that kept bytes as unknown fields: upb accepts a field number 0 there (it refuses
    it in any other message), which protobuf-java refuses as an invalid tag."""
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        values = value.values() if field.message_type.GetOptions().map_entry else value if repeated else [value]
        for v in values:
            if not hasattr(v, "ListFields"):
                continue                                  # (a map's scalar values)
            if not field.message_type.fields and v.ByteSize() > 0:
                return True
            if _fieldless_with_unknown(v):
                return True
    return False


def test_field_number_zero_is_refused_in_an_empty_too():
    """A field number 0 is an invalid tag (protobuf-java: InvalidProtocolBufferException.invalidTag), also in a
    ``google.protobuf.Empty``, where upb keeps it as an unknown field (the case hypothesis found)."""
    E = classes()["acme.v1.Everything"]
    payload = _ld(41, b"\x00\x00\x00\x00")
    assert _fieldless_with_unknown(E.FromString(payload))          # (upb accepts it)
    dec = _raw(E, [payload])
    assert dec.values[0].as_py() is None and dec.error[0].as_py().startswith("field number 0 ")
    assert _fieldless_with_unknown(E.FromString(_ld(41, b""))) is False


def _tag(n, wt):
    return _varint((n << 3) | wt)


def _varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(n, b):
    return _tag(n, 2) + _varint(len(b)) + b


def test_wire_corners():
    E = classes()["acme.v1.Everything"]
    inner = _ld(17, _tag(1, 0) + _varint(5)) + _ld(17, _ld(2, b"x"))           # a message seen twice: merged
    cases = [
        b"",
        _tag(1, 0) + _varint(1) + _tag(1, 0) + _varint(2),                   # last wins
        _tag(1, 0) + _varint(2 ** 64 - 1),                                   # int32 from a 10-byte varint
        _tag(19, 0) + _varint(3) + _ld(19, _varint(4) + _varint(5)) + _tag(19, 0) + _varint(6),  # packed + not
        _ld(20, _varint(2) + _varint(3)),                                    # [packed=false] field, packed data
        inner,
        _tag(26, 2) + _varint(1) + b"a" + _tag(28, 0) + _varint(9),          # oneof: the last member wins
        _ld(27, _tag(1, 0) + _varint(1)) + _tag(26, 2) + _varint(1) + b"a" + _ld(27, _ld(2, b"t")),
        _ld(23, _ld(1, b"k") + _tag(2, 0) + _varint(1)) + _ld(23, _ld(1, b"k") + _tag(2, 0) + _varint(2)),
        _ld(24, _tag(2, 2) + _varint(0)),                                    # map entry without its key
        _ld(24, _tag(1, 0) + _varint(3)),                                    # ... without its value
        _ld(23, _ld(2, b"k") + _tag(2, 0) + _varint(2)) + _ld(23, _ld(1, b"j")),  # an entry with an unknown
        # field is the message's unknown field, not a map entry (upb)
        _tag(999, 0) + _varint(5) + _tag(998, 5) + b"abcd" + _tag(997, 1) + b"12345678" + _ld(996, b"zz"),
        _tag(995, 3) + _tag(1, 0) + _varint(1) + _tag(995, 4) + _tag(2, 0) + _varint(7),   # an unknown group
        _tag(1, 2) + _varint(1) + b"x",                                      # wrong wire type: unknown
        _tag(16, 0) + _varint(77),                                           # an enum number the enum lacks
        _ld(31, _tag(1, 0) + _varint(5)) + _ld(31, _tag(2, 0) + _varint(6)),  # Timestamp merged
        _ld(33, b""),                                                        # a wrapper set to its default
        _ld(37, _ld(1, _ld(1, b"k") + _ld(2, _tag(4, 0) + _varint(1)))),     # Struct {"k": true}
        # errors
        _tag(1, 0) + b"\x80",                                                # truncated varint
        _tag(1, 0) + b"\xff" * 11,                                           # too long
        _tag(0, 0) + _varint(1),                                             # field 0
        _tag(1, 6) + _varint(1),                                             # wire type 6
        _tag(1, 4),                                                          # end group alone
        _tag(995, 3) + _tag(1, 0) + _varint(1),                              # group not closed
        _ld(14, b"\xff"),                                                    # invalid UTF-8
        _tag(15, 2) + _varint(5) + b"ab",                                    # length past the end
        _ld(19, _varint(1) + b"\x80"),                                       # packed ends inside an element
    ]
    dec = _check_against_runtime(E, cases)
    assert dec.error_count == 9
    # a Timestamp past year 9999 (the runtime parses it, MessageToDict refuses it): microseconds hold it
    late = _raw(E, [_ld(31, _tag(1, 0) + _varint(10 ** 12))])
    assert late.error_count == 0 and late.values.field("ts").cast(pa.int64())[0].as_py() == 10 ** 18


def test_depth_and_recursion_limits():
    N = classes()["acme.v1.Node"]
    deep = b""
    for _ in range(6):
        deep = _ld(2, _ld(1, b"n") + deep)
    dec = _raw(N, [deep, _ld(1, b"only")])
    # past recursive_fields_max_depth (5): the rest as its JSON text, the value read
    assert dec.error_count == 0 and dec.values[1].as_py()["label"] == "only"
    cut = dec.values[0].as_py()["kids"][0]["kids"][0]["kids"][0]["kids"][0]["kids"]
    assert [json.loads(x) for x in cut] == [to_dict(N.FromString(deep).kids[0].kids[0].kids[0].kids[0].kids[0])]
    hostile = b""
    for _ in range(200):
        hostile = _tag(995, 3) + hostile + _tag(995, 4)
    assert "deeper" in _raw(N, [hostile]).error[0].as_py()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 45).filter(lambda n: n != 37), st.sampled_from([0, 1, 2, 5]), st.binary(max_size=12),
                          st.integers(0, 2 ** 64 - 1)), max_size=12))
def test_random_fields_against_runtime(fields):
    """Random field streams (known and unknown numbers, every wire type): decoded exactly when the
    runtime parses them, a per-record error when it refuses them. (Field 37, a Struct, is left out:
    MessageToDict refuses a Value that sets no kind, which kafkafmt reads as JSON null --
    test_struct_values.)"""
    E = classes()["acme.v1.Everything"]
    payload = b""
    for num, wt, data, v in fields:
        if wt == 0:
            payload += _tag(num, 0) + _varint(v)
        elif wt == 1:
            payload += _tag(num, 1) + struct.pack("<Q", v)
        elif wt == 5:
            payload += _tag(num, 5) + struct.pack("<I", v & 0xFFFFFFFF)
        else:
            payload += _ld(num, data)
    _check_against_runtime(E, [payload])


def test_struct_values():
    E = classes()["acme.v1.Everything"]
    entry = _ld(1, b"k") + _ld(2, b"")                                       # {"k": <a Value with no kind>}
    cases = [_ld(37, _ld(1, entry)), _ld(37, _ld(1, _ld(1, b"\xff"))), _ld(37, b"\x00"),
             _ld(37, _ld(1, _ld(1, b"a") + _ld(2, _ld(3, b"\xc3")))), _ld(37, _ld(1, _ld(2, _ld(5, b"\x0a"))))]
    dec = _raw(E, cases)
    assert dec.values[0].as_py()["meta"] == '{"k":null}'
    for i in range(1, 5):
        assert dec.values[i].as_py() is None and dec.error[i].as_py(), i
        with pytest.raises(Exception):
            E.FromString(cases[i])


PROTO2 = """syntax = "proto2";
package old;
message Legacy {
  required int32 id = 1;
  optional string name = 2 [default = "x"];
  optional Kind kind = 3;
  repeated Kind kinds = 4;
  optional group Extra = 5 { optional int32 v = 6; }
  enum Kind { A = 1; B = 2; }
}
"""


def test_proto2_required_closed_enums_groups():
    c, _ = compile_protos({"legacy.proto": PROTO2})
    L = c["old.Legacy"]
    cases = [
        L(id=1).SerializeToString(),
        L(id=2, name="n", kind=2, kinds=[1, 2]).SerializeToString(),
        _tag(1, 0) + _varint(3) + _tag(3, 0) + _varint(1) + _tag(3, 0) + _varint(9),   # closed: 9 unknown
        _tag(1, 0) + _varint(4) + _ld(4, _varint(1) + _varint(7) + _varint(2)),       # packed, 7 dropped
        _tag(1, 0) + _varint(5) + _tag(5, 3) + _tag(6, 0) + _varint(1) + _tag(5, 4),  # a group: skipped
        _tag(2, 2) + _varint(1) + b"n",                           # required id missing: the runtime reads it
    ]
    dec = _raw(L, cases)
    assert "Extra" not in dec.values.type.names and "extra" not in dec.values.type.names
    got = [ours(v, L.DESCRIPTOR) for v in dec.values.to_pylist()]
    for i, b in enumerate(cases):
        want = expected(to_dict(L.FromString(b)), L.DESCRIPTOR)
        want.pop("extra", None)
        assert same(got[i], want), (i, got[i], want)
    assert got[5]["id"] is None and dec.error_count == 0


# ------------------------------------------------------------------------------------------------
# framing and errors

def test_framing_errors_and_strict(written):
    root, msgs, values, _ = written
    reg = open_registry(None, roots=root)
    good = values[1]
    bad = [good, b"", b"\x05abc", b"\x00\x00\x00", b"\x01" + b"\x00" * 20, b"\x00\x00\x00\x03\xe7\x00",
           good[:5] + b"\x81", good[:5] + b"\x02\x08" + good[6:], good[:7] + b"\xff"]
    dec = decode_column(pa.array(bad, pa.binary()), format="protobuf", registry=reg, topic="orders")
    errs = dec.error.to_pylist()
    assert errs[0] is None and all(errs[1:]), errs
    assert "not in the" in errs[5] and "message-index" in errs[6] and "out of range" in errs[7]
    with pytest.raises(ValueDecodeError) as exc:
        decode_column(pa.array(bad, pa.binary()), format="protobuf", registry=reg, topic="orders", strict=True,
                      offsets=np.arange(len(bad), dtype=np.int64) + 100, file="x.log",
                      positions=np.arange(len(bad), dtype=np.int64) * 1000)
    assert exc.value.offset == 101


def test_avro_id_in_a_protobuf_column():
    avro = InlineSchemaRegistry({99: '"string"'})
    dec = decode_column(pa.array([b"\x00\x00\x00\x00\x63\x00\x02hi"], pa.binary()), format="protobuf",
                        registry=avro, reader_schema=classes()["acme.v1.Everything"])
    assert "AVRO schema, not PROTOBUF" in dec.error[0].as_py()


def test_parse_registry_text_roundtrip():
    _, files = compile_protos({"common.proto": COMMON, "everything.proto": EVERYTHING})
    fdp = files["everything.proto"]
    text = proto_text(fdp)
    ps = compile_text(text, "everything.proto", {"common.proto": proto_text(files["common.proto"])})
    mine = descriptor_pb2.FileDescriptorProto()
    ps.file.CopyToProto(mine)
    for a, b in zip(fdp.message_type, mine.message_type):
        assert [(f.name, f.number, f.type, f.label, f.type_name, f.proto3_optional) for f in a.field] == \
               [(f.name, f.number, f.type, f.label, f.type_name, f.proto3_optional) for f in b.field]
    b64 = base64.b64encode(fdp.SerializeToString()).decode()
    assert parse_proto(b64, "e.proto").message_type[0].name == "Everything"
    with pytest.raises(SchemaError):
        compile_text("syntax = \"proto3\"; message X { Missing m = 1; }")


def test_json_texts_and_keys(written):
    root, msgs, values, _ = written
    reg = open_registry(None, roots=root)
    dec = decode_column(pa.array(values[:4] + [None], pa.binary()), format="protobuf", registry=reg, topic="orders")
    assert dec.error_count == 0, dec.error.to_pylist()
    texts = dec.json()
    assert texts[4] is None and None not in texts[:4], (texts, dec.values.to_pylist())
    for t, m in zip(texts[:4], msgs):
        back = json.loads(t)
        assert back["i64"] == str(m.i64) and back["st"] == m.st and back["by"] == base64.b64encode(m.by).decode()
    # keys: the <topic>-key subject
    with pytest.raises(kafkafmt.errors.SchemaNotFoundError):
        value_type("protobuf", registry=reg, topic="orders", is_key=True)


def test_every_door_reads_protobuf_values_alike(written, tmp_path, spark):
    """value_format="protobuf" through the readers, the CLI's export and Spark: the column decode_column
    gives (checked above against the protobuf runtime)."""
    import kcli

    root, msgs, values, _ = written
    recs = kafkafmt.read_log_dir(f"{root}/orders-0")
    want = decode_column(recs.value, format="protobuf", registry=open_registry(None, roots=root), topic="orders")
    lib = kafkafmt.read_log_dirs(root, topics=["orders"], value_format="protobuf").to_arrow()
    assert repr(lib.column("value").to_pylist()) == repr(want.values.to_pylist())      # (NaN != NaN: as text)
    # Arrow IPC: Parquet cannot hold the message's empty struct field ("nothing")
    kcli.run("export", root, "--topics", "orders", "--value-format", "protobuf", "--to", tmp_path / "o.arrow",
             check=0)
    got = pa.ipc.open_file(tmp_path / "o.arrow").read_all()
    assert got.column("valueSchemaId").to_pylist() == want.schema_id.to_pylist()
    with pa.ipc.new_file(tmp_path / "lib.arrow", lib.schema) as w:       # the library's table through IPC alike
        w.write_table(lib)
    mine = pa.ipc.open_file(tmp_path / "lib.arrow").read_all()
    # a struct field without children ("nothing") carries only validity, which pyarrow does not keep alike
    # through concatenated chunks: compared without it
    empty = {f.name for f in lib.schema.field("value").type if pa.types.is_struct(f.type) and f.type.num_fields == 0}

    def rows(t):
        return repr([None if v is None else {k: x for k, x in v.items() if k not in empty}
                     for v in t.column("value").to_pylist()])
    assert empty == {"nothing"} and rows(got) == rows(mine)
    df = spark.read.format("kafka-segments").option("subscribe", "orders").option("valueFormat", "protobuf") \
        .load(root)
    rows = df.orderBy("offset").select("valueSchemaId", "valueError").collect()
    assert [r[0] for r in rows] == want.schema_id.to_pylist() and all(r[1] is None for r in rows)

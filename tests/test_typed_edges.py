"""Typed values at their edges (issue 43): every value a reference decodes, kafkafmt decodes -- never a null
record for one field.

Topics written by confluent-kafka's own serializers (Protobuf, Avro, JSON Schema) against its mock registry, whose
state is a real ``_schemas`` partition beside them, hold each extreme: Timestamps of years 1 and 9999, Durations
beyond +-292 years, recursion depths 1 to 10, integers at and beyond int64, decimals past their precision, empty and
full maps, NaN and the infinities, properties outside a JSON Schema. Every value is compared with the reference --
protobuf's ``MessageToDict``, fastavro and Avro's own JSON encoder (kafka-avro-console-consumer), ``json.loads`` --
through the doors the changes reach: the library's Arrow, the default pandas frame, ``dump --json`` and ``export
--format jsonl``, Iceberg and Delta tables, Spark.
"""
from __future__ import annotations

import datetime
import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkafmt
import kcli
from avro_support import RegistryMirror
from protobuf_support import compile_protos, expected, mirror_registry, ours, same, to_dict

pytestmark = pytest.mark.filterwarnings("ignore::kafkafmt.KafkafmtWarning")
UTC = datetime.timezone.utc

TIMES = """syntax = "proto3";
package edge;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message Times {
  string id = 1;
  google.protobuf.Timestamp at = 2;
  google.protobuf.Duration d = 3;
  repeated google.protobuf.Timestamp ats = 4;
  map<string, google.protobuf.Timestamp> by_name = 5;
  double x = 6;
  float f = 7;
  map<string, int64> m = 8;
  int64 big = 9;
}
"""
TREE = """syntax = "proto3";
package edge;
message Node { string name = 1; Node next = 2; repeated Node kids = 3; }
"""
GO_ZERO = -62135596800                   # 0001-01-01T00:00:00Z, Go's zero time
END_OF_TIME = 253402300799               # 9999-12-31T23:59:59Z
TEN_THOUSAND_YEARS = 315576000000        # the largest Duration protobuf allows, in seconds


def _classes():
    return compile_protos({"times.proto": TIMES, "tree.proto": TREE})[0]


def times_values(classes):
    T = classes["edge.Times"]
    out = []
    for i, (secs, nanos, dsecs, dnanos) in enumerate([
            (GO_ZERO, 0, TEN_THOUSAND_YEARS, 0), (END_OF_TIME, 999_999_000, -TEN_THOUSAND_YEARS, 0),
            (1_700_000_000, 123_456_000, 1, 500_000), (0, 0, -1, -250_000_000), (-1, 999_999_000, 0, 0),
            (END_OF_TIME, 0, 86400 * 365 * 300, 0)]):
        m = T(id=f"t{i}", x=[0.5, float("nan"), float("inf"), -float("inf"), 1e300, -0.0][i], f=0.1 * i,
              big=[2 ** 63 - 1, -2 ** 63, 0, 1, -1, 2 ** 53 + 1][i])
        m.at.seconds, m.at.nanos = secs, nanos
        m.d.seconds, m.d.nanos = dsecs, dnanos
        if i % 2:
            m.ats.add(seconds=GO_ZERO)
            m.ats.add(seconds=secs, nanos=nanos)
            m.by_name["zero"].seconds = GO_ZERO
            m.m["k"] = 2 ** 63 - 1
            m.m["j"] = -5
        out.append(m)
    return out


def chain(cls, depth, field="next"):
    top = cls(name="0")
    cur = top
    for i in range(1, depth):
        cur = getattr(cur, field).add(name=str(i)) if field == "kids" else getattr(cur, field)
        if field != "kids":
            cur.name = str(i)
    return top


# -- Avro ------------------------------------------------------------------------------------------------------------

NODE = {"type": "record", "name": "Node", "namespace": "edge", "fields": [
    {"name": "name", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}},
    {"name": "next", "type": ["null", "Node"], "default": None},
    {"name": "tags", "type": {"type": "map", "values": "long"}, "default": {}}]}
# the same bytes, the decimal as the bytes it is: what a producer that does not check precisions writes
NODE_BYTES = json.loads(json.dumps(NODE).replace(
    '{"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}', '"bytes"'))
EXACT = {"type": "record", "name": "Exact", "namespace": "edge", "fields": [
    {"name": "n", "type": ["null", "long"]},
    {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
        {"name": "big", "type": ["null", "long"]},
        {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-nanos"}]}]}},
    {"name": "counts", "type": {"type": "map", "values": ["null", "long"]}}]}


def unscaled(d):
    n = int(decimal.Decimal(d).scaleb(2))
    return n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)


def avro_chain(depth, amount="12.34"):
    top = {"name": "0", "amount": unscaled(amount), "next": None, "tags": {}}
    cur = top
    for i in range(1, depth):
        cur["next"] = {"name": str(i), "amount": unscaled("0.01"), "next": None, "tags": {"k": i} if i % 2 else {}}
        cur = cur["next"]
    return top


# -- JSON Schema -----------------------------------------------------------------------------------------------------

DOC = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Doc", "type": "object",
       "properties": {"id": {"type": "integer"}, "big": {"type": "integer"},
                      "at": {"type": "string", "format": "date-time"},
                      "m": {"type": "object", "additionalProperties": {"type": "integer"}},
                      "x": {"type": "number"},
                      "sub": {"type": "object", "properties": {"a": {"type": "integer"}}},
                      "node": {"$ref": "#/definitions/N"}},
       "required": ["id", "big"],
       "definitions": {"N": {"type": "object", "properties": {"v": {"type": "integer"},
                                                              "next": {"$ref": "#/definitions/N"}}}}}
BIGS = [2 ** 63 - 1, -2 ** 63, 2 ** 63, 10 ** 30, 2 ** 64 + 1, -10 ** 20, 7]


def json_docs():
    out = []
    for i, big in enumerate(BIGS):
        node = None
        for v in range(i + 2, 0, -1):              # depths 1 .. 8
            node = {"v": v} if node is None else {"v": v, "next": node}
        doc = {"id": i, "big": big, "at": ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
                                            "2024-02-29T12:00:00.123456+02:00"][i % 3],
               "m": {} if i % 2 else {"a": 1, "b": -2 ** 63}, "x": [float("nan"), float("inf"), -float("inf"), 1.5][i % 4],
               "sub": {"a": i, "extra": [1, {"q": None}]} if i % 2 else {"a": i}, "node": node}
        if i % 3 == 1:
            doc["promo"] = {"code": "X", "n": i}
        out.append(doc)
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A log dir: ``pb-times`` and ``pb-tree`` (Protobuf), ``avro-tree`` and ``exact`` (Avro), ``docs`` (JSON
    Schema), written by confluent-kafka's serializers; its ``_schemas`` partition mirrors the registry."""
    root = tmp_path_factory.mktemp("edges") / "logs"
    classes = _classes()
    client = SchemaRegistryClient.new_client({"url": "mock://typed-edges"})
    conf = {"use.deprecated.format": False}
    produced = {}
    for topic, cls, msgs in (("pb-times", classes["edge.Times"], times_values(classes)),
                             ("pb-tree", classes["edge.Node"],
                              [chain(classes["edge.Node"], d) for d in range(1, 11)] +
                              [chain(classes["edge.Node"], d, "kids") for d in (6, 8)])):
        ser = ProtobufSerializer(cls, client, conf=conf)
        ctx = SerializationContext(topic, MessageField.VALUE)
        produced[topic] = msgs
        kafkafmt.write_log_dir(str(root / f"{topic}-0"), values=[ser(m, ctx) for m in msgs])
    docs = json_docs()
    jser = JSONSerializer(json.dumps(DOC), client)
    ctx = SerializationContext("docs", MessageField.VALUE)
    produced["docs"] = docs
    kafkafmt.write_log_dir(str(root / "docs-0"), values=[jser(d, ctx) for d in docs])
    mirror_registry(client, str(root))
    # Avro, in a registry of its own (in another log dir: one _schemas per log dir)
    avro_root = tmp_path_factory.mktemp("edges") / "avro"
    m = RegistryMirror()
    sid = m.register("avro-tree-value", NODE)
    m.register("exact-value", EXACT)
    m.write(avro_root)
    parsed = fastavro.parse_schema(NODE_BYTES)
    bodies = []
    for depth, amount in [(d, "12.34") for d in range(1, 11)] + [(2, "123456.78"), (1, "-99999.99")]:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, avro_chain(depth, amount))
        bodies.append(out.getvalue())
    produced["avro-tree"] = bodies
    kafkafmt.write_log_dir(str(avro_root / "avro-tree-0"), values=[b"\0" + sid.to_bytes(4, "big") + b for b in bodies])
    exact = [{"n": 2 ** 53 + 1, "inner": {"big": 2 ** 63 - 1, "at": 1_704_067_200_123_456_789},
              "counts": {"a": 2 ** 53 + 1, "b": None}},
             {"n": None, "inner": {"big": None, "at": None}, "counts": {}}]
    ser = m.serializer(EXACT, topic="exact")
    produced["exact"] = exact
    kafkafmt.write_log_dir(str(avro_root / "exact-0"), values=[ser(v) for v in exact])
    return root, avro_root, produced, classes


def _read(root, topic, fmt, **kw):
    return kafkafmt.read_log_dirs(str(root), topics=[topic], value_format=fmt, **kw)


def _dump_values(root, topic, *flags):
    """The values ``dump --json`` prints for a topic, with their errors: [(value, valueError)]."""
    rows = [json.loads(x) for x in kcli.run("dump", root / f"{topic}-0", "--json", *flags, check=0).stdout.split("\n")
            if '"type":"record"' in x]
    return [(r["value"], r["valueError"]) for r in rows]


def _as_doc(ours, ref):
    """kafkafmt's printout of a JSON document, its fields the schema has but ``ref`` lacks (null here) left out."""
    if isinstance(ours, dict) and isinstance(ref, dict):
        return {k: _as_doc(v, ref.get(k)) for k, v in ours.items() if k in ref or v is not None}
    if isinstance(ours, list) and isinstance(ref, list):
        return [_as_doc(x, y) for x, y in zip(ours, ref)]
    return ours


def _utc_us(text):
    """An RFC 3339 date-time as a UTC datetime, floored to the microsecond."""
    body, _, frac = text.rstrip("Z").partition(".")
    zone = ""
    for sign in "+-":
        if sign in frac:
            frac, zone = frac.split(sign)[0], sign + frac.split(sign)[1]
    dt = datetime.datetime.fromisoformat(body + (f".{frac[:6].ljust(6, '0')}" if frac else "") + (zone or "+00:00"))
    return dt.astimezone(UTC)


def _export_values(root, topic, *flags):
    out = kcli.run("export", root, "--topics", topic, "--to", "-", "--format", "jsonl", *flags, check=0).stdout
    return [(r["value"], r["valueError"]) for r in map(json.loads, out.split("\n")[:-1])]


# -- item 1: Timestamps and Durations of every valid range --------------------------------------------------------

def test_protobuf_times_every_valid_value_in_microseconds(logs, tmp_path):
    """Go's zero time, the end of time, Durations of 10,000 years: read (timestamp[us], duration[us]), every value
    equal to MessageToDict's cut to the microsecond; no value null, no error -- in the library's Arrow, the
    default pandas frame and the Parquet export alike."""
    import pyarrow.parquet as pq

    root, _, produced, classes = logs
    T = classes["edge.Times"]
    recs = _read(root, "pb-times", "protobuf")
    dec = recs.typed["value"]
    assert dec.error_count == 0 and dec.field_error_count == 0, dec.error.to_pylist()
    t = dec.values.type
    assert t.field("at").type == pa.timestamp("us", tz="UTC") and t.field("d").type == pa.duration("us")
    for got, m in zip(dec.values.to_pylist(), produced["pb-times"]):
        assert same(ours(got, T.DESCRIPTOR), expected(to_dict(m), T.DESCRIPTOR, "us"))
    assert dec.values[0]["at"].as_py() == datetime.datetime(1, 1, 1, tzinfo=UTC)
    assert dec.values[1]["d"].as_py() == -datetime.timedelta(seconds=TEN_THOUSAND_YEARS)
    frame = recs.to_pandas()["value"]
    assert frame[0]["at"] == datetime.datetime(1, 1, 1, tzinfo=UTC) and frame[0]["big"] == 2 ** 63 - 1
    kcli.run("export", root, "--topics", "pb-times", "--value-format", "protobuf", "--to", tmp_path / "t.parquet",
             check=0)
    parquet = pq.read_table(tmp_path / "t.parquet").column("value").to_pylist()
    assert repr(parquet) == repr(dec.values.to_pylist())                 # (NaN != NaN: as text)


def test_protobuf_times_in_nanoseconds_null_only_the_field(logs):
    """time_unit="ns": every nanosecond; a Timestamp or Duration beyond 1677 .. 2262 is a null field named in
    valueError, the rest of the value read (never the whole record)."""
    root, _, produced, classes = logs
    T = classes["edge.Times"]
    dec = _read(root, "pb-times", "protobuf", time_unit="ns").typed["value"]
    assert dec.error_count == 0 and dec.field_error_count == 4
    for i, (got, m, err) in enumerate(zip(dec.values.to_pylist(), produced["pb-times"], dec.error.to_pylist())):
        want = expected(to_dict(m), T.DESCRIPTOR, "ns")
        fits = abs(m.at.seconds) < 9 * 10 ** 9 and abs(m.d.seconds) < 9 * 10 ** 9
        assert got["id"] == m.id and got["big"] == m.big
        if fits and not m.ats:
            assert err is None and same(ours(got, T.DESCRIPTOR), want), i
        else:
            assert "beyond" in err and "the rest of the value is read" in err, err
            assert got["at"] is None or got["d"] is None or None in got["ats"]


def test_protobuf_text_doors_print_what_messagetodict_prints(logs):
    """dump --json and export jsonl with --time-unit ns, for the values within nanoseconds: MessageToDict's JSON
    (int64 as strings, NaN and the infinities as strings, Durations with their nanoseconds, maps {} when empty)."""
    root, _, produced, _ = logs
    for texts in (_dump_values(root, "pb-times", "--value-decoder", "protobuf", "--time-unit", "ns"),
                  _export_values(root, "pb-times", "--value-format", "protobuf", "--time-unit", "ns")):
        for (value, error), m in zip(texts, produced["pb-times"]):
            want = to_dict(m)
            if error is None:
                assert same(value, want), (value, want)
            else:                               # the fields beyond nanoseconds null, the others as MessageToDict's
                assert all(same(value[k], want[k]) for k in ("id", "x", "f", "m", "big")), (value, want)
    texts = _dump_values(root, "pb-times", "--value-decoder", "protobuf")       # microseconds: every value
    assert [e for _, e in texts] == [None] * 6
    assert texts[0][0]["at"] == "0001-01-01T00:00:00Z" and texts[0][0]["d"] == f"{TEN_THOUSAND_YEARS}s"
    assert texts[1][0]["x"] == "NaN" and texts[2][0]["x"] == "Infinity" and texts[0][0]["m"] == {}
    assert texts[2][0]["d"] == "1.000500s" and texts[1][0]["big"] == str(-2 ** 63)


def test_json_date_times_and_integers_null_only_the_field(logs):
    """JSON Schema: integers beyond int64 (2^63, 10^30, 2^64 + 1) and date-times of years 1 and 9999 -- the
    document is read, only the field that does not fit is null and named; in microseconds every date-time."""
    root, _, produced, _ = logs
    dec = _read(root, "docs", "json-schema").typed["value"]
    assert dec.error_count == 0 and dec.field_error_count == sum(not -2 ** 63 <= b < 2 ** 63 for b in BIGS)
    for got, doc, err in zip(dec.values.to_pylist(), produced["docs"], dec.error.to_pylist()):
        fits = -2 ** 63 <= doc["big"] < 2 ** 63
        assert got["big"] == (doc["big"] if fits else None) and got["id"] == doc["id"]
        assert (err is None) == fits and (fits or "(in big)" in err), err
        assert got["at"] == _utc_us(doc["at"])
    ns = _read(root, "docs", "json-schema", time_unit="ns").typed["value"]
    assert ns.error_count == 0 and ns.values.type.field("at").type == pa.timestamp("ns", tz="UTC")
    assert [v["at"] is None for v in ns.values.to_pylist()] == [d["at"][:4] in ("0001", "9999") for d in produced["docs"]]


# -- item 2: recursion past the depth, kept as JSON text ------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 2, 5])
def test_recursive_protobuf_past_the_depth_is_json_text(logs, depth):
    """Chains of 1 to 10 Nodes and trees of 6 and 8 levels: every value read; the field where the message would
    appear once more than recursive_fields_max_depth holds its MessageToDict JSON; the text doors print the
    whole message as MessageToDict does."""
    root, _, produced, classes = logs
    dec = _read(root, "pb-tree", "protobuf", recursive_fields_max_depth=depth).typed["value"]
    assert dec.error_count == 0 and dec.field_error_count == 0
    for got, m in zip(dec.values.to_pylist(), produced["pb-tree"]):
        node, msg = got, m
        for _ in range(depth - 1):              # down the path: structs as long as the depth lasts
            assert node["name"] == msg.name
            if msg.HasField("next"):
                node, msg = node["next"], msg.next
            elif msg.kids:
                node, msg = node["kids"][0], msg.kids[0]
            else:
                break
        else:
            if msg.HasField("next"):
                assert isinstance(node["next"], str) and json.loads(node["next"]) == to_dict(msg.next)
            for text, kid in zip(node["kids"], msg.kids):
                assert json.loads(text) == to_dict(kid)
    texts = _dump_values(root, "pb-tree", "--value-decoder", "protobuf", "--recursive-fields-max-depth", str(depth))
    assert [v for v, _ in texts] == [to_dict(m) for m in produced["pb-tree"]]


def test_recursive_avro_past_the_depth_is_the_console_consumers_json(logs):
    """Avro chains of 1 to 10 records: every value read, the record past the depth as the JSON
    kafka-avro-console-consumer prints; dump --json prints every value as the console consumer does (but the
    decimal past its precision: null, named in valueError)."""
    from test_typed_text import console_consumer

    _, root, produced, _ = logs
    bodies = produced["avro-tree"]
    dec = _read(root, "avro-tree", "avro").typed["value"]
    assert dec.error_count == 0 and dec.field_error_count == 2
    reference = console_consumer(NODE, bodies)
    for depth in (1, 5):
        texts = _dump_values(root, "avro-tree", "--value-decoder", "avro", "--recursive-fields-max-depth", str(depth))
        for (value, error), ref in zip(texts, reference):
            ref = json.loads(ref)
            if error is not None:
                assert "(in amount)" in error and value["amount"] is None
                value = dict(value, amount=ref["amount"])
            assert value == ref
    values = _read(root, "avro-tree", "avro", recursive_fields_max_depth=2).typed["value"].values.to_pylist()
    for got, body in zip(values, bodies):
        ref = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(NODE_BYTES))
        assert got["name"] == ref["name"]
        if ref["next"] is not None:
            assert got["next"]["name"] == ref["next"]["name"]
            deeper = ref["next"]["next"]
            assert (got["next"]["next"] is None) == (deeper is None)
            if deeper is not None:
                assert json.loads(got["next"]["next"])["name"] == deeper["name"]


# -- item 3: decimals past their precision ------------------------------------------------------------------------

def test_avro_decimal_past_its_precision_nulls_the_field_only(logs):
    """fastavro and Java read a decimal with more digits than its precision; kafkafmt keeps the record: that field
    null and named, the rest of the value read."""
    _, root, produced, _ = logs
    dec = _read(root, "avro-tree", "avro").typed["value"]
    errors = dec.error.to_pylist()
    parsed = fastavro.parse_schema(NODE_BYTES)
    for got, body, err in zip(dec.values.to_pylist(), produced["avro-tree"], errors):
        ref = fastavro.schemaless_reader(io.BytesIO(body), parsed)
        digits = len(str(abs(int.from_bytes(ref["amount"], "big", signed=True))))
        assert got["name"] == ref["name"] and (got["next"] is None) == (ref["next"] is None)
        if digits > 4:
            assert got["amount"] is None and "(in amount)" in err and "rest of the value" in err
        else:
            assert err is None and got["amount"] == decimal.Decimal(int.from_bytes(ref["amount"], "big",
                                                                                    signed=True)).scaleb(-2)
    with pytest.raises(kafkafmt.ValueDecodeError, match="amount"):
        _read(root, "avro-tree", "avro", value_errors="strict")


# -- item 4: properties outside a JSON Schema ----------------------------------------------------------------------

def test_json_properties_outside_the_schema_are_kept(logs):
    """additionalProperties (allowed, not false): kept as the JSON text of an object in the object's field
    ``additionalProperties``; the text doors print them among the object's own; "drop" leaves them out."""
    root, _, produced, _ = logs
    values = _read(root, "docs", "json-schema").typed["value"].values.to_pylist()
    for got, doc in zip(values, produced["docs"]):
        extra = {k: v for k, v in doc.items() if k not in DOC["properties"]}
        assert (json.loads(got["additionalProperties"]) if got["additionalProperties"] else {}) == extra
        sub_extra = {k: v for k, v in doc["sub"].items() if k != "a"}
        assert (json.loads(got["sub"]["additionalProperties"]) if got["sub"]["additionalProperties"] else {}) == \
            sub_extra
    texts = _dump_values(root, "docs", "--value-decoder", "json-schema")
    for (value, _), doc in zip(texts, produced["docs"]):
        fits = -2 ** 63 <= doc["big"] < 2 ** 63
        want = dict(doc, big=doc["big"] if fits else None, at=_utc_us(doc["at"]).isoformat().replace("+00:00", "Z"))
        assert set(value) == set(want) | set(DOC["properties"])
        assert same(_as_doc(value, want), want)             # (NaN as json.dumps writes it)
    dropped = _read(root, "docs", "json-schema", additional_properties="drop").typed["value"].values.type
    assert "additionalProperties" not in dropped.names and "additionalProperties" not in dropped.field("sub").type.names


# -- item 9: the default pandas frame changes no value -------------------------------------------------------------

def test_default_pandas_keeps_every_value(logs):
    """to_pandas() (the NumPy backend): a nested long 2^53 + 1 stays an int beside a null, a nanosecond timestamp
    in a struct a pd.Timestamp; the values equal fastavro's (and the pyarrow backend's)."""
    import pandas as pd

    _, root, produced, _ = logs
    recs = _read(root, "exact", "avro")
    df = recs.to_pandas()
    got = df["value"].tolist()
    assert got[0]["n"] == 2 ** 53 + 1 and isinstance(got[0]["n"], int)
    assert got[0]["inner"]["big"] == 2 ** 63 - 1
    assert got[0]["inner"]["at"] == pd.Timestamp(1_704_067_200_123_456_789, unit="ns", tz="UTC")
    assert isinstance(got[0]["inner"]["at"], pd.Timestamp) and dict(got[0]["counts"]) == produced["exact"][0]["counts"]
    assert got[1]["n"] is None and got[1]["inner"] == {"big": None, "at": None}
    assert df["valueSchemaId"].tolist() == recs.to_arrow()["valueSchemaId"].to_pylist()
    assert recs.to_pandas(dtype_backend="pyarrow")["value"].tolist() == recs.to_arrow()["value"].to_pylist()


# -- lakehouse and Spark: what they hold ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_tables_hold_every_protobuf_time(logs, tmp_path, fmt):
    """Delta and Iceberg hold every Timestamp (microseconds: years 1 and 9999); a Duration is a long of nanoseconds
    there, null beyond what a long holds (+-292 years)."""
    from test_lakehouse_typed import table_rows

    root, _, produced, _ = logs
    where = tmp_path / fmt
    r = kafkafmt.export_table(str(root), str(where), format=fmt, table="kafka.times", topics=["pb-times"],
                              value_format="protobuf")
    assert r.rows == 6 and r.dead_letters == 0
    for reader, rows in table_rows(fmt, str(where), "kafka.times").items():
        rows = sorted(rows, key=lambda row: row["offset"])
        for row, m in zip(rows, produced["pb-times"]):
            v = row["value"]
            want = datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=m.at.seconds,
                                                                                    microseconds=m.at.nanos // 1000)
            at = v["at"] if v["at"].tzinfo else v["at"].replace(tzinfo=UTC)
            assert at == want, (reader, row["offset"])
            ns = m.d.seconds * 10 ** 9 + m.d.nanos
            assert v["d"] == (ns if abs(ns) < 2 ** 63 else None), reader


def test_a_value_with_a_null_field_stays_in_the_table(logs, tmp_path):
    """A decimal past its precision: the record goes to the table (not the dead-letter table), the field null and
    named in valueError; the records past the depth hold their JSON text."""
    from deltalake import DeltaTable

    _, root, produced, _ = logs
    r = kafkafmt.export_table(str(root), str(tmp_path / "t"), format="delta", topics=["avro-tree"], value_format="avro")
    assert r.rows == len(produced["avro-tree"]) and r.dead_letters == 0
    t = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    errors = t.column("valueError").to_pylist()
    assert [e is not None for e in errors] == [False] * 10 + [True, True] and all("(in amount)" in e for e in errors[10:])
    assert [v["amount"] is None for v in t.column("value").to_pylist()] == [False] * 10 + [True, True]


def test_spark_holds_every_protobuf_time_and_the_json_past_the_depth(logs, spark):
    root, _, produced, _ = logs
    df = spark.read.format("kafka-segments").option("subscribe", "pb-times").option("valueFormat", "protobuf") \
        .load(str(root))
    # (PySpark's own datetime conversion refuses year 1: the microseconds, as Spark holds them)
    rows = df.orderBy("offset").selectExpr("unix_micros(value.at)", "value.d", "valueError").collect()
    assert [r[0] for r in rows] == [m.at.seconds * 10 ** 6 + m.at.nanos // 1000 for m in produced["pb-times"]]
    assert rows[1][1] == -datetime.timedelta(seconds=TEN_THOUSAND_YEARS)
    assert all(r[2] is None for r in rows) and df.filter("value.at < '1000-01-01'").count() == 1
    tree = spark.read.format("kafka-segments").option("subscribe", "pb-tree").option("valueFormat", "protobuf") \
        .option("recursive.fields.max.depth", "2").load(str(root))
    deep = [r[0] for r in tree.orderBy("offset").select("value.next.next").collect()]
    assert [json.loads(x) if x else None for x in deep[:4]] == [None, None, to_dict(produced["pb-tree"][2].next.next),
                                                                 to_dict(produced["pb-tree"][3].next.next)]


# -- item 13: a field renamed by aliases stays one column -----------------------------------------------------------

PEOPLE = [
    {"type": "record", "name": "Person", "namespace": "edge", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]},
    {"type": "record", "name": "Person", "namespace": "edge", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "age", "type": ["null", "int"], "default": None}]},
    {"type": "record", "name": "Person", "namespace": "edge", "fields": [
        {"name": "id", "type": "long"}, {"name": "full_name", "type": "string", "aliases": ["name"]},
        {"name": "age", "type": ["null", "int"], "default": None}]},
]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_field_renamed_by_aliases_stays_one_column(tmp_path, fmt):
    """Three runs, one per writer version; v3 renames ``name`` to ``full_name`` (aliases ["name"]): every row's
    name in one column -- Iceberg renames it to full_name (by field id), Delta keeps ``name``."""
    from test_lakehouse_typed import table_rows

    m = RegistryMirror()
    root, where = tmp_path / "logs", tmp_path / fmt
    names = []
    with kafkafmt.LogWriter(str(root / "people-0")) as w:
        for run, schema in enumerate(PEOPLE):
            m.register("people-value", schema)
            m.write(root)
            ser = m.serializer(schema, topic="people")
            key = "full_name" if run == 2 else "name"
            batch = [dict({"id": 10 * run + i, key: f"p{run}{i}"}, **({"age": i} if run else {})) for i in range(3)]
            names += [b[key] for b in batch]
            w.append(values=[ser(b) for b in batch])
            w.flush()
            r = kafkafmt.export_table(str(root), str(where), format=fmt, table="kafka.people", topics=["people"],
                                      value_format="avro")
            assert r.dead_letters == 0
    assert any(c.kind == "renamed" for c in r.evolved)
    column = "full_name" if fmt == "iceberg" else "name"
    for reader, rows in table_rows(fmt, str(where), "kafka.people").items():
        if fmt == "iceberg" and reader == "duckdb":
            continue                # (the data files alone: Iceberg's renames live in its metadata, by field id)
        rows = sorted(rows, key=lambda row: row["offset"])
        assert [row["value"][column] for row in rows] == names, reader
        assert all(("name" if column == "full_name" else "full_name") not in row["value"] for row in rows), reader


# -- item 14: a soft-deleted subject ---------------------------------------------------------------------------------

def test_a_soft_deleted_subject_says_which_schema_id_reads_it(tmp_path):
    m = RegistryMirror()
    schema = PEOPLE[0]
    sid = m.register("gone-value", schema)
    m.soft_delete_subject("gone-value")
    m.write(tmp_path)
    kafkafmt.write_log_dir(str(tmp_path / "gone-0"), values=[m.serializer(schema, topic="gone")({"id": 1, "name": "x"})])
    with pytest.raises(kafkafmt.SchemaNotFoundError, match=f"value_schema={sid}"):
        kafkafmt.read_log_dirs(str(tmp_path), topics=["gone"], value_format="avro")
    recs = kafkafmt.read_log_dirs(str(tmp_path), topics=["gone"], value_format="avro", value_schema=sid)
    assert recs.to_arrow()["value"].to_pylist() == [{"id": 1, "name": "x"}]

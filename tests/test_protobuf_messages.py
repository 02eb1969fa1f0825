"""Which message a Protobuf value is read as, through every door.

A value's message indexes name its message in the writer's file. Without a message named by the
user, each value is read as the message its own indexes name (as Java's deserializer does without a
specific type), and the messages the values read name decide the column: one message, its struct
(a topic of ``Geo`` values is ``Geo``'s struct although ``Click`` uses ``Geo``); several, a struct
with one field per message. A read scans the message indexes first; a stream takes them from the data
present when it starts, and a later value of another message is a per-record error. A message named
by the user (``{"message": ...}``, or its full name on the command line and in Spark) is read alone. A ``oneof``'s members are fields of the message, as the protobuf runtime, ``MessageToDict``
and Spark's ``from_protobuf`` show them.

Values are written by confluent-kafka's ProtobufSerializer against its mock registry (references
registered by the serializer itself), the registry's state as a real ``_schemas`` partition; the
expected values are confluent-kafka's ProtobufDeserializer's, through ``MessageToDict``
(tests/protobuf_support.py).
"""
import json

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkafmt
from kafkafmt.errors import SchemaNotFoundError
from kafkafmt.values import decode_column, reader_schema_of_text, value_type
from kafkafmt.values.protobuf import compile_text
from kafkafmt.values.registry import open_registry

from protobuf_support import compile_protos, expected, mirror_registry, ours, same, to_dict

MONEY = """syntax = "proto3";
package shop.money;
message Money { string currency = 1; int64 units = 2; }
"""
# the real case: a helper message first, the message the producer writes second (indexes [1])
CLICKS = """syntax = "proto3";
package shop.clicks;
import "shop/money.proto";
message Geo { string country = 1; double lat = 2; }
message Click {
  string url = 1;
  Geo geo = 2;
  int64 at = 3;
  oneof who { string user = 4; int64 anon = 5; Geo place = 6; }
  shop.money.Money spent = 7;
  map<string, Geo> seen = 8;
}
"""
# a nested message written (indexes [1, 0]); Envelope only nests it
VISITS = """syntax = "proto3";
package shop.visits;
import "shop/money.proto";
message Geo { string country = 1; }
message Envelope {
  message Visit {
    string page = 1; Geo geo = 2; shop.money.Money spent = 3;
    oneof src { string ref = 4; bool direct = 5; }
  }
}
"""
# two messages no other uses, both written to one topic
EVENTS = """syntax = "proto3";
package shop.events;
message Geo { string country = 1; }
message Created { string id = 1; Geo geo = 2; }
message Deleted { string id = 1; string reason = 2; }
"""
N = 40


def _ser(client, cls, topic):
    ser = ProtobufSerializer(cls, client, conf={"use.deprecated.format": False})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return lambda m: ser(m, ctx)


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """(root, classes, {topic: [(value bytes, class), ...]}): clicks (Click values), geo (Geo values of the
    same file, indexes [0]), mixed (Click values and one Geo value at offset N), visits (Envelope.Visit
    values), events (Created and Deleted alternating)."""
    c, _ = compile_protos({"shop/money.proto": MONEY, "shop/clicks.proto": CLICKS, "shop/visits.proto": VISITS,
                           "shop/events.proto": EVENTS})
    client = SchemaRegistryClient.new_client({"url": "mock://protobuf-messages"})
    Click, Geo = c["shop.clicks.Click"], c["shop.clicks.Geo"]
    Visit = c["shop.visits.Envelope"].Visit
    Created, Deleted = c["shop.events.Created"], c["shop.events.Deleted"]
    topics = {"clicks": [], "geo": [], "mixed": [], "visits": [], "events": []}
    click, geo = _ser(client, Click, "clicks"), _ser(client, Geo, "geo")
    mixed_click, mixed_geo = _ser(client, Click, "mixed"), _ser(client, Geo, "mixed")
    visit = _ser(client, Visit, "visits")
    created, deleted = _ser(client, Created, "events"), _ser(client, Deleted, "events")
    for i in range(N):
        m = Click(url=f"/p/{i}", at=i * 1000)
        if i % 3:
            m.geo.country, m.geo.lat = "DE", i / 4
        if i % 4 == 1:
            m.user = f"u{i}"
        elif i % 4 == 2:
            m.anon = 0 if i % 8 == 2 else i        # a member set to its default is still set
        elif i % 4 == 3:
            m.place.country = "FR"
        if i % 5 == 0:
            m.spent.currency, m.spent.units = "EUR", i
        for j in range(i % 3):
            m.seen[f"k{j}"].country = f"c{j}"
        topics["clicks"].append((click(m), Click))
        topics["mixed"].append((mixed_click(m), Click))
        if i % 4 == 0:
            topics["geo"].append((geo(Geo(country=f"G{i}", lat=-i / 8)), Geo))
        v = Visit(page=f"/v/{i}")
        if i % 2:
            v.geo.country = "NL"
            v.ref = "search"
        elif i % 4 == 0:
            v.direct = False
        topics["visits"].append((visit(v), Visit))
        if i % 2:
            topics["events"].append((deleted(Deleted(id=f"e{i}", reason="gone")), Deleted))
        else:
            topics["events"].append((created(Created(id=f"e{i}", geo={"country": "PL"})), Created))
    topics["mixed"].append((mixed_geo(Geo(country="XX", lat=1.5)), Geo))       # a second message
    root = tmp_path_factory.mktemp("pbmsg")
    mirror_registry(client, str(root))
    for topic, rows in topics.items():
        with kafkafmt.LogWriter(f"{root}/{topic}-0") as w:
            w.append(values=[v for v, _ in rows] + [None])
    return str(root), c, topics


def _theirs(rows, topic):
    """confluent-kafka's ProtobufDeserializer of each value, with the class it was written with."""
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [ProtobufDeserializer(cls, conf={"use.deprecated.format": False})(v, ctx) for v, cls in rows]


def _want_one(rows, topic):
    return [expected(to_dict(m), m.DESCRIPTOR) for m in _theirs(rows, topic)]


def _ours_one(values, desc):
    return [ours(v, desc) for v in values]


def _equal_theirs(values, rows, topic, c, fields=None):
    """kafkafmt's values of a topic equal confluent-kafka's ProtobufDeserializer's, each read as the class it
    was written with; ``fields``: the column's message fields (a column of several messages), in order."""
    got = list(values)
    assert len(got) == len(rows)
    for v, m in zip(got, _theirs(rows, topic)):
        desc = m.DESCRIPTOR
        if fields is not None:
            assert list(v) == fields and [k for k, x in v.items() if x is not None] == [desc.name]
            v = v[desc.name]
        assert same(ours(v, desc), expected(to_dict(m), desc)), (topic, v)
    return True


def test_the_wire_names_the_message(shop):
    _, _, topics = shop
    assert topics["clicks"][0][0][5:7] == b"\x02\x02"              # [1]: Click, the file's second message
    assert topics["visits"][0][0][5:8] == b"\x04\x02\x00"          # [1, 0]: Envelope.Visit
    assert topics["geo"][0][0][5:6] == topics["mixed"][N][0][5:6] == b"\x00"      # [0]: Geo


@pytest.mark.parametrize("body, names", [
    ("message Geo { string c = 1; } message Click { map<string, Geo> seen = 1; }", ["Click"]),   # used by a map
    ("message Order { message Audit { string a = 1; } int64 id = 1; }", ["Order"]),     # top-level ones first
    ("message G { string c = 1; } message Env { message V { G g = 1; } }", ["Env.V"]),  # Env only nests
    ("message Node { repeated Node kids = 1; map<string, Node> m = 2; }", ["Node"]),     # itself: not a use
    ("message K { string k = 1; } message V { string v = 1; }", ["K", "V"]),
    ("message A { B b = 1; } message B { A a = 1; }", ["A", "B"]),                       # each uses the other
    ("message E {}", ["E"]),
])
def test_the_messages_a_file_holds_as_values(body, names):
    ps = compile_text(f'syntax = "proto3"; package p; {body}')
    assert [d.full_name for d in ps.record_messages()] == [f"p.{n}" for n in names]


def test_each_value_is_read_as_the_message_its_indexes_name(shop):
    root, c, topics = shop
    reg = open_registry(None, roots=root)
    Click, Geo = c["shop.clicks.Click"], c["shop.clicks.Geo"]

    def decoded(topic):
        return decode_column(pa.array([v for v, _ in topics[topic]], pa.binary()), format="protobuf", registry=reg,
                             topic=topic)

    # clicks: Click (with references to another file, shop/money.proto)
    dec = decoded("clicks")
    assert dec.error_count == 0 and dec.values.type.names == [f.name for f in Click.DESCRIPTOR.fields]
    assert _equal_theirs(dec.values.to_pylist(), topics["clicks"], "clicks", c)
    # geo: Geo values of the same file (indexes [0]) are Geo, although Click uses Geo
    dec = decoded("geo")
    assert dec.error_count == 0 and dec.values.type.names == ["country", "lat"]
    assert _equal_theirs(dec.values.to_pylist(), topics["geo"], "geo", c)
    assert value_type("protobuf", registry=reg, topic="geo").names != dec.values.type.names   # (not the file's guess)
    # mixed: the two messages its values name, a field each, in the file's order
    dec = decoded("mixed")
    assert dec.error_count == 0 and dec.values.type.names == ["Geo", "Click"]
    assert _equal_theirs(dec.values.to_pylist(), topics["mixed"], "mixed", c, ["Geo", "Click"])
    # visits: the nested Envelope.Visit (Envelope only nests it)
    dec = decoded("visits")
    Visit = c["shop.visits.Envelope"].Visit
    assert dec.error_count == 0 and dec.values.type.names == [f.name for f in Visit.DESCRIPTOR.fields]
    assert _equal_theirs(dec.values.to_pylist(), topics["visits"], "visits", c)


def test_a_stream_reads_the_messages_present_when_it_starts(shop, tmp_path, spark):
    """The messages of the values present when a stream starts decide its column; a later value of another
    message is a per-record error saying how to read it (Spark's stream; the library's streams read what is
    there when they are made)."""
    import shutil

    root, c, topics = shop
    logs = tmp_path / "logs"
    for folder in ("_schemas-0", "clicks-0"):
        shutil.copytree(f"{root}/{folder}", logs / folder)
    out = tmp_path / "out"
    q = (spark.readStream.format("kafka-segments").option("subscribe", "clicks").option("valueFormat", "protobuf")
         .option("mode", "PERMISSIVE").option("startingOffsets", "earliest").load(str(logs))
         .select("offset", "value", "valueError").writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        q.processAllAvailable()
        with kafkafmt.LogWriter(logs / "clicks-0") as w:       # after the stream started: a Geo value
            w.append(values=[topics["mixed"][N][0]])
        q.processAllAvailable()
        assert q.exception() is None
    finally:
        q.stop()
    rows = sorted(spark.read.parquet(str(out)).collect(), key=lambda r: r["offset"])
    assert len(rows) == N + 2 and [r["valueError"] for r in rows[:-1]] == [None] * (N + 1)
    assert rows[0]["value"]["url"] == "/p/0" and rows[-1]["value"] is None
    error = rows[-1]["valueError"]
    assert "name shop.clicks.Geo, not the reader's shop.clicks.Click" in error
    assert "value_schema={'message': 'shop.clicks.Geo'}" in error and "--value-schema shop.clicks.Geo" in error
    # read again: the values there now name both messages
    again = kafkafmt.read_log_dirs(str(logs), topics=["clicks"], value_format="protobuf").to_arrow()
    assert again.schema.field("value").type.names == ["Geo", "Click"]
    assert again.column("valueError").null_count == len(again) == N + 2


def test_nested_indexes_are_grouped_per_value(shop):
    """Values of several nested index arrays interleaved in one column: each row its own."""
    root, c, topics = shop
    reg = open_registry(None, roots=root)
    good = [v for v, _ in topics["visits"][:4]]
    bad = good[1][:5] + b"\x04\x02\x02" + good[1][8:]           # [1, 1]: Envelope has one nested message
    col = pa.array([good[0], bad, good[2], bad, good[3]], pa.binary())
    dec = decode_column(col, format="protobuf", registry=reg, topic="visits")
    assert [e is None for e in dec.error.to_pylist()] == [True, False, True, False, True]
    assert "message index 1 out of range" in dec.error[1].as_py()
    assert [v["page"] for v in dec.values.to_pylist() if v is not None] == ["/v/0", "/v/2", "/v/3"]


def test_a_file_of_several_messages_gives_one_field_per_message(shop):
    root, c, topics = shop
    reg = open_registry(None, roots=root)
    rows = topics["events"]
    dec = decode_column(pa.array([v for v, _ in rows], pa.binary()), format="protobuf", registry=reg, topic="events")
    assert dec.error_count == 0
    t = dec.values.type
    assert t.names == ["Created", "Deleted"] and all(f.nullable for f in t)
    assert t == value_type("protobuf", registry=reg, topic="events")
    descs = {"Created": c["shop.events.Created"].DESCRIPTOR, "Deleted": c["shop.events.Deleted"].DESCRIPTOR}
    for got, m in zip(dec.values.to_pylist(), _theirs(rows, "events")):
        name = m.DESCRIPTOR.name
        assert [k for k, v in got.items() if v is not None] == [name]
        assert same(ours(got[name], descs[name]), expected(to_dict(m), m.DESCRIPTOR))
    # one message named: that message alone, the others' values per-record errors
    only = decode_column(pa.array([v for v, _ in rows], pa.binary()), format="protobuf", registry=reg,
                         topic="events", reader_schema="shop.events.Deleted")
    assert only.values.type.names == ["id", "reason"] and only.error_count == N // 2
    assert only.values.to_pylist()[1] == {"id": "e1", "reason": "gone"}


def test_a_oneof_is_its_members_as_fields(shop):
    """As the runtime (fields of the message), MessageToDict (members as keys) and Spark's
    from_protobuf (every field of the descriptor, a member nullable) present a oneof; the member
    set is the one not null -- nothing is lost, a member set to its default included."""
    root, c, topics = shop
    rows = topics["clicks"][:N]
    recs = kafkafmt.read_log_dirs(root, topics=["clicks"], value_format="protobuf").to_arrow()
    t = recs.schema.field("value").type
    assert "who" not in t.names and [t.field(m).nullable for m in ("user", "anon", "place")] == [True] * 3
    desc = c["shop.clicks.Click"].DESCRIPTOR
    members = [f.name for f in desc.oneofs_by_name["who"].fields]
    for got, m in zip(recs.column("value").to_pylist(), _theirs(rows, "clicks")):
        assert [k for k in members if got[k] is not None] == ([m.WhichOneof("who")] if m.WhichOneof("who") else [])
        want, mine = expected(to_dict(m), desc), ours(got, desc)
        assert {k: mine[k] for k in members} == {k: want[k] for k in members}
    assert recs.column("value")[2].as_py()["anon"] == 0 and recs.column("value")[2].as_py()["user"] is None


def _lib(root, topic, **kw):
    return kafkafmt.read_log_dirs(root, topics=[topic], value_format="protobuf", **kw).to_arrow()


#: the message fields of a column that holds several messages
FIELDS = {"mixed": ["Geo", "Click"], "events": ["Created", "Deleted"]}


def test_every_door_reads_the_written_message(shop, tmp_path, spark):
    """With no message named: the library (confluent-kafka's deserializer's values), the Arrow stream, the
    Polars scan, dump --json, export, Spark's batch and stream reads give the same column."""
    import polars as pl

    import kcli
    import kafkafmt.polars

    root, c, topics = shop
    for topic in ("clicks", "geo", "mixed", "visits", "events"):
        lib = _lib(root, topic)
        want = lib.column("value").to_pylist()
        assert lib.column("valueError").null_count == len(lib) and want[-1] is None        # (a tombstone last)
        assert _equal_theirs(want[:-1], topics[topic], topic, c, FIELDS.get(topic))
        # the Arrow stream, the Polars scan
        stream = kafkafmt.iter_log_dirs(root, topics=[topic], value_format="protobuf")
        assert stream.schema == lib.schema
        assert stream.to_arrow().column("value").to_pylist() == want
        assert kafkafmt.polars.scan_log_dirs(root, topics=[topic], value_format="protobuf").collect() \
            .equals(pl.from_arrow(lib))
        # dump --json: the values as JSON
        out = kcli.run("dump", f"{root}/{topic}-0", "--value-decoder", "protobuf", "--json", check=0).stdout
        got = [json.loads(line)["value"] for line in out.splitlines() if '"type":"record"' in line]
        assert [json.loads(x) if x is not None else None for x in
                kafkafmt.decode_column(kafkafmt.read_log_dir(f"{root}/{topic}-0").value, format="protobuf",
                                       registry=open_registry(None, roots=root), topic=topic).json()] == got
        # export
        kcli.run("export", root, "--topics", topic, "--value-format", "protobuf", "--to", tmp_path / f"{topic}.arrow",
                 check=0)
        assert pa.ipc.open_file(tmp_path / f"{topic}.arrow").read_all().column("value").to_pylist() == want
        # Spark, batch and stream
        df = spark.read.format("kafka-segments").option("subscribe", topic).option("valueFormat", "protobuf") \
            .option("mode", "PERMISSIVE").load(root)
        rows = df.orderBy("offset").select("value").collect()
        assert [_spark_plain(r[0]) for r in rows] == [_plain(v) for v in want]
        if topic == "visits":          # (a nested message of one: as clicks and every typed stream test read)
            continue
        out, ckpt = tmp_path / f"s-{topic}", tmp_path / f"c-{topic}"
        q = (spark.readStream.format("kafka-segments").option("subscribe", topic).option("valueFormat", "protobuf")
             .option("mode", "PERMISSIVE").option("startingOffsets", "earliest").load(root)
             .select("offset", "value").writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(180) and q.exception() is None
        finally:
            q.stop()
        streamed = sorted(spark.read.parquet(str(out)).collect(), key=lambda r: r["offset"])
        assert [_spark_plain(r["value"]) for r in streamed] == [_plain(v) for v in want]


def _plain(v):
    """pyarrow values with maps as sorted (key, value) pairs (Spark's dicts do not keep the order of
    a map's entries); `_spark_plain`: Spark's values alike."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, tuple) for x in v):
        return sorted((k, _plain(x)) for k, x in v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _spark_plain(v):
    if hasattr(v, "asDict"):
        return {k: _spark_plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return sorted((k, _spark_plain(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_spark_plain(x) for x in v]
    return v


# ------------------------------------------------------------------------------------------------
# naming the message: the Python API, the command line, Spark

def test_reader_schema_text_is_one_rule():
    assert reader_schema_of_text("shop.clicks.Geo") == "shop.clicks.Geo"
    assert reader_schema_of_text('{"message": "shop.clicks.Geo", "subject": "clicks-value"}') == \
        {"message": "shop.clicks.Geo", "subject": "clicks-value"}
    assert reader_schema_of_text(' {"id": 3} ') == {"id": 3}
    avro = '{"type": "record", "name": "X", "fields": []}'
    assert reader_schema_of_text(avro) == avro                   # a schema stays text
    assert reader_schema_of_text("12") == 12 and reader_schema_of_text("v2") == {"version": 2}


def test_a_message_named_in_python_on_the_command_line_and_in_spark(shop, tmp_path, spark):
    import kcli

    root, _, _ = shop
    geo = [{"country": "XX", "lat": 1.5}]
    for spec in ({"message": "shop.clicks.Geo"}, "shop.clicks.Geo", ".shop.clicks.Geo",
                 {"subject": "mixed-value", "message": "shop.clicks.Geo"}):
        t = _lib(root, "mixed", value_schema=spec)
        assert [v for v in t.column("value").to_pylist() if v is not None] == geo, spec
        assert t.schema.field("value").type.names == ["country", "lat"]
    # the registry format takes it alike
    t = kafkafmt.read_log_dirs(root, topics=["mixed"], value_format="registry", value_schema="shop.clicks.Geo")
    assert [v for v in t.to_arrow().column("value").to_pylist() if v is not None] == geo
    # the command line: dump and export
    for text in ("shop.clicks.Geo", '{"message": "shop.clicks.Geo"}'):
        out = kcli.run("dump", f"{root}/mixed-0", "--value-decoder", "protobuf", "--value-schema", text, "--json",
                       check=0).stdout
        values = [json.loads(line)["value"] for line in out.splitlines() if '"type":"record"' in line]
        assert values[N] == geo[0] and sum(v is not None and not isinstance(v, str) for v in values) == 1
        kcli.run("export", root, "--topics", "mixed", "--value-format", "protobuf", "--value-schema", text,
                 "--to", tmp_path / "geo.arrow", check=0)
        got = pa.ipc.open_file(tmp_path / "geo.arrow").read_all().column("value").to_pylist()
        assert [v for v in got if v is not None] == geo
    # Spark: valueSchema as a name and as {"message": ...}, batch and stream
    for text in ("shop.clicks.Geo", '{"message": "shop.clicks.Geo"}'):
        df = spark.read.format("kafka-segments").option("subscribe", "mixed").option("valueFormat", "protobuf") \
            .option("valueSchema", text).option("mode", "PERMISSIVE").load(root)
        assert df.schema["value"].dataType.simpleString() == "struct<country:string,lat:double>"
        assert [_spark_plain(r[0]) for r in df.where("value is not null").select("value").collect()] == geo
    out, ckpt = tmp_path / "geo-stream", tmp_path / "geo-ckpt"
    q = (spark.readStream.format("kafka-segments").option("subscribe", "mixed").option("valueFormat", "protobuf")
         .option("valueSchema", "shop.clicks.Geo").option("mode", "PERMISSIVE").option("startingOffsets", "earliest")
         .load(root).select("offset", "value").writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180) and q.exception() is None
    finally:
        q.stop()
    assert [_spark_plain(r[0]) for r in spark.read.parquet(str(out)).where("value is not null")
            .select("value").collect()] == geo


def test_a_message_the_schema_lacks_is_an_error_naming_the_partition(shop):
    import kcli

    root, _, _ = shop
    with pytest.raises(SchemaNotFoundError, match="has no message 'shop.clicks.Nope': its messages are "
                                                  "shop.clicks.Geo, shop.clicks.Click"):
        _lib(root, "clicks", value_schema="shop.clicks.Nope")
    p = kcli.run("dump", f"{root}/clicks-0", "--value-decoder", "protobuf", "--value-schema", "shop.clicks.Nope")
    assert p.returncode == 1
    assert f"kafkafmt: error: {root}/clicks-0: the reader schema (clicks-value) has no message" in p.stderr
    assert "Partition(" not in p.stderr


def test_a_delta_table_of_the_messages_the_values_name(shop, tmp_path):
    """The lakehouse export reads the messages the values present name, and records that reader once, run
    after run."""
    import shutil

    from deltalake import DeltaTable

    from kafkafmt.lakehouse import export_table

    root, c, topics = shop
    logs = tmp_path / "logs"
    for folder in ("_schemas-0", "geo-0", "mixed-0"):
        shutil.copytree(f"{root}/{folder}", logs / folder)
    first = export_table(str(logs), str(tmp_path / "{topic}"), format="delta", topics=["geo", "mixed"],
                         value_format="protobuf")
    assert first.tables and all(r.dead_letters == 0 for r in first.tables.values())
    geo = DeltaTable(str(tmp_path / "geo")).to_pyarrow_table().sort_by("offset")
    assert geo.column("value").to_pylist() == _lib(str(logs), "geo").column("value").to_pylist()
    mixed = DeltaTable(str(tmp_path / "mixed")).to_pyarrow_table()
    assert mixed.schema.field("value").type.names == ["Geo", "Click"]
    with kafkafmt.LogWriter(logs / "mixed-0") as w:             # another run: one more Geo value
        w.append(values=[topics["mixed"][N][0]])
    second = export_table(str(logs), str(tmp_path / "mixed"), format="delta", topics=["mixed"],
                          value_format="protobuf")
    assert second.rows == 1
    record = second.schemas["mixed"]["value"]
    assert record["reader"]["message"] == ["shop.clicks.Geo", "shop.clicks.Click"] and len(record["readers"]) == 1

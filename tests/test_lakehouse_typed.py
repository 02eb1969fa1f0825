"""Typed lakehouse tables (issue 36): typed keys and values as table columns, schema evolution across runs, the
dead-letter table, upsert of compacted topics, one table per topic.

Values are written by confluent-kafka's own serializers (Avro, Protobuf, JSON Schema) against its mock registry,
whose state is written as a real ``_schemas`` partition beside the data (tests/avro_support.py,
tests/protobuf_support.py); three versions of a subject are registered between two runs. Every table is read back
by pyiceberg / deltalake and by DuckDB over the data files the table's metadata lists, and compared row by row with
the deserializers' values (each run's rows read with the reader schema of that run: the subject's latest version
then). Compacted topics are checked against a latest-per-key computed by hand, and against kafka-python's reading
of real broker-written ``__consumer_offsets`` partitions.
"""
from __future__ import annotations

import json
import os
import shutil
import struct

import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.lakehouse import SchemaEvolutionError, export_table
from kafkafmt.lakehouse.ledger import SCHEMAS_KEY

import kcli
from avro_support import RegistryMirror
from test_lakehouse import _commit_props, _local, iceberg_table

pytestmark = pytest.mark.filterwarnings("ignore::kafkafmt.KafkafmtWarning")

FORMATS = ["iceberg", "delta"]
TABLE = "kafka.orders"


# --- reading a table back, independently -------------------------------------------------------------------------

def _maps_as_dicts(v):
    """Arrow's maps (lists of (key, value) pairs) as dicts, all the way down."""
    if isinstance(v, dict):
        return {k: _maps_as_dicts(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: _maps_as_dicts(x) for k, x in v}
        return [_maps_as_dicts(x) for x in v]
    return v


def table_rows(fmt, where, name=TABLE):
    """{reader: [row dict, ... by offset]} of a table: pyiceberg's scan or deltalake, and DuckDB over the data
    files the table's metadata lists (each file on its own: files written before the schema evolved lack the new
    fields, which are then null)."""
    import duckdb

    con = duckdb.connect()
    if fmt == "iceberg":
        t = iceberg_table(where, name)
        out = {"pyiceberg": t.scan().to_arrow().to_pylist()}
        files = [_local(task.file.file_path) for task in t.scan().plan_files()]
        out["duckdb"] = [r for f in files for r in con.sql(f"select * from read_parquet('{f}')").arrow()
                         .read_all().to_pylist()]
    else:
        from deltalake import DeltaTable

        dt = DeltaTable(where)
        out = {"deltalake": dt.to_pyarrow_table().to_pylist()}
        out["duckdb"] = [r for f in dt.file_uris() for r in con.sql(
            f"select * from read_parquet('{_local(f)}', hive_partitioning=true)").arrow().read_all().to_pylist()]
    return {k: sorted(([_maps_as_dicts(r) for r in rows]), key=lambda r: (r["topic"], r["partition"], r["offset"]))
            for k, rows in out.items()}


def _filled(value, like):
    """``value`` (a dict read from a file of before a schema change) with the fields ``like`` has and it lacks as
    None, recursively -- what a table reader gives for such a row."""
    if isinstance(like, dict) and isinstance(value, dict):
        return {k: _filled(value.get(k), like[k]) for k in like}
    return value


def same_value(got, want):
    """The table's value equals the deserializer's: fields the table has beyond the value's are null."""
    if isinstance(want, dict):
        if got == []:                   # an empty map (a list of no pairs)
            return want == {}
        return isinstance(got, dict) and set(want) <= set(got) and \
            all(same_value(got[k], want[k]) for k in want) and all(got[k] is None for k in set(got) - set(want))
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(same_value(a, b) for a, b in zip(got, want))
    if isinstance(want, float) and isinstance(got, float):
        return got == want or (got != got and want != want)
    return got == want


def export(fmt, root, where, name=TABLE, **kw):
    kw.setdefault("target_file_size", 64 << 10)
    if fmt == "iceberg":
        return export_table(root, where, format="iceberg", table=name, **kw)
    return export_table(root, where, format="delta", **kw)


def dead_letter_rows(fmt, where, name=TABLE):
    if fmt == "iceberg":
        return table_rows(fmt, where, name + "_dlq")
    return table_rows(fmt, where + "_dlq")


# --- Avro: three versions registered between two runs ------------------------------------------------------------

ADDRESS_V1 = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
ADDRESS_V2 = {"type": "record", "name": "Address", "fields": [
    {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}
STATUS = {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}
STATUS_3 = {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"], "default": "NEW"}
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "int"}, {"name": "price", "type": "float"}, {"name": "status", "type": STATUS},
    {"name": "code", "type": "int"}, {"name": "address", "type": ADDRESS_V1}]}
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [             # int -> long, a field added
    {"name": "id", "type": "long"}, {"name": "price", "type": "float"}, {"name": "status", "type": STATUS},
    {"name": "address", "type": ADDRESS_V2}, {"name": "note", "type": ["null", "string"], "default": None}]}
V3 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [             # float -> double, a symbol
    {"name": "id", "type": "long"}, {"name": "price", "type": "double"}, {"name": "status", "type": STATUS_3},
    {"name": "address", "type": ADDRESS_V2}, {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}]}
V4 = {"type": "record", "name": "Order", "namespace": "shop", "fields": V3["fields"] + [   # a map added
    {"name": "attrs", "type": {"type": "map", "values": "long"}, "default": {}}]}
KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}


def order(version, i):
    o = {"id": i, "price": i / 4, "status": "PAID" if i % 2 else "NEW", "address": {"city": f"c{i % 3}"}}
    if version == 1:
        return dict(o, code=i * 7)
    o["address"]["zip"] = None if i % 3 else f"{1000 + i}"
    o["note"] = None if i % 4 else f"n{i}"
    if version >= 3:
        o["status"] = "SHIPPED" if i % 5 == 0 else o["status"]
        o["tags"] = [f"t{j}" for j in range(i % 3)]
    if version >= 4:
        o["attrs"] = {"a": i, "b": -i} if i % 2 else {}
    return o


def _bad_values(m, schema):
    """Values that cannot be typed: no magic byte, an unknown schema id, corrupt Avro (cut short)."""
    good = m.serializer(schema)(order(1, 3) if schema is V1 else order(4, 3))
    return [b"not avro at all", b"\x00" + struct.pack(">i", 9999) + good[5:], good[:7]]


@pytest.fixture
def evolving(tmp_path):
    """A log dir whose ``orders`` values go through four schema versions; returns a namespace with the mirror,
    the root and every (offset, raw value, version or None) written."""
    m = RegistryMirror()
    m.register("orders-value", V1)
    m.register("orders-key", KEY)
    root = tmp_path / "logs"
    root.mkdir()

    class S:
        pass

    s = S()
    s.m, s.root, s.written = m, str(root), []
    s.next = 0

    def write(version, n, bad=()):
        schema = {1: V1, 2: V2, 3: V3, 4: V4}[version]
        ser, kser = m.serializer(schema), m.serializer(KEY, is_key=True)
        values, keys = [], []
        for j in range(n):
            i = s.next + j
            values.append(None if i % 17 == 9 else ser(order(version, i)))
            keys.append(kser({"id": i}))
        for b in bad:
            values.append(b)
            keys.append(kser({"id": s.next + len(keys)}))
        with kafkafmt.LogWriter(f"{s.root}/orders-0", segment_bytes=8 << 10) as w:
            w.append(keys=keys, values=values, timestamps=[1_767_225_600_000 + (s.next + k) * 1000
                                                           for k in range(len(values))], batch_size=2048)
        for k, v in enumerate(values):
            s.written.append((s.next + k, v, None if k >= n or v is None else version))
        s.next += len(values)

    def registry():
        shutil.rmtree(f"{s.root}/_schemas-0", ignore_errors=True)
        m.write(s.root)

    s.write, s.registry = write, registry
    registry()
    return s


def _expected(s, reader_of_offset):
    """{offset: (value as the deserializer reads it with that offset's reader, writer id)} of the good values."""
    out = {}
    for off, raw, version in s.written:
        if raw is None:
            out[off] = (None, None)
        elif version is not None:
            out[off] = (s.m.deserializer(reader_of_offset(off))(raw), struct.unpack(">i", raw[1:5])[0])
    return out


def _field_ids(t):
    """{dotted name: Iceberg field id} of a table's schema."""
    out = {}

    def walk(fields, prefix):
        for f in fields:
            out[prefix + f.name] = f.field_id
            ft = f.field_type
            if hasattr(ft, "fields"):
                walk(ft.fields, prefix + f.name + ".")
    walk(t.schema().fields, "")
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_three_versions_between_runs_evolve_the_table(fmt, evolving, tmp_path):
    """Run 1 with v1; v2, v3 and v4 registered (int->long, float->double, an enum symbol, fields added at the top,
    in a nested record, a list and a map) and values of every version written; run 2 evolves the table. Every
    reader gives each run's rows as confluent-kafka's AvroDeserializer reads them with that run's reader schema
    (new fields null in older rows), values that cannot be typed are in the dead-letter table, and each commit
    records the reader and writer schema ids."""
    s = evolving
    where = str(tmp_path / "table")
    s.write(1, 60, bad=_bad_values(s.m, V1))
    r1 = export(fmt, s.root, where, topics=["orders"], value_format="avro", key_format="avro")
    run1_end = s.next
    assert r1.rows == 60 and r1.dead_letters == 3 and r1.evolved == []
    ids_before = _field_ids(iceberg_table(where, TABLE)) if fmt == "iceberg" else None

    for schema in (V2, V3, V4):
        s.m.register("orders-value", schema)
    s.registry()
    s.write(1, 10)
    s.write(2, 20)
    s.write(3, 20, bad=_bad_values(s.m, V1)[:2])
    s.write(4, 20, bad=_bad_values(s.m, V4)[2:])
    r2 = export(fmt, s.root, where, topics=["orders"], value_format="avro", key_format="avro")
    assert r2.rows == 70 and r2.dead_letters == 3
    evolved = {c.name: c.kind for c in r2.evolved}
    assert {"value.note": "added", "value.address.zip": "added", "value.tags": "added",
            "value.attrs": "added"}.items() <= evolved.items()
    if fmt == "iceberg":       # Iceberg widens in place; Delta holds every integer as a long, float as double
        assert evolved["value.id"] == "widened" and evolved["value.price"] == "widened"
        ids_after = _field_ids(iceberg_table(where, TABLE))
        assert {k: ids_after[k] for k in ids_before} == ids_before       # field ids stable across runs
    else:
        assert "value.id" not in evolved and "value.price" not in evolved

    v1_id, v4_id = (s.m.client.get_version("orders-value", v).schema_id for v in (1, 4))
    want = _expected(s, lambda off: V1 if off < run1_end else V4)
    bad = {off for off, raw, version in s.written if raw is not None and version is None}
    for reader, rows in table_rows(fmt, where).items():
        assert [r["offset"] for r in rows] == sorted(want), f"{reader}: not every good offset once"
        for r in rows:
            value, writer = want[r["offset"]]
            assert same_value(r["value"], value), f"{reader} offset {r['offset']}: {r['value']} != {value}"
            assert r["valueSchemaId"] == writer and r["valueError"] is None
            assert r["key"] == {"id": r["offset"]} and r["keySchemaId"] is not None
    for reader, rows in dead_letter_rows(fmt, where).items():
        assert [r["offset"] for r in rows] == sorted(bad), reader
        raw = dict((off, v) for off, v, _ in s.written)
        assert all(r["value"] == raw[r["offset"]] and r["valueError"] for r in rows), reader
        assert {r["valueError"].split(":")[0] for r in rows} >= {"no magic byte"}
    props = _iceberg_commits(where) if fmt == "iceberg" else _commit_props(fmt, where)
    commits = [json.loads(c[SCHEMAS_KEY]) for c in props if SCHEMAS_KEY in c]
    first, last = commits[0]["orders"]["value"], commits[-1]["orders"]["value"]
    assert first["reader"] == v1_id and first["writers"] == [v1_id]
    assert last["reader"] == v4_id and last["readers"] == [v1_id, v4_id] and last["version"] == 4
    assert set(last["writers"]) == {s.m.client.get_version("orders-value", v).schema_id for v in (1, 2, 3, 4)}
    assert r2.schemas["orders"]["key"]["subject"] == "orders-key"


def _iceberg_commits(where, name=TABLE):
    t = iceberg_table(where, name)
    return [dict(s.summary.additional_properties) for s in t.snapshots() if s.summary.additional_properties]


def _n_commits(fmt, where, name=TABLE):
    if fmt == "iceberg":
        return len(iceberg_table(where, name).snapshots())
    from deltalake import DeltaTable

    return DeltaTable(where).version()


BAD_REUSE = {"type": "record", "name": "Order", "namespace": "shop", "fields": V4["fields"] + [
    {"name": "code", "type": ["null", "string"], "default": None}]}    # v1's int code, back as a string


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_change_the_table_cannot_take_fails_before_any_commit(fmt, evolving, tmp_path):
    """A removed field's name used again with another type (v1's int ``code`` back as a string in v5) fails the
    run naming the subject, both versions and the field -- through the command line too (exit 1), with nothing
    committed to the table or its dead-letter table."""
    s = evolving
    where = str(tmp_path / "table")
    s.write(1, 20, bad=_bad_values(s.m, V1)[:1])
    export(fmt, s.root, where, topics=["orders"], value_format="avro")
    for schema in (V2, V4):
        s.m.register("orders-value", schema)
    s.registry()
    s.write(4, 10)
    export(fmt, s.root, where, topics=["orders"], value_format="avro")
    s.m.register("orders-value", BAD_REUSE)
    s.registry()
    s.write(4, 10, bad=_bad_values(s.m, V4)[:1])
    before = _n_commits(fmt, where), _n_commits(fmt, where + "_dlq" if fmt == "delta" else where, TABLE + "_dlq")
    with pytest.raises(SchemaEvolutionError) as info:
        export(fmt, s.root, where, topics=["orders"], value_format="avro")
    text = str(info.value)
    assert "value.code" in text and "version 1 of subject 'orders-value'" in text and "version 4 of subject " \
        "'orders-value'" in text and "nothing was committed" in text, text
    args = ["export", s.root, "--topics", "orders", "--value-format", "avro", "--format", fmt, "--to", where] + \
        (["--table", TABLE] if fmt == "iceberg" else [])
    p = kcli.run(*args, check=1)
    assert "value.code" in p.stderr and "orders-value" in p.stderr
    after = _n_commits(fmt, where), _n_commits(fmt, where + "_dlq" if fmt == "delta" else where, TABLE + "_dlq")
    assert after == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_narrowed_type_fails_before_any_commit(fmt, tmp_path):
    """long -> int between two runs: no table takes it (Delta, which holds both as a long, neither): the run fails
    naming the subject, both versions and the field."""
    m = RegistryMirror()
    wide = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": "string"}]}
    narrow = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}, {"name": "s", "type": "string"}]}
    m.register("events-value", wide)
    root = tmp_path / "logs"
    m.write(root)
    kafkafmt.write_log_dir(str(root / "events-0"), values=[m.serializer(wide, topic="events")({"n": i, "s": "x"})
                                                            for i in range(5)])
    where = str(tmp_path / "t")
    export(fmt, str(root), where, name="kafka.events", topics=["events"], value_format="avro")
    m.register("events-value", narrow)
    shutil.rmtree(root / "_schemas-0")
    m.write(root)
    n = _n_commits(fmt, where, "kafka.events")
    with pytest.raises(SchemaEvolutionError, match=r"field value\.n is long in version 1 of subject 'events-value' "
                                                   r"\(schema id \d+\) but int in version 2"):
        export(fmt, str(root), where, name="kafka.events", topics=["events"], value_format="avro")
    assert _n_commits(fmt, where, "kafka.events") == n


@pytest.mark.parametrize("fmt", FORMATS)
def test_typed_and_untyped_runs_do_not_mix_in_one_table(fmt, evolving, tmp_path):
    """A table exported with bytes cannot be typed later, nor a typed one written with bytes: the run says so
    before committing anything (before this, ``--value-format`` was silently dropped for tables)."""
    s = evolving
    s.write(1, 10)
    raw, typed = str(tmp_path / "raw"), str(tmp_path / "typed")
    export(fmt, s.root, raw, topics=["orders"])
    with pytest.raises(SchemaEvolutionError, match="exported without value_format"):
        export(fmt, s.root, raw, topics=["orders"], value_format="avro")
    export(fmt, s.root, typed, topics=["orders"], value_format="avro")
    s.write(1, 5)
    with pytest.raises(SchemaEvolutionError, match="column value is typed in the table"):
        export(fmt, s.root, typed, topics=["orders"])


# --- Protobuf and JSON Schema: the same evolution ----------------------------------------------------------------

PROTO_V1 = """syntax = "proto3";
package shop;
message Order { int32 id = 1; string note = 2; Status status = 3; enum Status { NEW = 0; PAID = 1; } }
"""
PROTO_V2 = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1; string note = 2; Status status = 3; repeated string tags = 4; Address address = 5;
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  message Address { string city = 1; }
}
"""
PROTO_V3 = PROTO_V2.replace("message Address { string city = 1; }", "message Address { string city = 1; string zip = 2; }") \
    .replace("Address address = 5;", "Address address = 5; map<string, int64> attrs = 6;")
PROTO_V4 = PROTO_V3.replace("map<string, int64> attrs = 6;", "map<string, int64> attrs = 6; double total = 7;")


def _proto_order(cls, version, i):
    m = cls(id=i, note=f"n{i}" if i % 3 else "", status=i % (2 if version == 1 else 3))
    if version >= 2:
        m.tags.extend([f"t{j}" for j in range(i % 3)])
        if i % 2:
            m.address.city = f"c{i}"
    if version >= 3:
        if i % 4 == 1:
            m.address.zip = "z"
        m.attrs["a"] = i
    if version >= 4:
        m.total = i / 8
    return m


def _append_and_mirror(root, client, written, values, bad):
    """Append ``values`` and one value that cannot be typed to ``orders-0``, note them in ``written`` (None for
    the bad one), and write the mock registry's state as ``_schemas``."""
    from protobuf_support import mirror_registry

    with kafkafmt.LogWriter(str(root / "orders-0")) as w:
        w.append(values=values + [bad])
    written.extend(values + [None])
    shutil.rmtree(root / "_schemas-0", ignore_errors=True)
    mirror_registry(client, str(root))


def _ours(v, desc, ours):
    """protobuf_support.ours of a table's value: fields null in rows of before they were added stay null, maps
    (read back as dicts) as the pairs it takes."""
    if v is None:
        return None
    out = {}
    for name, x in v.items():
        if x is None:
            out[name] = None
            continue
        out.update(ours({name: list(x.items()) if isinstance(x, dict) and desc.fields_by_name[name].is_repeated
                         else x}, desc))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_protobuf_versions_between_runs_evolve_the_table(fmt, tmp_path):
    """Protobuf: int32 -> int64, an enum value, a nested message, a field in it, a map, a double -- versions 2, 3
    and 4 registered between two runs by confluent-kafka's ProtobufSerializer; every reader gives each run's rows
    as the protobuf runtime parses them with that run's latest message (MessageToDict)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from protobuf_support import compile_protos, expected, ours, to_dict

    classes = [compile_protos({f"v{n}.proto": text})[0]["shop.Order"]
               for n, text in enumerate((PROTO_V1, PROTO_V2, PROTO_V3, PROTO_V4), 1)]
    client = SchemaRegistryClient.new_client({"url": f"mock://lake-protobuf-{fmt}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    root = tmp_path / "logs"
    where = str(tmp_path / "table")
    written = []

    def write(version, n):
        ser = ProtobufSerializer(classes[version - 1], client, conf={"use.deprecated.format": False})
        values = [ser(_proto_order(classes[version - 1], version, len(written) + i), ctx) for i in range(n)]
        _append_and_mirror(root, client, written, values, b"\x00\x00\x00\x00\x63garbage")   # an unknown id

    write(1, 30)
    r1 = export(fmt, str(root), where, topics=["orders"], value_format="protobuf")
    end1 = len(written)
    for version in (2, 3, 4):
        write(version, 15)
    r2 = export(fmt, str(root), where, topics=["orders"], value_format="protobuf")
    assert (r1.rows, r1.dead_letters, r2.rows, r2.dead_letters) == (30, 1, 45, 3)
    evolved = {c.name for c in r2.evolved}
    assert {"value.tags", "value.address", "value.attrs", "value.total"} <= evolved
    assert r2.schemas["orders"]["value"]["version"] == 4
    desc = classes[-1].DESCRIPTOR
    for reader, rows in table_rows(fmt, where).items():
        assert [r["offset"] for r in rows] == [i for i, v in enumerate(written) if v is not None], reader
        for r in rows:
            cls = classes[0] if r["offset"] < end1 else classes[-1]
            want = expected(to_dict(cls.FromString(written[r["offset"]][6:])), cls.DESCRIPTOR)
            assert same_value(_ours(r["value"], desc, ours), want), \
                f"{reader} offset {r['offset']}: {r['value']} != {want}"
    assert [r["offset"] for r in dead_letter_rows(fmt, where)["duckdb"]] == \
        [i for i, v in enumerate(written) if v is None]


JSON_V1 = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
           "properties": {"id": {"type": "integer"}, "price": {"type": "number"},
                          "status": {"type": "string", "enum": ["NEW", "PAID"]}}, "required": ["id"]}


def _json_schema(version):
    s = json.loads(json.dumps(JSON_V1))
    if version >= 2:
        s["properties"]["note"] = {"type": ["string", "null"]}
    if version >= 3:
        s["properties"]["tags"] = {"type": "array", "items": {"type": "string"}}
        s["properties"]["status"]["enum"].append("SHIPPED")
    if version >= 4:
        s["properties"]["address"] = {"type": "object", "properties": {"city": {"type": "string"}}}
    return s


def _json_order(version, i):
    o = {"id": i, "price": i / 4, "status": ["NEW", "PAID", "SHIPPED"][i % (2 if version < 3 else 3)]}
    if version >= 2 and i % 2:
        o["note"] = f"n{i}"
    if version >= 3:
        o["tags"] = ["t"] * (i % 3)
    if version >= 4 and i % 3:
        o["address"] = {"city": f"c{i}"}
    return o


@pytest.mark.parametrize("fmt", FORMATS)
def test_json_schema_versions_between_runs_evolve_the_table(fmt, tmp_path):
    """JSON Schema: fields added (a nullable text, an array, a nested object) and an enum value, versions 2, 3 and
    4 registered between two runs by confluent-kafka's JSONSerializer; the table's values equal the JSON texts'."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": f"mock://lake-json-{fmt}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    root = tmp_path / "logs"
    where = str(tmp_path / "table")
    written = []

    def write(version, n):
        ser = JSONSerializer(json.dumps(_json_schema(version)), client)
        values = [ser(_json_order(version, len(written) + i), ctx) for i in range(n)]
        _append_and_mirror(root, client, written, values, b'{"no": "magic byte"}')

    write(1, 20)
    export(fmt, str(root), where, topics=["orders"], value_format="json-schema")
    for version in (2, 3, 4):
        write(version, 10)
    r2 = export(fmt, str(root), where, topics=["orders"], value_format="json-schema")
    assert r2.rows == 30 and r2.dead_letters == 3
    assert {"value.note", "value.tags", "value.address"} <= {c.name for c in r2.evolved}
    for reader, rows in table_rows(fmt, where).items():
        assert [r["offset"] for r in rows] == [i for i, v in enumerate(written) if v is not None], reader
        for r in rows:
            want = json.loads(written[r["offset"]][5:])
            assert same_value(r["value"], want), f"{reader} offset {r['offset']}: {r['value']} != {want}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_topics_kept_as_bytes_beside_typed_ones(fmt, tmp_path):
    """Every topic of the sample exported with Avro values and ``untyped_topics="bytes"``: the topics without a
    schema go into the same table, their values null and their bytes in valueBytes (an internal error before:
    their null value column could not be cast to the typed topic's struct); each record once, in the table or
    the dead-letter table, as the library reads them."""
    from kafkafmt.sample import sample_dir

    where = str(tmp_path / "t")
    got = export(fmt, sample_dir(), where, value_format="avro", untyped_topics="bytes")
    lib = kafkafmt.read_log_dirs(sample_dir(), value_format="avro", untyped_topics="bytes").to_arrow().to_pylist()
    bad = [r for r in lib if r["valueError"] is not None]
    assert (got.rows, got.dead_letters) == (len(lib) - len(bad), len(bad)) and len(bad) == 1
    want = {(r["topic"], r["partition"], r["offset"]): r for r in lib if r["valueError"] is None}
    for reader, rows in table_rows(fmt, where).items():
        assert sorted((r["topic"], r["partition"], r["offset"]) for r in rows) == sorted(want), reader
        for r in rows:
            w = want[(r["topic"], r["partition"], r["offset"])]
            assert r["valueBytes"] == w["valueBytes"] and (r["value"] is None) == (w["value"] is None), reader
    assert {r["topic"] for r in rows if r["valueBytes"] is not None} >= {"orders", "_schemas"}


# --- runs killed at every step: the table and its dead letters hold each record once ------------------------------

def _cli(fmt, root, where, *extra, env=None, check=None, name=TABLE):
    args = ["export", root, "--format", fmt, "--to", where, "--target-file-size", "8K", "--commit-every", "24K",
            *extra]
    if fmt == "iceberg":
        args += ["--table", name]
    return kcli.run(*args, env=env, check=check)


def _offsets(rows):
    return sorted((r["partition"], r["offset"]) for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_typed_runs_killed_at_every_step_lose_and_double_nothing(fmt, tmp_path):
    """A typed export with dead letters in every partition, killed after each of its steps in turn (each chunk
    read, data file closed, dead-letter commit and table commit: ``KAFKAFMT_CRASH_AFTER``), then run to the end:
    the table holds every good record once, the dead-letter table every bad one once, nothing in both."""
    m = RegistryMirror()
    m.register("orders-value", V1)
    root = tmp_path / "logs"
    m.write(root)
    ser = m.serializer(V1)
    bad = {}
    for part in range(3):
        values = []
        for i in range(240):
            if i % 37 == 5:
                values.append(b"\x01garbage %d" % i)
                bad[(part, i)] = values[-1]
            else:
                values.append(ser(dict(order(1, i), code=i)))
        kafkafmt.write_log_dir(str(root / f"orders-{part}"), values=values, segment_bytes=6 << 10, batch_size=1024)
    base = tmp_path / "base"
    first = export(fmt, str(root), str(base / "t"), topics=["orders"], value_format="avro", partitions=[0])
    assert first.dead_letters == len([k for k in bad if k[0] == 0])
    good = sorted((p, o) for p in range(3) for o in range(240) if (p, o) not in bad)
    crashed = 0
    for n in range(1, 60):
        case = tmp_path / f"case{n}"
        shutil.copytree(base, case)
        where = str(case / "t")
        p = _cli(fmt, str(root), where, "--topics", "orders", "--value-format", "avro",
                 env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode == 0:
            break
        assert p.returncode == 86, p.stderr
        crashed += 1
        _cli(fmt, str(root), where, "--topics", "orders", "--value-format", "avro", check=0)
        for reader, rows in table_rows(fmt, where).items():
            assert _offsets(rows) == good, f"crash after step {n}: {reader} lost or doubled rows"
        for reader, rows in dead_letter_rows(fmt, where).items():
            assert _offsets(rows) == sorted(bad), f"crash after step {n}: dead letters of {reader} differ"
            assert all(r["value"] == bad[(r["partition"], r["offset"])] for r in rows)
        shutil.rmtree(case)
    assert crashed >= 8, crashed


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_many_small_typed_partitions_killed_at_every_step(fmt, tmp_path):
    """Typed values of small partitions -- typed a pass at once, their rows written together -- exported killed
    after each step in turn until a run completes, then again after two grew and a new one came: the table holds
    every record once, each value the deserializer's, and no dead letter."""
    m = RegistryMirror()
    m.register("orders-value", V1)
    root = tmp_path / "logs"
    m.write(root)
    ser = m.serializer(V1)
    de = m.deserializer(V1)
    raw = {}

    def write(part, first, n, **kw):
        values = [ser(order(1, 1000 * part + i)) for i in range(first, first + n)]
        kafkafmt.write_log_dir(str(root / f"orders-{part}"), values=values, **kw)
        raw.update({(part, first + i): v for i, v in enumerate(values)})

    for part in range(5):
        write(part, 0, 30 + 10 * part, segment_bytes=2 << 10, batch_size=512)
    where = str(tmp_path / "table")

    def until_done():
        crashed, n = 0, 1
        while True:
            p = _cli(fmt, str(root), where, "--topics", "orders", "--value-format", "avro",
                     env={"KAFKAFMT_CRASH_AFTER": str(n)})
            if p.returncode == 0:
                return crashed
            assert p.returncode == 86, p.stderr
            crashed, n = crashed + 1, n + 1

    def holds():
        for reader, rows in table_rows(fmt, where).items():
            assert _offsets(rows) == sorted(raw), f"{reader} lost or doubled rows"
            assert all(same_value(r["value"], de(raw[(r["partition"], r["offset"])])) for r in rows), reader
        assert not os.path.exists(where + "_dlq") if fmt == "delta" else True

    assert until_done() >= 6
    holds()
    write(0, 30, 12, segment_bytes=1)           # (new segments from the ledger's offset)
    write(1, 40, 5)                             # (inside its last segment)
    write(5, 0, 20)                             # (a new partition)
    assert until_done() >= 3
    holds()


# --- upsert: a compacted topic as its latest state ----------------------------------------------------------------

CUSTOMER = {"type": "record", "name": "Customer", "namespace": "crm", "fields": [
    {"name": "name", "type": "string"}, {"name": "tier", "type": "int"}]}


class Compacted:
    """A compacted topic written batch by batch, and what its latest state is, computed by hand: for each
    (partition, key) the value of its highest offset, or nothing after a tombstone."""

    def __init__(self, root, m, topic="customers"):
        self.root, self.m, self.topic = root, m, topic
        self.ser = m.serializer(CUSTOMER, topic=topic)
        self.state = {}
        self.next = {}

    def write(self, part, records, gap=0, empty_batch=False):
        """records: [(key, value dict or None)]; ``gap``: offsets the cleaner removed before them."""
        folder = f"{self.root}/{self.topic}-{part}"
        with kafkafmt.LogWriter(folder) as w:
            if empty_batch:
                w.append_empty_batch(last_offset=w.next_offset + 2, timestamp=1_767_225_600_000)
            first = w.next_offset + gap
            offsets = list(range(first, first + len(records)))
            w.append(keys=[k for k, _ in records], values=[None if v is None else self.ser(v) for _, v in records],
                     offsets=offsets, timestamps=[1_767_225_600_000 + o for o in offsets])
        for k, v in records:
            if v is None:
                self.state.pop((part, k), None)
            else:
                self.state[(part, k)] = v


def _latest(fmt, where, name="kafka.customers"):
    """{reader: {(partition, key): value}} of an upsert table (asserting one row per key)."""
    out = {}
    for reader, rows in table_rows(fmt, where, name).items():
        got = {(r["partition"], r["key"]): r["value"] for r in rows}
        assert len(got) == len(rows), f"{reader}: a key twice"
        out[reader] = got
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_keeps_the_latest_value_of_each_key_across_runs(fmt, tmp_path):
    """Updates, deletes (tombstones) and re-inserts across three runs, a key in two partitions, offset gaps and an
    empty batch the cleaner left: every reader of the table gives the latest value of each (partition, key),
    computed by hand; a run with nothing new changes nothing; a record without a key is a dead letter."""
    m = RegistryMirror()
    m.register("customers-value", CUSTOMER)
    root = tmp_path / "logs"
    m.write(root)
    c = Compacted(str(root), m)
    where = str(tmp_path / "t")
    c.write(0, [(b"a", {"name": "A", "tier": 1}), (b"b", {"name": "B", "tier": 1}), (b"a", {"name": "A2", "tier": 2}),
                (b"c", {"name": "C", "tier": 3}), (b"d", None)])
    c.write(1, [(b"a", {"name": "other partition", "tier": 9}), (b"z", {"name": "Z", "tier": 1})])
    kw = dict(name="kafka.customers", topics=["customers"], value_format="avro", mode="upsert")
    r = export(fmt, str(root), where, **kw)
    assert r.mode == "upsert" and r.deleted == 0
    for reader, got in _latest(fmt, where).items():
        assert got == c.state, reader

    c.write(0, [(b"a", None), (b"b", {"name": "B2", "tier": 2}), (b"e", {"name": "E", "tier": 5})], gap=4)
    c.write(1, [(b"z", None), (b"y", {"name": "Y", "tier": 1})], empty_batch=True)
    r = export(fmt, str(root), where, **kw)
    assert r.deleted == 2
    for reader, got in _latest(fmt, where).items():
        assert got == c.state, reader

    c.write(0, [(b"a", {"name": "A again", "tier": 7}), (b"e", None), (b"e", {"name": "E back", "tier": 6}),
                (b"b", None)], gap=2)
    with kafkafmt.LogWriter(f"{root}/customers-0") as w:
        w.append(keys=[None], values=[c.ser({"name": "no key", "tier": 0})])
    r = export(fmt, str(root), where, **kw)
    assert r.dead_letters == 1
    for reader, got in _latest(fmt, where).items():
        assert got == c.state, reader
    assert [row["keyError"] for row in dead_letter_rows(fmt, where, "kafka.customers")["duckdb"]] == \
        ["no key: an upsert table holds the latest value of each key"]
    again = export(fmt, str(root), where, **kw)
    assert again.commits == [] and again.rows == 0
    with pytest.raises(ValueError, match="upsert table"):
        export(fmt, str(root), where, name="kafka.customers", topics=["customers"], value_format="avro")


@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_with_typed_keys_keys_on_the_key_bytes(fmt, tmp_path):
    """A typed key (an Avro record) is a struct column; the upsert keys on the key's bytes, kept in ``keyBytes``."""
    m = RegistryMirror()
    m.register("customers-value", CUSTOMER)
    m.register("customers-key", KEY)
    root = tmp_path / "logs"
    m.write(root)
    kser, vser = m.serializer(KEY, topic="customers", is_key=True), m.serializer(CUSTOMER, topic="customers")
    where = str(tmp_path / "t")
    state = {}
    for run, records in enumerate([[(1, "a"), (2, "b"), (1, "a2")], [(2, None), (3, "c"), (1, "a3")]]):
        with kafkafmt.LogWriter(f"{root}/customers-0") as w:
            w.append(keys=[kser({"id": k}) for k, _ in records],
                     values=[None if v is None else vser({"name": v, "tier": run}) for _, v in records])
        for k, v in records:
            state.pop(k, None) if v is None else state.__setitem__(k, {"name": v, "tier": run})
        export(fmt, str(root), where, name="kafka.customers", topics=["customers"], value_format="avro",
               key_format="avro", mode="upsert")
        for reader, rows in table_rows(fmt, where, "kafka.customers").items():
            assert {r["key"]["id"]: r["value"] for r in rows} == state, reader
            assert all(r["keyBytes"] == kser(r["key"]) for r in rows)


@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_of_real_consumer_offsets_partitions(fmt, real_corpus, tmp_path):
    """Real broker-written ``__consumer_offsets`` partitions (compacted: offset gaps, tombstones): the table holds
    for each key the value of its last record as kafka-python reads the segments, none for a tombstone."""
    import kpy

    folders = sorted(os.path.join(dp, d) for dp, ds, _ in os.walk(os.path.join(real_corpus, "broker-dirs"))
                     for d in ds if d.startswith("__consumer_offsets-"))
    assert len(folders) >= 5
    for folder in folders:
        want = {}
        for name in sorted(f for f in os.listdir(folder) if f.endswith(".log")):
            with open(os.path.join(folder, name), "rb") as f:
                for rec in kpy.kp_decode(f.read())["records"]:
                    if rec["value"] is None:
                        want.pop(rec["key"], None)
                    else:
                        want[rec["key"]] = rec["value"]
        where = str(tmp_path / os.path.basename(folder) / "t")
        export(fmt, folder, where, name="kafka.offsets", mode="upsert")
        for reader, rows in table_rows(fmt, where, "kafka.offsets").items():
            assert {r["key"]: r["value"] for r in rows} == want, f"{folder}: {reader}"


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_runs_killed_at_every_step_end_in_the_latest_state(fmt, tmp_path):
    """An upsert run over updates, deletes and re-inserts killed after each of its steps in turn, then run to the
    end: the table is the latest state computed by hand, the dead-letter table holds the keyless record once."""
    m = RegistryMirror()
    m.register("customers-value", CUSTOMER)
    root = tmp_path / "logs"
    m.write(root)
    c = Compacted(str(root), m)
    rng = np.random.default_rng(36)
    for part in range(2):
        c.write(part, [(b"k%d" % rng.integers(0, 40), None if rng.random() < 0.15 else
                        {"name": "x" * int(rng.integers(50, 300)), "tier": int(i)}) for i in range(150)])
    base = tmp_path / "base"
    export(fmt, str(root), str(base / "t"), name="kafka.customers", topics=["customers"], value_format="avro",
           mode="upsert", partitions=[0])
    for part in range(2):
        c.write(part, [(b"k%d" % rng.integers(0, 40), None if rng.random() < 0.2 else
                        {"name": "y" * int(rng.integers(50, 300)), "tier": 1000 + int(i)}) for i in range(150)])
    with kafkafmt.LogWriter(f"{root}/customers-1") as w:
        w.append(keys=[None], values=[c.ser({"name": "keyless", "tier": -1})])
    crashed = 0
    for n in range(1, 40):
        case = tmp_path / f"case{n}"
        shutil.copytree(base, case)
        where = str(case / "t")
        args = ("--topics", "customers", "--value-format", "avro", "--mode", "upsert")
        p = _cli(fmt, str(root), where, *args, env={"KAFKAFMT_CRASH_AFTER": str(n)}, name="kafka.customers")
        if p.returncode == 0:
            break
        assert p.returncode == 86, p.stderr
        crashed += 1
        _cli(fmt, str(root), where, *args, check=0, name="kafka.customers")
        for reader, got in _latest(fmt, where).items():
            assert got == c.state, f"crash after step {n}: {reader}"
        assert [r["offset"] for r in dead_letter_rows(fmt, where, "kafka.customers")["duckdb"]] == [300], n
        shutil.rmtree(case)
    assert crashed >= 4, crashed


# --- every Avro type in both formats ------------------------------------------------------------------------------

EVERY = {"type": "record", "name": "Every", "namespace": "t", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"}, {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "uu", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "dur", "type": {"type": "fixed", "name": "D12", "size": 12, "logicalType": "duration"}},
    {"name": "u", "type": ["null", "string", "long"]},
    {"name": "arr", "type": {"type": "array", "items": {"type": "record", "name": "It", "fields": [
        {"name": "x", "type": "int"}]}}},
    {"name": "m", "type": {"type": "map", "values": ["null", "double"]}},
    {"name": "n", "type": "null"}]}


def _every(i):
    import datetime
    import decimal
    import uuid

    return {"b": i % 2 == 0, "i": -i, "l": i << 40, "f": i / 2, "d": i / 3, "s": f"s{i}é", "by": bytes([i, 0, 255]),
            "fx": b"abcd", "e": "Y" if i % 2 else "X", "dec": decimal.Decimal(f"{i}.{i % 100:02d}"),
            "uu": str(uuid.UUID(int=i + 1)), "dt": datetime.date(2026, 1, 1) + datetime.timedelta(days=i),
            "tm": datetime.time(12, i % 60, 1, 234000), "tu": datetime.time(1, 2, 3, i),
            "ts": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.timezone.utc),
            "tsu": datetime.datetime(2026, 1, 2, 3, 4, 5, i, tzinfo=datetime.timezone.utc),
            "lts": datetime.datetime(2026, 5, 6, 7, 8, 9, 123000),
            "dur": struct.pack("<3I", i, 2, 3000), "u": [None, f"u{i}", i][i % 3],
            "arr": [{"x": j} for j in range(i % 3)], "m": {"k": None if i % 2 else i / 8}, "n": None}


def _as_table_holds(fmt, v):
    """What a table of ``fmt`` holds for a value as the Avro deserializer gives it (the mapping documented in
    kafkafmt.lakehouse.types, spelled out here independently)."""
    import datetime

    out = dict(v)
    us = lambda t: ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond     # noqa: E731
    if fmt == "delta":
        out["tm"], out["tu"] = us(v["tm"]), us(v["tu"])
    months, days, ms = struct.unpack("<3I", v["dur"]) if isinstance(v["dur"], bytes) else v["dur"]
    out["dur"] = {"months": months, "days": days, "nanoseconds": ms * 1_000_000}
    out["uu"] = str(v["uu"])
    u = v["u"]
    out["u"] = None if u is None else {"member0": u if isinstance(u, str) else None,
                                       "member1": u if isinstance(u, int) else None}
    out["ts"] = v["ts"].astimezone(datetime.timezone.utc)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_avro_type_in_both_formats(fmt, tmp_path):
    """Every Avro type and logical type kafkafmt reads -- fixed, decimal, uuid, date, times, timestamps with and
    without a zone, duration, unions, arrays of records, maps, null -- stored as each table format holds it and
    read back equal to confluent-kafka's AvroDeserializer's values."""
    m = RegistryMirror()
    m.register("every-value", EVERY)
    root = tmp_path / "logs"
    m.write(root)
    raw = [m.serializer(EVERY, topic="every")(_every(i)) for i in range(12)]
    kafkafmt.write_log_dir(str(root / "every-0"), values=raw)
    where = str(tmp_path / "t")
    r = export(fmt, str(root), where, name="kafka.every", topics=["every"], value_format="avro")
    assert r.rows == 12 and r.dead_letters == 0
    de = m.deserializer(EVERY, topic="every")
    for reader, rows in table_rows(fmt, where, "kafka.every").items():
        for row, value in zip(rows, raw):
            want = _as_table_holds(fmt, de(value))
            got = dict(row["value"])
            assert got.keys() == want.keys(), reader
            for k in want:
                assert got[k] == want[k], f"{reader} {k}: {got[k]!r} != {want[k]!r}"


# --- several topics, one table each; the command line ------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_one_table_per_topic_each_with_its_own_schema(fmt, tmp_path):
    """``--table 'sales.{topic}'`` (Iceberg) / ``--to 'lake/{topic}'`` (Delta): one table per topic, each typed
    with its own subject, its own ledger and dead letters; ``--json`` lists the tables and the dead letters."""
    m = RegistryMirror()
    m.register("orders-value", V1)
    m.register("customers-value", CUSTOMER)
    root = tmp_path / "logs"
    m.write(root)
    kafkafmt.write_log_dir(str(root / "orders-0"), values=[m.serializer(V1)(order(1, i)) for i in range(20)]
                           + [b"junk"])
    kafkafmt.write_log_dir(str(root / "customers-0"), values=[m.serializer(CUSTOMER, topic="customers")(
        {"name": f"c{i}", "tier": i}) for i in range(7)])
    where = str(tmp_path / "lake")
    args = ["export", str(root), "--topics", "orders,customers", "--value-format", "avro", "--format", fmt, "--json"]
    args += ["--to", where, "--table", "sales.{topic}"] if fmt == "iceberg" else ["--to", where + "/{topic}"]
    p = kcli.run(*args, check=0)
    doc = json.loads(p.stdout)
    assert len(doc["tables"]) == 2 and doc["rows"] == 27 and doc["dead_letters"] == 1
    assert "1 record whose key or value could not be typed went to the dead-letter table" in p.stderr
    assert doc["schemas"]["orders"]["value"]["subject"] == "orders-value"
    for topic, n, fields in (("orders", 20, {"id", "price", "status", "code", "address"}),
                             ("customers", 7, {"name", "tier"})):
        name, at = (f"sales.{topic}", where) if fmt == "iceberg" else (TABLE, f"{where}/{topic}")
        for reader, rows in table_rows(fmt, at, name).items():
            assert len(rows) == n and set(rows[0]["value"]) == fields, (topic, reader)
    again = kcli.run(*args, check=0)
    assert json.loads(again.stdout)["commits"] == []


def test_cli_table_options(tmp_path, sample):
    """--value-format reaches the table (it was dropped before); --value-errors null keeps nulls and reasons in
    the table; dlq and --mode upsert are refused for files; the dead-letter count is in the summary."""
    where = str(tmp_path / "t")
    p = kcli.run("export", sample, "--topics", "shipments", "--value-format", "avro", "--format", "delta", "--to",
                 where, "--value-errors", "null", check=0)
    from deltalake import DeltaTable

    t = DeltaTable(where).to_pyarrow_table()
    assert pa.types.is_struct(t.schema.field("value").type) and t.num_rows == 2000
    assert t.filter(pa.compute.is_valid(t["valueError"])).num_rows == 1
    assert not os.path.exists(where + "_dlq") and "dead-letter" not in p.stderr
    for extra in (["--value-errors", "dlq"], ["--mode", "upsert"]):
        p = kcli.run("export", sample, "--topics", "shipments", "--to", str(tmp_path / "x.parquet"), *extra, check=2)
        assert "iceberg or delta" in p.stderr
    p = kcli.run("export", sample, "--topics", "shipments", "--value-format", "avro", "--format", "iceberg", "--to",
                 str(tmp_path / "wh"), "--table", "k.s", "--json", "--value-errors", "strict", check=1)
    assert "no magic byte" in p.stderr


# --- Spark: the recipe's DataFrame side ----------------------------------------------------------------------------

def test_spark_typed_frame_is_what_the_table_holds(spark, sample, tmp_path):
    """The guide's Spark recipe writes the kafka-segments source's typed DataFrame with the cluster's own Delta or
    Iceberg connector (not installed here: no delta-spark or iceberg-spark-runtime jar is available offline). What
    runs here: the DataFrame it writes -- its good rows are the rows kafkafmt's table holds, value for value, and
    its bad rows the dead-letter table's."""
    import datetime

    where = str(tmp_path / "t")
    export("delta", sample, where, topics=["shipments"], value_format="avro")
    df = (spark.read.format("kafka-segments").option("subscribe", "shipments").option("valueFormat", "avro")
          .option("mode", "PERMISSIVE").load(os.path.abspath(sample)))
    epoch = datetime.datetime(1970, 1, 1)

    def plain(v):       # Spark's timestamps are naive in the session's zone (UTC); the table's are UTC-aware
        if isinstance(v, datetime.datetime):
            return (v.replace(tzinfo=None) - epoch) // datetime.timedelta(microseconds=1)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    good = {r["offset"]: (plain(r["value"].asDict(recursive=True)), r["valueSchemaId"])
            for r in df.where("valueError IS NULL").collect()}
    rows = table_rows("delta", where)["deltalake"]
    assert {r["offset"]: (plain(r["value"]), r["valueSchemaId"]) for r in rows} == good
    bad = df.where("valueError IS NOT NULL").select("offset", "valueError").collect()
    dlq = dead_letter_rows("delta", where)["deltalake"]
    assert [(r["offset"], r["valueError"]) for r in bad] == [(r["offset"], r["valueError"]) for r in dlq]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_protobuf_change_the_table_cannot_take_fails_before_any_commit(fmt, tmp_path):
    """Protobuf alike: a field narrowed (int64 -> int32) in the next version registered by the serializer stops
    the run, naming the subject, both versions and the field; nothing is committed."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from protobuf_support import compile_protos

    wide, narrow = (compile_protos({f"{n}.proto": f'syntax = "proto3";\npackage shop;\nmessage Order {{ {t} id = 1; }}\n'})
                    [0]["shop.Order"] for n, t in (("wide", "int64"), ("narrow", "int32")))
    client = SchemaRegistryClient.new_client({"url": f"mock://lake-protobuf-narrow-{fmt}"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    root, where, written = tmp_path / "logs", str(tmp_path / "t"), []
    ser = ProtobufSerializer(wide, client, conf={"use.deprecated.format": False})
    _append_and_mirror(root, client, written, [ser(wide(id=i), ctx) for i in range(5)], b"junk")
    export(fmt, str(root), where, topics=["orders"], value_format="protobuf")
    ser = ProtobufSerializer(narrow, client, conf={"use.deprecated.format": False})
    _append_and_mirror(root, client, written, [ser(narrow(id=7), ctx)], b"junk")
    n = _n_commits(fmt, where)
    with pytest.raises(SchemaEvolutionError, match=r"field value\.id is long in version 1 of subject 'orders-value' "
                                                   r"\(schema id \d+\) but int in version 2"):
        export(fmt, str(root), where, topics=["orders"], value_format="protobuf")
    assert _n_commits(fmt, where) == n

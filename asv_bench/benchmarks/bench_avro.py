"""Typed values (issue 23): Avro values in the Schema Registry's wire format to Arrow columns.

kafkafmt's ``decode_column(format="avro")`` (the Cython kernel, one call per column) against the
peers decoding one value at a time and building the same Arrow column from their Python objects:

* fastavro's ``schemaless_reader`` (what confluent-kafka uses underneath), per value, then
  ``pyarrow.array(dicts, type=<the same struct type>)``;
* confluent-kafka's ``AvroDeserializer`` (framing, schema lookup in its client's cache, then
  fastavro), per value, then the same ``pyarrow.array``.

Two records: FLAT, 10 primitive fields (long, string, int, double, boolean, timestamp-millis,
string, float, nullable long, int); NESTED, a record with a nested record, an array of records,
an array of strings and a map of longs. Values are written once per process by fastavro (bytes
identical to confluent-kafka's serializer's) with the 5-byte framing. kafkafmt is pinned to one
thread (common.py); the peers are single-threaded. Targets: >= 20x on FLAT, >= 10x on NESTED
against both peers (``track_ratio_*``, one core against one core, ratios measured in one process).
"""

from __future__ import annotations

import datetime
import io
import json
import os

from . import common
from .common import register_ratio, require_kafkafmt

RECORDS = {"flat": 100_000, "nested": 30_000}
SCHEMA_ID = 1

FLAT = {"type": "record", "name": "Flat", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "qty", "type": "int"},
    {"name": "price", "type": "double"}, {"name": "ok", "type": "boolean"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "category", "type": "string"}, {"name": "score", "type": "float"},
    {"name": "parent", "type": ["null", "long"], "default": None}, {"name": "code", "type": "int"}]}

NESTED = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "name", "type": "string"}, {"name": "email", "type": ["null", "string"]},
        {"name": "tier", "type": "int"}]}},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}}]}

SCHEMAS = {"flat": FLAT, "nested": NESTED}
_CACHE = {}


def _record(kind, i):
    if kind == "flat":
        return {"id": i, "name": f"name-{i % 1000}", "qty": i % 100, "price": i * 0.25, "ok": i % 2 == 0,
                "ts": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i),
                "category": "electronics", "score": 0.5, "parent": None if i % 3 else i - 1, "code": -i}
    return {"id": i, "customer": {"name": f"customer-{i % 500}", "email": None if i % 4 else f"c{i}@example.com",
                                  "tier": i % 3},
            "items": [{"sku": f"SKU-{(i + j) % 997}", "qty": j + 1, "price": 9.99 * (j + 1)} for j in range(i % 4 + 1)],
            "tags": ["new", "promo", "gift"][: i % 3], "attrs": {f"k{j}": i * j for j in range(i % 3 + 1)}}


def data(kind):
    """(framed values, pyarrow binary array, fastavro parsed schema, kafkafmt registry, arrow type)."""
    if kind in _CACHE:
        return _CACHE[kind]
    import fastavro
    import pyarrow as pa
    from kafkafmt.values.registry import InlineSchemaRegistry
    from kafkafmt.values import value_type

    parsed = fastavro.parse_schema(SCHEMAS[kind])
    header = b"\x00" + SCHEMA_ID.to_bytes(4, "big")
    values = []
    for i in range(RECORDS[kind]):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, _record(kind, i))
        values.append(header + out.getvalue())
    reg = InlineSchemaRegistry({SCHEMA_ID: json.dumps(SCHEMAS[kind])})
    arrow_type = value_type("avro", registry=reg, reader_schema=SCHEMA_ID)
    _CACHE[kind] = (values, pa.array(values, pa.binary()), parsed, reg, arrow_type)
    return _CACHE[kind]


def kafkafmt_avro(kind):
    from kafkafmt.values import decode_column
    values, arr, parsed, reg, arrow_type = data(kind)
    return lambda: decode_column(arr, format="avro", registry=reg, reader_schema=SCHEMA_ID).values


def fastavro_avro(kind):
    import pyarrow as pa
    from fastavro import schemaless_reader
    values, arr, parsed, reg, arrow_type = data(kind)

    def run(values=values, parsed=parsed, BytesIO=io.BytesIO, read=schemaless_reader):
        rows = [read(BytesIO(v[5:]), parsed, None) for v in values]
        return pa.array(rows, arrow_type)
    return run


def _mock_deserializer(kind):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = SchemaRegistryClient.new_client({"url": f"mock://bench-avro-{kind}"})
    sid = client.register_schema(f"bench-{kind}-value", Schema(json.dumps(SCHEMAS[kind]), "AVRO"))
    assert sid == SCHEMA_ID, "the mock registry assigns ids from 1"
    return AvroDeserializer(client), SerializationContext(f"bench-{kind}", MessageField.VALUE)


def confluent_avro(kind):
    import pyarrow as pa
    values, arr, parsed, reg, arrow_type = data(kind)
    de, ctx = _mock_deserializer(kind)

    def run(values=values):
        return pa.array([de(v, ctx) for v in values], arrow_type)
    return run


def check_same(kind, n=2000):
    """kafkafmt's column equals both peers' (on the first n values)."""
    import pyarrow as pa
    from kafkafmt.values import decode_column
    values, arr, parsed, reg, arrow_type = data(kind)
    ours = decode_column(arr[:n], format="avro", registry=reg, reader_schema=SCHEMA_ID)
    assert ours.error_count == 0
    from fastavro import schemaless_reader
    theirs = pa.array([schemaless_reader(io.BytesIO(v[5:]), parsed, None) for v in values[:n]], arrow_type)
    de, ctx = _mock_deserializer(kind)
    theirs2 = pa.array([de(v, ctx) for v in values[:n]], arrow_type)
    for t in (theirs, theirs2):
        assert ours.values.to_pylist() == t.to_pylist(), f"{kind}: kafkafmt and a peer disagree"


def _pair(peer):
    return lambda kind: (peer(kind), kafkafmt_avro(kind))


register_ratio("avro_vs_fastavro", "Avro → Arrow × fastavro", list(SCHEMAS), _pair(fastavro_avro), family="avro",
               track="bench_avro.AvroRatios.track_ratio_vs_fastavro")
register_ratio("avro_vs_confluent", "Avro → Arrow × confluent-kafka", list(SCHEMAS), _pair(confluent_avro),
               family="avro", track="bench_avro.AvroRatios.track_ratio_vs_confluent")


def records_per_second(kind, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_avro(kind)], budget_s)
    return round(RECORDS[kind] / t)


common.register_value("avro_rate", "kafkafmt Avro records/s", list(SCHEMAS), records_per_second, "records/s",
                      family="avro", track="bench_avro.AvroRatios.track_records_per_second")


class Avro:
    """Times of each contender on each record kind."""

    params = list(SCHEMAS)
    param_names = ["record"]
    timeout = 600

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        check_same(kind)
        self.kafkafmt, self.fastavro, self.confluent = kafkafmt_avro(kind), fastavro_avro(kind), confluent_avro(kind)

    def time_kafkafmt(self, kind):
        self.kafkafmt()

    def time_fastavro(self, kind):
        self.fastavro()

    def time_confluent_kafka(self, kind):
        self.confluent()


class AvroRatios:
    """time(peer) / time(kafkafmt), interleaved in one process (common.ratio); records/s."""

    params = list(SCHEMAS)
    param_names = ["record"]
    timeout = 600

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        check_same(kind)

    def track_ratio_vs_fastavro(self, kind):
        return common.measure_registered("avro_vs_fastavro", kind)

    track_ratio_vs_fastavro.unit = "ratio"

    def track_ratio_vs_confluent(self, kind):
        return common.measure_registered("avro_vs_confluent", kind)

    track_ratio_vs_confluent.unit = "ratio"

    def track_records_per_second(self, kind):
        return records_per_second(kind)

    track_records_per_second.unit = "records/s"


# ---------------------------------------------------------------------------------------------
# end to end: a log dir with its _schemas topic -> typed Arrow table

LOG_DIR_RECORDS = 300_000
#: the end-to-end log dirs: flat records in large batches; nested records of ~184 bytes written with three
#: versions of their subject (read as the latest); flat records one per batch (as Connect's datagen and many
#: producers write them)
LOG_DIRS = ("flat", "nested3", "single")

_ITEM = {"type": "record", "name": "Item", "fields": [
    {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}
_CUSTOMER_V1 = {"type": "record", "name": "Customer", "fields": [
    {"name": "name", "type": "string"}, {"name": "email", "type": ["null", "string"]}, {"name": "tier", "type": "int"}]}
_CUSTOMER_V3 = {"type": "record", "name": "Customer", "fields": [
    {"name": "name", "type": "string"}, {"name": "email", "type": ["null", "string"]}, {"name": "tier", "type": "long"},
    {"name": "country", "type": "string", "default": "NL"}]}


def _order(customer, extra=()):
    return {"type": "record", "name": "Order", "namespace": "bench", "fields": [
        {"name": "id", "type": "long"}, {"name": "customer", "type": customer},
        {"name": "items", "type": {"type": "array", "items": _ITEM}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}}] + list(extra)}


_NOTE = {"name": "note", "type": ["null", "string"], "default": None}
#: three versions of one subject: v2 adds a note, v3 widens the customer's tier to long and adds its
#: country, the time the order was placed and its channel (an enum), all with defaults
NESTED_VERSIONS = (
    _order(_CUSTOMER_V1),
    _order(_CUSTOMER_V1, [_NOTE]),
    _order(_CUSTOMER_V3, [_NOTE, {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"},
                                  "default": 0},
                          {"name": "channel", "type": {"type": "enum", "name": "Channel",
                                                       "symbols": ["WEB", "STORE", "APP"]}, "default": "WEB"}]))


def _nested3(version, i):
    """A record of ``version`` (0, 1, 2) of NESTED_VERSIONS: ~184 bytes in the wire format on average."""
    rec = {"id": i, "customer": {"name": f"customer-{i % 500:05d} of the benchmark's",
                                 "email": None if i % 4 else f"customer{i}@example.com", "tier": i % 3},
           "items": [{"sku": f"SKU-{(i + j) % 997:06d}", "qty": j + 1, "price": 9.99 * (j + 1)}
                     for j in range(i % 5 + 3)],
           "tags": ["new", "promo", "gift"][: i % 3], "attrs": {f"k{j}": i * j for j in range(i % 3 + 1)}}
    if version >= 1:
        rec["note"] = None if i % 2 else f"a note about order {i}"
    if version >= 2:
        rec["customer"]["country"] = ["NL", "DE", "FR"][i % 3]
        rec["placed_at"] = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=i)
        rec["channel"] = ["WEB", "STORE", "APP"][i % 3]
    return rec


def _schemas_record(subject, version, sid, schema):
    key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}).encode()
    value = json.dumps({"subject": subject, "version": version, "id": sid, "schemaType": "AVRO",
                        "schema": json.dumps(schema, separators=(",", ":")), "deleted": False}).encode()
    return key, value


def log_dir_values(kind):
    """(topic, [(schema id, schema)] registered in order, the framed values) of an end-to-end log dir."""
    import fastavro

    if kind in ("flat", "single"):
        values, *_ = data("flat")
        reps = -(-LOG_DIR_RECORDS // len(values))
        return "flat", [(SCHEMA_ID, FLAT)], (values * reps)[:LOG_DIR_RECORDS]
    parsed = [fastavro.parse_schema(s) for s in NESTED_VERSIONS]
    values = []
    for i in range(LOG_DIR_RECORDS):
        v = i % 3
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed[v], _nested3(v, i))
        values.append(b"\x00" + (v + 1).to_bytes(4, "big") + out.getvalue())
    return "orders", list(enumerate(NESTED_VERSIONS, 1)), values


def typed_log_dir(kind="flat"):
    """An uncompressed log dir holding ``kind``'s topic (LOG_DIR_RECORDS values, Avro in the wire format)
    and ``_schemas`` as the registry writes it; written once per corpus cache."""
    import kafkafmt

    from .corpus import cache_dir

    root = cache_dir() / "logdirs" / f"avro-{kind}"
    if (root / ".complete").exists():
        return root
    topic, schemas, values = log_dir_values(kind)
    records = [_schemas_record(f"{topic}-value", v, sid, schema) for v, (sid, schema) in enumerate(schemas, 1)]
    kafkafmt.write_log_dir(str(root / "_schemas-0"), keys=[k for k, _ in records], values=[v for _, v in records])
    if kind == "single":
        kafkafmt.write_log_dir(str(root / f"{topic}-0"), values=values, max_records=1)
    else:
        kafkafmt.write_log_dir(str(root / f"{topic}-0"), values=values, batch_size=1 << 20)
    (root / ".complete").write_text("")
    return root


def _partition(kind):
    return typed_log_dir(kind) / ("orders-0" if kind == "nested3" else "flat-0")


def kafkafmt_log_dir(kind="flat"):
    import kafkafmt
    root = str(_partition(kind))
    return lambda: kafkafmt.read_log_dir(root, value_format="avro").to_arrow()


def kafka_python_fastavro_log_dir(kind="flat"):
    """The peers' end to end: kafka-python's record reader over the segment, fastavro per value (each
    schema id's writer schema resolved to the latest, as confluent-kafka's deserializer with a reader
    schema does), the same Arrow table's value column."""
    import fastavro
    import pyarrow as pa
    from fastavro import schemaless_reader
    from kafka.record import MemoryRecords

    from kafkafmt.values import value_type
    from kafkafmt.values.registry import open_registry

    root = typed_log_dir(kind)
    topic, schemas, _ = log_dir_values_meta(kind)
    seg = (_partition(kind) / "00000000000000000000.log").read_bytes()
    writers = {sid: fastavro.parse_schema(schema) for sid, schema in schemas}
    reader = writers[schemas[-1][0]] if len(schemas) > 1 else None
    arrow_type = value_type("avro", registry=open_registry(str(root)), topic=topic)

    def run(BytesIO=io.BytesIO, read=schemaless_reader):
        rows, offsets = [], []
        records = MemoryRecords(seg)
        while records.has_next():
            for r in records.next_batch():
                offsets.append(r.offset)
                v = r.value
                rows.append(read(BytesIO(v[5:]), writers[int.from_bytes(v[1:5], "big")], reader))
        return pa.table({"value": pa.array(rows, arrow_type), "offset": pa.array(offsets, pa.int64())})
    return run


def log_dir_values_meta(kind):
    """(topic, schemas, None): what `log_dir_values` registers, without writing the values."""
    if kind in ("flat", "single"):
        return "flat", [(SCHEMA_ID, FLAT)], None
    return "orders", list(enumerate(NESTED_VERSIONS, 1)), None


def check_log_dir(kind, n=3000):
    """The typed table equals the peers' values (on the first n records)."""
    mine = kafkafmt_log_dir(kind)().column("value").slice(0, n).to_pylist()
    theirs = kafka_python_fastavro_log_dir(kind)()
    assert mine == theirs.column("value").slice(0, n).to_pylist(), f"{kind}: kafkafmt and fastavro disagree"


def log_dir_records_per_second(kind="flat", budget_s=None):
    t, = common.interleaved_medians([kafkafmt_log_dir(kind)], budget_s)
    return round(LOG_DIR_RECORDS / t)


def log_dir_peak_ratio(kind="flat"):
    """Peak memory the read adds ÷ the bytes of the table it returns."""
    peak = common.median_peak_delta("bench_avro:kafkafmt_log_dir_call", kind)
    return round(peak / _output_bytes(kind), 3)


def kafkafmt_log_dir_call(kind="flat"):
    return kafkafmt_log_dir(kind)


def _output_bytes(kind="flat"):
    return kafkafmt_log_dir(kind)().nbytes


common.register_value("avro_log_dir_rate", "read_log_dir(value_format='avro') records/s", list(LOG_DIRS),
                      log_dir_records_per_second, "records/s", family="avro",
                      track="bench_avro.AvroLogDir.track_records_per_second")
register_ratio("avro_log_dir_vs_kafka_python", "read_log_dir(value_format='avro') × kafka-python + fastavro",
               list(LOG_DIRS), lambda kind: (kafka_python_fastavro_log_dir(kind), kafkafmt_log_dir(kind)),
               family="avro", track="bench_avro.AvroLogDir.track_ratio_vs_kafka_python_fastavro")
common.register_value("avro_log_dir_peak", "read_log_dir(value_format='avro') peak memory ÷ output",
                      list(LOG_DIRS), log_dir_peak_ratio, "ratio", better="lower", family="avro",
                      track="bench_avro.AvroLogDir.track_peak_over_output")


class AvroLogDir:
    """End to end: an uncompressed log dir with its _schemas topic -> a typed Arrow table."""

    params = list(LOG_DIRS)
    param_names = ["log_dir"]
    timeout = 900

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        check_log_dir(kind)
        self.read = kafkafmt_log_dir(kind)

    def time_kafkafmt_read_log_dir(self, kind):
        self.read()

    def track_records_per_second(self, kind):
        return log_dir_records_per_second(kind)

    track_records_per_second.unit = "records/s"

    def track_ratio_vs_kafka_python_fastavro(self, kind):
        return common.measure_registered("avro_log_dir_vs_kafka_python", kind)

    track_ratio_vs_kafka_python_fastavro.unit = "ratio"

    def track_peak_over_output(self, kind):
        return log_dir_peak_ratio(kind)

    track_peak_over_output.unit = "ratio"


# ---------------------------------------------------------------------------------------------
# many small partitions of typed values: MANY_PARTITIONS partitions of MANY_RECORDS nested3 values each (one small
# segment a partition, as a topic of many partitions and little traffic has them) and _schemas

MANY_PARTITIONS = 1000
MANY_RECORDS = 20


def many_typed_log_dir():
    """The log dir of many small typed partitions, written once per corpus cache."""
    import kafkafmt

    from .corpus import cache_dir

    root = cache_dir() / "logdirs" / "avro-many"
    if (root / ".complete").exists():
        return root
    topic, schemas, values = log_dir_values("nested3")
    records = [_schemas_record(f"{topic}-value", v, sid, schema) for v, (sid, schema) in enumerate(schemas, 1)]
    kafkafmt.write_log_dir(str(root / "_schemas-0"), keys=[k for k, _ in records], values=[v for _, v in records])
    for p in range(MANY_PARTITIONS):
        kafkafmt.write_log_dir(str(root / f"{topic}-{p}"), values=values[p * MANY_RECORDS:(p + 1) * MANY_RECORDS])
    (root / ".complete").write_text("")
    return root


def kafkafmt_many_typed():
    import kafkafmt

    root = str(many_typed_log_dir())
    return lambda: kafkafmt.read_log_dirs(root, topics="orders", value_format="avro", threads=1).to_arrow()


def kafka_python_fastavro_many():
    """The peers: kafka-python's record reader over each partition's segment, fastavro per value (each schema id's
    writer schema resolved to the latest), one Arrow table of the values and offsets."""
    import fastavro
    import pyarrow as pa
    from fastavro import schemaless_reader
    from kafka.record import MemoryRecords

    from kafkafmt.values import value_type
    from kafkafmt.values.registry import open_registry

    root = many_typed_log_dir()
    topic, schemas, _ = log_dir_values_meta("nested3")
    segs = [(root / f"{topic}-{p}" / "00000000000000000000.log").read_bytes() for p in range(MANY_PARTITIONS)]
    writers = {sid: fastavro.parse_schema(schema) for sid, schema in schemas}
    reader = writers[schemas[-1][0]]
    arrow_type = value_type("avro", registry=open_registry(str(root)), topic=topic)

    def run(BytesIO=io.BytesIO, read=schemaless_reader):
        rows, offsets, parts = [], [], []
        for p, seg in enumerate(segs):
            records = MemoryRecords(seg)
            while records.has_next():
                for r in records.next_batch():
                    offsets.append(r.offset)
                    parts.append(p)
                    v = r.value
                    rows.append(read(BytesIO(v[5:]), writers[int.from_bytes(v[1:5], "big")], reader))
        return pa.table({"value": pa.array(rows, arrow_type), "partition": pa.array(parts, pa.int32()),
                         "offset": pa.array(offsets, pa.int64())})
    return run


def check_many_typed():
    mine = kafkafmt_many_typed()()
    theirs = kafka_python_fastavro_many()()
    assert mine.column("value").to_pylist() == theirs.column("value").to_pylist(), "kafkafmt and fastavro disagree"
    assert mine.column("partition").to_pylist() == theirs.column("partition").to_pylist()


register_ratio("avro_many_vs_kafka_python",
               "read_log_dirs(value_format='avro') of 1,000 small partitions × kafka-python + fastavro", [MANY_PARTITIONS],
               lambda _: (kafka_python_fastavro_many(), kafkafmt_many_typed()), family="avro",
               track="bench_avro.AvroManyPartitions.track_ratio_vs_kafka_python_fastavro")


class AvroManyPartitions:
    """Many small partitions of typed values (1,000 of 20 nested records) -> one typed Arrow table."""

    params = [MANY_PARTITIONS]
    param_names = ["partitions"]
    timeout = 900

    def setup(self, n):
        require_kafkafmt()
        common.note_quick()
        check_many_typed()

    def track_ratio_vs_kafka_python_fastavro(self, n):
        return common.measure_registered("avro_many_vs_kafka_python", n)

    track_ratio_vs_kafka_python_fastavro.unit = "ratio"


# ---------------------------------------------------------------------------------------------
# typed text export: kafkafmt export --value-format avro to JSON lines / CSV, against kafka-python's record
# reader with fastavro per value and json.dumps per record (csv's writer for CSV)

EXPORT_FORMATS = ("jsonl", "csv")


def _export_target(fmt):
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"kafkafmt-bench-export-{os.getpid()}.{fmt}")


def kafkafmt_export(fmt):
    from kafkafmt.cli import main

    root = str(typed_log_dir("flat"))
    target = _export_target(fmt)
    return lambda: main(["export", root, "--topics", "flat", "--value-format", "avro", "--to", target, "-q"])


def kafka_python_fastavro_export(fmt):
    """The peers' typed export: each record read by kafka-python, its value by fastavro, the row written
    with json.dumps (the value nested in JSON lines, its JSON text in CSV), as kafkafmt writes it."""
    import base64
    import csv
    import datetime as dt

    from fastavro import schemaless_reader
    from kafka.record import MemoryRecords

    seg = (_partition("flat") / "00000000000000000000.log").read_bytes()
    parsed = data("flat")[2]
    target = _export_target("peer-" + fmt)
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
               "valueSchemaId", "valueError"]

    def plain(o):                          # datetimes as their epoch milliseconds, as Avro's JSON has them
        return int(o.timestamp() * 1000) if isinstance(o, dt.datetime) else str(o)

    def run(BytesIO=io.BytesIO, read=schemaless_reader, dumps=json.dumps, b64=base64.b64encode):
        with open(target, "w", encoding="utf-8", newline="") as f:
            out = csv.writer(f, lineterminator="\n") if fmt == "csv" else None
            if out is not None:
                out.writerow(columns)
            records = MemoryRecords(seg)
            while records.has_next():
                for r in records.next_batch():
                    v = r.value
                    value = read(BytesIO(v[5:]), parsed, None)
                    key = None if r.key is None else b64(r.key).decode()
                    headers = [{"key": k, "value": b64(x).decode()} for k, x in r.headers] or None
                    sid = int.from_bytes(v[1:5], "big")
                    if out is None:
                        f.write(dumps({"key": key, "value": value, "topic": "flat", "partition": 0,
                                       "offset": r.offset, "timestamp": r.timestamp,
                                       "timestampType": r.timestamp_type, "headers": headers,
                                       "valueSchemaId": sid, "valueError": None},
                                      separators=(",", ":"), default=plain) + "\n")
                    else:
                        out.writerow([key or "", dumps(value, separators=(",", ":"), default=plain), "flat", 0,
                                      r.offset, r.timestamp, r.timestamp_type,
                                      "" if headers is None else dumps(headers), sid, ""])
    return run


def export_records_per_second(fmt, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_export(fmt)], budget_s)
    return round(LOG_DIR_RECORDS / t)


register_ratio("avro_export_vs_kafka_python", "export --value-format avro × kafka-python + fastavro + json",
               list(EXPORT_FORMATS), lambda fmt: (kafka_python_fastavro_export(fmt), kafkafmt_export(fmt)),
               family="avro", track="bench_avro.AvroExport.track_ratio_vs_kafka_python_fastavro_json")
common.register_value("avro_export_rate", "export --value-format avro records/s", list(EXPORT_FORMATS),
                      export_records_per_second, "records/s", family="avro",
                      track="bench_avro.AvroExport.track_records_per_second")


class AvroExport:
    """kafkafmt export of the flat log dir, typed, to JSON lines and CSV, against the peers' loop."""

    params = list(EXPORT_FORMATS)
    param_names = ["format"]
    timeout = 900

    def setup(self, fmt):
        require_kafkafmt()
        common.note_quick()
        self.export = kafkafmt_export(fmt)

    def time_kafkafmt_export(self, fmt):
        self.export()

    def track_records_per_second(self, fmt):
        return export_records_per_second(fmt)

    track_records_per_second.unit = "records/s"

    def track_ratio_vs_kafka_python_fastavro_json(self, fmt):
        return common.measure_registered("avro_export_vs_kafka_python", fmt)

    track_ratio_vs_kafka_python_fastavro_json.unit = "ratio"


if __name__ == "__main__":   # python -m benchmarks.bench_avro: medians and ratios without asv
    for kind in SCHEMAS:
        check_same(kind)
        funcs = [kafkafmt_avro(kind), fastavro_avro(kind), confluent_avro(kind)]
        med = common.interleaved_medians(funcs)
        print(f"{kind}: {RECORDS[kind]} values; kafkafmt {med[0] * 1e3:.2f} ms, fastavro {med[1] * 1e3:.1f} ms "
              f"({med[1] / med[0]:.1f}x), confluent-kafka {med[2] * 1e3:.1f} ms ({med[2] / med[0]:.1f}x); "
              f"kafkafmt {RECORDS[kind] / med[0] / 1e6:.2f} M values/s")

    for kind in LOG_DIRS:
        check_log_dir(kind)
        peer, mine = kafka_python_fastavro_log_dir(kind), kafkafmt_log_dir(kind)
        med = common.interleaved_medians([mine, peer])
        print(f"read_log_dir(value_format='avro'), {LOG_DIR_RECORDS} {kind} records: kafkafmt {med[0] * 1e3:.1f} ms "
              f"({LOG_DIR_RECORDS / med[0] / 1e6:.2f} M records/s), kafka-python + fastavro {med[1] * 1e3:.0f} ms "
              f"({med[1] / med[0]:.1f}x); peak memory / output {log_dir_peak_ratio(kind):.2f}")
    for fmt in EXPORT_FORMATS:
        med = common.interleaved_medians([kafkafmt_export(fmt), kafka_python_fastavro_export(fmt)])
        print(f"export --value-format avro to {fmt}, {LOG_DIR_RECORDS} flat records: kafkafmt {med[0]:.2f} s "
              f"({LOG_DIR_RECORDS / med[0] / 1e3:.0f} k records/s), kafka-python + fastavro + json "
              f"{med[1]:.2f} s ({med[1] / med[0]:.1f}x)")

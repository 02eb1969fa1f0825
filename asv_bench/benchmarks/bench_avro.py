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


def typed_log_dir():
    """An uncompressed log dir holding ``flat`` (LOG_DIR_RECORDS flat records, Avro in the wire
    format) and ``_schemas`` as the registry writes it; written once per corpus cache."""
    import kafkafmt

    from .corpus import cache_dir

    root = cache_dir() / "logdirs" / "avro-flat"
    if (root / ".complete").exists():
        return root
    values, *_ = data("flat")
    reps = -(-LOG_DIR_RECORDS // len(values))
    key = json.dumps({"keytype": "SCHEMA", "subject": "flat-value", "version": 1, "magic": 1}).encode()
    value = json.dumps({"subject": "flat-value", "version": 1, "id": SCHEMA_ID, "schemaType": "AVRO",
                        "schema": json.dumps(FLAT, separators=(",", ":")), "deleted": False}).encode()
    kafkafmt.write_log_dir(str(root / "_schemas-0"), keys=[key], values=[value])
    kafkafmt.write_log_dir(str(root / "flat-0"), values=(values * reps)[:LOG_DIR_RECORDS], batch_size=1 << 20)
    (root / ".complete").write_text("")
    return root


def kafkafmt_log_dir():
    import kafkafmt
    root = str(typed_log_dir() / "flat-0")
    return lambda: kafkafmt.read_log_dir(root, value_format="avro").to_arrow()


def kafka_python_fastavro_log_dir():
    """The peers' end to end: kafka-python's record reader over the segment, fastavro per value,
    the same Arrow table's value column."""
    import pyarrow as pa
    from fastavro import schemaless_reader
    from kafka.record import MemoryRecords

    root = typed_log_dir() / "flat-0"
    seg = (root / "00000000000000000000.log").read_bytes()
    parsed = data("flat")[2]
    arrow_type = data("flat")[4]

    def run(BytesIO=io.BytesIO, read=schemaless_reader):
        rows, offsets = [], []
        records = MemoryRecords(seg)
        while records.has_next():
            for r in records.next_batch():
                offsets.append(r.offset)
                rows.append(read(BytesIO(r.value[5:]), parsed, None))
        return pa.table({"value": pa.array(rows, arrow_type), "offset": pa.array(offsets, pa.int64())})
    return run


def log_dir_records_per_second(_=None, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_log_dir()], budget_s)
    return round(LOG_DIR_RECORDS / t)


def log_dir_peak_ratio(_=None):
    """Peak memory the read adds ÷ the bytes of the table it returns."""
    peak = common.median_peak_delta("bench_avro:kafkafmt_log_dir_call")
    return round(peak / _output_bytes(), 3)


def kafkafmt_log_dir_call():
    return kafkafmt_log_dir()


def _output_bytes():
    return kafkafmt_log_dir()().nbytes


common.register_value("avro_log_dir_rate", "read_log_dir(value_format='avro') records/s", ["flat"],
               log_dir_records_per_second, "records/s", family="avro",
               track="bench_avro.AvroLogDir.track_records_per_second")
register_ratio("avro_log_dir_vs_kafka_python", "read_log_dir(value_format='avro') × kafka-python + fastavro",
               ["flat"], lambda _: (kafka_python_fastavro_log_dir(), kafkafmt_log_dir()), family="avro",
               track="bench_avro.AvroLogDir.track_ratio_vs_kafka_python_fastavro")
common.register_value("avro_log_dir_peak", "read_log_dir(value_format='avro') peak memory ÷ output", ["flat"],
               log_dir_peak_ratio, "ratio", better="lower", family="avro",
               track="bench_avro.AvroLogDir.track_peak_over_output")


class AvroLogDir:
    """End to end: an uncompressed log dir with its _schemas topic -> a typed Arrow table."""

    timeout = 900

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        self.read = kafkafmt_log_dir()

    def time_kafkafmt_read_log_dir(self):
        self.read()

    def track_records_per_second(self):
        return log_dir_records_per_second()

    track_records_per_second.unit = "records/s"

    def track_ratio_vs_kafka_python_fastavro(self):
        return common.measure_registered("avro_log_dir_vs_kafka_python", "flat")

    track_ratio_vs_kafka_python_fastavro.unit = "ratio"

    def track_peak_over_output(self):
        return log_dir_peak_ratio()

    track_peak_over_output.unit = "ratio"


if __name__ == "__main__":   # python -m benchmarks.bench_avro: medians and ratios without asv
    for kind in SCHEMAS:
        check_same(kind)
        funcs = [kafkafmt_avro(kind), fastavro_avro(kind), confluent_avro(kind)]
        med = common.interleaved_medians(funcs)
        print(f"{kind}: {RECORDS[kind]} values; kafkafmt {med[0] * 1e3:.2f} ms, fastavro {med[1] * 1e3:.1f} ms "
              f"({med[1] / med[0]:.1f}x), confluent-kafka {med[2] * 1e3:.1f} ms ({med[2] / med[0]:.1f}x); "
              f"kafkafmt {RECORDS[kind] / med[0] / 1e6:.2f} M values/s")

    peer, mine = kafka_python_fastavro_log_dir(), kafkafmt_log_dir()
    med = common.interleaved_medians([mine, peer])
    print(f"read_log_dir(value_format='avro'), {LOG_DIR_RECORDS} flat records: kafkafmt {med[0] * 1e3:.1f} ms "
          f"({LOG_DIR_RECORDS / med[0] / 1e6:.2f} M records/s), kafka-python + fastavro {med[1] * 1e3:.0f} ms "
          f"({med[1] / med[0]:.1f}x); peak memory / output {log_dir_peak_ratio():.2f}")

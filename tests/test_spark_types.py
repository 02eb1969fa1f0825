"""Every Arrow type kafkafmt gives, as Spark holds it (kafkafmt.spark.typedcols, the table in
docs/guide/spark.md): one topic each of Avro, Protobuf and JSON Schema values holding every type
of the format -- logical types (decimal, uuid, date, time-millis/-micros, timestamp-* and
local-timestamp-*, duration, fixed, enum), maps, unions, Google's well-known types (Timestamp,
Duration, wrappers, Struct, Empty) -- written by confluent-kafka's serializers and read back by
Spark; each value equals confluent-kafka's deserializer's after the documented conversion
(`spark_of`, written from the table, not from the code)."""
import datetime
import decimal
import json
import math

import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

import kafkafmt  # noqa: E402
from kafkafmt.values import value_type  # noqa: E402
from kafkafmt.values.avro import parse_schema  # noqa: E402
from kafkafmt.values.registry import open_registry  # noqa: E402

import test_avro  # noqa: E402
import test_json  # noqa: E402
import test_protobuf  # noqa: E402
from avro_support import compact, describe, expected_value  # noqa: E402
from protobuf_support import expected, mirror_registry, to_dict  # noqa: E402

N = 25
EPOCH = datetime.datetime(1970, 1, 1)
_UNITS = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 1}


class JsonText:
    """An expected JSON text: Spark's string, parsed, equals ``value``."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"JsonText({self.value!r})"


def _us(v, unit, floor):
    """An integer in ``unit`` as microseconds: nanoseconds floored, or dropped toward zero."""
    if unit != "ns":
        return v * _UNITS[unit]
    return v // 1000 if floor else int(v / 1000) if abs(v) < 2 ** 52 else (abs(v) // 1000) * (1 if v >= 0 else -1)


def spark_of(v, t):
    """A value in kafkafmt's Arrow shape (temporal values as integers in their unit, maps as dicts
    or pairs) as Spark gives it, by the table of docs/guide/spark.md."""
    if v is None or pa.types.is_null(t):
        return None
    if pa.types.is_dictionary(t):
        return str(v)
    if pa.types.is_struct(t) and t.num_fields == 0:          # (Spark's from_protobuf's placeholder field)
        return {"__dummy_field_in_empty_struct": None}
    if pa.types.is_struct(t):
        return {f.name: spark_of(v.get(f.name), f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [spark_of(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        return {k: spark_of(x, t.item_type) for k, x in (v.items() if isinstance(v, dict) else v)}
    if pa.types.is_uint64(t):
        return decimal.Decimal(v)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(v)
    if pa.types.is_decimal(t):
        return format(v, "f") if t.precision > 38 else v        # Spark's decimals stop at 38 digits: text
    if pa.types.is_date32(t):
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=v)
    if pa.types.is_time(t):                  # microseconds after midnight
        return _us(v, t.unit, floor=True)
    if pa.types.is_timestamp(t):
        us = _us(v, t.unit, floor=True)
        if t.tz is None:
            return EPOCH + datetime.timedelta(microseconds=us)
        # an instant: PySpark shows it as the local time of its process
        return datetime.datetime.fromtimestamp(us // 1_000_000).replace(microsecond=us % 1_000_000)
    if pa.types.is_duration(t):
        return datetime.timedelta(microseconds=_us(v, t.unit, floor=False))
    if t == pa.month_day_nano_interval():
        return {"months": v.months, "days": v.days, "nanoseconds": v.nanoseconds}
    if pa.types.is_string(t) and not isinstance(v, str):
        return JsonText(v)
    return v


def match(got, want, path="value"):
    """Spark's value ``got`` equals ``want`` (NaN equal to NaN; bytearray as bytes)."""
    if isinstance(want, JsonText):
        assert json.loads(got) == want.value, path
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{path}: {got!r} != {want!r}"
        for k in want:
            match(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for i, (a, b) in enumerate(zip(got, want)):
            match(a, b, f"{path}[{i}]")
    elif isinstance(want, float) and math.isnan(want):
        assert isinstance(got, float) and math.isnan(got), path
    elif isinstance(got, bytearray):
        assert bytes(got) == want, path
    else:
        assert got == want and type(got) is type(want), f"{path}: {got!r} != {want!r}"


def _ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    """(root, {topic: confluent-kafka's deserialized values in kafkafmt's Arrow shape})."""
    client = SchemaRegistryClient.new_client({"url": "mock://spark-types"})
    avro_text = compact(test_avro.EVERYTHING)
    avro_ser = AvroSerializer(client, avro_text)
    avro = [avro_ser(test_avro.everything(i), _ctx("avro-all")) for i in range(N)]
    E = test_protobuf.classes()["acme.v1.Everything"]
    pb_ser = ProtobufSerializer(E, client, conf={"use.deprecated.format": False})
    proto = [pb_ser(test_protobuf.everything(i), _ctx("proto-all")) for i in range(N)]
    json_ser = JSONSerializer(json.dumps(test_json.ORDER), client)
    js = [json_ser(test_json.order(i), _ctx("json-all")) for i in range(N)]
    root = tmp_path_factory.mktemp("sparktypes")
    mirror_registry(client, str(root))
    for topic, values in (("avro-all", avro), ("proto-all", proto), ("json-all", js)):
        with kafkafmt.LogWriter(f"{root}/{topic}-0") as w:
            w.append(values=values)
    # confluent-kafka's deserializers, then kafkafmt's Arrow shape (tests/avro_support.py,
    # tests/protobuf_support.py, tests/test_json.py: by the schema alone)
    avro_de = AvroDeserializer(client)
    t = describe(parse_schema(avro_text))
    pb_de = ProtobufDeserializer(E, conf={"use.deprecated.format": False})
    json_de = JSONDeserializer(json.dumps(test_json.ORDER))
    want = {"avro-all": [expected_value(avro_de(v, _ctx("avro-all")), t) for v in avro],
            "proto-all": [expected(to_dict(pb_de(v, _ctx("proto-all"))), E.DESCRIPTOR) for v in proto],
            "json-all": [test_json.expected_order(json_de(v, _ctx("json-all"))) for v in js]}
    return root, want


FORMATS = {"avro-all": "avro", "proto-all": "protobuf", "json-all": "json-schema"}


@pytest.mark.parametrize("topic", list(FORMATS))
def test_every_type_in_spark_equals_the_deserializers(every_type, spark, topic):
    root, want = every_type
    fmt = FORMATS[topic]
    arrow = value_type(fmt, registry=open_registry(None, roots=str(root)), topic=topic)
    df = spark.read.format("kafka-segments").option("subscribe", topic).option("valueFormat", fmt).load(str(root))
    rows = df.orderBy("offset").select("value", "valueError").collect()
    assert len(rows) == N and all(r["valueError"] is None for r in rows)
    for i, (row, w) in enumerate(zip(rows, want[topic])):
        if topic != "avro-all":                 # (Protobuf's and JSON's expected times are nanoseconds)
            w = in_units(w, arrow)
        match(row["value"].asDict(recursive=True), spark_of(w, arrow), f"{topic}[{i}]")


def in_units(v, t):
    """Expected values whose times are nanoseconds (cut to the column's unit) as integers in the unit."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: in_units(v.get(f.name), f.type) for f in t}
    if pa.types.is_list(t):
        return [in_units(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        return {k: in_units(x, t.item_type) for k, x in (v.items() if isinstance(v, dict) else v)}
    if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "us":
        assert v % 1000 == 0
        return v // 1000
    return v


def test_spark_types_of_the_table(every_type, spark):
    root, _ = every_type

    def value_schema(topic):
        df = spark.read.format("kafka-segments").option("subscribe", topic).option("valueFormat", FORMATS[topic])
        return {f.name: f.dataType.simpleString() for f in df.load(str(root)).schema["value"].dataType.fields}

    avro = value_schema("avro-all")
    assert avro["tms"] == avro["tus"] == "bigint"                        # microseconds after midnight
    assert avro["tsms"] == avro["tsns"] == "timestamp" and avro["ltms"] == avro["ltus"] == "timestamp_ntz"
    assert avro["dur"] == "struct<months:int,days:int,nanoseconds:bigint>"
    assert avro["big"] == "string" and avro["dec"] == "decimal(12,3)" and avro["decf"] == "decimal(18,2)"
    assert avro["fx"] == avro["uidf"] == "binary" and avro["uid"] == avro["e"] == "string"
    assert avro["n"] == "void" and avro["day"] == "date"
    assert avro["u"].startswith("struct<member0:int,member1:string,member2:struct<")
    assert avro["mp"] == "map<string,string>"
    proto = value_schema("proto-all")
    assert proto["u64"] == proto["f64"] == "decimal(20,0)" and proto["u32"] == proto["f32"] == "bigint"
    assert proto["ts"] == "timestamp" and proto["dur"] == "interval day to second"
    assert proto["w_i64"] == "bigint" and proto["meta"] == "string" and proto["nothing"] == "struct<__dummy_field_in_empty_struct:string>"
    assert proto["color"] == "string" and proto["stamps"] == "map<string,timestamp>"
    js = value_schema("json-all")
    assert js["created"] == "timestamp" and js["day"] == "date" and js["status"] == "string"
    assert js["attrs"] == "map<string,bigint>"


def test_nanoseconds_are_floored_as_spark_reads_a_timestamp():
    """A Timestamp before 1970 with nanoseconds: Spark's from_protobuf floors it to the microsecond
    (seconds * 1e6 + nanos / 1000, nanos >= 0); Arrow's cast would truncate it toward zero."""
    from kafkafmt.spark.typedcols import spark_column

    ns = -1_999_999_500                      # Timestamp(seconds=-2, nanos=500)
    ts = pa.array([ns, 1_500, None], pa.timestamp("ns", tz="UTC"))
    got = spark_column(pa.StructArray.from_arrays([ts], names=["t"])).field(0).cast(pa.int64()).to_pylist()
    assert got == [-2 * 1_000_000 + 500 // 1000, 1, None]
    assert pa.array([ns], pa.timestamp("ns")).cast(pa.timestamp("us"), safe=False).cast(pa.int64())[0].as_py() \
        == -1_999_999                         # (what a plain cast gives)
    dur = pa.array([-1_500], pa.duration("ns"))
    assert spark_column(dur).cast(pa.int64()).to_pylist() == [-1]   # a Duration: toward zero, as from_protobuf



@pytest.mark.parametrize("topic", list(FORMATS))
def test_every_type_is_counted_filtered_grouped_joined_and_written(every_type, spark, topic, tmp_path):
    """In a session with Spark's defaults for its types (no spark.sql.timeType.enabled: Spark's
    time type is a preview there, and a frame holding one can be collected but not counted or
    written), every typed column takes count, a filter, groupBy, a join and a Parquet write."""
    assert spark.conf.get("spark.sql.timeType.enabled") == "false"
    root, want = every_type
    df = spark.read.format("kafka-segments").option("subscribe", topic).option("valueFormat", FORMATS[topic]) \
        .load(str(root))
    assert df.count() == N and df.where("offset >= 5").count() == N - 5
    assert df.join(df.select("offset"), "offset").count() == N
    if topic == "avro-all":         # the time columns themselves, against the deserializer's values
        tus = [spark_of(w, value_type("avro", registry=open_registry(None, roots=str(root)), topic=topic))["tus"]
               for w in want[topic]]
        cut = sorted(tus)[N // 2]
        assert df.where(f"value.tus >= {cut}").count() == sum(t >= cut for t in tus)
        assert {r[0]: r[1] for r in df.groupBy("value.tus").count().collect()} == \
            {t: tus.count(t) for t in set(tus)}
    df.write.parquet(str(tmp_path / "out"))
    back = spark.read.parquet(str(tmp_path / "out"))
    assert back.schema == df.schema
    for a, b in zip(sorted(back.collect(), key=lambda r: r["offset"]), df.orderBy("offset").collect()):
        match(a.asDict(recursive=True), b.asDict(recursive=True))          # (NaN equal to NaN)

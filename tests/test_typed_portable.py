"""Avro durations and decimals of more than 38 digits through every door.

The library's Arrow (``to_arrow()``) keeps Arrow's exact types: a duration is a month_day_nano_interval, a
decimal of p > 38 a decimal256. Arrow's other readers do not all hold them -- DuckDB refuses a decimal256,
Polars panics on both (pyo3's PanicException, which ``except Exception`` does not catch), Parquet cannot
store an interval -- so wherever kafkafmt hands data to another engine or writes a file (the PyCapsule
hand-off of Records and streams, the Polars scan and DuckDB over it, the Parquet and Arrow exports) a
duration is struct<months, days, nanoseconds> and a wide decimal its exact text, as Spark, Delta and
Iceberg hold them (kafkafmt.record.portable_table). Values are written by confluent-kafka's
AvroSerializer and compared with its AvroDeserializer's, value by value.
"""
import decimal

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt
import kafkafmt.polars as kpl
from kafkafmt.record import portable_column, portable_table

from avro_support import RegistryMirror

DURATION = {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}
WIDE = {"type": "record", "name": "Wide", "namespace": "acme", "fields": [
    {"name": "id", "type": "long"},
    {"name": "dur", "type": DURATION},
    {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
    {"name": "bigf", "type": {"type": "fixed", "name": "Big26", "size": 26, "logicalType": "decimal",
                              "precision": 60, "scale": 10}},
    {"name": "small", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "durs", "type": {"type": "array", "items": "Dur"}},
    {"name": "odur", "type": ["null", "Dur"], "default": None}]}
N = 24
TOPIC = "wide"


def _dur(months, days, millis):
    return months.to_bytes(4, "little") + days.to_bytes(4, "little") + millis.to_bytes(4, "little")


def _value(i):
    sign = -1 if i % 2 else 1
    return {"id": i,
            "dur": _dur(i * 7, 2 ** 31 - 1 - i if i % 5 == 0 else i, 2 ** 32 - 1 - i if i % 3 == 0 else i * 1000),
            "big": decimal.Decimal(sign * (10 ** 39 + i * 10 ** 20 + i)).scaleb(-2),         # 40 digits
            "bigf": decimal.Decimal(sign * (10 ** 59 - i)).scaleb(-10),                      # 60 digits
            "small": decimal.Decimal(sign * (i * 1234567 + 1)).scaleb(-3),
            "durs": [_dur(j, j + 1, j * 2) for j in range(i % 4)],
            "odur": None if i % 4 == 1 else _dur(1, 2, 3)}


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """(root, confluent-kafka's AvroDeserializer's values)."""
    root = tmp_path_factory.mktemp("wide") / "logs"
    m = RegistryMirror()
    m.register(f"{TOPIC}-value", WIDE)
    m.write(root)
    ser = m.serializer(WIDE, topic=TOPIC)
    raw = [ser(_value(i)) for i in range(N)]
    kafkafmt.write_log_dir(str(root / f"{TOPIC}-0"), values=raw)
    de = m.deserializer(topic=TOPIC)
    return root, [de(v) for v in raw]


def _interval(b, portable):
    months, days, millis = (int.from_bytes(b[k:k + 4], "little") for k in (0, 4, 8))
    if portable:
        return {"months": months, "days": days, "nanoseconds": millis * 1_000_000}
    return pa.MonthDayNano([months, days, millis * 1_000_000])


def _expected(v, portable):
    """The deserializer's value as the door gives it: Arrow's own types, or the portable ones."""
    def wide_decimal(d):
        return format(d, "f") if portable else d

    return {"id": v["id"], "dur": _interval(v["dur"], portable), "big": wide_decimal(v["big"]),
            "bigf": wide_decimal(v["bigf"]), "small": v["small"],
            "durs": [_interval(d, portable) for d in v["durs"]],
            "odur": None if v["odur"] is None else _interval(v["odur"], portable)}


def _values(table):
    return table.sort_by("offset").column("value").to_pylist()


def test_the_library_keeps_arrows_exact_types(wide):
    root, theirs = wide
    table = kafkafmt.read_log_dirs(str(root), topics=[TOPIC], value_format="avro").to_arrow()
    t = table.schema.field("value").type
    assert t.field("dur").type == pa.month_day_nano_interval() and t.field("big").type == pa.decimal256(40, 2)
    assert table.column("valueError").null_count == N
    assert _values(table) == [_expected(v, portable=False) for v in theirs]


def test_the_arrow_hand_off_gives_types_every_engine_holds(wide):
    root, theirs = wide
    want = [_expected(v, portable=True) for v in theirs]
    recs = kafkafmt.read_log_dirs(str(root), topics=[TOPIC], value_format="avro")
    assert _values(pa.table(recs)) == want
    assert _values(pl.DataFrame(recs).to_arrow()) == want
    assert _values(duckdb.sql("SELECT * FROM recs").to_arrow_table()) == want
    stream = kafkafmt.iter_log_dirs(str(root), topics=[TOPIC], value_format="avro")
    assert stream.schema == recs.to_arrow().schema                     # the stream's own schema: Arrow's
    assert _values(duckdb.sql("SELECT * FROM stream").to_arrow_table()) == want
    stream = kafkafmt.iter_log_dirs(str(root), topics=[TOPIC], value_format="avro")
    assert _values(pl.DataFrame(stream).to_arrow()) == want


def test_the_polars_scan_and_duckdb_over_it(wide):
    root, theirs = wide
    want = [_expected(v, portable=True) for v in theirs]
    lf = kpl.scan_log_dirs(str(root), topics=[TOPIC], value_format="avro")
    assert _values(lf.collect().to_arrow()) == want
    assert _values(duckdb.sql("SELECT * FROM lf").to_arrow_table()) == want
    # a query on the wide columns themselves: the durations' fields, the decimals' exact texts
    got = duckdb.sql("SELECT value.id, value.dur.nanoseconds, value.big FROM lf WHERE value.id >= 20 "
                     "ORDER BY 1").fetchall()
    assert got == [(w["id"], w["dur"]["nanoseconds"], w["big"]) for w in want[20:]]


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_export_writes_them(wide, tmp_path, fmt):
    import kcli

    root, theirs = wide
    out = tmp_path / f"wide.{fmt}"
    kcli.run("export", root, "--topics", TOPIC, "--value-format", "avro", "--format", fmt, "--to", out, check=0)
    table = pq.read_table(out) if fmt == "parquet" else pa.ipc.open_file(out).read_all()
    assert _values(table) == [_expected(v, portable=True) for v in theirs]
    if fmt == "parquet":           # and another engine reads the file
        assert duckdb.sql(f"SELECT count(*), max(value.dur.days) FROM '{out}'").fetchall() == \
            [(N, max(_expected(v, True)["dur"]["days"] for v in theirs))]


def test_portable_columns_keep_nulls_slices_and_nesting():
    d = [decimal.Decimal("1.50"), None, decimal.Decimal("-2.25"), decimal.Decimal("9" * 38 + ".99")]
    iv = [pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([-4, 5, -6]), pa.MonthDayNano([0, 0, 0])]
    st = pa.StructArray.from_arrays([pa.array(d, pa.decimal256(40, 2)), pa.array(iv)], names=["d", "i"],
                                    mask=pa.array([False, False, True, False]))
    maps = pa.array([[("a", d[0]), ("b", None)], None, [], [("z", d[3])]], pa.map_(pa.string(), pa.decimal256(40, 2)))
    lists = pa.array([[iv[0], None], None, [], [iv[2]]], pa.large_list(pa.month_day_nano_interval()))
    text = [None if x is None else format(x, "f") for x in d]
    fields = [None if x is None else {"months": x.months, "days": x.days, "nanoseconds": x.nanoseconds} for x in iv]
    for lo in (0, 1, 3):
        assert portable_column(st[lo:]).to_pylist() == [None if r == 2 else {"d": text[r], "i": fields[r]}
                                                         for r in range(lo, 4)]
        assert portable_column(maps[lo:]).to_pylist() == [[("a", text[0]), ("b", None)], None, [],
                                                          [("z", text[3])]][lo:]
        assert portable_column(lists[lo:]).to_pylist() == [[fields[0], None], None, [], [fields[2]]][lo:]
    plain = pa.table({"n": [1, 2], "s": ["x", "y"]})
    schema = plain.schema
    assert portable_table(plain) is plain and portable_table(schema) is schema        # nothing to change


@pytest.fixture(scope="module")
def empty_message(tmp_path_factory):
    """(root, the messages): test_protobuf's message of every type -- its google.protobuf.Empty field set on
    every third -- written by confluent-kafka's ProtobufSerializer."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    import test_protobuf
    from protobuf_support import mirror_registry

    root = tmp_path_factory.mktemp("empty") / "logs"
    client = SchemaRegistryClient.new_client({"url": "mock://portable-empty"})
    ser = ProtobufSerializer(test_protobuf.classes()["acme.v1.Everything"], client,
                             conf={"use.deprecated.format": False})
    msgs = [test_protobuf.everything(i) for i in range(6)]
    raw = [ser(m, SerializationContext("every", MessageField.VALUE)) for m in msgs]
    mirror_registry(client, str(root))
    kafkafmt.write_log_dir(str(root / "every-0"), values=raw)
    return root, msgs


def test_an_empty_message_in_parquet_and_delta(empty_message, tmp_path):
    """Parquet holds no struct without fields: a Protobuf Empty is struct<__dummy_field_in_empty_struct>
    (as Spark's from_protobuf keeps an empty message), null where the message lacks it -- in the Parquet
    export and a Delta table alike; every other field as the library reads it."""
    import kcli
    from deltalake import DeltaTable

    from kafkafmt.lakehouse import export_table

    root, msgs = empty_message
    want = [{"__dummy_field_in_empty_struct": None} if m.HasField("nothing") else None for m in msgs]
    assert None in want and want.count(None) < len(want)
    lib = kafkafmt.read_log_dirs(str(root), value_format="protobuf", topics=["every"]).to_arrow()
    kcli.run("export", root, "--topics", "every", "--value-format", "protobuf", "--to", tmp_path / "e.parquet",
             check=0)
    export_table(str(root), str(tmp_path / "delta"), format="delta", topics=["every"], value_format="protobuf")
    for table in (pq.read_table(tmp_path / "e.parquet"), DeltaTable(str(tmp_path / "delta")).to_pyarrow_table()):
        values = _values(table)
        assert [v["nothing"] for v in values] == want
    values = _values(pq.read_table(tmp_path / "e.parquet"))
    rest = [{k: x for k, x in v.items() if k != "nothing"} for v in _values(lib)]
    assert repr([{k: x for k, x in v.items() if k != "nothing"} for v in values]) == repr(rest)   # (NaN: as text)

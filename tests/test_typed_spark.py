"""Typed keys and values through Spark (valueFormat / keyFormat, batch and streaming): the same
values the library gives (tests/test_typed_readers.py checks those against confluent-kafka's
deserializer), a schema known at planning time, from_avro's modes, and the policy for a schema
that changes while a stream runs."""
import json
import shutil

import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
from kafkafmt.spark.options import parse  # noqa: E402
from kafkafmt.spark.source import typed_plan  # noqa: E402
from kafkafmt.spark.stream import KafkaSegmentsStreamReader, SchemaChangedError  # noqa: E402
from avro_support import RegistryMirror  # noqa: E402
from test_typed_readers import BAD_ROW, ORDER_V1, ORDER_V2, backup, order, orders_log_dir  # noqa: E402,F401 (fixture)


def _plain(v):
    """Spark rows and pyarrow values as comparable Python data."""
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def _lib(root, topics, **kw):
    t = kafkafmt.read_log_dirs(str(root), topics=topics, value_format="avro", **kw).to_arrow()
    return {(r["topic"], r["offset"]): (r["value"], r["valueSchemaId"], r["valueError"]) for r in t.to_pylist()}


def _read(spark, root, **options):
    reader = spark.read.format("kafka-segments")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(root))


def test_batch_read_equals_the_library(spark, backup):
    root, *_ = backup
    df = _read(spark, root, subscribe="orders,users", valueFormat="avro", mode="PERMISSIVE")
    names = [f.name for f in df.schema["value"].dataType.fields]
    assert {"id", "note", "tags", "price", "name", "age"} <= set(names)      # known before reading
    got = {(r["topic"], r["offset"]): (_plain(r["value"]), r["valueSchemaId"], r["valueError"])
           for r in df.select("topic", "offset", "value", "valueSchemaId", "valueError").collect()}
    assert got == _lib(root, ["orders", "users"])
    assert got[("orders", BAD_ROW)][0] is None and "magic" in got[("orders", BAD_ROW)][2]
    # a filter and a projection of a nested field
    ids = [r[0] for r in _read(spark, root, subscribe="orders", valueFormat="avro", mode="PERMISSIVE")
           .where("offset >= 290").select("value.id").orderBy("offset").collect()]
    assert ids == [None if i % 97 == 5 else i for i in range(290, 300)]      # 296: a tombstone


def test_failfast_is_the_default_and_names_the_record(spark, backup):
    root, *_ = backup
    with pytest.raises(Exception) as info:
        _read(spark, root, subscribe="orders", valueFormat="avro").collect()
    text = str(info.value)
    assert "offset 13" in text and "mode=PERMISSIVE" in text


def test_keys_and_a_pinned_version(spark, backup):
    root, m, values, _ = backup
    df = _read(spark, root, subscribe="orders", valueFormat="avro", keyFormat="avro", valueSchema="v1",
               mode="PERMISSIVE")
    assert [f.name for f in df.schema["value"].dataType.fields] == ["id", "note"]
    rows = df.select("offset", "key", "value").orderBy("offset").collect()
    lib = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro",
                                value_schema={"version": 1}).to_arrow()
    assert [_plain(r["value"]) for r in rows] == lib.column("value").to_pylist()
    assert [_plain(r["key"]) for r in rows] == [{"id": i} for i in range(300)]


def test_stream_available_now_equals_the_library(spark, backup, tmp_path):
    root, *_ = backup
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    q = (spark.readStream.format("kafka-segments").option("subscribe", "orders").option("valueFormat", "avro")
         .option("mode", "PERMISSIVE").option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "120")
         .load(str(root)).select("topic", "offset", "value", "valueSchemaId", "valueError")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180)
        assert q.exception() is None
        assert len([p for p in q.recentProgress if p["numInputRows"]]) >= 3
    finally:
        q.stop()
    got = {(r["topic"], r["offset"]): (_plain(r["value"]), r["valueSchemaId"], r["valueError"])
           for r in spark.read.parquet(str(out)).collect()}
    assert got == _lib(root, ["orders"])


def _offsets(o):
    return json.loads(o) if isinstance(o, str) else o


def test_a_new_schema_version_mid_stream_fails_fast_by_default(tmp_path):
    m = RegistryMirror()
    m.register("orders-value", ORDER_V1)
    root = tmp_path / "logs"
    m.write(root)
    kafkafmt.write_log_dir(str(root / "orders-0"), values=[m.serializer(ORDER_V1)(order(i)) for i in range(5)])

    def reader(**extra):
        opts = parse({"path": str(root), "subscribe": "orders", "valueFormat": "avro",
                      "startingOffsets": "earliest", **extra}, stream=True)
        opts.typed = typed_plan(opts)
        return KafkaSegmentsStreamReader(None, opts)

    restart, keep = reader(), reader(schemaEvolutionMode="none")
    start = restart.initialOffset()
    assert _offsets(restart.latestOffset(start, None)) == {"orders": {"0": 5}}
    m.register("orders-value", ORDER_V2)          # the registry writes v2 to _schemas
    shutil.rmtree(root / "_schemas-0")
    m.write(root)
    with pytest.raises(SchemaChangedError, match="orders-value has a new latest schema"):
        restart.latestOffset(start, None)
    assert _offsets(keep.latestOffset(keep.initialOffset(), None)) == {"orders": {"0": 5}}
    # a restarted query plans with v2
    assert [f.name for f in reader().opts.typed.types[0][1]] == ["id", "note", "tags", "price"]


@pytest.mark.slow
def test_export_spark_engine_types_values_as_the_local_engine(sample, tmp_path):
    """`export --engine spark --value-format ...` types keys and values (the typing flags become the source's
    options) -- the same values the local engine writes to Parquet; typed text (JSON lines, CSV) is refused
    there, before anything is written (each format prints its own text, which Spark's writer would not)."""
    import subprocess
    import sys

    import pyarrow.parquet as pq

    def export(engine, fmt, out):
        args = [sys.executable, "-m", "kafkafmt", "export", str(sample), "--topics", "shipments",
                "--value-format", "avro", "--format", fmt, "--to", str(out)]
        p = subprocess.run(args + (["--engine", "spark"] if engine == "spark" else []), capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr

    export("local", "parquet", tmp_path / "local.parquet")
    export("spark", "parquet", tmp_path / "spark")
    cols = ["partition", "offset", "value", "valueSchemaId", "valueError"]
    local = sorted(pq.read_table(tmp_path / "local.parquet", columns=cols).to_pylist(), key=lambda r: r["offset"])
    spark_rows = sorted(pq.read_table(tmp_path / "spark", columns=cols).to_pylist(), key=lambda r: r["offset"])
    assert len(local) == 2000 and spark_rows == local
    assert sum(r["valueError"] is not None for r in local) >= 1          # the sample's one plain-JSON value

    p = subprocess.run([sys.executable, "-m", "kafkafmt", "export", str(sample), "--topics", "shipments",
                        "--value-format", "avro", "--format", "jsonl", "--engine", "spark", "--to",
                        str(tmp_path / "spark-jsonl")], capture_output=True, text=True)
    assert p.returncode == 2 and "parquet only" in p.stderr and not (tmp_path / "spark-jsonl").exists()


def test_a_tasks_small_typed_partitions_are_typed_a_piece_at_once(backup, tmp_path, monkeypatch):
    """A Spark task reading many small partitions with typed values reads them in one pass and types the pass's
    values with one call: the rows each partition's own read gives (the library's, checked against
    confluent-kafka's deserializer in test_typed_readers.py); a pass holding a bad value read FAILFAST is read task
    by task, the error naming its record's segment and offset; PERMISSIVE types it at once, the bad value null
    with its reason."""
    import kafkafmt.spark.read as spark_read
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    root, m = orders_log_dir(backup, tmp_path, 12, 4)
    calls = []
    real = spark_read.decode_values
    monkeypatch.setattr(spark_read, "decode_values", lambda recs, typed: calls.append(len(recs)) or real(recs, typed))

    def rows(**options):
        source = KafkaSegmentsDataSource({"path": str(root), "subscribe": "orders", "valueFormat": "avro", **options})
        reader = source.reader(source.schema())
        calls.clear()
        out = [r for part in reader.partitions() for batch in spark_read.read_tasks(part.tasks, reader.schema,
                                                                                    reader.opts)
               for r in batch.select(["topic", "partition", "offset", "value", "valueSchemaId", "valueError"])
               .to_pylist()]
        return sorted(out, key=lambda r: (r["partition"], r["offset"]))

    lib = kafkafmt.read_log_dirs(str(root), topics="orders", value_format="avro").to_arrow()
    lib = sorted(lib.select(["topic", "partition", "offset", "value", "valueSchemaId", "valueError"]).to_pylist(),
                 key=lambda r: (r["partition"], r["offset"]))
    assert rows() == lib and calls == [48]
    kafkafmt.write_log_dir(str(root / "orders-12"), values=[b"not avro"])
    with pytest.raises(kafkafmt.errors.ValueDecodeError) as info:
        rows()
    assert calls == [49] + [4] * 12 + [1]       # (the pass's, then each task's, up to the bad value's)
    assert "orders-12" in str(info.value) and "offset 0" in str(info.value) and "mode=PERMISSIVE" in str(info.value)
    got = rows(mode="PERMISSIVE")
    assert calls == [49] and got[:48] == lib and got[48]["value"] is None and "magic" in got[48]["valueError"]

"""The kafka-segments Spark data source: schema, results equal to kafkafmt.read_log_dirs, options,
pushdown pruning (checked on the planned input partitions), read_committed, failOnDataLoss."""
import datetime as dt
import os
import shutil
import sys

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
from kafkafmt.spark.options import OptionError, parse  # noqa: E402
from kafkafmt.spark.source import PushdownReader, kafka_schema  # noqa: E402
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    os.environ["KAFKAFMT_SAMPLE_DIR"] = str(tmp_path_factory.mktemp("sample") / "logs")
    from kafkafmt.sample import sample_dir

    return sample_dir()


def _rows(df):
    return sorted((r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in df.collect())


def _lib_rows(recs):
    topics = recs.topic if isinstance(recs.topic, np.ndarray) else [recs.topic] * len(recs)
    parts = recs.partition if isinstance(recs.partition, np.ndarray) else [recs.partition] * len(recs)
    return sorted(zip(list(topics), [int(p) for p in parts], recs.offset.tolist(), recs.key.to_pylist(),
                      recs.value.to_pylist()))


# --- planning and options, without a JVM ----------------------------------------------------------

def _reader(path, **options):
    opts = parse({"path": path, **options})
    return PushdownReader(kafka_schema(opts.include_headers, opts.batch_metadata), opts)


def test_options_rejected_with_reasons(sample):
    for bad, match in [({"kafka.bootstrap.servers": "x:9092"}, "no broker"),
                       ({"kafka.group.id": "g"}, "consumer group"),
                       ({"subscribe": "a", "assign": '{"a":[0]}'}, "only one of"),
                       ({"startingOffsets": "latest"}, "not allowed"),
                       ({"endingOffsets": '{"orders":{"0":-2}}'}, "earliest"),
                       ({"kafka.isolation.level": "serializable"}, "isolation"),
                       ({"includeHeaders": "maybe"}, "true or false"),
                       ({"frobnicate": "1"}, "unknown option")]:
        with pytest.raises(OptionError, match=match):
            parse({"path": sample, **bad})
    with pytest.raises(OptionError, match="log directory"):
        parse({})


def test_options_build_the_readers_options(sample):
    """The source's options become the library's ReadOptions, as the other doors build them: isolation,
    failOnDataLoss as errors, maxBytesPerBatch as the chunk size, the storage options, the tiered keys
    (tieredKey.<key id>, kept out of the repr), replicas, the typed-value options, one thread per task."""
    o = parse({"path": sample, "kafka.isolation.level": "read_committed", "failOnDataLoss": "false",
               "maxBytesPerBatch": "4096", "storage.anon": "true", "tieredKey.kek-1": "-----BEGIN PRIVATE KEY...",
               "replicas": "all", "valueFormat": "avro", "mode": "PERMISSIVE", "untypedTopics": "bytes"})
    r = o.read_options(start_offset=5)
    assert (r.isolation, r.errors, r.max_bytes, r.threads, r.replicas) == ("read_committed", "salvage", 4096, 1, "all")
    assert r.storage_options == {"anon": True} and r.tiered_keys == {"kek-1": "-----BEGIN PRIVATE KEY..."}
    assert (r.value_format, r.value_errors, r.untyped_topics, r.start_offset) == ("avro", "null", "bytes", 5)
    assert "BEGIN PRIVATE KEY" not in repr(o) and "kek-1" in repr(o)
    assert parse({"path": sample}).read_options().errors == "strict"


def test_pushdown_prunes_segments(sample):
    reader = _reader(sample, subscribe="orders")
    all_tasks = [t for p in reader.partitions() for t in p.tasks]
    reader = _reader(sample, subscribe="orders")
    rest = list(reader.pushFilters([GreaterThanOrEqual(("offset",), 2000), EqualTo(("partition",), 1)]))
    assert rest == []  # both handled exactly by the source
    tasks = [t for p in reader.partitions() for t in p.tasks]
    assert {(t.topic, t.partition) for t in tasks} == {("orders", 1)}
    # only the segments holding offsets >= 2000 are planned
    segs = kafkafmt.list_segments(os.path.join(sample, "orders-1"))
    wanted = {os.path.basename(s.log) for k, s in enumerate(segs)
              if k + 1 == len(segs) or segs[k + 1].base_offset > 2000}
    assert len(wanted) < len(segs)
    assert {os.path.basename(t.log) for t in tasks} == wanted
    assert len(tasks) < len(all_tasks)
    # and the byte range starts at the index position for 2000, not at the segment start
    assert tasks[0].start_pos > 0 and tasks[0].start_offset == 2000


def test_pushdown_topic_in_and_empty(sample):
    reader = _reader(sample)
    list(reader.pushFilters([In(("topic",), ("payments", "clicks"))]))
    assert {t.topic for p in reader.partitions() for t in p.tasks} == {"payments", "clicks"}
    reader = _reader(sample)
    list(reader.pushFilters([GreaterThanOrEqual(("offset",), 10), LessThan(("offset",), 5)]))
    assert [t for p in reader.partitions() for t in p.tasks] == []


def test_timestamp_filter_prunes_rolled_segments(sample):
    lib = kafkafmt.read_log_dir(os.path.join(sample, "orders-0"))
    cut = int(np.sort(lib.timestamp)[-300])   # only the newest records
    reader = _reader(sample, subscribe="orders")
    rest = list(reader.pushFilters([GreaterThanOrEqual(("timestamp",), dt.datetime.fromtimestamp(
        cut / 1000, dt.timezone.utc))]))
    assert len(rest) == 1  # rows are still filtered by Spark: timestamps are not monotonic
    planned = {os.path.basename(t.log) for p in reader.partitions() for t in p.tasks if t.partition == 0}
    segs = kafkafmt.list_segments(os.path.join(sample, "orders-0"))
    assert os.path.basename(segs[0].log) not in planned and os.path.basename(segs[-1].log) in planned


def test_min_partitions_splits_at_index_positions(sample):
    reader = _reader(sample, subscribe="orders", minPartitions="12")
    parts = reader.partitions()
    assert len(parts) >= 12
    for t in (t for p in parts for t in p.tasks):
        if t.start_pos:  # a split point is a batch start recorded in the offset index
            idx = kafkafmt.read_index(t.log[:-4] + ".index")
            assert t.start_pos in set(idx["position"].tolist())


# --- through Spark ------------------------------------------------------------------------------------

def test_schema_and_full_read_equal_library(spark, sample):
    df = spark.read.format("kafka-segments").option("includeHeaders", "true").load(sample)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"),
        ("timestamp", "timestamp"), ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>")]
    lib = kafkafmt.read_log_dirs(sample)
    assert _rows(df) == _lib_rows(lib)
    # headers and timestamps of one partition, record by record
    one = df.where("topic = 'orders' and partition = 0").orderBy("offset").collect()
    ref = kafkafmt.read_log_dir(os.path.join(sample, "orders-0"))
    assert [r["offset"] for r in one] == ref.offset.tolist()
    assert [int(r["timestamp"].replace(tzinfo=dt.timezone.utc).timestamp() * 1000) for r in one] == \
        ref.timestamp.tolist()
    got_headers = [[(h["key"], h["value"]) for h in (r["headers"] or [])] for r in one]
    assert got_headers == ref.headers.to_pylist()


def test_filters_offsets_and_committed(spark, sample):
    df = (spark.read.format("kafka-segments").option("subscribe", "orders")
          .option("startingOffsets", '{"orders":{"0":100,"1":-2}}').option("endingOffsets", '{"orders":{"0":900}}')
          .load(sample))
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 800, 1: 2400}
    q = df.where("offset >= 2000 and partition = 1")
    assert q.count() == 400
    committed = (spark.read.format("kafka-segments").option("subscribe", "payments")
                 .option("kafka.isolation.level", "read_committed").load(sample))
    lib = kafkafmt.read_log_dir(os.path.join(sample, "payments-0"), isolation="read_committed")
    assert sorted(r["offset"] for r in committed.collect()) == lib.offset.tolist()


def test_bad_option_is_an_analysis_error(spark, sample):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="no broker"):
        spark.read.format("kafka-segments").option("kafka.bootstrap.servers", "b:9092").load(sample).count()
    with pytest.raises(AnalysisException, match="does not exist"):
        spark.read.format("kafka-segments").load(sample + "/nope").count()


def test_real_corpus_broker_dirs(spark, real_corpus):
    roots = [os.path.join(real_corpus, "broker-dirs", "DonaldY__kafka-2.7.1", "kafka-logs"),
             os.path.join(real_corpus, "broker-dirs", "Niloufar1171__LDI-POC"),
             os.path.join(real_corpus, "broker-dirs", "seanorth__kafka-server", "kafka-logs")]
    for root in roots:
        df = spark.read.format("kafka-segments").load(root)
        assert _rows(df) == _lib_rows(kafkafmt.read_log_dirs(root))


def test_fail_on_data_loss(spark, sample, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(os.path.join(sample, "orders-0"), root / "orders-0")
    seg = [s.log for s in kafkafmt.list_segments(str(root / "orders-0"))][1]   # a middle segment
    seg = type(root)(seg)
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    with pytest.raises(Exception, match="failOnDataLoss"):
        spark.read.format("kafka-segments").load(str(root)).count()
    salvaged = spark.read.format("kafka-segments").option("failOnDataLoss", "false").load(str(root))
    lib = kafkafmt.read_log_dir(str(root / "orders-0"), errors="salvage")
    assert sorted(r["offset"] for r in salvaged.select("offset").collect()) == lib.offset.tolist()
    assert 0 < len(lib) < 2400


def test_batch_metadata_columns(spark, sample):
    df = (spark.read.format("kafka-segments").option("subscribe", "orders").option("includeBatchMetadata", "true")
          .load(sample))
    row = df.where("partition = 1").orderBy("offset").first()
    assert (row["producerId"], row["producerEpoch"], row["leaderEpoch"], row["codec"]) == (501, 0, 3, "lz4")


def test_readme_pipeline_to_partitioned_parquet(spark, sample, tmp_path):
    from pyspark.sql import functions as F

    out = str(tmp_path / "lake")
    (spark.read.format("kafka-segments").option("includeHeaders", "true").load(sample)
     .withColumn("date", F.to_date("timestamp"))
     .write.partitionBy("topic", "date").mode("overwrite").parquet(out))
    back = spark.read.parquet(out)
    assert back.count() == len(kafkafmt.read_log_dirs(sample))
    assert sorted(d for d in os.listdir(out) if d.startswith("topic=")) == [
        f"topic={t}" for t in sorted({p.topic for p in kafkafmt.list_partitions(sample)})]


def test_load_from_s3(spark, tmp_path):
    """spark.read.format("kafka-segments").load("s3://...") with storage.* options: the driver lists
    and plans from the indexes, the Python workers read their byte ranges from the bucket; the
    secret appears in no plan."""
    from s3server import SECRET, start_moto, S3

    srv, endpoint = start_moto()
    try:
        s3 = S3(endpoint)
        root = tmp_path / "logs"
        for p in range(3):
            kafkafmt.write_log_dir(str(root / f"orders-{p}"), values=[b"v%d" % i for i in range(3000)],
                                   timestamps=list(range(3000)), compression="lz4", segment_bytes=16 << 10)
        b = s3.bucket()
        s3.upload_dir(str(root), b, "logs")
        o = s3.storage_options
        df = (spark.read.format("kafka-segments").option("storage.endpoint_url", o["endpoint_url"])
              .option("storage.key", o["key"]).option("storage.secret", o["secret"])
              .option("minPartitions", "4").load(f"s3://{b}/logs"))
        assert _rows(df) == _lib_rows(kafkafmt.read_log_dirs(str(root)))
        seek = df.where("partition = 1 and offset >= 2990")
        assert sorted(r["offset"] for r in seek.collect()) == list(range(2990, 3000))
        plan = df._jdf.queryExecution().toString()
        assert SECRET not in plan
    finally:
        srv.stop()


@pytest.mark.parametrize("table", ["consumer_offsets", "group_members", "cluster_metadata"])
def test_internal_topics_as_tables(spark, real_corpus, table):
    """.option("decode", NAME): Kafka's internal topics as kafkafmt.internal's tables, the same rows."""
    from kafkafmt import internal

    root = str(real_corpus / "broker-dirs")
    df = spark.read.format("kafka-segments").option("decode", table).load(root)
    recs = kafkafmt.read_log_dirs(root, topics=[internal.TOPIC_OF[table]])
    want = getattr(internal, table)(recs)
    assert df.columns == want.column_names
    got = sorted((r["offset"], str(r[want.column_names[2]])) for r in df.collect())
    exp = sorted(zip(want.column("offset").to_pylist(), map(str, want.column(want.column_names[2]).to_pylist())))
    assert got == exp and len(got) > 0
    with pytest.raises(Exception, match="decode must be one of"):
        spark.read.format("kafka-segments").option("decode", "nope").load(root).count()

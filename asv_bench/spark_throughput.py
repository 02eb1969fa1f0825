"""Spark full-scan throughput of kafka-segments against the ceiling Spark itself sets.

Ceiling: the same Spark session reading the same rows, pre-built as Arrow record batches (the
exact batches kafka-segments would yield), from a trivial Python data source that only yields
them. The ratio kafka-segments / ceiling is what kafkafmt's decoding costs inside Spark.

    python asv_bench/spark_throughput.py [--records 2000000] [--repeats 5]
    python asv_bench/spark_throughput.py --partitions 2000 [--per-partition 69]

``--partitions``: a log dir of many small partitions instead (one segment each, one record per
batch); ``count`` is a whole ``count()`` query, planning included. ``spark.range``: Spark scanning as
many generated rows, with no Python at all.

Writes a log dir with kafkafmt's writer (~250-byte JSON values, 16-byte keys, lz4 and none),
runs `df.selectExpr(...).write.format("noop")` scans on local[2] and prints medians.
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time


def make_logs(root, records):
    import random

    import kafkafmt

    rnd = random.Random(7)
    per = records // 4
    for p, codec in enumerate(["none", "lz4", "none", "lz4"]):
        values = [(b'{"id":%d,"user":"u%05d","amount":%d.%02d,"note":"' % (i, rnd.randint(0, 99999), rnd.randint(1, 999),
                                                                       rnd.randint(0, 99)) + b"x" * 180 + b'"}')
                  for i in range(per)]
        keys = [rnd.randbytes(16) for _ in range(per)]
        kafkafmt.write_log_dir(os.path.join(root, f"bench-{p}"), keys=keys, values=values,
                               timestamps=[1_767_225_600_000 + i for i in range(per)], compression=codec,
                               batch_size=128 * 1024, segment_bytes=64 << 20)


def make_many(root, partitions, per_partition):
    """A broker's log dir of many small partitions (benchmarks.corpus.many_partitions_dir: one
    segment each, one record per batch, like a __consumer_offsets partition)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from benchmarks.corpus import write_many_partitions

    write_many_partitions(root, partitions, per_partition)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=0,
                    help="instead: a log dir of this many small partitions (--per-partition records each)")
    ap.add_argument("--per-partition", type=int, default=69)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    tmp = tempfile.mkdtemp(prefix="kafkafmt-spark-bench-")
    root = os.path.join(tmp, "logs")
    if args.partitions:
        make_many(root, args.partitions, args.per_partition)
    else:
        make_logs(root, args.records)

    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    import kafkafmt.spark
    from kafkafmt.spark.options import parse
    from kafkafmt.spark.read import read_tasks
    from kafkafmt.spark.source import KafkaSegmentsReader, kafka_schema

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkafmt.spark.register(spark)

    # the ceiling: identical Arrow batches, pre-built once, yielded by a trivial source
    opts = parse({"path": root})
    reader = KafkaSegmentsReader(kafka_schema(), opts)
    parts = reader.partitions()
    prebuilt = os.path.join(tmp, "prebuilt")
    os.makedirs(prebuilt)
    for i, part in enumerate(parts):
        batches = list(read_tasks(part.tasks, kafka_schema(), opts))
        with pa.OSFile(os.path.join(prebuilt, f"{i}.arrow"), "wb") as f, \
                pa.ipc.new_stream(f, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)

    class Prebuilt(DataSource):
        @classmethod
        def name(cls):
            return "prebuilt-arrow"

        def schema(self):
            return kafka_schema()

        def reader(self, schema):
            return PrebuiltReader()

    class PrebuiltReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(os.path.join(prebuilt, f"{i}.arrow")) for i in range(len(parts))]

        def read(self, partition):
            with pa.memory_map(partition.value) as src:   # zero-copy from the page cache
                yield from pa.ipc.open_stream(src)

    spark.dataSource.register(Prebuilt)

    n = spark.read.format("kafka-segments").load(root).count()

    def scan(fmt):
        t = time.perf_counter()
        if fmt == "count":       # planning included, as a user's count() pays it
            spark.read.format("kafka-segments").load(root).count()
            return time.perf_counter() - t
        df = spark.range(n).selectExpr("id", "cast(cast(id as string) as binary) as value") if fmt == "spark.range" else \
            spark.read.format(fmt).load(root)
        df.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t

    for fmt in ("kafka-segments", "prebuilt-arrow", "spark.range", "count"):
        scan(fmt)  # warm up the Python workers and the page cache
    times = {"kafka-segments": [], "prebuilt-arrow": [], "spark.range": [], "count": []}
    for _ in range(args.repeats):
        for fmt in times:   # alternate, so noise hits both
            times[fmt].append(scan(fmt))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rows: {n}, input partitions: {len(parts)}, local[2]")
    for k, v in med.items():
        print(f"{k:15s} median {v:.2f} s  {n / v / 1e6:.2f} M rows/s   runs: {', '.join(f'{x:.2f}' for x in times[k])}")
    print(f"kafka-segments / ceiling (prebuilt Arrow batches from a Python source) = "
          f"{med['prebuilt-arrow'] / med['kafka-segments']:.0%}; / spark.range = "
          f"{med['spark.range'] / med['kafka-segments']:.0%}")
    spark.stop()


if __name__ == "__main__":
    main()

"""Streaming catch-up throughput of kafka-segments against its batch read of the same data.

A stream started at the earliest offsets with Trigger.AvailableNow reads everything on disk and
stops; the batch read scans the same log dir. Both write to Spark's ``noop`` sink on local[2], so
the ratio stream / batch is what streaming (offset planning, checkpoint logs, the Python stream
reader) costs. Also measures the driver time of a trigger that finds no new data, per 100
partitions (the reader's ``latestOffset``, called directly).

    python asv_bench/spark_stream_throughput.py [--records 3000000] [--repeats 3] [--max-offsets N]

Target (issue 14): stream >= 80% of batch; an idle trigger <= 50 ms per 100 partitions.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time


def make_logs(root, records, partitions=4):
    import kafkafmt

    rnd = random.Random(7)
    per = records // partitions
    for p in range(partitions):
        codec = "lz4" if p % 2 else "none"
        values = [(b'{"id":%d,"user":"u%05d","amount":%d.%02d,"note":"' % (i, rnd.randint(0, 99999),
                                                                       rnd.randint(1, 999), rnd.randint(0, 99))
                   + b"x" * 180 + b'"}') for i in range(per)]
        keys = [rnd.randbytes(16) for _ in range(per)]
        kafkafmt.write_log_dir(os.path.join(root, f"bench-{p}"), keys=keys, values=values,
                               timestamps=[1_767_225_600_000 + i for i in range(per)], compression=codec,
                               batch_size=128 * 1024, segment_bytes=64 << 20)
    return per * partitions


def idle_trigger_ms(tmp, partitions=100):
    """Median driver time of latestOffset() with nothing new, for `partitions` partitions."""
    import kafkafmt
    from kafkafmt.spark.options import parse
    from kafkafmt.spark.source import kafka_schema
    from kafkafmt.spark.stream import KafkaSegmentsStreamReader

    root = os.path.join(tmp, "idle")
    for p in range(partitions):
        kafkafmt.write_log_dir(os.path.join(root, f"idle-{p}"), values=[b"v"] * 50, segment_bytes=1 << 20)
    old = time.time() - 60
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            os.utime(os.path.join(dirpath, n), (old, old))
    os.utime(root, (old, old))
    reader = KafkaSegmentsStreamReader(kafka_schema(), parse({"path": root, "startingOffsets": "earliest"},
                                                             stream=True))
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        reader.latestOffset(end, None)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=3_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-offsets", type=int, default=None, help="maxOffsetsPerTrigger for the stream")
    ap.add_argument("--verbose", action="store_true", help="durations of each micro-batch")
    args = ap.parse_args(argv)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    tmp = tempfile.mkdtemp(prefix="kafkafmt-stream-bench-")
    try:
        root = os.path.join(tmp, "logs")
        n = make_logs(root, args.records)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs if f.endswith(".log"))
        print(f"log dir: {n} records, {size / 1e6:.1f} MB of segments")
        print(f"idle trigger, 100 partitions: {idle_trigger_ms(tmp):.2f} ms driver time (median of 20)")

        from pyspark.sql import SparkSession

        import kafkafmt.spark
        from kafkafmt.spark.source import kafka_schema

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", "2")
                 .config("spark.sql.streaming.pollingDelay", "10ms").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        kafkafmt.spark.register(spark)

        def batch():
            t0 = time.perf_counter()
            spark.read.format("kafka-segments").load(root).write.format("noop").mode("overwrite").save()
            return time.perf_counter() - t0

        def stream(k, path=root, expect=n):
            ckpt = os.path.join(tmp, f"ckpt{k}")
            reader = spark.readStream.format("kafka-segments").option("startingOffsets", "earliest")
            if args.max_offsets:
                reader = reader.schema(kafka_schema()).option("maxOffsetsPerTrigger", str(args.max_offsets))
            t0 = time.perf_counter()
            q = (reader.load(path).writeStream.format("noop").option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start())
            q.awaitTermination()
            took = time.perf_counter() - t0
            rows = sum(p["numInputRows"] for p in q.recentProgress)
            assert rows == expect, (rows, expect)
            if args.verbose:
                for p in q.recentProgress:
                    print("   micro-batch", p["batchId"], p["numInputRows"], "rows", p["durationMs"])
                print(f"   start() to end: {took:.2f} s")
            trig = sum(p["durationMs"].get("triggerExecution", 0) for p in q.recentProgress if p["numInputRows"])
            return took, len([p for p in q.recentProgress if p["numInputRows"]]), trig / 1000

        tiny = os.path.join(tmp, "tiny")
        tiny_n = make_logs(tiny, 400)

        batch()       # warm up: JVM, Python workers, page cache
        stream(-1)
        b, s, trig, fixed, mb = [], [], [], [], 0
        for k in range(args.repeats):     # interleaved, so drifting machine load hits both alike
            b.append(batch())
            took, mb, t = stream(k)
            s.append(took)
            trig.append(t)
            fixed.append(stream(f"tiny{k}", tiny, tiny_n)[0])
        tb, ts, tt, tf = statistics.median(b), statistics.median(s), statistics.median(trig), statistics.median(fixed)
        print(f"batch read:       {tb:.2f} s  {n / tb / 1e6:.2f} M rows/s  {size / tb / 1e6:.0f} MB/s (median of "
              f"{args.repeats})")
        print(f"stream catch-up:  {ts:.2f} s  {n / ts / 1e6:.2f} M rows/s  {size / ts / 1e6:.0f} MB/s "
              f"({mb} micro-batch{'es' if mb != 1 else ''})")
        print(f"  of which micro-batch work (triggerExecution): {tt:.2f} s  {n / tt / 1e6:.2f} M rows/s")
        print(f"  query start/stop cost, measured on a {tiny_n}-record stream: {tf:.2f} s")
        print(f"stream / batch:   {tb / ts:.0%} end to end, {tb / tt:.0%} per micro-batch, "
              f"{tb / max(ts - tf, 1e-9):.0%} without the fixed query start/stop cost")
        spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""kafka-segments on a real Spark cluster (issue 14): a standalone master and two workers started
from the pyspark install, and a Spark Connect server with a thin client. Each runs the batch read
and an AvailableNow stream over a log dir written by kafkafmt's LogWriter (indexes, rolled
segments), and the results are checked against the library. Processes are started and stopped by
their PIDs (tests/spark_cluster.py); everything listens on 127.0.0.1; waits are bounded.
"""
import json
import os
import time

import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
from spark_cluster import connect_server, java_available, run_client, standalone_cluster  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not java_available(), reason="no java on PATH / JAVA_HOME")]

PARTITIONS, PER_PARTITION = 3, 40_000      # 120k rows, ~10 MB


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster") / "kafka-logs"
    for p in range(PARTITIONS):
        w = kafkafmt.LogWriter(str(root / f"events-{p}"), segment_bytes=1 << 20)
        for chunk in range(4):
            n = PER_PARTITION // 4
            first = chunk * n
            w.append(values=[b'{"event": %d, "partition": %d, "pad": "%s"}' % (first + i, p, b"x" * 40)
                             for i in range(n)],
                     keys=[b"user-%d" % ((first + i) % 97) for i in range(n)],
                     timestamps=[1767225600000 + first + i for i in range(n)], compression="lz4")
        w.close()
    return root


def _expected(root):
    return {f"events-{p}": len(kafkafmt.read_log_dir(str(root / f"events-{p}"), columns=["offset"]))
            for p in range(PARTITIONS)}


CLUSTER_CLIENT = r'''
import json, os, sys, time
t0 = time.time()
from pyspark.sql import SparkSession, functions as F
master, root, out, ckpt = sys.argv[1:5]
spark = (SparkSession.builder.master(master).appName("kafkafmt-cluster-test")
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
         .config("spark.executor.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
t_session = time.time() - t0
import kafkafmt.spark
kafkafmt.spark.register(spark)
df = spark.read.format("kafka-segments").option("targetPartitionBytes", str(1 << 20)).load(root)
counts = {f"{r['topic']}-{r['partition']}": r["count"] for r in df.groupBy("topic", "partition").count().collect()}
# the worker folder of the executor that decoded each row (executors run in <work-dir>/<app>/<id>)
where = F.udf(lambda: os.path.basename(os.path.dirname(os.path.dirname(os.getcwd()))))
workers = sorted(r[0] for r in df.select(where().alias("w")).distinct().collect())
executors = len(spark.sparkContext.statusTracker().getExecutorInfos()) - 1
t_batch = time.time() - t0
q = (spark.readStream.format("kafka-segments").option("startingOffsets", "earliest")
     .option("targetPartitionBytes", str(1 << 20)).load(root)
     .select("topic", "partition", "offset", "value")
     .writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
     .trigger(availableNow=True).start())
finished = q.awaitTermination(120)
error = str(q.exception()) if q.exception() is not None else None
q.stop()
sink = spark.read.parquet(out)
stream = {f"{r['topic']}-{r['partition']}": r["count"] for r in sink.groupBy("topic", "partition").count().collect()}
distinct = sink.select("topic", "partition", "offset").distinct().count()
print(json.dumps(dict(counts=counts, workers=workers, executors=executors, finished=finished, error=error,
                      stream=stream, distinct=distinct, rows=sink.count(),
                      seconds=[round(t_session, 1), round(t_batch, 1), round(time.time() - t0, 1)])))
spark.stop()
'''


def test_standalone_cluster_batch_and_stream(log_dir, tmp_path):
    expected = _expected(log_dir)
    t0 = time.monotonic()
    with standalone_cluster(tmp_path / "cluster", workers=2) as (url, env, daemons):
        t_up = time.monotonic() - t0
        got = run_client(CLUSTER_CLIENT, env, url, log_dir, tmp_path / "out", tmp_path / "ckpt")
    print(f"\ncluster up in {t_up:.1f} s; client: session {got['seconds'][0]} s, batch done at {got['seconds'][1]} s, "
          f"stream done at {got['seconds'][2]} s; total {time.monotonic() - t0:.1f} s")
    assert got["counts"] == expected
    assert got["executors"] == 2 and got["workers"] == ["worker0", "worker1"]     # both workers decoded rows
    assert got["finished"] and got["error"] is None
    assert got["stream"] == expected and got["rows"] == got["distinct"] == sum(expected.values())


CONNECT_CLIENT = r'''
import json, sys
from pyspark.sql import SparkSession
url, root, out, ckpt = sys.argv[1:5]
spark = SparkSession.builder.remote(url).getOrCreate()
import kafkafmt.spark
kafkafmt.spark.register(spark)
df = spark.read.format("kafka-segments").load(root)
counts = {f"{r['topic']}-{r['partition']}": r["count"] for r in df.groupBy("topic", "partition").count().collect()}
first = df.where("partition = 1 and offset = 7").select("key", "value").collect()[0]
q = (spark.readStream.format("kafka-segments").option("startingOffsets", "earliest").load(root)
     .select("topic", "partition", "offset").writeStream.format("parquet").option("path", out)
     .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
finished = q.awaitTermination(120)
error = str(q.exception()) if q.exception() is not None else None
progress = q.recentProgress
q.stop()
sink = spark.read.parquet(out)
print(json.dumps(dict(counts=counts, key=first["key"].decode(), value=first["value"].decode(), finished=finished,
                      error=error, rows=sink.count(), distinct=sink.distinct().count(),
                      end=progress[-1]["sources"][0]["endOffset"] if progress else None,
                      remote=type(spark).__module__)))
spark.stop()
'''


def test_spark_connect_thin_client(log_dir, tmp_path):
    pytest.importorskip("grpc", reason="could not import grpc: the Spark Connect client needs pyspark[connect] (grpcio, grpcio-status, "
                                       "googleapis-common-protos)")
    expected = _expected(log_dir)
    with connect_server(tmp_path / "connect") as (url, env, server):
        got = run_client(CONNECT_CLIENT, env, url, log_dir, tmp_path / "out", tmp_path / "ckpt")
    assert got["remote"].startswith("pyspark.sql.connect")          # a thin client, not a classic session
    assert got["counts"] == expected
    assert (got["key"], json.loads(got["value"])["event"]) == ("user-7", 7)
    assert got["finished"] and got["error"] is None
    assert got["rows"] == got["distinct"] == sum(expected.values())
    assert json.loads(got["end"]) == {"events": {str(p): PER_PARTITION for p in range(PARTITIONS)}}

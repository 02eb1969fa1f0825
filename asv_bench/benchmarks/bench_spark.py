"""Spark (local[2]) counting a cluster's log dirs and 2 000 small partitions, beside kafka-python loops over the
same data in the same run.

Data: a three-broker cluster written by kafka-python's builders (``tests/kcluster.py``: 10 topics x 70
partitions with 3 copies and 10 x 75 with 2, about 146 records a partition, 15 % of them empty, 6 % of the
follower copies behind, 5 codecs, 8 KB segments: 1 450 partitions in 3 600 folders), and ``many-2000`` of
``corpus.log_dir`` (2 000 partitions of one copy, one segment each).

One Spark session (starting it takes ~10 s), measured in interleaved rounds (medians of each round's ratio):

* ``count``: ``spark.read.format("kafka-segments").load(root).count()`` of a new frame, the session warm (the
  roots were queried before) -- against kafka-python counting every copy's records and keeping each
  partition's most complete copy (one process, this one);
* ``second count``: ``df.count()`` again on a frame counted once;
* ``planning``: ``reader(schema).partitions()`` of a new query of the same roots, in this process: what the
  Spark driver's Python planner runs for a new frame; ``planning, new path``: the same for a path never
  queried (a new symbolic link to the roots: nothing found before applies);
* ``timestamps``: ``startingTimestamp`` / ``endingTimestamp`` on a new frame, against the full scan of a new
  frame with a ``where`` on the same timestamps, and against kafka-python's loop finding, in every copy, the
  first offset at or after each timestamp; ``new path``: both through a new symbolic link;
* ``many-2000``: the count of a new frame against kafka-python reading every segment (one process).

``python -m benchmarks.bench_spark`` prints the same figures without asv (``--rounds``); Spark's workers
import the kafkafmt this process imports (``PYTHONPATH=<tree>`` measures another build).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import corpus

ROUNDS = 5
#: the cluster of issue 44 ({topic: (partitions, copies)})
TOPICS = dict([("rf3-%d" % i, (70, 3)) for i in range(10)] + [("rf2-%d" % i, (75, 2)) for i in range(10)])
CLUSTER_SHAPE = dict(records=146, segment_bytes=8000, behind=0.06, empty=0.15)
T0 = 1_767_225_600_000                  # kcluster's first timestamp; partition p starts p seconds later
WINDOW = (T0 + 20_000, T0 + 40_000)     # startingTimestamp, endingTimestamp: about a third of the records


def _tests_dir():
    return str(Path(__file__).resolve().parents[2] / "tests")


def cluster_root():
    """The cluster's log dirs (written once, cached beside the corpora)."""
    root = corpus.cache_dir() / "logdirs" / "spark-cluster"
    done = root.with_suffix(".done")
    if not done.exists():
        import shutil

        sys.path.insert(0, _tests_dir())
        import kcluster

        shutil.rmtree(root, ignore_errors=True)
        kcluster.write_cluster(root, TOPICS, **CLUSTER_SHAPE)
        done.write_text("ok")
    return str(root)


def many_root():
    path, _ = corpus.log_dir("many-2000")
    return str(path)


# --- kafka-python -----------------------------------------------------------------------------------------

def _copies(root):
    """{(topic, partition): [[.log paths] of each copy]} of the partition folders of every log dir (a folder
    holding ``meta.properties``) under root."""
    out = {}
    for here, dirs, files in os.walk(root):
        if "meta.properties" not in files:
            continue
        for d in dirs:
            topic, _, p = d.rpartition("-")
            if topic and p.isdigit():
                folder = os.path.join(here, d)
                out.setdefault((topic, int(p)), []).append(sorted(
                    os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".log")))
        dirs[:] = []
    return out


def kafka_python_count(copies, window=None):
    """Records of each partition's most complete copy (the highest last offset), kafka-python reading every
    copy, batch CRCs checked; with ``window`` (ms): from the first offset whose timestamp is >= the start up to
    the first whose timestamp is >= the end (Kafka's offsets-for-times)."""
    from kafka.record.memory_records import MemoryRecords

    total = 0
    for logs_of_copies in copies.values():
        best = (-2, 0)
        for logs in logs_of_copies:
            n, last, start, end = 0, -1, None, None
            for path in logs:
                with open(path, "rb") as f:
                    records = MemoryRecords(f.read())
                batch = records.next_batch()
                while batch is not None:
                    if not batch.validate_crc():
                        raise ValueError("CRC mismatch in %s" % path)
                    for r in batch:
                        last = r.offset
                        if window is None:
                            n += 1
                            continue
                        if start is None and r.timestamp >= window[0]:
                            start = r.offset
                        if end is None and r.timestamp >= window[1]:
                            end = r.offset
                        if start is not None and end is None:
                            n += 1
                    batch = records.next_batch()
            if last > best[0]:
                best = (last, n)
        total += best[1]
    return total


# --- Spark ------------------------------------------------------------------------------------------------

def start_spark():
    """A local[2] session whose Python workers import the kafkafmt this process imported (asv puts an
    uninstalled build on ``sys.path`` only: the workers, started by the JVM, would import another)."""
    import kafkafmt.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    tree = os.path.dirname(os.path.dirname(os.path.abspath(kafkafmt.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join([tree] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                         if p and p != tree])
    from pyspark.sql import SparkSession

    log4j = Path(tempfile.mkdtemp(prefix="kafkafmt-bench-spark-")) / "log4j2.properties"
    log4j.write_text("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = %p %c{1}: %m%n\n")
    spark = (SparkSession.builder.master("local[2]").appName("kafkafmt-bench")
             .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
             .config("spark.driver.memory", "2g").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    kafkafmt.spark.register(spark)
    return spark


class _Links:
    """New paths to a root (symbolic links), so that a query finds nothing kept from an earlier one."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kafkafmt-bench-links-")
        self.n = 0

    def new(self, root):
        self.n += 1
        link = os.path.join(self.dir, "root-%d" % self.n)
        os.symlink(root, link)
        return link


def _frame(spark, root, **options):
    reader = spark.read.format("kafka-segments")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(root)


def _planning(root, **options):
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    source = KafkaSegmentsDataSource({"path": root, **{k: str(v) for k, v in options.items()}})
    return len(source.reader(source.schema()).partitions())


def _timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def measure(rounds=ROUNDS, log=None):
    """{name: seconds (median over rounds)} and {name: ratio (median of each round's ratio)}."""
    from pyspark.sql import functions as F

    cluster, many = cluster_root(), many_root()
    copies, many_copies = _copies(cluster), _copies(many)
    spark = start_spark()
    links = _Links()
    window = dict(startingTimestamp=WINDOW[0], endingTimestamp=WINDOW[1])
    lo, hi = (dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc) for t in WINDOW)
    try:
        expected = {"count": kafka_python_count(copies), "timestamps": kafka_python_count(copies, WINDOW),
                    "many": kafka_python_count(many_copies)}
        frame = _frame(spark, cluster)

        def where(root):
            return _frame(spark, root).where((F.col("timestamp") >= lo) & (F.col("timestamp") < hi)).count()

        jobs = {
            "kafka-python count": lambda: kafka_python_count(copies),
            "count": lambda: _frame(spark, cluster).count(),
            "second count": frame.count,
            "planning": lambda: _planning(cluster),
            "planning, new path": lambda: _planning(links.new(cluster)),
            "kafka-python timestamps": lambda: kafka_python_count(copies, WINDOW),
            "timestamps": lambda: _frame(spark, cluster, **window).count(),
            "where": lambda: where(cluster),
            "timestamps, new path": lambda: _frame(spark, links.new(cluster), **window).count(),
            "where, new path": lambda: where(links.new(cluster)),
            "kafka-python many-2000": lambda: kafka_python_count(many_copies),
            "many-2000": lambda: _frame(spark, many).count(),
        }
        for name, job in jobs.items():          # warm: Python workers, page cache, what is kept
            job()
        assert frame.count() == expected["count"], (frame.count(), expected["count"])
        assert _frame(spark, cluster, **window).count() == expected["timestamps"]
        assert _frame(spark, many).count() == expected["many"]
        samples = {name: [] for name in jobs}
        names = list(jobs)
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                samples[name].append(_timed(jobs[name])[0])
            if log:
                log("round %d: %s" % (r + 1, ", ".join("%s %.2f" % (k, v[-1]) for k, v in samples.items())))
    finally:
        spark.stop()

    def ratio(num, den):
        return statistics.median(a / b for a, b in zip(samples[num], samples[den]))

    seconds = {name: statistics.median(v) for name, v in samples.items()}
    ratios = {
        "count_vs_kafka_python": ratio("kafka-python count", "count"),
        "second_count_vs_kafka_python": ratio("kafka-python count", "second count"),
        "timestamps_vs_where": ratio("where", "timestamps"),
        "timestamps_vs_where_new_path": ratio("where, new path", "timestamps, new path"),
        "timestamps_vs_kafka_python": ratio("kafka-python timestamps", "timestamps"),
        "many_2000_vs_kafka_python": ratio("kafka-python many-2000", "many-2000"),
    }
    return seconds, ratios


class SparkCounts:
    """The figures of `measure`, taken once (one Spark session) and returned by each track_*."""

    timeout = 1800

    def setup_cache(self):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise NotImplementedError("pyspark is not installed")
        from . import common

        common.note_quick()
        return measure(rounds=1 if common.asv_quick() else ROUNDS)

    setup_cache.timeout = 1800


#: the track_* of SparkCounts: name -> (figure, 0 = seconds / 1 = ratios)
TRACKS = {"count_vs_kafka_python": 1, "second_count_vs_kafka_python": 1, "timestamps_vs_where": 1,
          "timestamps_vs_where_new_path": 1, "timestamps_vs_kafka_python": 1, "many_2000_vs_kafka_python": 1,
          "planning": 0, "planning, new path": 0, "count": 0, "second count": 0}


def _track(key, kind):
    def track(self, m):
        return m[kind][key]
    track.unit = "ratio" if kind else "seconds"
    return track


for _key, _kind in TRACKS.items():
    setattr(SparkCounts, "track_" + _key.replace(", ", "_").replace(" ", "_") + ("" if _kind else "_seconds"),
            _track(_key, _kind))


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    args = ap.parse_args(argv)
    seconds, ratios = measure(args.rounds, log=lambda s: print(s, file=sys.stderr, flush=True))
    import kafkafmt

    print("kafkafmt from %s, load average %s" % (os.path.dirname(kafkafmt.__file__),
                                                 " ".join("%.1f" % x for x in os.getloadavg())))
    print("| measure | seconds (median) |\n|---|---|")
    for k, v in seconds.items():
        print("| %s | %.3f |" % (k, v))
    print("\n| ratio (median of rounds) | value |\n|---|---|")
    for k, v in ratios.items():
        print("| %s | %.2f |" % (k, v))


if __name__ == "__main__":
    main()

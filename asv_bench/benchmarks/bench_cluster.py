"""A cluster's log dirs: three brokers, each partition copied on two or three of them, written without kafkafmt.

Data (``cluster_root(scale)``): ``tests/kcluster.py`` (kafka-python's ``DefaultRecordBatchBuilder``, indexes
placed as ``LogSegment.append`` places them, checkpoints, ``partition.metadata``): 20 topics per scale step --
10 of 70 partitions on 3 brokers, 10 of 75 on 2 -- so 1,450 partitions in 3,600 folders at scale 1 (4,350 /
10,800 at 3, 14,500 / 36,000 at 10), ~146 records a partition (0..2x), 15 % of them empty, 6 % of the
followers behind their leader, 5 codecs, 8 KB segments (rolled). Written once per scale, cached.

* ``ClusterRead``: every record, each partition once, into Arrow -- ``read_log_dirs(root, threads=1).to_arrow()``
  -- against kafka-python reading every copy (every ``.log`` of every partition folder of every broker, CRCs
  checked as its fetcher does: `common.kafka_python_columns`) and keeping the most complete copy of each
  partition; into pandas (``to_pandas()``) against kafka-python reading the copies kafkafmt reads (chosen
  before the clock starts) into a DataFrame, and the peak memory of both; ``threads=2`` against ``threads=1``.
* ``ClusterCommands``: whole commands as a user runs them (``python -m kafkafmt stats --json``, ``verify``,
  ``report --json``, ``report --to page.html``, a process each, bytecode cached as after any first run) against
  a kafka-python script in a process of its own doing the read they all start with: every copy of every partition,
  CRCs checked, the most complete copy kept, and its figures (records, batches, bytes); and the page against
  the JSON report.
* ``ClusterScaling``: microseconds per partition folder at scale 1, 3 and 10, and the ratio of the time per
  folder at 3x (and 10x) the folders to 1x (linear: 1.0).

``python -m benchmarks.bench_cluster`` prints the figures without asv.
"""
from __future__ import annotations

import os
import sys

from . import common, corpus
from .common import kafka_python_columns, register_ratio, register_value, require_kafkafmt

SCALES = [1, 3, 10]


def _kcluster():
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests")
    if tests not in sys.path:
        sys.path.insert(0, os.path.abspath(tests))
    import kcluster

    return kcluster


def cluster_topics(scale):
    """The topics of a cluster of ``scale`` steps: {topic: (partitions, replication factor)}."""
    topics = {}
    for i in range(10 * scale):
        topics[f"rf3-topic-{i}"] = (70, 3)
        topics[f"rf2-topic-{i}"] = (75, 2)
    return topics


def cluster_root(scale):
    """The cluster of ``scale`` steps (written once, cached): its root folder."""
    root = corpus.cache_dir() / ("cluster-x%d" % scale)
    done = root / ".complete"
    if not done.exists():
        import shutil

        tmp = root.with_name(root.name + ".%d.tmp" % os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        _kcluster().write_cluster(str(tmp), cluster_topics(scale), seed=44 + scale, records=146,
                                  segment_bytes=8000, behind=0.06, empty=0.15)
        (tmp / ".complete").write_text("ok")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    return str(root)


def _folders(root):
    """(topic, partition, folder) of every partition folder of every broker's log dir."""
    out = []
    for broker in sorted(os.listdir(root)):
        log_dir = os.path.join(root, broker, "kafka-logs")
        if not os.path.isdir(log_dir):
            continue
        for name in sorted(os.listdir(log_dir)):
            topic, _, p = name.rpartition("-")
            folder = os.path.join(log_dir, name)
            if topic and p.isdigit() and os.path.isdir(folder):
                out.append((topic, int(p), folder))
    return out


def _copy_columns(folder):
    """kafka-python's columns of one copy: every .log of the folder in offset order."""
    cols = [[], [], [], [], []]
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".log")):
        with open(os.path.join(folder, name), "rb") as f:
            o, t, k, v, h = kafka_python_columns(f.read())
        cols[0].append(o)
        cols[1].append(t)
        cols[2] += k
        cols[3] += v
        cols[4] += h
    return cols


def peer_every_copy(scale):
    """kafka-python reading every copy of every partition, keeping the most complete copy's records."""
    root = cluster_root(scale)
    folders = _folders(root)

    def run():
        best = {}
        for topic, p, folder in folders:
            cols = _copy_columns(folder)
            n = len(cols[2])
            if (topic, p) not in best or n > best[(topic, p)][0]:
                best[(topic, p)] = (n, cols)
        return best
    return run


def kafkafmt_arrow(scale, threads=1):
    root = cluster_root(scale)
    return lambda: common.kafkafmt.read_log_dirs(root, threads=threads).to_arrow()


def kafkafmt_bounded(scale, bound):
    """``read_log_dirs`` of the cluster into Arrow from offset 50 (``bound="offset"``) or from the median record
    timestamp (``"time"``, found before any clock starts)."""
    root = cluster_root(scale)
    if bound == "offset":
        kwargs = dict(start_offset=50)
    else:
        import numpy as np

        ts = common.kafkafmt.read_log_dirs(root, columns=["timestamp"]).timestamp
        kwargs = dict(start_timestamp=int(np.median(ts)))
    return lambda: common.kafkafmt.read_log_dirs(root, threads=1, **kwargs).to_arrow()


def _chosen(scale):
    """The folders kafkafmt reads (one copy of each partition), chosen before any clock starts."""
    found = common.kafkafmt.log.discover(cluster_root(scale))
    return [(p.topic, p.partition, p.folder) for p in found.partitions]


def peer_pandas(scale):
    """kafka-python reading the copies kafkafmt reads into one pandas DataFrame (Spark's Kafka columns)."""
    import numpy as np
    import pandas as pd

    chosen = _chosen(scale)

    def run():
        offs, ts, keys, values, topics, parts = [], [], [], [], [], []
        for topic, p, folder in chosen:
            cols = _copy_columns(folder)
            n = len(cols[2])
            offs += cols[0]
            ts += cols[1]
            keys += cols[2]
            values += cols[3]
            topics += [topic] * n
            parts += [p] * n
        return pd.DataFrame({"key": keys, "value": values, "topic": topics, "partition": parts,
                             "offset": np.concatenate(offs) if offs else [],
                             "timestamp": pd.to_datetime(np.concatenate(ts) if ts else [], unit="ms", utc=True)})
    return run


def kafkafmt_pandas(scale):
    root = cluster_root(scale)
    return lambda: common.kafkafmt.read_log_dirs(root, threads=1).to_pandas()


def _check(scale):
    common.verified_once("cluster", str(scale), lambda: _check_now(scale))


def _check_now(scale):
    table = kafkafmt_arrow(scale)()
    best = peer_every_copy(scale)()
    assert table.num_rows == sum(n for n, _ in best.values())
    got = {}
    for t, p, o in zip(*(table.column(c).to_pylist() for c in ("topic", "partition", "offset"))):
        got.setdefault((t, p), []).append(o)
    for key, (n, cols) in best.items():
        want = [int(x) for a in cols[0] for x in a]
        assert got.get(key, []) == want, key


def peak_setup(scale, which):
    """For common.peak_delta_bytes: kafkafmt's or the peer's read of the cluster into pandas."""
    common.kafkafmt.set_cpu_count(1)
    make = kafkafmt_pandas if which == "kafkafmt" else peer_pandas
    fn = make(scale)

    def run():
        run.frame = fn()
    return run


def peak_ratio(scale):
    """Peak memory of kafkafmt's read into pandas ÷ kafka-python's (lower is better)."""
    mine = common.median_peak_delta("bench_cluster:peak_setup", scale, "kafkafmt")
    theirs = common.median_peak_delta("bench_cluster:peak_setup", scale, "peer")
    return round(mine / theirs, 2)


def arrow_peak_over_output(scale):
    """Peak memory of ``read_log_dirs(...).to_arrow()`` ÷ the Arrow table's bytes."""
    nbytes = kafkafmt_arrow(scale)().nbytes
    return round(common.median_peak_delta("bench_cluster:arrow_peak_setup", scale) / nbytes, 2)


def arrow_peak_setup(scale):
    common.kafkafmt.set_cpu_count(1)
    fn = kafkafmt_arrow(scale)

    def run():
        run.table = fn()
    return run


def _process(argv):
    """A callable running ``argv`` as a process of its own (its output dropped; bytecode written and read as on
    a user's machine)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run():
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if p.returncode not in (0, 1):
            raise RuntimeError(f"{argv[2:]} exited {p.returncode}: {p.stderr[-500:]!r}")
    return run


def peer_script(scale):
    """kafka-python in a process of its own: every copy read (CRCs checked), the most complete kept, figures."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from benchmarks import bench_cluster as b\n"
            "best = b.peer_every_copy(%d)()\n"
            "figures = {k: (n, sum(len(o) for o in cols[0])) for k, (n, cols) in best.items()}\n"
            "print(sum(n for n, _ in figures.values()), sum(m for _, m in figures.values()))\n") % (here, scale)
    return _process([sys.executable, "-c", code])


#: the commands timed, by the name of their ratio
COMMANDS = {"stats": ["stats", "--json", "--no-progress"], "verify": ["verify", "--no-progress"],
            "report_json": ["report", "--json"], "report_page": ["report", "--to", None]}


def command(scale, name):
    """``python -m kafkafmt <command> <the cluster>`` as a process."""
    import tempfile

    args = [a if a is not None else os.path.join(tempfile.gettempdir(), "kafkafmt-bench-page.html")
            for a in COMMANDS[name]]
    return _process([sys.executable, "-m", "kafkafmt", args[0], cluster_root(scale)] + args[1:])


def us_per_folder(scale, budget_s=None):
    (t,) = common.interleaved_medians([kafkafmt_arrow(scale)], budget_s)
    return round(1e6 * t / len(_folders(cluster_root(scale))), 1)


def per_folder_growth(scale, budget_s=None):
    """Time per folder at ``scale`` ÷ at scale 1 (linear: 1.0)."""
    return round(us_per_folder(scale, budget_s) / us_per_folder(1, budget_s), 3)


register_ratio("cluster_arrow_vs_kafka_python", "read_log_dirs of a cluster into Arrow × kafka-python reading every "
               "copy", [1], lambda s: (peer_every_copy(s), kafkafmt_arrow(s)), family="cluster",
               track="bench_cluster.ClusterRead.track_arrow_vs_kafka_python")
register_ratio("cluster_pandas_vs_kafka_python", "read_log_dirs of a cluster into pandas × kafka-python reading the "
               "same copies", [1], lambda s: (peer_pandas(s), kafkafmt_pandas(s)), family="cluster",
               track="bench_cluster.ClusterRead.track_pandas_vs_kafka_python")
register_ratio("cluster_threads_2_vs_1", "read_log_dirs of a cluster, 2 threads × 1", [1],
               lambda s: (kafkafmt_arrow(s, 1), kafkafmt_arrow(s, 2)), family="cluster",
               track="bench_cluster.ClusterRead.track_threads_2_vs_1")
for _name in ("stats", "verify", "report_json"):
    register_ratio(f"cluster_{_name}_vs_kafka_python", f"kafkafmt {_name.replace('_', ' --')} on a cluster × a "
                   "kafka-python script reading every copy", [1],
                   lambda s, _n=_name: (peer_script(s), command(s, _n)), family="cluster",
                   track=f"bench_cluster.ClusterCommands.track_{_name}_vs_kafka_python")
register_ratio("cluster_page_over_json", "kafkafmt report --to page.html ÷ report --json (lower is better)", [1],
               lambda s: (command(s, "report_page"), command(s, "report_json")), better="lower", family="cluster",
               track="bench_cluster.ClusterCommands.track_page_over_json")
for _bound, _what in (("offset", "an offset"), ("time", "a time")):
    register_ratio(f"cluster_from_{_bound}_over_whole", f"read_log_dirs of a cluster from {_what} ÷ the whole read "
                   "(lower is better: a read of less costs less)", [1],
                   lambda s, _b=_bound: (kafkafmt_bounded(s, _b), kafkafmt_arrow(s)), better="lower", family="cluster",
                   track=f"bench_cluster.ClusterRead.track_from_{_bound}_over_whole")
register_value("cluster_pandas_peak_vs_kafka_python", "read into pandas: peak memory ÷ kafka-python's", [1],
               peak_ratio, "ratio", better="lower", family="cluster",
               track="bench_cluster.ClusterRead.track_pandas_peak_vs_kafka_python")
register_value("cluster_arrow_peak_over_output", "read into Arrow: peak memory ÷ the table's bytes", [1],
               arrow_peak_over_output, "ratio", better="lower", family="cluster",
               track="bench_cluster.ClusterRead.track_arrow_peak_over_output")
register_value("cluster_us_per_folder", "read_log_dirs of a cluster: µs per partition folder", SCALES,
               us_per_folder, "µs", better="lower", family="cluster",
               track="bench_cluster.ClusterScaling.track_us_per_folder")


class ClusterRead:
    timeout = 1200

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        _check(1)
        self.arrow = kafkafmt_arrow(1)

    def time_read_log_dirs_arrow(self):
        self.arrow()

    def track_arrow_vs_kafka_python(self):
        return common.measure_registered("cluster_arrow_vs_kafka_python", 1)

    def track_pandas_vs_kafka_python(self):
        return common.measure_registered("cluster_pandas_vs_kafka_python", 1)

    def track_threads_2_vs_1(self):
        return common.measure_registered("cluster_threads_2_vs_1", 1)

    def track_from_offset_over_whole(self):
        return common.measure_registered("cluster_from_offset_over_whole", 1)

    def track_from_time_over_whole(self):
        return common.measure_registered("cluster_from_time_over_whole", 1)

    def track_pandas_peak_vs_kafka_python(self):
        return common.measure_registered("cluster_pandas_peak_vs_kafka_python", 1)

    def track_arrow_peak_over_output(self):
        return common.measure_registered("cluster_arrow_peak_over_output", 1)

    track_arrow_vs_kafka_python.unit = track_pandas_vs_kafka_python.unit = "ratio"
    track_threads_2_vs_1.unit = track_pandas_peak_vs_kafka_python.unit = "ratio"
    track_arrow_peak_over_output.unit = "ratio"


class ClusterCommands:
    """Whole commands on the cluster, a process each, against a kafka-python script (see the module doc)."""
    timeout = 1800

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        cluster_root(1)

    def track_stats_vs_kafka_python(self):
        return common.measure_registered("cluster_stats_vs_kafka_python", 1)

    def track_verify_vs_kafka_python(self):
        return common.measure_registered("cluster_verify_vs_kafka_python", 1)

    def track_report_json_vs_kafka_python(self):
        return common.measure_registered("cluster_report_json_vs_kafka_python", 1)

    def track_page_over_json(self):
        return common.measure_registered("cluster_page_over_json", 1)

    track_stats_vs_kafka_python.unit = track_verify_vs_kafka_python.unit = "ratio"
    track_report_json_vs_kafka_python.unit = track_page_over_json.unit = "ratio"


class ClusterScaling:
    params = SCALES
    param_names = ["scale"]
    timeout = 3600

    def setup(self, scale):
        require_kafkafmt()
        common.note_quick()
        cluster_root(scale)

    def track_us_per_folder(self, scale):
        return common.measure_registered("cluster_us_per_folder", scale)

    def track_per_folder_vs_scale_1(self, scale):
        return per_folder_growth(scale)

    track_us_per_folder.unit = "µs"
    track_per_folder_vs_scale_1.unit = "ratio"


def main():
    require_kafkafmt()
    _check(1)
    for key in ("cluster_arrow_vs_kafka_python", "cluster_pandas_vs_kafka_python", "cluster_threads_2_vs_1",
                "cluster_pandas_peak_vs_kafka_python", "cluster_arrow_peak_over_output"):
        print(f"{common.RATIOS[key]['title']}: {common.measure_registered(key, 1)}")
    for s in SCALES:
        print(f"µs per partition folder at scale {s}: {us_per_folder(s)}")
    for key in ("cluster_stats_vs_kafka_python", "cluster_verify_vs_kafka_python", "cluster_report_json_vs_kafka_python",
                "cluster_page_over_json"):
        print(f"{common.RATIOS[key]['title']}: {common.measure_registered(key, 1)}")


if __name__ == "__main__":
    main()

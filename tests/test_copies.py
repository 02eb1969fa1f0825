"""Copies of a partition read once by default (issue 34 item 11).

Two copies of a log dir (a backup beside the original; brokers' dirs read together, one of them a
follower behind) must not be counted twice: by default every door reads each (topic, partition,
offset) once -- the most complete copy -- and reports the others; `replicas="all"` still reads every
copy. Where copies disagree, every door says so, naming both paths and the first differing offset.

The truth is kafka-python's decoding of the copies' segment files (tests/kpy.py), never kafkafmt's own
readers: per partition, the records of its longest copy.
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import warnings

import pyarrow.parquet as pq
import pytest

import kafkafmt
import kcli
import kpy

T0 = 1_767_225_600_000


def _copy_tree(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    return dst


def kp_rows(folder):
    """(topic, partition, offset) of every data record kafka-python decodes in a partition folder."""
    m = re.fullmatch(r"(.+)-(\d+)", folder.name)
    rows = set()
    for f in sorted(folder.glob("*.log")):
        for r in kpy.kp_decode(f.read_bytes())["records"]:
            rows.add((m.group(1), int(m.group(2)), r["offset"]))
    return rows


def kp_truth(log_dirs):
    """{(topic, partition): number of records} of the longest copy of each partition (0 for a partition
    without records)."""
    best = {}
    for d in log_dirs:
        for folder in pathlib.Path(d).iterdir():
            if folder.is_dir() and re.fullmatch(r".+-\d+", folder.name):
                rows = kp_rows(folder)
                tp = folder.name.rsplit("-", 1)
                key = (tp[0], int(tp[1]))
                if len(rows) >= len(best.get(key, ())):
                    best[key] = rows
    return {k: len(v) for k, v in best.items()}


def _held(truth):
    """The partitions holding records: what counting rows finds."""
    return {k: v for k, v in truth.items() if v}


def _folders(log_dirs):
    """The partition folders of the log dirs (empty ones too)."""
    return sum(1 for d in log_dirs for f in pathlib.Path(d).iterdir() if f.is_dir() and re.fullmatch(r".+-\d+", f.name))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, real_corpus):
    """Three brokers' log dirs read together: broker-1 and broker-2 hold copies of a real broker's log
    dir (Kafka 2.7.1), broker-3 a copy of the sample whose orders-1 follows 1 segment behind, and a
    backup of broker-3 beside it (whole). Returns (root, log dirs, truth per partition)."""
    from kafkafmt.sample import sample_dir

    root = tmp_path_factory.mktemp("cluster")
    real = real_corpus / "broker-dirs" / "DonaldY__kafka-2.7.1" / "kafka-logs"
    dirs = [_copy_tree(real, root / "broker-1" / "kafka-logs"), _copy_tree(real, root / "broker-2" / "kafka-logs"),
            _copy_tree(sample_dir(), root / "broker-3" / "kafka-logs"),
            _copy_tree(sample_dir(), root / "backup" / "broker-3")]
    behind = dirs[2] / "orders-1"
    last = sorted(behind.glob("*.log"))[-1]
    for f in behind.glob(last.stem + ".*"):
        f.unlink()
    truth = kp_truth(dirs)
    assert sum(truth.values()) > 8000 and truth[("orders", 1)] == 2400
    return root, dirs, truth


def _quiet_read(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kafkafmt.KafkafmtWarning)
        return fn(*args, **kw)


def _counts(pairs):
    return dict(collections.Counter(pairs))


def _lib_counts(recs):
    t = recs.to_arrow()
    keys = list(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist()))
    assert len(keys) == len(set(keys)), "an offset read twice"
    return _counts((k[0], k[1]) for k in keys)


def test_library_reads_each_offset_once(cluster):
    root, dirs, truth = cluster
    recs = _quiet_read(kafkafmt.read_log_dirs, str(root))
    assert _lib_counts(recs) == _held(truth)
    copies = [e for e in recs.report if e.kind is kafkafmt.ReportKind.REPLICA]
    # every partition of broker-1 has a copy in broker-2, every one of broker-3 one in its backup
    assert len(copies) == len(truth) == _folders(dirs) // 2
    every = _quiet_read(kafkafmt.read_log_dirs, str(root), replicas="all")
    assert len(every) == sum(len(kp_rows(f)) for d in dirs for f in d.iterdir() if f.is_dir())
    chunks = _quiet_read(kafkafmt.iter_log_dirs, str(root), max_bytes=16 << 10)
    assert _counts(((c.topic, c.partition) for c in chunks for _ in range(len(c)))) == _held(truth)


def test_polars_scan_reads_each_offset_once(cluster):
    pl = pytest.importorskip("polars")
    import kafkafmt.polars

    root, _dirs, truth = cluster
    df = _quiet_read(lambda: kafkafmt.polars.scan_log_dirs(str(root)).select("topic", "partition", "offset").collect())
    assert df.n_unique() == len(df)
    got = df.group_by("topic", "partition").agg(pl.len().alias("n")).rows()
    assert {(t, p): n for t, p, n in got} == _held(truth)


def test_cli_reads_each_offset_once(cluster, tmp_path):
    """stats, verify, export, dump and report: each partition's records once (the default), every
    copy with --replicas all; one note names the copies not read."""
    root, dirs, truth = cluster
    stats = kcli.run("stats", "--json", root, check=0)
    got = collections.Counter()
    for d in json.loads(stats.stdout)["partitions"]:
        got[(d["topic"], d["partition"])] += d["records"]
    assert dict(got) == truth
    assert f"{len(truth)} copies of partitions not read" in stats.stderr

    verify = kcli.run("verify", "--json", root)
    summary = [json.loads(x) for x in verify.stdout.splitlines() if '"summary"' in x][0]
    assert (summary["partitions"], summary["records"]) == (len(truth), sum(truth.values())), summary

    out = tmp_path / "all.parquet"
    kcli.run("export", root, "--to", out, check=0)
    t = pq.read_table(out, columns=["topic", "partition", "offset"])
    assert _counts(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist())) == _held(truth)
    assert len(set(zip(*[t.column(c).to_pylist() for c in t.column_names]))) == len(t)

    dump = kcli.run("dump", "--records", "--json", root, check=0)
    recs = [json.loads(x) for x in dump.stdout.splitlines() if '"type":"record"' in x]
    data = [(d["topic"], d["partition"]) for d in recs if not d.get("isControl") and d.get("topic")]
    assert _counts(data) == _held(truth)

    report = kcli.run("report", "--json", root, check=0)
    doc = json.loads(report.stdout)
    assert {(p["topic"], p["partition"]): p["records"] for p in doc["partitions"]} == truth
    # every copy as data: each partition's copy read, and its other copy (in sync, or behind: orders-1)
    assert len(doc["partitions"]) == len(truth)
    states = collections.Counter((c["topic"], c["partition"], c["state"]) for c in doc["copies"])
    assert sum(states.values()) == 2 * len(truth)
    assert {(t, p) for t, p, s in states if s == "read"} == set(truth)
    assert states[("orders", 1, "behind")] == 1
    behind = [c for c in doc["copies"] if c["state"] == "behind"][0]
    assert behind["offsetLag"] > 0 and behind["logEndOffset"] + behind["offsetLag"] == truth[("orders", 1)]
    lag_keys = [(r["group"], r["topic"], r["partition"]) for r in doc["lag"]]
    assert lag_keys and len(lag_keys) == len(set(lag_keys))

    every = kcli.run("stats", "--json", "--replicas", "all", root, check=0)
    n = sum(d["records"] for d in json.loads(every.stdout)["partitions"])
    assert n == sum(len(kp_rows(f)) for d in dirs for f in d.iterdir() if f.is_dir())
    report_all = json.loads(kcli.run("report", "--json", "--replicas", "all", root, check=0).stdout)
    lag_all = [(r["group"], r["topic"], r["partition"]) for r in report_all["lag"]]
    assert sorted(lag_all) == sorted(lag_keys), "every copy of __consumer_offsets: each group's row once"


@pytest.mark.parametrize("door", ["batch", "stream"])
def test_spark_reads_each_offset_once(cluster, spark, door, tmp_path):
    root, _dirs, truth = cluster
    if door == "batch":
        df = spark.read.format("kafka-segments").load(str(root))
        rows = df.select("topic", "partition", "offset").collect()
    else:
        q = (spark.readStream.format("kafka-segments").option("startingOffsets", "earliest").load(str(root))
             .select("topic", "partition", "offset").writeStream.format("memory").queryName("copies_once")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(180)
            assert q.exception() is None, q.exception()
            rows = spark.table("copies_once").collect()
        finally:
            q.stop()
    keys = [(r["topic"], r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys))
    assert _counts((k[0], k[1]) for k in keys) == _held(truth)


# --- copies that disagree, copies batched apart, copies kept longer -----------------------------------------

def _values(n, changed=None):
    vals = [f"value-{i}".encode() * 3 for i in range(n)]
    if changed is not None:
        vals[changed] = b"not what the other copy holds"
    return vals


def _write(folder, values, **kw):
    kafkafmt.write_log_dir(str(folder), values=values, keys=[f"k{i % 7}".encode() for i in range(len(values))],
                           timestamps=[T0 + i for i in range(len(values))], segment_bytes=2048, **kw)


@pytest.fixture()
def disagreeing(tmp_path):
    """broker-a holds t-0 with 400 records, broker-b a copy 50 records shorter whose record 321 differs."""
    a, b = tmp_path / "broker-a" / "kafka-logs", tmp_path / "broker-b" / "kafka-logs"
    _write(a / "t-0", _values(400), batch_size=300)
    _write(b / "t-0", _values(350, changed=321), batch_size=300)
    truth_a = kpy.kp_decode(b"".join(f.read_bytes() for f in sorted((a / "t-0").glob("*.log"))))["records"]
    truth_b = kpy.kp_decode(b"".join(f.read_bytes() for f in sorted((b / "t-0").glob("*.log"))))["records"]
    differ = [ra["offset"] for ra, rb in zip(truth_a, truth_b) if ra["value"] != rb["value"]]
    assert differ == [321]
    return tmp_path, a / "t-0", b / "t-0"


def _names_both(text, a, b):
    return str(a) in text and str(b) in text and "321" in text


def test_disagreement_library(disagreeing):
    root, a, b = disagreeing
    recs = _quiet_read(kafkafmt.read_log_dirs, str(root))
    assert len(recs) == 400                               # the longer copy
    bad = [e for e in recs.report if e.kind is kafkafmt.ReportKind.MISMATCH]
    assert len(bad) == 1 and bad[0].offset == 321 and _names_both(bad[0].message, a, b), bad


def test_disagreement_cli(disagreeing, tmp_path):
    root, a, b = disagreeing
    v = kcli.run("verify", "--json", root, check=1)
    problems = [json.loads(x) for x in v.stdout.splitlines() if '"problem"' in x]
    assert [(p["severity"], p["offset"]) for p in problems] == [("error", 321)]
    assert _names_both(problems[0]["message"], a, b)
    s = kcli.run("stats", root, check=1)
    assert _names_both(s.stderr, a, b)
    e = kcli.run("export", root, "--to", tmp_path / "t.parquet")          # refused: nothing written
    assert e.returncode == 1 and _names_both(e.stderr, a, b) and not (tmp_path / "t.parquet").exists()
    e = kcli.run("export", root, "--to", tmp_path / "t.parquet", "--fail-on-data-loss", "false")
    assert e.returncode == 0 and _names_both(e.stderr, a, b)              # said, and the copy read exported
    assert pq.read_table(tmp_path / "t.parquet").num_rows == 400
    r = kcli.run("report", "--json", root, check=1)
    rows = [p for p in json.loads(r.stdout)["problems"] if p["offset"] == 321]
    assert len(rows) == 1 and _names_both(rows[0]["message"], a, b)


def test_disagreement_spark(disagreeing, spark):
    root, a, b = disagreeing
    with pytest.raises(Exception, match="disagree from offset 321"):
        spark.read.format("kafka-segments").load(str(root)).count()
    n = spark.read.format("kafka-segments").option("failOnDataLoss", "false").load(str(root)).count()
    assert n == 400


def test_copies_batched_apart_agree(tmp_path):
    """Two copies of the same records in different batches and segments (written apart): they agree --
    no MISMATCH, the other copy reported as read elsewhere."""
    _write(tmp_path / "a" / "kafka-logs" / "t-0", _values(300), batch_size=200)
    _write(tmp_path / "b" / "kafka-logs" / "t-0", _values(300), batch_size=700)
    sizes = [sorted(f.stat().st_size for f in (tmp_path / x / "kafka-logs" / "t-0").glob("*.log")) for x in "ab"]
    assert sizes[0] != sizes[1]
    recs = _quiet_read(kafkafmt.read_log_dirs, str(tmp_path))
    assert len(recs) == 300
    assert [e.kind for e in recs.report] == [kafkafmt.ReportKind.REPLICA]


def test_copy_kept_longer_is_said(tmp_path):
    """The longest copy lost its oldest segment (retention) that a backup still holds: the backup is
    not read, with a warning naming the offsets only it holds."""
    a = tmp_path / "broker" / "kafka-logs" / "t-0"
    _write(a, _values(500), batch_size=300)
    backup = tmp_path / "backup" / "kafka-logs" / "t-0"
    _write(backup, _values(400), batch_size=300)
    first = sorted(a.glob("*.log"))[0]
    for f in a.glob(first.stem + ".*"):
        f.unlink()
    start = kafkafmt.list_segments(str(a))[0].base_offset
    recs = _quiet_read(kafkafmt.read_log_dirs, str(tmp_path))
    assert len(recs) == 500 - start
    said = [e for e in recs.report if e.kind is kafkafmt.ReportKind.DUPLICATE]
    assert len(said) == 1 and f"offsets 0..{start - 1}" in said[0].message and str(backup) in said[0].file
    p = kcli.run("stats", tmp_path, check=0)
    assert f"offsets 0..{start - 1}" in p.stderr and "warning" in p.stderr


@pytest.mark.slow
def test_export_spark_engine_reads_each_offset_once(cluster, tmp_path):
    """`export --engine spark` hands every path to one kafka-segments read: copies under several paths
    are read once too (each path read apart used to add every copy), every copy with --replicas all."""
    pytest.importorskip("pyspark")
    root, dirs, truth = cluster
    out = tmp_path / "spark-out.parquet"
    env = {**os.environ, "PYTHONPATH": f"{kcli.REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "PYSPARK_PYTHON": sys.executable}
    p = subprocess.run([sys.executable, "-m", "kafkafmt", "export", "--engine", "spark", *map(str, dirs), "--to",
                        str(out)], capture_output=True, text=True, env=env, timeout=600)   # a JVM starts
    assert p.returncode == 0, p.stderr[-2000:]
    t = pq.read_table(out, columns=["topic", "partition", "offset"])
    keys = list(zip(*[t.column(c).to_pylist() for c in ("topic", "partition", "offset")]))
    assert len(keys) == len(set(keys))
    assert _counts((k[0], k[1]) for k in keys) == _held(truth)

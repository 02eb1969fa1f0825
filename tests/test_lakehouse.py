"""kafkafmt.lakehouse: log dirs into Iceberg (pyiceberg) and Delta (delta-rs) tables, incrementally.

Every table is read back independently -- pyiceberg's scan / deltalake, DuckDB over the data files
the table's metadata lists, Polars -- and compared row for row with the library's own read of the
same log dirs, across runs with appends in between (LogWriter continues a partition), runs killed
at many points, retention deleting segments, tiered uploads, and a real S3 API (moto on loopback).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt
from kafkafmt.lakehouse import DataLossError, export_table
from kafkafmt.lakehouse.layout import (added_fields, conform, merge_schema, parse_partition_by, PartitionField)
from kafkafmt.lakehouse.ledger import LOSS_KEY, OFFSETS_KEY, RANGES_KEY, app_id

import kcli
from s3server import S3

DAY = 86_400_000
T0 = 1_700_000_000_000          # 2023-11-14T22:13:20Z
FORMATS = ["iceberg", "delta"]


# --- sources -------------------------------------------------------------------------------------

def _records(n, first, seed):
    rng = np.random.default_rng(seed + first)
    keys = [None if i % 7 == 0 else b"k%d" % (first + i) for i in range(n)]
    values = [None if i % 11 == 5 else bytes(rng.integers(0, 256, int(rng.integers(5, 120)), dtype=np.uint8))
              for i in range(n)]
    # 2.5 days over the first 3000 records, so files split by day
    timestamps = [T0 + (first + i) * (DAY // 1200) for i in range(n)]
    headers = [[("h", b"%d" % (first + i)), ("trace", b"")] if i % 5 == 0 else [] for i in range(n)]
    return dict(keys=keys, values=values, timestamps=timestamps, headers=headers)


def append(root, topic, partition, n, seed=0, segment_bytes=32 << 10, compression="lz4"):
    """n more records in <root>/<topic>-<partition> (created or continued)."""
    path = os.path.join(root, f"{topic}-{partition}")
    with kafkafmt.LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=4096) as w:
        first = w.next_offset
        w.append(compression=compression, batch_size=50, **_records(n, first, seed))
    return path


def make_source(root, layout=(("orders", 0, 1500), ("orders", 1, 900), ("events", 0, 600)), seed=0):
    os.makedirs(root, exist_ok=True)
    for topic, p, n in layout:
        append(root, topic, p, n, seed=seed + p)
    return root


# --- normalized rows -----------------------------------------------------------------------------

def _hdrs(v):
    if v is None:
        return None
    return tuple((h["key"], bytes(h["value"]) if h["value"] is not None else None) for h in v) or None


def _us(v):
    if v is None:
        return None
    if hasattr(v, "timestamp"):
        return int(round(v.timestamp() * 1_000_000))
    return int(v)


def rows_of(table, headers=True):
    """Sorted tuples (topic, partition, offset, key, value, timestamp µs, timestampType, headers)."""
    if isinstance(table, pa.RecordBatchReader):     # DuckDB's .arrow()
        table = table.read_all()
    d = table.to_pydict() if isinstance(table, pa.Table) else table
    out = []
    n = len(d["offset"])
    for i in range(n):
        out.append((d["topic"][i], int(d["partition"][i]), int(d["offset"][i]),
                    None if d["key"][i] is None else bytes(d["key"][i]),
                    None if d["value"][i] is None else bytes(d["value"][i]),
                    _us(d["timestamp"][i]), int(d["timestampType"][i]),
                    _hdrs(d["headers"][i]) if headers else None))
    out.sort(key=lambda r: (r[0], r[1], r[2]))
    return out


def expected_rows(root, topics=None):
    recs = kafkafmt.read_log_dirs(root, topics)
    t = recs.to_arrow()
    t = t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                     t.column("timestamp").cast(pa.timestamp("us", tz="UTC")))
    return rows_of(t)


# --- reading tables back, four ways --------------------------------------------------------------

def _local(path):
    return path[len("file://"):] if path.startswith("file://") else path


def iceberg_table(warehouse, name="kafka.records", catalog=None, props=None):
    from kafkafmt.lakehouse.iceberg import open_catalog

    return open_catalog(warehouse, catalog, props).load_table(name)


def read_iceberg(warehouse, name="kafka.records"):
    """{reader: rows} for pyiceberg's scan, DuckDB over the table's data files, Polars."""
    import duckdb
    import polars as pl

    t = iceberg_table(warehouse, name)
    out = {"pyiceberg": rows_of(t.scan().to_arrow())}
    files = [_local(p) for p in t.inspect.files().column("file_path").to_pylist()]
    con = duckdb.connect()
    out["duckdb"] = rows_of(con.sql(f"select * from read_parquet({files!r})").arrow()) if files else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")
        df = pl.scan_iceberg(t).collect()
    out["polars"] = rows_of(df.to_arrow())
    return out


def read_delta(path, storage_options=None):
    """{reader: rows} for deltalake, DuckDB over the table's data files (hive partitions), Polars."""
    import duckdb
    import polars as pl
    from deltalake import DeltaTable

    dt = DeltaTable(path, storage_options=storage_options)
    out = {"deltalake": rows_of(dt.to_pyarrow_table())}
    files = [_local(p) for p in dt.file_uris()]
    if files and storage_options is None:
        con = duckdb.connect()
        rel = con.sql(f"select * from read_parquet({files!r}, hive_partitioning=true, hive_types_autocast=false)")
        out["duckdb"] = rows_of(rel.arrow())
    out["polars"] = rows_of(pl.read_delta(path, storage_options=storage_options).to_arrow())
    return out


def read_back(fmt, where):
    return read_iceberg(where) if fmt == "iceberg" else read_delta(where)


def export(fmt, roots, where, **kw):
    kw.setdefault("target_file_size", 64 << 10)
    if fmt == "iceberg":
        return export_table(roots, where, format="iceberg", table=kw.pop("table", "kafka.records"), **kw)
    return export_table(roots, where, format="delta", **kw)


def log_end(root):
    return {(p.topic, p.partition): kafkafmt.read_log_dir(p).offset[-1] + 1
            for p in kafkafmt.log._discovery.find_partitions(root)}


def assert_table_equals_source(fmt, where, root):
    want = expected_rows(root)
    for reader, rows in read_back(fmt, where).items():
        assert len(rows) == len(want), f"{reader}: {len(rows)} rows, the log dirs hold {len(want)}"
        assert len(set(r[:3] for r in rows)) == len(rows), f"{reader}: duplicate offsets"
        assert rows == want, f"{reader} differs from the library's read"


# --- the table: incremental runs -----------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_three_incremental_runs_equal_the_library_read(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"))
    where = str(tmp_path / "table")
    r1 = export(fmt, root, where)
    assert r1.rows == 3000 and len(r1.commits) == 1 and r1.files > 3
    assert r1.ranges == {("orders", 0): (0, 1500), ("orders", 1): (0, 900), ("events", 0): (0, 600)}
    assert_table_equals_source(fmt, where, root)

    again = export(fmt, root, where)            # nothing new: no commit, nothing written
    assert again.rows == 0 and again.commits == []

    append(root, "orders", 0, 700, seed=5)
    append(root, "events", 0, 40, seed=6)
    r2 = export(fmt, root, where)
    assert r2.rows == 740 and r2.ranges == {("orders", 0): (1500, 2200), ("events", 0): (600, 640)}
    assert_table_equals_source(fmt, where, root)

    append(root, "orders", 1, 333, seed=7)
    append(root, "orders", 2, 10, seed=8)       # a new partition (from offset 0: no data loss)
    r3 = export(fmt, root, where)
    assert r3.rows == 343
    assert r3.offsets == log_end(root)
    assert_table_equals_source(fmt, where, root)


def _commit_props(fmt, where):
    """[summary/commit-info dict] of the table's kafkafmt commits, oldest first."""
    if fmt == "iceberg":
        t = iceberg_table(where)
        return [dict(s.summary.additional_properties) for s in t.snapshots() if OFFSETS_KEY in
                (s.summary.additional_properties or {})]
    from deltalake import DeltaTable

    return [h for h in reversed(DeltaTable(where).history()) if OFFSETS_KEY in h]


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_commit_records_the_offsets_it_covers(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 1000), ("orders", 1, 500)))
    where = str(tmp_path / "table")
    export(fmt, root, where)
    append(root, "orders", 1, 100)
    export(fmt, root, where)
    props = _commit_props(fmt, where)
    assert len(props) == 2
    assert json.loads(props[0][RANGES_KEY]) == {"orders": {"0": [0, 1000], "1": [0, 500]}}
    assert json.loads(props[0][OFFSETS_KEY]) == {"orders": {"0": 1000, "1": 500}}
    assert json.loads(props[1][RANGES_KEY]) == {"orders": {"1": [500, 600]}}
    assert json.loads(props[1][OFFSETS_KEY]) == {"orders": {"0": 1000, "1": 600}}
    if fmt == "delta":              # the txn actions, as kafka-delta-ingest keeps them
        from deltalake import DeltaTable

        dt = DeltaTable(where)
        assert dt.transaction_version(app_id("orders", 0)) == 1000
        assert dt.transaction_version(app_id("orders", 1)) == 600


@pytest.mark.parametrize("fmt", FORMATS)
def test_files_are_partitioned_sorted_and_sized(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 3000), ("orders", 1, 3000)))
    where = str(tmp_path / "table")
    target = 48 << 10
    r = export(fmt, root, where, target_file_size=target)
    if fmt == "iceberg":
        t = iceberg_table(where)
        assert [str(f) for f in t.spec().fields] == ["1000: topic: identity(3)", "1001: timestamp_day: day(6)"]
        assert [f.source_id for f in t.sort_order().fields] == [4, 5]
        files = t.inspect.files().to_pylist()
        paths = [_local(f["file_path"]) for f in files]
        parts = [(f["partition"]["topic"], f["partition"]["timestamp_day"]) for f in files]
        for f in files:         # column statistics, as pyiceberg's own writes have them
            assert f["lower_bounds"] and f["record_count"] > 0
    else:
        from deltalake import DeltaTable

        dt = DeltaTable(where)
        assert dt.metadata().partition_columns == ["topic", "timestamp_day"]
        adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
        paths = [os.path.join(where, a["path"]) for a in adds]
        parts = [(a["partition.topic"], a["partition.timestamp_day"]) for a in adds]
        for a in adds:
            assert a["num_records"] > 0 and a["min.offset"] is not None
    assert len(paths) == r.files > 6
    sizes = [os.path.getsize(p) for p in paths]
    assert max(sizes) < 2 * target, sizes
    # per (topic, day) partition, every file but the last is near the target
    full = [s for s in sizes if s > target // 2]
    assert len(full) >= len(sizes) // 2, sizes
    for path, (topic, day) in zip(paths, parts):
        t = pq.read_table(path)
        off = t.column("offset").to_numpy()
        part = t.column("partition").to_numpy()
        key = part.astype(np.int64) * (1 << 40) + off
        assert (np.diff(key) > 0).all(), f"{path} is not sorted by partition and offset"
        ts = t.column("timestamp").cast(pa.int64()).to_numpy() // 1000
        days = set((ts // DAY).tolist())
        assert topic == "orders"
        if fmt == "iceberg":
            assert days == {(day - datetime.date(1970, 1, 1)).days}
        else:
            assert {str(np.datetime64(d, "D")) for d in days} == {str(day)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_partition_by_choices(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 300), ("orders", 1, 300)))
    for spec, names in [("none", []), ("topic,partition,hour(timestamp)", ["topic", "partition", "timestamp_hour"]),
                        ("month(timestamp)", ["timestamp_month"]), ("year(timestamp),timestampType",
                                                                    ["timestamp_year", "timestampType"])]:
        where = str(tmp_path / f"t-{len(names)}-{names[:1]}")
        export(fmt, root, where, partition_by=spec)
        if fmt == "iceberg":
            assert [f.name for f in iceberg_table(where).spec().fields] == names
        else:
            from deltalake import DeltaTable

            assert DeltaTable(where).metadata().partition_columns == names
        assert_table_equals_source(fmt, where, root)
        with pytest.raises(ValueError, match="partitioned by"):
            export(fmt, root, where, partition_by="topic,day(timestamp)" if names else "topic")


def test_parse_partition_by():
    assert parse_partition_by(None) == (PartitionField("topic"), PartitionField("timestamp", "day"))
    assert parse_partition_by("none") == ()
    assert parse_partition_by(" partition , HOUR(timestamp)") == (PartitionField("partition"),
                                                                  PartitionField("timestamp", "hour"))
    for bad in ("value", "day(offset)", "bucket(timestamp)", "topic,topic"):
        with pytest.raises(ValueError):
            parse_partition_by(bad)


# --- schema evolution ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_added_columns_evolve_the_table_and_none_is_dropped(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 400),))
    where = str(tmp_path / "table")
    export(fmt, root, where, headers=False)
    append(root, "orders", 0, 100)
    export(fmt, root, where, batch_metadata=True)           # adds headers and the batch columns
    append(root, "orders", 0, 50)
    export(fmt, root, where)                                # without them: the columns stay, null
    if fmt == "iceberg":
        t = iceberg_table(where).scan().to_arrow()
    else:
        from deltalake import DeltaTable

        t = DeltaTable(where).to_pyarrow_table()
    assert {"headers", "producerId", "codec", "leaderEpoch"} <= set(t.column_names)
    t = t.sort_by("offset")
    pid = t.column("producerId").to_pylist()
    assert pid[:400] == [None] * 400 and None not in pid[400:500] and pid[500:] == [None] * 50
    assert t.column("codec").to_pylist()[450] == "lz4"
    hdr = t.column("headers").to_pylist()
    assert all(h is None for h in hdr[:400]) and hdr[400] and hdr[500]
    assert t.num_rows == 550 and t.column("offset").to_pylist() == list(range(550))


def test_struct_values_evolve_by_added_fields():
    """The slot typed values use: a struct value column gains a field; the table keeps every one."""
    old = pa.schema([("value", pa.struct([("a", pa.int64()), ("b", pa.string())]))])
    new = pa.schema([("value", pa.struct([("a", pa.int64()), ("c", pa.float64())])), ("extra", pa.int32())])
    assert added_fields(old, new) == [("value", "c"), ("extra",)]
    merged = merge_schema(old, new)
    assert merged.field("value").type == pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())])
    chunk = pa.table({"value": pa.array([{"a": 1, "c": 0.5}, None], new.field("value").type)})
    out = conform(chunk, merged)
    assert out.column("value").to_pylist() == [{"a": 1, "b": None, "c": 0.5}, None]
    assert out.column("extra").to_pylist() == [None, None]


# --- crashes: a run killed anywhere leaves the last commit; the next run goes on exactly ----------

def _segment_count(root):
    return sum(f.endswith(".log") for _, _, files in os.walk(root) for f in files)


@pytest.mark.parametrize("fmt", FORMATS)
def test_many_small_partitions_are_read_at_once_each_from_its_ledger(fmt, units_read, tmp_path):
    """An export of many small partitions reads them many at once (one pass, as `read_log_dirs`) and writes
    their rows together; a run going on reads each from its own next offset, in the same pass: a partition grown by
    a new segment from that offset, and one grown inside its last segment (read from the byte its index points at).
    Each run's table equals the library's read of the log dirs, every record once."""
    root = str(tmp_path / "logs")
    for p in range(12):
        append(root, ("orders", "events")[p % 2], p // 2, 20 + 9 * p, seed=p, segment_bytes=2 << 10)
    where = str(tmp_path / "table")
    r1 = export(fmt, root, where)
    assert (units_read["chunks"], units_read["fallback"]) == (12, 0) and r1.rows == sum(20 + 9 * p for p in range(12))
    assert _segment_count(root) > 12            # (several segments a partition: a chunk each, one pass)
    assert_table_equals_source(fmt, where, root)

    units_read.update(chunks=0, fallback=0)
    for p in range(4):                          # new segments, the first from the ledger's offset
        append(root, ("orders", "events")[p % 2], p // 2, 30, seed=40 + p, segment_bytes=1)
    for p in range(4, 8):                       # more records in the last segment
        append(root, ("orders", "events")[p % 2], p // 2, 7, seed=40 + p, segment_bytes=1 << 20)
    append(root, "orders", 9, 15, seed=99)      # a new partition
    r2 = export(fmt, root, where)
    assert r2.rows == 4 * 30 + 4 * 7 + 15
    assert r2.ranges == {**{(("orders", "events")[p % 2], p // 2): (r1.offsets[(("orders", "events")[p % 2], p // 2)],
                                                                   r1.offsets[(("orders", "events")[p % 2], p // 2)]
                                                                   + (30 if p < 4 else 7)) for p in range(8)},
                         ("orders", 9): (0, 15)}
    # read at once: the 4 grown by new segments, the 4 grown inside their last segment, the 4 not grown, the new one
    assert (units_read["chunks"], units_read["fallback"]) == (13, 0)
    assert r2.offsets == log_end(root)
    assert_table_equals_source(fmt, where, root)


def test_a_new_delta_tables_ledger_asks_no_transaction_version(tmp_path, monkeypatch):
    """The first export into a Delta table kafkafmt creates asks no ``txn`` version (there is none: it made the
    table, and nothing since); the next one asks each partition's; a table made elsewhere with ``txn`` actions
    in its first commit has them read."""
    from deltalake import CommitProperties, DeltaTable, Transaction

    from kafkafmt.lakehouse.delta import DeltaTable as Target
    from kafkafmt.lakehouse.layout import kafka_schema

    asked = []
    real = DeltaTable.transaction_version
    monkeypatch.setattr(DeltaTable, "transaction_version", lambda self, app: asked.append(app) or real(self, app))
    root = make_source(str(tmp_path / "logs"))
    where = str(tmp_path / "table")
    r1 = export("delta", root, where)
    assert asked == [] and r1.rows == 3000
    append(root, "orders", 0, 10, seed=3)
    r2 = export("delta", root, where)
    assert sorted(asked) == sorted(app_id(t, p) for t, p in r1.offsets) and r2.ranges == {("orders", 0): (1500, 1510)}
    assert_table_equals_source("delta", where, root)

    other = str(tmp_path / "other")
    DeltaTable.create(other, kafka_schema(True, False),
                      commit_properties=CommitProperties(app_transactions=[Transaction(app_id("orders", 0), 700)]))
    t = Target(other)
    t.open(kafka_schema(True, False), (), target_file_size=1 << 20, compression="snappy")
    assert t.ledger([("orders", 0), ("orders", 1)])[0] == {("orders", 0): 700}


def test_a_large_write_is_split_into_files_of_about_the_target_size(tmp_path):
    """The rows of many small partitions come to the writer many at once: a write of ten files' worth of rows
    goes to ten files or so, each near the target size and none far past it (the first one's compression ratio
    guessed, the others' learnt), the rows in the order given."""
    from kafkafmt.lakehouse.writer import RollingWriter

    n = 20_000
    table = pa.table({"offset": np.arange(n, dtype=np.int64),
                      "value": pa.array([b"%08d" % i * 4 for i in range(n)], pa.binary())})
    target = table.nbytes // 10
    closed = []

    def open_file(key):
        path = str(tmp_path / f"{len(closed) + len(w.files)}.parquet")
        return path, open(path, "wb")

    def close_file(path, key, size, metadata, rows):
        closed.append((path, size, rows))
        return path

    w = RollingWriter(table.schema, open_file, close_file, target_size=target, compression=None)
    w.write(("t",), table)
    files = w.close()
    sizes = [size for _, size, _ in closed]
    assert 8 <= len(files) <= 14, sizes
    assert sizes[0] < 2.5 * target and max(sizes[1:]) < 1.5 * target, sizes
    assert sum(s > target // 2 for s in sizes) >= len(sizes) - 1, sizes
    got = pa.concat_tables([pq.read_table(f) for f in files])
    assert got.equals(table)


def _cli_export(fmt, root, where, env=None, check=None, extra=()):
    args = ["export", root, "--format", fmt, "--to", where, "--target-file-size", "24K", "--commit-every", "40K",
            *extra]
    if fmt == "iceberg":
        args += ["--table", "kafka.records"]
    return kcli.run(*args, env=env, check=check)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_killed_runs_never_duplicate_or_skip(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 1500), ("orders", 1, 900)))
    where = str(tmp_path / "table")
    crashed = 0
    # crash points count chunks read, files closed and commits made (kafkafmt._util.durable.crash_point)
    for n in (1, 2, 3, 5, 8, 13):
        p = _cli_export(fmt, root, where, env={"KAFKAFMT_CRASH_AFTER": str(n)})
        crashed += p.returncode == 86
        append(root, "orders", n % 2, 37, seed=n)
    assert crashed >= 4
    _cli_export(fmt, root, where, check=0)
    assert_table_equals_source(fmt, where, root)
    assert "up to date" in _cli_export(fmt, root, where, check=0).stderr


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_sigkill_at_random_moments(fmt, tmp_path):
    """SIGKILL at random moments once the run has started writing data files."""
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 20000), ("orders", 1, 20000)))
    where = str(tmp_path / "table")
    args = [sys.executable, "-m", "kafkafmt", "export", root, "--format", fmt, "--to", where,
            "--target-file-size", "32K", "--commit-every", "64K"] + (["--table", "kafka.records"]
                                                                     if fmt == "iceberg" else [])
    env = dict(os.environ, PYTHONPATH=str(kcli.REPO))
    rng = np.random.default_rng(26)

    def parquet_files():
        return sum(f.endswith(".parquet") for _, _, fs in os.walk(where) for f in fs) if os.path.isdir(where) else 0

    killed = 0
    for delay in rng.uniform(0.0, 0.6, 5):
        before = parquet_files()
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and parquet_files() == before and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=60)
    assert killed >= 2
    _cli_export(fmt, root, where, check=0)
    assert_table_equals_source(fmt, where, root)


# --- data loss -----------------------------------------------------------------------------------

def _delete_first_segments(folder, keep):
    logs = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    for name in logs[:len(logs) - keep]:
        stem = name[:-4]
        for f in os.listdir(folder):
            if f.startswith(stem):
                os.unlink(os.path.join(folder, f))


@pytest.mark.parametrize("fmt", FORMATS)
def test_retention_deleting_unexported_offsets_is_data_loss(fmt, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 500), ("orders", 1, 500)))
    where = str(tmp_path / "table")
    export(fmt, root, where)
    folder = append(root, "orders", 0, 3000)
    _delete_first_segments(folder, keep=3)          # retention: offsets 500.. gone before exported
    first = min(int(f[:20]) for f in os.listdir(folder) if f.endswith(".log"))
    assert first > 500
    with pytest.raises(DataLossError, match=f"orders-0: offsets 500..{first - 1}"):
        export(fmt, root, where)
    p = _cli_export(fmt, root, where)
    assert p.returncode == 1 and "data loss" in p.stderr and "--fail-on-data-loss false" in p.stderr
    assert len(_commit_props(fmt, where)) == 1      # nothing written
    with pytest.warns(kafkafmt.KafkafmtWarning, match="data loss"):
        r = export(fmt, root, where, fail_on_data_loss=False)
    assert r.ranges[("orders", 0)] == (500, 3500) and r.rows == 3500 - first
    props = _commit_props(fmt, where)
    assert json.loads(props[-1][LOSS_KEY]) == [{"topic": "orders", "partition": 0, "start": 500, "end": first,
                                                 "kind": "retention",
                                                 "reason": "were deleted from the source (retention) before they "
                                                           "were exported"}]
    rows = read_back(fmt, where)
    assert all(len(v) == 1000 + 3500 - first for v in rows.values())
    assert export(fmt, root, where).commits == []   # the loss was taken: no more complaints


# --- tiered + local ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_tiered_and_local_segments_of_one_partition(fmt, tmp_path):
    from test_tiered import _id, _write_local, kafka_layout_objects

    logs = tmp_path / "logs"
    folder = append(str(logs), "orders", 0, 2500)
    tiered = tmp_path / "remote"
    upload = tmp_path / "upload-0"
    shutil.copytree(folder, upload)
    segs = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    old = segs[:len(segs) // 2]
    for f in os.listdir(upload):                     # the uploads: the older half
        if f[:20].isdigit() and f"{f[:20]}.log" not in old:
            os.unlink(upload / f)
    _write_local(str(tiered), kafka_layout_objects(str(upload), "orders", 0, _id(1)))
    for f in os.listdir(folder):                     # local: the newer half (the broker deleted the rest)
        if f[:20].isdigit() and f"{f[:20]}.log" in old[:-1]:
            os.unlink(os.path.join(folder, f))
    where = str(tmp_path / "table")
    roots = [str(logs), str(tiered)]
    r = export(fmt, roots, where)
    assert r.rows == 2500 and r.data_loss == []
    append(str(logs), "orders", 0, 100)
    assert export(fmt, roots, where).ranges == {("orders", 0): (2500, 2600)}
    want = rows_of(_us_table(kafkafmt.read_log_dirs(roots).to_arrow()))
    assert len(want) == 2600
    for reader, rows in read_back(fmt, where).items():
        assert rows == want, reader


def _us_table(t):
    return t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                        t.column("timestamp").cast(pa.timestamp("us", tz="UTC")))


# --- object storage (a real S3 API on loopback) --------------------------------------------------

@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server in a process of its own: delta-rs holds the GIL while it waits for some of
    its requests, so a server thread in the test process would never answer them."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = ("import time; from moto.server import ThreadedMotoServer as S; "
            f"s = S(ip_address='127.0.0.1', port={port}, verbose=False); s.start(); time.sleep(10**6)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("moto's S3 server did not start")
            time.sleep(0.2)
    try:
        yield S3(endpoint)
    finally:
        proc.kill()
        proc.wait()


def test_s3_source_and_tables(s3, tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 800), ("orders", 1, 400)))
    bucket = s3.bucket()
    s3.upload_dir(root, bucket, "kafka-logs")
    src = f"s3://{bucket}/kafka-logs"
    opts = s3.storage_options
    catalog = "sqlite:///" + str(tmp_path / "catalog.db")
    r = export_table(src, f"s3://{bucket}/lake", format="iceberg", table="kafka.orders", catalog=catalog,
                     storage_options=opts, target_file_size=32 << 10)
    assert r.rows == 1200
    d = export_table(src, f"s3://{bucket}/delta/orders", format="delta", storage_options=opts,
                     target_file_size=32 << 10)
    assert d.rows == 1200
    append(root, "orders", 1, 150)
    s3.upload_dir(root, bucket, "kafka-logs")
    assert export_table(src, f"s3://{bucket}/lake", format="iceberg", table="kafka.orders", catalog=catalog,
                        storage_options=opts).ranges == {("orders", 1): (400, 550)}
    want = expected_rows(root)
    from kafkafmt.lakehouse.delta import delta_storage_options
    from kafkafmt.lakehouse.iceberg import open_catalog

    t = open_catalog(f"s3://{bucket}/lake", catalog, opts).load_table("kafka.orders")
    assert t.location().startswith(f"s3://{bucket}/lake")
    assert rows_of(t.scan().to_arrow()) == want
    # the command line, with --storage-option, continues the Delta table
    kcli.run("export", src, "--format", "delta", "--to", f"s3://{bucket}/delta/orders",
             *[a for k, v in [("key", opts["key"]), ("secret", opts["secret"]), ("endpoint_url", s3.endpoint)]
               for a in ("--storage-option", f"{k}={v}")], check=0)
    got = read_delta(f"s3://{bucket}/delta/orders", delta_storage_options(opts))
    for reader, rows in got.items():
        assert rows == want, reader
    keys = [o["Key"] for o in s3.client.list_objects_v2(Bucket=bucket, Prefix="delta/orders/")["Contents"]]
    assert any("topic=orders/timestamp_day=" in k for k in keys)


# --- the command line ----------------------------------------------------------------------------

def test_cli_usage_errors(tmp_path):
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 10),))
    p = kcli.run("export", root, "--format", "iceberg", "--to", str(tmp_path / "wh"), check=2)
    assert "--table" in p.stderr
    p = kcli.run("export", root, "--format", "iceberg", "--to", "s3://bucket/wh", "--table", "a.b", check=2)
    assert "--catalog" in p.stderr
    p = kcli.run("export", root, "--format", "delta", "--to", str(tmp_path / "d"), "--table", "a.b", check=2)
    p = kcli.run("export", root, "--format", "delta", "--to", str(tmp_path / "d"), "--partition-by", "value",
                 check=2)
    assert "cannot partition by" in p.stderr


def test_cli_backfill_then_daily_runs(tmp_path):
    """The README's two commands: a backfill, then a daily incremental run."""
    root = make_source(str(tmp_path / "logs"))
    wh = str(tmp_path / "lake")
    p = kcli.run("export", root, "--topics", "orders", "--format", "iceberg", "--to", wh, "--table", "kafka.orders",
                 check=0)
    assert "exported 2400 records of 2 partitions" in p.stderr
    append(root, "orders", 0, 10)
    p = kcli.run("export", root, "--topics", "orders", "--format", "iceberg", "--to", wh, "--table", "kafka.orders",
                 check=0)
    assert "exported 10 records" in p.stderr
    assert os.path.exists(os.path.join(wh, "catalog.db"))
    t = iceberg_table(wh, "kafka.orders")
    assert rows_of(t.scan().to_arrow()) == expected_rows(root, ["orders"])


# --- real broker files ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_real_broker_dirs(fmt, real_corpus, tmp_path):
    """Log dirs written by real brokers (internal topics included) exported and read back."""
    done = 0
    for i, d in enumerate(sorted((real_corpus / "broker-dirs").iterdir())):
        try:
            want = expected_rows(str(d))
        except kafkafmt.KafkafmtError:
            continue            # damaged on purpose: the export stops there as the read does
        if not want:
            continue
        where = str(tmp_path / f"t{i}")
        r = export(fmt, str(d), where)
        assert r.rows == len(want)
        for reader, rows in read_back(fmt, where).items():
            assert rows == want, (d.name, reader)
        assert export(fmt, str(d), where).commits == []
        done += 1
    assert done >= 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_undoing_a_commit_undoes_its_offsets(fmt, tmp_path):
    """The ledger is part of the table's state: after a rollback (Iceberg) or a restore (Delta) to
    before a run, the next run exports that run's offsets again -- once."""
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 500),))
    where = str(tmp_path / "table")
    export(fmt, root, where)
    if fmt == "iceberg":
        first = iceberg_table(where).current_snapshot().snapshot_id
    else:
        from deltalake import DeltaTable

        first = DeltaTable(where).version()
    append(root, "orders", 0, 200)
    assert export(fmt, root, where).rows == 200
    if fmt == "iceberg":
        t = iceberg_table(where)
        t.manage_snapshots().rollback_to_snapshot(first).commit()
    else:
        DeltaTable(where).restore(first)
    assert len(read_back(fmt, where)["polars"]) == 500
    r = export(fmt, root, where)
    assert r.rows == 200 and r.ranges == {("orders", 0): (500, 700)}
    assert_table_equals_source(fmt, where, root)
    append(root, "orders", 0, 5)
    assert export(fmt, root, where).ranges == {("orders", 0): (700, 705)}
    assert_table_equals_source(fmt, where, root)


def test_iceberg_ledger_survives_expired_snapshots(tmp_path):
    """Another writer's snapshot on top and ours expired: the table property written with every
    commit stands in for the summary that is gone."""
    root = make_source(str(tmp_path / "logs"), layout=(("orders", 0, 300),))
    where = str(tmp_path / "table")
    export("iceberg", root, where)
    t = iceberg_table(where)
    ours = t.current_snapshot().snapshot_id
    t.append(t.scan(limit=0).to_arrow())            # another writer's (empty) snapshot
    t = iceberg_table(where)
    assert t.current_snapshot().snapshot_id != ours
    t.maintenance.expire_snapshots().by_id(ours).commit()
    t = iceberg_table(where)
    assert t.snapshot_by_id(ours) is None
    append(root, "orders", 0, 40)
    assert export("iceberg", root, where).ranges == {("orders", 0): (300, 340)}
    assert_table_equals_source("iceberg", where, root)


@pytest.mark.parametrize("fmt", FORMATS)
def test_read_committed_runs_take_a_transaction_once_it_is_decided(fmt, tmp_path):
    """read_committed: aborted records never reach the table; an open transaction's records are
    left for the run after its COMMIT, and taken once."""
    folder = str(tmp_path / "logs" / "pay-0")

    def put(w, n, **kw):
        first = w.next_offset
        w.append(**_records(n, first, 1), **kw)

    with kafkafmt.LogWriter(folder) as w:
        put(w, 10)
        put(w, 5, producer_id=7, transactional=True)
        w.append_control("abort", producer_id=7)
        put(w, 5, producer_id=8, transactional=True)
        w.append_control("commit", producer_id=8)
        put(w, 4, producer_id=9, transactional=True)            # still open at the first run
        put(w, 3)
    where = str(tmp_path / "table")
    root = str(tmp_path / "logs")
    r1 = export(fmt, root, where, isolation="read_committed")
    assert r1.rows == 15                    # 10 + 5 committed; stops at the open transaction
    with kafkafmt.LogWriter(folder) as w:
        w.append_control("commit", producer_id=9)
        put(w, 2)
    r2 = export(fmt, root, where, isolation="read_committed")
    assert r2.rows == 4 + 3 + 2
    want = rows_of(_us_table(kafkafmt.read_log_dir(folder, isolation="read_committed").to_arrow()))
    for reader, rows in read_back(fmt, where).items():
        assert rows == want, reader
    assert export(fmt, root, where, isolation="read_committed").commits == []

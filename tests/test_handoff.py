"""Arrow-native hand-off (issue 27): the PyCapsule interface of Records, Table and the readers'
streams, taken by pyarrow, Polars and DuckDB without copying value bytes; kafkafmt.polars'
LazyFrame whose filters prune what is read -- always the answer of reading everything and
filtering, with the bytes it saves measured by the storage's statistics -- and DuckDB's SQL on it.

The reference for every hand-off is ``Records.to_arrow()``; for every pushed-down filter, Polars'
own filter over a full read.
"""
from __future__ import annotations

import datetime as dt
import os
import pathlib
import shutil
import uuid

import duckdb
import fsspec
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import kafkafmt
import kafkafmt.polars as kpl
from kafkafmt.storage import statistics

T0 = 1_767_225_600_000
HOUR = 3_600_000


def _utc(ms):
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """A log dir: ``events-0``, 24 hours of records whose timestamps are not monotonic (+-30 s of
    jitter around a sorted clock), 1 MiB segments with indexes; ``audit-0``, a smaller partition."""
    root = tmp_path_factory.mktemp("day") / "logs"
    rng = np.random.default_rng(27)
    for name, n in (("events-0", 50_000), ("audit-0", 8_000)):
        ts = T0 + np.sort(rng.integers(0, 24 * HOUR, n)) + rng.integers(-30_000, 30_000, n)
        values = [bytes(rng.integers(97, 123, int(k), dtype=np.uint8)) for k in rng.integers(100, 300, n)]
        keys = [None if i % 7 == 0 else b"k%d" % (i % 100) for i in range(n)]
        w = kafkafmt.LogWriter(root / name, segment_bytes=1 << 20)
        w.append(keys=keys, values=values, timestamps=ts.tolist(), max_records=200)
        w.close()
    return root


@pytest.fixture(scope="module")
def memory_day(day):
    """The `day` log dir in fsspec's memory store (``memory://``): its reads are ranged reads that
    the storage statistics count."""
    fs = fsspec.filesystem("memory")
    base = f"/handoff-{uuid.uuid4().hex}/logs"
    for folder in day.iterdir():
        for f in folder.iterdir():
            fs.pipe(f"{base}/{folder.name}/{f.name}", f.read_bytes())
    yield "memory://" + base
    fs.rm(base.rsplit("/", 1)[0], recursive=True)


def _real_roots(real_corpus):
    return sorted(str(p) for p in (real_corpus / "broker-dirs").iterdir() if p.is_dir())


def _no_copy(table, recs):
    """The value bytes and the offsets of `table` are the ones `recs` holds."""
    value = table.column("value").chunk(0) if isinstance(table, pa.Table) else table.column("value")
    offset = table.column("offset").chunk(0) if isinstance(table, pa.Table) else table.column("offset")
    return (value.buffers()[2].address == recs.value.data.ctypes.data
            and offset.buffers()[1].address == recs.offset.ctypes.data)


# --- the PyCapsule interface -----------------------------------------------------------------------------

def test_records_export_to_arrow_without_copying(sample):
    recs = kafkafmt.read_log_dir(sample / "orders-0")
    expected = recs.to_arrow()
    assert len(recs) and recs.value.nbytes
    via_stream = pa.RecordBatchReader.from_stream(recs).read_all()
    via_table = pa.table(recs)
    via_array = pa.record_batch(recs)
    for got in (via_stream, via_table, via_array):
        assert pa.Table.from_batches([got]).equals(expected) if isinstance(got, pa.RecordBatch) else \
            got.equals(expected)
        assert _no_copy(got, recs)
    assert pa.schema(recs) == expected.schema
    # Polars: a DataFrame from the stream (from_arrow makes a struct Series of any foreign exporter)
    frame = pl.DataFrame(recs)
    assert frame.equals(pl.from_arrow(expected))
    assert pl.from_arrow(recs).struct.unnest().equals(frame)
    offsets = frame["offset"].to_numpy()
    assert offsets.ctypes.data == recs.offset.ctypes.data        # Polars holds the same int64 buffer
    # DuckDB reads it by name
    assert duckdb.sql("SELECT count(*), sum(octet_length(value)) FROM recs").fetchall() == [(len(recs),
                                                                                            recs.value.nbytes)]


def test_batch_table_exports_to_arrow(sample):
    recs = kafkafmt.read_log_dir(sample / "orders-1")
    batches = recs.batches
    assert pa.table(batches).equals(batches.to_arrow())
    assert pl.DataFrame(batches).equals(pl.from_arrow(batches.to_arrow()))
    got = pa.table(batches).column("base_offset").chunk(0)
    assert got.buffers()[1].address == batches["base_offset"].ctypes.data


def test_stream_is_iterable_as_before_and_pulled_chunk_by_chunk(sample):
    folder = sample / "orders-0"
    chunks = list(kafkafmt.iter_log_dir(folder, max_bytes=1 << 14))
    assert len(chunks) > 3
    stream = kafkafmt.iter_log_dir(folder, max_bytes=1 << 14)
    reader = pa.RecordBatchReader.from_stream(stream)
    first = reader.read_next_batch()
    # the reader pulled one chunk: the rest is still there for the iterator (bounded memory)
    rest = list(stream)
    assert len(rest) == len(chunks) - 1
    with pytest.raises(ValueError, match="read once"):     # a second consumer would see nothing
        pa.RecordBatchReader.from_stream(stream)
    assert pa.Table.from_batches([first]).equals(chunks[0].to_arrow())
    # the whole stream equals to_arrow of the whole read, batch by batch on the chunks' buffers
    whole = pa.RecordBatchReader.from_stream(kafkafmt.iter_log_dir(folder, max_bytes=1 << 14)).read_all()
    assert whole.equals(kafkafmt.read_log_dir(folder).to_arrow())


def test_stream_batches_share_the_chunks_buffers(sample):
    stream = kafkafmt.iter_log_dir(sample / "clicks-0", max_bytes=1 << 13)
    for recs in stream:
        batches = recs.to_arrow().to_batches()
        assert len(batches) == 1 and _no_copy(batches[0], recs)
    seen = []

    def keep(chunks):
        for recs in chunks:
            seen.append(recs)
            yield recs

    from kafkafmt.read import RecordStream

    wrapped = RecordStream(keep(kafkafmt.iter_log_dir(sample / "clicks-0", max_bytes=1 << 13)))
    reader = pa.RecordBatchReader.from_stream(wrapped)
    for k, batch in enumerate(reader):
        assert _no_copy(batch, seen[k])
    assert len(seen) > 1


@pytest.mark.parametrize("columns", [None, ["offset"], ["key", "timestamp"], ["value", "headers"]])
@pytest.mark.parametrize("binary", ["contiguous", "view"])
def test_stream_schema_is_known_before_reading(sample, columns, binary):
    stream = kafkafmt.iter_log_dirs(str(sample), columns=columns, binary=binary)
    schema = stream.schema            # nothing read yet
    assert pa.schema(stream) == schema
    chunks = list(kafkafmt.iter_log_dirs(str(sample), columns=columns, binary=binary))
    assert chunks and all(c.to_arrow().schema == schema for c in chunks)
    table = pa.RecordBatchReader.from_stream(stream).read_all()
    assert table.schema == schema
    assert table.equals(kafkafmt.read_log_dirs(str(sample), columns=columns, binary=binary).to_arrow())
    # a read that finds nothing still has it
    empty = pa.RecordBatchReader.from_stream(kafkafmt.iter_log_dir(sample / "orders-0", start_offset=1 << 40,
                                                                   columns=columns, binary=binary)).read_all()
    assert empty.num_rows == 0 and empty.schema == schema


def _consumers(make, expected):
    """What pyarrow, Polars and DuckDB read from a fresh stream of `make()`, each compared with `expected`."""
    assert pa.RecordBatchReader.from_stream(make()).read_all().equals(expected)
    assert pa.table(make()).equals(expected)
    assert pl.DataFrame(make()).equals(pl.from_arrow(expected))
    stream = make()
    got = duckdb.sql('SELECT topic, partition, "offset", epoch_ms(timestamp) AS ts, "timestampType", key, value, '
                     'headers FROM stream').pl()
    want = pl.from_arrow(expected).select("topic", "partition", "offset", pl.col("timestamp").dt.epoch("ms")
                                          .alias("ts"), "timestampType", "key", "value", "headers")
    assert got.equals(want)


def test_log_dirs_through_every_consumer_sample(sample):
    expected = kafkafmt.read_log_dirs(str(sample)).to_arrow()
    assert expected.num_rows
    _consumers(lambda: kafkafmt.iter_log_dirs(str(sample), max_bytes=1 << 15), expected)
    assert kpl.scan_log_dirs(str(sample)).collect().equals(pl.from_arrow(expected))


def test_log_dirs_through_every_consumer_real_brokers(real_corpus):
    roots = _real_roots(real_corpus)
    assert roots
    for root in roots:
        expected = kafkafmt.read_log_dirs(root).to_arrow()
        assert expected.num_rows, root
        _consumers(lambda: kafkafmt.iter_log_dirs(root), expected)
        assert kpl.scan_log_dirs(root).collect().equals(pl.from_arrow(expected)), root


# --- pushdown: always the full read's answer ---------------------------------------------------------------

def _predicates(full):
    """Filters over topic, partition, offset and timestamp (pushed down), other columns (not), and
    mixtures, with bounds taken from the data."""
    ts = full["timestamp"].sort()
    offs = full["offset"].sort()
    t1, t2 = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    o1, o2 = int(offs[len(offs) // 4]), int(offs[3 * len(offs) // 4])
    topics = full["topic"].unique().sort().to_list()
    parts = full["partition"].unique().sort().to_list()
    c = pl.col
    return [
        c("timestamp") >= t1,
        c("timestamp") > t1,
        c("timestamp") == t1,
        (c("timestamp") >= t1) & (c("timestamp") < t2),
        c("timestamp").is_between(t1, t2),
        c("timestamp").is_between(t1, t2, closed="none"),
        c("timestamp") < t1,
        t1 <= c("timestamp"),
        c("timestamp").dt.cast_time_unit("us") >= t1,
        c("offset") >= o1,
        c("offset") > o1,
        c("offset") <= o2,
        c("offset") == o1,
        c("offset").is_between(o1, o2),
        (c("offset") >= o1) & (c("offset") < o2) & (c("timestamp") >= t1),
        c("topic") == topics[0],
        c("topic").is_in(topics[-2:]),
        c("topic").str.starts_with(topics[-1][:2]),
        c("partition") == parts[-1],
        (c("topic") == topics[0]) | (c("partition") == parts[-1]),
        ~(c("topic") == topics[0]),
        (c("topic") == topics[-1]) & (c("offset") >= o1) & (c("timestamp") >= t2),
        (c("offset") >= o1) | (c("timestamp") >= t2),
        c("value").bin.ends_with(b"a") & (c("offset") >= o1),
        c("offset") >= -5,
        c("offset") >= 1 << 40,
        c("timestamp") >= _utc(0),
    ]


def _check_pushdown(root, full):
    lf = kpl.scan_log_dirs(root, max_bytes=1 << 16)
    for pred in _predicates(full):
        want = full.filter(pred)
        got = lf.filter(pred).collect()
        assert got.equals(want), (root, str(pred), len(got), len(want))
        # projection: only what the query selects, the predicate's columns included
        got = lf.filter(pred).select("offset", "partition").collect()
        assert got.equals(want.select("offset", "partition")), (root, str(pred))


def test_pushdown_gives_the_full_reads_answer(sample, day):
    for root in (str(sample), str(day)):
        full = pl.DataFrame(kafkafmt.read_log_dirs(root))
        assert len(full)
        _check_pushdown(root, full)


@pytest.mark.filterwarnings("ignore:.*scanned instead")     # (seeks in real partitions without index files)
def test_pushdown_gives_the_full_reads_answer_real_brokers(real_corpus):
    for root in _real_roots(real_corpus):
        _check_pushdown(root, pl.DataFrame(kafkafmt.read_log_dirs(root)))


def test_an_upper_time_bound_is_not_an_offsets_for_times_end(day):
    """Timestamps in a partition are not monotonic: reading up to the first record at or past the
    end of a window (end_timestamp) loses later records that are inside it; the scan does not."""
    folder = day / "events-0"
    full = pl.DataFrame(kafkafmt.read_log_dir(folder))
    assert (full["timestamp"].diff().drop_nulls().dt.total_milliseconds() < 0).any()
    lo, hi = _utc(T0 + 20 * HOUR), _utc(T0 + 21 * HOUR)
    pred = (pl.col("timestamp") >= lo) & (pl.col("timestamp") < hi)
    want = full.filter(pred)
    naive = pl.DataFrame(kafkafmt.read_log_dir(folder, start_timestamp=lo, end_timestamp=hi)).filter(pred)
    assert len(naive) < len(want)          # the trap is in this data
    assert kpl.scan_log_dirs(str(day)).filter(pred).collect().equals(
        pl.DataFrame(kafkafmt.read_log_dirs(str(day))).filter(pred))


def test_an_offset_bound_never_reads_deleted_records(day, tmp_path):
    """An offset bound below the log start offset (DeleteRecords) is raised to it: the records the
    segments still hold below it are not in the full read, so not in the scan either."""
    root = tmp_path / "logs"
    shutil.copytree(day / "events-0", root / "events-0")
    start = 1234
    (root / "log-start-offset-checkpoint").write_text(f"0\n1\nevents 0 {start}\n")
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=x\n")
    full = pl.DataFrame(kafkafmt.read_log_dirs(str(root)))
    assert full["offset"].min() == start
    for pred in (pl.col("offset") >= 0, pl.col("offset") < start + 10, pl.col("offset").is_between(10, start + 5)):
        assert kpl.scan_log_dirs(str(root)).filter(pred).collect().equals(full.filter(pred)), str(pred)


# --- pushdown: measured in bytes read -----------------------------------------------------------------------

def _fetched(run):
    before = statistics()
    out = run()
    return out, (statistics() - before).bytes_fetched


def test_a_time_window_reads_a_fraction_of_the_partition(memory_day, day):
    lo, hi = _utc(T0 + 20 * HOUR), _utc(T0 + 21 * HOUR)
    pred = (pl.col("timestamp") >= lo) & (pl.col("timestamp") < hi) & (pl.col("topic") == "events")
    full, full_bytes = _fetched(lambda: pl.DataFrame(kafkafmt.read_log_dirs(memory_day)))
    scanned, scan_bytes = _fetched(lambda: kpl.scan_log_dirs(memory_day).filter(pred).collect())
    assert scanned.equals(full.filter(pred)) and len(scanned)
    logs = {f.name: sum(s.stat().st_size for s in f.glob("*.log")) for f in day.iterdir()}
    assert full_bytes >= sum(logs.values())
    # the window starts at hour 20 of 24: from its segment to the end, plus the index lookups
    assert scan_bytes < 0.35 * logs["events-0"], (scan_bytes, logs)
    # the other topic is not read at all
    other, other_bytes = _fetched(lambda: kpl.scan_log_dirs(memory_day).filter(pl.col("topic") == "audit")
                                  .select("offset").collect())
    assert other.equals(full.filter(pl.col("topic") == "audit").select("offset"))
    assert other_bytes < logs["audit-0"] + logs["events-0"] * 0.05


def test_offsets_and_head_read_a_fraction(memory_day, day):
    full = pl.DataFrame(kafkafmt.read_log_dir(day / "events-0"))
    o = int(full["offset"][len(full) // 2])
    pred = (pl.col("offset") >= o) & (pl.col("offset") < o + 1000) & (pl.col("partition") == 0)
    got, nbytes = _fetched(lambda: kpl.scan_log_dirs(memory_day, ["events"]).filter(pred).collect())
    assert got.equals(full.filter(pred)) and len(got) == 1000
    log_bytes = sum(s.stat().st_size for s in (day / "events-0").glob("*.log"))
    assert nbytes < 0.25 * log_bytes
    first, head_bytes = _fetched(lambda: kpl.scan_log_dirs(memory_day, ["events"]).head(10).collect())
    assert first.equals(full.head(10)) and head_bytes < 0.25 * log_bytes


def test_duckdb_sql_prunes_through_the_lazy_frame(memory_day, day):
    lf = kpl.scan_log_dirs(memory_day)
    lo = _utc(T0 + 22 * HOUR)
    sql = ("SELECT partition, \"offset\", value FROM lf WHERE topic = 'events' AND timestamp >= $lo "
           "ORDER BY \"offset\"")
    before = statistics()
    got = duckdb.sql(sql, params={"lo": lo}).pl()       # DuckDB finds `lf` by its name here
    nbytes = (statistics() - before).bytes_fetched
    full = pl.DataFrame(kafkafmt.read_log_dirs(str(day)))
    want = full.filter((pl.col("topic") == "events") & (pl.col("timestamp") >= lo)).select(
        "partition", "offset", "value").sort("offset")
    assert len(want) and got.equals(want)
    log_bytes = sum(s.stat().st_size for s in (day / "events-0").glob("*.log"))
    if int(duckdb.__version__.split(".")[0]) >= 2:     # DuckDB < 2 (Python < 3.11) reads the LazyFrame whole
        assert nbytes < 0.25 * log_bytes
    # a registered view, offsets
    con = duckdb.connect()
    con.register("kafka", lf)
    n = con.sql('SELECT count(*) FROM kafka WHERE "offset" BETWEEN 100 AND 199 AND partition = 0').fetchall()[0][0]
    assert n == full.filter(pl.col("offset").is_between(100, 199) & (pl.col("partition") == 0)).height


# --- progress -------------------------------------------------------------------------------------------------

def test_scan_progress_follows_the_terminal_rules(sample, capsys, monkeypatch):
    monkeypatch.delenv("KAFKAFMT_PROGRESS", raising=False)
    kpl.scan_log_dirs(str(sample), progress=True).collect()
    assert capsys.readouterr().err == ""          # stderr is no terminal here
    monkeypatch.setenv("KAFKAFMT_PROGRESS", "1")
    kpl.scan_log_dirs(str(sample), progress=True).collect()
    err = capsys.readouterr().err
    assert "kafkafmt scan" in err and "B/s" in err
    kpl.scan_log_dirs(str(sample)).collect()
    assert capsys.readouterr().err == ""          # not asked for


def test_scan_rejects_unknown_options(sample):
    with pytest.raises(TypeError, match="columns"):
        kpl.scan_log_dirs(str(sample), columns=["offset"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'topic'"):
        kafkafmt.iter_log_dirs(str(sample), topic="orders")


def test_sample_sizes_are_real(sample):
    """(guards the tests above: the sample has several topics and partitions and multi-chunk partitions)"""
    parts = kafkafmt.list_partitions(str(sample))
    assert len({p.topic for p in parts}) > 2 and len(parts) > 4
    assert os.path.getsize(pathlib.Path(kafkafmt.list_segments(str(sample / "orders-0"))[0].log)) > 1 << 15

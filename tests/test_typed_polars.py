"""Typed values in kafkafmt.polars' LazyFrame (and DuckDB's SQL over it): the frame of
``scan_log_dirs(..., value_format=...)`` is the library's typed read, whatever the filter or projection,
and filters on topic, partition, offset and timestamp prune what is read as they do untyped."""
from __future__ import annotations

import datetime as dt
import uuid

import duckdb
import fsspec
import polars as pl
import pytest

import kafkafmt
import kafkafmt.polars as kpl
from kafkafmt.storage import statistics

from avro_support import RegistryMirror

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "sku", "type": "string"},
    {"name": "price", "type": "double"}]}
ORDER_V2 = {**ORDER_V1, "fields": ORDER_V1["fields"] + [
    {"name": "note", "type": ["null", "string"], "default": None}]}
REFUND = {"type": "record", "name": "Refund", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "reason", "type": "string"}]}
T0 = 1_767_225_600_000
N = 6000


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """A log dir with _schemas: ``orders`` (two partitions, written with two versions, small segments
    with indexes, one value that is not Avro) and ``refunds`` (another record type)."""
    root = tmp_path_factory.mktemp("shop") / "logs"
    m = RegistryMirror()
    m.register("orders-value", ORDER_V1)
    m.register("orders-value", ORDER_V2)
    m.register("refunds-value", REFUND)
    m.write(root)
    v1, v2 = m.serializer(ORDER_V1), m.serializer(ORDER_V2)
    for p in (0, 1):
        values = [(v1 if i % 2 else v2)({"id": i, "sku": f"sku-{i % 37}", "price": i / 4,
                                          **({} if i % 2 else {"note": None if i % 3 else f"n{i}"})})
                  for i in range(N)]
        values[100] = b'{"id": 100}'
        w = kafkafmt.LogWriter(root / f"orders-{p}", segment_bytes=64 << 10)
        w.append(keys=[b"k%d" % i for i in range(N)], values=values, timestamps=[T0 + 1000 * i for i in range(N)],
                 max_records=50)
        w.close()
    ref = m.serializer(REFUND, topic="refunds")
    kafkafmt.write_log_dir(str(root / "refunds-0"), values=[ref({"id": i, "reason": "late"}) for i in range(300)])
    return root


def _library(root, **kw):
    return pl.from_arrow(kafkafmt.read_log_dirs(str(root), **kw).to_arrow())


@pytest.mark.parametrize("kw", [dict(topics=["orders"], value_format="avro", key_format="string"),
                                dict(value_format="avro", untyped_topics="bytes"),
                                dict(topics=["orders", "refunds"], value_format="registry")])
def test_the_typed_frame_is_the_librarys_typed_read(shop, kw):
    full = _library(shop, **kw)
    lf = kpl.scan_log_dirs(str(shop), **kw)
    assert lf.collect_schema() == full.schema            # known before reading
    assert lf.collect().equals(full)


def test_filters_and_projections_give_the_full_reads_answer(shop):
    kw = dict(topics=["orders", "refunds"], value_format="avro")
    full = _library(shop, **kw)
    lf = kpl.scan_log_dirs(str(shop), max_bytes=1 << 14, **kw)
    c = pl.col
    ts = _utc(T0 + 1000 * 4000)
    for pred in [c("offset") >= 3000, c("offset").is_between(10, 200), c("timestamp") >= ts,
                 (c("topic") == "orders") & (c("partition") == 1) & (c("offset") < 500),
                 c("value").struct.field("sku") == "sku-3", c("valueError").is_not_null(),
                 c("value").struct.field("note").is_not_null() & (c("offset") > 2000)]:
        want = full.filter(pred)
        assert len(want), str(pred)
        assert lf.filter(pred).collect().equals(want), str(pred)
        for cols in (["offset", "partition"], ["value"], ["valueSchemaId", "offset"], ["valueError"]):
            assert lf.filter(pred).select(cols).collect().equals(want.select(cols)), (str(pred), cols)
    assert lf.head(7).collect().equals(full.head(7))


def _utc(ms):
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


@pytest.fixture(scope="module")
def memory_shop(shop):
    """`shop` in fsspec's memory store, whose ranged reads the storage statistics count."""
    fs = fsspec.filesystem("memory")
    base = f"/typed-polars-{uuid.uuid4().hex}/logs"
    for folder in shop.iterdir():
        for f in folder.iterdir():
            fs.pipe(f"{base}/{folder.name}/{f.name}", f.read_bytes())
    yield "memory://" + base
    fs.rm(base.rsplit("/", 1)[0], recursive=True)


def _fetched(run):
    before = statistics()
    out = run()
    return out, (statistics() - before).bytes_fetched


def test_offset_and_time_filters_read_a_fraction(shop, memory_shop):
    full = _library(shop, topics=["orders"], value_format="avro")
    logs = sum(f.stat().st_size for f in (shop / "orders-0").glob("*.log"))
    lf = kpl.scan_log_dirs(memory_shop, topics=["orders"], value_format="avro")
    for pred in [(pl.col("offset") >= 5500) & (pl.col("partition") == 0),
                 (pl.col("timestamp") >= _utc(T0 + 1000 * 5700)) & (pl.col("partition") == 0)]:
        got, nbytes = _fetched(lambda: lf.filter(pred).collect())
        assert got.equals(full.filter(pred)) and len(got)
        # the same bytes as the untyped scan reads: the same pruning, a fraction of the partition
        untyped, untyped_bytes = _fetched(lambda: kpl.scan_log_dirs(memory_shop, topics=["orders"])
                                          .filter(pred).collect())
        assert nbytes == untyped_bytes and untyped["offset"].equals(got["offset"])
        assert nbytes < 0.3 * logs, (str(pred), nbytes, logs)


def test_duckdb_sql_over_typed_values(shop, memory_shop):
    lf = kpl.scan_log_dirs(memory_shop, topics=["orders"], value_format="avro")
    full = _library(shop, topics=["orders"], value_format="avro")
    before = statistics()
    got = duckdb.sql("SELECT value.sku AS sku, count(*) AS n, sum(value.price) AS total FROM lf "
                     "WHERE partition = 1 AND \"offset\" >= 5000 GROUP BY 1 ORDER BY 1").pl()
    nbytes = (statistics() - before).bytes_fetched
    want = (full.filter((pl.col("partition") == 1) & (pl.col("offset") >= 5000))
            .group_by(pl.col("value").struct.field("sku")).agg(pl.len().alias("n"),
                                                                pl.col("value").struct.field("price").sum()
                                                                .alias("total"))
            .sort("sku"))
    assert got["sku"].to_list() == want["sku"].to_list() and got["n"].to_list() == want["n"].cast(pl.Int64).to_list()
    assert got["total"].to_list() == pytest.approx(want["total"].to_list())
    logs = sum(f.stat().st_size for f in (shop / "orders-1").glob("*.log"))
    if int(duckdb.__version__.split(".")[0]) >= 2:
        assert nbytes < 0.3 * logs


def test_typed_options_are_checked_when_the_frame_is_made(shop):
    with pytest.raises(kafkafmt.SchemaNotFoundError, match="orders-key"):
        kpl.scan_log_dirs(str(shop), topics=["orders"], key_format="avro")
    with pytest.raises(ValueError, match="unknown value format"):
        kpl.scan_log_dirs(str(shop), value_format="yaml")

"""Every filter a query hands the kafka-segments source gives the rows the library gives: pushed
filters belong to the one query that pushed them, and a filter the source cannot express is left to
Spark, never a crash (issue 21: a DataFrame kept a previous query's offset filter; ``!=`` raised)."""
import datetime as dt
import os

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
import kafkafmt.spark  # noqa: E402
from kafkafmt.spark.source import bounds_from_filters  # noqa: E402
from pyspark.sql import datasource as sds  # noqa: E402


def _library_rows(sample):
    recs = kafkafmt.read_log_dirs(sample, columns=["key"])
    return {"topic": np.asarray(recs.topic, object), "partition": np.asarray(recs.partition),
            "offset": recs.offset, "timestamp": recs.timestamp,
            "keynull": np.asarray(recs.key.is_null() if hasattr(recs.key, "is_null") else
                                  [k is None for k in recs.key.to_pylist()])}


#: (SQL condition, the same condition on the library's columns)
CONDITIONS = [
    ("offset >= 200", lambda c: c["offset"] >= 200),
    ("offset < 3 or offset > 215", lambda c: (c["offset"] < 3) | (c["offset"] > 215)),
    ("offset != 3", lambda c: c["offset"] != 3),
    ("not (offset in (1, 2, 50))", lambda c: ~np.isin(c["offset"], [1, 2, 50])),
    ("offset in (1, 2, 700)", lambda c: np.isin(c["offset"], [1, 2, 700])),
    ("offset <=> 7", lambda c: c["offset"] == 7),
    ("offset between 10 and 20 and partition = 1", lambda c: (c["offset"] >= 10) & (c["offset"] <= 20)
     & (c["partition"] == 1)),
    ("topic != 'orders'", lambda c: c["topic"] != "orders"),
    ("topic like 'pay%'", lambda c: np.char.startswith(c["topic"].astype(str), "pay")),
    ("topic like '%s'", lambda c: np.char.endswith(c["topic"].astype(str), "s")),
    ("topic in ('orders', 'clicks') and partition in (0, 2)", lambda c: np.isin(c["topic"], ["orders", "clicks"])
     & np.isin(c["partition"], [0, 2])),
    ("key is null", lambda c: c["keynull"]),
    ("partition != 0 and offset > 100", lambda c: (c["partition"] != 0) & (c["offset"] > 100)),
]


def _check_one_dataframe(spark, sample):
    cols = _library_rows(sample)
    df = spark.read.format("kafka-segments").load(str(sample))
    total = len(cols["offset"])
    assert df.count() == total
    for sql, where in CONDITIONS:
        assert df.where(sql).count() == int(where(cols).sum()), sql
        # the same DataFrame asked again without the filter: every row
        assert df.count() == total, f"after {sql}"
    assert len(df.collect()) == total
    df.createOrReplaceTempView("kafka_records")
    assert spark.sql("select count(*) from kafka_records").first()[0] == total
    assert spark.sql("select count(*) from kafka_records where offset >= 200").first()[0] == \
        int((cols["offset"] >= 200).sum())
    assert spark.sql("select count(*) from kafka_records").first()[0] == total
    ts = int(np.sort(cols["timestamp"])[-50])
    since = dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc)
    assert df.where(df.timestamp >= since).count() == int((cols["timestamp"] >= ts).sum())
    assert df.count() == total


@pytest.mark.slow
def test_one_dataframe_many_queries(spark, sample):
    """The session's registration (kafkafmt.spark.register's choice for this Spark)."""
    _check_one_dataframe(spark, sample)


@pytest.mark.slow
def test_pushdown_where_spark_scopes_it(spark, sample):
    """With pushdown forced, each query on a fresh DataFrame gives the library's rows (every
    filter kind goes through bounds_from_filters in a real planner); whether a reused DataFrame
    is also right is exactly what pushdown_is_scoped_to_scans predicts for this Spark."""
    cols = _library_rows(sample)
    scoped = kafkafmt.spark.pushdown_is_scoped_to_scans(spark)
    try:
        kafkafmt.spark.register(spark, filter_pushdown=True)
        for sql, where in CONDITIONS:
            fresh = spark.read.format("kafka-segments").load(str(sample))
            assert fresh.where(sql).count() == int(where(cols).sum()), sql
        df = spark.read.format("kafka-segments").load(str(sample))
        df.count()
        df.where("offset >= 200").count()
        assert (df.count() == len(cols["offset"])) == scoped
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        kafkafmt.spark.register(spark)
    if not scoped:   # the default registration leaves every filter to Spark here
        _check_one_dataframe(spark, sample)


def test_every_filter_kind_is_pushed_or_left():
    """bounds_from_filters never raises and pushes only what it expresses exactly."""
    ts = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    kinds = [sds.EqualTo(("offset",), 3), sds.EqualNullSafe(("offset",), 3), sds.GreaterThan(("offset",), 3),
             sds.GreaterThanOrEqual(("offset",), 3), sds.LessThan(("offset",), 3),
             sds.LessThanOrEqual(("offset",), 3), sds.In(("offset",), (1, 5)), sds.IsNull(("key",)),
             sds.IsNotNull(("offset",)), sds.Not(sds.EqualTo(("offset",), 3)),
             sds.Not(sds.In(("topic",), ("a",))), sds.StringStartsWith(("topic",), "or"),
             sds.StringEndsWith(("topic",), "s"), sds.StringContains(("topic",), "d"),
             sds.EqualTo(("topic",), "orders"), sds.In(("partition",), (0, 1)),
             sds.GreaterThanOrEqual(("timestamp",), ts), sds.LessThan(("timestamp",), ts),
             sds.EqualTo(("value",), b"x"), sds.EqualTo(("offset",), 3.5), sds.EqualTo(("a", "b"), 1)]
    for f in kinds:
        bounds, rest = bounds_from_filters([f])
        pushed = f not in rest
        exact = isinstance(f, (sds.EqualTo, sds.EqualNullSafe, sds.GreaterThan, sds.GreaterThanOrEqual,
                               sds.LessThan, sds.LessThanOrEqual)) and f.attribute == ("offset",) and \
            isinstance(f.value, int)
        exact |= f.attribute in (("topic",), ("partition",)) if isinstance(
            f, (sds.EqualTo, sds.In, sds.StringStartsWith)) else False
        assert pushed == exact, f
    b, rest = bounds_from_filters([sds.In(("offset",), (4, 9))])
    assert (b.offset_lo, b.offset_hi, len(rest)) == (4, 10, 1)       # narrows the read, Spark filters
    b, _ = bounds_from_filters([sds.StringStartsWith(("topic",), "or"), sds.StringStartsWith(("topic",), "pa")])
    assert b.empty

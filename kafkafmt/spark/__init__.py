"""PySpark data source for Kafka segment files: ``spark.read.format("kafka-segments")``.

>>> import kafkafmt.spark
>>> from kafkafmt.sample import sample_dir
>>> _ = kafkafmt.spark.register(spark)          # returns the session
>>> df = spark.read.format("kafka-segments").option("subscribe", "orders").load(sample_dir())
>>> df.count()
4800

Needs pyspark >= 4.1 (``pip install 'kafkafmt[spark]'``). Spark's Python workers must run the
Python that has kafkafmt installed: set ``PYSPARK_PYTHON`` (e.g. to ``sys.executable``) before the
session starts.
"""
from __future__ import annotations

__all__ = ["register", "pushdown_is_scoped_to_scans", "KafkaSegmentsDataSource", "kafka_schema"]


def register(spark, *, filter_pushdown=None):
    """Register the ``kafka-segments`` format with a SparkSession.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session.
    filter_pushdown : bool, optional
        Whether offset/topic/partition/timestamp predicates prune what is read (and
        ``spark.sql.python.filterPushdown.enabled`` is turned on for it). None (the default)
        decides by the session's Spark (`pushdown_is_scoped_to_scans`): pushdown is used only
        where Spark keeps a pushed read to the one query that pushed it. Spark 4.1 to 4.3 store
        the read planned after a pushdown on the DataFrame's relation, and every later query of
        that DataFrame reuses it: ``df.where("offset >= 200")`` followed by ``df.count()`` would
        count the filtered rows. There, every filter is evaluated by Spark (rows are always
        right) and reads are narrowed with the options instead (``startingOffsets`` /
        ``endingOffsets``, ``startingTimestamp``, ``subscribe`` / ``assign``). True forces
        pushdown (correct only while each DataFrame is queried once); False turns it off.

    Returns
    -------
    pyspark.sql.SparkSession
        `spark` itself.

    Examples
    --------
    >>> import kafkafmt.spark
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.spark.register(spark) is spark
    True
    >>> df = (spark.read.format("kafka-segments").option("subscribe", "orders")
    ...       .option("startingOffsets", '{"orders": {"0": 2000, "1": 2000}}').load(sample_dir()))
    >>> df.groupBy("partition").count().orderBy("partition").show()
    +---------+-----+
    |partition|count|
    +---------+-----+
    |        0|  400|
    |        1|  400|
    +---------+-----+
    """
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    if filter_pushdown is None:
        filter_pushdown = pushdown_is_scoped_to_scans(spark)
    source = type("KafkaSegmentsDataSource", (KafkaSegmentsDataSource,), {
        "filter_pushdown": bool(filter_pushdown), "__module__": __name__,
        "__qualname__": f"KafkaSegmentsDataSource_pushdown_{bool(filter_pushdown)}",
        "__doc__": KafkaSegmentsDataSource.__doc__})
    spark.dataSource.register(source)
    if filter_pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    return spark


#: the JVM class that held the read planned after a pushdown on the relation (Spark 4.1 to 4.3)
_PYTHON_SOURCE_CLASS = "org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2"


def pushdown_is_scoped_to_scans(spark):
    """Whether the session's Spark keeps the read planned after a filter pushdown to that scan
    (True), or caches it on the relation where later queries reuse it (False: Spark 4.1 to 4.3,
    whose PythonDataSourceV2 has ``setReadInfo``).

    `register` turns filter pushdown on by it.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session. A session without a JVM here (Spark Connect) cannot be inspected: False.

    Returns
    -------
    bool

    Examples
    --------
    >>> import kafkafmt.spark
    >>> kafkafmt.spark.pushdown_is_scoped_to_scans(spark)     # this Spark (4.1 to 4.3) keeps it on the relation
    False
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        methods = {m.getName() for m in jvm.java.lang.Class.forName(_PYTHON_SOURCE_CLASS).getMethods()}
    except Exception:   # noqa: BLE001 - a JVM without the class or reflection: assume the old planner
        return False
    return "setReadInfo" not in methods and "getOrCreateReadInfo" not in methods


def __getattr__(name):
    if name in ("KafkaSegmentsDataSource", "kafka_schema"):
        from kafkafmt.spark import source

        return getattr(source, name)
    raise AttributeError(name)

"""PySpark data source for Kafka segment files: ``spark.read.format("kafka-segments")``.

>>> import kafkafmt.spark
>>> kafkafmt.spark.register(spark)
>>> df = spark.read.format("kafka-segments").option("subscribe", "orders").load("/data/kafka-logs")

Needs pyspark >= 4.1 (``pip install 'kafkafmt[spark]'``). Spark's Python workers must run the
Python that has kafkafmt installed: set ``PYSPARK_PYTHON`` (e.g. to ``sys.executable``) before the
session starts.
"""
from __future__ import annotations

__all__ = ["register", "KafkaSegmentsDataSource", "kafka_schema"]


def register(spark, *, filter_pushdown=True):
    """Register the ``kafka-segments`` format with a SparkSession; by default also turns on
    ``spark.sql.python.filterPushdown.enabled`` so offset/timestamp/topic/partition predicates
    prune segments."""
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    spark.dataSource.register(KafkaSegmentsDataSource)
    if filter_pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    return spark


def __getattr__(name):
    if name in ("KafkaSegmentsDataSource", "kafka_schema"):
        from kafkafmt.spark import source

        return getattr(source, name)
    raise AttributeError(name)

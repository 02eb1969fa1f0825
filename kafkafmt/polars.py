"""Log dirs as a Polars LazyFrame (``kafkafmt.polars.scan_log_dirs``), and through it in DuckDB's SQL.

The frame is a Polars IO source (``polars.io.plugins.register_io_source``). When it is collected,
Polars hands the source the columns it needs and the query's predicate; the source reads only:

* the partitions whose ``topic`` and ``partition`` can satisfy the predicate (each conjunct on those
  two columns alone is evaluated on the partitions found, with Polars itself);
* from the first offset a conjunct ``offset >= / > / == / is_between`` allows, up to the last one
  ``offset < / <= / == / is_between`` allows (index seeks: `kafkafmt.log._planner`);
* from the first offset whose record has ``timestamp >=`` the lower bound of a conjunct
  ``timestamp >= / > / == / is_between`` (Kafka's offsets-for-times, the readers'
  ``start_timestamp``: no record before that offset is that recent, so the read is a superset).
  An upper time bound prunes nothing: timestamps are not monotonic in a partition, so a record
  after the first one at or past the bound may still be below it;
* the key, value and headers columns only when the query uses them (``columns=``), and typed keys
  and values (``value_format=``, ``key_format=``) are decoded only then too;
* and it stops once ``n_rows`` rows passed (``head``/``limit``).

Typed keys and values take the readers' options (``value_format``, ``key_format``,
``schema_registry``, ``value_schema``, ``key_schema``, ``value_errors``, ``untyped_topics``): the
registry is opened, and the reader schemas are pinned to the schema ids they name, when the frame is
made, so that its schema -- the topics' value types merged, as `kafkafmt.read_log_dirs` gives them --
is known before anything is read and holds when it is collected. The two Arrow types Polars cannot hold
(it panics on them) are given as every engine holds them (`kafkafmt.record.portable_table`): a decimal of
more than 38 digits (decimal256) as its exact text, an Avro duration (month_day_nano_interval) as
struct<months, days, nanoseconds>.

Pruning only ever reads a superset of the rows the predicate keeps: the whole predicate is then
applied to every chunk by Polars, so the answer is that of reading everything and filtering.

DuckDB (>= 2.0) scans a LazyFrame with projection and filter pushdown: its filters become Polars
predicates, and so the same pruning::

    lf = kafkafmt.polars.scan_log_dirs("/var/lib/kafka")
    duckdb.sql("SELECT topic, count(*) FROM lf WHERE timestamp >= now() - INTERVAL 1 HOUR GROUP BY topic")
"""
from kafkafmt.read import pushdown, scan_log_dirs

__all__ = ["scan_log_dirs", "pushdown"]

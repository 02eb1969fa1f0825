"""``mode="upsert"``: a compacted topic as its latest state -- one row per key, the value of its
newest record, a tombstone (a null value) deleting the key -- kept up to date incrementally.

The key is the record's key as Kafka's log cleaner sees it: its bytes, within its topic and
partition (a key written to two partitions -- after partitions were added -- is two keys, as the
compacted topic holds both). The bytes are the ``key`` column, or ``keyBytes`` beside a typed
``key`` (`identity_column`). Within a partition the newest record is the one with the highest
offset (`LatestBuffer`: the records of a commit, reduced to the last of each key).

A topic deleted and created again (``fail_on_data_loss=False``): the first commit that goes on removes
the old incarnation's rows of each partition whose records all differ now (a new topic id, or nothing
alike) and of each partition the new topic does not have -- the table holds the topic's current keys --
and the ``data_loss`` entries say so ("diverged", "vanished"). Other divergences keep the table's rows
(the records at offsets it holds are applied again from where the source now is).

Each commit applies the latest records of its offsets to the table in one atomic commit of the
table format, with the offset ledger (`kafkafmt.lakehouse.ledger`), so a run killed anywhere and
run again applies each record once -- and applying the same records twice would give the same
table anyway:

* Delta: a MERGE (delta-rs) on topic, partition and key: matched and a tombstone -- delete;
  matched -- update; not matched and not a tombstone -- insert. The files holding matched rows are
  rewritten (copy-on-write), the ``txn`` actions and commit info carry the ledger.
* Iceberg: copy-on-write by kafkafmt: the data files of the touched (topic, partition)s are read
  (the key columns first), those holding a touched key rewritten without it, and one
  ``overwrite`` snapshot removes them and adds the rewritten files and the new rows. No delete
  files: every Iceberg reader reads the table (pyiceberg, DuckDB over the data files, Spark).

An upsert table is partitioned by ``topic,partition`` by default (a record replaces its key's row
in the same Kafka partition: a commit rewrites only the files of the partitions it touches).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MODES", "TOMBSTONE", "UPSERT_BYTES", "DEFAULT_UPSERT_PARTITION_BY", "identity_column", "LatestBuffer",
           "TableColumns"]

MODES = ("append", "upsert")
#: a source row's column saying it is a tombstone (never stored)
TOMBSTONE = "__kafkafmt_tombstone"
#: the Arrow bytes of records an upsert run holds before it commits them (after keeping the newest of each key)
UPSERT_BYTES = 256 << 20
DEFAULT_UPSERT_PARTITION_BY = "topic,partition"


def identity_column(typed_key):
    """The column holding a record's key bytes: ``key``, or ``keyBytes`` when the key is typed."""
    from kafkafmt.record import UNTYPED_COLUMNS

    return UNTYPED_COLUMNS["key"] if typed_key else "key"


class LatestBuffer:
    """Rows of a commit reduced to the newest of each (topic, partition, key).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from kafkafmt.lakehouse.upsert import LatestBuffer
    >>> b = LatestBuffer("key")
    >>> b.add(pa.table({"topic": ["t"] * 3, "partition": pa.array([0] * 3, pa.int32()), "key": [b"a", b"b", b"a"],
    ...                 "offset": [0, 1, 2], "value": [b"1", b"2", None]}), np.array([False, False, True]))
    >>> b.latest().select(["key", "offset", "value", "__kafkafmt_tombstone"]).to_pylist()
    [{'key': b'b', 'offset': 1, 'value': b'2', '__kafkafmt_tombstone': False}, {'key': b'a', 'offset': 2, 'value': None, '__kafkafmt_tombstone': True}]
    """

    def __init__(self, identity, limit=UPSERT_BYTES):
        self.identity, self.limit = identity, limit
        self.parts, self.nbytes, self.rows = [], 0, 0

    def __len__(self):
        return sum(t.num_rows for t in self.parts)

    def add(self, table, tombstone):
        """Add a chunk's rows (the table's columns) and which of them are tombstones."""
        import pyarrow as pa

        if not table.num_rows:
            return
        t = table.append_column(pa.field(TOMBSTONE, pa.bool_(), False), pa.array(np.asarray(tombstone, bool)))
        self.parts.append(t)
        self.nbytes += t.nbytes
        self.rows += t.num_rows
        if self.nbytes > self.limit:
            latest = self.latest()
            self.parts, self.nbytes = [latest], latest.nbytes

    def full(self):
        """Whether the rows held pass the limit even reduced: time to commit."""
        return self.nbytes > self.limit

    def latest(self):
        """The newest row of each (topic, partition, key), in (topic, partition, offset) order."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.parts:
            return None
        t = pa.concat_tables(self.parts) if len(self.parts) > 1 else self.parts[0]
        keys = [("topic", "ascending"), ("partition", "ascending"), (self.identity, "ascending"),
                ("offset", "ascending")]
        t = t.take(pc.sort_indices(t, sort_keys=keys))
        n = t.num_rows
        if n > 1:
            same = None
            for name in ("topic", "partition", self.identity):
                col = t.column(name)
                eq = pc.equal(col.slice(0, n - 1), col.slice(1))
                same = eq if same is None else pc.and_(same, eq)
            keep = np.append(~np.asarray(same.to_numpy(zero_copy_only=False), bool), True)
            t = t.filter(pa.array(keep))
        return t.take(pc.sort_indices(t, sort_keys=[("topic", "ascending"), ("partition", "ascending"),
                                                     ("offset", "ascending")]))

    def clear(self):
        self.parts, self.nbytes = [], 0

    @staticmethod
    def empty(schema):
        """No rows, as `latest` gives them for a table of ``schema`` (a commit that only removes rows)."""
        import pyarrow as pa

        return schema.empty_table().append_column(pa.field(TOMBSTONE, pa.bool_(), False), pa.array([], pa.bool_()))


class TableColumns:
    """What `kafkafmt.lakehouse.layout.partition_groups` reads of a chunk, from an Arrow table of
    the table's rows (topic, partition, timestamp, timestampType)."""

    def __init__(self, table):
        import pyarrow as pa

        self.n = table.num_rows
        self.topic = np.asarray(table.column("topic").to_numpy(zero_copy_only=False), object)
        self.partition = np.asarray(table.column("partition").to_numpy(zero_copy_only=False), np.int32)
        ts = table.column("timestamp").cast(pa.int64()).to_numpy(zero_copy_only=False)
        self.timestamp = np.floor_divide(np.asarray(ts, np.int64), 1000)
        self.timestamp_type = np.asarray(table.column("timestampType").to_numpy(zero_copy_only=False), np.int32)

    def __len__(self):
        return self.n

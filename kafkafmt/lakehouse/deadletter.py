"""Dead letters: records whose key or value cannot be typed (an unknown schema id, no magic byte,
corrupt bytes) -- and, in an upsert table, records without a key -- go to a table of their own
beside the main one, ``<table>_dlq``, instead of the main table (``value_errors="dlq"``, the
default of a typed export): never dropped, never silent nulls among the typed rows.

The dead-letter table holds the Kafka columns with the raw ``key`` and ``value`` bytes and the
reason: ``keyError`` / ``valueError`` (as the main table's with ``value_errors="null"``). Its
name: Iceberg ``NAMESPACE.TABLE_dlq`` in the same catalog; Delta the folder ``<path>_dlq`` beside
the table. It is created when the first dead letter comes, partitioned as the main table.

No row is lost or doubled in either table, whatever the crashes: each table keeps its own offset
ledger (as `kafkafmt.lakehouse.ledger` describes), a run reads from the main table's and sends a
dead letter only when its offset is at or past the dead-letter table's (`DeadLetters.wants`), and
each commit of the run commits the dead letters first, then the main table. A run killed between
the two commits leaves dead letters past the main table's ledger; the next run reads those
offsets again and keeps only their good rows. When a run goes on from a diverged source
(``fail_on_data_loss=False``), the dead-letter table's ledger goes back with the main one's, in
a commit of its own, so the records at re-used offsets arrive in both as new rows.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.record import TYPED_COLUMNS

__all__ = ["DEAD_LETTER_SUFFIX", "VALUE_ERRORS", "REASON_COLUMNS", "NO_KEY", "dead_letter_location",
           "dead_letter_schema", "dead_letter_mask", "dead_letter_rows", "DeadLetters"]

DEAD_LETTER_SUFFIX = "_dlq"
#: what a value that cannot be typed does in a table export: "dlq" (the dead-letter table), "null" (null, the
#: reason in valueError), "strict" (the run fails, naming file, position and offset)
VALUE_ERRORS = ("dlq", "null", "strict")
#: the reason columns: the same names as the typed columns' errors
REASON_COLUMNS = (TYPED_COLUMNS["key"][1], TYPED_COLUMNS["value"][1])
#: the reason of a record without a key in an upsert table
NO_KEY = "no key: an upsert table holds the latest value of each key"


def dead_letter_location(fmt, to, table):
    """(to, table) of the dead-letter table of the table at ``to`` / ``table``.

    Examples
    --------
    >>> from kafkafmt.lakehouse.deadletter import dead_letter_location
    >>> dead_letter_location("iceberg", "/lake", "sales.orders")
    ('/lake', 'sales.orders_dlq')
    >>> dead_letter_location("delta", "s3://lake/orders/", None)
    ('s3://lake/orders_dlq', None)
    """
    if fmt == "iceberg":
        return to, f"{table}{DEAD_LETTER_SUFFIX}"
    return f"{str(to).rstrip('/')}{DEAD_LETTER_SUFFIX}", None


def dead_letter_schema(headers=True, batch_metadata=False):
    """The Arrow schema of a dead-letter table: the Kafka columns (raw key and value) and the
    reasons, before the batch metadata."""
    import pyarrow as pa

    from kafkafmt.lakehouse.layout import kafka_schema
    from kafkafmt.record import BATCH_METADATA_COLUMNS

    base = kafka_schema(headers, batch_metadata)
    fields = [f for f in base if f.name not in BATCH_METADATA_COLUMNS]
    fields += [pa.field(name, pa.string(), True) for name in REASON_COLUMNS]
    fields += [f for f in base if f.name in BATCH_METADATA_COLUMNS]
    return pa.schema(fields)


def dead_letter_mask(recs, upsert=False):
    """A bool array: the records of a chunk that are dead letters (a key or value that could not be
    typed; in an upsert table also a record without a key), or None when none is. (A value read with
    a field null -- its column cannot hold it -- stays in the table, ``valueError`` naming the field.)"""
    import pyarrow.compute as pc

    mask = None
    for dec in recs.typed.values():
        if dec.error_count:
            bad = pc.and_(pc.is_valid(dec.error), pc.is_null(dec.values))
            bad = np.asarray((bad.combine_chunks() if hasattr(bad, "combine_chunks") else bad)
                             .to_numpy(zero_copy_only=False), bool)
            mask = bad if mask is None else mask | bad
    if upsert:
        nokey = recs.key.is_null()
        if nokey.any():
            mask = nokey if mask is None else mask | nokey
    return mask


def dead_letter_rows(recs, headers=True, batch_metadata=False, upsert=False):
    """The dead letters of a chunk (``recs``: only them) as rows of the dead-letter table: the raw
    key and value, the Kafka columns, and the reasons."""
    import pyarrow as pa

    from kafkafmt.lakehouse.layout import chunk_table, conform

    t = chunk_table(recs.replace(typed={}), headers, batch_metadata)
    n = len(recs)
    for side, name in zip(("key", "value"), REASON_COLUMNS):
        dec = recs.typed.get(side)
        reason = dec.error if dec is not None else pa.nulls(n, pa.string())
        if side == "key" and upsert:
            import pyarrow.compute as pc

            reason = pc.if_else(pa.array(recs.key.is_null()), pa.scalar(NO_KEY), reason)
        t = t.append_column(pa.field(name, pa.string(), True), reason)
    return conform(t, dead_letter_schema(headers, batch_metadata))


class DeadLetters:
    """The dead-letter side of one run: its table (created when the first dead letter comes), its
    ledger, and the offsets it already holds.

    Parameters
    ----------
    open_target : callable
        ``open_target(create)``: the dead-letter table (`IcebergTable` / `DeltaTable`) opened,
        created when ``create``; None when it does not exist and ``create`` is False.
    tps : list
        The (topic, partition)s of the run.
    """

    def __init__(self, open_target, tps=()):
        self.open_target = open_target
        self.target = open_target(False)
        self.ledger = {}
        if self.target is not None:
            self.ledger, _ = self.target.ledger(tps)
        self.held = dict(self.ledger)      # tp -> offsets below it are in the dead-letter table
        self.dirty = False                 # the ledger went back: commit it even without rows
        self.rows = 0

    def wants(self, tp, offsets):
        """A bool array: which dead letters of ``tp`` (at ``offsets``) the table does not hold yet."""
        held = self.held.get(tp)
        if held is None:
            return np.ones(len(offsets), bool)
        return np.asarray(offsets) >= held

    def went_back(self, tp, offset):
        """The main table goes on from ``offset`` of a diverged source: so does this one."""
        if self.held.get(tp, -1) > offset:
            self.held[tp] = offset
            self.ledger[tp] = offset
            self.dirty = True

    def ensure(self):
        if self.target is None:
            self.target = self.open_target(True)
        return self.target

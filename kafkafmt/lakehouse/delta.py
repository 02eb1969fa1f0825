"""Delta tables through deltalake (delta-rs): the table (created partitioned, or loaded), data files
written beside it, and the commit that adds them with the offset ledger.

Partition columns are stored as Delta stores them: in each file's ``partitionValues`` and path
(``topic=orders/timestamp_day=2024-05-01/part-...parquet``), not inside the file. Delta has no
partition transforms, so a time transform of ``timestamp`` is a column of its own
(`kafkafmt.lakehouse.layout.delta_partition_type`), computed in UTC.

Data files are Parquet written by `kafkafmt.lakehouse.writer` -- on the local disk with ``open``,
on object storage through fsspec with the same storage options the source takes -- and committed
with `DeltaTable.create_write_transaction` as add actions with statistics (numRecords, min/max of
the plain columns, null counts), one commit per export commit, whose commit info carries the ledger
and whose ``txn`` actions (app id ``kafkafmt-<topic>-<partition>``, version the next offset) are the
ledger Delta keeps in the table state: `ledger` reads them.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import time
import uuid

from kafkafmt.lakehouse._storage import is_local, library_options
from kafkafmt.lakehouse.ledger import (BATCHES_KEY, MODE_KEY, OFFSETS_KEY, CommitConflictError, app_id, parse_marks,
                                       parse_offsets)

__all__ = ["DeltaTable", "delta_storage_options"]

_S3FS_TO_DELTA = {"key": "AWS_ACCESS_KEY_ID", "secret": "AWS_SECRET_ACCESS_KEY", "token": "AWS_SESSION_TOKEN",
                  "endpoint_url": "AWS_ENDPOINT_URL", "region": "AWS_REGION", "region_name": "AWS_REGION"}


def _delta_own(key):
    """Whether a storage option is already in delta-rs' form (``AWS_...``, ``aws_...``, ...)."""
    return key.isupper() or key.startswith(("aws_", "azure_", "google_", "allow_", "conditional_"))


def delta_storage_options(storage_options):
    """fsspec-style storage options (``key``, ``secret``, ``endpoint_url``, ``client_kwargs``) as
    delta-rs (object_store) options; upper-case keys (``AWS_...``) and delta-rs' own lower-case
    ones pass as they are."""
    out = library_options(storage_options, _S3FS_TO_DELTA, "AWS_SKIP_SIGNATURE", _delta_own)
    if out.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        out.setdefault("AWS_ALLOW_HTTP", "true")
        out.setdefault("AWS_REGION", "us-east-1")
    return out


def _iso_ms(value):
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return value


def file_stats(metadata, schema):
    """Delta's ``stats`` JSON of a Parquet file: numRecords, and for its top-level plain columns the
    min/max values (numbers, strings, timestamps) and null counts."""
    import pyarrow as pa

    plain = {f.name: f.type for f in schema
             if pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_timestamp(f.type)
             or pa.types.is_string(f.type) or pa.types.is_date(f.type)}
    top = {f.name for f in schema if not pa.types.is_nested(f.type)}
    mins, maxs, nulls = {}, {}, {}
    cols = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
    for name in top:
        j = cols.get(name)
        if j is None:
            continue
        lo = hi = None
        n_null = 0
        ok = True
        for i in range(metadata.num_row_groups):
            st = metadata.row_group(i).column(j).statistics
            if st is None:
                ok = False
                break
            n_null += st.null_count or 0
            if name in plain and st.has_min_max:
                lo = st.min if lo is None else min(lo, st.min)
                hi = st.max if hi is None else max(hi, st.max)
        if not ok:
            continue
        nulls[name] = n_null
        if lo is not None:
            if pa.types.is_string(plain[name]):
                if len(lo) > 32 or len(hi) > 32:
                    continue
            mins[name], maxs[name] = _iso_ms(lo), _iso_ms(hi)
    return json.dumps({"numRecords": metadata.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls},
                      default=str)


class DeltaTable:
    """One Delta table as an export target (the interface `kafkafmt.lakehouse.export` drives)."""

    format = "delta"

    def __init__(self, uri, storage_options=None):
        self.uri = str(uri).rstrip("/")
        if is_local(self.uri):
            self.uri = os.path.abspath(self.uri[len("file://"):] if self.uri.startswith("file://") else self.uri)
        self.fs_options = dict(storage_options or {})
        self.options = delta_storage_options(storage_options)
        self.dt = None
        self.fields = ()
        self.partition_types = {}
        self.last_props = {}            # the commit info the ledger was read from

    def _load(self):
        from deltalake import DeltaTable as DT

        return DT(self.uri, storage_options=self.options or None)

    # -- the table ------------------------------------------------------------------------------
    def exists(self):
        """Whether the table is there (`open` creates it when not)."""
        from deltalake import DeltaTable as DT

        return DT.is_deltatable(self.uri, storage_options=self.options or None)

    def open(self, schema, fields, *, target_file_size, compression, mode="append"):
        """Load the table, or create it with ``schema`` (Arrow) partitioned by ``fields``
        (append-only for ``mode`` "append"). Returns the partition fields in force."""
        import pyarrow as pa
        from deltalake import CommitProperties
        from deltalake import DeltaTable as DT

        from kafkafmt.lakehouse.layout import delta_partition_type

        if DT.is_deltatable(self.uri, storage_options=self.options or None):
            self.dt = self._load()
        else:
            extra = [pa.field(f.name, delta_partition_type(f), True) for f in fields if f.name not in schema.names]
            full = pa.schema(list(schema) + extra)
            self.dt = DT.create(self.uri, full, mode="ignore", partition_by=[f.name for f in fields] or None,
                                name=os.path.basename(self.uri.rstrip("/")) or None,
                                description="Kafka records exported by kafkafmt" + (
                                    "" if mode == "append" else ": the latest value of each key"),
                                configuration={"delta.appendOnly": "true" if mode == "append" else "false"},
                                storage_options=self.options or None,
                                commit_properties=CommitProperties(custom_metadata={MODE_KEY: mode}))
            self.dt = self._load()
        self.fields = self.partition_fields()
        full = self._full_arrow()
        self.partition_types = {f.name: full.field(f.name).type for f in self.fields}
        return self.fields

    def mode(self):
        """"append" or "upsert": the mode the newest commit of kafkafmt's says (each carries it, the
        table's creation too); an append-only table, or one without such a commit, is appended to."""
        if self.dt.metadata().configuration.get("delta.appendOnly") == "true":
            return "append"
        for info in self.dt.history(100):
            if info.get(MODE_KEY):
                return info[MODE_KEY]
        return "append"

    def partition_fields(self):
        from kafkafmt.lakehouse.layout import IDENTITY_COLUMNS, TIME_COLUMN, TIME_TRANSFORMS, PartitionField

        out = []
        for name in self.dt.metadata().partition_columns:
            if name in IDENTITY_COLUMNS:
                out.append(PartitionField(name))
            elif name.startswith(TIME_COLUMN + "_") and name[len(TIME_COLUMN) + 1:] in TIME_TRANSFORMS:
                out.append(PartitionField(TIME_COLUMN, name[len(TIME_COLUMN) + 1:]))
            else:
                raise ValueError(f"the Delta table {self.uri} is partitioned by {name!r}, which kafkafmt does not "
                                 "write: export to another table")
        return tuple(out)

    def _full_arrow(self):
        import pyarrow as pa

        from kafkafmt.lakehouse.layout import plain_schema

        return plain_schema(pa.schema(self.dt.schema().to_arrow()))

    def arrow_schema(self):
        """The table's columns other than the derived partition columns, as Arrow."""
        derived = {f.name for f in self.fields if f.transform != "identity"}
        import pyarrow as pa

        return pa.schema([f for f in self._full_arrow() if f.name not in derived])

    def file_schema(self, schema):
        import pyarrow as pa

        parts = {f.name for f in self.fields}
        return pa.schema([f for f in schema if f.name not in parts])

    def file_columns(self, schema):
        return list(self.file_schema(schema).names)

    #: delta-rs cannot rename a column: a field renamed by its reader schema keeps the table's name
    renames_fields = False

    def evolve(self, new_schema):
        from deltalake import Field

        have = self._full_arrow()
        add = [Field.from_arrow(f) for f in new_schema if f.name not in have.names]
        changed = [Field.from_arrow(f) for f in new_schema if f.name in have.names and f.type != have.field(f.name).type]
        if add or changed:
            self.dt.alter.add_columns(add + changed)
        self.dt = self._load()

    # -- the ledger -----------------------------------------------------------------------------
    def ledger(self, tps=()):
        """({(topic, partition): next offset}, {(topic, partition): BatchMark}) of the table's state:
        the ``txn`` versions of ``tps`` (and the newest kafkafmt commit info's offsets for the
        others), the marks of the last batches from that commit info (a mark that does not fit its
        offset is not used). A RESTORE keeps the txn actions of the versions it undid, so after one
        the state restored to is read instead."""
        dt, out, marks, restored = self.dt, {}, {}, False
        self.last_props = {}
        if dt.version() == 0:
            (made,) = dt.history(1) or ({},)
            if made.get("operation") == "CREATE TABLE" and made.get(MODE_KEY):
                return {}, {}       # (kafkafmt's own creation, nothing since: no txn action to ask for)
        for _ in range(64):
            back = None
            for info in dt.history(100):
                if info.get("operation") == "RESTORE":
                    back = info.get("operationParameters") or {}
                    break
                if info.get(OFFSETS_KEY):
                    if not restored:
                        out = parse_offsets(info[OFFSETS_KEY])
                        marks = parse_marks(info.get(BATCHES_KEY))
                    self.last_props = dict(info)
                    break
            if back is None:
                break
            restored = True
            dt = self._load()
            if back.get("version") is not None:
                dt.load_as_version(int(back["version"]))
            else:
                dt.load_as_version(_dt.datetime.fromisoformat(str(back["datetime"]).replace("Z", "+00:00")))
        for tp in tps:
            v = dt.transaction_version(app_id(*tp))
            if v is not None:
                out[tp] = int(v)
            else:
                out.pop(tp, None)
        return out, {tp: m for tp, m in marks.items() if tp in out and m.holds(out[tp])}

    def rows(self, tp, lo, hi):
        """The table's rows of a topic-partition with offsets in [lo, hi): offset, timestamp, key,
        value (a pyarrow Table; what a diverged source is compared with)."""
        import pyarrow.dataset as ds

        from kafkafmt.lakehouse.layout import COMPARED_COLUMNS

        flt = (ds.field("topic") == tp[0]) & (ds.field("partition") == int(tp[1])) & \
            (ds.field("offset") >= int(lo)) & (ds.field("offset") < int(hi))
        return self.dt.to_pyarrow_dataset().to_table(columns=list(COMPARED_COLUMNS), filter=flt)

    # -- data files -----------------------------------------------------------------------------
    def open_file(self, key, fields):
        from kafkafmt.lakehouse.layout import delta_partition_value

        values = {f.name: delta_partition_value(f, v, self.partition_types.get(f.name)) for f, v in zip(self.fields, key)}
        folder = "/".join(f"{n}={_escape(v)}" for n, v in values.items())
        rel = (folder + "/" if folder else "") + f"part-00000-{uuid.uuid4()}-c000.parquet"
        if is_local(self.uri):
            full = os.path.join(self.uri, *rel.split("/"))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            stream = open(full, "xb")
        else:
            import fsspec

            stream = fsspec.open(f"{self.uri}/{rel}", "wb", **self.fs_options).open()
        return (rel, values), stream

    def close_file(self, handle, key, size, metadata, rows):
        from deltalake.transaction import AddAction

        rel, values = handle
        stats = file_stats(metadata, metadata.schema.to_arrow_schema())
        return AddAction(rel, int(size), values, int(time.time() * 1000), True, stats)

    # -- commits --------------------------------------------------------------------------------
    def _commit_properties(self, properties, ledger):
        """The commit info and a ``txn`` for every topic-partition of the ledger (all of them, so
        that the state after a RESTORE is made whole by the next commit)."""
        from deltalake import CommitProperties, Transaction

        now = int(time.time() * 1000)
        txns = [Transaction(app_id(t, p), int(n), now) for (t, p), n in sorted(ledger.items())]
        return CommitProperties(custom_metadata=dict(properties), app_transactions=txns)

    def _conflict(self, exc):
        return CommitConflictError(f"{self.describe()} changed while this export ran (another export?): its "
                                   f"commit was refused, nothing of it is in the table; run it again ({exc})")

    def commit(self, files, properties, offsets_text, ledger):
        """One Delta commit adding ``files``, ``properties`` in its commit info and a ``txn`` for
        every topic-partition of the ledger. Returns the table version."""
        from deltalake.exceptions import CommitFailedError

        try:
            self.dt.create_write_transaction(
                files, "append", schema=self.dt.schema(), partition_by=[f.name for f in self.fields] or None,
                commit_properties=self._commit_properties(properties, ledger))
        except CommitFailedError as exc:
            raise self._conflict(exc) from exc
        self.dt = self._load()
        return self.dt.version()

    def upsert(self, rows, identity, fields, writer, properties, offsets_text, ledger, clear=()):
        """Apply the newest record of each key (``rows``: the table's columns and
        `kafkafmt.lakehouse.upsert.TOMBSTONE`) in one MERGE on topic, partition and key, with the
        ledger in its commit: a tombstone deletes the key's row, another record replaces it or
        is inserted; the rows of the (topic, partition)s in ``clear`` that ``rows`` do not replace are
        deleted (an old incarnation's). Returns (table version, files added, rows deleted)."""
        import pyarrow as pa
        from deltalake.exceptions import CommitFailedError

        from kafkafmt.lakehouse.layout import conform, transform_values
        from kafkafmt.lakehouse.upsert import TOMBSTONE, TableColumns

        full = self._full_arrow()
        derived = [f for f in self.fields if f.transform != "identity"]
        source = conform(rows, pa.schema([f for f in full if f.name not in {d.name for d in derived}]))
        columns = TableColumns(rows)
        for f in derived:               # Delta's own partition columns, computed as the export writes them
            source = source.append_column(pa.field(f.name, full.field(f.name).type, True),
                                          _partition_array(f, transform_values(columns, f), full.field(f.name).type))
        source = source.append_column(pa.field(TOMBSTONE, pa.bool_(), False), rows.column(TOMBSTONE))
        cols = [c for c in source.column_names if c != TOMBSTONE]
        on = " AND ".join(f"t.{_q(c)} = s.{_q(c)}" for c in ("topic", "partition", identity))
        try:
            merge = self.dt.merge(source, on, source_alias="s", target_alias="t",
                                  commit_properties=self._commit_properties(properties, ledger)) \
                .when_matched_delete(predicate=f"s.{_q(TOMBSTONE)}") \
                .when_matched_update(updates={c: f"s.{_q(c)}" for c in cols}) \
                .when_not_matched_insert(updates={c: f"s.{_q(c)}" for c in cols}, predicate=f"NOT s.{_q(TOMBSTONE)}")
            if clear:
                merge = merge.when_not_matched_by_source_delete(" OR ".join(
                    f"(t.{_q('topic')} = '{_escape_sql(t)}' AND t.{_q('partition')} = {int(p)})" for t, p in sorted(clear)))
            metrics = merge.execute()
        except CommitFailedError as exc:
            raise self._conflict(exc) from exc
        self.dt = self._load()
        added = int(metrics.get("num_target_files_added", 0))
        return self.dt.version(), [None] * added, int(metrics.get("num_target_rows_deleted", 0))

    def describe(self):
        return f"Delta table {self.uri}"


def _q(name):
    """A column name in a delta-rs (DataFusion) expression."""
    return f"`{name}`"


def _partition_array(field, values, column_type):
    """Time-transform values (int64 hours/days/months/years since the epoch, as
    `kafkafmt.lakehouse.layout.transform_values` gives them) as a Delta partition column of its
    type (the same values `delta_partition_value` writes in the log)."""
    import numpy as np
    import pyarrow as pa

    from kafkafmt.lakehouse.layout import delta_partition_value

    values = np.asarray(values, np.int64)
    if field.transform == "day":
        return pa.array(values.astype(np.int32)).cast(pa.date32())
    if field.transform == "hour" and pa.types.is_timestamp(column_type):
        return pa.array(values * 3_600_000_000).cast(column_type)
    if field.transform == "year":
        return pa.array((values + 1970).astype(np.int32)).cast(column_type)
    uniq, inverse = np.unique(values, return_inverse=True)
    texts = pa.array([delta_partition_value(field, int(u), column_type) for u in uniq], pa.string())
    return texts.take(pa.array(inverse.reshape(-1))).cast(column_type)


def _escape(value):
    """A partition value in a path as Hive (and Delta) escape it."""
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(c if c.isalnum() or c in "-_." or ord(c) > 127 else f"%{ord(c):02X}" for c in str(value))


def _escape_sql(text):
    """A string inside a single-quoted SQL literal."""
    return str(text).replace("'", "''")
